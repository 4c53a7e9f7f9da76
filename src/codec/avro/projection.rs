//! Projections: the few field paths a reader wants, compiled against a
//! writer schema into flat steps that decode those fields and skip
//! everything else without materialising it.

use super::cursor::Cursor;
use super::schema::{Node, Schema};
use super::{corrupt, AResult, MAX_DEPTH};

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
pub(super) fn union_branch(branches: &[usize], cur: &mut Cursor<'_>) -> AResult<usize> {
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
pub(super) fn min_bytes(schema: &Schema, node: usize) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::avro::tests::*;
    use crate::codec::avro::Container;

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
}
