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

/// A zig-zag encoded value decoded (0, -1, 1, -2, ... from 0, 1, 2, 3, ...).
#[inline(always)]
fn unzig(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
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

    /// Reads a zig-zag varint `long`. A one-byte value (most of a
    /// manifest's: statuses, union branches, small counts) is read inline;
    /// longer ones by [`Cursor::long_multi`].
    #[inline(always)]
    pub fn long(&mut self) -> AResult<i64> {
        if let Some(&b) = self.buf.get(self.pos) {
            if b & 0x80 == 0 {
                self.pos += 1;
                return Ok(unzig(u64::from(b)));
            }
        }
        self.long_multi()
    }

    /// [`Cursor::long`] past its one-byte case.
    #[inline(never)]
    fn long_multi(&mut self) -> AResult<i64> {
        // Eight bytes at hand and the value ends within them (two to eight
        // bytes: sizes, counts, days, lengths): read as one word, the
        // terminating byte found by its clear top bit, the seven-bit groups
        // joined pairwise, with no branch per byte.
        if let Some(&eight) = self.buf.get(self.pos..).and_then(|b| b.first_chunk::<8>()) {
            let x = u64::from_le_bytes(eight);
            let stops = !x & 0x8080_8080_8080_8080;
            if stops != 0 {
                // Every bit up to the first stop bit: the value's bytes.
                let mine = stops ^ (stops - 1);
                let x = x & mine & 0x7f7f_7f7f_7f7f_7f7f;
                let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
                let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
                let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
                self.pos += stops.trailing_zeros() as usize / 8 + 1;
                return Ok(unzig(x));
            }
        }
        // Ten bytes at hand (nine- and ten-byte values: snapshot ids): the
        // longest varint is read without a bounds check per byte.
        if let Some(ten) = self.buf.get(self.pos..self.pos + 10) {
            let mut value: u64 = 0;
            for (i, &b) in ten.iter().enumerate() {
                value |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    self.pos += i + 1;
                    return Ok(unzig(value));
                }
            }
            return corrupt("varint longer than 10 bytes");
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
        Ok(unzig(value))
    }

    #[inline(always)]
    fn len(&mut self) -> AResult<usize> {
        let n = self.long()?;
        if n < 0 || n as u64 > self.remaining() as u64 {
            return self.overlong(n);
        }
        Ok(n as usize)
    }

    /// The error for a length `n` past the bytes left.
    #[cold]
    #[inline(never)]
    fn overlong<T>(&self, n: i64) -> AResult<T> {
        corrupt(format!(
            "length {n} exceeds the {} bytes left",
            self.remaining()
        ))
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> AResult<&'a [u8]> {
        match self.buf.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => self.short(n),
        }
    }

    /// The error for `n` bytes wanted past the bytes left.
    #[cold]
    #[inline(never)]
    fn short<T>(&self, n: usize) -> AResult<T> {
        corrupt(format!("need {n} bytes, {} left", self.remaining()))
    }

    /// Reads a length-prefixed byte string.
    #[inline(always)]
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
    /// Per node, the size in bytes every value of it encodes to, when all
    /// have one (null, boolean, float, double, fixed, and records of only
    /// these); `None` otherwise. Such a value is skipped in one step however
    /// many nested records it spells: a few named records of nulls used
    /// twice each would otherwise take exponentially many steps to skip.
    /// (So such a value is read at any depth, where [`skip`] refuses other
    /// values nested more than 64 deep.)
    sizes: Vec<Option<usize>>,
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
        let mut sizes = vec![Size::Unseen; b.nodes.len()];
        for i in 0..b.nodes.len() {
            exact_size(&b.nodes, i, &mut sizes, 0);
        }
        let sizes = sizes
            .into_iter()
            .map(|s| match s {
                Size::Known(n) => n,
                _ => None,
            })
            .collect();
        Ok(Schema {
            nodes: b.nodes,
            root,
            sizes,
        })
    }

    /// The size every value of `node` encodes to, in bytes, if they all
    /// have one and it is addressable here.
    fn exact_size(&self, node: usize) -> Option<usize> {
        self.sizes.get(node).copied().flatten()
    }
}

/// A node's exact size while [`exact_size`] computes them.
#[derive(Debug, Clone, Copy)]
enum Size {
    Unseen,
    /// On the current path: met again, the type holds itself (no value of
    /// it can end), so it has no size.
    Open,
    Known(Option<usize>),
}

/// Computes `sizes[node]` (memoised: each node once, so linear in the
/// schema), `None` past [`MAX_DEPTH`] records deep or on overflow.
fn exact_size(nodes: &[Node], node: usize, sizes: &mut [Size], depth: usize) -> Option<usize> {
    match sizes[node] {
        Size::Known(n) => return n,
        Size::Open => return None,
        Size::Unseen => {}
    }
    if depth > MAX_DEPTH {
        return None;
    }
    sizes[node] = Size::Open;
    let n = match &nodes[node] {
        Node::Null => Some(0),
        Node::Boolean => Some(1),
        Node::Float => Some(4),
        Node::Double => Some(8),
        Node::Fixed(n) => Some(*n),
        Node::Record(fields) => fields.iter().try_fold(0usize, |sum, (_, f)| {
            sum.checked_add(exact_size(nodes, *f, sizes, depth + 1)?)
        }),
        _ => None,
    };
    sizes[node] = Size::Known(n);
    n
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
                        // On wasm32 a size past 4 GiB would wrap: refused
                        // (no block can hold such a value anyway).
                        let Ok(size) = usize::try_from(size) else {
                            return corrupt(format!("fixed size {size} is larger than memory"));
                        };
                        let idx = self.push(Node::Fixed(size));
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

/// How many calls a projection's compilation may spend flattening skipped
/// records (see [`Projection::skip_steps`]).
const MAX_FLAT_STEPS: usize = 4096;

/// One step of a compiled projection. A record's fields become consecutive
/// steps (nested records flattened in place), so a record is read by one
/// loop over a flat list, with the common primitives decided at compile
/// time instead of looked up per value.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// An `int`, `long` or `enum` (one varint), skipped.
    SkipVarint,
    /// A `string` or `bytes` (a length and that many bytes), skipped.
    SkipBytes,
    /// A value of this many bytes, whatever it holds (boolean, float,
    /// double, fixed, a record of only these), skipped.
    SkipFixed(usize),
    /// A union of null and one varint or byte string (`["null", "long"]`,
    /// either order), skipped; `null` is the null branch's index.
    SkipOptional { null: u8, prim: Prim },
    /// A union skipped: its branch read, then that branch's value skipped.
    SkipUnion { node: usize, depth: usize },
    /// Any other value (`node`), skipped through [`skip`] at `depth`.
    SkipNode { node: usize, depth: usize },
    /// A varint into `slot`.
    TakeVarint { slot: usize },
    /// A `string` or `bytes` into `slot`, borrowed.
    TakeBytes { slot: usize },
    /// A union of null and one varint or byte string into `slot` (the
    /// null branch as [`Value::Absent`]); `null` is the null branch's index.
    TakeOptional { slot: usize, null: u8, prim: Prim },
    /// A union (`node`) into `slot`: its branch read, then a null, a
    /// varint or a byte string inline, anything else through [`take`].
    TakeUnion {
        slot: usize,
        node: usize,
        depth: usize,
    },
    /// Any other value (`node`) into `slot` through [`take`] at `depth`.
    TakeNode {
        slot: usize,
        node: usize,
        depth: usize,
    },
    /// A union (`node`) holding the projected record `record`: when the
    /// branch read is `record`, the next `len` steps read it; any other
    /// branch is skipped at `depth` and those steps are jumped over (their
    /// slots stay [`Value::Absent`]).
    Optional {
        node: usize,
        record: usize,
        len: usize,
        depth: usize,
    },
}

/// The primitive beside null in an optional field.
#[derive(Debug, Clone, Copy)]
enum Prim {
    /// `int`, `long` or `enum`.
    Varint,
    /// `string` or `bytes`.
    Bytes,
}

impl Prim {
    /// Whether `node` is a union of exactly null and one primitive read as
    /// a varint or a byte string: the null branch's index and that kind.
    fn optional(schema: &Schema, node: usize) -> Option<(u8, Prim)> {
        let Node::Union(branches) = &schema.nodes[node] else {
            return None;
        };
        let [a, b] = branches[..] else {
            return None;
        };
        let (null, other) = match (&schema.nodes[a], &schema.nodes[b]) {
            (Node::Null, _) => (0, b),
            (_, Node::Null) => (1, a),
            _ => return None,
        };
        match &schema.nodes[other] {
            Node::Int | Node::Long | Node::Enum(_) => Some((null, Prim::Varint)),
            Node::String | Node::Bytes => Some((null, Prim::Bytes)),
            _ => None,
        }
    }
}

/// A compiled projection: which slots receive which field paths.
#[derive(Debug, Clone)]
pub struct Projection {
    steps: Vec<Step>,
    slots: usize,
}

impl Projection {
    /// Compiles `paths` (each a list of field names from the root record)
    /// against `schema`. Slot `i` receives path `i`; a path missing from the
    /// writer schema stays [`Value::Absent`]. A path that runs through a
    /// non-record node is an error.
    pub fn compile(schema: &Schema, paths: &[&[&str]]) -> AResult<Projection> {
        let mut steps = Vec::new();
        Self::compile_record(
            schema,
            schema.root,
            paths,
            &(0..paths.len()).collect::<Vec<_>>(),
            0,
            &mut steps,
            &mut { MAX_FLAT_STEPS },
        )?;
        Ok(Projection {
            steps,
            slots: paths.len(),
        })
    }

    /// Appends the steps that read record `node` (at nesting `depth`) to
    /// `steps`.
    fn compile_record(
        schema: &Schema,
        node: usize,
        paths: &[&[&str]],
        wanted: &[usize],
        depth: usize,
        steps: &mut Vec<Step>,
        budget: &mut usize,
    ) -> AResult<()> {
        let Node::Record(fields) = &schema.nodes[node] else {
            return corrupt("projection root is not a record");
        };
        for (name, child) in fields {
            let child = *child;
            let here: Vec<usize> = wanted
                .iter()
                .copied()
                .filter(|&p| paths[p].get(depth) == Some(&name.as_str()))
                .collect();
            if here.is_empty() {
                Self::skip_steps(schema, child, depth, steps, budget);
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
                if let Some((null, prim)) = Prim::optional(schema, child) {
                    steps.push(Step::TakeOptional { slot, null, prim });
                    continue;
                }
                steps.push(match &schema.nodes[child] {
                    Node::Int | Node::Long | Node::Enum(_) => Step::TakeVarint { slot },
                    Node::String | Node::Bytes => Step::TakeBytes { slot },
                    Node::Union(_) => Step::TakeUnion {
                        slot,
                        node: child,
                        depth: depth + 1,
                    },
                    _ => Step::TakeNode {
                        slot,
                        node: child,
                        depth: depth + 1,
                    },
                });
                continue;
            }
            match &schema.nodes[child] {
                Node::Record(_) => {
                    Self::compile_record(schema, child, paths, &deeper, depth + 1, steps, budget)?
                }
                Node::Union(branches) => {
                    let Some(&record) = branches
                        .iter()
                        .find(|&&b| matches!(schema.nodes[b], Node::Record(_)))
                    else {
                        return corrupt(format!("field `{name}` is not a record"));
                    };
                    let at = steps.len();
                    steps.push(Step::Optional {
                        node: child,
                        record,
                        len: 0,
                        depth: depth + 1,
                    });
                    Self::compile_record(schema, record, paths, &deeper, depth + 1, steps, budget)?;
                    let inner = steps.len() - at - 1;
                    if let Step::Optional { len, .. } = &mut steps[at] {
                        *len = inner;
                    }
                }
                _ => return corrupt(format!("field `{name}` is not a record")),
            }
        }
        Ok(())
    }

    /// Appends the steps that skip a field of type `node` in a record at
    /// `depth`. A record is skipped field by field, flattened in place, as
    /// deep as [`skip`] itself would go: past that, one [`Step::SkipNode`]
    /// that fails as `skip` does when a value reaches it. Every call spends
    /// one of `budget`; once it is spent, records are skipped by one step
    /// each (a record type named in its own fields, or a few named types
    /// used many times over, would otherwise flatten to exponentially many
    /// steps).
    fn skip_steps(
        schema: &Schema,
        node: usize,
        depth: usize,
        steps: &mut Vec<Step>,
        budget: &mut usize,
    ) {
        *budget = budget.saturating_sub(1);
        if let Some(n) = schema.exact_size(node) {
            if n > 0 {
                steps.push(Step::SkipFixed(n));
            }
            return;
        }
        if let Some((null, prim)) = Prim::optional(schema, node) {
            steps.push(Step::SkipOptional { null, prim });
            return;
        }
        steps.push(match &schema.nodes[node] {
            Node::Int | Node::Long | Node::Enum(_) => Step::SkipVarint,
            Node::String | Node::Bytes => Step::SkipBytes,
            Node::Union(_) => Step::SkipUnion {
                node,
                depth: depth + 1,
            },
            // Flattened only while every step it yields (a field, and the
            // branch of a union inlined) stays within `skip`'s depth.
            Node::Record(fields) if depth + 3 <= MAX_DEPTH && *budget > 0 => {
                for (_, f) in fields {
                    Self::skip_steps(schema, *f, depth + 1, steps, budget);
                }
                return;
            }
            _ => Step::SkipNode {
                node,
                depth: depth + 1,
            },
        })
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
    let steps = &proj.steps[..];
    let mut i = 0;
    while let Some(step) = steps.get(i) {
        match *step {
            Step::SkipVarint => {
                cur.long()?;
            }
            Step::SkipBytes => {
                cur.bytes()?;
            }
            Step::SkipFixed(n) => {
                cur.take(n)?;
            }
            Step::SkipOptional { null, prim } => {
                if optional_branch(cur, null)? {
                    match prim {
                        Prim::Varint => cur.long().map(drop)?,
                        Prim::Bytes => cur.bytes().map(drop)?,
                    }
                }
            }
            Step::TakeOptional { slot, null, prim } => {
                if optional_branch(cur, null)? {
                    out[slot] = match prim {
                        Prim::Varint => Value::Int(cur.long()?),
                        Prim::Bytes => Value::Str(cur.bytes()?),
                    }
                }
            }
            Step::SkipUnion { node, depth } => {
                let Node::Union(branches) = &schema.nodes[node] else {
                    return corrupt("compiled union is not a union");
                };
                let b = union_branch(branches, cur)?;
                match &schema.nodes[b] {
                    Node::Null => {}
                    Node::Int | Node::Long | Node::Enum(_) => {
                        cur.long()?;
                    }
                    Node::String | Node::Bytes => {
                        cur.bytes()?;
                    }
                    _ => skip(schema, b, cur, depth + 1)?,
                }
            }
            Step::SkipNode { node, depth } => skip(schema, node, cur, depth)?,
            Step::TakeVarint { slot } => out[slot] = Value::Int(cur.long()?),
            Step::TakeBytes { slot } => out[slot] = Value::Str(cur.bytes()?),
            Step::TakeUnion { slot, node, depth } => {
                let Node::Union(branches) = &schema.nodes[node] else {
                    return corrupt("compiled union is not a union");
                };
                let b = union_branch(branches, cur)?;
                out[slot] = match &schema.nodes[b] {
                    Node::Null => Value::Absent,
                    Node::Int | Node::Long | Node::Enum(_) => Value::Int(cur.long()?),
                    Node::String | Node::Bytes => Value::Str(cur.bytes()?),
                    _ => take(schema, b, cur, depth + 1)?,
                }
            }
            Step::TakeNode { slot, node, depth } => out[slot] = take(schema, node, cur, depth)?,
            Step::Optional {
                node,
                record,
                len,
                depth,
            } => {
                let Node::Union(branches) = &schema.nodes[node] else {
                    return corrupt("compiled union is not a union");
                };
                let b = union_branch(branches, cur)?;
                if b != record {
                    skip(schema, b, cur, depth)?;
                    i += len;
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// Reads the branch of a two-branch union whose null branch is `null`:
/// whether the value is present.
#[inline(always)]
fn optional_branch(cur: &mut Cursor<'_>, null: u8) -> AResult<bool> {
    match cur.long()? {
        i if i == i64::from(null) => Ok(false),
        i if i == i64::from(1 - null) => Ok(true),
        i => corrupt(format!("union branch {i} out of range")),
    }
}

#[inline(always)]
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
/// types that may encode to nothing). Memoised, so linear in the schema
/// however often its named types are used.
fn min_bytes(schema: &Schema, node: usize) -> u64 {
    fn walk(nodes: &[Node], node: usize, memo: &mut [Option<u64>], depth: usize) -> u64 {
        if let Some(n) = memo[node] {
            return n;
        }
        if depth > MAX_DEPTH {
            return 0;
        }
        // On the current path, a type met inside itself counts as nothing
        // (an underestimate, so still a lower bound).
        memo[node] = Some(0);
        let n = match &nodes[node] {
            Node::Null => 0,
            Node::Float => 4,
            Node::Double => 8,
            Node::Fixed(n) => *n as u64,
            Node::Record(fields) => fields.iter().fold(0u64, |sum, (_, f)| {
                sum.saturating_add(walk(nodes, *f, memo, depth + 1))
            }),
            // A varint, a length, a branch index or a block count: one byte at least.
            _ => 1,
        };
        memo[node] = Some(n);
        n
    }
    walk(&schema.nodes, node, &mut vec![None; schema.nodes.len()], 0)
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
        Node::Record(fields) => match schema.exact_size(node) {
            Some(n) => {
                cur.take(n)?;
            }
            None => {
                for (_, f) in fields {
                    skip(schema, *f, cur, depth + 1)?;
                }
            }
        },
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
        // Items of one size (nulls, records of nulls, fixed): the block's
        // bytes at once, not a loop of zero-byte skips.
        if let [item] = parts {
            if let Some(size) = schema.exact_size(*item) {
                let Some(n) = usize::try_from(count)
                    .ok()
                    .and_then(|c| c.checked_mul(size))
                else {
                    return corrupt(format!("block count {count} exceeds the bytes left"));
                };
                cur.take(n)?;
                continue;
            }
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
    fn varints_read_the_same_with_ten_bytes_at_hand_or_fewer() {
        // The fast path (ten bytes or more left) and the careful one agree
        // on every length, on both extremes, and on what they refuse.
        let values = [
            0i64,
            -1,
            1,
            63,
            -64,
            64,
            300,
            -300,
            1 << 20,
            1 << 34,
            -(1 << 41),
            1 << 55,
            i64::MAX,
            i64::MIN,
            7_421_954_873_392_187_221,
        ];
        for v in values {
            let mut bytes = Vec::new();
            zz(v, &mut bytes);
            let n = bytes.len();
            for pad in [0usize, 1, 9, 10, 20] {
                let mut b = bytes.clone();
                b.resize(n + pad, 0xff);
                let mut c = Cursor::new(&b);
                assert_eq!(c.long().unwrap(), v, "{v} with {pad} bytes after");
                assert_eq!(c.pos, n, "{v} with {pad} bytes after");
                // Cut short, it is an error, never another value.
                for cut in 0..n {
                    assert!(Cursor::new(&bytes[..cut]).long().is_err(), "{v} cut {cut}");
                }
            }
        }
        // Eleven bytes: refused however many follow.
        for pad in [0usize, 1, 10] {
            let mut b = vec![0x80u8; 10];
            b.push(0x01);
            b.resize(11 + pad, 0);
            let e = format!("{:?}", Cursor::new(&b).long().unwrap_err());
            assert!(e.contains("longer than 10 bytes"), "{pad}: {e}");
        }
    }

    /// A varint read one byte at a time (a tenth byte's bits past the
    /// 64th dropped, as the reader always has): the reference the
    /// word-at-a-time reading must match.
    fn reference_long(b: &[u8]) -> Option<(i64, usize)> {
        let mut value = 0u64;
        for (i, &byte) in b.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f)
                .checked_shl(7 * i as u32)
                .unwrap_or(0);
            if byte & 0x80 == 0 {
                return Some((unzig(value), i + 1));
            }
        }
        None
    }

    proptest::proptest! {
        #[test]
        fn varints_read_as_the_byte_by_byte_reference_on_any_bytes(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![proptest::num::u8::ANY, 0x80u8..=0xff],
                0..24,
            ),
        ) {
            let mut c = Cursor::new(&bytes);
            match (c.long(), reference_long(&bytes)) {
                (Ok(v), Some((want, used))) => {
                    proptest::prop_assert_eq!(v, want);
                    proptest::prop_assert_eq!(c.pos, used);
                }
                (Err(_), None) => {}
                (got, want) => proptest::prop_assert!(false, "{:?} against {:?}", got, want),
            }
        }
    }

    #[test]
    fn an_optional_record_is_read_only_through_its_own_branch() {
        // A union of null and two records; the projection reads the first
        // record. A value in the second record is skipped whole (its
        // fields are not read as the first's), and the field after the
        // union is read in every case.
        let schema = r#"{"type":"record","name":"e","fields":[
            {"name":"u","type":["null",
              {"type":"record","name":"a","fields":[{"name":"x","type":"long"},{"name":"p","type":"string"}]},
              {"type":"record","name":"b","fields":[{"name":"p","type":"string"},{"name":"x","type":"long"},{"name":"y","type":"double"}]}]},
            {"name":"after","type":"string"}]}"#;
        let mut recs = Vec::new();
        zz(1, &mut recs); // branch a
        zz(42, &mut recs);
        s(b"in-a", &mut recs);
        s(b"one", &mut recs);
        zz(0, &mut recs); // null
        s(b"two", &mut recs);
        zz(2, &mut recs); // branch b
        s(b"in-b", &mut recs);
        zz(7, &mut recs);
        recs.extend_from_slice(&1.5f64.to_le_bytes());
        s(b"three", &mut recs);
        let file = container(schema, "null", 3, &recs);
        let c = Container::open(&file).unwrap();
        let p = Projection::compile(&c.schema, &[&["u", "x"], &["u", "p"], &["after"]]).unwrap();
        let mut got = Vec::new();
        c.for_each_record(&p, |v| {
            got.push(format!("{:?}", v));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            got,
            [
                r#"[Int(42), Str([105, 110, 45, 97]), Str([111, 110, 101])]"#,
                r#"[Absent, Absent, Str([116, 119, 111])]"#,
                r#"[Absent, Absent, Str([116, 104, 114, 101, 101])]"#,
            ]
        );
    }

    #[test]
    fn a_record_type_inside_itself_compiles_and_fails_when_read() {
        // `t` holds itself twice, directly: flattened without a bound it
        // would take 2^64 steps. It compiles to a bounded number, and a
        // value of it (it cannot end) is an error when read.
        let schema = r#"{"type":"record","name":"e","fields":[
            {"name":"t","type":{"type":"record","name":"t","fields":[
                {"name":"a","type":"t"},{"name":"b","type":"t"}]}},
            {"name":"after","type":"string"}]}"#;
        let mut recs = Vec::new();
        s(b"x", &mut recs);
        let file = container(schema, "null", 1, &recs);
        let c = Container::open(&file).unwrap();
        let p = Projection::compile(&c.schema, &[&["after"]]).unwrap();
        assert!(p.steps.len() <= MAX_FLAT_STEPS + 1, "{}", p.steps.len());
        let e = c.for_each_record(&p, |_| Ok(())).unwrap_err();
        assert!(format!("{e:?}").contains("nested too deeply"), "{e:?}");
    }

    #[test]
    fn records_of_one_size_are_skipped_whole_however_they_nest() {
        // r0 holds r1 twice, r1 holds r2 twice, ... r36 holds nulls: 2^36
        // nulls per value, skipped as the zero bytes they are. `fx` (a
        // double, a fixed(3) and a boolean: 12 bytes) is skipped as one
        // step, in the flattened projection and in `skip` (inside a union).
        let mut ty =
            r#"{"type":"record","name":"r36","fields":[{"name":"n","type":"null"}]}"#.to_owned();
        for i in (0..36).rev() {
            ty = format!(
                r#"{{"type":"record","name":"r{i}","fields":[{{"name":"a","type":{ty}}},{{"name":"b","type":"r{}"}}]}}"#,
                i + 1
            );
        }
        let fx = r#"{"type":"record","name":"fx","fields":[{"name":"d","type":"double"},{"name":"f","type":{"type":"fixed","name":"f3","size":3}},{"name":"b","type":"boolean"}]}"#;
        let schema = format!(
            r#"{{"type":"record","name":"e","fields":[{{"name":"wide","type":{ty}}},{{"name":"fx","type":{fx}}},{{"name":"o","type":["null","fx"]}},{{"name":"after","type":"string"}}]}}"#
        );
        let mut recs = Vec::new();
        recs.extend_from_slice(&[9u8; 12]); // fx
        zz(1, &mut recs); // o: the fx branch
        recs.extend_from_slice(&[9u8; 12]);
        s(b"end", &mut recs);
        let file = container(&schema, "null", 1, &recs);
        let c = Container::open(&file).unwrap();
        let p = Projection::compile(&c.schema, &[&["after"]]).unwrap();
        let mut got = Vec::new();
        c.for_each_record(&p, |v| {
            got.push(format!("{:?}", v[0]));
            Ok(())
        })
        .unwrap();
        assert_eq!(got, [format!("{:?}", Value::Str(b"end"))]);
        // The general `skip` agrees: the whole record, then nothing left.
        let mut cur = Cursor::new(&recs);
        skip(&c.schema, c.schema.root, &mut cur, 0).unwrap();
        assert_eq!(cur.remaining(), 0);
    }

    /// The projection read the plain way, by walking the schema value by
    /// value with [`skip`] and [`take`]: the reference the compiled steps
    /// must agree with.
    fn reference_record<'a>(
        schema: &Schema,
        record: usize,
        paths: &[(usize, &[&str])],
        depth: usize,
        cur: &mut Cursor<'a>,
        out: &mut [Value<'a>],
    ) -> AResult<()> {
        let Node::Record(fields) = &schema.nodes[record] else {
            return corrupt("not a record");
        };
        for (name, child) in fields {
            let here: Vec<(usize, &[&str])> = paths
                .iter()
                .filter(|(_, p)| p.first() == Some(&name.as_str()))
                .map(|(i, p)| (*i, &p[1..]))
                .collect();
            if here.is_empty() {
                skip(schema, *child, cur, depth + 1)?;
            } else if let Some((slot, _)) = here.iter().find(|(_, p)| p.is_empty()) {
                out[*slot] = take(schema, *child, cur, depth + 1)?;
            } else if let Node::Union(branches) = &schema.nodes[*child] {
                let inner = *branches
                    .iter()
                    .find(|&&b| matches!(schema.nodes[b], Node::Record(_)))
                    .unwrap();
                let b = union_branch(branches, cur)?;
                if b == inner {
                    reference_record(schema, b, &here, depth + 1, cur, out)?;
                } else {
                    skip(schema, b, cur, depth + 1)?;
                }
            } else {
                reference_record(schema, *child, &here, depth + 1, cur, out)?;
            }
        }
        Ok(())
    }

    #[test]
    fn compiled_steps_read_as_the_schema_walk_does_on_every_damaged_byte() {
        // Every schema of these tests, with records as written and then
        // with each byte replaced by a few others and cut at every length:
        // the compiled projection and the plain walk agree on each value,
        // on where the record ends, and on whether it is an error.
        let opt = r#"{"type":"record","name":"e","fields":[
            {"name":"status","type":"int"},
            {"name":"snapshot_id","type":["null","long"]},
            {"name":"seq","type":["long","null"]},
            {"name":"tag","type":["null","string"]},
            {"name":"data_file","type":["null",{"type":"record","name":"df","fields":[
                {"name":"content","type":"int"},
                {"name":"file_path","type":"string"},
                {"name":"partition","type":{"type":"record","name":"p","fields":[
                    {"name":"day","type":["null","int"]},{"name":"b","type":"boolean"},{"name":"f","type":"float"}]}},
                {"name":"sizes","type":["null",{"type":"map","values":"long"}]},
                {"name":"kind","type":["null","string","long"]}]},
              {"type":"record","name":"other","fields":[{"name":"x","type":"long"}]}]},
            {"name":"after","type":"bytes"}]}"#;
        let mut r = Vec::new();
        zz(1, &mut r);
        zz(1, &mut r);
        zz(7_421_954_873_392_187_221, &mut r);
        zz(0, &mut r);
        zz(300, &mut r);
        zz(1, &mut r);
        s(b"tg", &mut r);
        zz(1, &mut r);
        zz(2, &mut r);
        s(b"s3://b/t/data/a.parquet", &mut r);
        zz(1, &mut r);
        zz(20_000, &mut r);
        r.push(1);
        r.extend_from_slice(&1.5f32.to_le_bytes());
        zz(1, &mut r);
        zz(1, &mut r);
        s(b"k", &mut r);
        zz(99, &mut r);
        zz(0, &mut r);
        zz(2, &mut r);
        zz(-5, &mut r);
        s(b"end", &mut r);
        type Paths<'p> = &'p [&'p [&'p str]];
        // An optional record inside an optional record: a null outer one
        // jumps over the inner one's steps too.
        let nested = r#"{"type":"record","name":"e","fields":[
            {"name":"a","type":["null",{"type":"record","name":"ra","fields":[
                {"name":"x","type":"long"},
                {"name":"b","type":["null",{"type":"record","name":"rb","fields":[{"name":"y","type":"string"}]}]},
                {"name":"z","type":"long"}]}]},
            {"name":"after","type":"string"}]}"#;
        let mut n = Vec::new();
        zz(1, &mut n);
        zz(5, &mut n);
        zz(1, &mut n);
        s(b"yy", &mut n);
        zz(-6, &mut n);
        s(b"end", &mut n);
        // A chain of records 63 deep through named references (each type
        // defined as the items of an array, so the JSON stays shallow): its
        // `long` lies past `skip`'s depth, and the steps must fail there
        // as `skip` does, not read on.
        let mut defs = vec![r#"{"name":"d0","type":{"type":"array","items":{"type":"record","name":"n0","fields":[{"name":"v","type":"long"}]}}}"#.to_owned()];
        for k in 1..64 {
            defs.push(format!(
                r#"{{"name":"d{k}","type":{{"type":"array","items":{{"type":"record","name":"n{k}","fields":[{{"name":"x","type":"n{}"}}]}}}}}}"#,
                k - 1
            ));
        }
        let chain = format!(
            r#"{{"type":"record","name":"e","fields":[{},{{"name":"g","type":"n63"}},{{"name":"after","type":"string"}}]}}"#,
            defs.join(",")
        );
        let mut c = vec![0u8; 64];
        zz(9, &mut c);
        s(b"end", &mut c);
        let cases: [(&str, Vec<u8>, Paths); 5] = [
            (
                SCHEMA,
                record(1, "s3://b/t/data/a.parquet", 1),
                &[
                    &["status"],
                    &["data_file", "file_path"],
                    &["data_file", "content"],
                ],
            ),
            (
                opt,
                r.clone(),
                &[
                    &["status"],
                    &["data_file", "content"],
                    &["data_file", "file_path"],
                    &["snapshot_id"],
                    &["seq"],
                    &["tag"],
                    &["data_file", "kind"],
                    &["after"],
                ],
            ),
            (opt, r, &[&["after"], &["data_file", "partition"]]),
            (
                nested,
                n,
                &[&["a", "x"], &["a", "b", "y"], &["a", "z"], &["after"]],
            ),
            (&chain, c, &[&["after"]]),
        ];
        let mut compared = 0;
        for (schema, bytes, paths) in cases {
            let schema = Schema::parse(schema.as_bytes()).unwrap();
            let proj = Projection::compile(&schema, paths).unwrap();
            let indexed: Vec<(usize, &[&str])> = paths.iter().copied().enumerate().collect();
            let mut variants = vec![bytes.clone()];
            for i in 0..bytes.len() {
                variants.push(bytes[..i].to_vec());
                for v in [0u8, 1, 2, 3, 4, 0x7f, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[i] = v;
                    variants.push(b);
                }
            }
            for b in &variants {
                let mut flat = vec![Value::Absent; paths.len()];
                let mut walk = vec![Value::Absent; paths.len()];
                let (mut c1, mut c2) = (Cursor::new(b), Cursor::new(b));
                let r1 = decode_record(&schema, &proj, &mut c1, &mut flat);
                let r2 = reference_record(&schema, schema.root, &indexed, 0, &mut c2, &mut walk);
                assert_eq!(r1.is_ok(), r2.is_ok(), "{b:?}: {r1:?} vs {r2:?}");
                if r1.is_ok() {
                    assert_eq!(flat, walk, "{b:?}");
                    assert_eq!(c1.pos, c2.pos, "{b:?}");
                }
                compared += 1;
            }
        }
        assert!(compared > 500, "{compared}");
    }

    #[test]
    fn arrays_of_empty_items_are_skipped_by_their_size() {
        // 30,000 blocks each claiming 50,000 records of nothing: every
        // count is within the bytes left, and item by item it would be
        // 1.5 billion skips. By size it is one step a block.
        let schema = r#"{"type":"record","name":"e","fields":[
            {"name":"arr","type":{"type":"array","items":{"type":"record","name":"z","fields":[{"name":"n","type":"null"}]}}},
            {"name":"after","type":"bytes"}]}"#;
        let mut r = Vec::new();
        for _ in 0..30_000 {
            zz(50_000, &mut r);
        }
        zz(0, &mut r);
        s(&vec![b'x'; 60_000], &mut r);
        let schema = Schema::parse(schema.as_bytes()).unwrap();
        let mut cur = Cursor::new(&r);
        skip(&schema, schema.root, &mut cur, 0).unwrap();
        assert_eq!(cur.remaining(), 0);
        let p = Projection::compile(&schema, &[&["after"]]).unwrap();
        let mut out = [Value::Absent];
        let mut cur = Cursor::new(&r);
        decode_record(&schema, &p, &mut cur, &mut out).unwrap();
        assert!(matches!(out[0], Value::Str(b) if b.len() == 60_000));
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
