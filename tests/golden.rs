//! Golden plans: the sealed plan document and the expiry plan of every
//! fixture table, byte for byte, under fixed inputs. Any change to a plan's bytes (a verdict, a
//! reason, a field, the digest) fails here first; a deliberate change is
//! re-pinned with `LAKESWEEP_BLESS=1 cargo test --test golden` and reviewed
//! in the diff of `tests/golden/`.
//!
//! The fixtures are the project's own (Iceberg tables written by pyiceberg,
//! Delta tables written by deltalake), served under neutral `file:///` roots
//! so the plans do not depend on the checkout's path.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use lakesweep::{SessionConfig, TableFormat};
use serde_json::Value;

const DAY: i64 = 86_400_000;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `plan` with the pinned `tests/golden/<name>.json` (or writes it
/// when `LAKESWEEP_BLESS` is set).
fn pin(name: &str, plan: &str) {
    let file = golden_dir().join(format!("{name}.json"));
    if std::env::var_os("LAKESWEEP_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&file, format!("{plan}\n")).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e} (pin it with LAKESWEEP_BLESS=1)", file.display()));
    assert!(
        want.trim_end() == plan,
        "the plan of {name} changed; review `LAKESWEEP_BLESS=1 cargo test --test golden` and its diff\nwant: {}\ngot:  {plan}",
        want.trim_end()
    );
}

/// The deltalake fixtures' recorded facts.
fn delta_expect(name: &str) -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta");
    let all: Value =
        serde_json::from_slice(&std::fs::read(dir.join("expect.json")).unwrap()).unwrap();
    all[name].clone()
}

fn delta_case(name: &str, days_after: i64, tweak: impl Fn(&mut SessionConfig)) -> String {
    let (cfg, opts) = delta_setup(name, days_after, tweak);
    run_native(cfg, &opts).unwrap().plan_json
}

/// The session config and host of a deltalake fixture judged `days_after`
/// its generation.
fn delta_setup(
    name: &str,
    days_after: i64,
    tweak: impl Fn(&mut SessionConfig),
) -> (SessionConfig, HostOptions) {
    let e = delta_expect(name);
    let location = format!("{VDELTA}/{name}");
    let mut opts = HostOptions::synthetic();
    opts.mtimes = e["mtimes"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
        .collect();
    opts.mtime_base = Some(location.clone());
    let now = e["generated_at_ms"].as_i64().unwrap() + days_after * DAY;
    let mut cfg = SessionConfig::new(&location, "", now, 7 * DAY);
    cfg.format = TableFormat::Delta;
    tweak(&mut cfg);
    (cfg, opts)
}

#[test]
fn iceberg_fixture_plans_are_pinned() {
    let tables = tables();
    assert!(
        tables.len() >= 2,
        "the generated Iceberg fixtures are missing"
    );
    for t in &tables {
        let run = run_native(t.config(), &HostOptions::for_table(t)).unwrap();
        pin(&format!("iceberg-{}", t.name), &run.plan_json);
        // The same table judged a year later, with every snapshot's files
        // old: the reasons and the digest move, the live files do not.
        let mut cfg = t.config();
        cfg.now_ms += 365 * DAY;
        let run = run_native(cfg, &HostOptions::for_table(t)).unwrap();
        pin(&format!("iceberg-{}-later", t.name), &run.plan_json);
    }
}

#[test]
fn plans_from_manifest_digests_and_json_pages_are_the_pinned_plans() {
    for t in &tables() {
        let cfg = t.config();
        let start = cfg.metadata_location.clone();
        let mut p = Digesting(lakesweep::Session::start(cfg).unwrap(), 0, 0);
        let run = drive(&mut p, &start, &HostOptions::for_table(t)).unwrap();
        assert!(p.1 > 0, "{}: no manifest was digested", t.name);
        pin(&format!("iceberg-{}", t.name), &run.plan_json);
    }
}

/// `by_name` (a plan from a listing by names) is the pinned plan `name`
/// but for what names cannot tell: the bytes of the objects settled by
/// name, and their count (`settled`, at least one).
fn pin_by_name(name: &str, by_name: &str, settled: u64) {
    let file = golden_dir().join(format!("{name}.json"));
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let mut got: Value = serde_json::from_str(by_name).unwrap();
    assert!(settled > 0, "{name}: nothing was settled by name");
    let s = &mut got["summary"];
    assert_eq!(s["listedByName"], settled, "{name}");
    s.as_object_mut().unwrap().remove("listedByName");
    // The bytes names cannot tell: the same count, fewer bytes.
    for (tally, path) in [
        ("listed", "/listed"),
        ("referenced", "/verdicts/referenced"),
    ] {
        let (w, g) = (&want["summary"].pointer(path), s.pointer_mut(path).unwrap());
        let w = w.unwrap();
        assert_eq!(g["count"], w["count"], "{name}: {tally} count");
        assert!(
            g["bytes"].as_u64() <= w["bytes"].as_u64(),
            "{name}: {tally}"
        );
        g["bytes"] = w["bytes"].clone();
    }
    assert_eq!(got, want, "{name}: the plan from names differs");
}

#[test]
fn plans_from_listings_by_name_are_the_pinned_plans() {
    for t in &tables() {
        let cfg = t.config();
        let start = cfg.metadata_location.clone();
        let mut p = ByName(lakesweep::Session::start(cfg).unwrap(), 0);
        let run = drive(&mut p, &start, &HostOptions::for_table(t)).unwrap();
        pin_by_name(&format!("iceberg-{}", t.name), &run.plan_json, p.1);
        assert!(
            run.decisions
                .iter()
                .all(|d| d.verdict != lakesweep::Verdict::Referenced
                    || d.relative_key == "metadata/version-hint.text"),
            "{}: a decision for a key settled by name",
            t.name
        );
    }
    for (pinned, days, log_cleanup) in [
        ("delta-events-8d", 8, false),
        ("delta-events-40d-log-cleanup", 40, true),
    ] {
        let (cfg, opts) = delta_setup("events", days, |c| c.log_cleanup = log_cleanup);
        let start = cfg.metadata_location.clone();
        let mut p = ByName(lakesweep::Session::start(cfg).unwrap(), 0);
        let run = drive(&mut p, &start, &opts).unwrap();
        pin_by_name(pinned, &run.plan_json, p.1);
    }
}

#[test]
fn delta_plans_from_checkpoint_digests_are_the_pinned_plans() {
    for (pinned, days, log_cleanup) in [
        ("delta-events-8d", 8, false),
        ("delta-events-40d-log-cleanup", 40, true),
    ] {
        let (cfg, opts) = delta_setup("events", days, |c| c.log_cleanup = log_cleanup);
        let start = cfg.metadata_location.clone();
        let mut p = Digesting(lakesweep::Session::start(cfg).unwrap(), 0, 0);
        let run = drive(&mut p, &start, &opts).unwrap();
        assert!(p.2 > 0, "{pinned}: no checkpoint was digested");
        pin(pinned, &run.plan_json);
    }
}

#[test]
fn a_checkpoint_digest_answers_only_its_own_checkpoint_read() {
    let (cfg, opts) = delta_setup("events", 8, |_| {});
    let start = || lakesweep::Session::start(cfg.clone()).unwrap();
    // Serves the log's listing (with each checkpoint file's size moved by
    // `grow` bytes) and reads until a checkpoint is asked for.
    let until_checkpoint = |s: &mut lakesweep::Session, grow: u64| -> String {
        loop {
            match s.poll_request().expect("a checkpoint read") {
                lakesweep::Request::ReadBlob { uri } if s.is_checkpoint_read(&uri) => break uri,
                lakesweep::Request::ReadBlob { uri } => {
                    assert!(!s.is_manifest_read(&uri));
                    match read(&uri, &opts) {
                        Some(b) => s.handle_blob(uri, b).unwrap(),
                        None => s.handle_missing(uri).unwrap(),
                    }
                }
                lakesweep::Request::List { prefix } => {
                    let mut page = list(prefix.trim_end_matches('/'), &opts);
                    for o in page.iter_mut().filter(|o| o.key.contains(".checkpoint.")) {
                        o.size += grow;
                    }
                    s.handle_page(page, true).unwrap()
                }
                r => panic!("{r:?}"),
            }
        }
    };
    let mut s = start();
    let checkpoint = until_checkpoint(&mut s, 0);
    let bytes = read(&checkpoint, &opts).unwrap();
    // A commit is not a checkpoint: its read is not answered by a digest.
    let commit = checkpoint.replace(".checkpoint.parquet", ".json");
    assert!(!s.is_checkpoint_read(&commit));
    // A digest of another URI's read is refused, and the failed session
    // plans nothing more.
    let other =
        lakesweep::digest_checkpoint("file:///elsewhere/1.checkpoint.parquet", &bytes).unwrap();
    let e = s
        .handle_checkpoint_digest(checkpoint.clone(), other)
        .unwrap_err();
    assert!(e.to_string().contains("was made from"), "{e}");
    assert!(s.poll_request().is_none());
    // A manifest digest does not answer a checkpoint read, nor a checkpoint
    // digest a read that was never asked for.
    let mut s = start();
    let checkpoint = until_checkpoint(&mut s, 0);
    let d = lakesweep::digest_checkpoint(&checkpoint, &bytes).unwrap();
    let e = s
        .handle_manifest_digest(checkpoint.clone(), d.clone())
        .unwrap_err();
    assert!(e.to_string().contains("manifest's read only"), "{e}");
    let mut s = start();
    until_checkpoint(&mut s, 0);
    let e = s
        .handle_checkpoint_digest(format!("{checkpoint}.other"), d.clone())
        .unwrap_err();
    assert!(e.to_string().contains("never requested"), "{e}");
    // A checkpoint the listing gave another length (rewritten or cut since)
    // fails from its digest exactly as from its bytes.
    let mut s = start();
    until_checkpoint(&mut s, 1);
    let from_digest = s
        .handle_checkpoint_digest(checkpoint.clone(), d.clone())
        .unwrap_err();
    let mut s = start();
    until_checkpoint(&mut s, 1);
    let from_bytes = s
        .handle_blob(checkpoint.clone(), bytes.clone())
        .unwrap_err();
    assert!(
        from_digest.to_string().contains("truncated or rewritten"),
        "{from_digest}"
    );
    assert_eq!(from_digest.to_string(), from_bytes.to_string());
    // A digest respelled on its way fails its checksum.
    let mut s = start();
    until_checkpoint(&mut s, 0);
    let respelled = d.replacen("\na ", "\na  ", 1);
    assert_ne!(respelled, d);
    let e = s
        .handle_checkpoint_digest(checkpoint, respelled)
        .unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
}

/// Answers `s`'s reads until it asks for a manifest: that manifest's URI.
fn first_manifest_read(s: &mut lakesweep::Session, opts: &HostOptions) -> String {
    loop {
        let r = s.poll_request().expect("a manifest read");
        let lakesweep::Request::ReadBlob { uri } = r else {
            panic!("{r:?}")
        };
        if s.is_manifest_read(&uri) {
            return uri;
        }
        s.handle_blob(uri.clone(), read(&uri, opts).unwrap())
            .unwrap();
    }
}

#[test]
fn a_manifest_digest_answers_only_its_own_manifest_read() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let opts = HostOptions::for_table(&t);
    let mut s = lakesweep::Session::start(t.config()).unwrap();
    let manifest = first_manifest_read(&mut s, &opts);
    let bytes = read(&manifest, &opts).unwrap();
    // A digest made from another URI's read is refused, and the failed
    // session plans nothing.
    let other = lakesweep::digest_manifest("file:///elsewhere/m.avro", &bytes).unwrap();
    let mut s2 = lakesweep::Session::start(t.config()).unwrap();
    let first = first_manifest_read(&mut s2, &opts);
    let e = s2.handle_manifest_digest(first, other).unwrap_err();
    assert!(e.to_string().contains("was made from"), "{e}");
    // A digest resolved against another location is refused (its keys
    // would be another table's), as is a resolution no session gives.
    let resolution = s.manifest_resolution().expect("a plain location");
    let location = t.config().table_location;
    assert_eq!(
        resolution,
        format!("plain-keys-xxh3-64/1 {}", location.trim_end_matches('/'))
    );
    let elsewhere = lakesweep::digest_manifest_resolved(
        "plain-keys-xxh3-64/1 file:///elsewhere",
        &manifest,
        &bytes,
    )
    .unwrap();
    let mut s3 = lakesweep::Session::start(t.config()).unwrap();
    let first = first_manifest_read(&mut s3, &opts);
    let e = s3.handle_manifest_digest(first, elsewhere).unwrap_err();
    assert!(
        e.to_string()
            .contains("was resolved against `plain-keys-xxh3-64/1 file:///elsewhere`"),
        "{e}"
    );
    // Rules of another build, or no location a session gives, are refused.
    for bad in [
        "plain-keys-xxh3-64/2 file:///t",
        "file:///t",
        "plain-keys-xxh3-64/1 file:///t/../t",
        "plain-keys-xxh3-64/1 file:///t/",
        "plain-keys-xxh3-64/1 not a location",
        "plain-keys-xxh3-64/1 s3://b",
    ] {
        assert!(
            lakesweep::digest_manifest_resolved(bad, &manifest, &bytes).is_err(),
            "{bad}"
        );
    }
    // A cut manifest's digest fails as its bytes would: its length is not
    // the manifest list's.
    let cut = lakesweep::digest_manifest(&manifest, &bytes[..bytes.len() - 1]);
    match cut {
        Err(e) => assert!(matches!(e, lakesweep::Error::Malformed { .. }), "{e}"),
        Ok(d) => {
            let e = s.handle_manifest_digest(manifest.clone(), d).unwrap_err();
            assert!(e.to_string().contains("truncated or replaced"), "{e}");
        }
    }
}

#[test]
fn delta_fixture_plans_are_pinned() {
    pin("delta-events-1d", &delta_case("events", 1, |_| {}));
    pin("delta-events-8d", &delta_case("events", 8, |_| {}));
    pin(
        "delta-events-40d-log-cleanup",
        &delta_case("events", 40, |c| c.log_cleanup = true),
    );
    pin(
        "delta-events-40d-keep-version-2",
        &delta_case("events", 40, |c| {
            c.log_cleanup = true;
            c.keep_versions = vec![2];
        }),
    );
    pin("delta-simple-8d", &delta_case("simple", 8, |_| {}));
}

/// The expiry plan of each fixture table, as stored (`ExpiryPlan::to_json`).
fn expiry_case(t: &Table, days_after: i64, context: &str) -> String {
    let bytes = std::fs::read(vpath(&t.metadata_location).expect("fixture metadata"))
        .expect("fixture metadata is readable");
    let req = lakesweep::ExpiryRequest {
        metadata_location: t.metadata_location.clone(),
        now_ms: t.now_ms + days_after * DAY,
        policy: None,
        context: lakesweep::Context::parse(context).expect("the context parses"),
        expire_ids: vec![],
        dr_metadata: vec![],
    };
    lakesweep::plan_expiry(&req, &bytes)
        .expect("the fixture expires")
        .to_json()
}

#[test]
fn expiry_plans_are_pinned() {
    for t in &tables() {
        pin(&format!("expiry-{}", t.name), &expiry_case(t, 0, "{}"));
        pin(
            &format!("expiry-{}-400d", t.name),
            &expiry_case(t, 400, "{}"),
        );
        pin(
            &format!("expiry-{}-400d-held", t.name),
            &expiry_case(
                t,
                400,
                r#"{"holds": [{"scope": "table", "generation": 3, "reason": "audit"}]}"#,
            ),
        );
    }
}

/// `s` with its `snake_case` words joined in camelCase.
fn camel(s: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A v1 plan's keys spelt as v2 spells them: field names in camelCase; the
/// keys of the maps (ref names, verdicts, object kinds) as they were.
fn respelt(v: &Value) -> Value {
    const MAPS: [&str; 3] = ["refs", "verdicts", "reclaimable"];
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = if MAPS.contains(&k.as_str()) {
                        let inner = x
                            .as_object()
                            .map(|o| o.iter().map(|(kk, xx)| (kk.clone(), respelt(xx))).collect());
                        inner.map(Value::Object).unwrap_or_else(|| x.clone())
                    } else {
                        respelt(x)
                    };
                    (camel(k), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(respelt).collect()),
        other => other.clone(),
    }
}

/// The plans lakesweep 0.1 pinned (`tests/golden/legacy/plans/`, schema
/// `lakesweep.plan.v1`, snake_case) hold the same content as today's,
/// field for field and value for value: only the spelling of the keys, the
/// schema name and so the digest changed (and the keep set's measured size). A v1 plan is refused with the
/// advice to plan again, as is a v2 plan (whose digest left the warnings
/// out).
#[test]
fn plans_differ_from_their_v1_pins_in_key_spelling_only() {
    let dir = golden_dir().join("legacy/plans");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("tests/golden/legacy/plans") {
        let path = e.unwrap().path();
        let v1_text = std::fs::read_to_string(&path).unwrap();
        let v2_text = std::fs::read_to_string(golden_dir().join(path.file_name().unwrap()))
            .expect("every v1 pin has its v2 pin");
        let err = lakesweep::SealedPlan::from_json(&v1_text).unwrap_err();
        assert!(err.to_string().contains("plan again"), "{err}");
        let v2_spelt = v2_text.replacen("lakesweep.plan.v3", "lakesweep.plan.v2", 1);
        let err = lakesweep::SealedPlan::from_json(&v2_spelt).unwrap_err();
        assert!(err.to_string().contains("plan again"), "{err}");
        let mut v1: Value = serde_json::from_str(&v1_text).unwrap();
        let mut v2: Value = serde_json::from_str(&v2_text).unwrap();
        assert_eq!(v1["schema"], "lakesweep.plan.v1");
        assert_eq!(v2["schema"], "lakesweep.plan.v3");

        for v in [&mut v1, &mut v2] {
            let o = v.as_object_mut().unwrap();
            o.remove("schema");
            o.remove("digest");
        }
        // The keep set's size is a measurement of the index, which has
        // changed since (not sealed by the digest).
        v1["summary"]
            .as_object_mut()
            .unwrap()
            .remove("keep_set_bytes");
        v2["summary"]
            .as_object_mut()
            .unwrap()
            .remove("keepSetBytes");
        assert_eq!(respelt(&v1), v2, "{}", path.display());
        n += 1;
    }
    assert_eq!(n, 9);
}

#[test]
fn the_keep_set_exported_in_ranges_is_the_keep_set() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let opts = HostOptions::for_table(&t);
    let mut s = lakesweep::Session::start(t.config()).unwrap();
    assert!(
        s.export_keep_set_range(0, 10).is_err(),
        "not before it is complete"
    );
    while !s.keep_set_complete() {
        match s.poll_request().expect("a request") {
            lakesweep::Request::ReadBlob { uri } => {
                let b = read(&uri, &opts).unwrap();
                s.handle_blob(uri, b).unwrap()
            }
            r => panic!("{r:?}"),
        }
    }
    let all = s.export_keep_set().unwrap();
    for chunk in [1u32, 7, 1000, u32::MAX] {
        let mut joined = Vec::new();
        loop {
            let part = s.export_keep_set_range(joined.len() as u64, chunk).unwrap();
            if part.is_empty() {
                break;
            }
            joined.extend(part);
        }
        assert_eq!(joined, all, "chunks of {chunk}");
    }
    assert!(s.export_keep_set_range(u64::MAX, 5).unwrap().is_empty());
    // As hex text: the same bytes, and a classifier loaded from the text is
    // the one loaded from the bytes.
    let mut text = String::new();
    loop {
        let part = s.export_keep_set_hex(text.len() as u64 / 2, 333).unwrap();
        if part.is_empty() {
            break;
        }
        assert!(part.len() <= 666);
        text.push_str(&part);
    }
    assert_eq!(text.len(), 2 * all.len());
    let from_text = lakesweep::PageClassifier::load_hex(&text).unwrap();
    let from_bytes = lakesweep::PageClassifier::load(all).unwrap();
    assert_eq!(
        from_text.metadata_location(),
        from_bytes.metadata_location()
    );
    let page = list(&t.location, &opts);
    assert_eq!(
        from_text.classify(page.clone()).unwrap(),
        from_bytes.classify(page).unwrap()
    );
    // Text that is not the keep set's hex is refused, naming where.
    for (bad, at) in [
        (format!("{}X", &text[..text.len() - 1]), text.len() - 1),
        (
            text.to_uppercase(),
            text.find(|c: char| c.is_ascii_lowercase()).unwrap(),
        ),
        (text[1..].to_owned(), text.len() - 1),
    ] {
        let Err(e) = lakesweep::PageClassifier::load_hex(&bad) else {
            panic!("not refused")
        };
        assert!(e.to_string().contains(&format!("at byte {at} ")), "{e}");
    }
}

/// Every read answered as hex text builds the keep set the bytes build;
/// text that is not hex fails the session (protocol: bad input), and it
/// stays failed.
#[test]
fn blobs_answered_as_hex_text_build_the_same_keep_set() {
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let opts = HostOptions::for_table(&t);
    let keep_set = |as_text: bool| {
        let mut s = lakesweep::Session::start(t.config()).unwrap();
        while !s.keep_set_complete() {
            match s.poll_request().expect("a request") {
                lakesweep::Request::ReadBlob { uri } => {
                    let b = read(&uri, &opts).unwrap();
                    if as_text {
                        let text: String = b.iter().map(|x| format!("{x:02x}")).collect();
                        s.handle_blob_hex(uri, &text).unwrap()
                    } else {
                        s.handle_blob(uri, b).unwrap()
                    }
                }
                r => panic!("{r:?}"),
            }
        }
        s.export_keep_set().unwrap()
    };
    assert_eq!(keep_set(true), keep_set(false));

    let mut s = lakesweep::Session::start(t.config()).unwrap();
    let Some(lakesweep::Request::ReadBlob { uri }) = s.poll_request() else {
        panic!("the first request reads the metadata")
    };
    let e = s.handle_blob_hex(uri.clone(), "7b0").unwrap_err();
    assert!(
        matches!(
            e,
            lakesweep::Error::Protocol {
                reason: lakesweep::ProtocolReason::BadInput,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("at byte 3 of 3"), "{e}");
    let b = read(&uri, &opts).unwrap();
    assert!(s.handle_blob(uri, b).is_err(), "the session stays failed");
}
