//! Mutation tests of every parser over the real pyiceberg files (the stable
//! counterpart of the `fuzz/` targets): any truncation, byte flip or splice
//! yields a value or a typed error, never a panic; and a truncated manifest or
//! manifest list of a retained snapshot never yields a plan.

mod common;

use common::*;
use lakesweep::codec::avro::{rewrite, Container, Rename};
use lakesweep::spec::delta;
use lakesweep::spec::iceberg::{for_each_manifest_entry, read_manifest_list, TableMetadata};
use lakesweep::{PageClassifier, SealedPlan, Session};
use proptest::prelude::*;

/// Every file under the fixture tables' `metadata/` folders and the Delta
/// fixtures' `_delta_log/` folders, as (URI, bytes).
fn metadata_files() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let delta = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta");
    for t in ["events", "simple"] {
        let log = delta.join(t).join("_delta_log");
        let mut names: Vec<_> = std::fs::read_dir(&log)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json") || n.ends_with(".parquet"))
            .collect();
        names.sort();
        for n in names {
            let bytes = std::fs::read(log.join(&n)).unwrap();
            out.push((format!("file://{}/{n}", log.display()), bytes));
        }
    }
    for t in tables() {
        let dir = vpath(&format!("{}/metadata", t.location)).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            out.push((format!("{}/metadata/{n}", t.location), bytes));
        }
    }
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Truncate(usize),
    Flip(usize, u8),
    Splice(usize, Vec<u8>),
}

fn mutate(bytes: &[u8], m: &Mutation) -> Vec<u8> {
    let mut b = bytes.to_vec();
    match m {
        Mutation::Truncate(n) => b.truncate(n % (bytes.len() + 1)),
        Mutation::Flip(i, x) if !b.is_empty() => {
            let i = i % b.len();
            b[i] ^= x | 1;
        }
        Mutation::Flip(..) => {}
        Mutation::Splice(i, ins) => {
            let i = i % (b.len() + 1);
            b.splice(i..i, ins.iter().copied());
        }
    }
    b
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, v)| Mutation::Splice(i, v)),
    ]
}

/// Feeds `bytes` to every parser; returns whether any accepted it.
fn parse_all(uri: &str, bytes: &[u8]) -> bool {
    let mut ok = TableMetadata::parse(uri, bytes).is_ok();
    ok |= TableMetadata::probe_owner(uri, bytes).is_ok();
    ok |= read_manifest_list(uri, bytes).is_ok();
    ok |= for_each_manifest_entry(uri, bytes, |_, _, _| {}).is_ok();
    if let Ok(c) = Container::open(bytes) {
        ok |= c.for_each_block(|_, _| Ok(())).is_ok();
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        ok |= SealedPlan::from_json(text).is_ok();
        ok |= PageClassifier::load_hex(text).is_ok();
    }
    ok |= PageClassifier::load(bytes.to_vec()).is_ok();
    ok |= delta::parse_json_actions(uri, bytes).is_ok();
    ok |= delta::parse_parquet_actions(uri, bytes).is_ok();
    ok |= lakesweep::digest_manifest(uri, bytes).is_ok();
    ok |= lakesweep::digest_checkpoint(uri, bytes).is_ok();
    let rename = |p: &str| Some(format!("s3://scratch/{p}"));
    let r = Rename {
        fields: &["manifest_path", "file_path"],
        f: &rename,
        length: None,
    };
    if let Ok((out, _)) = rewrite(bytes, &r) {
        // What the rewriter writes, any reader reads.
        assert!(
            Container::open(&out).is_ok(),
            "{uri}: a rewrite that does not open"
        );
        ok = true;
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        ok |= lakesweep::stop::StopDocument::parse(text).is_ok();
        ok |= lakesweep::fleet::Fleet::parse(text).is_ok();
        let _ = lakesweep::comparison::their_keys("s3://b/t", &[], text);
        let _ = lakesweep::stop::halt_document(Some(text), "r", "b", 1);
    }
    ok
}

/// Every manifest list and manifest of the fixtures, rewritten with its
/// paths renamed into another location, reads back entry for entry with
/// exactly those paths renamed.
#[test]
fn every_real_manifest_rewritten_reads_the_same_entries_renamed() {
    let rename = |p: &str| Some(format!("s3://scratch{}", p.trim_start_matches("file://")));
    let r = Rename {
        fields: &["manifest_path", "file_path", "referenced_data_file"],
        f: &rename,
        length: None,
    };
    let mut lists = 0;
    let mut manifests = 0;
    for (uri, bytes) in metadata_files() {
        if !uri.ends_with(".avro") {
            continue;
        }
        let (out, _) = rewrite(&bytes, &r).unwrap();
        if let Ok(before) = read_manifest_list(&uri, &bytes) {
            let after = read_manifest_list(&uri, &out).unwrap();
            assert_eq!(before.len(), after.len());
            for (b, a) in before.iter().zip(&after) {
                assert_eq!(rename(&b.path), Some(a.path.clone()), "{uri}");
            }
            lists += 1;
            continue;
        }
        let mut before = Vec::new();
        for_each_manifest_entry(&uri, &bytes, |s, c, p| before.push((s, c, p.to_owned()))).unwrap();
        let mut after = Vec::new();
        for_each_manifest_entry(&uri, &out, |s, c, p| after.push((s, c, p.to_owned()))).unwrap();
        let want: Vec<_> = before
            .into_iter()
            .map(|(s, c, p)| (s, c, rename(&p).unwrap()))
            .collect();
        assert_eq!(want, after, "{uri}");
        manifests += 1;
    }
    assert!(
        lists >= 2 && manifests >= 2,
        "{lists} lists, {manifests} manifests"
    );
}

#[test]
fn every_unmutated_file_parses() {
    let mut parsed = 0;
    for (uri, bytes) in metadata_files() {
        let name = uri.rsplit('/').next().unwrap();
        if name.starts_with("00099-") || name.ends_with(".text") {
            continue; // the planted orphan metadata JSON, the version hint
        }
        assert!(parse_all(&uri, &bytes), "{uri} parses");
        parsed += 1;
    }
    // Not vacuous: the fixtures' logs and metadata folders were read.
    assert!(parsed >= 10, "only {parsed} fixture files parsed");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn mutated_inputs_never_panic(file in any::<prop::sample::Index>(), m in mutation()) {
        let files = metadata_files();
        let (uri, bytes) = &files[file.index(files.len())];
        let _ = parse_all(uri, &mutate(bytes, &m));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn a_truncated_manifest_or_list_never_yields_a_plan(file in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let t = tables().into_iter().find(|t| t.name == "events").unwrap();
        // The Avro files a retained snapshot of `events` references.
        let run = run_native(t.config(), &HostOptions::for_table(&t)).unwrap();
        let avro: Vec<String> = run
            .verdicts()
            .into_iter()
            .filter(|(k, d)| k.ends_with(".avro") && d.verdict == lakesweep::Verdict::Referenced)
            .map(|(k, _)| format!("{}/{k}", t.location))
            .collect();
        let uri = &avro[file.index(avro.len())];
        let bytes = std::fs::read(vpath(uri).unwrap()).unwrap();
        let mut opts = HostOptions::for_table(&t);
        opts.replace.insert(uri.clone(), bytes[..cut.index(bytes.len())].to_vec());
        let mut s = Session::start(t.config()).unwrap();
        let got = drive(&mut s, &t.metadata_location, &opts);
        prop_assert!(got.is_err(), "truncated {uri} gave a plan");
    }
}

/// Offsets just after each Avro block of a container (after its 16-byte sync
/// marker), excluding the file's end: every place a cut leaves a shorter,
/// well-formed container.
fn block_boundaries(bytes: &[u8]) -> Vec<usize> {
    // The header ends with the sync marker; every block ends with it too.
    let Ok(c) = Container::open(bytes) else {
        return Vec::new();
    };
    let sync = c.sync_marker();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 16 <= bytes.len() {
        if bytes[i..i + 16] == sync {
            let end = i + 16;
            if end < bytes.len() {
                out.push(end);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn every_manifest_list_and_manifest_cut_at_a_block_boundary_is_refused() {
    let mut cuts = 0;
    for t in tables() {
        let run = run_native(t.config(), &HostOptions::for_table(&t)).unwrap();
        let referenced: Vec<String> = run
            .verdicts()
            .into_values()
            .filter(|d| d.verdict == lakesweep::Verdict::Referenced && d.key.ends_with(".avro"))
            .map(|d| d.key)
            .collect();
        assert!(!referenced.is_empty(), "{}", t.name);
        for uri in referenced {
            let bytes = std::fs::read(vpath(&uri).unwrap()).unwrap();
            for at in block_boundaries(&bytes) {
                cuts += 1;
                let mut opts = HostOptions::for_table(&t);
                opts.replace.insert(uri.clone(), bytes[..at].to_vec());
                let r = run_native(t.config(), &opts);
                assert!(
                    r.is_err(),
                    "{}: `{uri}` cut at byte {at} of {} still planned",
                    t.name,
                    bytes.len()
                );
            }
        }
    }
    assert!(cuts > 0, "no block boundary was cut");
}
