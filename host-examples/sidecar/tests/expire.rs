//! Snapshot expiry end to end on a real pyiceberg table (written by
//! `tests/py/iceberg_table.py`, pyiceberg 0.12.0; `.ci/run` installs it):
//! `expire` plans, `expire --commit` swaps the SQL catalog pointer, pyiceberg
//! reads the table back (the retained snapshot time-travels, the expired ones
//! are gone), and the following sweep reclaims exactly the files only the
//! expired snapshots referenced. Also: `policy check`, a policy for another
//! table, and `plan --holds`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use common::*;
use serde_json::Value;

fn ids(v: &Value) -> BTreeSet<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

#[test]
fn expire_commit_then_sweep_reclaims_exactly_what_only_expired_snapshots_held() {
    let t = PyTable::new("expire");
    let current = t.info["current"].as_i64().unwrap();
    let all = ids(&t.info["snapshots"]);
    let refs: BTreeMap<String, Vec<String>> =
        serde_json::from_value(py(&["refs", t.dir.to_str().unwrap()])).unwrap();

    // Dry run: every snapshot but the current one expires; nothing changes.
    let v = json(&t.run("expire", &["--json"]));
    let expire = ids(&v["expire"]);
    let want: BTreeSet<i64> = all.iter().copied().filter(|&s| s != current).collect();
    assert_eq!(expire, want);
    assert_eq!(v["commit"]["updates"][0]["action"], "remove-snapshots");
    assert!(v["committed"].is_null());
    assert_eq!(
        ids(&py(&["check", t.dir.to_str().unwrap()])["snapshots"]),
        all
    );

    // Nothing is reclaimable before the commit: every snapshot is still readable.
    let before = json(&t.run("plan", &["--json"]));
    assert!(deletes(&before).is_empty(), "{before}");

    // Commit, then read it back with pyiceberg.
    let v = json(&t.run("expire", &["--json", "--commit", "--allow-future-now"]));
    let new_md = v["committed"].as_str().unwrap();
    assert!(new_md.contains("/metadata/00005-"), "{new_md}");
    let check = py(&["check", t.dir.to_str().unwrap()]);
    assert_eq!(ids(&check["snapshots"]), BTreeSet::from([current]));
    assert_eq!(check["rows"], 3);
    assert_eq!(check["travel"][current.to_string()], 3);

    // The sweep now reclaims exactly the files only expired snapshots referenced.
    let kept: BTreeSet<&String> = refs[&current.to_string()].iter().collect();
    let loc = format!("{}/", t.location());
    let mut only_expired = BTreeSet::new();
    for (id, files) in &refs {
        if expire.contains(&id.parse::<i64>().unwrap()) {
            for f in files {
                if !kept.contains(f) {
                    only_expired.insert(f.strip_prefix(&loc).unwrap().to_owned());
                }
            }
        }
    }
    assert!(!only_expired.is_empty());
    let plan_path = t.dir.join("plan.json");
    let after = json(&t.run("plan", &["--json", "--out", plan_path.to_str().unwrap()]));
    assert_eq!(deletes(&after), only_expired);
    assert_eq!(after["summary"]["referencedNotListed"], 0);
    // The dry run said what the commit would free, kind by kind, in bytes.
    let frees = &v["frees"];
    let counted: u64 = frees["byKind"]
        .as_object()
        .unwrap()
        .values()
        .map(|k| k["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted as usize, only_expired.len(), "{frees}");
    let planned: u64 = after["delete"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["size"].as_u64().unwrap())
        .sum();
    assert_eq!(frees["bytes"], planned, "{frees}");
    assert_eq!(after["summary"]["reclaimable"], frees["byKind"]);

    let mut apply = vec!["apply".to_owned(), plan_path.display().to_string()];
    apply.extend(t.pointer());
    apply.push("--allow-future-now".into());
    let o = lakesweep(&apply);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let check = py(&["check", t.dir.to_str().unwrap()]);
    assert_eq!(check["rows"], 3, "the table still reads after the sweep");
    assert!(deletes(&json(&t.run("plan", &["--json"]))).is_empty());
}

fn policy(uuid: &str, writer: &str) -> String {
    format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{uuid}","format":"iceberg"}},
            "snapshotRetention":{{"retainLast":2,"protectedRefs":["main"]}},
            "fileRetention":{{"orphanSafetyInterval":"3d","maxWriterDuration":"{writer}"}}}}"#
    )
}

#[test]
fn policies_are_checked_bound_and_applied() {
    let t = PyTable::new("policy");
    let uuid = &t.uuid();
    let good = t.dir.join("good.json");
    std::fs::write(&good, policy(uuid, "6h")).unwrap();
    let bad = t.dir.join("bad.json");
    std::fs::write(&bad, policy(uuid, "3d")).unwrap();
    let other = t.dir.join("other.json");
    std::fs::write(&other, policy("00000000-0000-4000-8000-000000000000", "6h")).unwrap();

    let o = lakesweep(&["policy", "check", good.to_str().unwrap()]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("digest"));
    let o = lakesweep(&["policy", "check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("error: fileRetention.orphanSafetyInterval")
    );

    // retainLast 2: the current snapshot and its parent stay.
    let v = json(&t.run("expire", &["--json", "--policy", good.to_str().unwrap()]));
    assert_eq!(v["retain"].as_array().unwrap().len(), 2);
    assert!(v["policyDigest"].is_string());

    // A policy for another table is refused, by expire and by plan.
    let o = t.run("expire", &["--policy", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("policy.binding.tableUuid"));
    let o = t.run("plan", &["--policy", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));

    // A hold on a prefix protects an old orphan there; a lease keeps a snapshot.
    let table_dir = PathBuf::from(t.location().strip_prefix("file://").unwrap());
    std::fs::create_dir_all(table_dir.join("data/case-7")).unwrap();
    std::fs::write(table_dir.join("data/case-7/evidence.parquet"), b"x").unwrap();
    std::fs::write(table_dir.join("data/orphan.parquet"), b"x").unwrap();
    let holds = t.dir.join("holds.json");
    std::fs::write(
        &holds,
        r#"[{"scope":{"pathPrefix":"data/case-7/"},"generation":4,"reason":"case 7"}]"#,
    )
    .unwrap();
    let v = json(&t.run("plan", &["--json", "--holds", holds.to_str().unwrap()]));
    assert_eq!(
        deletes(&v),
        BTreeSet::from(["data/orphan.parquet".to_owned()])
    );
    assert!(v["report"]["keep"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k["key"] == "data/case-7/evidence.parquet" && k["reason"] == "protected"));
    assert_eq!(v["tokens"]["holdGeneration"], 4);
    // A newer hold generation at apply time beats the plan.
    let plan_path = t.dir.join("held-plan.json");
    let o = t.run(
        "plan",
        &[
            "--holds",
            holds.to_str().unwrap(),
            "--out",
            plan_path.to_str().unwrap(),
        ],
    );
    assert!(o.status.success());
    let newer = t.dir.join("holds-5.json");
    std::fs::write(
        &newer,
        r#"[{"scope":{"pathPrefix":"data/"},"generation":5}]"#,
    )
    .unwrap();
    let mut apply = vec!["apply".to_owned(), plan_path.display().to_string()];
    apply.extend(t.pointer());
    apply.extend([
        "--holds".into(),
        newer.display().to_string(),
        "--allow-future-now".into(),
    ]);
    let o = lakesweep(&apply);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("generation 5"));
    assert!(table_dir.join("data/orphan.parquet").exists());
    let first = t.info["snapshots"][0].as_i64().unwrap();
    let leases = t.dir.join("leases.json");
    std::fs::write(
        &leases,
        format!(
            r#"[{{"snapshotId":{first},"owner":"ml","purpose":"training","expiresAtMs":{}}}]"#,
            i64::MAX / 2
        ),
    )
    .unwrap();
    let v = json(&t.run("expire", &["--json", "--leases", leases.to_str().unwrap()]));
    assert!(!ids(&v["expire"]).contains(&first));
}
