//! A projection reader for Apache Parquet files, enough for Delta Lake
//! checkpoints: the footer and page headers (Thrift compact protocol), data
//! pages v1 and v2, dictionary pages, `PLAIN`, `PLAIN_DICTIONARY` /
//! `RLE_DICTIONARY`, `RLE` booleans and `DELTA_BINARY_PACKED` integers;
//! uncompressed, Snappy, gzip and Zstandard chunks, all in pure Rust so every
//! host (wasm32 included) reads checkpoints the same way.
//!
//! Only the requested leaf columns are decoded. A leaf may sit under optional
//! structs and at most one repeated level (a list or a map), which covers
//! every field a garbage collector needs from a checkpoint. Anything else
//! (LZ4, Brotli, LZO, deeper repetition, an encoding not listed above) is an
//! explicit "unsupported", never a guess. Every length is bounds-checked;
//! a truncated or damaged file is an error, not a panic.

use std::io::Read;

/// Largest decompressed page accepted, in bytes (256 MiB).
const MAX_PAGE_BYTES: usize = 256 << 20;
/// Deepest Thrift nesting accepted.
const MAX_DEPTH: usize = 32;
/// Most elements accepted in one Thrift list or map.
const MAX_ELEMS: usize = 1 << 24;

/// Why a Parquet file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParquetError {
    /// Truncated or damaged bytes.
    Corrupt(String),
    /// A valid file using a feature this reader does not implement.
    Unsupported(String),
}

/// Shorthand for this module.
pub type PResult<T> = Result<T, ParquetError>;

fn corrupt<T>(msg: impl Into<String>) -> PResult<T> {
    Err(ParquetError::Corrupt(msg.into()))
}
fn unsupported<T>(msg: impl Into<String>) -> PResult<T> {
    Err(ParquetError::Unsupported(msg.into()))
}

// ---------------------------------------------------------------------------
// Thrift compact protocol, decoded into a small generic tree.

#[derive(Debug, Clone)]
enum TValue {
    Bool(bool),
    Int(i64),
    Double,
    Binary(Vec<u8>),
    List(Vec<TValue>),
    Struct(Vec<(i16, TValue)>),
    Map,
}

struct Thrift<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Thrift<'a> {
    fn byte(&mut self) -> PResult<u8> {
        let Some(&b) = self.buf.get(self.pos) else {
            return corrupt("truncated thrift structure");
        };
        self.pos += 1;
        Ok(b)
    }
    fn varint(&mut self) -> PResult<u64> {
        let mut out = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return corrupt("varint overflows 64 bits");
            }
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        corrupt("varint too long")
    }
    fn zigzag(&mut self) -> PResult<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }
    fn take(&mut self, n: usize) -> PResult<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return corrupt("truncated thrift binary");
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn value(&mut self, ty: u8, depth: usize) -> PResult<TValue> {
        if depth > MAX_DEPTH {
            return corrupt("thrift nesting too deep");
        }
        Ok(match ty {
            1 => TValue::Bool(true),
            2 => TValue::Bool(false),
            3 => TValue::Int(i64::from(self.byte()? as i8)),
            4..=6 => TValue::Int(self.zigzag()?),
            7 => {
                self.take(8)?;
                TValue::Double
            }
            8 => {
                let n = usize::try_from(self.varint()?).unwrap_or(usize::MAX);
                TValue::Binary(self.take(n)?.to_vec())
            }
            9 | 10 => {
                let h = self.byte()?;
                let mut n = usize::from(h >> 4);
                if n == 15 {
                    n = usize::try_from(self.varint()?).unwrap_or(usize::MAX);
                }
                if n > MAX_ELEMS || n > self.buf.len() - self.pos {
                    return corrupt("thrift list longer than the buffer");
                }
                let et = h & 0x0f;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    if et == 1 || et == 2 {
                        // Booleans inside collections are one byte each.
                        items.push(TValue::Bool(self.byte()? == 1));
                    } else {
                        items.push(self.value(et, depth + 1)?);
                    }
                }
                TValue::List(items)
            }
            11 => {
                let n = usize::try_from(self.varint()?).unwrap_or(usize::MAX);
                if n > MAX_ELEMS || n > self.buf.len() - self.pos {
                    return corrupt("thrift map longer than the buffer");
                }
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.value(kv >> 4, depth + 1)?;
                        self.value(kv & 0x0f, depth + 1)?;
                    }
                }
                TValue::Map
            }
            12 => self.structure(depth + 1)?,
            t => return corrupt(format!("unknown thrift type {t}")),
        })
    }
    fn structure(&mut self, depth: usize) -> PResult<TValue> {
        if depth > MAX_DEPTH {
            return corrupt("thrift nesting too deep");
        }
        let mut fields = Vec::new();
        let mut last: i16 = 0;
        loop {
            let h = self.byte()?;
            if h == 0 {
                return Ok(TValue::Struct(fields));
            }
            let delta = h >> 4;
            let id = if delta == 0 {
                i16::try_from(self.zigzag()?)
                    .map_err(|_| ParquetError::Corrupt("thrift field id out of range".into()))?
            } else {
                last.saturating_add(i16::from(delta))
            };
            last = id;
            let v = self.value(h & 0x0f, depth)?;
            fields.push((id, v));
        }
    }
}

/// Field accessors on a decoded Thrift struct.
struct Fields<'t>(&'t [(i16, TValue)]);

impl<'t> Fields<'t> {
    fn of(v: &'t TValue, what: &str) -> PResult<Fields<'t>> {
        match v {
            TValue::Struct(f) => Ok(Fields(f)),
            _ => corrupt(format!("{what} is not a struct")),
        }
    }
    fn get(&self, id: i16) -> Option<&'t TValue> {
        self.0.iter().find(|(i, _)| *i == id).map(|(_, v)| v)
    }
    fn int(&self, id: i16) -> Option<i64> {
        match self.get(id) {
            Some(TValue::Int(v)) => Some(*v),
            _ => None,
        }
    }
    fn need_int(&self, id: i16, what: &str) -> PResult<i64> {
        self.int(id)
            .ok_or_else(|| ParquetError::Corrupt(format!("{what} missing")))
    }
    fn string(&self, id: i16) -> Option<String> {
        match self.get(id) {
            Some(TValue::Binary(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
    fn list(&self, id: i16) -> &'t [TValue] {
        match self.get(id) {
            Some(TValue::List(l)) => l,
            _ => &[],
        }
    }
    fn boolean(&self, id: i16) -> Option<bool> {
        match self.get(id) {
            Some(TValue::Bool(b)) => Some(*b),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Footer and schema.

/// Physical types, as numbered by the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Physical {
    Boolean,
    Int32,
    Int64,
    Int96,
    Float,
    Double,
    ByteArray,
    Fixed(usize),
}

/// One leaf column of the schema, with its levels.
#[derive(Debug, Clone)]
struct Leaf {
    path: Vec<String>,
    physical: Physical,
    max_def: u16,
    max_rep: u16,
    /// Definition level at which the innermost repeated ancestor has an element.
    rep_def: u16,
}

#[derive(Debug, Clone)]
struct Chunk {
    codec: i64,
    num_values: i64,
    start: usize,
    len: usize,
}

/// A decoded leaf value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// BOOLEAN.
    Bool(bool),
    /// INT32 or INT64.
    Int(i64),
    /// BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY (strings are UTF-8 bytes).
    Bytes(Vec<u8>),
    /// Any other type (floating point, INT96): present, value not decoded.
    Other,
}

impl Value {
    /// The value as a string, if it is one and valid UTF-8 (never lossy:
    /// a path altered by replacement characters would name another file).
    pub fn as_str(&self) -> Option<String> {
        match self {
            Value::Bytes(b) => String::from_utf8(b.clone()).ok(),
            _ => None,
        }
    }
    /// The value as a string, if it is one and valid UTF-8, without a copy.
    pub fn into_string(self) -> Option<String> {
        match self {
            Value::Bytes(b) => String::from_utf8(b).ok(),
            _ => None,
        }
    }
    /// The value as an integer, if it is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }
    /// The value as a boolean, if it is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(v) => Some(*v),
            _ => None,
        }
    }
}

/// The decoded values of one requested column, one entry per row.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// Not present in the file's schema: every row is null.
    Absent,
    /// A leaf without a repeated ancestor: one optional value per row.
    Flat(Vec<Option<Value>>),
    /// A leaf under one list or map: per row, the elements (`None`: null element).
    Repeated(Vec<Vec<Option<Value>>>),
}

impl Column {
    /// The value of row `row` of a flat column (`None` when null or absent).
    pub fn flat(&self, row: usize) -> Option<&Value> {
        match self {
            Column::Flat(v) => v.get(row).and_then(|x| x.as_ref()),
            _ => None,
        }
    }
    /// Takes the value of row `row` of a flat column, leaving null
    /// (`None` when null or absent).
    pub fn take(&mut self, row: usize) -> Option<Value> {
        match self {
            Column::Flat(v) => v.get_mut(row).and_then(Option::take),
            _ => None,
        }
    }
    /// The elements of row `row` of a repeated column (empty when absent).
    pub fn repeated(&self, row: usize) -> &[Option<Value>] {
        match self {
            Column::Repeated(v) => v.get(row).map(|x| x.as_slice()).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// A parsed Parquet footer: the schema's leaves and the column chunks of
/// every row group.
#[derive(Debug, Clone)]
pub struct ParquetFile<'a> {
    bytes: &'a [u8],
    leaves: Vec<Leaf>,
    /// Per row group: row count and one chunk per leaf (same order).
    groups: Vec<(usize, Vec<Chunk>)>,
    rows: usize,
}

fn physical(ty: i64, len: Option<i64>) -> PResult<Physical> {
    Ok(match ty {
        0 => Physical::Boolean,
        1 => Physical::Int32,
        2 => Physical::Int64,
        3 => Physical::Int96,
        4 => Physical::Float,
        5 => Physical::Double,
        6 => Physical::ByteArray,
        7 => {
            let n = len.filter(|&n| (0..=1 << 20).contains(&n));
            let Some(n) = n else {
                return corrupt("fixed-length column without a valid length");
            };
            Physical::Fixed(n as usize)
        }
        t => return corrupt(format!("unknown physical type {t}")),
    })
}

/// The length in bytes of a Parquet file's footer (the Thrift file
/// metadata), read from its last 8 bytes; `None` when it is not a Parquet
/// file. What decoding the footer costs grows with it.
pub fn footer_len(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < 12 || &bytes[..4] != b"PAR1" {
        return None;
    }
    let tail = &bytes[bytes.len() - 8..];
    Some(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize)
}

impl<'a> ParquetFile<'a> {
    /// Parses the footer of a whole Parquet file.
    pub fn open(bytes: &'a [u8]) -> PResult<ParquetFile<'a>> {
        if bytes.len() < 12 || &bytes[..4] != b"PAR1" {
            return corrupt("not a Parquet file (no leading PAR1)");
        }
        let tail = &bytes[bytes.len() - 8..];
        if &tail[4..] != b"PAR1" {
            if &tail[4..] == b"PARE" {
                return unsupported("encrypted Parquet footer");
            }
            return corrupt("no trailing PAR1 (truncated file)");
        }
        let len = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
        let Some(start) = (bytes.len() - 8).checked_sub(len).filter(|&s| s >= 4) else {
            return corrupt("footer length exceeds the file");
        };
        let mut t = Thrift {
            buf: &bytes[start..bytes.len() - 8],
            pos: 0,
        };
        let meta = t.structure(0)?;
        let meta = Fields::of(&meta, "file metadata")?;
        let schema = meta.list(2);
        let leaves = Self::leaves(schema)?;
        let mut groups = Vec::new();
        let mut rows = 0usize;
        // Every row of a checkpoint names a file or an action: a file that
        // declares far more rows (or values) than its bytes could hold is
        // forged, and decoding it would only exhaust memory.
        let max_values = bytes.len().saturating_mul(64);
        for rg in meta.list(4) {
            let rg = Fields::of(rg, "row group")?;
            let n = rg.need_int(3, "row group row count")?;
            let n =
                usize::try_from(n).map_err(|_| ParquetError::Corrupt("negative rows".into()))?;
            if n > max_values {
                return corrupt(format!(
                    "a row group declares {n} rows in a {} byte file",
                    bytes.len()
                ));
            }
            let cols = rg.list(1);
            if cols.len() != leaves.len() {
                return corrupt(format!(
                    "row group has {} column chunks for {} schema leaves",
                    cols.len(),
                    leaves.len()
                ));
            }
            let mut chunks = Vec::with_capacity(cols.len());
            for (c, leaf) in cols.iter().zip(&leaves) {
                let c = Fields::of(c, "column chunk")?;
                if c.string(1).is_some() {
                    return unsupported("column chunk stored in another file");
                }
                let Some(md) = c.get(3) else {
                    return corrupt("column chunk without metadata");
                };
                let md = Fields::of(md, "column metadata")?;
                let path: Vec<String> = md
                    .list(3)
                    .iter()
                    .filter_map(|v| match v {
                        TValue::Binary(b) => Some(String::from_utf8_lossy(b).into_owned()),
                        _ => None,
                    })
                    .collect();
                if path != leaf.path {
                    return corrupt(format!(
                        "column chunk `{}` does not match schema leaf `{}`",
                        path.join("."),
                        leaf.path.join(".")
                    ));
                }
                let data = md.need_int(9, "data page offset")?;
                let start = md.int(11).filter(|&d| d > 0 && d < data).unwrap_or(data);
                let len = md.need_int(7, "compressed chunk size")?;
                let (Ok(start), Ok(len)) = (usize::try_from(start), usize::try_from(len)) else {
                    return corrupt("negative chunk offset or size");
                };
                if start.checked_add(len).is_none_or(|e| e > bytes.len()) {
                    return corrupt("column chunk extends past the end of the file");
                }
                let num_values = md.need_int(5, "value count")?;
                let plausible = usize::try_from(num_values).is_ok_and(|v| v <= max_values)
                    && (leaf.max_rep > 0 || num_values as usize == n);
                if !plausible {
                    return corrupt(format!(
                        "column `{}` declares {num_values} values in a row group of {n} rows",
                        leaf.path.join(".")
                    ));
                }
                chunks.push(Chunk {
                    codec: md.need_int(4, "codec")?,
                    num_values,
                    start,
                    len,
                });
            }
            rows = rows.saturating_add(n);
            if rows > max_values {
                return corrupt("the row groups declare more rows than the file could hold");
            }
            groups.push((n, chunks));
        }
        Ok(ParquetFile {
            bytes,
            leaves,
            groups,
            rows,
        })
    }

    fn leaves(schema: &[TValue]) -> PResult<Vec<Leaf>> {
        struct Frame {
            left: i64,
            depth_def: u16,
            depth_rep: u16,
            rep_def: u16,
            name: Option<String>,
        }
        let mut out = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        for (i, el) in schema.iter().enumerate() {
            let f = Fields::of(el, "schema element")?;
            let children = f.int(5).unwrap_or(0);
            if !(0..=1 << 16).contains(&children) {
                return corrupt(format!("schema element with {children} children"));
            }
            if i == 0 {
                stack.push(Frame {
                    left: children,
                    depth_def: 0,
                    depth_rep: 0,
                    rep_def: 0,
                    name: None,
                });
                continue;
            }
            while stack.last().is_some_and(|fr| fr.left == 0) {
                stack.pop();
            }
            let Some(parent) = stack.last_mut() else {
                return corrupt("schema has more elements than its root declares");
            };
            parent.left -= 1;
            let (pd, pr, prd) = (parent.depth_def, parent.depth_rep, parent.rep_def);
            let rep = f.int(3).unwrap_or(0);
            let (def, reps, rep_def) = match rep {
                0 => (pd, pr, prd),
                1 => (pd + 1, pr, prd),
                2 => (pd + 1, pr + 1, pd + 1),
                r => return corrupt(format!("unknown repetition {r}")),
            };
            let name = f.string(4).unwrap_or_default();
            let mut path: Vec<String> = stack.iter().filter_map(|fr| fr.name.clone()).collect();
            path.push(name.clone());
            if children > 0 {
                if stack.len() > MAX_DEPTH {
                    return corrupt("schema nesting too deep");
                }
                stack.push(Frame {
                    left: children,
                    depth_def: def,
                    depth_rep: reps,
                    rep_def,
                    name: Some(name),
                });
            } else {
                let Some(ty) = f.int(1) else {
                    return corrupt(format!("leaf `{}` has no type", path.join(".")));
                };
                out.push(Leaf {
                    path,
                    physical: physical(ty, f.int(2))?,
                    max_def: def,
                    max_rep: reps,
                    rep_def,
                });
            }
        }
        Ok(out)
    }

    /// Number of rows in the file.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// True when the schema has a leaf matching `pattern` (see [`ParquetFile::column`]).
    pub fn has_column(&self, pattern: &[&str]) -> bool {
        self.find(pattern).is_some()
    }

    fn find(&self, pattern: &[&str]) -> Option<usize> {
        self.leaves.iter().position(|l| glob(pattern, &l.path))
    }

    /// Number of row groups.
    pub fn row_groups(&self) -> usize {
        self.groups.len()
    }

    /// Number of rows in row group `group` (0 past the last).
    pub fn group_rows(&self, group: usize) -> usize {
        self.groups.get(group).map_or(0, |(n, _)| *n)
    }

    /// Decodes the leaf column matching `pattern` over the whole file:
    /// names, where `**` matches one or more path components (the group
    /// names of lists and maps vary between writers). [`Column::Absent`]
    /// when no leaf matches. Holds every row's value at once: a large file
    /// is better read a row group at a time ([`ParquetFile::group_column`]).
    pub fn column(&self, pattern: &[&str]) -> PResult<Column> {
        self.decode(pattern, 0..self.groups.len())
    }

    /// Decodes the leaf column matching `pattern` (as
    /// [`ParquetFile::column`]) in row group `group` only: rows are
    /// numbered from the group's first.
    pub fn group_column(&self, pattern: &[&str], group: usize) -> PResult<Column> {
        if group >= self.groups.len() {
            return corrupt(format!("no row group {group}"));
        }
        self.decode(pattern, group..group + 1)
    }

    fn decode(&self, pattern: &[&str], groups: std::ops::Range<usize>) -> PResult<Column> {
        let Some(idx) = self.find(pattern) else {
            return Ok(Column::Absent);
        };
        let leaf = &self.leaves[idx];
        if leaf.max_rep > 1 {
            return unsupported(format!(
                "column `{}` nested in more than one list or map",
                leaf.path.join(".")
            ));
        }
        let mut flat = Vec::new();
        let mut repeated: Vec<Vec<Option<Value>>> = Vec::new();
        for (rows, chunks) in &self.groups[groups] {
            let chunk = &chunks[idx];
            let before = if leaf.max_rep == 0 {
                flat.len()
            } else {
                repeated.len()
            };
            self.read_chunk(leaf, chunk, &mut |rep, def, v| {
                if leaf.max_rep == 0 {
                    flat.push(if def == leaf.max_def { v } else { None });
                } else {
                    if rep == 0 {
                        repeated.push(Vec::new());
                    }
                    let Some(row) = repeated.last_mut() else {
                        return corrupt("repeated column starts mid-row");
                    };
                    if def >= leaf.rep_def {
                        row.push(if def == leaf.max_def { v } else { None });
                    }
                }
                Ok(())
            })?;
            let after = if leaf.max_rep == 0 {
                flat.len()
            } else {
                repeated.len()
            };
            if after - before != *rows {
                return corrupt(format!(
                    "column `{}` holds {} rows in a row group of {rows}",
                    leaf.path.join("."),
                    after - before
                ));
            }
        }
        Ok(if leaf.max_rep == 0 {
            Column::Flat(flat)
        } else {
            Column::Repeated(repeated)
        })
    }

    fn read_chunk(
        &self,
        leaf: &Leaf,
        chunk: &Chunk,
        emit: &mut dyn FnMut(u16, u16, Option<Value>) -> PResult<()>,
    ) -> PResult<()> {
        let data = &self.bytes[chunk.start..chunk.start + chunk.len];
        let mut pos = 0usize;
        let mut dict: Option<Vec<Value>> = None;
        let mut seen: i64 = 0;
        while seen < chunk.num_values {
            if pos >= data.len() {
                return corrupt(format!(
                    "column `{}` ends after {seen} of {} values",
                    leaf.path.join("."),
                    chunk.num_values
                ));
            }
            let mut t = Thrift {
                buf: &data[pos..],
                pos: 0,
            };
            let header = t.structure(0)?;
            let h = Fields::of(&header, "page header")?;
            pos += t.pos;
            let ptype = h.need_int(1, "page type")?;
            let usize_of = |v: i64, what: &str| {
                usize::try_from(v).map_err(|_| ParquetError::Corrupt(format!("negative {what}")))
            };
            let uncompressed = usize_of(h.need_int(2, "page size")?, "page size")?;
            let compressed = usize_of(h.need_int(3, "compressed page size")?, "page size")?;
            let Some(body) = data.get(pos..pos.saturating_add(compressed)) else {
                return corrupt("page extends past its column chunk");
            };
            pos += compressed;
            if uncompressed > MAX_PAGE_BYTES {
                return corrupt("page too large");
            }
            match ptype {
                2 => {
                    let d = h.get(7).ok_or_else(|| {
                        ParquetError::Corrupt("dictionary page without header".into())
                    })?;
                    let d = Fields::of(d, "dictionary page header")?;
                    let n = usize_of(d.need_int(1, "dictionary size")?, "dictionary size")?;
                    if let Some(e) = d.int(2).filter(|e| *e != 0 && *e != 2) {
                        return unsupported(format!("Parquet dictionary page encoding {e}"));
                    }
                    let raw = decompress(chunk.codec, body, uncompressed)?;
                    let mut vals = Vec::with_capacity(n.min(raw.len() + 1));
                    let mut cur = 0usize;
                    plain(leaf.physical, &raw, &mut cur, n, &mut |v| {
                        vals.push(v);
                        Ok(())
                    })?;
                    dict = Some(vals);
                }
                0 => {
                    let d = h
                        .get(5)
                        .ok_or_else(|| ParquetError::Corrupt("data page without header".into()))?;
                    let d = Fields::of(d, "data page header")?;
                    let n = usize_of(d.need_int(1, "page value count")?, "value count")?;
                    if n as i64 > chunk.num_values - seen {
                        return corrupt("a page holds more values than its column chunk");
                    }
                    let enc = d.need_int(2, "page encoding")?;
                    // Writers name an encoding even for levels they do not
                    // write (max level 0): only levels present must be RLE.
                    let present = [
                        (3, "definition", leaf.max_def),
                        (4, "repetition", leaf.max_rep),
                    ];
                    for (field, what, _) in present.into_iter().filter(|(_, _, m)| *m > 0) {
                        if let Some(e) = d.int(field).filter(|e| *e != 3) {
                            return unsupported(format!(
                                "Parquet {what} level encoding {e} (only RLE)"
                            ));
                        }
                    }
                    let raw = decompress(chunk.codec, body, uncompressed)?;
                    let mut cur = 0usize;
                    let reps = if leaf.max_rep > 0 {
                        let len = prefixed(&raw, &mut cur)?;
                        levels(len, leaf.max_rep, n)?
                    } else {
                        vec![0; n]
                    };
                    let defs = if leaf.max_def > 0 {
                        let len = prefixed(&raw, &mut cur)?;
                        levels(len, leaf.max_def, n)?
                    } else {
                        vec![0; n]
                    };
                    values(leaf, enc, &raw[cur..], &reps, &defs, dict.as_deref(), emit)?;
                    seen += n as i64;
                }
                3 => {
                    let d = h.get(8).ok_or_else(|| {
                        ParquetError::Corrupt("data page v2 without header".into())
                    })?;
                    let d = Fields::of(d, "data page v2 header")?;
                    let n = usize_of(d.need_int(1, "page value count")?, "value count")?;
                    if n as i64 > chunk.num_values - seen {
                        return corrupt("a page holds more values than its column chunk");
                    }
                    let enc = d.need_int(4, "page encoding")?;
                    let dl = usize_of(d.need_int(5, "definition levels length")?, "length")?;
                    let rl = usize_of(d.need_int(6, "repetition levels length")?, "length")?;
                    let compressed_values = d.boolean(7).unwrap_or(true);
                    if rl.saturating_add(dl) > body.len() {
                        return corrupt("page v2 levels longer than the page");
                    }
                    let reps = if leaf.max_rep > 0 {
                        levels(&body[..rl], leaf.max_rep, n)?
                    } else {
                        vec![0; n]
                    };
                    let defs = if leaf.max_def > 0 {
                        levels(&body[rl..rl + dl], leaf.max_def, n)?
                    } else {
                        vec![0; n]
                    };
                    let rest = &body[rl + dl..];
                    let raw;
                    let vals: &[u8] = if compressed_values {
                        raw = decompress(chunk.codec, rest, uncompressed.saturating_sub(rl + dl))?;
                        &raw
                    } else {
                        rest
                    };
                    values(leaf, enc, vals, &reps, &defs, dict.as_deref(), emit)?;
                    seen += n as i64;
                }
                1 => {}
                t => return corrupt(format!("unknown page type {t}")),
            }
        }
        Ok(())
    }
}

fn glob(pattern: &[&str], path: &[String]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (1..=path.len()).any(|k| glob(rest, &path[k..])),
        Some((p, rest)) => path.first().is_some_and(|h| h == p) && glob(rest, &path[1..]),
    }
}

fn decompress(codec: i64, body: &[u8], expected: usize) -> PResult<Vec<u8>> {
    let out = match codec {
        0 => body.to_vec(),
        1 => {
            let n = snap::raw::decompress_len(body)
                .map_err(|e| ParquetError::Corrupt(format!("snappy: {e}")))?;
            if n != expected {
                return corrupt("snappy page size does not match its header");
            }
            snap::raw::Decoder::new()
                .decompress_vec(body)
                .map_err(|e| ParquetError::Corrupt(format!("snappy: {e}")))?
        }
        2 => crate::codec::gzip::gunzip(body, expected)
            .map_err(|e| ParquetError::Corrupt(format!("gzip: {e}")))?,
        6 => {
            let mut out = Vec::with_capacity(expected.min(MAX_PAGE_BYTES));
            let mut src = body;
            let dec = ruzstd::decoding::StreamingDecoder::new(&mut src)
                .map_err(|e| ParquetError::Corrupt(format!("zstandard: {e}")))?;
            dec.take(expected as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| ParquetError::Corrupt(format!("zstandard: {e}")))?;
            out
        }
        7 => lz4_flex::block::decompress(body, expected)
            .map_err(|e| ParquetError::Corrupt(format!("lz4: {e}")))?,
        3 => return unsupported("Parquet codec LZO"),
        4 => return unsupported("Parquet codec BROTLI"),
        5 => return unsupported("Parquet codec LZ4 (Hadoop framing; LZ4_RAW is read)"),
        c => return unsupported(format!("Parquet codec {c}")),
    };
    if out.len() != expected {
        return corrupt(format!(
            "page decompressed to {} bytes, header says {expected}",
            out.len()
        ));
    }
    Ok(out)
}

/// A 4-byte little-endian length, then that many bytes.
fn prefixed<'b>(buf: &'b [u8], cur: &mut usize) -> PResult<&'b [u8]> {
    let Some(h) = buf.get(*cur..*cur + 4) else {
        return corrupt("truncated level length");
    };
    let n = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
    let start = *cur + 4;
    let Some(s) = buf.get(start..start.saturating_add(n)) else {
        return corrupt("levels longer than the page");
    };
    *cur = start + n;
    Ok(s)
}

fn bit_width(max: u16) -> u32 {
    16 - max.leading_zeros()
}

fn levels(buf: &[u8], max: u16, n: usize) -> PResult<Vec<u16>> {
    let mut out = Vec::with_capacity(n.min(1 << 16));
    hybrid(buf, bit_width(max), n, &mut |v| {
        if v > u64::from(max) {
            return corrupt("level above its maximum");
        }
        out.push(v as u16);
        Ok(())
    })?;
    Ok(out)
}

/// The RLE / bit-packing hybrid: exactly `n` values of `width` bits.
fn hybrid(buf: &[u8], width: u32, n: usize, f: &mut dyn FnMut(u64) -> PResult<()>) -> PResult<()> {
    if width > 32 {
        return corrupt("bit width above 32");
    }
    let mut t = Thrift { buf, pos: 0 };
    let mut left = n;
    while left > 0 {
        let h = t.varint()?;
        if h & 1 == 0 {
            let count = usize::try_from(h >> 1).unwrap_or(usize::MAX);
            let bytes = t.take(width.div_ceil(8) as usize)?;
            let mut v = 0u64;
            for (i, b) in bytes.iter().enumerate() {
                v |= u64::from(*b) << (8 * i);
            }
            let count = count.min(left);
            if count == 0 {
                return corrupt("empty RLE run");
            }
            for _ in 0..count {
                f(v)?;
            }
            left -= count;
        } else {
            let groups = usize::try_from(h >> 1).unwrap_or(usize::MAX);
            if groups == 0 {
                return corrupt("empty bit-packed run");
            }
            let nbytes = groups.saturating_mul(width as usize);
            let bytes = t.take(nbytes)?;
            let total = (groups.saturating_mul(8)).min(left);
            let mask = if width == 0 { 0 } else { (1u64 << width) - 1 };
            for i in 0..total {
                let bit = i * width as usize;
                let mut v = 0u64;
                let mut got = 0u32;
                while got < width {
                    let b = bit + got as usize;
                    let byte = bytes[b / 8];
                    let take = (8 - (b % 8) as u32).min(width - got);
                    v |= u64::from((byte >> (b % 8)) & ((1u16 << take) - 1) as u8) << got;
                    got += take;
                }
                f(v & mask)?;
            }
            left -= total;
        }
    }
    Ok(())
}

fn plain(
    ty: Physical,
    buf: &[u8],
    cur: &mut usize,
    n: usize,
    f: &mut dyn FnMut(Value) -> PResult<()>,
) -> PResult<()> {
    let take = |cur: &mut usize, k: usize| -> PResult<&[u8]> {
        let Some(s) = buf.get(*cur..cur.saturating_add(k)) else {
            return corrupt("truncated PLAIN values");
        };
        *cur += k;
        Ok(s)
    };
    if ty == Physical::Boolean {
        let bytes = take(cur, n.div_ceil(8))?;
        for i in 0..n {
            f(Value::Bool(bytes[i / 8] >> (i % 8) & 1 == 1))?;
        }
        return Ok(());
    }
    for _ in 0..n {
        let v = match ty {
            Physical::Int32 => {
                let b = take(cur, 4)?;
                Value::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            }
            Physical::Int64 => {
                let b = take(cur, 8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Int(i64::from_le_bytes(a))
            }
            Physical::Int96 => {
                take(cur, 12)?;
                Value::Other
            }
            Physical::Float => {
                take(cur, 4)?;
                Value::Other
            }
            Physical::Double => {
                take(cur, 8)?;
                Value::Other
            }
            Physical::ByteArray => {
                let b = take(cur, 4)?;
                let k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
                Value::Bytes(take(cur, k)?.to_vec())
            }
            Physical::Fixed(k) => Value::Bytes(take(cur, k)?.to_vec()),
            // Booleans were decoded above, bit-packed.
            Physical::Boolean => Value::Other,
        };
        f(v)?;
    }
    Ok(())
}

/// DELTA_BINARY_PACKED integers.
fn delta_binary(
    buf: &[u8],
    n: usize,
    int32: bool,
    f: &mut dyn FnMut(Value) -> PResult<()>,
) -> PResult<()> {
    let mut t = Thrift { buf, pos: 0 };
    let block = usize::try_from(t.varint()?).unwrap_or(0);
    let minis = usize::try_from(t.varint()?).unwrap_or(0);
    let total = usize::try_from(t.varint()?).unwrap_or(usize::MAX);
    let mut last = t.zigzag()?;
    if block == 0
        || block > 1 << 16
        || minis == 0
        || minis > block
        || block % 128 != 0
        || block % minis != 0
        || (block / minis) % 32 != 0
    {
        return corrupt("invalid DELTA_BINARY_PACKED header");
    }
    if total < n {
        return corrupt("DELTA_BINARY_PACKED holds fewer values than the page");
    }
    let per_mini = block / minis;
    let mut emitted = 0usize;
    if n > 0 {
        f(Value::Int(last))?;
        emitted = 1;
    }
    while emitted < n {
        let min_delta = t.zigzag()?;
        let widths = t.take(minis)?.to_vec();
        for w in widths {
            if emitted >= n {
                break;
            }
            let w = u32::from(w);
            if w > 64 {
                return corrupt("DELTA_BINARY_PACKED width above 64");
            }
            // per_mini <= 2^16 and w <= 64: no overflow.
            let bytes = t.take(per_mini * w as usize / 8)?;
            for i in 0..per_mini {
                if emitted >= n {
                    break;
                }
                let mut v: u64 = 0;
                let bit = i * w as usize;
                for k in 0..w as usize {
                    let b = bit + k;
                    v |= u64::from((bytes[b / 8] >> (b % 8)) & 1) << k;
                }
                last = last.wrapping_add(min_delta).wrapping_add(v as i64);
                if int32 {
                    last = i64::from(last as i32);
                }
                f(Value::Int(last))?;
                emitted += 1;
            }
        }
    }
    Ok(())
}

fn values(
    leaf: &Leaf,
    enc: i64,
    buf: &[u8],
    reps: &[u16],
    defs: &[u16],
    dict: Option<&[Value]>,
    emit: &mut dyn FnMut(u16, u16, Option<Value>) -> PResult<()>,
) -> PResult<()> {
    let present = defs.iter().filter(|&&d| d == leaf.max_def).count();
    let mut vals: Vec<Value> = Vec::with_capacity(present.min(buf.len() + 1));
    match enc {
        0 => {
            let mut cur = 0usize;
            plain(leaf.physical, buf, &mut cur, present, &mut |v| {
                vals.push(v);
                Ok(())
            })?;
        }
        2 | 8 => {
            let Some(dict) = dict else {
                return corrupt("dictionary-encoded page without a dictionary page");
            };
            let Some((&w, rest)) = buf.split_first() else {
                if present == 0 {
                    return emit_all(reps, defs, leaf, Vec::new(), emit);
                }
                return corrupt("truncated dictionary indices");
            };
            hybrid(rest, u32::from(w), present, &mut |i| {
                let Some(v) = dict.get(i as usize) else {
                    return corrupt("dictionary index out of range");
                };
                vals.push(v.clone());
                Ok(())
            })?;
        }
        3 if leaf.physical == Physical::Boolean => {
            let mut cur = 0usize;
            let body = prefixed(buf, &mut cur)?;
            hybrid(body, 1, present, &mut |v| {
                vals.push(Value::Bool(v == 1));
                Ok(())
            })?;
        }
        5 if matches!(leaf.physical, Physical::Int32 | Physical::Int64) => {
            delta_binary(buf, present, leaf.physical == Physical::Int32, &mut |v| {
                vals.push(v);
                Ok(())
            })?;
        }
        e => {
            let name = match e {
                4 => "BIT_PACKED",
                5 => "DELTA_BINARY_PACKED",
                6 => "DELTA_LENGTH_BYTE_ARRAY",
                7 => "DELTA_BYTE_ARRAY",
                9 => "BYTE_STREAM_SPLIT",
                _ => "unknown",
            };
            return unsupported(format!(
                "Parquet encoding {name} ({e}) for column `{}`",
                leaf.path.join(".")
            ));
        }
    }
    if vals.len() != present {
        return corrupt("page holds fewer values than its levels say");
    }
    emit_all(reps, defs, leaf, vals, emit)
}

fn emit_all(
    reps: &[u16],
    defs: &[u16],
    leaf: &Leaf,
    vals: Vec<Value>,
    emit: &mut dyn FnMut(u16, u16, Option<Value>) -> PResult<()>,
) -> PResult<()> {
    let mut it = vals.into_iter();
    for (r, d) in reps.iter().zip(defs) {
        let v = if *d == leaf.max_def { it.next() } else { None };
        emit(*r, *d, v)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_list_and_map_groups() {
        let p = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
        assert!(glob(&["add", "path"], &p("add.path")));
        assert!(!glob(&["add", "path"], &p("add.path.x")));
        assert!(glob(
            &["metaData", "configuration", "**", "key"],
            &p("metaData.configuration.key_value.key")
        ));
        assert!(glob(
            &["protocol", "readerFeatures", "**"],
            &p("protocol.readerFeatures.list.element")
        ));
        assert!(!glob(&["a", "**"], &p("a")));
    }

    #[test]
    fn hybrid_decodes_runs_and_bit_packing() {
        // RLE run: 5 x value 3 (width 2), then one bit-packed group of 8 values 0..7 (width 3).
        let mut buf = vec![5 << 1, 3];
        let mut out = Vec::new();
        hybrid(&buf, 2, 5, &mut |v| {
            out.push(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, vec![3; 5]);
        buf = vec![(1 << 1) | 1];
        // 0..7 packed LSB-first in 3 bits each = 24 bits.
        let mut bits: u32 = 0;
        for i in 0..8u32 {
            bits |= i << (3 * i);
        }
        buf.extend_from_slice(&bits.to_le_bytes()[..3]);
        out.clear();
        hybrid(&buf, 3, 8, &mut |v| {
            out.push(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, (0..8).collect::<Vec<u64>>());
        assert!(hybrid(&buf[..2], 3, 8, &mut |_| Ok(())).is_err());
    }

    #[test]
    fn delta_binary_packed_decodes_and_refuses_forged_headers() {
        let mut out = Vec::new();
        let buf = [0x80, 0x01, 0x04, 0x03, 0x0a, 0x02, 1, 0, 0, 0, 2, 0, 0, 0];
        delta_binary(&buf, 3, false, &mut |v| {
            out.push(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(out, vec![Value::Int(5), Value::Int(6), Value::Int(8)]);
        // A block of 2^62 values (the multiplication that used to overflow).
        let forged = [
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x04, 0x03, 0x0a,
        ];
        assert!(delta_binary(&forged, 3, false, &mut |_| Ok(())).is_err());
        // Zero miniblocks, a block not a multiple of 128, truncation.
        for bad in [
            &[0x80, 0x01, 0x00, 0x03, 0x0a][..],
            &[0x40, 0x04, 0x03, 0x0a],
            &buf[..8],
        ] {
            assert!(delta_binary(bad, 3, false, &mut |_| Ok(())).is_err());
        }
        // INT32 columns wrap to 32 bits.
        let mut out = Vec::new();
        let wrap = [
            0x80, 0x01, 0x04, 0x02, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0x02, 0, 0, 0, 0,
        ];
        delta_binary(&wrap, 2, true, &mut |v| {
            out.push(v);
            Ok(())
        })
        .unwrap();
        assert_eq!(
            out,
            vec![
                Value::Int(i64::from(i32::MAX)),
                Value::Int(i64::from(i32::MIN))
            ]
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(ParquetFile::open(b"PAR1").is_err());
        assert!(ParquetFile::open(b"PAR1xxxxxxxxPAR1").is_err());
        let mut f = b"PAR1".to_vec();
        f.extend_from_slice(&[0x15, 0x02, 0x00]);
        f.extend_from_slice(&100u32.to_le_bytes());
        f.extend_from_slice(b"PAR1");
        assert!(matches!(
            ParquetFile::open(&f),
            Err(ParquetError::Corrupt(_))
        ));
    }
}
