//! Rewriting an object container file: every record copied value by value
//! from the writer schema, the string values of the named record fields
//! passed through a function (a restore into another location renames the
//! paths a manifest list or manifest holds), written back with the same
//! schema and header metadata, uncompressed (`null` codec: any reader
//! reads it). Everything else is copied byte for byte.

use super::cursor::Cursor;
use super::projection::union_branch;
use super::schema::{Node, Schema};
use super::{corrupt, AResult, Container, MAX_DEPTH};

fn zz(v: i64, out: &mut Vec<u8>) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn string(v: &[u8], out: &mut Vec<u8>) {
    zz(v.len() as i64, out);
    out.extend_from_slice(v);
}

/// A record's length field, and its new value by the original path of the
/// record's renamed field before it.
pub type LengthOf<'r> = (&'r str, &'r dyn Fn(&str) -> Option<i64>);

/// What a rewrite changes: the string values of record fields named
/// `fields`, each through `f` (none: kept as it is); and, with `length`,
/// the `long` field it names in the record of a renamed path, set to what
/// the function says for the path as it was (a manifest list's
/// `manifest_length` after its manifests were rewritten).
pub struct Rename<'r> {
    /// Field names whose strings are renamed (at any depth).
    pub fields: &'r [&'r str],
    /// The new value of a string, if it changes.
    pub f: &'r dyn Fn(&str) -> Option<String>,
    /// The length field, and its new value by the original path of the
    /// record's renamed field before it.
    pub length: Option<LengthOf<'r>>,
}

/// `bytes` (an Avro object container file) with the renames applied, and
/// how many strings changed.
pub fn rewrite(bytes: &[u8], rename: &Rename<'_>) -> AResult<(Vec<u8>, u64)> {
    let c = Container::open(bytes)?;
    let mut out = b"Obj\x01".to_vec();
    let mut header: Vec<(&str, &[u8])> = c.meta.iter().map(|(k, v)| (k.as_str(), &v[..])).collect();
    header.push(("avro.schema", &c.schema_json));
    header.push(("avro.codec", b"null"));
    zz(header.len() as i64, &mut out);
    for (k, v) in header {
        string(k.as_bytes(), &mut out);
        string(v, &mut out);
    }
    zz(0, &mut out);
    let sync = c.sync_marker();
    out.extend_from_slice(&sync);
    let mut changed = 0u64;
    c.for_each_block(|count, block| {
        let mut cur = Cursor::new(block);
        let mut body = Vec::with_capacity(block.len());
        for _ in 0..count {
            copy(
                &c.schema,
                c.schema.root,
                &mut cur,
                &mut body,
                Field::Plain,
                rename,
                &mut changed,
                &mut None,
                0,
            )?;
        }
        if cur.remaining() != 0 {
            return corrupt("bytes left after a block's records");
        }
        zz(count as i64, &mut out);
        zz(body.len() as i64, &mut out);
        out.extend_from_slice(&body);
        out.extend_from_slice(&sync);
        Ok(())
    })?;
    Ok((out, changed))
}

/// What a value is to the rewrite.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    /// Copied as it is.
    Plain,
    /// A string renamed (its original kept for the length after it).
    Renamed,
    /// The length of the record's renamed path.
    Length,
}

#[allow(clippy::too_many_arguments)]
fn copy(
    schema: &Schema,
    node: usize,
    cur: &mut Cursor<'_>,
    out: &mut Vec<u8>,
    field: Field,
    rename: &Rename<'_>,
    changed: &mut u64,
    last: &mut Option<String>,
    depth: usize,
) -> AResult<()> {
    if depth > MAX_DEPTH {
        return corrupt("value nested too deeply");
    }
    let start = cur.pos;
    match &schema.nodes[node] {
        Node::Null => {}
        Node::Boolean => {
            cur.take(1)?;
            out.extend_from_slice(cur.since(start));
        }
        Node::Long if field == Field::Length => {
            let v = cur.long()?;
            let new = match (rename.length, last.as_deref()) {
                (Some((_, f)), Some(path)) => f(path),
                _ => None,
            };
            match new {
                Some(n) if n != v => {
                    *changed += 1;
                    zz(n, out);
                }
                _ => out.extend_from_slice(cur.since(start)),
            }
        }
        Node::Int | Node::Long | Node::Enum(_) => {
            cur.long()?;
            out.extend_from_slice(cur.since(start));
        }
        Node::Float => {
            cur.take(4)?;
            out.extend_from_slice(cur.since(start));
        }
        Node::Double => {
            cur.take(8)?;
            out.extend_from_slice(cur.since(start));
        }
        Node::Fixed(n) => {
            cur.take(*n)?;
            out.extend_from_slice(cur.since(start));
        }
        Node::Bytes => {
            let b = cur.bytes()?;
            string(b, out);
        }
        Node::String => {
            let b = cur.bytes()?;
            let new = if field == Field::Renamed {
                let text = std::str::from_utf8(b).ok();
                *last = text.map(str::to_owned);
                text.and_then(|s| (rename.f)(s))
            } else {
                None
            };
            match new {
                Some(n) => {
                    *changed += 1;
                    string(n.as_bytes(), out);
                }
                None => string(b, out),
            }
        }
        Node::Union(branches) => {
            let b = union_branch(branches, cur)?;
            out.extend_from_slice(cur.since(start));
            copy(schema, b, cur, out, field, rename, changed, last, depth + 1)?;
        }
        Node::Record(fields) => {
            // The renamed path a length after it belongs to: this record's.
            let mut mine = None;
            for (name, f) in fields {
                let kind = if rename.fields.contains(&name.as_str()) {
                    Field::Renamed
                } else if rename.length.is_some_and(|(l, _)| l == name) {
                    Field::Length
                } else {
                    Field::Plain
                };
                copy(
                    schema,
                    *f,
                    cur,
                    out,
                    kind,
                    rename,
                    changed,
                    &mut mine,
                    depth + 1,
                )?;
            }
        }
        Node::Array(item) => blocks(schema, None, *item, cur, out, rename, changed, depth)?,
        Node::Map(value) => blocks(schema, Some(()), *value, cur, out, rename, changed, depth)?,
    }
    Ok(())
}

/// An array's or a map's blocks, written back as blocks of positive counts.
#[allow(clippy::too_many_arguments)]
fn blocks(
    schema: &Schema,
    keyed: Option<()>,
    item: usize,
    cur: &mut Cursor<'_>,
    out: &mut Vec<u8>,
    rename: &Rename<'_>,
    changed: &mut u64,
    depth: usize,
) -> AResult<()> {
    loop {
        let mut count = cur.long()?;
        if count == 0 {
            zz(0, out);
            return Ok(());
        }
        if count < 0 {
            count = count
                .checked_neg()
                .ok_or_else(|| Box::new(super::AvroError::Corrupt("bad block count".into())))?;
            cur.len()?;
        }
        if count as u64 > cur.remaining() as u64 && !matches!(schema.nodes[item], Node::Null) {
            return corrupt(format!("block count {count} exceeds the bytes left"));
        }
        if count > 1 << 24 {
            return corrupt("block too long");
        }
        zz(count, out);
        for _ in 0..count {
            if keyed.is_some() {
                string(cur.bytes()?, out);
            }
            copy(
                schema,
                item,
                cur,
                out,
                Field::Plain,
                rename,
                changed,
                &mut None,
                depth + 1,
            )?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::avro::tests::{container, s, zz as z};

    const SCHEMA: &str = r#"{"type":"record","name":"e","fields":[
        {"name":"status","type":"int"},
        {"name":"data_file","type":{"type":"record","name":"f","fields":[
            {"name":"file_path","type":"string"},
            {"name":"note","type":["null","string"]},
            {"name":"counts","type":{"type":"map","values":"long"}},
            {"name":"ids","type":{"type":"array","items":"int"}}]}}]}"#;

    fn record(status: i64, path: &str, note: &str) -> Vec<u8> {
        let mut r = Vec::new();
        z(status, &mut r);
        s(path.as_bytes(), &mut r);
        z(1, &mut r);
        s(note.as_bytes(), &mut r);
        // A map of one block (negative count, with its size), an array.
        z(-1, &mut r);
        let mut block = Vec::new();
        s(b"k", &mut block);
        z(42, &mut block);
        z(block.len() as i64, &mut r);
        r.extend_from_slice(&block);
        z(0, &mut r);
        z(2, &mut r);
        z(7, &mut r);
        z(8, &mut r);
        z(0, &mut r);
        r
    }

    #[test]
    fn only_the_named_fields_are_renamed_and_the_rest_reads_the_same() {
        let mut records = record(1, "s3://b/t/data/a.parquet", "s3://b/t/data/a.parquet");
        records.extend(record(2, "s3://other/x.parquet", "n"));
        let file = container(SCHEMA, "deflate", 2, &records);
        let f = |p: &str| {
            p.strip_prefix("s3://b/t/")
                .map(|k| format!("s3://scratch/r/{k}"))
        };
        let (out, changed) = rewrite(
            &file,
            &Rename {
                fields: &["file_path"],
                f: &f,
                length: None,
            },
        )
        .unwrap();
        assert_eq!(changed, 1);
        let c = Container::open(&out).unwrap();
        assert_eq!(c.codec, super::super::Codec::Null);
        let mut blocks = Vec::new();
        c.for_each_block(|n, b| {
            blocks.push((n, b.to_vec()));
            Ok(())
        })
        .unwrap();
        let mut want = record(
            1,
            "s3://scratch/r/data/a.parquet",
            "s3://b/t/data/a.parquet",
        );
        // The map's block is written back with a positive count.
        let mut second = record(2, "s3://other/x.parquet", "n");
        let fix = |r: &mut Vec<u8>, path: &str, note: &str| {
            let mut x = Vec::new();
            z(if path.contains("other") { 2 } else { 1 }, &mut x);
            s(path.as_bytes(), &mut x);
            z(1, &mut x);
            s(note.as_bytes(), &mut x);
            z(1, &mut x);
            s(b"k", &mut x);
            z(42, &mut x);
            z(0, &mut x);
            z(2, &mut x);
            z(7, &mut x);
            z(8, &mut x);
            z(0, &mut x);
            *r = x;
        };
        fix(
            &mut want,
            "s3://scratch/r/data/a.parquet",
            "s3://b/t/data/a.parquet",
        );
        fix(&mut second, "s3://other/x.parquet", "n");
        want.extend(second);
        assert_eq!(blocks, vec![(2, want)]);
    }

    #[test]
    fn a_truncated_file_is_an_error() {
        let file = container(SCHEMA, "null", 1, &record(1, "s3://b/t/a", "n"));
        let f = |_: &str| None;
        let r = Rename {
            fields: &["file_path"],
            f: &f,
            length: None,
        };
        for cut in [10, file.len() - 20, file.len() - 1] {
            assert!(rewrite(&file[..cut], &r).is_err(), "{cut}");
        }
    }
}
