//! Many tables in one run: every Iceberg table of a catalog namespace
//! (`plan --catalog C --namespace NS`) or every table a list names
//! (`plan --tables FILE`). Each table is its own planner session with its
//! own pointer and its own sealed plan, so one table's plan can only ever
//! name keys under that table's location (the planner refuses a listing
//! outside it, and a table nested inside another is judged by the
//! planner as foreign metadata under the outer table). Tables are planned
//! a few at a time; the run reports them together and fails if any table
//! was refused.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::catalog::Catalog;
use crate::pointer::Pointer;

/// One table of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// How the run names it: `NS.NAME`, or its location.
    pub label: String,
    /// Where the table's location comes from: known, or the catalog's.
    pub table: Option<String>,
    /// Its pointer.
    pub pointer: Pointer,
}

/// The tables a run covers, in order.
pub async fn members(
    catalog: Option<&Catalog>,
    namespace: Option<&str>,
    list: Option<&str>,
) -> Result<Vec<Member>, String> {
    let member = |ns: &str, name: &str, catalog: &Catalog| Member {
        label: format!("{ns}.{name}"),
        table: None,
        pointer: Pointer::Catalog {
            catalog: catalog.clone(),
            namespace: ns.to_owned(),
            name: name.to_owned(),
        },
    };
    if let Some(ns) = namespace {
        let catalog = catalog.ok_or("--namespace needs --catalog")?;
        let names = catalog.tables(ns).await?;
        if names.is_empty() {
            return Err(format!(
                "{} has no Iceberg table in namespace {ns}",
                catalog.describe()
            ));
        }
        return Ok(names.iter().map(|n| member(ns, n, catalog)).collect());
    }
    let path = list.ok_or("give --namespace or --tables")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))?;
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
                table: Some(crate::store::table_uri(entry).map_err(|e| format!("{}: {e}", at()))?),
                pointer: Pointer::VersionHint,
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
                .ok_or_else(|| format!("{}: `{entry}` is neither NS.NAME nor a location", at()))?;
            member(ns, name, catalog)
        };
        if out.iter().any(|o| o.label == m.label) {
            return Err(format!("{}: `{entry}` is listed twice", at()));
        }
        out.push(m);
    }
    if out.is_empty() {
        return Err(format!("{path} lists no table"));
    }
    Ok(out)
}

/// The table location of a catalog member: the catalog's record of it,
/// else the folder above the metadata document's `metadata/` folder (the
/// planner refuses the plan if the metadata says otherwise).
pub async fn locate(m: &Member) -> Result<String, String> {
    if let Some(t) = &m.table {
        return Ok(t.clone());
    }
    let Pointer::Catalog {
        catalog,
        namespace,
        name,
    } = &m.pointer
    else {
        return Err(format!("{}: no table location", m.label));
    };
    let entry = catalog.load(namespace, name).await?;
    let location = match entry.location {
        Some(l) if !l.is_empty() => l,
        _ => entry
            .metadata
            .rsplit_once('/')
            .and_then(|(dir, _)| dir.strip_suffix("/metadata"))
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "{}: its metadata {} is not in a metadata/ folder, and the catalog records no location",
                    m.label, entry.metadata
                )
            })?,
    };
    crate::store::table_uri(location.trim_end_matches('/'))
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
    pub outcome: Result<crate::component::wt::SealedPlan, String>,
}

/// The refusal's kind, as the planner or host named it.
pub fn refusal_kind(e: &str) -> String {
    for (prefix, kind) in [
        ("unsafe to proceed (", None),
        ("malformed input (", Some("malformed")),
        ("unsupported:", Some("unsupported")),
        ("invalid option", Some("invalid-option")),
        ("host protocol error", Some("protocol")),
    ] {
        if let Some(rest) = e.strip_prefix(prefix) {
            return match kind {
                Some(k) => k.to_owned(),
                None => rest.split(')').next().unwrap_or("unsafe").to_owned(),
            };
        }
    }
    "unreadable".into()
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

/// A member and its table location, or why it has none.
pub type Located = (Member, Result<String, String>);

/// Each member with its table location (or why it has none), located
/// `jobs` at a time, in member order.
pub async fn locate_all(members: Vec<Member>, jobs: usize) -> Vec<Located> {
    let mut done: Vec<(usize, Located)> = futures::stream::iter(members.into_iter().enumerate())
        .map(|(i, m)| async move {
            let r = locate(&m).await;
            (i, (m, r))
        })
        .buffer_unordered(jobs.max(1))
        .collect()
        .await;
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, x)| x).collect()
}

/// Why a located member may not be planned in this run: its location is
/// another member's or nested with one (`overlaps`, the planner's
/// `overlapping-locations` over the located members, indices into
/// `located`), or its plan file would be another member's.
pub fn blocked(located: &[Located], overlaps: &[(u32, u32)]) -> Vec<Option<String>> {
    let mut why: Vec<Option<String>> = vec![None; located.len()];
    for &(a, b) in overlaps {
        let (a, b) = (a as usize, b as usize);
        for (me, other) in [(a, b), (b, a)] {
            if let (Some(slot), Some((m, Ok(t)))) = (why.get_mut(me), located.get(other)) {
                *slot = Some(format!(
                    "unsafe to proceed (shared-location): its location and {}'s ({t}) are the same or nested; a table's location must be its own",
                    m.label
                ));
            }
        }
    }
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
            Result<crate::component::wt::SealedPlan, String>,
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
                        outcome: Err(why),
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
                       "refused": {"kind": kind, "why": e}})
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
    use crate::report::{bytes, esc};
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
                esc(e)
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
        assert_eq!(
            refusal_kind("unsafe to proceed (location-mismatch): x (y)"),
            "location-mismatch"
        );
        assert_eq!(
            refusal_kind("malformed input (truncated) s3://x: y"),
            "malformed"
        );
        assert_eq!(
            refusal_kind("glue GetTable a.b: EntityNotFound"),
            "unreadable"
        );
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
        let m = members(Some(&catalog), None, list.to_str()).await.unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].label, "db.a");
        assert_eq!(m[1].table.as_deref(), Some("s3://b/w/t"));
        assert_eq!(m[1].pointer, Pointer::VersionHint);
        // A catalog name without a catalog, a duplicate, an empty list: refused.
        assert!(members(None, None, list.to_str()).await.is_err());
        std::fs::write(&list, "db.a\ndb.a\n").unwrap();
        assert!(members(Some(&catalog), None, list.to_str()).await.is_err());
        std::fs::write(&list, "# nothing\n").unwrap();
        assert!(members(Some(&catalog), None, list.to_str()).await.is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
