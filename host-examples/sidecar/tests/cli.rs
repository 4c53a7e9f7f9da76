//! End-to-end: the `lakesweep` binary, loading the real component, plans the
//! committed demo table staged with its recorded modification times.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// Stages the fixtures under a scratch root with the generator's mtimes.
fn stage(name: &str) -> (PathBuf, serde_json::Value) {
    let root = std::env::temp_dir().join(format!("lakesweep-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    copy_dir(
        &repo().join("tests/fixtures/generated/warehouse"),
        &root.join("warehouse"),
    );
    let expect: serde_json::Value = serde_json::from_slice(
        &std::fs::read(repo().join("tests/fixtures/generated/expect.json")).unwrap(),
    )
    .unwrap();
    let t = &expect["events"];
    let tdir = root.join(
        t["location"]
            .as_str()
            .unwrap()
            .trim_start_matches("file:///lakesweep-fixtures/"),
    );
    for (rel, ms) in t["mtimes"].as_object().unwrap() {
        let f = std::fs::File::options()
            .write(true)
            .open(tdir.join(rel))
            .unwrap();
        f.set_modified(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.as_u64().unwrap()),
        )
        .unwrap();
    }
    (root, t.clone())
}

fn plan(root: &Path, t: &serde_json::Value, map: bool, extra: &[&str]) -> std::process::Output {
    let meta = t["metadata_location"].as_str().unwrap().replace(
        "file:///lakesweep-fixtures",
        &format!("file://{}", root.display()),
    );
    let mut c = Command::new(env!("CARGO_BIN_EXE_lakesweep"));
    c.arg("plan")
        .arg(root.join("warehouse/demo/events"))
        .args(["--metadata", &meta]);
    c.args([
        "--now",
        &t["now_ms"].to_string(),
        "--older-than",
        "3d",
        "--json",
    ]);
    c.args([
        "--wasm",
        repo().join("target/lakesweep.wasm").to_str().unwrap(),
    ]);
    if map {
        c.args([
            "--location-map",
            &format!("file:///lakesweep-fixtures=file://{}", root.display()),
        ]);
    }
    c.args(extra);
    c.output().unwrap()
}

#[test]
fn plan_json_lists_exactly_the_old_planted_orphans() {
    let (root, t) = stage("ok");
    let out = plan(&root, &t, true, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut want: Vec<String> = t["planted"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, v)| v == &"candidate")
        .map(|(k, _)| k.clone())
        .collect();
    want.sort();
    let got: Vec<String> = v["delete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, want);
    let keep = v["keep"].as_array().unwrap();
    assert_eq!(
        keep.len() + got.len(),
        t["mtimes"].as_object().unwrap().len()
    );
    assert!(keep
        .iter()
        .any(|k| k["key"] == "data/orphan-fresh.parquet" && k["reason"] == "young"));
    assert_eq!(v["digest"].as_str().unwrap().len(), 64);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn relocated_table_without_a_mapping_is_refused() {
    let (root, t) = stage("reloc");
    let out = plan(&root, &t, false, &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused, nothing deleted"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_missing_manifest_list_refuses_the_plan() {
    let (root, t) = stage("missing");
    let md = root.join("warehouse/demo/events/metadata");
    let list = std::fs::read_dir(&md)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("snap-")
        })
        .unwrap();
    std::fs::remove_file(&list).unwrap();
    let out = plan(&root, &t, true, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("missing-metadata")
            || String::from_utf8_lossy(&out.stderr).contains("MissingMetadata")
    );
    let _ = std::fs::remove_dir_all(&root);
}
