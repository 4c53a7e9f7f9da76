//! The object container file: magic, header (schema and codec), and
//! blocks of records, each decompressed (`null`, `deflate`, `snappy` with
//! its CRC-32 trailer, `zstandard`) and checked against the bytes that
//! remain.

use std::collections::BTreeMap;
use std::io::Read;

use super::cursor::Cursor;
use super::projection::{decode_record, min_bytes, Projection, Value};
use super::schema::Schema;
use super::{corrupt, AResult, AvroError, MAX_BLOCK_BYTES};

/// The compression codec of a container file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// `null`: blocks are stored as is.
    Null,
    /// `deflate`: raw RFC 1951 deflate.
    Deflate,
    /// `snappy`: raw snappy followed by a big-endian CRC-32 of the uncompressed bytes.
    Snappy,
    /// `zstandard`: one zstd frame per block.
    Zstandard,
}

/// An opened object container file.
pub struct Container<'a> {
    /// The writer schema.
    pub schema: Schema,
    /// The block codec.
    pub codec: Codec,
    /// Header metadata other than `avro.schema` / `avro.codec` (e.g. Iceberg's `format-version`).
    pub meta: BTreeMap<String, Vec<u8>>,
    /// The writer schema's JSON text, as the header holds it.
    pub schema_json: Vec<u8>,
    sync: [u8; 16],
    body: &'a [u8],
}

impl<'a> Container<'a> {
    /// The 16-byte sync marker that ends the header and every block.
    pub fn sync_marker(&self) -> [u8; 16] {
        self.sync
    }

    /// Reads the header of a container file.
    pub fn open(bytes: &'a [u8]) -> AResult<Container<'a>> {
        if bytes.len() < 4 || &bytes[..4] != b"Obj\x01" {
            return corrupt("not an Avro object container file (bad magic)");
        }
        let mut cur = Cursor::new(&bytes[4..]);
        let mut meta = BTreeMap::new();
        loop {
            let mut count = cur.long()?;
            if count == 0 {
                break;
            }
            if count < 0 {
                count = count
                    .checked_neg()
                    .ok_or_else(|| AvroError::Corrupt("bad header block".into()))?;
                cur.long()?;
            }
            if count as u64 > cur.remaining() as u64 {
                return corrupt("header map count exceeds the bytes left");
            }
            for _ in 0..count {
                let k = String::from_utf8_lossy(cur.bytes()?).into_owned();
                let v = cur.bytes()?.to_vec();
                meta.insert(k, v);
            }
        }
        let sync: [u8; 16] = match cur.take(16)?.try_into() {
            Ok(s) => s,
            Err(_) => return corrupt("truncated sync marker"),
        };
        let Some(schema_json) = meta.remove("avro.schema") else {
            return corrupt("header has no avro.schema");
        };
        let schema = Schema::parse(&schema_json)?;
        let codec = match meta.remove("avro.codec").as_deref() {
            None | Some(b"null") | Some(b"") => Codec::Null,
            Some(b"deflate") => Codec::Deflate,
            Some(b"snappy") => Codec::Snappy,
            Some(b"zstandard") => Codec::Zstandard,
            Some(other) => {
                return Err(Box::new(AvroError::Unsupported(format!(
                    "avro codec `{}`",
                    String::from_utf8_lossy(other)
                ))))
            }
        };
        let body = &bytes[4 + cur.pos..];
        Ok(Container {
            schema,
            codec,
            meta,
            schema_json,
            sync,
            body,
        })
    }

    /// Calls `f(records_in_block, decompressed_block)` for every data block,
    /// checking sync markers and sizes.
    pub fn for_each_block(&self, mut f: impl FnMut(u64, &[u8]) -> AResult<()>) -> AResult<()> {
        let mut cur = Cursor::new(self.body);
        let mut scratch = Vec::new();
        let mut inflater = crate::codec::inflate::Inflater::default();
        while cur.remaining() > 0 {
            let count = cur.long()?;
            if count < 0 {
                return corrupt("negative record count in block");
            }
            let data = cur.bytes()?;
            let sync = cur.take(16)?;
            if sync != self.sync {
                return corrupt("sync marker mismatch (corrupt or truncated block)");
            }
            let block: &[u8] = match self.codec {
                Codec::Null => data,
                Codec::Deflate => inflater
                    .inflate(data, MAX_BLOCK_BYTES)
                    .map_err(|e| AvroError::Corrupt(format!("deflate: {e}")))?,
                Codec::Snappy => {
                    if data.len() < 4 {
                        return corrupt("snappy block shorter than its checksum");
                    }
                    let (payload, crc) = data.split_at(data.len() - 4);
                    let n = snap::raw::decompress_len(payload)
                        .map_err(|e| AvroError::Corrupt(format!("snappy: {e}")))?;
                    if n > MAX_BLOCK_BYTES {
                        return corrupt("snappy block too large");
                    }
                    // Into the buffer of the block before (grown, never
                    // shrunk): the bytes written are exactly the block's.
                    if scratch.len() < n {
                        scratch.resize(n, 0);
                    }
                    let wrote = snap::raw::Decoder::new()
                        .decompress(payload, &mut scratch[..n])
                        .map_err(|e| AvroError::Corrupt(format!("snappy: {e}")))?;
                    if wrote != n {
                        return corrupt("snappy block shorter than its stated length");
                    }
                    let scratch = &scratch[..n];
                    let want = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
                    if crc32fast::hash(scratch) != want {
                        return corrupt("snappy block checksum mismatch");
                    }
                    scratch
                }
                Codec::Zstandard => {
                    scratch.clear();
                    let mut src = data;
                    let dec = ruzstd::decoding::StreamingDecoder::new(&mut src)
                        .map_err(|e| AvroError::Corrupt(format!("zstandard: {e}")))?;
                    dec.take(MAX_BLOCK_BYTES as u64 + 1)
                        .read_to_end(&mut scratch)
                        .map_err(|e| AvroError::Corrupt(format!("zstandard: {e}")))?;
                    if scratch.len() > MAX_BLOCK_BYTES {
                        return corrupt("zstandard block too large");
                    }
                    &scratch
                }
            };
            f(count as u64, block)?;
        }
        Ok(())
    }

    /// Decodes every record with `proj`, calling `f` with the filled slots.
    pub fn for_each_record(
        &self,
        proj: &Projection,
        mut f: impl FnMut(&[Value<'_>]) -> AResult<()>,
    ) -> AResult<()> {
        let per_record = min_bytes(&self.schema, self.schema.root);
        self.for_each_block(|count, block| {
            // A forged count is refused by name, before any record is read
            // (it would otherwise surface as a truncated value further on).
            let most = match per_record {
                0 => 1 << 24,
                n => block.len() as u64 / n,
            };
            if count > most {
                return corrupt(format!(
                    "block record count {count} is too large: the block's {} bytes hold at most {most} records",
                    block.len()
                ));
            }
            let mut slots = vec![Value::Absent; proj.slots()];
            let mut cur = Cursor::new(block);
            for i in 0..count {
                if cur.remaining() == 0 && per_record > 0 {
                    return corrupt(format!(
                        "block record count {count} is too large: the block's bytes end after {i} records"
                    ));
                }
                decode_record(&self.schema, proj, &mut cur, &mut slots)?;
                f(&slots)?;
            }
            if cur.remaining() != 0 {
                return corrupt(format!(
                    "{} bytes left over after a block's {count} records",
                    cur.remaining()
                ));
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::avro::tests::*;

    #[test]
    fn projects_through_every_codec() {
        let mut recs = record(1, "s3://b/t/data/a.parquet", 0);
        recs.extend(record(2, "s3://b/t/data/b.parquet", 1));
        for codec in ["null", "deflate", "snappy"] {
            let file = container(SCHEMA, codec, 2, &recs);
            let got = decode_all(&file).unwrap();
            assert_eq!(got[0], (1, "s3://b/t/data/a.parquet".into(), 0), "{codec}");
            assert_eq!(got[1], (2, "s3://b/t/data/b.parquet".into(), 1), "{codec}");
        }
    }

    #[test]
    fn a_small_block_after_a_large_one_is_read_alone() {
        // Blocks are inflated into the buffer of the block before: a
        // smaller block must read as itself, not with the larger one's tail
        // (which would show as records or as bytes left over).
        let path = |i: usize| format!("s3://b/t/data/{i:05}.parquet");
        let large: Vec<u8> = (0..5000).flat_map(|i| record(1, &path(i), 0)).collect();
        let blocks = [
            (5000, large.clone()),
            (1, record(2, "s3://b/t/data/small.parquet", 1)),
            (5000, large),
            (0, Vec::new()),
            (1, record(0, "s3://b/t/data/last.parquet", 2)),
        ];
        for codec in ["null", "deflate", "snappy"] {
            let got = decode_all(&container_of_blocks(SCHEMA, codec, &blocks)).unwrap();
            assert_eq!(got.len(), 10_002, "{codec}");
            assert_eq!(got[4999], (1, path(4999), 0), "{codec}");
            assert_eq!(
                got[5000],
                (2, "s3://b/t/data/small.parquet".into(), 1),
                "{codec}"
            );
            assert_eq!(
                got[10_001],
                (0, "s3://b/t/data/last.parquet".into(), 2),
                "{codec}"
            );
        }
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let recs = record(1, "s3://b/t/data/a.parquet", 0);
        for codec in ["null", "deflate", "snappy"] {
            let file = container(SCHEMA, codec, 1, &recs);
            for cut in 0..file.len() {
                // Avro has no end marker: a cut exactly between blocks is a
                // valid, shorter file. Callers catch that with the length
                // recorded elsewhere (manifest_length).
                if let Ok(recs) = decode_all(&file[..cut]) {
                    assert!(recs.is_empty(), "{codec} cut {cut}");
                }
            }
        }
    }

    #[test]
    fn bad_magic_and_unknown_codec() {
        assert!(matches!(
            Container::open(b"PAR1....").map_err(|e| *e),
            Err(AvroError::Corrupt(_))
        ));
        let mut out = b"Obj\x01".to_vec();
        zz(2, &mut out);
        s(b"avro.schema", &mut out);
        s(SCHEMA.as_bytes(), &mut out);
        s(b"avro.codec", &mut out);
        s(b"bzip2", &mut out);
        zz(0, &mut out);
        out.extend_from_slice(&[0u8; 16]);
        assert!(matches!(
            Container::open(&out).map_err(|e| *e),
            Err(AvroError::Unsupported(_))
        ));
    }

    #[test]
    fn a_record_count_of_two_to_the_forty_is_named_as_too_large() {
        let recs = record(1, "s3://b/t/data/a.parquet", 0);
        for count in [1i64 << 40, (1 << 40) + 1, i64::MAX / 2, 2] {
            let file = container(SCHEMA, "null", count, &recs);
            let e = format!("{:?}", decode_all(&file).unwrap_err());
            assert!(e.contains("block record count"), "{count}: {e}");
            assert!(e.contains("too large"), "{count}: {e}");
            assert!(!e.contains("truncated varint"), "{count}: {e}");
        }
    }

    #[test]
    fn forged_counts_are_refused() {
        let mut r = Vec::new();
        zz(1, &mut r);
        zz(i64::MAX / 4, &mut r); // map block count far beyond the data
        let file = container(SCHEMA, "null", 1, &r);
        assert!(decode_all(&file).is_err());
    }
}
