//! Tables from the formats' less common corners, each written by a real
//! writer (`tests/fixtures/generate_shapes.py` names them and their
//! versions) and read back by an independent reader when generated: a
//! multi-part Delta checkpoint whose parts hold different actions, a Delta
//! protocol naming writer-only features (collations, ...), gzip
//! metadata under a file-system catalog's version hint, Parquet position
//! deletes, v3 deletion vectors in Puffin files with row lineage, equality
//! deletes, Puffin and partition statistics. Each is planned (never
//! refused), everything the reader reached is kept, and exactly the old
//! planted orphans go.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use lakesweep::{SessionConfig, TableFormat, Verdict};
use serde_json::Value;

const DAY: i64 = 86_400_000;

struct Shape {
    name: String,
    e: Value,
}

impl Shape {
    fn all() -> Vec<Shape> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shapes");
        let text = std::fs::read_to_string(dir.join("expect.json")).expect("shapes/expect.json");
        let v: Value = serde_json::from_str(&text).unwrap();
        let shapes: Vec<Shape> = v
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, e)| Shape {
                name: name.clone(),
                e: e.clone(),
            })
            .collect();
        assert_eq!(shapes.len(), 7, "every shape the generator writes");
        shapes
    }
    fn get(name: &str) -> Shape {
        Shape::all().into_iter().find(|s| s.name == name).unwrap()
    }
    fn location(&self) -> String {
        self.e["location"].as_str().unwrap().to_owned()
    }
    fn set(&self, key: &str) -> BTreeSet<String> {
        match &self.e[key] {
            Value::Array(a) => a.iter().map(|v| v.as_str().unwrap().to_owned()).collect(),
            Value::Object(o) => o.keys().cloned().collect(),
            Value::Null => BTreeSet::new(),
            other => panic!("{key}: {other}"),
        }
    }
    fn planted(&self) -> BTreeMap<String, String> {
        serde_json::from_value(self.e["planted"].clone()).unwrap()
    }
    fn opts(&self) -> HostOptions {
        let mut o = HostOptions::synthetic();
        o.mtimes = serde_json::from_value(self.e["mtimes"].clone()).unwrap();
        o.mtime_base = Some(self.location());
        o
    }
    /// Judged a day after the table was written, with a 7-day window.
    fn config(&self, metadata_location: &str) -> SessionConfig {
        let now = self.e["generated_at_ms"].as_i64().unwrap() + DAY;
        let mut c = SessionConfig::new(&self.location(), metadata_location, now, 7 * DAY);
        if self.e["format"] == "delta" {
            c.format = TableFormat::Delta;
        }
        c
    }
    /// The current metadata as a host finds it: the catalog's pointer, or
    /// for the file-system catalog table the core's reading of its hint
    /// over a listing of `metadata/`.
    fn pointer(&self) -> String {
        if self.e["format"] == "delta" {
            return String::new();
        }
        let loc = self.location();
        let hint_uri = format!("{loc}/metadata/version-hint.text");
        match std::fs::read(vpath(&hint_uri).unwrap()) {
            Err(_) => self.e["metadata_location"].as_str().unwrap().to_owned(),
            Ok(hint) => {
                let keys: Vec<String> = list(&format!("{loc}/metadata"), &self.opts())
                    .into_iter()
                    .map(|o| o.key)
                    .collect();
                let (uri, why) =
                    lakesweep::spec::metadata_file::current_metadata(&loc, Some(&hint), &keys)
                        .unwrap();
                assert!(why.contains("committed after"), "{}: {why}", self.name);
                uri
            }
        }
    }
}

#[test]
fn every_shape_is_planned_keeping_what_its_reader_reaches() {
    for s in Shape::all() {
        let pointer = s.pointer();
        let run = run_native(s.config(&pointer), &s.opts())
            .unwrap_or_else(|e| panic!("{}: refused: {e}", s.name));
        let v = run.verdicts();
        let planted = s.planted();
        // The Delta log is kept as the log (hidden), everything else the
        // writer wrote as referenced.
        let kept = |rel: &str| {
            if rel.starts_with("_delta_log/") {
                Verdict::Hidden
            } else {
                Verdict::Referenced
            }
        };
        for rel in s.set("referenced").iter().chain(&s.set("tombstones")) {
            let d = v
                .get(rel)
                .unwrap_or_else(|| panic!("{}: {rel} not listed", s.name));
            assert_eq!(d.verdict, kept(rel), "{}: {rel}: {}", s.name, d.detail);
        }
        for (rel, d) in &v {
            match planted.get(rel) {
                Some(want) => {
                    assert_eq!(d.verdict.as_str(), want, "{}: {rel}: {}", s.name, d.detail)
                }
                None => assert_eq!(d.verdict, kept(rel), "{}: {rel}: {}", s.name, d.detail),
            }
        }
        let deletes: BTreeSet<String> = run.plan().delete.into_iter().map(|d| d.key).collect();
        let want: BTreeSet<String> = planted
            .iter()
            .filter(|(_, v)| *v == "candidate")
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(deletes, want, "{}", s.name);
        assert_eq!(
            v.len(),
            s.set("mtimes").len(),
            "{}: one verdict per file",
            s.name
        );
        assert_eq!(run.plan().summary.referenced_not_listed, 0, "{}", s.name);
    }
}

/// Each corner is kept for the reason that names it: every file the
/// reader found as a delete file, a deletion vector's Puffin file or a
/// statistics file, by what the reader found it to be.
#[test]
fn delete_files_vectors_and_statistics_are_kept_as_what_they_are() {
    let says = |kind: &str| match kind {
        "data" => "data file",
        "position-deletes" => "position delete file / deletion vector",
        "equality-deletes" => "equality delete file",
        "statistics" => "statistics file of snapshot",
        "partition-statistics" => "partition statistics file of snapshot",
        k => panic!("{k}"),
    };
    let mut seen = BTreeMap::new();
    for s in Shape::all()
        .into_iter()
        .filter(|s| s.e["format"] == "iceberg")
    {
        let run = run_native(s.config(&s.pointer()), &s.opts()).unwrap();
        let v = run.verdicts();
        let content: BTreeMap<String, String> =
            serde_json::from_value(s.e["content"].clone()).unwrap();
        for (rel, kind) in content {
            assert_eq!(v[&rel].verdict, Verdict::Referenced, "{}: {rel}", s.name);
            assert!(
                v[&rel].detail.contains(says(&kind)),
                "{}: {rel} ({kind}): {}",
                s.name,
                v[&rel].detail
            );
            *seen.entry((s.name.clone(), kind)).or_insert(0) += 1;
        }
    }
    // Every corner is there: the fixtures hold what their names say.
    for (table, kind) in [
        ("iceberg_position_deletes", "position-deletes"),
        ("iceberg_deletion_vectors", "position-deletes"),
        ("iceberg_equality_deletes", "equality-deletes"),
        ("iceberg_statistics", "statistics"),
        ("iceberg_statistics", "partition-statistics"),
    ] {
        assert!(
            seen.contains_key(&(table.to_owned(), kind.to_owned())),
            "{table}: no {kind}"
        );
    }
    // DuckDB's summaries count replaced deletion vectors still: read as
    // live plus removed, and said in the plan.
    let dv = Shape::get("iceberg_deletion_vectors");
    let plan = run_native(dv.config(&dv.pointer()), &dv.opts())
        .unwrap()
        .plan();
    assert!(
        plan.warnings.iter().any(|w| w.contains("never subtracts")),
        "{:?}",
        plan.warnings
    );
    let puffins = dv
        .set("content")
        .into_iter()
        .filter(|k| k.ends_with(".puffin"))
        .count();
    assert!(puffins >= 3, "deletion vectors in Puffin files: {puffins}");
}

/// The version-2 files come from the checkpoint's parts alone (the commits
/// before it are gone), and a part holding only `txn` is read as holding
/// no files. A part holding no Delta action column at all is refused.
#[test]
fn checkpoint_parts_holding_only_txn_are_read_and_a_part_of_nothing_is_refused() {
    let s = Shape::get("delta_multipart_txn");
    let loc = s.location();
    let run = run_native(s.config(""), &s.opts()).unwrap();
    let v = run.verdicts();
    for live in s.set("live") {
        assert!(
            v[&live].detail.contains("live file of Delta version 3"),
            "{live}: {}",
            v[&live].detail
        );
    }
    let part1 =
        format!("{loc}/_delta_log/00000000000000000002.checkpoint.0000000001.0000000005.parquet");
    let txn_only = std::fs::read(vpath(&part1).unwrap()).unwrap();
    assert!(txn_only.windows(5).any(|w| w == b"appId"));
    // A data file in the part's place: Parquet, but no action column
    // (Delta paths are relative: a copy elsewhere is the same table).
    let dir = std::env::temp_dir().join(format!("lakesweep-shapes-part-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    copy_tree(&vpath(&loc).unwrap(), &dir);
    let data = s.set("live").into_iter().next().unwrap();
    let part = dir.join("_delta_log/00000000000000000002.checkpoint.0000000001.0000000005.parquet");
    std::fs::copy(dir.join(&data), &part).unwrap();
    let copy = format!("file://{}", dir.display());
    let mut o = s.opts();
    o.mtime_base = Some(copy.clone());
    let mut cfg = s.config("");
    cfg.table_location = copy;
    let e = run_native(cfg, &o).unwrap_err().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(e.contains("no Delta action column"), "{e}");
}

/// The hint says 3; v4 was committed after it: the core walks to v4 in
/// the compressed spelling, and the document it leads to is current.
#[test]
fn a_lagging_hint_over_gzip_documents_leads_to_the_newest() {
    let s = Shape::get("iceberg_hadoop_gz");
    let pointer = s.pointer();
    assert_eq!(pointer, s.e["metadata_location"].as_str().unwrap());
    assert!(
        pointer.ends_with("/metadata/v4.gz.metadata.json"),
        "{pointer}"
    );
    let run = run_native(s.config(&pointer), &s.opts()).unwrap();
    let v = run.verdicts();
    assert!(
        v["metadata/v4.gz.metadata.json"]
            .detail
            .contains("current table metadata"),
        "{}",
        v["metadata/v4.gz.metadata.json"].detail
    );
    // Planning from the stale v3 (the hint as written) is refused: v4 is a
    // newer document of the same table.
    let stale = pointer.replace("v4.gz", "v3.gz");
    let e = run_native(s.config(&stale), &s.opts())
        .unwrap_err()
        .to_string();
    assert!(e.contains("stale-pointer"), "{e}");
}
