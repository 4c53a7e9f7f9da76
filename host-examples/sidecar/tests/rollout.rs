//! Rolling out over a fleet, on a real deltalake table against deltalake's
//! own VACUUM (full) dry runs: two weeks of shadow sweeps at a simulated
//! clock, each compared with the existing job's list for the same day, with
//! planted differences (a hidden name VACUUM lists, an orphan inside their
//! longer window, and one day a line naming a file nobody listed). Shadow
//! sweeps delete nothing, whatever the fleet document says; the gate keeps
//! the cohort in shadow while a difference is unexplained or the days are
//! too few, and lets the recorded move through after; the first enforce
//! sweep deletes, and deltalake still reads the table.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

const DAY: i64 = 86_400_000;

fn python(script: &Path, args: &[&str]) -> Value {
    let o = Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 (scripts/test.sh installs deltalake)");
    assert!(
        o.status.success(),
        "{}: {}",
        script.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn shadow_py(args: &[&str]) -> Value {
    python(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/delta_shadow.py"),
        args,
    )
}

/// deltalake's full VACUUM dry run, as the existing job would list it on a
/// day `days` after now with its 15-day limit: run now with the limit that
/// many days shorter (VACUUM judges by this machine's clock).
fn their_list(table: &Path, days: i64) -> Vec<String> {
    let hours = (15 - days) * 24;
    let v = python(
        &repo().join("tests/py/delta_vacuum.py"),
        &[
            table.to_str().unwrap(),
            "--retention-hours",
            &hours.to_string(),
            "--full",
            "--no-enforce",
        ],
    );
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect()
}

struct Fleet {
    dir: PathBuf,
    table: PathBuf,
    planted: Value,
}

impl Fleet {
    fn new(tag: &str) -> Fleet {
        let dir =
            std::env::temp_dir().join(format!("lakesweep-rollout-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let table = dir.join("events");
        let planted = shadow_py(&["make", table.to_str().unwrap()]);
        let f = Fleet {
            dir,
            table,
            planted,
        };
        f.write_fleet("shadow");
        f
    }

    fn fleet(&self) -> String {
        self.dir.join("fleet.json").display().to_string()
    }

    fn write_fleet(&self, mode: &str) {
        let doc = serde_json::json!({
            "schema": "lakesweepFleet.v1",
            "cohorts": [{"name": "canary", "mode": mode,
                         "tables": [format!("file://{}", self.table.display())],
                         "existingJob": {"tool": "deltalake vacuum (full)", "olderThan": "15d"}}]
        });
        std::fs::write(self.fleet(), doc.to_string()).unwrap();
    }

    fn exists(&self, key: &str) -> bool {
        self.table.join(key).exists()
    }

    fn orphans(&self) -> Vec<String> {
        let mut o: Vec<String> = self.planted["old"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_owned())
            .collect();
        o.push(self.planted["mid"].as_str().unwrap().to_owned());
        o
    }

    /// `sweep` at `now`, compared with `list` (one key per line).
    fn sweep(&self, now: i64, list: &[String]) -> Value {
        let lf = self.dir.join("their-list.txt");
        std::fs::write(&lf, list.join("\n")).unwrap();
        let table = self.table.display().to_string();
        let fleet = self.fleet();
        let lf = lf.display().to_string();
        let now = now.to_string();
        json(&lakesweep(&[
            "sweep",
            &table,
            "--fleet",
            &fleet,
            "--compare-with",
            &lf,
            "--now",
            &now,
            "--allow-future-now",
            "--quarantine",
            "0ms",
            "--json",
        ]))
    }

    fn move_to(&self, to: &str, now: i64) -> std::process::Output {
        lakesweep(&[
            "move",
            "--fleet",
            &self.fleet(),
            "--cohort",
            "canary",
            "--to",
            to,
            "--by",
            "alice",
            "--why",
            "two clean weeks beside VACUUM",
            "--now",
            &now.to_string(),
            "--allow-future-now",
        ])
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn two_weeks_of_shadow_runs_against_vacuum_gate_the_move_to_enforce() {
    let f = Fleet::new("gate");
    let start = clock_ms();
    let day = |d: i64| start + d * DAY + 60_000;
    let hidden = f.planted["hidden"].as_str().unwrap().to_owned();
    let mid = f.planted["mid"].as_str().unwrap().to_owned();
    for d in 0..=14 {
        if d == 10 {
            // Someone edits the document to enforce by hand: no recorded,
            // gated move, so the table stays in shadow.
            f.write_fleet("enforce");
        }
        let mut list = their_list(&f.table, d);
        if d == 5 {
            // The existing job names a file nobody listed.
            list.push("part=a/part-00000-ghost.parquet".into());
        }
        let v = f.sweep(day(d), &list);
        assert_eq!(v["mode"]["mode"], "shadow", "day {d}: {v}");
        if d >= 10 {
            assert_eq!(v["mode"]["wanted"], "enforce");
            assert!(v["mode"]["why"][0]
                .as_str()
                .unwrap()
                .contains("no gated move"));
        }
        let c = &v["comparison"];
        assert_eq!(c["unexplained"], u64::from(d == 5), "day {d}: {c}");
        assert_eq!(c["explained"]["hidden"], 1, "day {d}: {c}");
        // Their 15 days against our 7: the mid-aged orphan is ours alone
        // for the first days, both lists' after.
        assert_eq!(
            c["explained"]["their-window"].as_u64().unwrap_or(0),
            u64::from(d <= 4),
            "day {d}: {c}"
        );
        assert!(v["approval"]["granted"] == false, "day {d}: {v}");
        // Nothing is deleted in shadow, although the quarantine passed.
        for k in f.orphans() {
            assert!(f.exists(&k), "day {d}: {k} deleted in shadow");
        }
        if d == 5 {
            let o = f.move_to("enforce", day(d) + 1000);
            assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("unexplained") && err.contains("nothing moved"),
                "{err}"
            );
            // Status names the open difference and the closed gate.
            let s = lakesweep(&[
                "status",
                f.table.to_str().unwrap(),
                "--now",
                &(day(d) + 1000).to_string(),
            ]);
            let text = String::from_utf8_lossy(&s.stdout);
            assert!(
                text.contains("OPEN") && text.contains("ghost") && text.contains("GATE closed"),
                "{text}"
            );
        }
        if d == 13 {
            // Clean since day 6, but fourteen days are asked for.
            let o = f.move_to("enforce", day(d) + 1000);
            assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("spanning 13 whole days"),
                "{}",
                out_text(&o)
            );
        }
    }
    assert!(f.exists(&hidden) && f.exists(&mid));
    // Shadow runs go forward in time: a run dated back is refused.
    let o = lakesweep(&[
        "sweep",
        f.table.to_str().unwrap(),
        "--fleet",
        &f.fleet(),
        "--compare-with",
        f.dir.join("their-list.txt").to_str().unwrap(),
        "--now",
        &day(3).to_string(),
        "--allow-future-now",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("forward in time"),
        "{}",
        out_text(&o)
    );
    let o = f.move_to("enforce", day(14) + 1000);
    assert!(o.status.success(), "{}", out_text(&o));
    let fleet: Value = serde_json::from_str(&std::fs::read_to_string(f.fleet()).unwrap()).unwrap();
    assert_eq!(fleet["cohorts"][0]["mode"], "enforce");
    // The move is recorded with who and why, and status shows the rollout.
    let s = json(&lakesweep(&[
        "status",
        f.table.to_str().unwrap(),
        "--json",
        "--now",
        &(day(14) + 2000).to_string(),
    ]));
    let r = &s[0]["rollout"];
    assert_eq!(r["mode"], "enforce", "{r}");
    let last = r["moves"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["by"].as_str(), last["to"].as_str()),
        (Some("alice"), Some("enforce"))
    );
    assert_eq!(r["comparisons"].as_array().unwrap().len(), 15);
    // The first enforce run deletes what both agreed on, keeps the hidden
    // file, and the table reads the same.
    let rows = shadow_py(&["rows", f.table.to_str().unwrap()])["rows"].clone();
    let v = f.sweep(day(15), &their_list(&f.table, 14));
    assert_eq!(v["mode"]["mode"], "enforce", "{v}");
    assert_eq!(v["approval"]["granted"], true, "{v}");
    for k in f.orphans() {
        assert!(!f.exists(&k), "{k} kept in enforce: {v}");
    }
    assert!(f.exists(&hidden));
    assert_eq!(
        shadow_py(&["rows", f.table.to_str().unwrap()])["rows"],
        rows
    );
    // Back to shadow at any time, recorded; then nothing is approved.
    let o = f.move_to("shadow", day(15) + 1000);
    assert!(o.status.success(), "{}", out_text(&o));
    let v = f.sweep(day(16), &their_list(&f.table, 14));
    assert_eq!(v["mode"]["mode"], "shadow");
}

#[test]
fn a_table_of_a_fleet_swept_without_its_fleet_deletes_nothing() {
    let f = Fleet::new("nofleet");
    let start = clock_ms();
    // Joined the fleet in shadow...
    f.sweep(start, &their_list(&f.table, 0));
    // ...then swept without it, past every quarantine: nothing approved.
    for d in 1..=4 {
        let v = json(&lakesweep(&[
            "sweep",
            f.table.to_str().unwrap(),
            "--now",
            &(start + d * DAY).to_string(),
            "--allow-future-now",
            "--quarantine",
            "0ms",
            "--json",
        ]));
        assert_eq!(v["approval"]["granted"], false, "{v}");
        if d == 4 {
            let why = v["approval"]["differences"].to_string();
            assert!(why.contains("give the fleet document"), "{why}");
        }
    }
    for k in f.orphans() {
        assert!(f.exists(&k));
    }
    // A comparison without the fleet is refused by the command line.
    let o = lakesweep(&[
        "sweep",
        f.table.to_str().unwrap(),
        "--compare-with",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(64), "{}", out_text(&o));
}
