//! Conformance over the public fixtures in `../shared/fixtures` (present in CI
//! and on developer machines; a fresh clone without them runs the rest of the
//! suite). Spark- and duckdb-written tables with repo-relative paths are
//! mapped onto the checkout with a location mapping, as a user would.

mod common;

use std::path::PathBuf;

use common::*;
use lakesweep::spec::iceberg::TableMetadata;
use lakesweep::{Error, PathMapping, SessionConfig, UnsafeReason, Verdict};

const NOW: i64 = 1_800_000_000_000;
const DAY: i64 = 86_400_000;

fn shared() -> Option<PathBuf> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if p.is_dir() {
        Some(p.canonicalize().unwrap())
    } else {
        eprintln!("../shared/fixtures not present: conformance over public fixtures skipped");
        None
    }
}

fn duck(shared: &std::path::Path, table: &str, pointer: &str) -> Result<Run, Error> {
    let root = format!("file://{}/duckdb-iceberg", shared.display());
    let loc = format!("{root}/{table}");
    let mut cfg = SessionConfig::new(&loc, &format!("{loc}/metadata/{pointer}"), NOW, 3 * DAY);
    cfg.location_map = vec![PathMapping {
        from: "data/persistent".into(),
        to: root,
    }];
    let mut o = HostOptions::synthetic();
    o.default_mtime = Some(NOW - 30 * DAY);
    run_native(cfg, &o)
}

#[test]
fn apache_iceberg_metadata_documents_parse() {
    let Some(s) = shared() else { return };
    let dir = s.join("apache-iceberg/metadata");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let bytes = std::fs::read(&p).unwrap();
        let m = TableMetadata::parse(&p.display().to_string(), &bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("PartitionStatistics") {
            assert!(!m.partition_statistics.is_empty(), "{name}");
        } else if name.contains("Statistics") {
            assert!(!m.statistics.is_empty(), "{name}");
        }
        if name.contains("V1") {
            assert_eq!(m.format_version, 1);
        }
        n += 1;
    }
    assert!(n >= 5);
}

#[test]
fn apache_iceberg_v2_metadata_with_absent_manifest_lists_fails_closed() {
    let Some(s) = shared() else { return };
    let p = s.join("apache-iceberg/metadata/TableMetadataV2Valid.json");
    let m = TableMetadata::parse("v2", &std::fs::read(&p).unwrap()).unwrap();
    // The document names s3:// manifest lists that are not part of the fixture:
    // a sweep must refuse rather than treat "not found" as "no files".
    let mut o = HostOptions::synthetic();
    let meta = format!("{}/metadata/v2.metadata.json", m.location);
    o.replace.insert(meta.clone(), std::fs::read(&p).unwrap());
    let e = run_native(SessionConfig::new(&m.location, &meta, NOW, 3 * DAY), &o)
        .err()
        .unwrap();
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::MissingMetadata,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn duckdb_table_with_a_missing_manifest_list_fails_closed() {
    let Some(s) = shared() else { return };
    let e = duck(
        &s,
        "equality_deletes/warehouse/mydb/mytable",
        "v7.metadata.json",
    )
    .expect_err("must refuse");
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::MissingMetadata,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn duckdb_equality_delete_table_at_v6_keeps_data_and_delete_files() {
    let Some(s) = shared() else { return };
    let run = match duck(
        &s,
        "equality_deletes/warehouse/mydb/mytable",
        "v6.metadata.json",
    ) {
        Ok(r) => r,
        // v6 may name the same missing list: then refusing is the right answer too.
        Err(e) => {
            assert!(
                matches!(
                    e,
                    Error::Unsafe {
                        reason: UnsafeReason::MissingMetadata,
                        ..
                    }
                ),
                "{e}"
            );
            return;
        }
    };
    let v = run.verdicts();
    for (k, d) in &v {
        if k.rsplit('/').next().unwrap().starts_with('.') {
            assert_eq!(d.verdict, Verdict::Hidden, "{k}");
        }
        if k.contains("/delete-") && !k.ends_with(".crc") && d.verdict == Verdict::Referenced {
            assert!(d.detail.contains("equality delete"), "{k}: {}", d.detail);
        }
    }
}

#[test]
fn duckdb_partition_evolution_table_plans_nothing_and_hides_crc_files() {
    let Some(s) = shared() else { return };
    let run = duck(&s, "hive_partitioned_table", "v4.metadata.json").unwrap();
    let plan = run.plan();
    assert!(plan.delete.is_empty(), "{:?}", plan.delete);
    for (k, d) in run.verdicts() {
        if k.ends_with(".parquet") {
            assert_eq!(d.verdict, Verdict::Referenced, "{k}");
        }
        if k.ends_with(".crc") {
            assert_eq!(d.verdict, Verdict::Hidden, "{k}");
        }
    }
}

#[test]
fn duckdb_v3_deletion_vector_puffin_is_kept_while_referenced() {
    let Some(s) = shared() else { return };
    let table = "legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector";
    let puffin = "data/legacy-bare-deletion-vector.puffin";
    let with_dv = duck(&s, table, "00002-legacy-bare-dv.metadata.json").unwrap();
    let d = &with_dv.verdicts()[puffin];
    assert_eq!(d.verdict, Verdict::Referenced);
    assert!(d.detail.contains("deletion vector"), "{}", d.detail);
    // The SQL catalog still points at 00001, which never saw the DV commit:
    // from there, the DV file and the uncommitted 00002 metadata are garbage.
    let catalog = duck(
        &s,
        table,
        "00001-844030fa-6b44-406b-ac35-494fe3c8e4a2.metadata.json",
    )
    .unwrap();
    let keys: Vec<String> = catalog
        .plan()
        .delete
        .iter()
        .map(|d| d.key.clone())
        .collect();
    assert!(keys.contains(&puffin.to_owned()), "{keys:?}");
    assert!(
        keys.contains(&"metadata/00002-legacy-bare-dv.metadata.json".to_owned()),
        "{keys:?}"
    );
    assert_eq!(
        catalog.verdicts()["data/00000-0-cac6cfea-266f-44f8-9a3a-70dd8fb68014.parquet"].verdict,
        Verdict::Referenced
    );
}
