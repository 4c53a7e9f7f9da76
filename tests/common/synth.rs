//! Synthetic Iceberg tables held in memory (served through `HostOptions::extra`).
#![allow(dead_code)]

use std::collections::BTreeMap;

use super::avro;

pub const LOC: &str = "file:///lakesweep-fixtures/synthetic/db/t";
pub const UUID: &str = "9b0a6c37-0000-4000-8000-000000000001";
pub const NOW: i64 = 1_800_000_000_000;
pub const DAY: i64 = 86_400_000;
pub const RETENTION: i64 = 3 * DAY;
pub const OLD: i64 = NOW - 10 * DAY;

/// One snapshot: id and its manifest entries `(status, content, relative path)`.
pub type Snap = (i64, Vec<(i64, i64, String)>);

/// Writes the table's files for `snaps` as metadata version `version`;
/// returns the metadata URI. Files get `mtime`.
pub fn write_table(
    objects: &mut BTreeMap<String, (Vec<u8>, i64)>,
    snaps: &[Snap],
    version: u32,
    uuid: &str,
    mtime: i64,
) -> String {
    let mut snap_json = Vec::new();
    let mut parent: Option<i64> = None;
    for (id, entries) in snaps {
        let m_uri = format!("{LOC}/metadata/m-{id}.avro");
        let l_uri = format!("{LOC}/metadata/snap-{id}.avro");
        if !objects.contains_key(&l_uri) {
            let abs: Vec<(i64, i64, String)> = entries
                .iter()
                .map(|(s, c, p)| (*s, *c, format!("{LOC}/{p}")))
                .collect();
            let m = avro::manifest(*id, &abs);
            let l = avro::manifest_list(*id, &[(m_uri.clone(), m.len() as u64, 0)]);
            objects.insert(m_uri, (m, mtime));
            objects.insert(l_uri.clone(), (l, mtime));
            for (status, _, p) in entries {
                if *status != 2 {
                    objects
                        .entry(format!("{LOC}/{p}"))
                        .or_insert((b"parquet".to_vec(), mtime));
                }
            }
        }
        snap_json.push(serde_json::json!({
            "snapshot-id": id, "parent-snapshot-id": parent, "timestamp-ms": NOW - 20 * DAY + id,
            "manifest-list": l_uri, "summary": {"operation": "append"}, "schema-id": 0
        }));
        parent = Some(*id);
    }
    let current = snaps.last().map(|s| s.0).unwrap_or(-1);
    let mut md = serde_json::json!({
        "format-version": 2, "table-uuid": uuid, "location": LOC, "last-sequence-number": 0,
        "last-updated-ms": NOW - DAY, "last-column-id": 1, "current-schema-id": 0,
        "schemas": [{"type":"struct","schema-id":0,"fields":[]}], "default-spec-id": 0,
        "partition-specs": [{"spec-id":0,"fields":[{"name":"_p","transform":"identity","source-id":1,"field-id":1000}]}],
        "last-partition-id": 1000, "default-sort-order-id": 0, "sort-orders": [],
        "properties": {}, "current-snapshot-id": current, "snapshots": snap_json,
        "metadata-log": (0..version).map(|v| serde_json::json!({"timestamp-ms": 1, "metadata-file": format!("{LOC}/metadata/{v:05}-x.metadata.json")})).collect::<Vec<_>>(),
    });
    if current != -1 {
        md["refs"] = serde_json::json!({"main": {"snapshot-id": current, "type": "branch"}});
    }
    let uri = format!("{LOC}/metadata/{version:05}-x.metadata.json");
    objects.insert(uri.clone(), (serde_json::to_vec(&md).unwrap(), mtime));
    uri
}

/// A table whose `write.data.path` lies outside its location: data file
/// `ext/data/a.parquet` referenced there, an old orphan beside it, an old
/// orphan in the table. Returns the options and the metadata URI.
pub fn table_with_data_root() -> (super::HostOptions, String, String) {
    table_with_data_root_at("file:///lakesweep-fixtures/synthetic/ext")
}

pub fn table_with_data_root_at(ext: &str) -> (super::HostOptions, String, String) {
    let mut o = super::HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, vec![(1, 0, "data/b.parquet".to_owned())])],
        1,
        UUID,
        OLD,
    );
    let m_uri = format!("{LOC}/metadata/m-1.avro");
    let m = avro::manifest(
        1,
        &[
            (1, 0, format!("{ext}/data/a.parquet")),
            (1, 0, format!("{LOC}/data/b.parquet")),
        ],
    );
    let l = avro::manifest_list(1, &[(m_uri.clone(), m.len() as u64, 0)]);
    o.extra.insert(m_uri, (m, OLD));
    o.extra
        .insert(format!("{LOC}/metadata/snap-1.avro"), (l, OLD));
    let mut md: serde_json::Value = serde_json::from_slice(&o.extra[&meta].0).unwrap();
    md["properties"]["write.data.path"] = format!("{ext}/data").into();
    o.extra
        .insert(meta.clone(), (serde_json::to_vec(&md).unwrap(), OLD));
    for k in [
        format!("{ext}/data/a.parquet"),
        format!("{ext}/data/orphan.parquet"),
        format!("{ext}/data/_tmp/upload.parquet"),
        format!("{LOC}/data/orphan2.parquet"),
    ] {
        o.extra.insert(k, (b"x".to_vec(), OLD));
    }
    (o, meta, ext.to_owned())
}
