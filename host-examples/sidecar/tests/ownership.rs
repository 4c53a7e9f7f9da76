//! A prefix belongs to one table: another table of any format nested
//! inside the table being planned refuses the plan (`foreign-table`), with
//! real tables written by pyiceberg and deltalake. Before this rule a Delta
//! table inside another table had its log kept as "hidden" and its data
//! files planned as garbage.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Writes a deltalake table of two appends at `dir`, every file dated
/// `age_days` ago.
fn delta_table(dir: &Path, age_days: u32) {
    let script = r#"
import os, sys, time
import pyarrow as pa
from deltalake import write_deltalake
d = sys.argv[1]
for i in range(2):
    write_deltalake(d, pa.table({"id": pa.array([i], type=pa.int64())}), mode="append")
when = time.time() - float(sys.argv[2]) * 86400
for dp, _, names in os.walk(d):
    for f in names:
        os.utime(os.path.join(dp, f), (when, when))
os._exit(0)
"#;
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(dir)
        .arg(age_days.to_string())
        .output()
        .expect("python3 with deltalake (scripts/test.sh installs it)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn refused_as_foreign(o: &std::process::Output, nested: &str) {
    assert_eq!(o.status.code(), Some(2), "{}", out_text(o));
    let text = out_text(o);
    assert!(text.contains("foreign-table"), "{text}");
    assert!(text.contains("another table lives at"), "{text}");
    assert!(text.contains(nested), "{text}");
}

#[test]
fn a_delta_table_inside_an_iceberg_table_refuses_its_plan() {
    let t = PyTable::new("own-ice-delta");
    let nested = t.root().join("data/nested_delta");
    delta_table(&nested, 10);
    let before = files_under(&t.root());
    refused_as_foreign(&t.run("plan", &["--json"]), "data/nested_delta/");
    // Through version-hint-less fixed metadata too, and nothing was deleted.
    let md = t.info["metadata_location"].as_str().unwrap().to_owned();
    let now = month_ahead();
    let o = lakesweep(&["plan", &t.location(), "--metadata", &md, "--now", &now]);
    refused_as_foreign(&o, "data/nested_delta/");
    assert_eq!(files_under(&t.root()), before);
}

#[test]
fn a_delta_table_inside_a_delta_table_refuses_its_plan() {
    let root = std::env::temp_dir().join(format!("lakesweep-own-dd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    delta_table(&root, 10);
    delta_table(&root.join("part=x/inner"), 10);
    let now = month_ahead();
    let o = lakesweep(&["plan", &format!("file://{}", root.display()), "--now", &now]);
    refused_as_foreign(&o, "part=x/inner/");
    // The inner table alone is planned: nothing nests inside it.
    let o = lakesweep(&[
        "plan",
        &format!("file://{}/part=x/inner", root.display()),
        "--now",
        &now,
        "--json",
    ]);
    assert!(o.status.success(), "{}", out_text(&o));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn an_iceberg_table_inside_a_delta_table_refuses_its_plan() {
    let t = PyTable::new("own-delta-ice");
    // The Iceberg table's folder is the Delta table's `lake/` folder.
    let root = t.dir.join("warehouse");
    delta_table(&root, 10);
    let now = month_ahead();
    let o = lakesweep(&["plan", &format!("file://{}", root.display()), "--now", &now]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(out_text(&o).contains("foreign-table"), "{}", out_text(&o));
}
