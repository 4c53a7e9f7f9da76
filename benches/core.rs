//! Core benchmarks (issue 2). Run: `cargo bench --bench core`.
//!
//! 1. Manifest decoding throughput on large generated Iceberg v2 manifests
//!    (column statistics maps for 24 columns, deflate, written by the
//!    `apache-avro` crate, an independent writer) with lakesweep's projecting
//!    reader, the `apache-avro` crate's generic reader, and fastavro (Python,
//!    `benches/fastavro_decode.py`) on the same files, in the same run.
//! 2. Keep-set bytes per referenced file, from a real session over a table
//!    made of those manifests.
//! 3. Page classification keys per second: native [`PageClassifier`] and the
//!    same through the component (`target/lakesweep.wasm`) in wasmtime, a
//!    page as records (`classify`) and in columns (`classify_columns`).
//! 4. The Delta replay's path table: hashbrown with foldhash (fixed seed)
//!    against the standard library's `HashMap` it replaced, same paths.
//!
//! Without `--bench` (as under `cargo test --all-targets`) it runs a small
//! smoke pass with the same code and checks that the three readers agree.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use apache_avro::types::Value as AV;
use apache_avro::{Codec, DeflateSettings, Schema, Writer};
use common::{drive, HostOptions};
use lakesweep::spec::iceberg::for_each_manifest_entry;
use lakesweep::{ListedObject, PageClassifier, PageColumns, Session, SessionConfig};

mod wit {
    wasmtime::component::bindgen!({ path: "wit", world: "lakesweep" });
}

const LOC: &str = "file:///bench/db/events";
const NOW: i64 = 1_800_000_000_000;
const OLD: i64 = NOW - 30 * 86_400_000;
const COLUMNS: i32 = 24;

struct Scale {
    manifests: usize,
    entries: usize,
    small_entries: usize,
    reps: usize,
    page: usize,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    // `cargo bench --bench core -- classify paths`: only the sections named
    // (decode, small, classify, paths); none named, all of them.
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |section: &str| named.is_empty() || named.iter().any(|n| n == section);
    let scale = if full {
        Scale {
            manifests: 8,
            entries: 12_500,
            small_entries: 250_000,
            reps: 5,
            page: 1000,
        }
    } else {
        Scale {
            manifests: 2,
            entries: 300,
            small_entries: 1000,
            reps: 1,
            page: 100,
        }
    };
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let mut scale = scale;
    if let Some(m) = env("LAKESWEEP_BENCH_MANIFESTS") {
        scale.manifests = m;
    }
    if let Some(e) = env("LAKESWEEP_BENCH_ENTRIES") {
        scale.entries = e;
    }
    // More repetitions give a profiler more samples of the timed loops.
    if let Some(r) = env("LAKESWEEP_BENCH_REPS") {
        scale.reps = r;
    }
    let files = write_manifests(&scale);
    let total_bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
    let n = (scale.manifests * scale.entries) as u64;
    println!(
        "manifests: {} files x {} entries, {} columns of statistics, deflate: {:.1} MiB on disk",
        scale.manifests,
        scale.entries,
        COLUMNS,
        total_bytes as f64 / 1048576.0
    );

    if wants("decode") {
        // 1. Decoding.
        let ours = best_of(scale.reps, || decode_all(&files));
        let generic = best_of(scale.reps, || {
            let mut count = 0u64;
            for (_, b) in &files {
                for v in apache_avro::Reader::new(&b[..]).unwrap() {
                    v.unwrap();
                    count += 1;
                }
            }
            count
        });
        assert_eq!(ours.1, n, "lakesweep decoded every entry");
        assert_eq!(generic.1, n, "apache-avro decoded every entry");
        // Not only as many entries: the same paths, exactly the ones written
        // (kills a projecting reader that reads the wrong field, or skips one
        // entry and repeats another).
        let written: Vec<String> = (0..scale.manifests)
            .flat_map(|m| (0..scale.entries).map(move |e| data_path(m, e)))
            .collect();
        same_paths("lakesweep", &paths_ours(&files), &written);
        same_paths("apache-avro", &paths_generic(&files), &written);
        report("lakesweep projection", ours.0, n, total_bytes);
        report("apache-avro generic Reader", generic.0, n, total_bytes);
        println!(
            "  ratio apache-avro / lakesweep: {:.1}x",
            generic.0.as_secs_f64() / ours.0.as_secs_f64()
        );
        match fastavro(&scale, &files) {
        Some((secs, records, paths)) => {
            assert_eq!(records, n, "fastavro decoded every entry");
            same_paths("fastavro", &paths, &written);
            report(
                "fastavro (Python)",
                Duration::from_secs_f64(secs),
                n,
                total_bytes,
            );
            println!(
                "  ratio fastavro / lakesweep: {:.1}x",
                secs / ours.0.as_secs_f64()
            );
        }
        // Never a silent skip: scripts/test.sh installs fastavro.
        None => panic!(
            "fastavro did not run: this needs `{}` with fastavro (tests/requirements.txt; set LAKESWEEP_PYTHON)",
            common::python()
        ),
    }
    }
    if wants("small") {
        // 1b. Small entries (no column statistics, as a fast append without
        // metrics writes them): the projection against inflating alone.
        let small = write_small_manifests(&scale);
        let small_bytes: usize = small.iter().map(|(_, b)| b.len()).sum();
        let small_n = (scale.manifests * scale.small_entries) as u64;
        println!(
            "small manifests: {} files x {} entries, no statistics, deflate: {:.1} MiB on disk",
            scale.manifests,
            scale.small_entries,
            small_bytes as f64 / 1048576.0
        );
        let small_ours = best_of(scale.reps, || decode_all(&small));
        let inflate = best_of(scale.reps, || {
            let mut count = 0u64;
            for (_, b) in &small {
                let c = lakesweep::codec::avro::Container::open(b).unwrap();
                c.for_each_block(|n, block| {
                    count += n;
                    std::hint::black_box(block);
                    Ok(())
                })
                .unwrap();
            }
            count
        });
        assert_eq!(small_ours.1, small_n, "lakesweep decoded every small entry");
        assert_eq!(inflate.1, small_n, "every block inflated");
        report("lakesweep projection", small_ours.0, small_n, small_bytes);
        report(
            "inflate alone (miniz_oxide)",
            inflate.0,
            small_n,
            small_bytes,
        );
        println!(
            "  ratio lakesweep / inflate alone: {:.2}x",
            small_ours.0.as_secs_f64() / inflate.0.as_secs_f64()
        );
    }
    if wants("classify") {
        // 2. Keep set: a real session over a table of these manifests.
        let (opts, metadata) = table(&files);
        if let Some(dir) = std::env::var_os("LAKESWEEP_BENCH_TABLE_DIR") {
            write_table(&PathBuf::from(dir), &opts, &metadata);
        }
        let cfg = SessionConfig::new(LOC, &metadata, NOW, 3 * 86_400_000);
        let mut session = Session::start(cfg).unwrap();
        let t = Instant::now();
        let run = drive(&mut session, &metadata, &opts).unwrap();
        let plan_time = t.elapsed();
        let plan = run.plan();
        let s = &plan.summary;
        let keep_set = session.export_keep_set().unwrap();
        println!(
            "keep set: {} referenced keys, {} listed, {} candidates; planned in {:.2} s",
            s.referenced_keys,
            s.listed.count,
            plan.delete.len(),
            plan_time.as_secs_f64()
        );
        println!(
        "  in memory: {:.1} bytes per referenced file ({} bytes); exported: {:.1} bytes per referenced file ({} bytes)",
        s.keep_set_bytes as f64 / s.referenced_keys as f64,
        s.keep_set_bytes,
        keep_set.len() as f64 / s.referenced_keys as f64,
        keep_set.len()
    );
        assert_eq!(
            plan.delete.len(),
            n as usize / 10,
            "the orphans, nothing else"
        );

        // 3. Page classification, native and through the component.
        let listing = common::list(LOC, &opts);
        let pages: Vec<Vec<ListedObject>> =
            listing.chunks(scale.page).map(|c| c.to_vec()).collect();
        let keys = listing.len() as u64;
        let native = PageClassifier::load(keep_set.clone()).unwrap();
        let nat = best_of(scale.reps, || {
            let mut c = 0u64;
            for p in &pages {
                c += native.classify(p.clone()).unwrap().len() as u64;
            }
            c
        });
        assert_eq!(nat.1, keys);
        println!(
            "page classification ({} keys, pages of {}):",
            keys, scale.page
        );
        // The same pages in columns: the same verdicts and reasons, checked.
        let columns: Vec<PageColumns> = pages.iter().map(|p| PageColumns::of(p).unwrap()).collect();
        for (p, c) in pages.iter().zip(&columns) {
            let rows = native.classify(p.clone()).unwrap();
            let cols = native.classify_columns(c.clone()).unwrap();
            for (i, d) in rows.iter().enumerate() {
                assert_eq!(
                    (d.verdict, d.detail.as_str()),
                    (cols.verdicts[i], cols.detail(i))
                );
            }
        }
        let nat_cols = best_of(scale.reps, || {
            let mut c = 0u64;
            for p in &columns {
                c += native.classify_columns(p.clone()).unwrap().verdicts.len() as u64;
            }
            c
        });
        assert_eq!(nat_cols.1, keys);
        let per_s = |d: Duration| keys as f64 / d.as_secs_f64();
        println!("  native, records:    {:>12.0} keys/s", per_s(nat.0));
        println!(
            "  native, columns:    {:>12.0} keys/s ({:.2}x records)",
            per_s(nat_cols.0),
            nat.0.as_secs_f64() / nat_cols.0.as_secs_f64()
        );
        let Some((comp, comp_cols)) = component_classify(&keep_set, &pages, &columns, scale.reps)
        else {
            // Never a silent skip: scripts/test.sh builds the component first.
            panic!(
            "the component was not found at {}: run scripts/build-component.sh first (or set LAKESWEEP_WASM)",
            wasm_path().display()
        )
        };
        println!(
            "  component, records: {:>12.0} keys/s (wasmtime; {:.2} of native records)",
            per_s(comp),
            nat.0.as_secs_f64() / comp.as_secs_f64()
        );
        println!(
        "  component, columns: {:>12.0} keys/s (wasmtime; {:.2} of native columns, {:.2}x component records)",
        per_s(comp_cols),
        nat_cols.0.as_secs_f64() / comp_cols.as_secs_f64(),
        comp.as_secs_f64() / comp_cols.as_secs_f64()
    );
    }
    if wants("paths") {
        // 4. The hash table of a Delta replay's live files (src/hashing.rs):
        // hashbrown with foldhash at a fixed seed against the standard
        // library's HashMap (SipHash-1-3) it replaced, on the same paths.
        let paths: u64 = if full { 1_000_000 } else { 10_000 };
        let keys: Vec<String> = (0..paths)
            .map(|i| {
                format!(
                "bucket={}/part-00000-{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}-c000.snappy.parquet",
                i % 1000,
                i.wrapping_mul(2_654_435_761) as u32,
                i & 0xffff,
                i & 0xfff,
                (i >> 12) & 0xfff,
                i.wrapping_mul(40_503)
            )
            })
            .collect();
        let std_map = best_of(scale.reps, || {
            let mut m = std::collections::HashMap::new();
            for k in &keys {
                m.insert(k.clone(), ());
            }
            keys.iter().filter(|k| m.contains_key(k.as_str())).count() as u64
        });
        let fold_map = best_of(scale.reps, || {
            let mut m = hashbrown::HashMap::with_hasher(foldhash::fast::FixedState::default());
            for k in &keys {
                m.insert(k.clone(), ());
            }
            keys.iter().filter(|k| m.contains_key(k.as_str())).count() as u64
        });
        assert_eq!(std_map.1, paths);
        assert_eq!(fold_map.1, paths);
        println!("path table ({paths} Delta-style paths inserted, then each looked up):");
        println!(
            "  hashbrown + foldhash: {:>12.0} paths/s",
            paths as f64 / fold_map.0.as_secs_f64()
        );
        println!(
            "  std HashMap (SipHash): {:>11.0} paths/s (std / hashbrown = {:.2}x the time)",
            paths as f64 / std_map.0.as_secs_f64(),
            std_map.0.as_secs_f64() / fold_map.0.as_secs_f64()
        );
    }
}

/// Entries lakesweep's reader decodes in `files`.
fn decode_all(files: &[(PathBuf, Vec<u8>)]) -> u64 {
    let mut count = 0u64;
    for (p, b) in files {
        for_each_manifest_entry(&p.to_string_lossy(), b, |_, _, _| count += 1).unwrap();
    }
    count
}

/// Best wall time of `reps` runs, and the run's result.
fn best_of(reps: usize, mut f: impl FnMut() -> u64) -> (Duration, u64) {
    let mut best = Duration::MAX;
    let mut out = 0;
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        out = std::hint::black_box(f());
        best = best.min(t.elapsed());
    }
    (best, out)
}

fn report(name: &str, d: Duration, entries: u64, bytes: usize) {
    let s = d.as_secs_f64();
    println!(
        "  {name:<28} {:>8.1} ms  {:>10.0} entries/s  {:>7.1} MiB/s (file bytes)",
        s * 1000.0,
        entries as f64 / s,
        bytes as f64 / 1048576.0 / s
    );
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let d = target.join("bench");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The Iceberg v2 `manifest_entry` schema with a two-field partition and
/// every statistics map, as Java and pyiceberg write it.
fn manifest_schema() -> Schema {
    let kv = |name: &str, id: u32, v: &str| {
        format!(
            r#"{{"name":"{name}","type":["null",{{"type":"array","items":{{"type":"record","name":"k{id}_v{}","fields":[{{"name":"key","type":"int","field-id":{id}}},{{"name":"value","type":"{v}","field-id":{}}}]}},"logicalType":"map"}}],"default":null,"field-id":{}}}"#,
            id + 1,
            id + 1,
            id - 1
        )
    };
    let json = format!(
        r#"{{"type":"record","name":"manifest_entry","fields":[
          {{"name":"status","type":"int","field-id":0}},
          {{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1}},
          {{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3}},
          {{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4}},
          {{"name":"data_file","type":{{"type":"record","name":"r2","fields":[
            {{"name":"content","type":"int","field-id":134}},
            {{"name":"file_path","type":"string","field-id":100}},
            {{"name":"file_format","type":"string","field-id":101}},
            {{"name":"partition","type":{{"type":"record","name":"r102","fields":[
              {{"name":"day","type":["null","int"],"default":null,"field-id":1000}},
              {{"name":"category","type":["null","string"],"default":null,"field-id":1001}}]}},"field-id":102}},
            {{"name":"record_count","type":"long","field-id":103}},
            {{"name":"file_size_in_bytes","type":"long","field-id":104}},
            {},{},{},{},{},{},
            {{"name":"key_metadata","type":["null","bytes"],"default":null,"field-id":131}},
            {{"name":"split_offsets","type":["null",{{"type":"array","items":"long","element-id":133}}],"default":null,"field-id":132}},
            {{"name":"equality_ids","type":["null",{{"type":"array","items":"int","element-id":136}}],"default":null,"field-id":135}},
            {{"name":"sort_order_id","type":["null","int"],"default":null,"field-id":140}}
          ]}},"field-id":2}}]}}"#,
        kv("column_sizes", 117, "long"),
        kv("value_counts", 119, "long"),
        kv("null_value_counts", 121, "long"),
        kv("nan_value_counts", 138, "long"),
        kv("lower_bounds", 126, "bytes"),
        kv("upper_bounds", 129, "bytes"),
    );
    Schema::parse_str(&json).unwrap()
}

/// xorshift: deterministic statistics values.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn some(v: AV) -> AV {
    AV::Union(1, Box::new(v))
}

fn entry(rng: &mut Rng, path: String) -> AV {
    let map_long = |rng: &mut Rng| {
        some(AV::Array(
            (1..=COLUMNS)
                .map(|c| {
                    AV::Record(vec![
                        ("key".into(), AV::Int(c)),
                        ("value".into(), AV::Long((rng.next() % 1_000_000) as i64)),
                    ])
                })
                .collect(),
        ))
    };
    let map_bytes = |rng: &mut Rng| {
        some(AV::Array(
            (1..=COLUMNS)
                .map(|c| {
                    let len = 4 + (rng.next() % 13) as usize;
                    let b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                    AV::Record(vec![
                        ("key".into(), AV::Int(c)),
                        ("value".into(), AV::Bytes(b)),
                    ])
                })
                .collect(),
        ))
    };
    let partition = AV::Record(vec![
        ("day".into(), some(AV::Int(20_000))),
        ("category".into(), some(AV::String("clicks".into()))),
    ]);
    entry_of(
        path,
        partition,
        vec![
            ("column_sizes".into(), map_long(rng)),
            ("value_counts".into(), map_long(rng)),
            ("null_value_counts".into(), map_long(rng)),
            ("nan_value_counts".into(), map_long(rng)),
            ("lower_bounds".into(), map_bytes(rng)),
            ("upper_bounds".into(), map_bytes(rng)),
            ("key_metadata".into(), AV::Union(0, Box::new(AV::Null))),
            ("split_offsets".into(), some(AV::Array(vec![AV::Long(4)]))),
            ("equality_ids".into(), AV::Union(0, Box::new(AV::Null))),
            ("sort_order_id".into(), some(AV::Int(0))),
        ],
    )
}

/// A manifest entry ADDED by snapshot 1: `partition`, then `more` data
/// file fields after `file_size_in_bytes`.
fn entry_of(path: String, partition: AV, more: Vec<(String, AV)>) -> AV {
    let mut data_file = vec![
        ("content".into(), AV::Int(0)),
        ("file_path".into(), AV::String(path)),
        ("file_format".into(), AV::String("PARQUET".into())),
        ("partition".into(), partition),
        ("record_count".into(), AV::Long(100_000)),
        ("file_size_in_bytes".into(), AV::Long(64 << 20)),
    ];
    data_file.extend(more);
    AV::Record(vec![
        ("status".into(), AV::Int(1)),
        ("snapshot_id".into(), some(AV::Long(1))),
        ("sequence_number".into(), some(AV::Long(1))),
        ("file_sequence_number".into(), some(AV::Long(1))),
        ("data_file".into(), AV::Record(data_file)),
    ])
}

fn data_path(m: usize, e: usize) -> String {
    format!("{LOC}/data/day=20000/category=clicks/{m:03}-{e:06}-0a1b2c3d.parquet")
}

/// Writes the manifests to `target/bench/` (fastavro reads them there).
fn write_manifests(scale: &Scale) -> Vec<(PathBuf, Vec<u8>)> {
    let schema = manifest_schema();
    let dir = out_dir();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..scale.manifests)
        .map(|m| {
            let bytes = deflated(
                &schema,
                (0..scale.entries).map(|e| entry(&mut rng, data_path(m, e))),
            );
            let p = dir.join(format!("manifest-{}-{m}.avro", scale.entries));
            std::fs::write(&p, &bytes).unwrap();
            (p, bytes)
        })
        .collect()
}

/// An Avro container of `records` (deflate), written by apache-avro.
fn deflated(schema: &Schema, records: impl Iterator<Item = AV>) -> Vec<u8> {
    let mut w = Writer::with_codec(
        schema,
        Vec::new(),
        Codec::Deflate(DeflateSettings::default()),
    );
    for r in records {
        w.append(r).unwrap();
    }
    w.into_inner().unwrap()
}

/// Manifests of small entries (no statistics maps), written by apache-avro.
fn write_small_manifests(scale: &Scale) -> Vec<(PathBuf, Vec<u8>)> {
    let schema = Schema::parse_str(
        r#"{"type":"record","name":"manifest_entry","fields":[
          {"name":"status","type":"int","field-id":0},
          {"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},
          {"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},
          {"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4},
          {"name":"data_file","type":{"type":"record","name":"r2","fields":[
            {"name":"content","type":"int","field-id":134},
            {"name":"file_path","type":"string","field-id":100},
            {"name":"file_format","type":"string","field-id":101},
            {"name":"partition","type":{"type":"record","name":"r102","fields":[
              {"name":"day","type":["null","int"],"default":null,"field-id":1000}]},"field-id":102},
            {"name":"record_count","type":"long","field-id":103},
            {"name":"file_size_in_bytes","type":"long","field-id":104}]},"field-id":2}]}"#,
    )
    .unwrap();
    (0..scale.manifests)
        .map(|m| {
            let records = (0..scale.small_entries).map(|e| {
                let partition = AV::Record(vec![("day".into(), some(AV::Int(20_000)))]);
                entry_of(data_path(m, e), partition, Vec::new())
            });
            (
                PathBuf::from(format!("small-{m}.avro")),
                deflated(&schema, records),
            )
        })
        .collect()
}

/// Asserts a reader read exactly the written paths, in order; names the
/// first difference (not 100,000 paths).
fn same_paths(reader: &str, got: &[String], want: &[String]) {
    if let Some(i) = (0..got.len().max(want.len())).find(|&i| got.get(i) != want.get(i)) {
        panic!(
            "{reader} read other paths than were written: {} paths, {} written; first difference at entry {i}: read {:?}, written {:?}",
            got.len(),
            want.len(),
            got.get(i),
            want.get(i)
        );
    }
}

/// Every entry's data file path, in file order, by lakesweep's reader.
fn paths_ours(files: &[(PathBuf, Vec<u8>)]) -> Vec<String> {
    let mut out = Vec::new();
    for (p, b) in files {
        for_each_manifest_entry(&p.to_string_lossy(), b, |_, _, path| {
            out.push(path.to_owned())
        })
        .unwrap();
    }
    out
}

/// Every entry's `data_file.file_path`, in file order, by apache-avro.
fn paths_generic(files: &[(PathBuf, Vec<u8>)]) -> Vec<String> {
    let field = |v: &AV, name: &str| -> AV {
        match v {
            AV::Record(fields) => fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no field {name}")),
            other => panic!("not a record: {other:?}"),
        }
    };
    let mut out = Vec::new();
    for (_, b) in files {
        for v in apache_avro::Reader::new(&b[..]).unwrap() {
            match field(&field(&v.unwrap(), "data_file"), "file_path") {
                AV::String(s) => out.push(s),
                other => panic!("file_path is {other:?}"),
            }
        }
    }
    out
}

/// fastavro's best time, entry count and paths (`None`: python or fastavro missing).
fn fastavro(scale: &Scale, files: &[(PathBuf, Vec<u8>)]) -> Option<(f64, u64, Vec<String>)> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/fastavro_decode.py");
    let out = std::process::Command::new(common::python())
        .arg(script)
        .arg("--paths")
        .arg(scale.reps.to_string())
        .args(files.iter().map(|(p, _)| p))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let paths = v["paths"]
        .as_array()?
        .iter()
        .map(|p| p.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()?;
    Some((v["seconds"].as_f64()?, v["records"].as_u64()?, paths))
}

/// A one-snapshot table over the manifests (served from memory), every data
/// file listed, plus one old orphan per ten referenced files.
fn table(files: &[(PathBuf, Vec<u8>)]) -> (HostOptions, String) {
    let list_schema = Schema::parse_str(
        r#"{"type":"record","name":"manifest_file","fields":[
          {"name":"manifest_path","type":"string","field-id":500},
          {"name":"manifest_length","type":"long","field-id":501},
          {"name":"partition_spec_id","type":"int","field-id":502},
          {"name":"content","type":"int","field-id":517},
          {"name":"sequence_number","type":"long","field-id":515},
          {"name":"min_sequence_number","type":"long","field-id":516},
          {"name":"added_snapshot_id","type":"long","field-id":503},
          {"name":"added_files_count","type":"int","field-id":504},
          {"name":"existing_files_count","type":"int","field-id":505},
          {"name":"deleted_files_count","type":"int","field-id":506},
          {"name":"added_rows_count","type":"long","field-id":512},
          {"name":"existing_rows_count","type":"long","field-id":513},
          {"name":"deleted_rows_count","type":"long","field-id":514}]}"#,
    )
    .unwrap();
    let mut extra = BTreeMap::new();
    let mut w = Writer::with_codec(
        &list_schema,
        Vec::new(),
        Codec::Deflate(DeflateSettings::default()),
    );
    let mut referenced = 0usize;
    for (m, (_, bytes)) in files.iter().enumerate() {
        let uri = format!("{LOC}/metadata/{m:03}-m0.avro");
        w.append(AV::Record(vec![
            ("manifest_path".into(), AV::String(uri.clone())),
            ("manifest_length".into(), AV::Long(bytes.len() as i64)),
            ("partition_spec_id".into(), AV::Int(0)),
            ("content".into(), AV::Int(0)),
            ("sequence_number".into(), AV::Long(1)),
            ("min_sequence_number".into(), AV::Long(1)),
            ("added_snapshot_id".into(), AV::Long(1)),
            ("added_files_count".into(), AV::Int(0)),
            ("existing_files_count".into(), AV::Int(0)),
            ("deleted_files_count".into(), AV::Int(0)),
            ("added_rows_count".into(), AV::Long(0)),
            ("existing_rows_count".into(), AV::Long(0)),
            ("deleted_rows_count".into(), AV::Long(0)),
        ]))
        .unwrap();
        // The entries of manifest `m` (the same paths `write_manifests` used).
        let mut e = 0;
        for_each_manifest_entry(&uri, bytes, |_, _, p| {
            extra.insert(p.to_owned(), (Vec::new(), OLD));
            e += 1;
        })
        .unwrap();
        for o in 0..e / 10 {
            let orphan =
                format!("{LOC}/data/day=20000/category=clicks/orphan-{m:03}-{o:06}.parquet");
            extra.insert(orphan, (Vec::new(), OLD));
        }
        referenced += e;
        extra.insert(uri, (bytes.clone(), OLD));
    }
    let list_uri = format!("{LOC}/metadata/snap-1-1-list.avro");
    extra.insert(list_uri.clone(), (w.into_inner().unwrap(), OLD));
    let metadata = format!("{LOC}/metadata/00001-0a1b.metadata.json");
    let md = serde_json::json!({
        "format-version": 2, "table-uuid": "5d7f7b4e-0000-4000-8000-00000000be4c",
        "location": LOC, "last-sequence-number": 1, "last-updated-ms": OLD,
        "last-column-id": 2, "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "day", "required": false, "type": "int"},
            {"id": 2, "name": "category", "required": false, "type": "string"}]}],
        "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": [
            {"name": "day", "transform": "identity", "source-id": 1, "field-id": 1000},
            {"name": "category", "transform": "identity", "source-id": 2, "field-id": 1001}]}],
        "last-partition-id": 1001, "default-sort-order-id": 0, "sort-orders": [],
        "properties": {}, "current-snapshot-id": 1,
        "refs": {"main": {"snapshot-id": 1, "type": "branch"}},
        "snapshots": [{"snapshot-id": 1, "timestamp-ms": OLD, "manifest-list": list_uri,
                       "summary": {"operation": "append"}, "schema-id": 0}],
        "metadata-log": [],
    });
    extra.insert(metadata.clone(), (serde_json::to_vec(&md).unwrap(), OLD));
    assert!(referenced > 0);
    let opts = HostOptions {
        extra,
        ..HostOptions::synthetic()
    };
    (opts, metadata)
}

/// Writes the table to `dir` (for timing the sidecar on a real directory)
/// and prints the command that plans it.
fn write_table(dir: &std::path::Path, opts: &HostOptions, metadata: &str) {
    let _ = std::fs::remove_dir_all(dir);
    for (uri, (bytes, mtime)) in &opts.extra {
        let rel = uri.strip_prefix(&format!("{LOC}/")).unwrap();
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + Duration::from_millis(*mtime as u64))
            .unwrap();
    }
    let d = dir.display();
    println!(
        "table written to {d}; plan it with:\n  target/release/lakesweep plan {d} --metadata {} --location-map {LOC}=file://{d} --now {NOW} --json",
        metadata.replace(LOC, &format!("file://{d}"))
    );
}

/// `$LAKESWEEP_WASM`, else the repository's `target/lakesweep.wasm`.
fn wasm_path() -> PathBuf {
    std::env::var_os("LAKESWEEP_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/lakesweep.wasm"))
}

/// Classifies every page through the component, as records and in
/// columns; best of `reps` each.
fn component_classify(
    keep_set: &[u8],
    pages: &[Vec<ListedObject>],
    columns: &[PageColumns],
    reps: usize,
) -> Option<(Duration, Duration)> {
    use wasmtime::component::{Component, Linker};
    use wasmtime::{Config, Engine, Store};
    use wit::lakesweep::planner::types as wt;
    let path = wasm_path();
    if !path.exists() {
        return None;
    }
    let mut config = Config::new();
    // `LAKESWEEP_BENCH_PERFMAP=1`: name the component's compiled functions
    // for `perf report` (wasmtime writes /tmp/perf-PID.map); build the
    // component with `CARGO_PROFILE_RELEASE_STRIP=false` to keep its names.
    if std::env::var_os("LAKESWEEP_BENCH_PERFMAP").is_some() {
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
    }
    let engine = Engine::new(&config).unwrap();
    let component = Component::from_file(&engine, &path).unwrap();
    let mut store = Store::new(&engine, ());
    let api = wit::Lakesweep::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
    let pc = api.lakesweep_planner_planner().page_classifier();
    let handle = pc.call_load(&mut store, keep_set).unwrap().ok()?;
    let wpages: Vec<Vec<wt::ListedObject>> = pages
        .iter()
        .map(|p| {
            p.iter()
                .map(|o| wt::ListedObject {
                    key: o.key.clone(),
                    version: wt::ObjectVersion {
                        size: o.size,
                        last_modified_ms: o.last_modified_ms,
                        etag: o.etag.clone(),
                        version_id: o.version_id.clone(),
                    },
                })
                .collect()
        })
        .collect();
    let d = best_of(reps, || {
        let mut c = 0u64;
        for p in &wpages {
            c += pc
                .call_classify(&mut store, handle, p)
                .unwrap()
                .unwrap()
                .len() as u64;
        }
        c
    });
    assert_eq!(d.1 as usize, pages.iter().map(Vec::len).sum::<usize>());
    let wcolumns: Vec<wt::PageColumns> = columns
        .iter()
        .map(|c| wt::PageColumns {
            keys: c.keys.clone(),
            key_ends: c.key_ends.clone(),
            sizes: c.sizes.clone(),
            last_modified_ms: c.last_modified_ms.clone(),
        })
        .collect();
    let (d_cols, n) = best_of(reps, || {
        let mut c = 0u64;
        for p in &wcolumns {
            c += pc
                .call_classify_columns(&mut store, handle, p)
                .unwrap()
                .unwrap()
                .verdicts
                .len() as u64;
        }
        c
    });
    assert_eq!(n, d.1);
    Some((d.0, d_cols))
}
