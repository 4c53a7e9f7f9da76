//! A small, schema-driven reader for Avro object container files.
//!
//! Iceberg manifests and manifest lists are Avro files whose entries carry
//! large column-statistics maps a sweeper never needs. This reader compiles a
//! *projection* (the few field paths wanted) against the writer schema found
//! in the file header, decodes those fields and skips everything else without
//! materialising it. Codecs: `null`, `deflate`, `snappy` (with its CRC-32
//! trailer checked) and `zstandard`, all in pure Rust so the crate builds for
//! `wasm32-unknown-unknown`.
//!
//! Every length and count read from the file is checked against the bytes
//! that remain; a truncated or corrupt file is an error, never a panic.

//!
//! One noun per file:
//!
//! ```text
//! cursor       the byte reader: zig-zag varints, lengths, byte strings
//! schema       the writer schema as an arena of nodes, with exact sizes
//! projection   the compiled projection: the fields wanted, the rest skipped
//! container    the object container file: header, codec, blocks
//! rewrite      a container copied with some string fields renamed
//! ```

mod container;
mod cursor;
mod projection;
mod rewrite;
mod schema;

pub use container::{Codec, Container};
pub use cursor::Cursor;
pub use projection::{decode_record, skip, Projection, Value};
pub use rewrite::{rewrite, Rename};
pub use schema::{Node, Schema};

/// Largest decompressed block accepted (a guard against decompression bombs), in bytes.
pub const MAX_BLOCK_BYTES: usize = 512 << 20;
/// Deepest schema nesting accepted while decoding.
const MAX_DEPTH: usize = 64;

/// An error inside an Avro file; the caller adds the URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AvroError {
    /// The bytes do not follow the Avro specification.
    Corrupt(String),
    /// A valid Avro feature this reader does not implement (e.g. the bzip2 codec).
    Unsupported(String),
}

/// A result of this reader. The error is boxed so that a `Result` of a
/// number is two words, returned in registers: the varint and length reads
/// run for every field of every entry.
pub type AResult<T> = Result<T, Box<AvroError>>;

fn corrupt<T>(msg: impl Into<String>) -> AResult<T> {
    Err(Box::new(AvroError::Corrupt(msg.into())))
}

#[cfg(test)]
pub(crate) mod tests {
    //! Containers written by hand, for the tests of this reader and of
    //! the formats stored in it.

    use super::*;

    pub(crate) fn zz(v: i64, out: &mut Vec<u8>) {
        let mut n = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }

    pub(crate) fn s(v: &[u8], out: &mut Vec<u8>) {
        zz(v.len() as i64, out);
        out.extend_from_slice(v);
    }

    /// Writes a container with one block holding `records` (already encoded).
    pub(crate) fn container(schema: &str, codec: &str, count: i64, records: &[u8]) -> Vec<u8> {
        container_of_blocks(schema, codec, &[(count, records.to_vec())])
    }

    /// Writes a container of `blocks`, each a count and its encoded records.
    pub(crate) fn container_of_blocks(
        schema: &str,
        codec: &str,
        blocks: &[(i64, Vec<u8>)],
    ) -> Vec<u8> {
        let mut out = b"Obj\x01".to_vec();
        zz(2, &mut out);
        s(b"avro.schema", &mut out);
        s(schema.as_bytes(), &mut out);
        s(b"avro.codec", &mut out);
        s(codec.as_bytes(), &mut out);
        zz(0, &mut out);
        let sync = [7u8; 16];
        out.extend_from_slice(&sync);
        for (count, records) in blocks {
            let data = match codec {
                "null" => records.to_vec(),
                "deflate" => miniz_oxide::deflate::compress_to_vec(records, 6),
                "snappy" => {
                    let mut d = snap::raw::Encoder::new().compress_vec(records).unwrap();
                    d.extend_from_slice(&crc32fast::hash(records).to_be_bytes());
                    d
                }
                _ => unreachable!(),
            };
            zz(*count, &mut out);
            s(&data, &mut out);
            out.extend_from_slice(&sync);
        }
        out
    }

    pub(crate) const SCHEMA: &str = r#"{"type":"record","name":"e","fields":[
        {"name":"status","type":"int"},
        {"name":"stats","type":{"type":"map","values":"long"}},
        {"name":"data_file","type":{"type":"record","name":"r2","fields":[
            {"name":"file_path","type":"string"},
            {"name":"bounds","type":["null",{"type":"array","items":{"type":"record","name":"kv","fields":[{"name":"k","type":"int"},{"name":"v","type":"bytes"}]}}]},
            {"name":"content","type":"int"}]}}]}"#;

    pub(crate) fn record(status: i64, path: &str, content: i64) -> Vec<u8> {
        let mut r = Vec::new();
        zz(status, &mut r);
        zz(2, &mut r);
        s(b"a", &mut r);
        zz(5, &mut r);
        s(b"b", &mut r);
        zz(-9, &mut r);
        zz(0, &mut r);
        s(path.as_bytes(), &mut r);
        zz(1, &mut r);
        zz(1, &mut r);
        zz(3, &mut r);
        s(b"xyz", &mut r);
        zz(0, &mut r);
        zz(content, &mut r);
        r
    }

    pub(crate) fn decode_all(bytes: &[u8]) -> AResult<Vec<(i64, String, i64)>> {
        let c = Container::open(bytes)?;
        let p = Projection::compile(
            &c.schema,
            &[
                &["status"],
                &["data_file", "file_path"],
                &["data_file", "content"],
            ],
        )?;
        let mut out = Vec::new();
        c.for_each_record(&p, |v| {
            let (Value::Int(st), Value::Str(path), Value::Int(ct)) = (v[0], v[1], v[2]) else {
                return corrupt("missing");
            };
            out.push((st, String::from_utf8_lossy(path).into_owned(), ct));
            Ok(())
        })?;
        Ok(out)
    }
}
