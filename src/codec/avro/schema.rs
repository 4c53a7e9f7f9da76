//! The writer schema found in a container's header, parsed into an
//! arena of nodes (named types defined once, referenced by index), with
//! the exact encoded size of every node that has one.

use std::collections::HashMap;

use super::{corrupt, AResult, AvroError, MAX_DEPTH};

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
    /// (So such a value is read at any depth, where [`super::skip`] refuses other
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
    pub(super) fn exact_size(&self, node: usize) -> Option<usize> {
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
