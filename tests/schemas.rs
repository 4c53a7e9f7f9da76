//! The JSON Schemas of `schema/` (draft 2020-12) against real documents.
//!
//! Each stored document of the core has a schema: the sealed plan
//! (`plan.v3.json`), the deletion ledger (`ledger.v4.json`, its object
//! files `ledger-objects.v1.json` and archives `ledger-archive.v1.json`;
//! `ledger.v3.json` and `ledger.v2.json` of earlier releases), the metadata
//! bundle (`bundle.v2.json`), the expiry plan (`expiry.v1.json`), the
//! retention policy (`policy.v1.json`), the live context
//! (`context.v1.json`) and the Pinot snapshot-artifact plan
//! (`pinot-plan.v1.json`). Every schema is compiled with `boon` (which checks
//! it against the draft's metaschema), then:
//!
//! - documents the public API makes now (plans of the fixture tables, a
//!   ledger walked through every step, sealed bundles, expiry plans) and the
//!   pinned golden plans must validate: the schemas of the documents
//!   lakesweep writes refuse unknown fields, so a field added, renamed or
//!   retyped in Rust without its schema fails here;
//! - the policy and context documents the other tests use must parse with
//!   `Policy::parse` / `Context::parse` first (so they are real), then
//!   validate;
//! - every schema must reject documents with a required field removed, a
//!   value of the wrong type, an unknown field or a misspelt enum value
//!   (so no test passes with a schema that accepts anything). For the policy
//!   and context, each rejected document is also one the parser refuses:
//!   schema and parser agree.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use boon::{Compiler, Draft, SchemaIndex, Schemas};
use common::*;
use lakesweep::bundle::{self, Bundle, SealRequest};
use lakesweep::ledger::{
    DeleteResult, Ledger, LiveState, ObjectState, ObjectVersion, Observation, Receipt,
};
use lakesweep::{plan_expiry, Context, ExpiryRequest, Policy, SealedPlan, SessionConfig};
use serde_json::{json, Value};

const DAY: i64 = 86_400_000;

/// The repository root.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One compiled schema of `schema/`.
struct Schema {
    /// File name under `schema/`, for messages.
    name: &'static str,
    schemas: Schemas,
    index: SchemaIndex,
}

impl Schema {
    /// Reads `schema/<name>`, checks its `$schema` and `$id`, and compiles it
    /// with boon under its `$id` (so nothing is fetched from the network).
    fn load(name: &'static str) -> Schema {
        let path = repo().join("schema").join(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: cannot read the schema: {e}", path.display()));
        let doc: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{name}: the schema is not JSON: {e}"));
        assert_eq!(
            doc["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}: every schema is draft 2020-12"
        );
        let id = format!("https://lakesweep.dev/schema/{name}");
        assert_eq!(doc["$id"], id.as_str(), "{name}: `$id` names the file");
        for key in ["title", "description"] {
            assert!(doc[key].is_string(), "{name}: the schema needs a `{key}`");
        }
        let mut compiler = Compiler::new();
        compiler.set_default_draft(Draft::V2020_12);
        compiler
            .add_resource(&id, doc)
            .unwrap_or_else(|e| panic!("{name}: `$id` is not a URL: {e}"));
        let mut schemas = Schemas::new();
        let index = compiler
            .compile(&id, &mut schemas)
            .unwrap_or_else(|e| panic!("{name} does not compile: {e:#}"));
        Schema {
            name,
            schemas,
            index,
        }
    }

    /// Whether `doc` is valid, with boon's explanation when it is not.
    fn check(&self, doc: &Value) -> Result<(), String> {
        self.schemas
            .validate(doc, self.index)
            .map_err(|e| format!("{e:#}"))
    }

    /// Panics, naming `what` and every violation, unless `text` is valid.
    fn accepts(&self, what: &str, text: &str) {
        let doc: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("{what}: the document is not JSON: {e}"));
        if let Err(e) = self.check(&doc) {
            panic!("{}: {what} does not validate:\n{e}\n{text}", self.name);
        }
    }

    /// Panics unless `doc` (`what`: how it was spoiled) is rejected.
    fn rejects(&self, what: &str, doc: &Value) {
        assert!(
            self.check(doc).is_err(),
            "{}: accepts a document with {what}:\n{doc}",
            self.name
        );
    }
}

/// `doc` with the member at `pointer` set to `value` (`None`: removed). The
/// parent must exist, and a removed member must have been there, so a
/// negative check can never edit nothing.
fn edited(doc: &Value, pointer: &str, value: Option<Value>) -> Value {
    let mut out = doc.clone();
    let (parent, last) = pointer
        .rsplit_once('/')
        .unwrap_or_else(|| panic!("`{pointer}` is not a JSON pointer"));
    let last = last.replace("~1", "/").replace("~0", "~");
    let target = out
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("`{parent}` is not in the document"));
    match (target, value) {
        (Value::Object(m), Some(v)) => {
            m.insert(last, v);
        }
        (Value::Object(m), None) => {
            assert!(m.remove(&last).is_some(), "`{pointer}` is not there");
        }
        (Value::Array(a), Some(v)) => {
            let i: usize = last.parse().expect("an array index");
            *a.get_mut(i)
                .unwrap_or_else(|| panic!("`{pointer}` is past the end")) = v;
        }
        (other, _) => panic!("`{parent}` is neither an object nor an array: {other}"),
    }
    out
}

/// Parses a document made by the API (its text is the stored form).
fn json_of(what: &str, text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON: {e}"))
}

/// The fixture table's `table-uuid`, read from its current metadata.
fn uuid_of(t: &Table) -> String {
    let path = vpath(&t.metadata_location).expect("fixture metadata is under the virtual root");
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: cannot read the metadata: {e}", path.display()));
    let md: Value = serde_json::from_slice(&bytes).expect("fixture metadata is JSON");
    md["table-uuid"]
        .as_str()
        .expect("fixture metadata has a table-uuid")
        .to_owned()
}

/// A policy bound to `uuid` with a restore-drill gate, as `component.rs`
/// writes one (plus the gate, so the plan's tokens carry it).
fn drill_policy(uuid: &str) -> String {
    format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{uuid}","format":"iceberg"}},
            "fileRetention":{{"orphanSafetyInterval":"2d","maxWriterDuration":"6h"}},"legalHoldGeneration":3,
            "restoreDrill":{{"minBundles":1,"maxAge":"7d"}}}}"#
    )
}

/// The context `component.rs` plans the events table under, with a lease.
const HOLD_CONTEXT: &str = r#"{"holds":[{"scope":{"pathPrefix":"data/category=a+b/"},"generation":3,"reason":"case 3"}],
    "writers":[{"stagingPrefix":"metadata/00099-","startedAtMs":0}],
    "leases":[{"snapshotId":1,"owner":"bi","purpose":"report","expiresAtMs":0,"readerGeneration":2}]}"#;

/// The plan of `t` as the planner seals it under `cfg` (canonical JSON).
fn plan_json(t: &Table, cfg: SessionConfig) -> String {
    run_native(cfg, &HostOptions::for_table(t))
        .unwrap_or_else(|e| panic!("the planner refused fixture `{}`: {e}", t.name))
        .plan_json
}

/// Plans made now by the native planner on every fixture table: at the
/// fixture's time, a year later (every orphan a candidate), and under a
/// policy with a drill gate and a context (policy digest, drill gate, hold
/// generation and lease watermark in the tokens).
fn fresh_plans() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in tables() {
        out.push((format!("{} now", t.name), plan_json(&t, t.config())));
        let mut later = t.config();
        later.now_ms += 365 * DAY;
        out.push((format!("{} a year later", t.name), plan_json(&t, later)));
        let mut governed = t.config();
        governed.policy = Some(drill_policy(&uuid_of(&t)));
        governed.context = Some(HOLD_CONTEXT.into());
        out.push((
            format!("{} under a policy and a context", t.name),
            plan_json(&t, governed),
        ));
    }
    out
}

/// A plan with its report (as `plan --json` and `plan --out` write it), on
/// every fixture a year later: it matches the schema, still verifies, and
/// its kept keys, its deletes and the referenced keys split the decided
/// keys exactly.
#[test]
fn plans_with_their_report_match_the_plan_schema_and_split_the_listing() {
    let schema = Schema::load("plan.v3.json");
    let mut last = None;
    for t in tables() {
        let mut cfg = t.config();
        cfg.now_ms += 365 * DAY;
        let run = run_native(cfg, &HostOptions::for_table(&t)).unwrap();
        let plan = run
            .plan()
            .with_report(run.decisions.clone(), vec!["k\u{fffd}".into()], vec![]);
        let text = plan.to_json();
        schema.accepts(&format!("the reported plan of {}", t.name), &text);
        assert_eq!(
            SealedPlan::from_json(&text)
                .expect("a reported plan verifies")
                .digest,
            plan.digest
        );
        let report = plan.report.as_ref().unwrap();
        let kept: BTreeSet<&str> = report.keep.iter().map(|k| k.key.as_str()).collect();
        let deleted: BTreeSet<&str> = plan.delete.iter().map(|d| d.key.as_str()).collect();
        let verdicts = run.verdicts();
        let decided: BTreeSet<&str> = verdicts.keys().map(String::as_str).collect();
        let referenced: BTreeSet<&str> = verdicts
            .iter()
            .filter(|(_, d)| d.verdict == lakesweep::Verdict::Referenced)
            .map(|(k, _)| k.as_str())
            .collect();
        assert!(kept.is_disjoint(&deleted), "{}", t.name);
        assert!(kept.is_disjoint(&referenced), "{}", t.name);
        assert_eq!(&(&kept | &deleted) | &referenced, decided, "{}", t.name);
        assert!(
            !deleted.is_empty(),
            "{}: a year later something goes",
            t.name
        );
        last = Some(json_of("a reported plan", &text));
    }
    let p = last.expect("a plan");
    schema.rejects(
        "a kept object with an unknown reason",
        &edited(&p, "/report/keep/0/reason", Some(json!("gone"))),
    );
    schema.rejects(
        "a report without its notes",
        &edited(&p, "/report/storeNotes", None),
    );
    schema.rejects(
        "a report with a field of its own",
        &edited(&p, "/report/deleted", Some(json!([]))),
    );
}

#[test]
fn golden_and_fresh_plans_match_the_plan_schema() {
    let schema = Schema::load("plan.v3.json");
    let mut golden = Vec::new();
    let dir = repo().join("tests/golden");
    for entry in std::fs::read_dir(&dir).expect("tests/golden exists") {
        let path = entry.expect("tests/golden is readable").path();
        let expiry = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("expiry-"));
        if path.extension().is_some_and(|e| e == "json") && !expiry {
            golden.push(path);
        }
    }
    golden.sort();
    assert!(
        golden.len() >= 9,
        "the golden plans are missing: {golden:?}"
    );
    for path in &golden {
        let text = std::fs::read_to_string(path).expect("a golden plan is readable");
        SealedPlan::from_json(&text)
            .unwrap_or_else(|e| panic!("{}: not a plan lakesweep reads: {e}", path.display()));
        schema.accepts(&path.display().to_string(), &text);
    }
    let fresh = fresh_plans();
    for (what, text) in &fresh {
        schema.accepts(what, text);
    }
    let governed = fresh
        .iter()
        .map(|(_, text)| json_of("a plan", text))
        .find(|p| {
            p["tokens"]["restoreDrill"].is_object() && p["tokens"]["policyDigest"].is_string()
        })
        .expect("a plan made under a policy carries its digest and drill gate");
    assert_eq!(governed["tokens"]["holdGeneration"], 3);
    assert_eq!(governed["tokens"]["leaseWatermark"], 2);
    println!(
        "plan.v3.json: {} golden + {} fresh plans valid",
        golden.len(),
        fresh.len()
    );

    // Spoiled plans are rejected.
    let with_deletes = fresh
        .iter()
        .map(|(_, text)| json_of("a plan", text))
        .find(|p| p["delete"].as_array().is_some_and(|d| !d.is_empty()))
        .expect("a year later some fixture plan deletes something");
    let delta = json_of(
        "a golden Delta plan",
        &std::fs::read_to_string(dir.join("delta-events-8d.json")).expect("the Delta golden plan"),
    );
    let p = &with_deletes;
    schema.rejects("no digest", &edited(p, "/digest", None));
    schema.rejects(
        "no tokens.context_digest",
        &edited(p, "/tokens/contextDigest", None),
    );
    schema.rejects(
        "no summary.swept_prefixes",
        &edited(p, "/summary/sweptPrefixes", None),
    );
    schema.rejects("no delete[0].etag", &edited(p, "/delete/0/etag", None));
    schema.rejects(
        "a string now_ms",
        &edited(p, "/tokens/nowMs", Some(json!("1"))),
    );
    schema.rejects(
        "a negative size",
        &edited(p, "/delete/0/size", Some(json!(-1))),
    );
    schema.rejects(
        "a fractional count",
        &edited(p, "/summary/listed/count", Some(json!(1.5))),
    );
    schema.rejects(
        "an unknown format",
        &edited(p, "/format", Some(json!("hudi"))),
    );
    schema.rejects(
        "another schema name",
        &edited(p, "/schema", Some(json!("lakesweep.plan.v1"))),
    );
    schema.rejects("a short digest", &edited(p, "/digest", Some(json!("abc"))));
    schema.rejects(
        "an unknown field",
        &edited(p, "/approved", Some(json!(true))),
    );
    schema.rejects(
        "an unknown token",
        &edited(p, "/tokens/generation", Some(json!(1))),
    );
    schema.rejects(
        "an unknown verdict",
        &edited(
            p,
            "/summary/verdicts/gone",
            Some(json!({"count": 1, "bytes": 1})),
        ),
    );
    schema.rejects(
        "an unknown object kind",
        &edited(
            p,
            "/summary/reclaimable/blob",
            Some(json!({"count": 1, "bytes": 1})),
        ),
    );
    schema.rejects(
        "a head without a size",
        &edited(&delta, "/tokens/head/size", None),
    );
    schema.rejects(
        "a snake_case drill gate",
        &edited(
            &governed,
            "/tokens/restoreDrill",
            Some(json!({"min_bundles": 1, "max_age_ms": 1})),
        ),
    );
}

/// A ledger as stored: its head, and its folder's files by name.
type Stored = (String, BTreeMap<String, Vec<u8>>);

/// Saves `l` whole.
fn stored(l: &mut Ledger) -> Stored {
    l.save_whole().expect("a ledger saves")
}

/// A fresh ledger for `plan`, walked by the public API through every kind
/// of step; returns what is stored after each step (the last is a ledger
/// read back with `Ledger::open_whole`, chained to the one before). Keys of
/// the plan: the first waits in quarantine (its bundle walk is incomplete),
/// the second vanishes during quarantine (then, still a candidate, starts
/// over), the others are approved and receipted (deleted, no answer,
/// deleted behind a delete marker) and reconciled; a refused approval and
/// a restore drill are recorded too.
fn walk_ledger(plan: &SealedPlan) -> Vec<Stored> {
    let mut saved = Vec::new();
    let now = plan.tokens.now_ms;
    let keys: Vec<String> = plan.delete.iter().map(|d| d.key.clone()).collect();
    assert!(
        keys.len() >= 5,
        "a plan with at least five deletes is needed, this one has {}",
        keys.len()
    );
    let mut l = Ledger::new(plan, 0).expect("a ledger for a fixture plan");
    saved.push(stored(&mut l));
    // DISCOVERED, UNREFERENCED_ELIGIBLE, QUARANTINED: one step each.
    for step in 1..=3 {
        l.begin_step(plan, now)
            .unwrap_or_else(|e| panic!("ledger step {step}: {e}"));
        assert!(l.probes().is_empty(), "no HEAD before quarantine");
        saved.push(stored(&mut l));
    }
    // Quarantine (0 ms) passed: restore checks.
    l.begin_step(plan, now).expect("the restore-check step");
    let probes = l.probes();
    assert_eq!(probes.len(), keys.len(), "every quarantined key is checked");
    let observations: Vec<Observation> = probes
        .iter()
        .map(|p| Observation {
            key: p.key.clone(),
            seen: (p.key != keys[1]).then(|| p.expect.clone()),
            blocked: (p.key == keys[0]).then(|| "its bundle misses a manifest".to_owned()),
        })
        .collect();
    l.observe(&observations, now)
        .expect("the store's answers to the restore checks");
    saved.push(stored(&mut l));
    // A new step, then an approval against the unchanged table.
    l.begin_step(plan, now).expect("the approval run's step");
    let live = LiveState {
        metadata_location: plan.tokens.metadata_location.clone(),
        context: None,
        blocked: BTreeMap::new(),
        head: plan.tokens.head.clone(),
        clock_ms: Some(now),
        allow_future_now: false,
    };
    let (approval, _) = l.approve(plan, &live, now).expect("the approval");
    assert!(approval.granted, "{:?}", approval.differences);
    assert_eq!(l.approved_keys(), keys[2..].to_vec());
    let version = |k: &str| l.object(k).map(|o| o.version);
    let receipt =
        |k: &str, result, confirmed_ms, marker: Option<&str>, detail: Option<&str>| Receipt {
            key: k.to_owned(),
            result,
            version: version(k),
            requested_ms: now,
            confirmed_ms,
            delete_marker: marker.is_some(),
            delete_marker_version_id: marker.map(str::to_owned),
            detail: detail.map(str::to_owned),
        };
    let receipts = vec![
        receipt(&keys[2], DeleteResult::Deleted, Some(now + 5), None, None),
        receipt(
            &keys[3],
            DeleteResult::Unknown,
            None,
            None,
            Some("timed out"),
        ),
        receipt(
            &keys[4],
            DeleteResult::Deleted,
            Some(now + 6),
            Some("marker-1"),
            None,
        ),
    ];
    l.record(receipts, now).expect("the receipts");
    saved.push(stored(&mut l));
    // Reconciliation: the deleted keys are gone, the unknown one is intact
    // (and the first key's bundle is still incomplete).
    // The next run's plan, checked against the ledger's deleted keys.
    let mut checked = plan.clone();
    checked.tokens.deleted_index = Some({
        use sha2::Digest;
        sha2::Sha256::digest(l.deleted_index())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    });
    checked.digest = checked.compute_digest();
    l.begin_step(&checked, now + 1)
        .expect("the verification step");
    let observations: Vec<Observation> = l
        .probes()
        .iter()
        .map(|p| Observation {
            key: p.key.clone(),
            seen: (p.key != keys[2] && p.key != keys[4]).then(|| p.expect.clone()),
            blocked: (p.key == keys[0]).then(|| "its bundle still misses a manifest".to_owned()),
        })
        .collect();
    l.observe(&observations, now + 1)
        .expect("the store's answers to the verification");
    // An approval refused: the pointer moved.
    let moved = LiveState {
        metadata_location: format!("{}-moved", plan.tokens.metadata_location),
        ..live
    };
    let (refused, _) = l
        .approve(&checked, &moved, now + 1)
        .expect("a refused approval");
    assert!(!refused.granted && !refused.differences.is_empty());
    l.record_drill(
        &plan.table_location,
        7,
        2,
        BTreeMap::from([
            ("q-1".to_owned(), None),
            ("q-2".to_owned(), Some("manifest rewritten".to_owned())),
        ]),
        now + 2,
    )
    .expect("a drill of the ledger's table");
    let states: Vec<Option<ObjectState>> = keys.iter().map(|k| l.state_of(k)).collect();
    use ObjectState::*;
    assert_eq!(
        states[..5],
        [
            Some(Quarantined),
            Some(UnreferencedEligible),
            Some(Verified),
            Some(RestoreVerified),
            Some(Verified)
        ]
    );
    let last = stored(&mut l);
    saved.push(last.clone());
    let mut reread = Ledger::open_whole(&last.0, &last.1).expect("lakesweep reads its own ledger");
    assert_eq!(reread.state_of(&keys[2]), Some(Verified), "archived");
    assert_eq!(reread.verified().objects, 2);
    saved.push(stored(&mut reread));
    saved
}

/// The lines of a gzip'd JSON Lines file of a ledger's folder.
fn lines_of(name: &str, bytes: &[u8]) -> Vec<String> {
    let text =
        lakesweep::codec::gzip::gunzip(bytes, 1 << 30).unwrap_or_else(|e| panic!("{name}: {e}"));
    String::from_utf8(text)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn ledgers_walked_through_every_step_match_the_ledger_schemas() {
    let schema = Schema::load("ledger.v4.json");
    let objects = Schema::load("ledger-objects.v1.json");
    let archive = Schema::load("ledger-archive.v1.json");
    let (mut count, mut lines) = (0, 0);
    let mut last = None;
    let mut last_object = None;
    let mut last_archived = None;
    for t in tables() {
        let mut cfg = t.config();
        cfg.now_ms += 365 * DAY;
        let plan = run_native(cfg, &HostOptions::for_table(&t))
            .unwrap_or_else(|e| panic!("the planner refused fixture `{}`: {e}", t.name))
            .plan();
        for (i, (head, folder)) in walk_ledger(&plan).iter().enumerate() {
            schema.accepts(&format!("the ledger of {} after step {i}", t.name), head);
            count += 1;
            last = Some(json_of("a ledger", head));
            for (name, bytes) in folder {
                if name.ends_with(".idx") {
                    continue;
                }
                let which = if name.starts_with("archive-") {
                    &archive
                } else {
                    &objects
                };
                for line in lines_of(name, bytes) {
                    which.accepts(&format!("{name} of {}", t.name), &line);
                    lines += 1;
                    let v = json_of(name, &line);
                    if name.starts_with("archive-") && v.get("key").is_some() {
                        last_archived = Some(v);
                    } else if v.is_array() {
                        last_object = Some(v);
                    }
                }
            }
        }
    }
    println!("ledger.v4.json: {count} heads valid, {lines} lines of their files");
    assert!(count >= 16);

    let l = last.expect("at least one ledger");
    schema.rejects("no integrity", &edited(&l, "/integrity", None));
    schema.rejects("no audit", &edited(&l, "/audit", None));
    schema.rejects(
        "no previousIntegrity",
        &edited(&l, "/previousIntegrity", None),
    );
    schema.rejects(
        "an object file without its SHA-256",
        &edited(&l, "/objects/0/sha256", None),
    );
    schema.rejects(
        "an object file named outside the folder",
        &edited(&l, "/objects/0/name", Some(json!("../ledger.json"))),
    );
    schema.rejects(
        "an archive without its revision",
        &edited(&l, "/verified/archives/0/revision", None),
    );
    schema.rejects(
        "a negative revision",
        &edited(&l, "/revision", Some(json!(-1))),
    );
    schema.rejects(
        "a negative quarantine",
        &edited(&l, "/quarantineMs", Some(json!(-5))),
    );
    schema.rejects(
        "approval keys (v3's)",
        &edited(&l, "/approvals/0/keys", Some(json!(["a"]))),
    );
    schema.rejects(
        "a string granted",
        &edited(&l, "/approvals/0/granted", Some(json!("yes"))),
    );
    schema.rejects(
        "a drill without passed",
        &edited(&l, "/drills/0/passed", None),
    );
    schema.rejects("an unknown field", &edited(&l, "/owner", Some(json!("me"))));
    schema.rejects("v3's objects", &edited(&l, "/history", Some(json!([]))));
    schema.rejects(
        "another schema name",
        &edited(&l, "/schema", Some(json!("lakesweep.ledger.v3"))),
    );

    let o = last_object.expect("an object line");
    objects.rejects("an unknown state", &edited(&o, "/1", Some(json!("GONE"))));
    objects.rejects(
        "a verified object in flight",
        &edited(&o, "/1", Some(json!("VERIFIED"))),
    );
    objects.rejects(
        "a camel-case state",
        &edited(&o, "/1", Some(json!("RestoreVerified"))),
    );
    objects.rejects("a negative size", &edited(&o, "/2", Some(json!(-1))));
    objects.rejects("a line cut short", &json!(o.as_array().unwrap()[..5]));
    let a = last_archived.expect("an archived object line");
    archive.rejects(
        "an archived object without its version",
        &edited(&a, "/version", None),
    );
    archive.rejects(
        "a misspelt receipt result",
        &edited(&a, "/receipt/result", Some(json!("Deleted"))),
    );
    archive.rejects("an unknown field", &edited(&a, "/bytes", Some(json!(1))));
}

/// HEAD of `key` of fixture `t`, from the checkout with the generator's
/// mtimes (as `tests/bundle.rs` answers it); `None` when absent.
fn head(t: &Table, key: &str) -> Option<ObjectVersion> {
    let path = vpath(&format!("{}/{key}", t.location))?;
    let m = std::fs::metadata(path).ok()?;
    Some(ObjectVersion {
        size: m.len(),
        last_modified_ms: *t.mtimes.get(key)?,
        etag: None,
        version_id: None,
    })
}

/// A bundle of `snapshot_ids` of fixture `t`, sealed as `tests/bundle.rs`
/// seals one: the chain is walked until nothing more is wanted, every
/// object gets its HEAD.
fn seal(t: &Table, snapshot_ids: &[i64]) -> Result<Bundle, lakesweep::Error> {
    let md_path = vpath(&t.metadata_location).expect("fixture metadata is under the virtual root");
    let md_bytes = std::fs::read(&md_path).expect("the fixture metadata is readable");
    let mut blobs = BTreeMap::new();
    let chain = loop {
        let c = bundle::chain(
            &t.location,
            &[],
            &t.metadata_location,
            &md_bytes,
            snapshot_ids,
            &blobs,
        )?;
        if c.done {
            break c;
        }
        for k in c.wanted {
            let p = vpath(&format!("{}/{k}", t.location)).expect("a key under the table");
            let bytes = std::fs::read(&p)
                .unwrap_or_else(|e| panic!("{}: a wanted blob is unreadable: {e}", p.display()));
            blobs.insert(k, bytes);
        }
    };
    let md_key = t
        .metadata_location
        .strip_prefix(&format!("{}/", t.location))
        .expect("the metadata lies under the table")
        .to_owned();
    let heads = chain
        .layers
        .keys()
        .chain([&md_key])
        .map(|k| (k.clone(), head(t, k)))
        .collect();
    let req = SealRequest {
        table_location: t.location.clone(),
        mappings: vec![],
        metadata_uri: t.metadata_location.clone(),
        snapshot_ids: snapshot_ids.to_vec(),
        candidate_id: format!(
            "q-{}",
            snapshot_ids
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join("-")
        ),
        now_ms: t.now_ms,
        heads,
    };
    bundle::seal(&req, &md_bytes, &blobs)
}

/// The snapshot ids of fixture `t`'s current metadata, oldest first.
fn snapshot_ids(t: &Table) -> Vec<i64> {
    let bytes = std::fs::read(vpath(&t.metadata_location).expect("virtual root"))
        .expect("the fixture metadata is readable");
    let md = lakesweep::spec::iceberg::TableMetadata::parse(&t.metadata_location, &bytes)
        .expect("the fixture metadata parses");
    md.snapshots.iter().map(|s| s.snapshot_id).collect()
}

#[test]
fn sealed_bundles_match_the_bundle_schema() {
    let schema = Schema::load("bundle.v2.json");
    let mut count = 0;
    let mut sample = None;
    for t in tables() {
        let ids = snapshot_ids(&t);
        // Each snapshot alone, then all of them in one bundle.
        let mut sets: Vec<Vec<i64>> = ids.iter().map(|id| vec![*id]).collect();
        sets.push(ids.clone());
        for set in &sets {
            let b = seal(&t, set)
                .unwrap_or_else(|e| panic!("{}: the bundle of {set:?} is refused: {e}", t.name));
            let text = b.to_json();
            assert_eq!(
                Bundle::parse(&text).expect("lakesweep reads its own bundle"),
                b
            );
            schema.accepts(
                &format!("the bundle of {} snapshots {set:?}", t.name),
                &text,
            );
            count += 1;
            sample = Some(json_of("a bundle", &text));
        }
    }
    println!("bundle.v2.json: {count} bundles valid");

    let b = sample.expect("at least one bundle");
    let content = b["entries"]
        .as_array()
        .and_then(|e| e.iter().position(|x| x["layer"] == "content"))
        .expect("a bundle names content files");
    schema.rejects("no root", &edited(&b, "/root", None));
    schema.rejects("no entries", &edited(&b, "/entries", None));
    schema.rejects(
        "an entry without sha256",
        &edited(&b, "/entries/0/sha256", None),
    );
    schema.rejects(
        "a snake-case layer",
        &edited(&b, "/entries/0/layer", Some(json!("manifest_list"))),
    );
    schema.rejects(
        "a string snapshot id",
        &edited(&b, "/snapshotIds/0", Some(json!("1"))),
    );
    schema.rejects(
        "a content entry with a non-hex digest",
        &edited(
            &b,
            &format!("/entries/{content}/sha256"),
            Some(json!("xyz")),
        ),
    );
    schema.rejects(
        "an unknown entry field",
        &edited(&b, "/entries/0/bytes", Some(json!(1))),
    );
    schema.rejects(
        "an unknown field",
        &edited(&b, "/restored", Some(json!(false))),
    );
}

/// Expiry plans of fixture `t`: at its time, at its time under a legal hold
/// on the whole table (nothing expires: a null commit), 400 days later, and
/// 400 days later under a policy and a context (as `tests/bundle.rs` and
/// `tests/expire.rs` call `plan_expiry`).
fn expiry_plans(t: &Table) -> Vec<(String, String)> {
    let path = vpath(&t.metadata_location).expect("virtual root");
    let md_bytes = std::fs::read(&path).expect("the fixture metadata is readable");
    let uuid = uuid_of(t);
    let policy = format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{uuid}","format":"iceberg"}},
            "snapshotRetention":{{"retainLast":1,"maxSnapshotAge":"30d"}},
            "fileRetention":{{"orphanSafetyInterval":"3d","maxWriterDuration":"6h"}},"legalHoldGeneration":3}}"#
    );
    let cases = [
        ("now", t.now_ms, None, "{}"),
        (
            "under a legal hold on the table",
            t.now_ms,
            None,
            r#"{"holds":[{"scope":"table","generation":1,"reason":"case 1"}]}"#,
        ),
        ("400 days later", t.now_ms + 400 * DAY, None, "{}"),
        (
            "400 days later under a policy and a context",
            t.now_ms + 400 * DAY,
            Some(policy),
            HOLD_CONTEXT,
        ),
    ];
    cases
        .into_iter()
        .map(|(what, now_ms, policy, ctx)| {
            let req = ExpiryRequest {
                metadata_location: t.metadata_location.clone(),
                now_ms,
                policy: policy.map(|p| Policy::parse(&p).expect("the expiry policy parses")),
                context: Context::parse(ctx).expect("the expiry context parses"),
                expire_ids: vec![],
                dr_metadata: vec![],
            };
            let plan = plan_expiry(&req, &md_bytes)
                .unwrap_or_else(|e| panic!("expiry of {} {what}: {e}", t.name));
            (format!("the expiry of {} {what}", t.name), plan.to_json())
        })
        .collect()
}

#[test]
fn expiry_plans_match_the_expiry_schema() {
    let schema = Schema::load("expiry.v1.json");
    let mut plans: Vec<(String, String)> = tables().iter().flat_map(expiry_plans).collect();
    // The pinned golden expiry plans, too.
    let dir = repo().join("tests/golden");
    for entry in std::fs::read_dir(&dir).expect("tests/golden exists") {
        let path = entry.expect("tests/golden is readable").path();
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("expiry-"))
        {
            let text = std::fs::read_to_string(&path).expect("a golden expiry is readable");
            plans.push((path.display().to_string(), text.trim_end().to_owned()));
        }
    }
    for (what, text) in &plans {
        schema.accepts(what, text);
    }
    let docs: Vec<Value> = plans.iter().map(|(w, t)| json_of(w, t)).collect();
    assert!(
        docs.iter().any(|d| d["commit"].is_null()),
        "some expiry changes nothing (null commit)"
    );
    let e = docs
        .iter()
        .find(|d| d["commit"].is_object() && d["policyDigest"].is_string())
        .expect("some expiry under a policy expires snapshots (a commit)");
    println!("expiry.v1.json: {} expiry plans valid", plans.len());

    schema.rejects("no commit", &edited(e, "/commit", None));
    schema.rejects("no newMetadata", &edited(e, "/newMetadata", None));
    schema.rejects(
        "no retain[0].reasons",
        &edited(e, "/retain/0/reasons", None),
    );
    schema.rejects("a fractional nowMs", &edited(e, "/nowMs", Some(json!(1.5))));
    schema.rejects(
        "a negative holdGeneration",
        &edited(e, "/holdGeneration", Some(json!(-1))),
    );
    schema.rejects(
        "a string commit",
        &edited(e, "/commit", Some(json!("commit"))),
    );
    schema.rejects(
        "a commit without updates",
        &edited(e, "/commit/updates", None),
    );
    schema.rejects(
        "a snake-case snapshot id",
        &edited(e, "/expired/0/snapshot_id", Some(json!(1))),
    );
    schema.rejects(
        "a snake-case field",
        &edited(e, "/remove_refs", Some(json!([]))),
    );
}

/// Policy documents the other tests use (`safety.rs`, `component.rs`,
/// `expire.rs`, the policy module's own tests), with their placeholders
/// filled in, plus one that sets every field.
fn policies() -> Vec<String> {
    let base = |snapshot: &str, file: &str| {
        format!(
            r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"0f0e0d0c-0000-4000-8000-00000000e1e1","format":"iceberg"}},
                "snapshotRetention":{{{snapshot}}},
                "fileRetention":{{"orphanSafetyInterval":"3d","maxWriterDuration":"6h"{file}}}}}"#
        )
    };
    vec![
        // tests/safety.rs `policy_doc`
        r#"{"schema":"lakehouseRetentionPolicy.v1","binding":{"tableUuid":"u-1","format":"iceberg"},
            "fileRetention":{"orphanSafetyInterval":"2d","maxWriterDuration":"6h"}}"#
            .to_owned(),
        // tests/component.rs
        r#"{"schema":"lakehouseRetentionPolicy.v1","binding":{"tableUuid":"u-1","format":"iceberg"},
            "fileRetention":{"orphanSafetyInterval":"2d","maxWriterDuration":"6h"},"legalHoldGeneration":3}"#
            .to_owned(),
        // tests/expire.rs `policy(..)`
        base("", ""),
        base(r#""retainLast":4,"maxSnapshotAge":"30d""#, ""),
        base(r#""protectedRefs":["audit"]"#, ""),
        base(r#""minSnapshotAge":"32d""#, ""),
        base("", r#","maxReaderLease":"1d""#),
        base("", "").replace(
            r#""format":"iceberg""#,
            r#""format":"iceberg","formatVersion":3"#,
        ),
        base("", "").replace(
            r#""fileRetention""#,
            r#""legalHoldGeneration":7,"fileRetention""#,
        ),
        // Every field set.
        drill_policy("u-1"),
        r#"{"schema":"lakehouseRetentionPolicy.v1",
            "binding":{"tableUuid":"u-1","format":"iceberg","formatVersion":2,"catalog":"glue"},
            "snapshotRetention":{"retainLast":2,"maxSnapshotAge":"5d","maxRefAge":"90d","minSnapshotAge":"1h",
                "protectedRefs":["main","audit"],
                "refs":{"audit":{"minSnapshotsToKeep":3,"maxSnapshotAge":"30d","maxRefAge":"365d"},"dev":{}}},
            "fileRetention":{"orphanSafetyInterval":"72h","maxReaderLease":"12h","maxWriterDuration":"90m"},
            "legalHoldGeneration":4,"objectVersioning":"enabled",
            "restoreDrill":{"minBundles":2,"maxAge":"500ms"}}"#
            .to_owned(),
    ]
}

#[test]
fn the_tests_policies_match_the_policy_schema() {
    let schema = Schema::load("policy.v1.json");
    let docs = policies();
    for (i, text) in docs.iter().enumerate() {
        Policy::parse(text).unwrap_or_else(|e| panic!("policy {i} does not parse: {e}\n{text}"));
        schema.accepts(&format!("policy {i}"), text);
    }
    println!("policy.v1.json: {} policies valid", docs.len());

    // Each spoiled policy is refused by the parser and by the schema.
    let p = json_of("a policy", &docs[docs.len() - 1]);
    let spoiled = [
        ("no schema", edited(&p, "/schema", None)),
        ("no fileRetention", edited(&p, "/fileRetention", None)),
        (
            "no binding.tableUuid",
            edited(&p, "/binding/tableUuid", None),
        ),
        (
            "no orphanSafetyInterval",
            edited(&p, "/fileRetention/orphanSafetyInterval", None),
        ),
        (
            "no restoreDrill.minBundles",
            edited(&p, "/restoreDrill/minBundles", None),
        ),
        (
            "another schema name",
            edited(&p, "/schema", Some(json!("lakehouseRetentionPolicy.v9"))),
        ),
        (
            "a bare-number duration",
            edited(
                &p,
                "/fileRetention/orphanSafetyInterval",
                Some(json!(259_200_000)),
            ),
        ),
        (
            "a duration in years",
            edited(&p, "/snapshotRetention/maxSnapshotAge", Some(json!("3y"))),
        ),
        (
            "a duration without digits",
            edited(&p, "/snapshotRetention/maxRefAge", Some(json!("d"))),
        ),
        (
            "a signed duration",
            edited(&p, "/fileRetention/maxReaderLease", Some(json!("+12h"))),
        ),
        (
            "a negative retainLast",
            edited(&p, "/snapshotRetention/retainLast", Some(json!(-1))),
        ),
        (
            "a formatVersion over 255",
            edited(&p, "/binding/formatVersion", Some(json!(256))),
        ),
        (
            "an unknown versioning",
            edited(&p, "/objectVersioning", Some(json!("on"))),
        ),
        (
            "a null protectedRefs",
            edited(&p, "/snapshotRetention/protectedRefs", Some(Value::Null)),
        ),
        (
            "a misspelt field",
            edited(&p, "/snapshotRetention/retainLats", Some(json!(3))),
        ),
        (
            "an unknown ref field",
            edited(&p, "/snapshotRetention/refs/dev/retainLast", Some(json!(1))),
        ),
        (
            "a snake-case field",
            edited(&p, "/legal_hold_generation", Some(json!(1))),
        ),
    ];
    for (what, doc) in &spoiled {
        assert!(
            Policy::parse(&doc.to_string()).is_err(),
            "Policy::parse accepts a policy with {what}: the schema must not reject it"
        );
        schema.rejects(what, doc);
    }
}

/// Context documents the other tests use (`ledger.rs`, `safety.rs`,
/// `expire.rs`, `component.rs`, `delta_fixtures.rs`, the context module's
/// own tests), with their placeholders filled in.
fn contexts() -> Vec<String> {
    [
        "{}",
        r#"{"leases":[{"snapshotId":424242,"purpose":"training","owner":"ml","expiresAtMs":1800000000000,"readerGeneration":3}]}"#,
        r#"{"leases":[],"holds":[],"writers":[{"stagingPrefix":"staging/job-7/","startedAtMs":1800000000000}]}"#,
        r#"{"leases":[{"snapshotId":1,"owner":"a","purpose":"read","expiresAtMs":9223372036854775807,"readerGeneration":2}],
            "holds":[{"scope":{"pathPrefix":"data/b"},"generation":1,"reason":"case"}]}"#,
        r#"{"leases":[{"snapshotId":1,"expiresAtMs":0}]}"#,
        r#"{"leases":[{"snapshotId":2,"expiresAtMs":1800000000001}],"holds":[{"scope":{"snapshot":1},"generation":7}],"drCheckpoints":[{"snapshotId":3}]}"#,
        r#"{"holds":[{"scope":{"pathPrefix":"data/"},"generation":1}]}"#,
        r#"{"holds":[{"scope":"table","generation":10}]}"#,
        r#"{"holds":[{"scope":{"ref":"audit"},"generation":1,"reason":"audit"}]}"#,
        r#"{"drCheckpoints":[{"metadataFile":"s3://b/t/metadata/00003-x.metadata.json"}]}"#,
        r#"{"writers":[{"stagingPrefix":"tmp/","startedAtMs":1000}]}"#,
        r#"{"leases":[{"snapshotId":1,"owner":"ml","expiresAtMs":5,"readerGeneration":3}],
            "holds":[{"scope":{"pathPrefix":"data/case-7/"},"generation":20,"reason":"case 7"},
                     {"scope":{"ref":"audit"},"generation":21}],
            "writers":[{"stagingPrefix":"data/_tmp/job-1/","startedAtMs":0}],
            "drCheckpoints":[{"snapshotId":1}]}"#,
        HOLD_CONTEXT,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect()
}

#[test]
fn the_tests_contexts_match_the_context_schema() {
    let schema = Schema::load("context.v1.json");
    let docs = contexts();
    for (i, text) in docs.iter().enumerate() {
        Context::parse(text).unwrap_or_else(|e| panic!("context {i} does not parse: {e}\n{text}"));
        schema.accepts(&format!("context {i}"), text);
    }
    // serde reads a unit variant written as a map to null as well: the
    // table hold's two spellings are one scope.
    let table_hold = r#"{"holds":[{"scope":{"table":null},"generation":2}]}"#;
    let parsed = Context::parse(table_hold).expect("the map spelling of a table hold parses");
    assert_eq!(
        parsed,
        Context::parse(&table_hold.replace(r#"{"table":null}"#, r#""table""#))
            .expect("the string spelling of a table hold parses")
    );
    schema.accepts("a table hold spelt as a map", table_hold);
    println!("context.v1.json: {} contexts valid", docs.len() + 1);

    // Each spoiled context is refused by the parser and by the schema.
    let c = json_of("a context", &docs[docs.len() - 2]);
    let spoiled = [
        (
            "another schema name",
            edited(&c, "/schema", Some(json!("lakesweep.context.v2"))),
        ),
        (
            "a lease without expiresAtMs",
            edited(&c, "/leases/0/expiresAtMs", None),
        ),
        (
            "a lease's expiresAt",
            edited(&c, "/leases/0/expiresAt", Some(json!(5))),
        ),
        (
            "a string snapshotId",
            edited(&c, "/leases/0/snapshotId", Some(json!("1"))),
        ),
        (
            "a negative readerGeneration",
            edited(&c, "/leases/0/readerGeneration", Some(json!(-3))),
        ),
        (
            "a hold without generation",
            edited(&c, "/holds/0/generation", None),
        ),
        (
            "a table scope with a value",
            edited(&c, "/holds/0/scope", Some(json!({"table": {}}))),
        ),
        (
            "an unknown hold scope",
            edited(&c, "/holds/0/scope", Some(json!("tables"))),
        ),
        (
            "a scope of two kinds",
            edited(
                &c,
                "/holds/0/scope",
                Some(json!({"ref": "a", "snapshot": 1})),
            ),
        ),
        (
            "an absolute hold prefix",
            edited(
                &c,
                "/holds/0/scope",
                Some(json!({"pathPrefix": "s3://b/t/data/"})),
            ),
        ),
        (
            "a hold prefix with `..`",
            edited(
                &c,
                "/holds/0/scope",
                Some(json!({"pathPrefix": "data/../x/"})),
            ),
        ),
        (
            "an empty hold prefix",
            edited(&c, "/holds/0/scope", Some(json!({"pathPrefix": ""}))),
        ),
        (
            "a writer prefix with a leading `/`",
            edited(&c, "/writers/0/stagingPrefix", Some(json!("/tmp/"))),
        ),
        (
            "a file: writer prefix",
            edited(&c, "/writers/0/stagingPrefix", Some(json!("file:tmp/"))),
        ),
        (
            "a writer without startedAtMs",
            edited(&c, "/writers/0/startedAtMs", None),
        ),
        (
            "a relative DR metadata file",
            edited(
                &c,
                "/drCheckpoints/0",
                Some(json!({"metadataFile": "metadata/v3.metadata.json"})),
            ),
        ),
        (
            "a DR checkpoint of no kind",
            edited(&c, "/drCheckpoints/0", Some(json!({"snapshot": 1}))),
        ),
        ("null leases", edited(&c, "/leases", Some(Value::Null))),
        (
            "a snake-case field",
            edited(&c, "/dr_checkpoints", Some(json!([]))),
        ),
    ];
    for (what, doc) in &spoiled {
        assert!(
            Context::parse(&doc.to_string()).is_err(),
            "Context::parse accepts a context with {what}: the schema must not reject it"
        );
        schema.rejects(what, doc);
    }
}

/// The ledger and the bundle an earlier lakesweep stored, which this one
/// still reads (`tests/golden/legacy/`), match the schemas of their version.
#[test]
fn documents_an_earlier_lakesweep_stored_match_their_schemas() {
    for (doc, schema, now) in [
        ("ledger.v2.json", "ledger.v2.json", "ledger.v4.json"),
        ("ledger.v3.json", "ledger.v3.json", "ledger.v4.json"),
        ("bundle.v1.json", "bundle.v1.json", "bundle.v2.json"),
    ] {
        let text = std::fs::read_to_string(repo().join("tests/golden/legacy").join(doc))
            .expect("a stored legacy document");
        let schema = Schema::load(schema);
        schema.accepts(doc, &text);
        let current = if doc.starts_with("ledger") {
            Ledger::parse(&text).and_then(|mut l| {
                let (head, folder) = l.save_whole()?;
                let objects = Schema::load("ledger-objects.v1.json");
                let archive = Schema::load("ledger-archive.v1.json");
                for (name, bytes) in &folder {
                    let which = if name.starts_with("archive-") {
                        &archive
                    } else if name.starts_with("objects-") {
                        &objects
                    } else {
                        continue;
                    };
                    for line in lines_of(name, bytes) {
                        which.accepts(&format!("{doc} saved on: {name}"), &line);
                    }
                }
                Ok(head)
            })
        } else {
            Bundle::parse(&text).map(|b| b.to_json())
        }
        .unwrap_or_else(|e| panic!("{doc} is not read: {e}"));
        schema.rejects(
            &format!("{doc} saved on as the current version"),
            &json_of(doc, &current),
        );
        Schema::load(now).accepts(&format!("{doc} saved on as {now}"), &current);
    }
}

#[test]
fn every_schema_file_is_tested() {
    let mut names: Vec<PathBuf> = std::fs::read_dir(repo().join("schema"))
        .expect("schema/ exists")
        .map(|e| e.expect("schema/ is readable").path())
        .collect();
    names.sort();
    let names: Vec<String> = names
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
        .collect();
    assert_eq!(
        names,
        [
            "bundle.v1.json",
            "bundle.v2.json",
            "context.v1.json",
            "expiry.v1.json",
            "ledger-archive.v1.json",
            "ledger-objects.v1.json",
            "ledger.v2.json",
            "ledger.v3.json",
            "ledger.v4.json",
            "pinot-plan.v1.json",
            "plan.v3.json",
            "policy.v1.json"
        ],
        "a schema without a test here (or a test without its schema)"
    );
}

#[test]
fn pinot_plans_match_the_pinot_plan_schema() {
    use common::pinot;
    let schema = Schema::load("pinot-plan.v1.json");
    let mut plans = Vec::new();
    let base = pinot::config(pinot::doc("table-config.json"));
    plans.push(("complete", pinot::Host::new().run(base.clone()).unwrap()));
    let mut h = pinot::Host::new();
    let id = pinot::layout()["completed"][5]["snapshotId"]
        .as_str()
        .unwrap()
        .to_owned();
    h.truncate.insert(format!(
        "server/snapshots/events_OFFLINE/{id}/final.parquet"
    ));
    plans.push(("retry", h.run(base.clone()).unwrap()));
    let off = pinot::config(pinot::config_with(&[("enabled", Some("false"))]));
    plans.push(("disabled", pinot::Host::new().run(off).unwrap()));
    for (what, p) in &plans {
        schema.accepts(what, &p.to_json());
    }
    let doc = json_of("complete", &plans[0].1.to_json());
    assert!(!doc["deleteObjects"].as_array().unwrap().is_empty());
    schema.rejects("no digest", &edited(&doc, "/digest", None));
    schema.rejects(
        "a misspelt status",
        &edited(&doc, "/status", Some(json!("completed"))),
    );
    schema.rejects(
        "a role it does not know",
        &edited(&doc, "/snapshots/0/role", Some(json!("kept"))),
    );
    schema.rejects(
        "a non-canonical id",
        &edited(&doc, "/deleteObjects/0/snapshotId", Some(json!("0123"))),
    );
    schema.rejects("an unknown field", &edited(&doc, "/extra", Some(json!(1))));
    schema.rejects(
        "maxActiveVersions 1",
        &edited(&doc, "/settings/maxActiveVersions", Some(json!(1))),
    );
    println!("pinot-plan.v1.json: {} plans valid", plans.len());
}
