//! The ownership map of a many-table run: every prefix the tables of a
//! catalog own (each table's location and write roots, whatever its type:
//! Iceberg, Delta, Hive, ...), and for each table the prefixes other tables
//! own inside its own.
//!
//! A prefix belongs to exactly one table. The map is made from the
//! catalog's records as the host read them (and, for an Iceberg table, its
//! current metadata document, whose `location` and `write.*.path`
//! properties are the table's roots), and decides, for every table:
//! - two tables with one and the same root: neither is planned
//!   (`shared-location`);
//! - a table with a root inside another table's root: not planned (the
//!   outer table's files may lie under it; `nested-table`), and the outer
//!   table's plan keeps that prefix whole (verdict `foreign`);
//! - a catalog entry that is not an Iceberg table, or one whose metadata
//!   is unreadable, is never planned, but its roots are owned all the same.
//!
//! Roots are compared canonically (`s3a://` = `s3://`) and, to fail
//! closed, also up to case, percent-encoding and doubled slashes.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, UnsafeReason};
use crate::path::{apply_mappings, PathMapping, TableLocation};
use crate::spec::iceberg::{TableMetadata, WRITE_ROOT_PROPERTIES};

/// One entry of a catalog, as the catalog records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    /// Its namespace, level by level (never joined: a name may hold dots).
    pub namespace: Vec<String>,
    /// Its name.
    pub name: String,
    /// Its type as the catalog says it, lower case: `iceberg`, `delta`,
    /// `hive`, `view`, ... Only `iceberg` entries with a metadata document
    /// are planned.
    pub kind: String,
    /// The location the catalog records, if any.
    pub location: Option<String>,
    /// Further locations the catalog records for it (a Hive table's
    /// partitions, ...): owned like its location.
    #[serde(default)]
    pub other_locations: Vec<String>,
    /// Iceberg: the URI of the current metadata document.
    #[serde(default)]
    pub metadata_location: Option<String>,
    /// Iceberg: that document's bytes (its `location` and write roots are
    /// read from it); `None` when it could not be read.
    #[serde(default)]
    pub metadata: Option<Vec<u8>>,
}

/// A prefix a table owns, and what it is to the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnedRoot {
    /// Canonical URI of the prefix (no trailing slash).
    pub root: String,
    /// `location`, a write property's name, or `partition location`.
    pub role: String,
}

/// A prefix another table owns inside the table being planned: every key
/// under it is kept (verdict `foreign`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForeignRoot {
    /// Canonical URI of the prefix (no trailing slash).
    pub root: String,
    /// Whose it is and what it is to them, in words (`table db.b (its
    /// write.data.path)`).
    pub owner: String,
}

/// One table of the map, with what the map decided for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EstateMember {
    /// The entry's namespace, level by level.
    pub namespace: Vec<String>,
    /// The entry's name.
    pub name: String,
    /// The entry's type, as given.
    pub kind: String,
    /// The table's location, canonical: from its metadata for Iceberg,
    /// else the catalog's record. `None`: the entry records none.
    pub location: Option<String>,
    /// Every prefix it owns.
    pub roots: Vec<OwnedRoot>,
    /// Whether it is a table lakesweep plans in this run (an Iceberg table
    /// whose metadata was read and that no other table's root overlaps).
    pub planned: bool,
    /// Why it is not planned, when it is a table lakesweep could plan.
    pub refusal: Option<Error>,
    /// Prefixes other tables own inside its roots: its plan keeps them.
    pub foreign_roots: Vec<ForeignRoot>,
}

impl EstateMember {
    /// `namespace.name` for people (the parts are kept apart elsewhere).
    pub fn label(&self) -> String {
        let mut parts = self.namespace.clone();
        parts.push(self.name.clone());
        parts.join(".")
    }
}

/// A root and its table, during the comparison.
struct Claim {
    member: usize,
    role: String,
    root: TableLocation,
}

/// Builds the ownership map of `entries` (the whole catalog namespace the
/// run covers, every type), with `location_map` applied to every root as
/// a plan applies it. Fails only for an entry that names no table (an
/// empty name).
pub fn ownership_map(
    entries: Vec<CatalogEntry>,
    location_map: &[PathMapping],
) -> Result<Vec<EstateMember>> {
    let mut members = Vec::with_capacity(entries.len());
    let mut claims: Vec<Claim> = Vec::new();
    for (i, e) in entries.into_iter().enumerate() {
        if e.name.is_empty() {
            return Err(Error::invalid("catalog-entry", "an entry without a name"));
        }
        let kind = e.kind.to_ascii_lowercase();
        let iceberg = kind == "iceberg";
        let mut refusal = None;
        let mut roots: Vec<(String, String)> = Vec::new();
        let mut location = None;
        let mut read = false;
        if iceberg {
            match (&e.metadata, &e.metadata_location) {
                (Some(bytes), Some(uri)) => match TableMetadata::parse(uri, bytes) {
                    Ok(md) => {
                        read = true;
                        roots.push((md.location.clone(), "location".into()));
                        for p in WRITE_ROOT_PROPERTIES {
                            if let Some(v) = md.properties.get(p) {
                                roots.push((v.clone(), p.to_owned()));
                            }
                        }
                    }
                    Err(err) => refusal = Some(err),
                },
                (_, Some(uri)) => {
                    refusal = Some(Error::unsafe_(
                        UnsafeReason::MissingMetadata,
                        format!("its metadata `{uri}` could not be read"),
                    ))
                }
                (_, None) => {
                    refusal = Some(Error::invalid(
                        "catalog-entry",
                        "an Iceberg entry without a metadata location",
                    ))
                }
            }
        }
        if let Some(l) = &e.location {
            if !l.is_empty() {
                roots.push((l.clone(), "location".into()));
            }
        }
        for l in &e.other_locations {
            roots.push((l.clone(), "partition location".into()));
        }
        let mut owned: Vec<OwnedRoot> = Vec::new();
        for (raw, role) in roots {
            let mapped = apply_mappings(&raw, location_map);
            let root = match TableLocation::parse(&mapped) {
                Ok(r) => r,
                Err(why) => {
                    // A bucket root or an unparsable location owns
                    // everything it could mean: nothing there is plannable.
                    if read || !iceberg {
                        refusal.get_or_insert_with(|| {
                            Error::invalid("location", format!("{role} `{raw}`: {why}"))
                        });
                    }
                    continue;
                }
            };
            let uri = root.as_uri();
            if location.is_none() && role == "location" {
                location = Some(uri.clone());
            }
            if owned.iter().any(|o| o.root == uri) {
                if role == "location" {
                    // The catalog's record of the same location.
                    continue;
                }
            } else {
                owned.push(OwnedRoot {
                    root: uri.clone(),
                    role: role.clone(),
                });
            }
            claims.push(Claim {
                member: i,
                role,
                root,
            });
        }
        // The catalog and the metadata disagree on the location: both are
        // owned, and the table is not planned (which one holds its files?).
        let locations: Vec<&OwnedRoot> = owned.iter().filter(|o| o.role == "location").collect();
        if locations.len() > 1 && refusal.is_none() {
            refusal = Some(Error::unsafe_(
                UnsafeReason::LocationMismatch,
                format!(
                    "its metadata says it lives at `{}`, the catalog records `{}`",
                    locations[0].root, locations[1].root
                ),
            ));
        }
        members.push(EstateMember {
            namespace: e.namespace,
            name: e.name,
            kind,
            location,
            roots: owned,
            planned: iceberg && read,
            refusal,
            foreign_roots: Vec::new(),
        });
    }
    for (a, ca) in claims.iter().enumerate() {
        for cb in claims.iter().skip(a + 1) {
            if ca.member == cb.member {
                continue;
            }
            match overlap(&ca.root, &cb.root) {
                Overlap::None => {}
                Overlap::Same => {
                    for (me, mine, other) in [(ca.member, ca, cb), (cb.member, cb, ca)] {
                        let why = format!(
                            "its {} `{}` is also {}",
                            mine.role,
                            mine.root.as_uri(),
                            describe(&members[other.member], &other.role)
                        );
                        refuse(&mut members[me], UnsafeReason::SharedLocation, why);
                    }
                }
                Overlap::Inside { first_inner } => {
                    let (ci, co) = if first_inner { (ca, cb) } else { (cb, ca) };
                    let why = format!(
                        "its {} `{}` lies inside {} `{}`: that table's files may lie under it",
                        ci.role,
                        ci.root.as_uri(),
                        describe(&members[co.member], &co.role),
                        co.root.as_uri()
                    );
                    refuse(&mut members[ci.member], UnsafeReason::NestedTable, why);
                    let owner = describe(&members[ci.member], &ci.role);
                    let root = ci.root.as_uri();
                    let m = &mut members[co.member];
                    if !m.foreign_roots.iter().any(|f| f.root == root) {
                        m.foreign_roots.push(ForeignRoot { root, owner });
                    }
                }
            }
        }
    }
    for m in &mut members {
        m.foreign_roots.sort_by(|x, y| x.root.cmp(&y.root));
        if m.refusal.is_some() {
            m.planned = false;
        }
    }
    Ok(members)
}

/// `table db.b (its write.data.path)`.
fn describe(m: &EstateMember, role: &str) -> String {
    let kind = if m.kind == "iceberg" {
        String::new()
    } else {
        format!("{} ", m.kind)
    };
    format!("{kind}table {}'s {role}", m.label())
}

/// Marks `m` refused with `reason`, unless it is refused already.
fn refuse(m: &mut EstateMember, reason: UnsafeReason, why: String) {
    if m.refusal.is_none() {
        m.refusal = Some(Error::unsafe_(
            reason,
            format!("{why}; a prefix belongs to one table, nothing of it is planned"),
        ));
    }
}

/// How two roots lie: apart, one and the same, or one inside the other.
enum Overlap {
    None,
    Same,
    Inside {
        /// The first root lies inside the second (else the other way).
        first_inner: bool,
    },
}

fn overlap(a: &TableLocation, b: &TableLocation) -> Overlap {
    let pair = [a.as_uri(), b.as_uri()];
    match crate::path::overlapping_locations(&pair).first() {
        None => Overlap::None,
        Some(_) => {
            let (ua, ub) = (a.canonical(), b.canonical());
            let la = crate::path::loose(&ua.path);
            let lb = crate::path::loose(&ub.path);
            if la == lb {
                Overlap::Same
            } else if la.len() > lb.len() {
                Overlap::Inside { first_inner: true }
            } else {
                Overlap::Inside { first_inner: false }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata(location: &str, props: &[(&str, &str)]) -> Vec<u8> {
        let props: serde_json::Map<String, serde_json::Value> = props
            .iter()
            .map(|(k, v)| ((*k).to_owned(), serde_json::Value::String((*v).to_owned())))
            .collect();
        serde_json::json!({
            "format-version": 2, "table-uuid": "u", "location": location,
            "last-sequence-number": 0, "last-updated-ms": 1, "last-column-id": 1,
            "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
            "current-schema-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
            "default-spec-id": 0, "last-partition-id": 999, "sort-orders": [{"order-id": 0, "fields": []}],
            "default-sort-order-id": 0, "properties": props, "current-snapshot-id": -1,
            "snapshots": [], "snapshot-log": [], "metadata-log": []
        })
        .to_string()
        .into_bytes()
    }

    fn iceberg(name: &str, location: &str, props: &[(&str, &str)]) -> CatalogEntry {
        CatalogEntry {
            namespace: vec!["db".into()],
            name: name.into(),
            kind: "ICEBERG".into(),
            location: None,
            other_locations: vec![],
            metadata_location: Some(format!("{location}/metadata/v1.metadata.json")),
            metadata: Some(metadata(location, props)),
        }
    }

    fn other(kind: &str, name: &str, location: &str) -> CatalogEntry {
        CatalogEntry {
            namespace: vec!["db".into()],
            name: name.into(),
            kind: kind.into(),
            location: Some(location.into()),
            other_locations: vec![],
            metadata_location: None,
            metadata: None,
        }
    }

    fn refusal(m: &EstateMember) -> String {
        m.refusal
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    #[test]
    fn apart_tables_are_planned_with_nothing_foreign() {
        let map = ownership_map(
            vec![
                iceberg("a", "s3://b/w/a", &[]),
                iceberg("b", "s3://b/w/ab", &[]),
                other("view", "v", ""),
            ],
            &[],
        )
        .unwrap();
        assert!(map[0].planned && map[1].planned, "{map:?}");
        assert!(map[0].foreign_roots.is_empty() && map[1].foreign_roots.is_empty());
        assert!(!map[2].planned && map[2].refusal.is_none() && map[2].roots.is_empty());
        assert_eq!(map[0].location.as_deref(), Some("s3://b/w/a"));
    }

    #[test]
    fn a_write_root_inside_another_table_is_foreign_there_and_refused_here() {
        let map = ownership_map(
            vec![
                iceberg("a", "s3a://b/w/a", &[]),
                iceberg(
                    "b",
                    "s3://b/w/b",
                    &[("write.data.path", "s3://b/w/a/b-data")],
                ),
            ],
            &[],
        )
        .unwrap();
        assert!(map[0].planned, "{}", refusal(&map[0]));
        assert_eq!(
            map[0].foreign_roots,
            vec![ForeignRoot {
                root: "s3://b/w/a/b-data".into(),
                owner: "table db.b's write.data.path".into()
            }]
        );
        assert!(!map[1].planned);
        assert!(
            refusal(&map[1]).contains("nested-table"),
            "{}",
            refusal(&map[1])
        );
        assert_eq!(map[1].roots.len(), 2);
    }

    #[test]
    fn any_catalog_type_owns_its_location_and_is_never_planned() {
        let map = ownership_map(
            vec![
                iceberg("a", "s3://b/w/a", &[]),
                other("HIVE", "h", "s3://b/w/a/hive_part"),
                other("delta", "d", "s3://b/w/A"),
            ],
            &[],
        )
        .unwrap();
        assert!(
            !map[0].planned,
            "shares its location with the Delta table (up to case)"
        );
        assert!(
            refusal(&map[0]).contains("shared-location"),
            "{}",
            refusal(&map[0])
        );
        assert!(
            refusal(&map[0]).contains("delta table db.d's location"),
            "{}",
            refusal(&map[0])
        );
        assert_eq!(map[0].foreign_roots[0].root, "s3://b/w/a/hive_part");
        assert!(!map[1].planned && !map[2].planned);
    }

    #[test]
    fn unreadable_metadata_refuses_the_table_and_its_catalog_location_is_owned() {
        let mut broken = iceberg("a", "s3://b/w/a", &[]);
        broken.metadata = Some(b"{".to_vec());
        broken.location = Some("s3://b/w/a".into());
        let mut unread = iceberg("c", "s3://b/w/c", &[]);
        unread.metadata = None;
        let map =
            ownership_map(vec![broken, iceberg("n", "s3://b/w/a/n", &[]), unread], &[]).unwrap();
        assert!(!map[0].planned && refusal(&map[0]).contains("malformed"));
        assert!(
            refusal(&map[1]).contains("nested-table"),
            "{}",
            refusal(&map[1])
        );
        assert!(refusal(&map[2]).contains("could not be read"));
    }

    #[test]
    fn a_catalog_location_other_than_the_metadatas_refuses_and_both_are_owned() {
        let mut e = iceberg("a", "s3://b/w/a", &[]);
        e.location = Some("s3://b/w/a-moved".into());
        let map = ownership_map(vec![e, iceberg("x", "s3://b/w/a-moved/x", &[])], &[]).unwrap();
        assert!(
            refusal(&map[0]).contains("location-mismatch"),
            "{}",
            refusal(&map[0])
        );
        assert_eq!(map[0].roots.len(), 2);
        assert_eq!(map[0].foreign_roots[0].root, "s3://b/w/a-moved/x");
    }
}
