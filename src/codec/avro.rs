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

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

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

/// Position-tracking reader over a byte slice.
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// Starts reading `buf` at offset 0.
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads a zig-zag varint `long`.
    #[inline]
    pub fn long(&mut self) -> AResult<i64> {
        // Most values fit one byte.
        if let Some(&b) = self.buf.get(self.pos) {
            if b & 0x80 == 0 {
                self.pos += 1;
                let v = u64::from(b);
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return corrupt("truncated varint");
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return corrupt("varint longer than 10 bytes");
            }
        }
        Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    #[inline]
    fn len(&mut self) -> AResult<usize> {
        let n = self.long()?;
        if n < 0 || n as u64 > self.remaining() as u64 {
            return corrupt(format!(
                "length {n} exceeds the {} bytes left",
                self.remaining()
            ));
        }
        Ok(n as usize)
    }

    #[inline]
    fn take(&mut self, n: usize) -> AResult<&'a [u8]> {
        if n > self.remaining() {
            return corrupt(format!("need {n} bytes, {} left", self.remaining()));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads a length-prefixed byte string.
    pub fn bytes(&mut self) -> AResult<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
}

/// One node of a parsed schema; children are indices into [`Schema::nodes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// `null`
    Null,
    /// `boolean`
    Boolean,
    /// `int` (zig-zag varint)
    Int,
    /// `long` (zig-zag varint)
    Long,
    /// `float` (4 bytes)
    Float,
    /// `double` (8 bytes)
    Double,
    /// `bytes`
    Bytes,
    /// `string`
    String,
    /// `fixed` of the given size
    Fixed(usize),
    /// `enum` with the given number of symbols
    Enum(usize),
    /// `array` of the item node
    Array(usize),
    /// `map` of the value node
    Map(usize),
    /// `union` of the branch nodes
    Union(Vec<usize>),
    /// `record` with (field name, node) pairs
    Record(Vec<(String, usize)>),
}

/// A writer schema as an arena of nodes.
#[derive(Debug, Clone)]
pub struct Schema {
    /// All nodes; named types are defined once and referenced by index.
    pub nodes: Vec<Node>,
    /// Index of the top-level node.
    pub root: usize,
}

impl Schema {
    /// Parses an Avro schema from its JSON text.
    pub fn parse(json: &[u8]) -> AResult<Schema> {
        let v: serde_json::Value = serde_json::from_slice(json)
            .map_err(|e| AvroError::Corrupt(format!("schema is not JSON: {e}")))?;
        let mut b = SchemaBuilder {
            nodes: Vec::new(),
            names: HashMap::new(),
        };
        let root = b.node(&v, "", 0)?;
        Ok(Schema {
            nodes: b.nodes,
            root,
        })
    }
}

struct SchemaBuilder {
    nodes: Vec<Node>,
    names: HashMap<String, usize>,
}

impl SchemaBuilder {
    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }

    fn named(
        &mut self,
        obj: &serde_json::Map<String, serde_json::Value>,
        ns: &str,
        idx: usize,
    ) -> String {
        let name = obj.get("name").and_then(|n| n.as_str()).unwrap_or("");
        let ns = obj.get("namespace").and_then(|n| n.as_str()).unwrap_or(ns);
        let full = if name.contains('.') || ns.is_empty() {
            name.to_owned()
        } else {
            format!("{ns}.{name}")
        };
        self.names.insert(full.clone(), idx);
        // Iceberg's schemas refer to named records by short name as well.
        if let Some(short) = full.rsplit('.').next() {
            self.names.entry(short.to_owned()).or_insert(idx);
        }
        full
    }

    fn node(&mut self, v: &serde_json::Value, ns: &str, depth: usize) -> AResult<usize> {
        if depth > MAX_DEPTH {
            return corrupt("schema nested too deeply");
        }
        match v {
            serde_json::Value::String(s) => self.primitive_or_ref(s, ns),
            serde_json::Value::Array(branches) => {
                let mut idx = Vec::with_capacity(branches.len());
                for b in branches {
                    idx.push(self.node(b, ns, depth + 1)?);
                }
                if idx.is_empty() {
                    return corrupt("empty union");
                }
                Ok(self.push(Node::Union(idx)))
            }
            serde_json::Value::Object(obj) => {
                let Some(t) = obj.get("type") else {
                    return corrupt("schema object without `type`");
                };
                let t = match t {
                    serde_json::Value::String(s) => s.as_str(),
                    other => return self.node(other, ns, depth + 1),
                };
                match t {
                    "record" | "error" => {
                        let idx = self.push(Node::Record(Vec::new()));
                        let full = self.named(obj, ns, idx);
                        let child_ns = full
                            .rsplit_once('.')
                            .map(|(n, _)| n.to_owned())
                            .unwrap_or_default();
                        let Some(fields) = obj.get("fields").and_then(|f| f.as_array()) else {
                            return corrupt("record without `fields`");
                        };
                        let mut out = Vec::with_capacity(fields.len());
                        for f in fields {
                            let Some(name) = f.get("name").and_then(|n| n.as_str()) else {
                                return corrupt("record field without `name`");
                            };
                            let Some(ft) = f.get("type") else {
                                return corrupt("record field without `type`");
                            };
                            out.push((name.to_owned(), self.node(ft, &child_ns, depth + 1)?));
                        }
                        self.nodes[idx] = Node::Record(out);
                        Ok(idx)
                    }
                    "enum" => {
                        let n = obj
                            .get("symbols")
                            .and_then(|s| s.as_array())
                            .map_or(0, |s| s.len());
                        let idx = self.push(Node::Enum(n));
                        self.named(obj, ns, idx);
                        Ok(idx)
                    }
                    "fixed" => {
                        let Some(size) = obj.get("size").and_then(|s| s.as_u64()) else {
                            return corrupt("fixed without `size`");
                        };
                        let idx = self.push(Node::Fixed(size as usize));
                        self.named(obj, ns, idx);
                        Ok(idx)
                    }
                    "array" => {
                        let Some(items) = obj.get("items") else {
                            return corrupt("array without `items`");
                        };
                        let i = self.node(items, ns, depth + 1)?;
                        Ok(self.push(Node::Array(i)))
                    }
                    "map" => {
                        let Some(values) = obj.get("values") else {
                            return corrupt("map without `values`");
                        };
                        let i = self.node(values, ns, depth + 1)?;
                        Ok(self.push(Node::Map(i)))
                    }
                    other => self.primitive_or_ref(other, ns),
                }
            }
            _ => corrupt("schema must be a string, array or object"),
        }
    }

    fn primitive_or_ref(&mut self, s: &str, ns: &str) -> AResult<usize> {
        let n = match s {
            "null" => Node::Null,
            "boolean" => Node::Boolean,
            "int" => Node::Int,
            "long" => Node::Long,
            "float" => Node::Float,
            "double" => Node::Double,
            "bytes" => Node::Bytes,
            "string" => Node::String,
            name => {
                let full = if name.contains('.') || ns.is_empty() {
                    name.to_owned()
                } else {
                    format!("{ns}.{name}")
                };
                return match self.names.get(&full).or_else(|| self.names.get(name)) {
                    Some(&i) => Ok(i),
                    None => corrupt(format!("unknown type `{name}`")),
                };
            }
        };
        Ok(self.push(n))
    }
}

/// A decoded projected value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Value<'a> {
    /// Field absent from the writer schema, or a null union branch.
    #[default]
    Absent,
    /// `int`, `long`, `enum` index or `boolean` (0/1).
    Int(i64),
    /// `string` or `bytes`, borrowed from the block buffer.
    Str(&'a [u8]),
    /// Any other type: present but not decoded.
    Other,
}

#[derive(Debug, Clone)]
enum Op {
    Skip(usize),
    Take { slot: usize, node: usize },
    Descend { node: usize, ops: Vec<Op> },
}

/// A compiled projection: which slots receive which field paths.
#[derive(Debug, Clone)]
pub struct Projection {
    ops: Vec<Op>,
    slots: usize,
}

impl Projection {
    /// Compiles `paths` (each a list of field names from the root record)
    /// against `schema`. Slot `i` receives path `i`; a path missing from the
    /// writer schema stays [`Value::Absent`]. A path that runs through a
    /// non-record node is an error.
    pub fn compile(schema: &Schema, paths: &[&[&str]]) -> AResult<Projection> {
        let ops = Self::compile_record(
            schema,
            schema.root,
            paths,
            &(0..paths.len()).collect::<Vec<_>>(),
            0,
        )?;
        Ok(Projection {
            ops,
            slots: paths.len(),
        })
    }

    fn compile_record(
        schema: &Schema,
        node: usize,
        paths: &[&[&str]],
        wanted: &[usize],
        depth: usize,
    ) -> AResult<Vec<Op>> {
        let Node::Record(fields) = &schema.nodes[node] else {
            return corrupt("projection root is not a record");
        };
        let mut ops = Vec::with_capacity(fields.len());
        for (name, child) in fields {
            let here: Vec<usize> = wanted
                .iter()
                .copied()
                .filter(|&p| paths[p].get(depth) == Some(&name.as_str()))
                .collect();
            if here.is_empty() {
                ops.push(Op::Skip(*child));
                continue;
            }
            let leaf: Vec<usize> = here
                .iter()
                .copied()
                .filter(|&p| paths[p].len() == depth + 1)
                .collect();
            let deeper: Vec<usize> = here
                .iter()
                .copied()
                .filter(|&p| paths[p].len() > depth + 1)
                .collect();
            if !leaf.is_empty() && !deeper.is_empty() {
                return corrupt(format!(
                    "field `{name}` projected both as a leaf and a record"
                ));
            }
            if let Some(&slot) = leaf.first() {
                ops.push(Op::Take { slot, node: *child });
            } else {
                let target = Self::unwrap_optional(schema, *child);
                if !matches!(schema.nodes[target], Node::Record(_)) {
                    return corrupt(format!("field `{name}` is not a record"));
                }
                let inner = Self::compile_record(schema, target, paths, &deeper, depth + 1)?;
                ops.push(Op::Descend {
                    node: *child,
                    ops: inner,
                });
            }
        }
        Ok(ops)
    }

    fn unwrap_optional(schema: &Schema, node: usize) -> usize {
        if let Node::Union(b) = &schema.nodes[node] {
            if let Some(&r) = b
                .iter()
                .find(|&&i| matches!(schema.nodes[i], Node::Record(_)))
            {
                return r;
            }
        }
        node
    }

    /// Number of slots a decoded record fills.
    pub fn slots(&self) -> usize {
        self.slots
    }
}

/// Decodes one record with `proj` from `cur` into `out` (length `proj.slots()`).
pub fn decode_record<'a>(
    schema: &Schema,
    proj: &Projection,
    cur: &mut Cursor<'a>,
    out: &mut [Value<'a>],
) -> AResult<()> {
    for v in out.iter_mut() {
        *v = Value::Absent;
    }
    run_ops(schema, &proj.ops, cur, out, 0)
}

fn run_ops<'a>(
    schema: &Schema,
    ops: &[Op],
    cur: &mut Cursor<'a>,
    out: &mut [Value<'a>],
    depth: usize,
) -> AResult<()> {
    for op in ops {
        match op {
            // The common primitives inline; the rest through `skip`.
            Op::Skip(n) => match &schema.nodes[*n] {
                Node::Int | Node::Long | Node::Enum(_) => {
                    cur.long()?;
                }
                Node::Bytes | Node::String => {
                    cur.bytes()?;
                }
                // An optional primitive (`["null", "long"]`), inline too.
                Node::Union(branches) => {
                    let b = union_branch(branches, cur)?;
                    match &schema.nodes[b] {
                        Node::Null => {}
                        Node::Int | Node::Long | Node::Enum(_) => {
                            cur.long()?;
                        }
                        _ => skip(schema, b, cur, depth + 2)?,
                    }
                }
                _ => skip(schema, *n, cur, depth + 1)?,
            },
            Op::Take { slot, node } => {
                out[*slot] = match &schema.nodes[*node] {
                    Node::Int | Node::Long | Node::Enum(_) => Value::Int(cur.long()?),
                    Node::String | Node::Bytes => Value::Str(cur.bytes()?),
                    _ => take(schema, *node, cur, depth + 1)?,
                }
            }
            Op::Descend { node, ops } => match &schema.nodes[*node] {
                Node::Union(branches) => {
                    let b = union_branch(branches, cur)?;
                    if matches!(schema.nodes[b], Node::Record(_)) {
                        run_ops(schema, ops, cur, out, depth + 1)?;
                    } else {
                        skip(schema, b, cur, depth + 1)?;
                    }
                }
                _ => run_ops(schema, ops, cur, out, depth + 1)?,
            },
        }
    }
    Ok(())
}

#[inline]
fn union_branch(branches: &[usize], cur: &mut Cursor<'_>) -> AResult<usize> {
    let i = cur.long()?;
    match usize::try_from(i).ok().and_then(|i| branches.get(i)) {
        Some(&b) => Ok(b),
        None => corrupt(format!("union branch {i} out of range")),
    }
}

fn take<'a>(
    schema: &Schema,
    node: usize,
    cur: &mut Cursor<'a>,
    depth: usize,
) -> AResult<Value<'a>> {
    if depth > MAX_DEPTH {
        return corrupt("value nested too deeply");
    }
    Ok(match &schema.nodes[node] {
        Node::Null => Value::Absent,
        Node::Boolean => Value::Int(i64::from(cur.take(1)?[0] != 0)),
        Node::Int | Node::Long | Node::Enum(_) => Value::Int(cur.long()?),
        Node::String | Node::Bytes => Value::Str(cur.bytes()?),
        Node::Union(branches) => {
            let b = union_branch(branches, cur)?;
            take(schema, b, cur, depth + 1)?
        }
        _ => {
            skip(schema, node, cur, depth)?;
            Value::Other
        }
    })
}

/// The fewest bytes one value of `node` can take (a lower bound; 0 for
/// types that may encode to nothing).
fn min_bytes(schema: &Schema, node: usize, depth: usize) -> u64 {
    if depth > MAX_DEPTH {
        return 0;
    }
    match &schema.nodes[node] {
        Node::Null => 0,
        Node::Float => 4,
        Node::Double => 8,
        Node::Fixed(n) => *n as u64,
        Node::Record(fields) => fields
            .iter()
            .map(|(_, f)| min_bytes(schema, *f, depth + 1))
            .fold(0u64, u64::saturating_add),
        // A varint, a length, a branch index or a block count: one byte at least.
        _ => 1,
    }
}

/// Skips one value of `node` without decoding it.
pub fn skip(schema: &Schema, node: usize, cur: &mut Cursor<'_>, depth: usize) -> AResult<()> {
    if depth > MAX_DEPTH {
        return corrupt("value nested too deeply");
    }
    match &schema.nodes[node] {
        Node::Null => {}
        Node::Boolean => {
            cur.take(1)?;
        }
        Node::Int | Node::Long | Node::Enum(_) => {
            cur.long()?;
        }
        Node::Float => {
            cur.take(4)?;
        }
        Node::Double => {
            cur.take(8)?;
        }
        Node::Bytes | Node::String => {
            cur.bytes()?;
        }
        Node::Fixed(n) => {
            cur.take(*n)?;
        }
        Node::Union(branches) => {
            let b = union_branch(branches, cur)?;
            skip(schema, b, cur, depth + 1)?;
        }
        Node::Record(fields) => {
            for (_, f) in fields {
                skip(schema, *f, cur, depth + 1)?;
            }
        }
        Node::Array(item) => skip_blocks(schema, &[*item], cur, depth)?,
        Node::Map(value) => skip_blocks(schema, &[usize::MAX, *value], cur, depth)?,
    }
    Ok(())
}

fn skip_blocks(
    schema: &Schema,
    parts: &[usize],
    cur: &mut Cursor<'_>,
    depth: usize,
) -> AResult<()> {
    loop {
        let count = cur.long()?;
        if count == 0 {
            return Ok(());
        }
        if count < 0 {
            // A negative count is followed by the block's size in bytes: jump.
            let n = cur.len()?;
            cur.take(n)?;
            continue;
        }
        // Every item takes at least one byte unless its type is empty (null):
        // bound the loop by the bytes left so a forged count cannot spin.
        let item_has_bytes = parts
            .iter()
            .any(|&p| p == usize::MAX || !matches!(schema.nodes[p], Node::Null));
        if item_has_bytes && count as u64 > cur.remaining() as u64 {
            return corrupt(format!("block count {count} exceeds the bytes left"));
        }
        if !item_has_bytes && count > 1 << 24 {
            return corrupt("block of nulls too long");
        }
        for _ in 0..count {
            for &p in parts {
                if p == usize::MAX {
                    cur.bytes()?; // map key
                } else {
                    skip(schema, p, cur, depth + 1)?;
                }
            }
        }
    }
}

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
            sync,
            body,
        })
    }

    /// Calls `f(records_in_block, decompressed_block)` for every data block,
    /// checking sync markers and sizes.
    pub fn for_each_block(&self, mut f: impl FnMut(u64, &[u8]) -> AResult<()>) -> AResult<()> {
        let mut cur = Cursor::new(self.body);
        let mut scratch = Vec::new();
        let mut inflater = super::inflate::Inflater::default();
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
        let per_record = min_bytes(&self.schema, self.schema.root, 0);
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
pub(crate) mod tests {
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
    fn container_of_blocks(schema: &str, codec: &str, blocks: &[(i64, Vec<u8>)]) -> Vec<u8> {
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

    const SCHEMA: &str = r#"{"type":"record","name":"e","fields":[
        {"name":"status","type":"int"},
        {"name":"stats","type":{"type":"map","values":"long"}},
        {"name":"data_file","type":{"type":"record","name":"r2","fields":[
            {"name":"file_path","type":"string"},
            {"name":"bounds","type":["null",{"type":"array","items":{"type":"record","name":"kv","fields":[{"name":"k","type":"int"},{"name":"v","type":"bytes"}]}}]},
            {"name":"content","type":"int"}]}}]}"#;

    fn record(status: i64, path: &str, content: i64) -> Vec<u8> {
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

    fn decode_all(bytes: &[u8]) -> AResult<Vec<(i64, String, i64)>> {
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
