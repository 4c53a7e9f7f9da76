//! A prefix belongs to one table. Property: for random warehouses of
//! tables of both formats (and a Hive table), nested anywhere inside each
//! other, with Iceberg write roots placed anywhere (inside another table,
//! beside it), the plan of each table the ownership map lets be planned
//! never deletes a key another table references or owns.

mod common;

use std::collections::BTreeMap;

use common::*;
use lakesweep::estate::{ownership_map, CatalogEntry};
use lakesweep::{SessionConfig, TableFormat};
use proptest::prelude::*;

const WH: &str = "file:///lakesweep-prop/wh";
const NOW: i64 = 1_800_000_000_000;
const DAY: i64 = 86_400_000;
const OLD: i64 = NOW - 30 * DAY;

/// One table of a generated warehouse.
#[derive(Debug, Clone)]
struct Spec {
    kind: Kind,
    /// Index of the table it is nested in (its location is inside that
    /// table's location, or inside its data root), or none (the warehouse).
    parent: Option<(usize, bool)>,
    /// Iceberg: its `write.data.path` placed inside another table (index),
    /// beside the tables, or none.
    data_root: Option<Option<usize>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Iceberg,
    Delta,
    Hive,
}

/// A generated table: where it lives, what it references, what it owns.
#[derive(Debug)]
struct Built {
    kind: Kind,
    location: String,
    data_root: String,
    /// Every key it references (absolute URIs).
    referenced: Vec<String>,
    metadata: Option<(String, Vec<u8>)>,
}

fn build(specs: &[Spec], objects: &mut BTreeMap<String, (Vec<u8>, i64)>) -> Vec<Built> {
    let mut out: Vec<Built> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let location = match s.parent {
            Some((p, in_data)) if p < out.len() => {
                let base = if in_data {
                    out[p].data_root.clone()
                } else {
                    out[p].location.clone()
                };
                format!("{base}/t{i}")
            }
            _ => format!("{WH}/t{i}"),
        };
        let data_root = match s.data_root {
            Some(Some(p)) if p < out.len() && s.kind == Kind::Iceberg => {
                format!("{}/d{i}", out[p].location)
            }
            Some(_) if s.kind == Kind::Iceberg => format!("{WH}/data-{i}"),
            _ => format!("{location}/data"),
        };
        let data: Vec<String> = (0..2)
            .map(|n| format!("{data_root}/f{i}-{n}.parquet"))
            .collect();
        for d in &data {
            objects.insert(d.clone(), (b"parquet".to_vec(), OLD));
        }
        // Each table's own garbage, to be deleted by its own plan only.
        objects.insert(
            format!("{data_root}/orphan-{i}.parquet"),
            (b"x".to_vec(), OLD),
        );
        let mut referenced = data.clone();
        let mut metadata = None;
        match s.kind {
            Kind::Iceberg => {
                let m_uri = format!("{location}/metadata/m-{i}.avro");
                let l_uri = format!("{location}/metadata/snap-{i}.avro");
                let entries: Vec<(i64, i64, String)> =
                    data.iter().map(|d| (1, 0, d.clone())).collect();
                let m = avro::manifest(i as i64 + 1, &entries);
                let l = avro::manifest_list(i as i64 + 1, &[(m_uri.clone(), m.len() as u64, 0)]);
                objects.insert(m_uri.clone(), (m, OLD));
                objects.insert(l_uri.clone(), (l, OLD));
                let mut props = serde_json::Map::new();
                if s.data_root.is_some() {
                    props.insert("write.data.path".into(), data_root.clone().into());
                }
                let md = serde_json::json!({
                    "format-version": 2, "table-uuid": format!("00000000-0000-4000-8000-{i:012}"),
                    "location": location, "last-sequence-number": 1, "last-updated-ms": OLD,
                    "last-column-id": 1, "current-schema-id": 0,
                    "schemas": [{"type":"struct","schema-id":0,"fields":[]}], "default-spec-id": 0,
                    "partition-specs": [{"spec-id":0,"fields":[]}], "last-partition-id": 999,
                    "default-sort-order-id": 0, "sort-orders": [], "properties": props,
                    "current-snapshot-id": i + 1,
                    "snapshots": [{"snapshot-id": i + 1, "timestamp-ms": OLD, "manifest-list": l_uri,
                                   "summary": {"operation": "append"}, "schema-id": 0}],
                    "refs": {"main": {"snapshot-id": i + 1, "type": "branch"}},
                    "metadata-log": [],
                });
                let uri = format!("{location}/metadata/00001-x.metadata.json");
                let bytes = serde_json::to_vec(&md).unwrap();
                objects.insert(uri.clone(), (bytes.clone(), OLD));
                referenced.extend([m_uri, l_uri, uri.clone()]);
                metadata = Some((uri, bytes));
            }
            Kind::Delta => {
                let mut log = String::from(
                    "{\"protocol\":{\"minReaderVersion\":1,\"minWriterVersion\":2}}\n",
                );
                log.push_str(&format!(
                    "{{\"metaData\":{{\"id\":\"d{i}\",\"format\":{{\"provider\":\"parquet\",\"options\":{{}}}},\"schemaString\":\"{{\\\"type\\\":\\\"struct\\\",\\\"fields\\\":[]}}\",\"partitionColumns\":[],\"configuration\":{{}},\"createdTime\":1}}}}\n"
                ));
                for d in &data {
                    let rel = d.strip_prefix(&format!("{location}/")).unwrap();
                    log.push_str(&format!(
                        "{{\"add\":{{\"path\":\"{rel}\",\"partitionValues\":{{}},\"size\":7,\"modificationTime\":{OLD},\"dataChange\":true}}}}\n"
                    ));
                }
                let uri = format!("{location}/_delta_log/00000000000000000000.json");
                objects.insert(uri.clone(), (log.into_bytes(), OLD));
                referenced.push(uri);
            }
            Kind::Hive => {}
        }
        out.push(Built {
            kind: s.kind,
            location,
            data_root,
            referenced,
            metadata,
        });
    }
    out
}

fn entries(built: &[Built]) -> Vec<CatalogEntry> {
    built
        .iter()
        .enumerate()
        .map(|(i, b)| CatalogEntry {
            namespace: vec!["db".into()],
            name: format!("t{i}"),
            kind: match b.kind {
                Kind::Iceberg => "iceberg",
                Kind::Delta => "delta",
                Kind::Hive => "hive",
            }
            .into(),
            location: (b.kind != Kind::Iceberg).then(|| b.location.clone()),
            other_locations: vec![],
            metadata_location: b.metadata.as_ref().map(|m| m.0.clone()),
            metadata: b.metadata.as_ref().map(|m| m.1.clone()),
        })
        .collect()
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop_oneof![Just(Kind::Iceberg), Just(Kind::Delta), Just(Kind::Hive)],
        proptest::option::of((0usize..4, any::<bool>())),
        proptest::option::of(proptest::option::of(0usize..4)),
    )
        .prop_map(|(kind, parent, data_root)| Spec {
            kind,
            parent,
            data_root,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn no_plan_deletes_another_tables_key(specs in proptest::collection::vec(spec(), 1..5)) {
        let mut objects = BTreeMap::new();
        let built = build(&specs, &mut objects);
        let map = ownership_map(entries(&built), &[]).unwrap();
        for (i, (b, m)) in built.iter().zip(&map).enumerate() {
            if !m.planned {
                continue;
            }
            let (uri, _) = b.metadata.as_ref().unwrap();
            let mut cfg = SessionConfig::new(&b.location, uri, NOW, 3 * DAY);
            cfg.format = TableFormat::Iceberg;
            cfg.foreign_roots = m.foreign_roots.clone();
            let opts = HostOptions {
                extra: objects.clone(),
                ..HostOptions::synthetic()
            };
            let plan = match run_native(cfg, &opts) {
                Ok(run) => run.plan(),
                // Refusing is always safe.
                Err(_) => continue,
            };
            let absolute = |k: &str| if k.contains("://") { k.to_owned() } else { format!("{}/{k}", plan.table_location) };
            for d in &plan.delete {
                let key = absolute(&d.key);
                for (j, other) in built.iter().enumerate().filter(|(j, _)| *j != i) {
                    prop_assert!(
                        !other.referenced.contains(&key),
                        "t{i}'s plan deletes {key}, which t{j} references: {specs:?}"
                    );
                    for root in [&other.location, &other.data_root] {
                        prop_assert!(
                            !key.starts_with(&format!("{root}/")),
                            "t{i}'s plan deletes {key}, under t{j}'s {root}: {specs:?}"
                        );
                    }
                }
            }
            // Its own garbage goes when nothing else owns it.
            let own = format!("{}/orphan-{i}.parquet", b.data_root);
            let owned_elsewhere = built.iter().enumerate().any(|(j, o)| {
                j != i && [&o.location, &o.data_root].iter().any(|r| own.starts_with(&format!("{r}/")))
            });
            if !owned_elsewhere {
                prop_assert!(plan.delete.iter().any(|d| absolute(&d.key) == own), "{own} kept: {plan:?}");
            }
        }
    }
}
