//! A reference keeps every key a reader may resolve it to (`docs/design.md`,
//! "Every spelling a reader resolves").
//! Property tests over many spellings of one key (dot segments, `file:`
//! forms, repeated slashes, scheme case, `s3a`/`s3n`), for Iceberg manifests
//! and Delta `add` actions; a regression on a deltalake-written table whose
//! hand-written commit adds files through dot-segment URIs; listing keys with
//! control characters; cycles in the metadata graph.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::synth::*;
use common::*;
use lakesweep::path::{spellings, CanonicalUri, TableLocation};
use lakesweep::{Error, PathMapping, SessionConfig, TableFormat, Verdict};
use proptest::prelude::*;

/// One change to the segments of a path, applied before segment `at`.
#[derive(Debug, Clone)]
enum Edit {
    /// A `.` segment.
    Dot(usize),
    /// `name/..`: a detour through a sibling folder.
    Detour(usize, String),
    /// An empty segment (`//`); never first, where `file://x` would read
    /// `x` as a host.
    Double(usize),
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        (0usize..8).prop_map(Edit::Dot),
        (0usize..8, "[a-z]{1,3}").prop_map(|(i, n)| Edit::Detour(i, n)),
        (1usize..8).prop_map(Edit::Double),
    ];
    proptest::collection::vec(edit, 0..5)
}

/// Applies `edits` to the `/`-separated `path` (no leading slash).
fn spell(path: &str, edits: &[Edit]) -> String {
    let mut segs: Vec<String> = path.split('/').map(str::to_owned).collect();
    let last = segs.len() - 1;
    // Applied from the highest position down so earlier positions stay put.
    let mut es = edits.to_vec();
    es.sort_by_key(|e| {
        std::cmp::Reverse(match e {
            Edit::Dot(i) | Edit::Detour(i, _) | Edit::Double(i) => *i,
        })
    });
    for e in es {
        match e {
            Edit::Dot(i) => segs.insert(i.min(last), ".".into()),
            Edit::Detour(i, n) => {
                let i = i.min(last);
                segs.insert(i, "..".into());
                segs.insert(i, n);
            }
            Edit::Double(i) => segs.insert(i.clamp(1, last.max(1)), String::new()),
        }
    }
    segs.join("/")
}

const FILE_PREFIXES: [&str; 8] = [
    "file://",
    "file:",
    "file://localhost",
    "FILE://",
    "File:",
    "file://LocalHost",
    "fIlE://LOCALHOST",
    "",
];

fn rel_key() -> impl Strategy<Value = String> {
    ("[a-z]{1,6}", 0u32..100).prop_map(|(v, n)| format!("data/p={v}/part-{n:05}.parquet"))
}

/// An Iceberg table whose only snapshot's manifest names `spelled` (and one
/// plainly spelled file); the listing holds the plain key of `spelled`, the
/// plain file and an orphan.
fn iceberg_run(plain: &str, spelled: &str) -> Result<Run, Error> {
    iceberg_run_mapped(plain, spelled, vec![])
}

fn iceberg_run_mapped(
    plain: &str,
    spelled: &str,
    location_map: Vec<PathMapping>,
) -> Result<Run, Error> {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, vec![(1, 0, "data/other.parquet".to_owned())])],
        1,
        UUID,
        OLD,
    );
    let m = avro::manifest(
        1,
        &[
            (1, 0, spelled.to_owned()),
            (1, 0, format!("{LOC}/data/other.parquet")),
        ],
    );
    let m_uri = format!("{LOC}/metadata/m-1.avro");
    let l = avro::manifest_list(1, &[(m_uri.clone(), m.len() as u64, 0)]);
    o.extra.insert(m_uri, (m, OLD));
    o.extra
        .insert(format!("{LOC}/metadata/snap-1.avro"), (l, OLD));
    o.extra
        .insert(format!("{LOC}/{plain}"), (b"parquet".to_vec(), OLD));
    o.extra
        .insert(format!("{LOC}/data/orphan.parquet"), (b"x".to_vec(), OLD));
    // The earlier metadata file of `metadata-log`, so every reference is listed.
    o.extra.insert(
        format!("{LOC}/metadata/00000-x.metadata.json"),
        (b"{}".to_vec(), OLD),
    );
    let mut cfg = SessionConfig::new(LOC, &meta, NOW, RETENTION);
    cfg.location_map = location_map;
    run_native(cfg, &o)
}

const DELTA_LOC: &str = "file:///lakesweep-fixtures/synthetic/delta/t";
const PROTOCOL: &str = r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;
const METADATA: &str = r#"{"metaData":{"id":"t-1","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":[],"configuration":{}}}"#;

/// A Delta table whose only commit adds `path` (as written in the log) and
/// one plain file; the listing holds the plain key, the plain file and an orphan.
fn delta_run(plain: &str, path: &str) -> Result<Run, Error> {
    let add = |p: &str| {
        serde_json::json!({"add": {"path": p, "size": 7, "modificationTime": 1,
                                   "dataChange": true, "partitionValues": {}}})
        .to_string()
    };
    let log = format!(
        "{PROTOCOL}\n{METADATA}\n{}\n{}\n",
        add(path),
        add("other.parquet")
    );
    let mut o = HostOptions::synthetic();
    o.extra.insert(
        format!("{DELTA_LOC}/_delta_log/{:020}.json", 0),
        (log.into_bytes(), OLD),
    );
    for k in [plain, "other.parquet", "orphan.parquet"] {
        o.extra
            .insert(format!("{DELTA_LOC}/{k}"), (b"parquet".to_vec(), OLD));
    }
    let mut cfg = SessionConfig::new(DELTA_LOC, "", NOW, 7 * DAY);
    cfg.format = TableFormat::Delta;
    run_native(cfg, &o)
}

/// The plain key is referenced, only the orphan goes, nothing is reported
/// missing and nothing is called external.
fn assert_kept(run: &Run, plain: &str, spelled: &str) {
    let v = run.verdicts();
    assert_eq!(
        v[plain].verdict,
        Verdict::Referenced,
        "{spelled}: {:?}",
        v[plain]
    );
    let plan = run.plan();
    let deleted: Vec<&str> = plan.delete.iter().map(|d| d.key.as_str()).collect();
    assert!(
        deleted == ["data/orphan.parquet"] || deleted == ["orphan.parquet"],
        "{spelled}: {deleted:?}"
    );
    assert_eq!(plan.summary.referenced_not_listed, 0, "{spelled}");
    assert_eq!(plan.summary.external_references, 0, "{spelled}");
    assert!(
        !plan
            .warnings
            .iter()
            .any(|w| w.contains("not in the listing") || w.contains("external")),
        "{spelled}: {:?}",
        plan.warnings
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Iceberg: every spelling of an absolute local path keeps the plain key.
    #[test]
    fn every_local_spelling_in_a_manifest_keeps_the_plain_key(
        rel in rel_key(), es in edits(), prefix in 0usize..FILE_PREFIXES.len()
    ) {
        let abs = format!("{}/{rel}", LOC.trim_start_matches("file://"));
        let spelled = format!("{}/{}", FILE_PREFIXES[prefix], spell(&abs[1..], &es));
        let run = iceberg_run(&rel, &spelled).unwrap();
        assert_kept(&run, &rel, &spelled);
    }

    /// Under a location mapping (a table copied from a bucket), the mapping
    /// applies to the resolved spelling: `s3a://old/x/../db/t/k` keeps `k`.
    #[test]
    fn spellings_under_a_location_mapping_keep_the_mapped_key(
        rel in rel_key(), es in edits(),
        scheme in prop_oneof![Just("s3"), Just("S3"), Just("s3a"), Just("S3N")]
    ) {
        let spelled = format!("{scheme}://old-bucket/{}", spell(&format!("db/t/{rel}"), &es));
        let maps = vec![PathMapping { from: "s3://old-bucket/db/t".into(), to: LOC.into() }];
        let run = iceberg_run_mapped(&rel, &spelled, maps).unwrap();
        assert_kept(&run, &rel, &spelled);
    }

    /// Delta: absolute spellings and relative ones (`./x`, `y/../x`, `../t/x`).
    #[test]
    fn every_spelling_in_a_delta_add_keeps_the_plain_key(
        name in "[a-z]{1,6}", n in 0u32..100, es in edits(),
        prefix in 0usize..FILE_PREFIXES.len(), form in 0u8..3
    ) {
        let plain = format!("p={name}/part-{n:05}.parquet");
        let spelled = match form {
            0 => {
                let abs = format!("{}/{plain}", DELTA_LOC.trim_start_matches("file://"));
                format!("{}/{}", FILE_PREFIXES[prefix], spell(&abs[1..], &es))
            }
            1 => spell(&plain, &es),
            _ => format!("../t/{}", spell(&plain, &es)),
        };
        let run = delta_run(&plain, &spelled).unwrap();
        assert_kept(&run, &plain, &spelled);
    }

    /// Object stores: the store keeps `a//b` and `a/./b` as keys of their
    /// own, readers on Hadoop or pyarrow resolve them; both are kept.
    #[test]
    fn object_store_spellings_keep_the_plain_and_the_literal_key(
        rel in rel_key(), es in edits(),
        scheme in prop_oneof![Just("s3"), Just("S3"), Just("s3a"), Just("S3N"), Just("s3n")]
    ) {
        let loc = TableLocation::parse("s3://bucket/db/t").unwrap();
        let literal = spell(&format!("db/t/{rel}"), &es);
        let spelled = format!("{scheme}://bucket/{literal}");
        let keys: BTreeSet<String> = spellings(&CanonicalUri::parse(&spelled).unwrap())
            .iter()
            .filter_map(|c| loc.relative(c).map(str::to_owned))
            .collect();
        prop_assert!(keys.contains(&rel), "{spelled}: {keys:?}");
        if let Some(lit) = literal.strip_prefix("db/t/") {
            prop_assert!(keys.contains(lit), "{spelled}: {keys:?}");
        }
        // Nothing but the plain key and the forms of the literal one.
        prop_assert!(keys.len() <= 4, "{spelled}: {keys:?}");
    }
}

#[test]
fn a_dot_dot_above_the_root_is_kept_literally_and_never_resolved() {
    let loc = TableLocation::parse("s3://bucket/db/t").unwrap();
    let c = CanonicalUri::parse("s3://bucket/db/t/../../../x.parquet").unwrap();
    let keys: Vec<String> = spellings(&c)
        .iter()
        .filter_map(|c| loc.relative(c).map(str::to_owned))
        .collect();
    assert_eq!(keys, ["../../../x.parquet"]);
    assert!(spellings(&c).iter().all(|c| c.path != "/x.parquet"));
}

#[test]
fn an_ambiguous_manifest_path_is_refused() {
    // `metadata//m.avro` is one key to S3 and another to Hadoop readers: which
    // manifest to walk would be a guess. Local paths resolve one way.
    let mut o = HostOptions::synthetic();
    let meta = write_table(&mut o.extra, &[(1, vec![])], 1, UUID, OLD);
    let m = avro::manifest(1, &[]);
    let l = avro::manifest_list(
        1,
        &[(format!("{LOC}/metadata/x//../m-1.avro"), m.len() as u64, 0)],
    );
    o.extra
        .insert(format!("{LOC}/metadata/snap-1.avro"), (l, OLD));
    let e = run_native(SessionConfig::new(LOC, &meta, NOW, RETENTION), &o).expect_err("refused");
    assert!(
        matches!(&e, Error::Malformed { detail, .. } if detail.contains("ambiguous")),
        "{e}"
    );
}

#[test]
fn keys_with_control_characters_are_kept_with_their_own_verdict() {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, vec![(1, 0, "data/a.parquet".to_owned())])],
        1,
        UUID,
        OLD,
    );
    let odd = [
        "data/x\n.parquet",
        "data/x\r.parquet",
        "data/\tx.parquet",
        "data/x\u{1}.parquet",
        "data/x\u{7f}.parquet",
        "data/x\u{9b}.parquet",
        "data/x/../a.parquet",
        "data/./a.parquet",
    ];
    for k in odd {
        o.extra.insert(format!("{LOC}/{k}"), (b"x".to_vec(), OLD));
    }
    o.extra
        .insert(format!("{LOC}/data/orphan.parquet"), (b"x".to_vec(), OLD));
    let run = run_native(SessionConfig::new(LOC, &meta, NOW, RETENTION), &o).unwrap();
    let v = run.verdicts();
    for k in odd {
        assert_eq!(v[k].verdict, Verdict::Unaddressable, "{k:?}");
        assert_eq!(Verdict::Unaddressable.as_str(), "unaddressable");
    }
    assert!(v["data/x\n.parquet"]
        .detail
        .contains("key holds control characters"));
    let plan = run.plan();
    assert_eq!(
        plan.delete
            .iter()
            .map(|d| d.key.as_str())
            .collect::<Vec<_>>(),
        ["data/orphan.parquet"]
    );
    assert_eq!(
        plan.summary.verdicts["unaddressable"].count,
        odd.len() as u64
    );
}

/// Folder markers and trailing-slash twins are their own objects: the
/// marker is kept with its own verdict, the twin file is judged as a file,
/// and a key with `//` is a candidate of its own, exactly as listed.
#[test]
fn folder_markers_and_slash_twins_are_separate_keys() {
    let mut o = HostOptions::synthetic();
    let meta = write_table(
        &mut o.extra,
        &[(1, vec![(1, 0, "data/twin".to_owned())])],
        1,
        UUID,
        OLD,
    );
    for (k, bytes) in [
        ("data/", &b""[..]),
        ("data/sub/", b""),
        ("data/twin/", b""),
        ("data/old/", b"not empty"),
        ("data//double.parquet", b"x"),
        ("data/orphan", b"x"),
    ] {
        o.extra.insert(format!("{LOC}/{k}"), (bytes.to_vec(), OLD));
    }
    let run = run_native(SessionConfig::new(LOC, &meta, NOW, RETENTION), &o).unwrap();
    let v = run.verdicts();
    for k in ["data/", "data/sub/", "data/twin/", "data/old/"] {
        assert_eq!(v[k].verdict, Verdict::FolderMarker, "{k}");
        assert!(v[k].detail.contains("folder marker"), "{}", v[k].detail);
    }
    assert_eq!(Verdict::FolderMarker.as_str(), "folder-marker");
    assert_eq!(v["data/twin"].verdict, Verdict::Referenced);
    let plan = run.plan();
    let mut delete: Vec<&str> = plan.delete.iter().map(|d| d.key.as_str()).collect();
    delete.sort();
    assert_eq!(delete, ["data//double.parquet", "data/orphan"]);
    assert_eq!(plan.summary.verdicts["folder-marker"].count, 4);
}

#[test]
fn cycles_in_the_metadata_graph_are_refused() {
    let list_uri = format!("{LOC}/metadata/snap-1.avro");
    let m_uri = format!("{LOC}/metadata/m-1.avro");
    let cases: Vec<(&str, String, Vec<u8>)> = vec![
        (
            "manifest list naming itself as a manifest",
            list_uri.clone(),
            avro::manifest_list(1, &[(list_uri.clone(), 1, 0)]),
        ),
        (
            "manifest naming the manifest list as a data file",
            m_uri.clone(),
            avro::manifest(1, &[(1, 0, list_uri.clone())]),
        ),
        (
            "manifest naming itself as a data file",
            m_uri.clone(),
            avro::manifest(1, &[(1, 0, m_uri.clone())]),
        ),
        (
            "manifest naming the metadata file as a data file",
            m_uri.clone(),
            avro::manifest(
                1,
                &[(1, 0, format!("{LOC}/metadata/00001-x.metadata.json"))],
            ),
        ),
    ];
    for (what, uri, bytes) in cases {
        let mut o = HostOptions::synthetic();
        let meta = write_table(
            &mut o.extra,
            &[(1, vec![(1, 0, "data/a.parquet".to_owned())])],
            1,
            UUID,
            OLD,
        );
        // Keep the manifest list's recorded length true to the new manifest.
        if uri == m_uri {
            let l = avro::manifest_list(1, &[(m_uri.clone(), bytes.len() as u64, 0)]);
            o.extra.insert(list_uri.clone(), (l, OLD));
        }
        o.extra.insert(uri, (bytes, OLD));
        for shuffle in [0, 1] {
            o.shuffle = shuffle;
            let e = run_native(SessionConfig::new(LOC, &meta, NOW, RETENTION), &o)
                .err()
                .unwrap_or_else(|| panic!("{what}: accepted"));
            assert!(
                matches!(&e, Error::Malformed { detail, .. } if detail.contains("cycle in the metadata graph")),
                "{what}: {e}"
            );
        }
    }
}

// --- a deltalake-written table, a commit written by hand ---------------------

/// Runs `tests/py/delta_dot_segments.py`; a missing python or deltalake FAILS.
fn py(mode: &str, root: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/delta_dot_segments.py");
    let o = Command::new(python())
        .arg(script)
        .arg(mode)
        .arg(root)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{} not runnable ({e}): this test needs python3 with deltalake and pyarrow (scripts/test.sh installs them; LAKESWEEP_PYTHON picks another interpreter)",
                python()
            )
        });
    assert!(
        o.status.success(),
        "delta_dot_segments.py {mode}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

struct Scratch(PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_deltalake_table_with_dot_segment_adds_keeps_those_files() {
    let root = std::env::temp_dir().join(format!(
        "lakesweep-dots-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&root).unwrap();
    let _guard = Scratch(root.clone());
    let written = py("write", &root);
    let now = written["now_ms"].as_i64().unwrap() + 30 * DAY;
    // The readers: the log holds both adds at version 1, and each URI opens
    // the file under the table.
    let seen = py("read", &root);
    assert_eq!(seen["version"], 1);
    let r = root.display();
    for p in [
        format!("file://{r}/x/../t/p=v/dotdot.parquet"),
        format!("file://{r}/t/./p=w/dot.parquet"),
    ] {
        assert_eq!(seen["rows"][&p], 1, "{p}: {seen}");
    }

    let location = format!("file://{r}/t");
    let mut opts = HostOptions::synthetic();
    opts.default_mtime = Some(now - 30 * DAY);
    std::fs::write(root.join("t/p=v/orphan.parquet"), b"x").unwrap();
    let mut cfg = SessionConfig::new(&location, "", now, 7 * DAY);
    cfg.format = TableFormat::Delta;
    let run = run_native(cfg, &opts).unwrap();
    let v = run.verdicts();
    for k in ["p=v/dotdot.parquet", "p=w/dot.parquet"] {
        assert_eq!(v[k].verdict, Verdict::Referenced, "{k}: {:?}", v[k]);
        assert!(
            v[k].detail.contains("live file of Delta version 1"),
            "{:?}",
            v[k]
        );
    }
    let plan = run.plan();
    assert_eq!(
        plan.delete
            .iter()
            .map(|d| d.key.as_str())
            .collect::<Vec<_>>(),
        ["p=v/orphan.parquet"]
    );
    assert_eq!(plan.summary.referenced_not_listed, 0);
    assert_eq!(plan.summary.external_references, 0);
    assert!(
        !plan
            .warnings
            .iter()
            .any(|w| w.contains("external") || w.contains("not in the listing")),
        "{:?}",
        plan.warnings
    );
}
