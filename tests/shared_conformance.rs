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

/// The public fixtures beside the checkout. These tests are `#[ignore]`d
/// (a fresh clone has no `../shared`); `scripts/test.sh` runs them with
/// `--ignored` whenever `../shared/fixtures` exists, and then a missing
/// folder is a failure, never a skip.
fn shared() -> PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    assert!(
        p.is_dir(),
        "../shared/fixtures is missing: run these tests only where it exists"
    );
    p.canonicalize().unwrap()
}

fn duck(shared: &std::path::Path, table: &str, pointer: &str) -> Result<Run, Error> {
    duck_from(shared, table, pointer, false)
}

/// `authoritative`: the pointer is a catalog's (compare-and-set), not a file.
fn duck_from(
    shared: &std::path::Path,
    table: &str,
    pointer: &str,
    authoritative: bool,
) -> Result<Run, Error> {
    let root = format!("file://{}/duckdb-iceberg", shared.display());
    let loc = format!("{root}/{table}");
    let mut cfg = SessionConfig::new(&loc, &format!("{loc}/metadata/{pointer}"), NOW, 3 * DAY);
    cfg.location_map = vec![PathMapping {
        from: "data/persistent".into(),
        to: root,
    }];
    cfg.pointer_authoritative = authoritative;
    let mut o = HostOptions::synthetic();
    o.default_mtime = Some(NOW - 30 * DAY);
    run_native(cfg, &o)
}

#[test]
#[ignore = "needs ../shared/fixtures; scripts/test.sh runs it with --ignored where they exist"]
fn apache_iceberg_metadata_documents_parse() {
    let s = shared();
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
#[ignore = "needs ../shared/fixtures; scripts/test.sh runs it with --ignored where they exist"]
fn apache_iceberg_v2_metadata_with_absent_manifest_lists_fails_closed() {
    let s = shared();
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
#[ignore = "needs ../shared/fixtures; scripts/test.sh runs it with --ignored where they exist"]
fn duckdb_table_with_a_missing_manifest_list_fails_closed() {
    let s = shared();
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
#[ignore = "needs ../shared/fixtures; scripts/test.sh runs it with --ignored where they exist"]
fn duckdb_equality_delete_table_refuses_where_a_list_is_missing_and_plans_v2() {
    // From v3 on, the metadata names `snap-7342794868382145167-1-...avro`,
    // but the fixture holds only `...-3-...`: every later version refuses.
    let s = shared();
    let table = "equality_deletes/warehouse/mydb/mytable";
    for v in 3..=7 {
        let e = duck(&s, table, &format!("v{v}.metadata.json")).expect_err("a missing list");
        assert!(
            matches!(
                e,
                Error::Unsafe {
                    reason: UnsafeReason::MissingMetadata,
                    ..
                }
            ),
            "v{v}: {e}"
        );
    }
    // v2 (one complete snapshot) plans, keeping what it reads. From a file
    // pointer, the later versions descend from v2: a stale pointer; from a
    // catalog they are failed commits' leftovers.
    let e = duck(&s, table, "v2.metadata.json").expect_err("v3..v7 descend from v2");
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::StalePointer,
                ..
            }
        ),
        "{e}"
    );
    let run = duck_from(&s, table, "v2.metadata.json", true).unwrap();
    let v = run.verdicts();
    let referenced: Vec<&String> = v
        .iter()
        .filter(|(_, d)| d.verdict == Verdict::Referenced)
        .map(|(k, _)| k)
        .collect();
    assert!(
        referenced
            .iter()
            .any(|k| k.starts_with("data/") && k.ends_with(".parquet")),
        "{referenced:?}"
    );
    for (k, d) in &v {
        if k.rsplit('/').next().unwrap().starts_with('.') {
            assert_ne!(d.verdict, Verdict::Candidate, "{k}");
        }
    }
}

#[test]
#[ignore = "needs ../shared/fixtures; scripts/test.sh runs it with --ignored where they exist"]
fn duckdb_partition_evolution_table_plans_nothing_and_hides_crc_files() {
    let s = shared();
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
#[ignore = "needs ../shared/fixtures; scripts/test.sh runs it with --ignored where they exist"]
fn duckdb_v3_deletion_vector_puffin_is_kept_while_referenced() {
    let s = shared();
    let table = "legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector";
    let puffin = "data/legacy-bare-deletion-vector.puffin";
    let with_dv = duck(&s, table, "00002-legacy-bare-dv.metadata.json").unwrap();
    let d = &with_dv.verdicts()[puffin];
    assert_eq!(d.verdict, Verdict::Referenced);
    assert!(d.detail.contains("deletion vector"), "{}", d.detail);
    // The SQL catalog still points at 00001, which never saw the DV commit:
    // from there, the DV file and the uncommitted 00002 metadata are garbage.
    // As a file pointer, 00001 lags behind 00002 (a higher sequence number):
    // refused.
    let first = "00001-844030fa-6b44-406b-ac35-494fe3c8e4a2.metadata.json";
    let e = duck(&s, table, first).expect_err("a lagging file pointer");
    assert!(
        matches!(
            e,
            Error::Unsafe {
                reason: UnsafeReason::StalePointer,
                ..
            }
        ),
        "{e}"
    );
    let catalog = duck_from(&s, table, first, true).unwrap();
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
