//! End-to-end on the local file system: the `lakesweep` binary, loading the
//! real component, plans, applies and re-plans staged copies of the
//! committed pyiceberg tables, and refuses every unsafe situation without
//! deleting anything.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::*;

const DAY: i64 = 86_400_000;

#[test]
fn plan_json_lists_exactly_the_old_planted_orphans() {
    let s = Stage::new("ok");
    let v = json(&s.plan(&["--json"]));
    assert_eq!(deletes(&v), planted(&s.t, &["candidate"]));
    // Kept with a reason: every planted object that stays; the rest of the
    // listing is referenced, and counted.
    let keep = v["report"]["keep"].as_array().unwrap();
    let referenced = v["summary"]["verdicts"]["referenced"]["count"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(
        keep.len() + deletes(&v).len() + referenced,
        s.t["mtimes"].as_object().unwrap().len()
    );
    for k in keep {
        let want = s.t["planted"].get(k["key"].as_str().unwrap());
        assert_eq!(Some(&k["reason"]), want, "{k}");
    }
    assert_eq!(v["digest"].as_str().unwrap().len(), 64);
    assert_eq!(v["summary"]["referencedNotListed"], 0);
}

/// The staged table listed by names (the default) and with a stat of
/// every file: the same deletes under the same seal and the same report;
/// by names, every referenced file is settled without its size.
#[test]
fn a_plan_by_names_is_the_plan_by_stat_less_the_referenced_bytes() {
    let s = Stage::new("names");
    let by_name = json(&s.plan(&["--json"]));
    // The stage's plan, with the listing set as `listing`.
    let plan_listed = |listing: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lakesweep"))
            .arg("plan")
            .arg(s.table())
            .args(s.catalog())
            .args([
                "--location-map",
                &s.map(),
                "--now",
                &s.t["now_ms"].to_string(),
            ])
            .args(["--older-than", "3d", "--json"])
            .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
            .env("LAKESWEEP_LOCAL_LISTING", listing)
            .output()
            .unwrap()
    };
    let o = plan_listed("stat");
    assert!(o.status.success(), "{}", out_text(&o));
    let by_stat = json(&o);
    for k in ["delete", "digest", "tokens", "warnings", "report"] {
        assert_eq!(by_name[k], by_stat[k], "{k}");
    }
    let (n, st) = (&by_name["summary"], &by_stat["summary"]);
    let referenced = &st["verdicts"]["referenced"];
    assert!(referenced["count"].as_u64().unwrap() > 5);
    assert!(referenced["bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        n["listedByName"], referenced["count"],
        "every referenced file by name"
    );
    assert_eq!(n["verdicts"]["referenced"]["bytes"], 0);
    assert_eq!(n["listed"]["count"], st["listed"]["count"]);
    assert_eq!(
        n["listed"]["bytes"].as_u64().unwrap() + referenced["bytes"].as_u64().unwrap(),
        st["listed"]["bytes"].as_u64().unwrap()
    );
    assert!(st.get("listedByName").is_none());
    let human = s.plan(&[]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("by name"), "{text}");
    // A value the host does not know is refused, with nothing planned.
    let o = plan_listed("fast");
    assert!(!o.status.success());
    assert!(
        out_text(&o).contains("LAKESWEEP_LOCAL_LISTING=fast"),
        "{}",
        out_text(&o)
    );
}

#[test]
fn human_report_says_what_and_why() {
    let s = Stage::new("human");
    let o = s.plan(&[]);
    assert!(o.status.success(), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("would delete (3):"), "{text}");
    assert!(
        text.contains("data/orphan-fresh.parquet  [young]"),
        "{text}"
    );
    assert!(text.contains("sql catalog"), "{text}");
    assert!(text.contains("nothing was deleted"), "{text}");
}

#[test]
fn plan_apply_plan_deletes_exactly_the_plan_and_the_table_still_reads() {
    let s = Stage::new("apply");
    let plan_path = s.root.join("plan.json");
    let v = json(&s.plan(&["--json", "--out", plan_path.to_str().unwrap()]));
    let planned = deletes(&v);
    assert_eq!(planned.len(), 3);
    let before = s.files();

    // A dry run checks and deletes nothing.
    let args = s.apply_args(&plan_path, true);
    let mut dry = args.clone();
    dry.push("--dry-run".into());
    let o = lakesweep(&dry);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(s.files(), before);
    // It lists what it would delete and writes no receipt into the real
    // receipts file.
    let listed: BTreeSet<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            l.strip_prefix("would delete ")
                .filter(|k| !k.contains(", "))
        })
        .map(str::to_owned)
        .collect();
    assert_eq!(listed, planned, "{}", out_text(&o));
    let receipts_file = format!("{}.receipts.jsonl", plan_path.display());
    assert!(
        !std::path::Path::new(&receipts_file).exists(),
        "a dry run wrote {receipts_file}"
    );
    // Asked for receipts, it writes would-delete lines there.
    let dry_receipts = s.root.join("dry.receipts.jsonl");
    dry.extend(["--receipts".into(), dry_receipts.display().to_string()]);
    assert!(lakesweep(&dry).status.success());
    let dry_keys: BTreeSet<String> = std::fs::read_to_string(&dry_receipts)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["result"] == "would-delete")
        .map(|r| r["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(dry_keys, planned);

    let mut with_json = args.clone();
    with_json.push("--json".into());
    let done = json(&lakesweep(&with_json));
    let after = s.files();
    let gone: BTreeSet<String> = before.difference(&after).cloned().collect();
    assert_eq!(gone, planned, "apply deleted exactly the sealed keys");
    // What it did, in keys and bytes.
    let planned_bytes: u64 = v["delete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["size"].as_u64().unwrap())
        .sum();
    assert_eq!(done["deleted"]["count"], 3, "{done}");
    assert_eq!(done["deleted"]["bytes"], planned_bytes, "{done}");
    let results: BTreeSet<(String, String)> = done["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap().to_owned(),
                k["result"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        results,
        planned
            .iter()
            .map(|k| (k.clone(), "deleted".to_owned()))
            .collect()
    );

    // Receipts: one per sealed key, all deleted.
    let receipts =
        std::fs::read_to_string(format!("{}.receipts.jsonl", plan_path.display())).unwrap();
    // The real run's receipts only: the dry runs wrote none there.
    let mut keys = BTreeSet::new();
    for line in receipts.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let k = r["key"].as_str().unwrap().to_owned();
        match r["result"].as_str().unwrap() {
            "deleted" => keys.insert(k),
            other => panic!("{other}: {r}"),
        };
    }
    assert_eq!(keys, planned);

    // Again: nothing left to delete, and every referenced file is still there.
    let v2 = json(&s.plan(&["--json"]));
    assert!(deletes(&v2).is_empty(), "{v2}");
    assert_eq!(v2["summary"]["referencedNotListed"], 0);
    assert_eq!(
        v2["summary"]["referencedKeys"],
        v["summary"]["referencedKeys"]
    );

    // Applying the same plan twice deletes nothing more; --verbose says so per key.
    let mut verbose = args.clone();
    verbose.push("--verbose".into());
    let o = lakesweep(&verbose);
    assert!(o.status.success(), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("deleted 0 (0 B), already absent 3"), "{text}");
    for k in &planned {
        assert!(
            text.lines()
                .any(|l| l.starts_with("already-absent") && l.contains(k.as_str())),
            "{k}: {text}"
        );
    }
    assert_eq!(s.files(), after);
}

#[test]
fn a_commit_between_plan_and_apply_makes_apply_refuse() {
    let s = Stage::new("commit");
    let plan_path = s.root.join("plan.json");
    let o = s.plan(&["--out", plan_path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    let before = s.files();
    // A metadata-only commit: new metadata file, catalog pointer swung.
    let md = s.table().join("metadata");
    let cur = s.t["metadata_location"].as_str().unwrap();
    let cur_name = cur.rsplit('/').next().unwrap();
    std::fs::copy(md.join(cur_name), md.join("00012-commit.metadata.json")).unwrap();
    let db = rusqlite::Connection::open(s.root.join("catalog.db")).unwrap();
    db.execute(
        "UPDATE iceberg_tables SET metadata_location = ?1 WHERE table_name = 'events'",
        [cur.replace(cur_name, "00012-commit.metadata.json")],
    )
    .unwrap();
    let after_commit = s.files();
    let args = s.apply_args(&plan_path, true);
    let o = lakesweep(&args);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("table generation: the pointer names"),
        "{}",
        out_text(&o)
    );
    assert_eq!(s.files(), after_commit);
    assert!(after_commit.is_superset(&before));
}

#[test]
fn an_object_rewritten_after_planning_is_skipped() {
    let s = Stage::new("rewritten");
    let plan_path = s.root.join("plan.json");
    let o = s.plan(&["--out", plan_path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    std::fs::write(
        s.table().join("data/orphan-old-1.parquet"),
        b"rewritten by someone",
    )
    .unwrap();
    let args = s.apply_args(&plan_path, true);
    let o = lakesweep(&args);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(s.table().join("data/orphan-old-1.parquet").exists());
    let receipts =
        std::fs::read_to_string(format!("{}.receipts.jsonl", plan_path.display())).unwrap();
    assert!(receipts.contains("skipped-changed"));
}

#[test]
fn a_tampered_plan_is_refused() {
    let s = Stage::new("tamper");
    let plan_path = s.root.join("plan.json");
    let o = s.plan(&["--out", plan_path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    let text = std::fs::read_to_string(&plan_path).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["delete"][0]["key"] = "data/00000-0-referenced.parquet".into();
    std::fs::write(&plan_path, v.to_string()).unwrap();
    let before = s.files();
    let args = s.apply_args(&plan_path, true);
    let o = lakesweep(&args);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert_eq!(s.files(), before);
}

#[test]
fn a_relocated_table_is_refused_without_a_mapping_and_planned_with_one() {
    let s = Stage::new("reloc");
    let meta = s.t["metadata_location"].as_str().unwrap().replace(
        "file:///lakesweep-fixtures",
        &format!("file://{}", s.root.display()),
    );
    let base = [
        "plan".to_owned(),
        s.table().display().to_string(),
        "--metadata".into(),
        meta,
        "--now".into(),
        s.t["now_ms"].to_string(),
        "--json".into(),
    ];
    let o = lakesweep(&base);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refused, nothing deleted"), "{err}");
    // The reason by its name, and the exact option that plans it.
    assert!(
        err.contains("unsafe to proceed (location-mismatch)"),
        "{err}"
    );
    assert!(!err.contains("UnsafeReason"), "{err}");
    assert!(
        err.contains(&format!(
            "--location-map file:///lakesweep-fixtures/warehouse/demo/events=file://{}",
            s.table().display()
        )),
        "{err}"
    );
    let mut mapped = base.to_vec();
    mapped.extend(["--location-map".into(), s.map()]);
    assert_eq!(
        deletes(&json(&lakesweep(&mapped))),
        planted(&s.t, &["candidate"])
    );
}

#[test]
fn broken_metadata_or_listing_refuses_the_plan() {
    let s = Stage::new("broken");
    let md = s.table().join("metadata");
    let names: Vec<std::path::PathBuf> = std::fs::read_dir(&md)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let find = |prefix: &str, suffix: &str| {
        names
            .iter()
            .find(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with(prefix) && n.ends_with(suffix)
            })
            .unwrap()
            .clone()
    };
    let before = s.files();

    // A truncated manifest.
    let m = find("", "-m0.avro");
    let bytes = std::fs::read(&m).unwrap();
    std::fs::write(&m, &bytes[..bytes.len() / 2]).unwrap();
    let o = s.plan(&["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    std::fs::write(&m, &bytes).unwrap();

    // A missing manifest list.
    let l = find("snap-", ".avro");
    let list = std::fs::read(&l).unwrap();
    std::fs::remove_file(&l).unwrap();
    let o = s.plan(&["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unsafe to proceed (missing-metadata)"));
    std::fs::write(&l, list).unwrap();

    // A name this host cannot represent (not UTF-8): no table can reference
    // it, so it is kept and reported; it does not stop the plan.
    use std::os::unix::ffi::OsStrExt;
    let bad = s
        .table()
        .join("data")
        .join(std::ffi::OsStr::from_bytes(b"bad-\xff-name"));
    std::fs::write(&bad, b"x").unwrap();
    let o = s.plan(&["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let unrep = v["report"]["unrepresentable"].as_array().unwrap();
    assert_eq!(unrep.len(), 1, "{v}");
    assert!(
        unrep[0]
            .as_str()
            .unwrap()
            .ends_with("/data/bad-\u{fffd}-name"),
        "{v}"
    );
    assert!(!deletes(&v).iter().any(|k| k.contains("bad-")), "{v}");
    let o = s.plan(&[]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("names this host cannot represent (1;"),
        "{}",
        out_text(&o)
    );
    std::fs::remove_file(&bad).unwrap();

    // A listing that fails part-way (a symbolic link: never followed).
    let link = s.table().join("data").join("link");
    std::os::unix::fs::symlink("/", &link).unwrap();
    let o = s.plan(&["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("listing failed"),
        "{}",
        out_text(&o)
    );
    std::fs::remove_file(&link).unwrap();

    // A symbolic link in the table (deleting it could cut off live data).
    let link = s.table().join("data/linked");
    std::os::unix::fs::symlink(s.table().join("metadata"), &link).unwrap();
    let o = s.plan(&["--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("symbolic link"));
    std::fs::remove_file(&link).unwrap();
    assert_eq!(s.files(), before, "nothing was deleted");
}

#[test]
fn explain_says_why_for_one_key() {
    let s = Stage::new("explain");
    let run = |key: &str| {
        let mut args = vec![
            "explain".to_owned(),
            s.table().display().to_string(),
            key.into(),
        ];
        args.extend(s.catalog());
        args.extend([
            "--location-map".into(),
            s.map(),
            "--now".into(),
            s.t["now_ms"].to_string(),
        ]);
        lakesweep(&args)
    };
    let o = run("data/orphan-old-1.parquet");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("verdict           candidate"), "{text}");
    assert!(text.contains("deletable         yes"), "{text}");
    let o = run(&format!(
        "file://{}/data/orphan-fresh.parquet",
        s.table().display()
    ));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("verdict           young"), "{text}");
    let o = run("metadata/version-hint.text");
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
}

#[test]
fn compare_splits_against_another_tools_list() {
    let s = Stage::new("compare");
    let plan_path = s.root.join("plan.json");
    let o = s.plan(&["--out", plan_path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    let other = s.root.join("other.txt");
    std::fs::write(
        &other,
        format!(
            "{0}/data/orphan-old-1.parquet\n{0}/data/orphan-fresh.parquet\n/elsewhere/x.parquet\n",
            s.table().display()
        ),
    )
    .unwrap();
    let o = lakesweep(&[
        "compare",
        plan_path.to_str().unwrap(),
        other.to_str().unwrap(),
        "--json",
    ]);
    let v = json(&o);
    assert_eq!(v["both"], serde_json::json!(["data/orphan-old-1.parquet"]));
    assert_eq!(
        v["onlyTheirs"],
        serde_json::json!(["data/orphan-fresh.parquet"])
    );
    assert_eq!(v["onlyOurs"].as_array().unwrap().len(), 2);
    assert_eq!(v["outsideTable"].as_array().unwrap().len(), 1);
}

#[test]
fn expire_commits_through_version_hint_and_the_sweep_follows() {
    let s = Stage::new("hint");
    let cur = s.t["metadata_location"].as_str().unwrap();
    let cur_name = cur.rsplit('/').next().unwrap();
    let md = s.table().join("metadata");
    let hint = md.join("version-hint.text");
    // Expiry judged a week after the newest file of the staged table: every
    // snapshot is then past the default maxSnapshotAge (5 days).
    let expired_at = newest_mtime_ms(&s.table()) + 7 * DAY;
    let later = expired_at.to_string();
    let expire = |extra: &[&str]| {
        let mut a = vec![
            "expire".to_owned(),
            s.table().display().to_string(),
            "--location-map".into(),
            s.map(),
            "--now".into(),
            later.clone(),
            "--allow-future-now".into(),
            "--json".into(),
        ];
        a.extend(extra.iter().map(|x| x.to_string()));
        lakesweep(&a)
    };
    // A hint naming a NNNNN-uuid file, with no vN.metadata.json beside it:
    // the Hadoop catalog's rule finds no version, so nothing is planned.
    std::fs::write(&hint, cur_name).unwrap();
    let o = expire(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a version number"));

    // Hadoop-style names: v1 is the current version; the hint lags behind.
    std::fs::copy(md.join(cur_name), md.join("v1.metadata.json")).unwrap();
    std::fs::write(&hint, "1").unwrap();
    let v = json(&expire(&["--commit"]));
    let new_md = v["committed"].as_str().unwrap();
    assert!(new_md.ends_with("/metadata/v2.metadata.json"), "{new_md}");
    assert_eq!(std::fs::read_to_string(&hint).unwrap(), "2");
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(md.join("v2.metadata.json")).unwrap()).unwrap();
    assert!(
        doc["metadata-log"].as_array().unwrap().last().unwrap()["metadata-file"]
            .as_str()
            .unwrap()
            .ends_with("/metadata/v1.metadata.json")
    );
    // A writer committed v3 but did not update the hint: readers walk forward.
    let mut v3 = doc.clone();
    v3["metadata-log"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"timestamp-ms": 1, "metadata-file": new_md}));
    std::fs::write(md.join("v3.metadata.json"), v3.to_string()).unwrap();
    // Judged past the 3-day window of every file, those just written too
    // (and after the expiry's commit): only references keep v1 and v2.
    let judged = newest_mtime_ms(&s.table()).max(expired_at) + 4 * DAY;
    let plan = [
        "plan".to_owned(),
        s.table().display().to_string(),
        "--location-map".into(),
        s.map(),
        "--now".into(),
        judged.to_string(),
        "--json".into(),
    ];
    let p = json(&lakesweep(&plan));
    assert!(p["tokens"]["metadataLocation"]
        .as_str()
        .unwrap()
        .ends_with("/metadata/v3.metadata.json"));
    // The older document is referenced (by the metadata log): neither
    // deleted nor kept with another reason.
    let keep = p["report"]["keep"].as_array().unwrap();
    assert!(!keep.iter().any(|k| k["key"] == "metadata/v2.metadata.json"));
    assert!(!deletes(&p).iter().any(|k| k.starts_with("metadata/v")));
}

#[test]
fn apply_refuses_a_fixed_pointer_and_a_future_plan() {
    let s = Stage::new("applyrefuse");
    let plan_path = s.root.join("plan.json");
    let o = s.plan(&["--out", plan_path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    let before = s.files();
    let meta = s.t["metadata_location"].as_str().unwrap().to_owned();
    let o = lakesweep(&[
        "apply",
        plan_path.to_str().unwrap(),
        "--metadata",
        &meta,
        "--location-map",
        &s.map(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("live pointer"));
    // A plan judged in the future (a what-if run) is not applied. This is
    // the host's clock check itself, so "the future" is this machine's real
    // clock plus a month (far past the allowed skew): a time derived from
    // the fixture would fall behind the clock as the calendar moves.
    let future = s.root.join("future.json");
    let later = (clock_ms() + 30 * DAY).to_string();
    let o = s.plan(&["--now", &later, "--out", future.to_str().unwrap()]);
    assert!(o.status.success(), "{}", out_text(&o));
    let args = s.apply_args(&future, false);
    let o = lakesweep(&args);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("ahead of the host's clock"),
        "{}",
        out_text(&o)
    );
    assert_eq!(s.files(), before);
}

/// Quarantine before an expiry: `expire --commit` seals the expired
/// snapshots' chain into a bundle first; a bundle missing one layer (a
/// manifest copy) keeps the snapshot's files in quarantine (fault 7); a
/// complete one lets them pass the restore check; `restore --commit` brings
/// the snapshot back and the sweep then protects its files.
#[test]
fn expire_seals_a_bundle_fault_07_missing_layer_holds_quarantine_and_restore_brings_it_back() {
    let s = Stage::new("bundle");
    // Expiry judged a week after the newest file of the staged table: every
    // snapshot is past the default maxSnapshotAge (5 days); sweeps follow
    // day by day from there.
    let later = newest_mtime_ms(&s.table()) + 7 * DAY;
    let base = |cmd: &str, now: i64| {
        let mut a = vec![cmd.to_owned(), s.table().display().to_string()];
        a.extend(s.catalog());
        a.extend([
            "--location-map".into(),
            s.map(),
            "--now".into(),
            now.to_string(),
            "--allow-future-now".into(),
        ]);
        a
    };
    let mut e = base("expire", later);
    e.extend(["--commit".into(), "--json".into()]);
    let v = json(&lakesweep(&e));
    let expired: Vec<i64> = v["expire"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    assert!(!expired.is_empty());
    let bundle_uri = v["bundle"]
        .as_str()
        .expect("a bundle before the commit")
        .to_owned();
    assert!(v["committed"].is_string());
    let bundle_dir = PathBuf::from(
        bundle_uri
            .strip_prefix("file://")
            .unwrap()
            .strip_suffix("/bundle.json")
            .unwrap(),
    );
    let id = bundle_dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let bundle: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bundle_dir.join("bundle.json")).unwrap()).unwrap();
    assert_eq!(
        bundle["snapshotIds"].as_array().unwrap().len(),
        expired.len()
    );

    // Dry-run restore: the bundle walks completely.
    let mut r = base("restore", later);
    r.extend(["--bundle".into(), id.clone()]);
    let o = lakesweep(&r);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("is complete"));

    // Fault 7: one manifest copy goes missing from the bundle.
    let manifest = bundle["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["layer"] == "manifest")
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let copy = bundle_dir.join("copies").join(&manifest);
    let saved = std::fs::read(&copy).unwrap();
    std::fs::remove_file(&copy).unwrap();
    let sweep = |day: i64| {
        let mut a = base("sweep", later + day * DAY);
        a.push("--json".into());
        let o = lakesweep(&a);
        assert!(o.status.success(), "{}", out_text(&o));
        serde_json::json!({"objects": ledger_objects(&s.table().display().to_string())})
    };
    let mut l = serde_json::Value::Null;
    for day in 0..5 {
        l = sweep(day);
    }
    // Objects of the expired snapshots stay quarantined, and say why.
    let held: Vec<&String> = l["objects"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, o)| o["why"].as_str().unwrap_or("").contains("missing layer"))
        .map(|(k, _)| k)
        .collect();
    assert!(!held.is_empty(), "{l}");
    // (Planted orphans that no bundle names go their normal way.)
    let bundled: BTreeSet<&str> = bundle["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    for (k, o) in l["objects"].as_object().unwrap() {
        if bundled.contains(k.as_str()) {
            assert_eq!(o["state"], "QUARANTINED", "{k}");
            assert!(held.contains(&k), "{k}");
        }
    }
    let o = lakesweep(&r);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing layer"));

    // The copy comes back: the next run verifies them.
    std::fs::write(&copy, saved).unwrap();
    // A bundle whose document is gone cannot say what it protects: the run
    // stops, nothing is approved.
    let doc = bundle_dir.join("bundle.json");
    let doc_bytes = std::fs::read(&doc).unwrap();
    std::fs::remove_file(&doc).unwrap();
    let mut a = base("sweep", later + 5 * DAY);
    a.push("--json".into());
    let o = lakesweep(&a);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no bundle.json"));
    std::fs::write(&doc, doc_bytes).unwrap();
    // A fixed --metadata proves nothing about commits before approval.
    let mut fixed = vec!["sweep".to_owned(), s.table().display().to_string()];
    fixed.extend([
        "--metadata".into(),
        s.t["metadata_location"].as_str().unwrap().to_owned(),
        "--location-map".into(),
        s.map(),
    ]);
    let o = lakesweep(&fixed);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("live pointer"));
    let l = sweep(5);
    for k in &held {
        assert_eq!(l["objects"][k.as_str()]["state"], "RESTORE_VERIFIED", "{k}");
    }

    // Restore for real: the snapshots are back under restored/<id> tags,
    // and the next sweep protects their files.
    r.push("--commit".into());
    let o = lakesweep(&r);
    assert!(o.status.success(), "{}", out_text(&o));
    let l = sweep(6);
    for k in &held {
        assert_eq!(l["objects"][k.as_str()]["state"], "PROTECTED", "{k}");
    }
    let mut p = base("plan", later);
    p.retain(|a| a != "--allow-future-now");
    p.push("--json".into());
    let plan = json(&lakesweep(&p));
    for k in &held {
        assert!(!deletes(&plan).contains(k.as_str()), "{k}");
    }
}

#[test]
fn keys_with_control_characters_are_kept_and_printed_escaped() {
    let s = Stage::new("control");
    let old = s.t["now_ms"].as_u64().unwrap() - 10 * 86_400_000;
    let names = [
        "data/evil\nwould delete (9):.parquet",
        "data/tab\there\u{1b}[2J.parquet",
    ];
    for n in names {
        let f = std::fs::File::create(s.table().join(n)).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(old))
            .unwrap();
    }
    let o = s.plan(&[]);
    assert!(o.status.success(), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "data/evil\\nwould delete (9):.parquet  [unaddressable] key holds control characters"
        ),
        "{text}"
    );
    assert!(
        text.contains("data/tab\\there\\u{1b}[2J.parquet  [unaddressable]"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}') && !text.contains('\t'), "{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("would delete (9)")),
        "{text}"
    );
    // JSON carries the keys as they are.
    let v = json(&s.plan(&["--json"]));
    assert_eq!(deletes(&v), planted(&s.t, &["candidate"]));
    for n in names {
        let k = v["report"]["keep"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == n)
            .unwrap_or_else(|| panic!("{n:?} not kept"));
        assert_eq!(k["reason"], "unaddressable");
    }
}

/// The usual mistakes with the table argument get the command to type
/// instead: a metadata file or a Delta log entry given as the table, and a
/// Delta table planned as Iceberg. Nothing is read past the refusal.
#[test]
fn a_table_file_or_the_wrong_format_is_refused_with_what_to_type() {
    let s = Stage::new("mistakes");
    let cur = s.t["metadata_location"].as_str().unwrap();
    let md = s
        .table()
        .join("metadata")
        .join(cur.rsplit('/').next().unwrap());
    let o = lakesweep(&["plan", md.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is a metadata file, not a table")
            && err.contains(&format!(
                "lakesweep plan file://{} --metadata",
                s.table().display()
            )),
        "{err}"
    );

    let delta = repo().join("tests/fixtures/delta/events");
    let log_entry = delta.join("_delta_log/00000000000000000000.json");
    let o = lakesweep(&["plan", log_entry.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is inside a Delta log"),
        "{}",
        out_text(&o)
    );

    let o = lakesweep(&["plan", delta.to_str().unwrap(), "--format", "iceberg"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("_delta_log/` was found: this is a Delta table"),
        "{err}"
    );
}

/// The human report, `--json` and the plan file are one document seen
/// three ways on the Iceberg fixtures: `events` now and a year later when
/// every orphan goes, and `simple_v1`.
#[test]
fn report_json_and_plan_file_agree_on_every_key() {
    let s = Stage::new("agree");
    let file = s.root.join("agree.json");
    let out = file.to_str().unwrap().to_owned();
    let year_later = (s.t["now_ms"].as_i64().unwrap() + 365 * DAY).to_string();
    for extra in [vec![], vec!["--now", year_later.as_str()]] {
        let mut args = vec!["--out", out.as_str()];
        args.extend(extra.iter().copied());
        let human = s.plan(&args);
        args.push("--json");
        let json = s.plan(&args);
        let doc = one_document(&human, &json, &file, &s.files());
        // `apply` takes the document as it is: nothing retyped but the pointer.
        assert_eq!(doc["schema"], "lakesweep.plan.v3");
        let text = String::from_utf8_lossy(&human.stdout);
        assert!(
            text.contains(&format!("lakesweep apply {out}")),
            "the next command: {text}"
        );
    }
    // The other Iceberg fixture (format v1), staged with its recorded times.
    let t = expect()["simple_v1"].clone();
    let root = s.root.join("warehouse/demo/simple_v1");
    for (rel, ms) in t["mtimes"].as_object().unwrap() {
        let f = std::fs::File::options()
            .write(true)
            .open(root.join(rel))
            .unwrap();
        f.set_modified(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.as_u64().unwrap()),
        )
        .unwrap();
    }
    let now = t["now_ms"].to_string();
    let map = s.map();
    let catalog = format!("sqlite:{}", s.root.join("catalog.db").display());
    let root_s = root.display().to_string();
    let mut args = vec![
        "plan",
        &root_s,
        "--catalog",
        &catalog,
        "--table",
        "demo.simple_v1",
        "--location-map",
        &map,
        "--now",
        &now,
        "--out",
        &out,
    ];
    let human = lakesweep(&args);
    args.push("--json");
    let json = lakesweep(&args);
    one_document(&human, &json, &file, &files_under(&root));
}

/// The plan records how it was made (its pointer source, location maps and
/// context files, sealed): `apply PLAN.json` needs nothing retyped, another
/// pointer source (a stale copy of the catalog) is refused, and an edited
/// origin fails the plan's digest.
#[test]
fn apply_reads_the_sources_the_plan_was_made_from() {
    let s = Stage::new("origin");
    let plan_path = s.root.join("plan.json");
    let out = plan_path.to_str().unwrap().to_owned();
    let v = json(&s.plan(&["--out", &out, "--json"]));
    let planned = deletes(&v);
    assert_eq!(planned.len(), 3);
    let origin: serde_json::Value =
        serde_json::from_str(v["origin"].as_str().expect("the plan records its origin")).unwrap();
    assert_eq!(origin["schema"], "lakesweep.origin.v1");
    assert_eq!(origin["pointer"]["namespace"], "demo", "{origin}");
    assert_eq!(origin["pointer"]["name"], "events", "{origin}");
    let before = s.files();

    // A copy of the catalog (stale the moment the table commits) is another
    // source: refused, nothing deleted.
    let copy = s.root.join("copy.db");
    std::fs::copy(s.root.join("catalog.db"), &copy).unwrap();
    let o = lakesweep(&[
        "apply",
        &out,
        "--catalog",
        &format!("sqlite:{}", copy.display()),
        "--table",
        "demo.events",
        "--allow-future-now",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("made from other sources"),
        "{}",
        out_text(&o)
    );
    // An edited origin (pointing apply at the copy) fails the digest.
    let text = std::fs::read_to_string(&plan_path).unwrap();
    let edited = text.replace(
        &s.root.join("catalog.db").display().to_string(),
        &copy.display().to_string(),
    );
    assert_ne!(edited, text);
    let edited_path = s.root.join("edited.json");
    std::fs::write(&edited_path, edited).unwrap();
    let o = lakesweep(&["apply", edited_path.to_str().unwrap(), "--allow-future-now"]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("digest"),
        "{}",
        out_text(&o)
    );
    assert_eq!(s.files(), before);

    // Nothing retyped: the plan's own catalog and mapping.
    let o = lakesweep(&["apply", &out, "--allow-future-now"]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(s.files(), &before - &planned);
}

/// S3 without credentials says so first, and what to set.
#[test]
fn s3_without_credentials_says_so() {
    let home = std::env::temp_dir().join(format!("lakesweep-nohome-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lakesweep"));
    for v in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE",
    ] {
        c.env_remove(v);
    }
    let o = c
        .args([
            "plan",
            "s3://lakesweep-no-bucket/t",
            "--metadata",
            "s3://lakesweep-no-bucket/t/metadata/v1.metadata.json",
        ])
        .env("HOME", &home)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_REGION", "us-east-1")
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&home);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("no S3 credentials were found: set AWS_ACCESS_KEY_ID"),
        "{}",
        out_text(&o)
    );
}

/// A usage error is one line on stderr with where the options are listed
/// (exit 64), not clap's usage block.
#[test]
fn usage_errors_are_one_line_with_a_hint() {
    for (args, says) in [
        (vec!["plan", "/t", "--bogus"], "lakesweep plan --help"),
        (
            vec!["plann", "/t"],
            "similar subcommands exist: 'explain', 'plan'",
        ),
        (vec!["apply"], "<PLAN.json>"),
        (vec!["plan", "/t", "--older-than", "3"], "time unit needed"),
        (vec!["plan", "--namespace", "db"], "--catalog"),
        (vec!["plan", "/t", "--out-dir", "d"], "--out FILE"),
    ] {
        let o = lakesweep(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(64), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("lakesweep: ") && err.contains(says),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty());
    }
}

/// The README's policy example works as written: it checks clean, and the
/// demo table (staged as `scripts/demo.sh` stages it) plans under it.
#[test]
fn the_readmes_policy_example_works_on_the_demo_table() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let start = readme
        .find("```json\n{\"schema\": \"lakehouseRetentionPolicy.v1\"")
        .expect("README holds a policy example")
        + "```json\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let s = Stage::new("readme-policy");
    let policy = s.root.join("policy.json");
    std::fs::write(&policy, &readme[start..end]).unwrap();
    let p = policy.to_str().unwrap();
    let o = lakesweep(&["policy", "check", p]);
    assert!(o.status.success(), "{}", out_text(&o));
    let o = s.plan(&["--policy", p, "--json"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let v = json(&o);
    assert!(v["tokens"]["policyDigest"].is_string(), "{v}");
    let mut expire = vec!["expire".to_owned(), s.table().display().to_string()];
    expire.extend(s.catalog());
    expire.extend(["--location-map".into(), s.map(), "--now".into()]);
    expire.extend([s.t["now_ms"].to_string(), "--policy".into(), p.into()]);
    let o = lakesweep(&expire);
    assert!(o.status.success(), "{}", out_text(&o));
}

/// `lakesweep plan … | head`: the reader goes away before the plan is
/// printed. The command ends quietly (no panic, no backtrace) with the
/// status a shell reports for a closed pipe.
#[test]
fn a_closed_output_ends_the_command_quietly() {
    use std::process::{Command, Stdio};
    let s = Stage::new("pipe");
    let args = s.plan_args(&["--json"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lakesweep"))
        .args(&args)
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader is gone
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(141), "{err}");
}
