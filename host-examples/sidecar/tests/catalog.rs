//! The catalogs a live pointer comes from, against real servers on
//! 127.0.0.1: AWS Glue (moto's Glue API, tables written by pyiceberg's
//! GlueCatalog), an Iceberg REST catalog (pyiceberg's SQL catalog behind
//! the protocol's routes, `tests/py/rest_catalog.py`: no REST catalog
//! server installs from the registries), and a pointer command. Each is
//! planned, raced by a writer between plan and apply, and committed
//! through.

mod common;

use std::collections::BTreeSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::*;
use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lakesweep-cat-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_owned())
        .collect()
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", out_text(o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Plans with `pointer`, checks the plan deletes exactly the orphans (and
/// equals the plan read from the fixed metadata), lets a writer adopt the
/// first orphan, then applies the plan file with no options: the adopted
/// file survives, the rest go, and the table still reads.
/// `apply_pointer`: what apply must be given again (a pointer command:
/// a plan file never chooses what apply runs).
fn plan_race_apply(
    env: &[(&str, String)],
    py_env: &[(&str, &str)],
    dir: &Path,
    pointer: &[&str],
    apply_pointer: &[&str],
) {
    let d = dir.to_str().unwrap();
    let info = py_with(py_env, &["check", d]);
    assert_eq!(info["rows"], 3);
    let orphans = keys(&py_with(py_env, &["orphans", d, "3", "10"]));
    let location = py_with(py_env, &["write-info", d]);
    let table = location["location"].as_str().unwrap();
    let now = month_ahead();
    let plan = dir.join("plan.json");
    let mut args = vec!["plan", table, "--now", &now];
    args.extend(pointer);
    let plan_s = plan.to_str().unwrap();
    let o = lakesweep_with(env, &[&args[..], &["--out", plan_s]].concat());
    ok(&o);
    let v: Value = serde_json::from_slice(&std::fs::read(&plan).unwrap()).unwrap();
    assert_eq!(deletes(&v), orphans, "{v}");
    let fixed = lakesweep_with(
        env,
        &[
            "plan",
            table,
            "--now",
            &now,
            "--metadata",
            location["metadata_location"].as_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(deletes(&json(&fixed)), orphans);

    // A writer adopts an orphan after the plan: apply re-reads the pointer
    // through the same source, sees it moved, and deletes nothing.
    let adopted = orphans.iter().next().unwrap().clone();
    py_with(py_env, &["add", d, &adopted]);
    let root = PathBuf::from(table.strip_prefix("file://").unwrap());
    let o = lakesweep_with(
        env,
        &[&["apply", plan_s, "--allow-future-now"][..], apply_pointer].concat(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(out_text(&o).contains("make a new plan"), "{}", out_text(&o));
    assert!(orphans.iter().all(|k| root.join(k).exists()));

    // Planned again: the adopted file is live now; the rest go.
    ok(&lakesweep_with(
        env,
        &[&args[..], &["--out", plan_s]].concat(),
    ));
    let v: Value = serde_json::from_slice(&std::fs::read(&plan).unwrap()).unwrap();
    let rest: BTreeSet<String> = orphans.iter().filter(|k| **k != adopted).cloned().collect();
    assert_eq!(deletes(&v), rest);
    let o = lakesweep_with(
        env,
        &[
            &["apply", plan_s, "--allow-future-now", "--json"][..],
            apply_pointer,
        ]
        .concat(),
    );
    let done = json(&o);
    assert_eq!(done["deleted"]["count"], 2, "{done}");
    for k in &orphans {
        assert_eq!(root.join(k).exists(), *k == adopted, "{k}");
    }
    assert_eq!(py_with(py_env, &["check", d])["rows"], 4);
}

/// `lakesweep expire --commit` through the pointer: every snapshot but the
/// current one goes, the table reads, and the catalog names the new document.
fn expire_through(env: &[(&str, String)], py_env: &[(&str, &str)], dir: &Path, pointer: &[&str]) {
    let d = dir.to_str().unwrap();
    let before = py_with(py_env, &["write-info", d]);
    let now = month_ahead();
    let mut args = vec![
        "expire",
        before["location"].as_str().unwrap(),
        "--now",
        &now,
        "--json",
        "--commit",
        "--allow-future-now",
    ];
    args.extend(pointer);
    let v = json(&lakesweep_with(env, &args));
    let new_md = v["committed"].as_str().unwrap().to_owned();
    let after = py_with(py_env, &["write-info", d]);
    assert_eq!(after["metadata_location"], new_md.as_str());
    assert_ne!(after["metadata_location"], before["metadata_location"]);
    let check = py_with(py_env, &["check", d]);
    assert_eq!(check["snapshots"].as_array().unwrap().len(), 1, "{check}");
    assert_eq!(check["rows"], 4);
}

/// `plan --catalog C --namespace demo --json` lists and plans demo.t.
fn namespace_lists(env: &[(&str, String)], catalog: &str) {
    let now = month_ahead();
    let o = lakesweep_with(
        env,
        &[
            "plan",
            "--catalog",
            catalog,
            "--namespace",
            "demo",
            "--now",
            &now,
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    assert_eq!(v["tables"][0]["table"], "demo.t", "{v}");
    assert_eq!(v["planned"], 1, "{v}");
}

#[test]
fn glue_catalog_plans_applies_and_commits_an_expiry() {
    let m = moto();
    let dir = scratch("glue");
    let d = dir.to_str().unwrap();
    let py_env = [("LAKESWEEP_TEST_GLUE", m.endpoint.as_str())];
    py_with(&py_env, &["write", d]);
    let env = m.aws_env();
    let pointer = ["--catalog", "glue", "--table", "demo.t"];
    plan_race_apply(&env, &py_env, &dir, &pointer, &[]);
    expire_through(&env, &py_env, &dir, &pointer);
    namespace_lists(&env, "glue");

    // What Glue cannot answer is said plainly.
    let table = py_with(&py_env, &["write-info", d])["location"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = lakesweep_with(
        &env,
        &["plan", &table, "--catalog", "glue", "--table", "demo.nope"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        out_text(&o).contains("EntityNotFoundException"),
        "{}",
        out_text(&o)
    );
    let o = lakesweep_with(
        &env,
        &["plan", &table, "--catalog", "glue", "--table", "a.b.t"],
    );
    assert!(
        out_text(&o).contains("Glue databases are one level"),
        "{}",
        out_text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The REST catalog of `tests/py/rest_catalog.py` on a port it picks.
struct Rest {
    child: Child,
    uri: String,
}

impl Drop for Rest {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rest(dir: &Path, token: Option<&str>) -> Rest {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/rest_catalog.py");
    let mut c = Command::new("python3");
    c.arg(script).arg(dir);
    if let Some(t) = token {
        c.arg(t);
    }
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 with pyiceberg (scripts/test.sh installs it)");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: Value = serde_json::from_str(&line).expect("the REST catalog's port");
    Rest {
        child,
        uri: format!("http://127.0.0.1:{}", port["port"]),
    }
}

#[test]
fn rest_catalog_plans_applies_and_commits_an_expiry() {
    let dir = scratch("rest");
    let d = dir.to_str().unwrap();
    py(&["write", d]);
    let server = rest(&dir, Some("s3cr3t"));
    let catalog = format!("rest:{}", server.uri);
    let pointer = ["--catalog", catalog.as_str(), "--table", "demo.t"];
    let env = vec![("LAKESWEEP_REST_TOKEN", "s3cr3t".to_owned())];

    // Without the token the catalog's refusal is shown, and nothing is planned.
    let table = py(&["write-info", d])["location"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = lakesweep(&[&["plan", table.as_str()][..], &pointer].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(out_text(&o).contains("401"), "{}", out_text(&o));

    plan_race_apply(&env, &[], &dir, &pointer, &[]);
    expire_through(&env, &[], &dir, &pointer);
    namespace_lists(&env, &catalog);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sets the REST test server's next commit to `mode` (`fail`: applied,
/// answered 503; `conflict`: applied, answered 409; `drop`: not applied,
/// answered 503).
fn next_commit(server: &Rest, mode: &str) {
    let port = server.uri.rsplit(':').next().unwrap();
    let mut s = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).unwrap();
    use std::io::{Read, Write};
    write!(
        s,
        "POST /test/{mode}-next-commit HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut r = String::new();
    s.read_to_string(&mut r).unwrap();
    assert!(
        r.starts_with("HTTP/1.0 200") || r.starts_with("HTTP/1.1 200"),
        "{r}"
    );
}

/// A REST commit answered otherwise than with success is settled by
/// reading the table again, never by the answer: applied then answered 503
/// or 409 (a gateway's retry of a commit that landed), the expiry landed
/// and its bundle stays; not applied and answered 503, the table still
/// names the planned document: the outcome is unknown (exit 1), the bundle
/// stays.
#[test]
fn a_rest_commit_is_settled_by_the_table_not_by_its_answer() {
    let dir = scratch("rest-lost");
    let d = dir.to_str().unwrap();
    let u_env = [("LAKESWEEP_TEST_TABLE", "demo.u")];
    py(&["write", d]);
    py_with(&u_env, &["write", d]);
    let server = rest(&dir, None);
    let catalog = format!("rest:{}", server.uri);
    let expire = |env: &[(&str, &str)], name: &str| {
        let table = py_with(env, &["write-info", d])["location"]
            .as_str()
            .unwrap()
            .to_owned();
        let now = month_ahead();
        lakesweep(&[
            "expire",
            &table,
            "--catalog",
            &catalog,
            "--table",
            name,
            "--now",
            &now,
            "--commit",
            "--allow-future-now",
            "--json",
        ])
    };
    let snapshots = |env: &[(&str, &str)]| {
        py_with(env, &["check", d])["snapshots"]
            .as_array()
            .unwrap()
            .len()
    };
    let sealed = |env: &[(&str, &str)]| -> usize {
        let table = py_with(env, &["write-info", d])["location"]
            .as_str()
            .unwrap()
            .to_owned();
        let root = PathBuf::from(table.strip_prefix("file://").unwrap()).join("_lakesweep");
        if !root.exists() {
            return 0;
        }
        files_under(&root)
            .into_iter()
            .filter(|k| k.contains("q-"))
            .count()
    };
    let t_env: [(&str, &str); 0] = [];

    let before = snapshots(&t_env);
    // Not applied, answered 503: unknown, and said so; the bundle stays.
    next_commit(&server, "drop");
    let o = expire(&t_env, "demo.t");
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let text = out_text(&o);
    assert!(text.contains("OUTCOME UNKNOWN"), "{text}");
    assert!(text.contains("still names the planned document"), "{text}");
    assert_eq!(snapshots(&t_env), before);
    assert!(sealed(&t_env) > 0);

    // Applied, answered 503: the table read again shows it landed.
    next_commit(&server, "fail");
    let o = expire(&t_env, "demo.t");
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let v = json(&o);
    assert_eq!(
        v["committed"].as_str(),
        py(&["write-info", d])["metadata_location"].as_str(),
        "{v}"
    );
    assert_eq!(snapshots(&t_env), 1);

    // Applied, answered 409 (a gateway's retry of a commit that landed):
    // landed, never "refused, nothing deleted"; its bundle stays.
    next_commit(&server, "conflict");
    let o = expire(&u_env, "demo.u");
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    assert_eq!(snapshots(&u_env), 1);
    assert!(sealed(&u_env) > 0, "the landed expiry's bundle stays");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_pointer_command_is_read_at_plan_and_again_at_apply() {
    let dir = scratch("cmd");
    let d = dir.to_str().unwrap();
    py(&["write", d]);
    // Another catalog, as far as lakesweep knows: a script that asks the
    // SQL catalog for the current location.
    let catalog_db = dir.join("catalog.db");
    let cmd = format!(
        "python3 -c \"import sqlite3; print(sqlite3.connect('{}').execute('SELECT metadata_location FROM iceberg_tables').fetchone()[0])\"",
        catalog_db.display()
    );
    let pointer = ["--pointer-cmd", cmd.as_str()];
    plan_race_apply(&[], &[], &dir, &pointer, &pointer);
    // Without it, apply refuses: the plan file does not choose the command.
    let o = lakesweep(&[
        "apply",
        dir.join("plan.json").to_str().unwrap(),
        "--allow-future-now",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        out_text(&o).contains("give apply the same --pointer-cmd"),
        "{}",
        out_text(&o)
    );

    // A pointer command only reads: it cannot commit.
    let table = py(&["write-info", d])["location"]
        .as_str()
        .unwrap()
        .to_owned();
    let now = month_ahead();
    let o = lakesweep(&[
        "expire",
        &table,
        "--pointer-cmd",
        &cmd,
        "--now",
        &now,
        "--commit",
        "--allow-future-now",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        out_text(&o).contains("--pointer-cmd only read"),
        "{}",
        out_text(&o)
    );
    // A command that fails stops the plan.
    let o = lakesweep(&["plan", &table, "--pointer-cmd", "echo no >&2; exit 4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(out_text(&o).contains("failed"), "{}", out_text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `plan --namespace` over a SQL catalog of three tables, one nested
/// inside another's location: each table its own plan; the outer table is
/// refused (its listing holds another table's metadata), the run exits 2,
/// and `apply DIR` carries out the others without touching the outer
/// table's keys. A table list does the same by name and by location.
#[test]
fn a_namespace_is_planned_table_by_table_and_applied_as_a_set() {
    let dir = scratch("estate");
    let d = dir.to_str().unwrap();
    py(&["write", d]);
    py_with(&[("LAKESWEEP_TEST_TABLE", "demo.u")], &["write", d]);
    let t_orphans = keys(&py(&["orphans", d, "2", "10"]));
    let u_orphans = keys(&py_with(
        &[("LAKESWEEP_TEST_TABLE", "demo.u")],
        &["orphans", d, "3", "10"],
    ));
    let t_root = PathBuf::from(
        py(&["write-info", d])["location"]
            .as_str()
            .unwrap()
            .strip_prefix("file://")
            .unwrap(),
    );
    let u_root = PathBuf::from(
        py_with(&[("LAKESWEEP_TEST_TABLE", "demo.u")], &["write-info", d])["location"]
            .as_str()
            .unwrap()
            .strip_prefix("file://")
            .unwrap(),
    );
    let catalog = format!("sqlite:{}", dir.join("catalog.db").display());
    let now = month_ahead();
    let plans = dir.join("plans");
    let run = |extra: &[&str]| {
        let mut a = vec!["plan", "--catalog", &catalog, "--now", &now, "--json"];
        a.extend(extra);
        lakesweep(&a)
    };
    let o = run(&["--namespace", "demo", "--out-dir", plans.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["planned"], 2, "{v}");
    assert_eq!(v["tables"][1]["delete"], 3);
    assert_eq!(v["reclaimable"]["data"]["count"], 5);

    // A third table inside demo.t's location: the planner's ownership map
    // keeps its prefix out of demo.t's plan, and refuses to plan it (demo.t's
    // files may lie under it).
    py_with(
        &[("LAKESWEEP_TEST_TABLE", "demo.n")],
        &["nest", d, "demo.t"],
    );
    let _ = std::fs::remove_dir_all(&plans);
    let o = run(&["--namespace", "demo", "--out-dir", plans.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["refused"], 1, "{v}");
    assert_eq!(v["refusals"]["nested-table"], 1, "{v}");
    let table = |name: &str| {
        v["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["table"] == name)
            .unwrap()
            .clone()
    };
    let n = table("demo.n");
    assert!(
        n["plan"].is_null() && n["refused"]["kind"] == "nested-table",
        "{n}"
    );
    let t = table("demo.t");
    assert_eq!(t["delete"], 2, "{t}");
    let t_plan: Value =
        serde_json::from_slice(&std::fs::read(plans.join("demo.t.plan.json")).unwrap()).unwrap();
    let foreign: Vec<&Value> = t_plan["report"]["keep"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["reason"] == "foreign")
        .collect();
    assert!(!foreign.is_empty(), "{t_plan}");
    assert!(
        foreign
            .iter()
            .all(|k| k["key"].as_str().unwrap().starts_with("nested/demo.n/")
                && k["detail"]
                    .as_str()
                    .unwrap()
                    .contains("table demo.n's location")),
        "{foreign:?}"
    );
    // A reused out-dir is refused: `apply DIR` must apply this run's plans only.
    let o = run(&["--namespace", "demo", "--out-dir", plans.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(out_text(&o).contains("already holds"), "{}", out_text(&o));

    let o = lakesweep(&["apply", plans.to_str().unwrap(), "--allow-future-now"]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert!(
        out_text(&o).contains("demo.u.plan.json"),
        "{}",
        out_text(&o)
    );
    assert!(t_orphans.iter().all(|k| !t_root.join(k).exists()));
    assert!(u_orphans.iter().all(|k| !u_root.join(k).exists()));
    for table in ["demo.t", "demo.u", "demo.n"] {
        let check = py_with(&[("LAKESWEEP_TEST_TABLE", table)], &["check", d]);
        assert!(check["rows"].as_u64().unwrap() > 0, "{table}: {check}");
    }

    // status over the namespace: every table's ledger; none was swept.
    let o = lakesweep(&[
        "status",
        "--catalog",
        &catalog,
        "--namespace",
        "demo",
        "--max-age",
        "2d",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let seen: BTreeSet<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(seen.len(), 3, "{v}");
    assert!(
        seen.contains(&format!("file://{}", u_root.display())),
        "{v}"
    );

    // A list by name and by location; the human report names each table.
    // Alone, demo.t is refused by the planner itself: the nested table's
    // metadata lies in its listing.
    let list = dir.join("tables.txt");
    std::fs::write(
        &list,
        format!(
            "# the estate\ndemo.u\ndemo.t\n{}   # by location: no version-hint.text\n",
            dir.join("warehouse/elsewhere").display()
        ),
    )
    .unwrap();
    let o = lakesweep(&[
        "plan",
        "--catalog",
        &catalog,
        "--now",
        &now,
        "--tables",
        list.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("demo.u") && text.contains("would delete 0"),
        "{text}"
    );
    assert!(text.contains("REFUSED (foreign-table)"), "{text}");
    assert!(
        text.contains("no metadata/version-hint.text and no vN.metadata.json: say where"),
        "{text}"
    );
    assert!(
        text.contains("refusals by kind: foreign-table 1, invalid-option 1"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The files of `uris` (file:// URIs) that still exist.
fn existing(uris: &BTreeSet<String>) -> BTreeSet<String> {
    uris.iter()
        .filter(|u| Path::new(u.strip_prefix("file://").unwrap()).exists())
        .cloned()
        .collect()
}

/// A table whose `write.data.path` lies inside another table's location:
/// the namespace run keeps that prefix out of the outer table's plan (its
/// files are the other table's live data), refuses the inner table, and
/// `apply DIR` deletes the outer table's garbage only; the inner table
/// still reads every row.
#[test]
fn a_write_root_inside_another_table_is_never_that_tables_garbage() {
    let dir = scratch("write-root");
    let d = dir.to_str().unwrap();
    let a_env = [("LAKESWEEP_TEST_TABLE", "demo.a")];
    let b_env = [("LAKESWEEP_TEST_TABLE", "demo.b")];
    py_with(&a_env, &["write", d]);
    let a_loc = py_with(&a_env, &["write-info", d])["location"]
        .as_str()
        .unwrap()
        .to_owned();
    py_with(&b_env, &["write", d, &format!("{a_loc}/b-data")]);
    let b_rows = py_with(&b_env, &["check", d])["rows"].clone();
    let a_orphans = keys(&py_with(&a_env, &["orphans", d, "2", "10"]));
    let b_data: BTreeSet<String> =
        common::files_under(&PathBuf::from(a_loc.strip_prefix("file://").unwrap()))
            .into_iter()
            .filter(|k| k.starts_with("b-data/"))
            .map(|k| format!("{a_loc}/{k}"))
            .collect();
    assert!(b_data.len() >= 4, "{b_data:?}");
    let catalog = format!("sqlite:{}", dir.join("catalog.db").display());
    let plans = dir.join("plans");
    let now = month_ahead();
    let o = lakesweep(&[
        "plan",
        "--catalog",
        &catalog,
        "--namespace",
        "demo",
        "--now",
        &now,
        "--json",
        "--out-dir",
        plans.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let tables = v["tables"].as_array().unwrap();
    let a = tables.iter().find(|t| t["table"] == "demo.a").unwrap();
    let b = tables.iter().find(|t| t["table"] == "demo.b").unwrap();
    assert_eq!(b["refused"]["kind"], "nested-table", "{b}");
    assert!(
        b["refused"]["why"]
            .as_str()
            .unwrap()
            .contains("write.data.path"),
        "{b}"
    );
    let plan: Value =
        serde_json::from_slice(&std::fs::read(plans.join("demo.a.plan.json")).unwrap()).unwrap();
    assert_eq!(deletes(&plan), a_orphans, "{a}");
    // Planned alone through the catalog, each table is judged with its
    // namespace's ownership map too.
    let alone = |t: &str, loc: &str| {
        lakesweep(&[
            "plan",
            loc,
            "--catalog",
            &catalog,
            "--table",
            t,
            "--now",
            &now,
            "--json",
        ])
    };
    let o = alone("demo.a", &a_loc);
    assert_eq!(deletes(&json(&o)), a_orphans, "{}", out_text(&o));
    let b_loc = py_with(&b_env, &["write-info", d])["location"]
        .as_str()
        .unwrap()
        .to_owned();
    let o = alone("demo.b", &b_loc);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(out_text(&o).contains("nested-table"), "{}", out_text(&o));
    let o = lakesweep(&["apply", plans.to_str().unwrap(), "--allow-future-now"]);
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(existing(&b_data), b_data);

    assert!(a_orphans
        .iter()
        .all(|k| !Path::new(a_loc.strip_prefix("file://").unwrap())
            .join(k)
            .exists()));
    assert_eq!(py_with(&b_env, &["check", d])["rows"], b_rows);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Hive (Parquet) table in Glue whose location and partition lie inside
/// an Iceberg table of the same database: every catalog entry owns its
/// prefixes, whatever its type, so the Iceberg table's plan keeps the Hive
/// table's files (verdict `foreign`) and deletes only its own garbage.
#[test]
fn a_hive_table_in_glue_inside_an_iceberg_table_is_kept() {
    let m = moto();
    let dir = scratch("glue-hive");
    let d = dir.to_str().unwrap();
    let py_env = [("LAKESWEEP_TEST_GLUE", m.endpoint.as_str())];
    py_with(&py_env, &["write", d]);
    let orphans = keys(&py_with(&py_env, &["orphans", d, "3", "10"]));
    let hive: BTreeSet<String> = keys(&py_with(
        &[
            ("LAKESWEEP_TEST_GLUE", m.endpoint.as_str()),
            ("LAKESWEEP_TEST_TABLE", "demo.h"),
        ],
        &["hive", d, "demo.t", "hive_part", "2", "10"],
    ));
    assert_eq!(hive.len(), 4);
    let env = m.aws_env();
    let plans = dir.join("plans");
    let now = month_ahead();
    let o = lakesweep_with(
        &env,
        &[
            "plan",
            "--catalog",
            "glue",
            "--namespace",
            "demo",
            "--now",
            &now,
            "--json",
            "--out-dir",
            plans.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["planned"], 1, "{v}");
    let plan: Value =
        serde_json::from_slice(&std::fs::read(plans.join("demo.t.plan.json")).unwrap()).unwrap();
    assert_eq!(deletes(&plan), orphans, "{plan}");
    let foreign = plan["report"]["keep"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["reason"] == "foreign")
        .count();
    assert_eq!(foreign, 4, "{plan}");
    let o = lakesweep_with(
        &env,
        &["apply", plans.to_str().unwrap(), "--allow-future-now"],
    );
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(existing(&hive), hive);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pointer command that hangs is refused after its timeout, and what it
/// started is killed with it (its process group), not left running.
#[test]
fn a_hung_pointer_command_is_killed_with_everything_it_started() {
    let dir = scratch("cmd-hang");
    let pidfile = dir.join("child.pid");
    let cmd = format!("sleep 300 & echo $! > '{}'; wait", pidfile.display());
    let o = lakesweep_with(
        &[("LAKESWEEP_POINTER_CMD_TIMEOUT", "1".to_owned())],
        &[
            "plan",
            &format!("file://{}", dir.display()),
            "--pointer-cmd",
            &cmd,
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(out_text(&o).contains("gave no answer"), "{}", out_text(&o));
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    // Gone, or a zombie no one reaped yet (killed, not running). A SIGKILL
    // is delivered when the child is next scheduled: on a loaded machine
    // that takes a moment, so the check gives it a few seconds.
    let killed = || {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim().chars().next();
        (matches!(state, None | Some('Z') | Some('X')), stat)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !killed().0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (gone, stat) = killed();
    assert!(
        gone,
        "the command's child {} still runs: {stat}",
        pid.trim()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A pointer that answers the current metadata first and an older
/// document at the plan's re-check (a lagging replica behind a
/// `--pointer-cmd`): the plan is refused as `stale-pointer`, never sealed
/// on the older document; nothing is deleted.
#[test]
fn a_pointer_that_goes_backwards_refuses_the_plan() {
    let dir = scratch("cmd-back");
    let d = dir.to_str().unwrap();
    let info = py(&["write", d]);
    let orphans = keys(&py(&["orphans", d, "2", "10"]));
    let table = info["location"].as_str().unwrap().to_owned();
    let current = info["metadata_location"].as_str().unwrap().to_owned();
    let md: Value =
        serde_json::from_slice(&std::fs::read(current.strip_prefix("file://").unwrap()).unwrap())
            .unwrap();
    let older = md["metadata-log"].as_array().unwrap().last().unwrap()["metadata-file"]
        .as_str()
        .unwrap()
        .to_owned();
    // The first read answers the current document, every later one the older.
    let count = dir.join("reads");
    let cmd = format!(
        "n=$(cat '{c}' 2>/dev/null || echo 0); echo $((n+1)) > '{c}'; if [ $n = 0 ]; then echo '{current}'; else echo '{older}'; fi",
        c = count.display()
    );
    let now = month_ahead();
    let o = lakesweep(&[
        "plan",
        &table,
        "--pointer-cmd",
        &cmd,
        "--now",
        &now,
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(out_text(&o).contains("stale-pointer"), "{}", out_text(&o));
    assert!(out_text(&o).contains("went backwards"), "{}", out_text(&o));
    let root = PathBuf::from(table.strip_prefix("file://").unwrap());
    assert!(orphans.iter().all(|k| root.join(k).exists()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The catalog named as the engine beside the sidecar names it: a Trino
/// catalog properties file and Spark's `spark.sql.catalog.NAME.*`
/// settings, for the REST catalog and for Glue (on moto), plan exactly
/// what `--catalog rest:URL` and `--catalog glue` plan; a setting that
/// cannot be honoured is named.
#[test]
fn trino_and_spark_catalog_settings_plan_the_tables_catalog_plans() {
    let now = month_ahead();
    let plan_with = |env: &[(&str, String)], table: &str, catalog: &str| -> Value {
        let o = lakesweep_with(
            env,
            &[
                "plan",
                table,
                "--catalog",
                catalog,
                "--table",
                "demo.t",
                "--now",
                &now,
                "--json",
            ],
        );
        assert!(o.status.success(), "{catalog}: {}", out_text(&o));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let same = |a: &Value, b: &Value, what: &str| {
        assert_eq!(a["delete"], b["delete"], "{what}");
        assert_eq!(a["tokens"], b["tokens"], "{what}");
        assert_eq!(a["summary"], b["summary"], "{what}");
    };

    // REST.
    let dir = scratch("engine-rest");
    let d = dir.to_str().unwrap();
    py(&["write", d]);
    let server = rest(&dir, None);
    let table = py(&["write-info", d])["location"]
        .as_str()
        .unwrap()
        .to_owned();
    let base = plan_with(&[], &table, &format!("rest:{}", server.uri));
    let trino = dir.join("lake.properties");
    std::fs::write(
        &trino,
        format!(
            "# Trino's etc/catalog/lake.properties\nconnector.name=iceberg\niceberg.catalog.type=rest\niceberg.rest-catalog.uri={}\niceberg.file-format=PARQUET\n",
            server.uri
        ),
    )
    .unwrap();
    same(
        &base,
        &plan_with(&[], &table, &format!("trino:{}", trino.display())),
        "trino rest",
    );
    let conf = dir.join("spark-defaults.conf");
    std::fs::write(
        &conf,
        format!(
            "spark.master local[2]\nspark.sql.catalog.lake org.apache.iceberg.spark.SparkCatalog\nspark.sql.catalog.lake.type rest\nspark.sql.catalog.lake.uri {}\n",
            server.uri
        ),
    )
    .unwrap();
    same(
        &base,
        &plan_with(&[], &table, &format!("spark:lake@{}", conf.display())),
        "spark rest",
    );
    // From $SPARK_CONF_DIR, as spark-submit finds it.
    let env = [("SPARK_CONF_DIR", d.to_owned())];
    same(
        &base,
        &plan_with(&env, &table, "spark:lake"),
        "spark rest from SPARK_CONF_DIR",
    );
    // A setting that would change which catalog is meant is named.
    std::fs::write(
        &trino,
        format!(
            "connector.name=iceberg\niceberg.catalog.type=rest\niceberg.rest-catalog.uri={}\niceberg.rest-catalog.prefix=other\n",
            server.uri
        ),
    )
    .unwrap();
    let o = lakesweep(&[
        "plan",
        &table,
        "--catalog",
        &format!("trino:{}", trino.display()),
        "--table",
        "demo.t",
    ]);
    assert_eq!(o.status.code(), Some(64), "{}", out_text(&o));
    assert!(
        out_text(&o).contains("`iceberg.rest-catalog.prefix` cannot be honoured"),
        "{}",
        out_text(&o)
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);

    // Glue on moto.
    let m = moto();
    let dir = scratch("engine-glue");
    let d = dir.to_str().unwrap();
    let py_env = [("LAKESWEEP_TEST_GLUE", m.endpoint.as_str())];
    py_with(&py_env, &["write", d]);
    let env = m.aws_env();
    let table = py_with(&py_env, &["write-info", d])["location"]
        .as_str()
        .unwrap()
        .to_owned();
    let base = plan_with(&env, &table, "glue");
    let trino = dir.join("lake.properties");
    std::fs::write(
        &trino,
        "connector.name=iceberg\niceberg.catalog.type=glue\nhive.metastore.glue.region=us-east-1\n",
    )
    .unwrap();
    same(
        &base,
        &plan_with(&env, &table, &format!("trino:{}", trino.display())),
        "trino glue",
    );
    let conf = dir.join("spark-defaults.conf");
    std::fs::write(
        &conf,
        "spark.sql.catalog.glued=org.apache.iceberg.spark.SparkCatalog\nspark.sql.catalog.glued.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog\nspark.sql.catalog.glued.io-impl=org.apache.iceberg.aws.s3.S3FileIO\n",
    )
    .unwrap();
    same(
        &base,
        &plan_with(&env, &table, &format!("spark:glued@{}", conf.display())),
        "spark glue",
    );
    // Another region than the AWS configuration's is named, not ignored.
    std::fs::write(
        &trino,
        "connector.name=iceberg\niceberg.catalog.type=glue\nhive.metastore.glue.region=eu-west-1\n",
    )
    .unwrap();
    let o = lakesweep_with(
        &env,
        &[
            "plan",
            &table,
            "--catalog",
            &format!("trino:{}", trino.display()),
            "--table",
            "demo.t",
        ],
    );
    assert_eq!(o.status.code(), Some(64), "{}", out_text(&o));
    assert!(
        out_text(&o).contains("set AWS_REGION=eu-west-1"),
        "{}",
        out_text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
