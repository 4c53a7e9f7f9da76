//! `--manifest-cache`: a second plan reads the digests filed by the first,
//! and makes the same plan; a manifest whose bytes changed since is read
//! again (its identity changed), and a damaged cache file is dropped.

mod common;

use std::path::{Path, PathBuf};

use common::*;

struct Cached {
    stage: Stage,
    cache: PathBuf,
}

impl Cached {
    fn new(name: &str) -> Cached {
        let stage = Stage::new(name);
        let cache = stage.root.join("cache");
        settle();
        Cached { stage, cache }
    }

    /// `plan --json` with the cache folder; with `--manifest-cache` when `cached`.
    fn plan(&self, cached: bool) -> std::process::Output {
        let mut args: Vec<String> = vec!["plan".into(), self.stage.table().display().to_string()];
        args.extend(self.stage.catalog());
        args.extend([
            "--location-map".into(),
            self.stage.map(),
            "--now".into(),
            self.stage.t["now_ms"].to_string(),
            "--older-than".into(),
            "3d".into(),
            "--json".into(),
        ]);
        if cached {
            args.push("--manifest-cache".into());
        }
        lakesweep_with(
            &[("LAKESWEEP_CACHE_DIR", self.cache.display().to_string())],
            &args,
        )
    }

    /// The digest files filed so far.
    fn filed(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let root = self.cache.join("digests");
        for d in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                out.push(f.path());
            }
        }
        out.sort();
        out
    }
}

/// A local file changed under a second ago is not cached (file times
/// advance in clock ticks); waits that out.
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(1100));
}

fn manifests(table: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(table.join("metadata"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with(".avro") && !n.starts_with("snap-")
        })
        .collect();
    out.sort();
    out
}

fn cache_hits(report: &str) -> usize {
    report
        .split(" from the digest cache")
        .next()
        .filter(|s| s.len() < report.len())
        .and_then(|s| s.rsplit('(').next())
        .map_or(0, |n| n.trim().parse().unwrap())
}

#[test]
fn a_second_plan_reads_the_digests_and_makes_the_same_plan() {
    let c = Cached::new("mcache-same");
    let plain = json(&c.plan(false));
    assert!(c.filed().is_empty(), "nothing filed without the flag");
    let first = json(&c.plan(true));
    let n = manifests(&c.stage.table()).len();
    assert!(n >= 2, "the fixture has {n} manifests");
    assert_eq!(c.filed().len(), n, "one digest per manifest");
    let second = json(&c.plan(true));
    for v in [&first, &second] {
        assert_eq!(v["digest"], plain["digest"], "the same plan, byte for byte");
        assert_eq!(deletes(v), deletes(&plain));
    }
    // The human report says where the manifests came from.
    let mut args: Vec<String> = vec!["plan".into(), c.stage.table().display().to_string()];
    args.extend(c.stage.catalog());
    args.extend(["--location-map".into(), c.stage.map(), "--now".into()]);
    args.extend([c.stage.t["now_ms"].to_string(), "--manifest-cache".into()]);
    let o = lakesweep_with(
        &[("LAKESWEEP_CACHE_DIR", c.cache.display().to_string())],
        &args,
    );
    assert!(o.status.success(), "{}", out_text(&o));
    assert_eq!(
        cache_hits(&String::from_utf8_lossy(&o.stdout)),
        n,
        "{}",
        out_text(&o)
    );
}

#[test]
fn a_manifest_rewritten_in_place_is_read_again_not_taken_from_the_cache() {
    let c = Cached::new("mcache-rewritten");
    json(&c.plan(true));
    let filed = c.filed().len();
    // The same length, one byte changed (the last sync marker): the
    // manifest no longer reads, and its cached digest must not stand in.
    let m = &manifests(&c.stage.table())[0];
    let mut b = std::fs::read(m).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0xff;
    std::fs::write(m, &b).unwrap();
    for cached in [false, true] {
        let o = c.plan(cached);
        assert!(!o.status.success(), "cached={cached}: {}", out_text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&*m.file_name().unwrap().to_string_lossy()),
            "{err}"
        );
        assert!(
            !err.contains("digest cache"),
            "not the cache's fault: {err}"
        );
    }
    // Rewritten with its own bytes again: a new identity, read and filed anew.
    b[last] ^= 0xff;
    std::fs::write(m, &b).unwrap();
    settle();
    let v = json(&c.plan(true));
    assert_eq!(deletes(&v), planted(&c.stage.t, &["candidate"]));
    assert_eq!(c.filed().len(), filed + 1, "filed under its new identity");
}

#[test]
fn a_damaged_cache_file_is_dropped_and_the_manifest_read() {
    let c = Cached::new("mcache-damaged");
    let plain = json(&c.plan(false));
    json(&c.plan(true));
    for f in c.filed() {
        let text = std::fs::read_to_string(&f).unwrap();
        // Cut short, and a path changed under an intact checksum line.
        let damaged = if f == c.filed()[0] {
            text[..text.len() / 2].to_owned()
        } else {
            text.replacen("data/", "data/x", 1)
        };
        std::fs::write(&f, damaged).unwrap();
    }
    let v = json(&c.plan(true));
    assert_eq!(v["digest"], plain["digest"]);
    // Dropped and filed again, whole.
    for f in c.filed() {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.starts_with("lakesweep-manifest-digest 2\n"), "{text}");
        assert!(!text.contains("data/x"), "{text}");
    }
}
