//! Hostile files through the real component in wasmtime, with the default
//! memory budget (1 GiB): a table metadata document with 420,000 snapshots
//! (about 150 MB) and a Delta checkpoint whose footer holds 100,000 row
//! groups. Each must end in a clear refusal naming the file and the budget,
//! never a trap, and the `lakesweep` process must stay well under the budget
//! (peak RSS measured by the parent, Python's `resource` module).

mod common;

use std::path::Path;

use common::*;
use serde_json::Value;

/// Runs `lakesweep ARGS` under a parent that reports its peak RSS.
fn measured(args: &[&str]) -> (i32, String, u64) {
    const PARENT: &str = "import json, resource, subprocess, sys\n\
        p = subprocess.run(sys.argv[1:], capture_output=True)\n\
        print(json.dumps({'code': p.returncode, 'stderr': p.stderr.decode(errors='replace'),\n\
                          'maxrss_kb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))\n";
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(PARENT)
        .arg(env!("CARGO_BIN_EXE_lakesweep"))
        .args(args)
        .env("LAKESWEEP_WASM", repo().join("target/lakesweep.wasm"))
        .output()
        .expect("python3 (scripts/test.sh puts its virtual environment on PATH)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["code"].as_i64().unwrap() as i32,
        v["stderr"].as_str().unwrap().to_owned(),
        v["maxrss_kb"].as_u64().unwrap() * 1024,
    )
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lakesweep-budget-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A v2 metadata document with `n` snapshots (each with a long manifest-list path).
fn huge_metadata(dir: &Path, n: usize) -> u64 {
    use std::io::Write;
    let loc = format!("file://{}", dir.display());
    let path = dir.join("metadata/v1.metadata.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    write!(
        f,
        r#"{{"format-version":2,"table-uuid":"6f1e8f0c-0000-4000-8000-00000000b00d","location":"{loc}","last-sequence-number":{n},"last-updated-ms":1,"last-column-id":1,"current-schema-id":0,"schemas":[{{"type":"struct","schema-id":0,"fields":[]}}],"default-spec-id":0,"partition-specs":[{{"spec-id":0,"fields":[]}}],"last-partition-id":999,"default-sort-order-id":0,"sort-orders":[],"properties":{{}},"current-snapshot-id":{n},"snapshots":["#
    )
    .unwrap();
    for i in 1..=n {
        if i > 1 {
            f.write_all(b",").unwrap();
        }
        write!(
            f,
            r#"{{"snapshot-id":{i},"timestamp-ms":{i},"sequence-number":{i},"summary":{{"operation":"append"}},"manifest-list":"{loc}/metadata/snap-{i:020}-1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef-0123456789abcdef0123456789abcdef0123456789abcdef.avro"}}"#
        )
        .unwrap();
    }
    f.write_all(b"]}").unwrap();
    f.flush().unwrap();
    drop(f);
    std::fs::write(dir.join("metadata/version-hint.text"), "1").unwrap();
    std::fs::metadata(&path).unwrap().len()
}

#[test]
fn hostile_files_are_refused_by_name_within_the_budget() {
    const GIB: u64 = 1 << 30;

    // 1. A metadata document with 420,000 snapshots.
    let d = scratch("metadata");
    let size = huge_metadata(&d, 420_000);
    assert!(size > 140_000_000, "{size}");
    let (code, err, rss) = measured(&["plan", d.to_str().unwrap()]);
    eprintln!(
        "metadata document of {} MiB: exit {code}, peak RSS {} MiB",
        size >> 20,
        rss >> 20
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("memory budget of 1024 MiB"), "{err}");
    assert!(err.contains("v1.metadata.json"), "{err}");
    assert!(
        !err.contains("wasm backtrace") && !err.contains("trapped"),
        "{err}"
    );
    assert!(
        rss < GIB,
        "peak RSS {} MiB for a {} MiB document",
        rss >> 20,
        size >> 20
    );
    // With a budget that covers it, the same document is read (and then
    // refused for its missing manifest lists, not for memory).
    let (code, err, _) = measured(&["plan", d.to_str().unwrap(), "--memory-budget", "3GiB"]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains("memory budget"), "{err}");
    let _ = std::fs::remove_dir_all(&d);

    // 2. A Delta checkpoint whose footer lists 100,000 row groups.
    let d = scratch("checkpoint");
    let log = d.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let cp = log.join("00000000000000000010.checkpoint.parquet");
    const WRITE: &str = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
        n = 100000\n\
        add = pa.array([{'path': 'part-%06d-0123456789abcdef0123456789abcdef.parquet' % i, 'size': 1} for i in range(n)],\n\
                       type=pa.struct([('path', pa.string()), ('size', pa.int64())]))\n\
        remove = pa.array([None] * n, type=pa.struct([('path', pa.string())]))\n\
        pq.write_table(pa.table({'add': add, 'remove': remove}), sys.argv[1], row_group_size=1)\n";
    let o = std::process::Command::new("python3")
        .args(["-c", WRITE, cp.to_str().unwrap()])
        .output()
        .expect("python3 with pyarrow");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (code, err, rss) = measured(&["plan", d.to_str().unwrap(), "--format", "delta"]);
    eprintln!(
        "checkpoint of {} MiB, 100,000 row groups: exit {code}, peak RSS {} MiB",
        std::fs::metadata(&cp).unwrap().len() >> 20,
        rss >> 20
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("memory budget of 1024 MiB"), "{err}");
    assert!(err.contains("checkpoint.parquet"), "{err}");
    assert!(rss < GIB / 2, "peak RSS {} MiB", rss >> 20);
    let _ = std::fs::remove_dir_all(&d);
}
