//! Many tables in one run: every Iceberg table of a catalog namespace
//! (`plan --catalog C --namespace NS`) or every table a list names
//! (`plan --tables FILE`). Each table is its own planner session with its
//! own pointer and its own sealed plan. Which tables may be planned, and
//! which prefixes of each belong to another table, is the planner's
//! ownership map: it is made from every entry of the namespace, of any
//! type (a Hive or Delta table in Glue owns its location too), and each
//! Iceberg table's current metadata (its `location` and write roots), as
//! this module reads them. Tables are planned a few at a time; the run
//! reports them together and fails if any table was refused.

use crate::error::HostError;
use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::catalogs::pointer::Pointer;
use crate::catalogs::Catalog;
use crate::component::{wt, Planner};

/// One table of the run.
#[derive(Debug, Clone)]
pub struct Member {
    /// How the run names it: `NS.NAME`, or its location.
    pub label: String,
    /// Its location as a list names it, if it does.
    pub table: Option<String>,
    /// Its pointer.
    pub pointer: Pointer,
    /// Prefixes other tables own inside it (the ownership map's).
    pub foreign_roots: Vec<wt::ForeignRoot>,
}

/// The Iceberg tables a run covers, in order, and the entries the
/// ownership map is made from (one per member, then the namespace's
/// entries of other types).
async fn members_and_entries(
    catalog: Option<&Catalog>,
    namespace: Option<&str>,
    list: Option<&str>,
) -> Result<(Vec<Member>, Vec<wt::CatalogEntry>), HostError> {
    let member = |ns: &str, name: &str, catalog: &Catalog| Member {
        label: format!("{ns}.{name}"),
        table: None,
        pointer: Pointer::Catalog {
            catalog: catalog.clone(),
            namespace: ns.to_owned(),
            name: name.to_owned(),
        },
        foreign_roots: Vec::new(),
    };
    let levels = |ns: &str| ns.split('.').map(str::to_owned).collect::<Vec<_>>();
    if let Some(ns) = namespace {
        let catalog = catalog.ok_or("--namespace needs --catalog")?;
        let records = catalog.entries(ns).await?;
        let mut members = Vec::new();
        let mut entries = Vec::new();
        let mut others = Vec::new();
        for r in records {
            let entry = wt::CatalogEntry {
                namespace: levels(ns),
                name: r.name.clone(),
                kind: r.kind.clone(),
                location: r.location,
                other_locations: r.other_locations,
                metadata_location: r.metadata,
                metadata: None,
            };
            if r.kind == "iceberg" {
                members.push(member(ns, &r.name, catalog));
                entries.push(entry);
            } else {
                others.push(entry);
            }
        }
        if members.is_empty() {
            return Err(refused!(
                "{} has no Iceberg table in namespace {ns}",
                catalog.describe()
            ));
        }
        entries.extend(others);
        return Ok((members, entries));
    }
    let path = list.ok_or("give --namespace or --tables")?;
    let text = std::fs::read_to_string(path).map_err(|e| refused!("read {path}: {e}"))?;
    let mut out: Vec<Member> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let entry = line.split('#').next().unwrap_or("").trim();
        if entry.is_empty() {
            continue;
        }
        let at = || format!("{path} line {}", n + 1);
        let m = if entry.contains("://") || entry.starts_with('/') || entry.starts_with('.') {
            Member {
                label: entry.to_owned(),
                table: Some(
                    crate::stores::table_uri(entry).map_err(|e| refused!("{}: {e}", at()))?,
                ),
                pointer: Pointer::VersionHint,
                foreign_roots: Vec::new(),
            }
        } else {
            let catalog = catalog.ok_or_else(|| {
                format!(
                    "{}: `{entry}` is a catalog name (NS.NAME): give --catalog",
                    at()
                )
            })?;
            let (ns, name) = entry
                .rsplit_once('.')
                .filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
                .ok_or_else(|| refused!("{}: `{entry}` is neither NS.NAME nor a location", at()))?;
            member(ns, name, catalog)
        };
        if out.iter().any(|o| o.label == m.label) {
            return Err(refused!("{}: `{entry}` is listed twice", at()));
        }
        out.push(m);
    }
    if out.is_empty() {
        return Err(refused!("{path} lists no table"));
    }
    let entries = out
        .iter()
        .map(|m| {
            let (namespace, name) = match &m.pointer {
                Pointer::Catalog {
                    namespace, name, ..
                } => (levels(namespace), name.clone()),
                _ => (Vec::new(), m.label.clone()),
            };
            wt::CatalogEntry {
                namespace,
                name,
                kind: "iceberg".into(),
                location: m.table.clone(),
                other_locations: Vec::new(),
                metadata_location: None,
                metadata: None,
            }
        })
        .collect();
    Ok((out, entries))
}

/// Reads a member's pointer and its current metadata document: the
/// catalog entry's metadata location and bytes, and the location the
/// catalog records. An error says why it could not be read.
async fn read_member(
    m: &Member,
    entry: &mut wt::CatalogEntry,
    location_map: &[(String, String)],
    wasm: Option<&str>,
) -> Result<(), HostError> {
    let mut planner = Planner::load(&crate::component::wasm_path(wasm))?;
    let raw = match (&m.pointer, &m.table, &entry.metadata_location) {
        (Pointer::Catalog { .. }, _, Some(md)) => md.clone(),
        (
            Pointer::Catalog {
                catalog,
                namespace,
                name,
            },
            _,
            None,
        ) => {
            let e = catalog.load(namespace, name).await?;
            if entry.location.is_none() {
                entry.location = e.location;
            }
            e.metadata
        }
        (p, Some(t), _) => {
            p.resolve(&mut planner, &crate::stores::Store::for_uri(t)?, t)
                .await?
        }
        (_, None, _) => return Err(refused!("{}: no table location", m.label)),
    };
    entry.metadata_location = Some(raw.clone());
    // Read where the planner would: the pointer mapped as it maps it.
    let uri = planner.canonical_pointer(&raw, location_map)?;
    let bytes = crate::stores::Store::for_uri(&uri)?
        .read(&uri)
        .await?
        .ok_or_else(|| refused!("{}: its metadata {uri} does not exist", m.label))?;
    entry.metadata = Some(bytes);
    Ok(())
}

/// Every member of the run with its location as the planner's ownership
/// map decides it (or why it is not planned), the prefixes others own
/// inside it, in member order. Members are read `jobs` at a time.
pub async fn survey(
    catalog: Option<&Catalog>,
    namespace: Option<&str>,
    list: Option<&str>,
    location_map: &[(String, String)],
    wasm: Option<&str>,
    jobs: usize,
) -> Result<Vec<Located>, HostError> {
    let (members, mut entries) = members_and_entries(catalog, namespace, list).await?;
    let others = entries.split_off(members.len());
    // Each member's metadata, read `jobs` at a time; one that cannot be
    // read still owns what the catalog records of it.
    let mut read: Vec<(usize, wt::CatalogEntry, Option<HostError>)> =
        futures::stream::iter(members.iter().zip(entries).enumerate())
            .map(|(i, (m, mut e))| async move {
                let unread = read_member(m, &mut e, location_map, wasm).await.err();
                (i, e, unread)
            })
            .buffer_unordered(jobs.max(1))
            .collect()
            .await;
    read.sort_by_key(|(i, _, _)| *i);
    let (mut mine, unread): (Vec<wt::CatalogEntry>, Vec<Option<HostError>>) =
        read.into_iter().map(|(_, e, u)| (e, u)).unzip();
    mine.extend(others);
    let mut planner = Planner::load(&crate::component::wasm_path(wasm))?;
    let map = planner.ownership_map(&mine, location_map)?;
    Ok(members
        .into_iter()
        .zip(map)
        .zip(unread)
        .map(|((mut m, e), unread)| {
            m.foreign_roots = e.foreign_roots;
            let located = match (unread, e.refusal, e.location) {
                (Some(err), _, _) => Err(err),
                (None, Some(r), _) => Err(HostError::Planner(r)),
                (None, None, Some(l)) if e.planned => Ok(l),
                (None, None, _) => Err(refused!("{}: not a table lakesweep plans", m.label)),
            };
            (m, located)
        })
        .collect())
}

/// What one table's plan came to.
pub struct Planned {
    /// The member's label.
    pub label: String,
    /// Its location, once known.
    pub table: Option<String>,
    /// The plan file written, if any.
    pub file: Option<String>,
    /// The sealed plan, or why there is none.
    pub outcome: Result<crate::component::wt::SealedPlan, HostError>,
}

/// The refusal's kind: the planner's own name for it (an unsafe reason
/// such as `location-mismatch`, or `malformed`, `unsupported`,
/// `invalid-option`, `protocol`), else `unreadable` (a store, catalog or
/// file the host could not read).
pub fn refusal_kind(e: &HostError) -> String {
    use crate::wit::wt::Error;
    match e.planner() {
        Some(Error::Unsafe(u)) => crate::names::unsafe_name(u.reason).to_owned(),
        Some(Error::Malformed(_)) => "malformed".into(),
        Some(Error::Unsupported(_)) => "unsupported".into(),
        Some(Error::InvalidOptions(_)) => "invalid-option".into(),
        Some(Error::Protocol(_)) => "protocol".into(),
        None => "unreadable".into(),
    }
}

/// A file name for a member's plan: its label with anything but letters,
/// digits, `.`, `-` and `_` replaced, then `.plan.json`.
pub fn file_name(label: &str) -> String {
    let base: String = label
        .trim_start_matches("file://")
        .trim_matches('/')
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{base}.plan.json")
}

/// The prefixes other tables of its namespace own inside the catalog
/// table `namespace.name`, from the ownership map of that namespace; an
/// error when the map refuses the table (its location or a write root is
/// shared with, or lies inside, another table's).
pub async fn foreign_roots_of(
    catalog: &Catalog,
    namespace: &str,
    name: &str,
    location_map: &[(String, String)],
    wasm: Option<&str>,
) -> Result<Vec<wt::ForeignRoot>, HostError> {
    let located = survey(Some(catalog), Some(namespace), None, location_map, wasm, 16)
        .await
        .map_err(|e| {
            format!("the other tables of namespace {namespace} could not be read ({e}): a table of a catalog is planned knowing which prefixes its neighbours own")
        })?;
    let me = located
        .into_iter()
        .find(|(m, _)| matches!(&m.pointer, Pointer::Catalog { name: n, .. } if n == name));
    match me {
        Some((m, Ok(_))) => Ok(m.foreign_roots),
        Some((_, Err(why))) => Err(why),
        // The catalog's own words for a table it does not have.
        None => Err(match catalog.load(namespace, name).await {
            Err(e) => e,
            Ok(_) => catalog_err!(
                "{} lists no Iceberg table {name} in namespace {namespace}, yet loads it",
                catalog.describe()
            ),
        }),
    }
}

/// A member and its table location, or why it is not planned.
pub type Located = (Member, Result<String, HostError>);

/// Why a located member may not be planned in this run besides the
/// ownership map's refusals: its plan file would be another member's.
pub fn blocked(located: &[Located]) -> Vec<Option<String>> {
    let mut why: Vec<Option<String>> = vec![None; located.len()];
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for (i, (m, _)) in located.iter().enumerate() {
        if let Some(&j) = names.get(&file_name(&m.label)) {
            for (me, other) in [(i, j), (j, i)] {
                why[me].get_or_insert_with(|| {
                    format!(
                        "its plan file {} would be {}'s too: list the table once, spelled one way",
                        file_name(&m.label),
                        located[other].0.label
                    )
                });
            }
        } else {
            names.insert(file_name(&m.label), i);
        }
    }
    why
}

/// Plans every located member not `blocked`, `jobs` at a time; `plan_one`
/// makes one table's plan from its member and location. Results in member
/// order.
pub async fn plan_all<F, Fut>(
    located: Vec<Located>,
    blocked: Vec<Option<String>>,
    jobs: usize,
    plan_one: F,
) -> Vec<Planned>
where
    F: Fn(Member, String) -> Fut,
    Fut: std::future::Future<
        Output = (
            Option<String>,
            Result<crate::component::wt::SealedPlan, HostError>,
        ),
    >,
{
    let plan_one = &plan_one;
    let mut done: Vec<(usize, Planned)> =
        futures::stream::iter(located.into_iter().zip(blocked).enumerate())
            .map(|(i, ((m, table), why))| async move {
                let label = m.label.clone();
                let planned = match (table, why) {
                    (Err(e), _) => Planned {
                        label,
                        table: None,
                        file: None,
                        outcome: Err(e),
                    },
                    (Ok(t), Some(why)) => Planned {
                        label,
                        table: Some(t),
                        file: None,
                        outcome: Err(HostError::Refused(why)),
                    },
                    (Ok(table), None) => {
                        let (file, outcome) = plan_one(m, table.clone()).await;
                        Planned {
                            label,
                            table: Some(table),
                            file,
                            outcome,
                        }
                    }
                };
                (i, planned)
            })
            .buffer_unordered(jobs.max(1))
            .collect()
            .await;
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, p)| p).collect()
}

/// Reclaimable bytes of one plan, by object kind.
fn reclaimable(p: &crate::component::wt::SealedPlan) -> BTreeMap<String, (u64, u64)> {
    p.summary
        .reclaimable
        .iter()
        .map(|t| (t.name.clone(), (t.tally.count, t.tally.bytes)))
        .collect()
}

/// The run as one JSON object.
pub fn to_json(run: &[Planned]) -> Value {
    let mut refusals: BTreeMap<String, u64> = BTreeMap::new();
    let mut kinds: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let tables: Vec<Value> = run
        .iter()
        .map(|p| match &p.outcome {
            Ok(plan) => {
                let r = reclaimable(plan);
                for (k, (c, b)) in &r {
                    let e = kinds.entry(k.clone()).or_default();
                    e.0 += c;
                    e.1 += b;
                }
                json!({
                    "table": p.label, "location": p.table, "plan": p.file, "refused": null,
                    "delete": plan.delete.len(),
                    "bytes": r.values().map(|(_, b)| b).sum::<u64>(),
                    "reclaimable": r.iter().map(|(k, (c, b))| (k.clone(), json!({"count": c, "bytes": b}))).collect::<serde_json::Map<_, _>>(),
                    "warnings": plan.warnings,
                })
            }
            Err(e) => {
                let kind = refusal_kind(e);
                *refusals.entry(kind.clone()).or_default() += 1;
                json!({"table": p.label, "location": p.table, "plan": null,
                       "refused": {"kind": kind, "why": e.to_string()}})
            }
        })
        .collect();
    json!({
        "tables": tables,
        "planned": run.iter().filter(|p| p.outcome.is_ok()).count(),
        "refused": run.iter().filter(|p| p.outcome.is_err()).count(),
        "refusals": refusals,
        "reclaimable": kinds.iter().map(|(k, (c, b))| (k.clone(), json!({"count": c, "bytes": b}))).collect::<serde_json::Map<_, _>>(),
        "bytes": kinds.values().map(|(_, b)| b).sum::<u64>(),
    })
}

/// The run for people: one line per table, then the totals.
pub fn human(run: &[Planned]) -> String {
    use crate::commands::report::{bytes, esc};
    let v = to_json(run);
    let mut out = format!("lakesweep plan: {} tables\n", run.len());
    for p in run {
        match &p.outcome {
            Ok(plan) => {
                let r = reclaimable(plan);
                let kinds: Vec<String> = r
                    .iter()
                    .map(|(k, (c, b))| format!("{k} {c} ({})", bytes(*b)))
                    .collect();
                out.push_str(&format!(
                    "  {:<32} would delete {} ({}){}{}\n",
                    esc(&p.label),
                    plan.delete.len(),
                    bytes(r.values().map(|(_, b)| b).sum()),
                    if kinds.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", kinds.join(", "))
                    },
                    p.file
                        .as_deref()
                        .map(|f| format!("  -> {}", esc(f)))
                        .unwrap_or_default()
                ));
            }
            Err(e) => out.push_str(&format!(
                "  {:<32} REFUSED ({}): {}\n",
                esc(&p.label),
                refusal_kind(e),
                esc(&e.to_string())
            )),
        }
    }
    out.push_str(&format!(
        "planned {}, refused {}; reclaimable {}",
        v["planned"],
        v["refused"],
        bytes(v["bytes"].as_u64().unwrap_or(0))
    ));
    if let Some(r) = v["refusals"].as_object().filter(|r| !r.is_empty()) {
        let by: Vec<String> = r.iter().map(|(k, n)| format!("{k} {n}")).collect();
        out.push_str(&format!("; refusals by kind: {}", by.join(", ")));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_grouped_by_the_planners_names() {
        use crate::wit::wt;
        let unsafe_ = HostError::Planner(wt::Error::Unsafe(wt::UnsafeError {
            reason: wt::UnsafeReason::LocationMismatch,
            detail: "x (y)".into(),
        }));
        assert_eq!(refusal_kind(&unsafe_), "location-mismatch");
        let malformed = HostError::Planner(wt::Error::Malformed(wt::MalformedError {
            reason: wt::MalformedReason::Encoding,
            uri: "s3://x".into(),
            detail: "y".into(),
        }));
        assert_eq!(refusal_kind(&malformed), "malformed");
        let glue = HostError::Catalog("glue GetTable a.b: EntityNotFound".into());
        assert_eq!(refusal_kind(&glue), "unreadable");
    }

    #[test]
    fn plan_file_names_are_plain() {
        assert_eq!(file_name("db.events"), "db.events.plan.json");
        assert_eq!(file_name("file:///w/db/t 1"), "w_db_t_1.plan.json");
        assert_eq!(file_name("s3://b/w/t"), "s3___b_w_t.plan.json");
    }

    #[tokio::test]
    async fn a_table_list_names_locations_and_catalog_tables() {
        let dir = std::env::temp_dir().join(format!("lakesweep-estate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let list = dir.join("tables.txt");
        std::fs::write(&list, "# estate\ndb.a\n\ns3://b/w/t  # by location\n").unwrap();
        let catalog = Catalog::parse("sqlite:/c.db").unwrap();
        let m = members_and_entries(Some(&catalog), None, list.to_str())
            .await
            .unwrap()
            .0;
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].label, "db.a");
        assert_eq!(m[1].table.as_deref(), Some("s3://b/w/t"));
        assert_eq!(m[1].pointer, Pointer::VersionHint);
        // A catalog name without a catalog, a duplicate, an empty list: refused.
        assert!(members_and_entries(None, None, list.to_str())
            .await
            .is_err());
        std::fs::write(&list, "db.a\ndb.a\n").unwrap();
        assert!(members_and_entries(Some(&catalog), None, list.to_str())
            .await
            .is_err());
        std::fs::write(&list, "# nothing\n").unwrap();
        assert!(members_and_entries(Some(&catalog), None, list.to_str())
            .await
            .is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
