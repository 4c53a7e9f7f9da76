//! Loads the built component (`target/lakesweep.wasm`, made by
//! `scripts/build-component.sh`) in wasmtime with an empty linker (no WASI,
//! no imports) and checks that it gives byte-identical plans and identical
//! decisions to the native crate on every fixture, at several page sizes.

mod common;

use ::lakesweep::{
    Decision, Error, ListedObject, MalformedReason, ProtocolReason, Request, UnsafeReason, Verdict,
};
use common::*;
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Config, Engine, Store};

mod wit {
    wasmtime::component::bindgen!({ path: "wit", world: "lakesweep" });
}

use wit::lakesweep::planner::types as wt;
use wit::Lakesweep;

fn wasm_path() -> std::path::PathBuf {
    std::env::var_os("LAKESWEEP_WASM")
        .map(Into::into)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/lakesweep.wasm")
        })
}

struct Wasm {
    store: Store<()>,
    api: Lakesweep,
    session: ResourceAny,
}

fn load() -> (Engine, Component) {
    let engine = Engine::new(&Config::new()).unwrap();
    let path = wasm_path();
    let component = Component::from_file(&engine, &path).unwrap_or_else(|e| {
        panic!(
            "load {}: {e} (run scripts/build-component.sh first)",
            path.display()
        )
    });
    (engine, component)
}

fn from_wt(e: wt::Error) -> Error {
    match e {
        wt::Error::Malformed(m) => Error::Malformed {
            reason: match m.reason {
                wt::MalformedReason::Encoding => MalformedReason::Encoding,
                wt::MalformedReason::Field => MalformedReason::Field,
                wt::MalformedReason::Inconsistent => MalformedReason::Inconsistent,
                wt::MalformedReason::Path => MalformedReason::Path,
                wt::MalformedReason::PartialWrite => MalformedReason::PartialWrite,
            },
            uri: m.uri,
            detail: m.detail,
        },
        wt::Error::Unsupported(u) => Error::Unsupported {
            feature: u.feature,
            uri: u.uri,
        },
        wt::Error::Protocol(p) => Error::Protocol {
            reason: match p.reason {
                wt::ProtocolReason::UnexpectedAnswer => ProtocolReason::UnexpectedAnswer,
                wt::ProtocolReason::BadKey => ProtocolReason::BadKey,
                wt::ProtocolReason::OutOfOrder => ProtocolReason::OutOfOrder,
                wt::ProtocolReason::BadInput => ProtocolReason::BadInput,
            },
            detail: p.detail,
        },
        wt::Error::InvalidOptions(i) => Error::InvalidOptions {
            field: i.field,
            detail: i.detail,
        },
        wt::Error::Unsafe(u) => Error::Unsafe {
            reason: match u.reason {
                wt::UnsafeReason::MissingMetadata => UnsafeReason::MissingMetadata,
                wt::UnsafeReason::ForeignTable => UnsafeReason::ForeignTable,
                wt::UnsafeReason::LocationMismatch => UnsafeReason::LocationMismatch,
                wt::UnsafeReason::NoReferencedKeyListed => UnsafeReason::NoReferencedKeyListed,
                wt::UnsafeReason::TableChanging => UnsafeReason::TableChanging,
                wt::UnsafeReason::GcDisabled => UnsafeReason::GcDisabled,
                wt::UnsafeReason::StalePointer => UnsafeReason::StalePointer,
                wt::UnsafeReason::SharedLocation => UnsafeReason::SharedLocation,
                wt::UnsafeReason::NestedTable => UnsafeReason::NestedTable,
                wt::UnsafeReason::Halted => UnsafeReason::Halted,
                wt::UnsafeReason::ProtectedSnapshotMissing => {
                    UnsafeReason::ProtectedSnapshotMissing
                }
            },
            detail: u.detail,
        },
    }
}

impl Wasm {
    fn start(
        engine: &Engine,
        component: &Component,
        cfg: ::lakesweep::SessionConfig,
    ) -> Result<Wasm, Error> {
        let mut store = Store::new(engine, ());
        let linker: Linker<()> = Linker::new(engine); // empty: the component imports nothing
        let api = Lakesweep::instantiate(&mut store, component, &linker)
            .expect("instantiate with no imports");
        let c = wt::SessionConfig {
            table_location: cfg.table_location,
            format: match cfg.format {
                ::lakesweep::TableFormat::Iceberg => wt::TableFormat::Iceberg,
                ::lakesweep::TableFormat::Delta => wt::TableFormat::Delta,
            },
            metadata_location: cfg.metadata_location,
            now_ms: cfg.now_ms,
            file_retention_ms: cfg.file_retention_ms,
            keep_deleted_entries: cfg.keep_deleted_entries,
            allow_short_retention: cfg.allow_short_retention,
            location_map: cfg
                .location_map
                .into_iter()
                .map(|m| wt::PathMapping {
                    from: m.from,
                    to: m.to,
                })
                .collect(),
            policy: cfg.policy,
            context: cfg.context,
            keep_versions: cfg.keep_versions,
            log_cleanup: cfg.log_cleanup,
            pointer_authoritative: cfg.pointer_authoritative,
            memory_budget_bytes: Some(cfg.memory_budget_bytes),
            origin: cfg.origin,
            foreign_roots: cfg
                .foreign_roots
                .into_iter()
                .map(|f| wt::ForeignRoot {
                    root: f.root,
                    owner: f.owner,
                })
                .collect(),
            prior_pointers: cfg.prior_pointers,
            deleted_index: cfg.deleted_index,
        };

        let session = api
            .lakesweep_planner_planner()
            .session()
            .call_start(&mut store, &c)
            .unwrap()
            .map_err(from_wt)?;
        Ok(Wasm {
            store,
            api,
            session,
        })
    }
}

impl Planner for Wasm {
    fn poll_request(&mut self) -> Option<Request> {
        let (s, st) = (self.session, &mut self.store);
        let r = self
            .api
            .lakesweep_planner_planner()
            .session()
            .call_poll_request(st, s)
            .unwrap();
        r.map(|r| match r {
            wt::Request::ReadBlob(uri) => Request::ReadBlob { uri },
            wt::Request::List(prefix) => Request::List { prefix },
            wt::Request::ResolvePointer => Request::ResolvePointer,
        })
    }
    fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<(), Error> {
        let s = self.session;
        let api = &self.api;
        api.lakesweep_planner_planner()
            .session()
            .call_handle_blob(&mut self.store, s, &uri, &bytes)
            .unwrap()
            .map_err(from_wt)
    }
    fn handle_missing(&mut self, uri: String) -> Result<(), Error> {
        let s = self.session;
        let api = &self.api;
        api.lakesweep_planner_planner()
            .session()
            .call_handle_missing(&mut self.store, s, &uri)
            .unwrap()
            .map_err(from_wt)
    }
    fn handle_page(&mut self, objects: Vec<ListedObject>, is_last: bool) -> Result<(), Error> {
        let s = self.session;
        let objs: Vec<wt::ListedObject> = objects
            .into_iter()
            .map(|o| wt::ListedObject {
                key: o.key,
                version: wt::ObjectVersion {
                    size: o.size,
                    last_modified_ms: o.last_modified_ms,
                    etag: o.etag,
                    version_id: o.version_id,
                },
            })
            .collect();
        let api = &self.api;
        api.lakesweep_planner_planner()
            .session()
            .call_handle_page(&mut self.store, s, &objs, is_last)
            .unwrap()
            .map_err(from_wt)
    }
    fn handle_pointer(&mut self, loc: Option<String>) -> Result<(), Error> {
        let s = self.session;
        let api = &self.api;
        api.lakesweep_planner_planner()
            .session()
            .call_handle_pointer(&mut self.store, s, loc.as_ref())
            .unwrap()
            .map_err(from_wt)
    }
    fn drain_decisions(&mut self) -> Vec<Decision> {
        let s = self.session;
        let api = &self.api;
        let ds = api
            .lakesweep_planner_planner()
            .session()
            .call_drain_decisions(&mut self.store, s)
            .unwrap();
        ds.into_iter()
            .map(|d| Decision {
                key: d.key,
                relative_key: d.relative_key,
                verdict: verdict(d.verdict),
                detail: d.detail,
                size: d.version.size,
                last_modified_ms: d.version.last_modified_ms,
                etag: d.version.etag,
                version_id: d.version.version_id,
            })
            .collect()
    }
}

/// The component's verdict as the crate names it.
fn verdict(v: wt::Verdict) -> Verdict {
    match v {
        wt::Verdict::Referenced => Verdict::Referenced,
        wt::Verdict::NearMiss => Verdict::NearMiss,
        wt::Verdict::Young => Verdict::Young,
        wt::Verdict::Hidden => Verdict::Hidden,
        wt::Verdict::Unverified => Verdict::Unverified,
        wt::Verdict::OwnerCheck => Verdict::OwnerCheck,
        wt::Verdict::Protected => Verdict::Protected,
        wt::Verdict::Candidate => Verdict::Candidate,
        wt::Verdict::Demoted => Verdict::Demoted,
        wt::Verdict::ExpiredLog => Verdict::ExpiredLog,
        wt::Verdict::Unaddressable => Verdict::Unaddressable,
        wt::Verdict::FolderMarker => Verdict::FolderMarker,
        wt::Verdict::Foreign => Verdict::Foreign,
    }
}

impl Finish for Wasm {
    fn finish_json(&mut self) -> Result<String, Error> {
        let s = self.session;
        let api = &self.api;
        api.lakesweep_planner_planner()
            .session()
            .call_finish(&mut self.store, s)
            .unwrap()
            .map(|p| p.document)
            .map_err(from_wt)
    }
}

#[test]
fn component_plans_are_byte_identical_to_native() {
    let (engine, component) = load();
    for t in tables() {
        for page_size in [1000, 5, 1] {
            let mut o = HostOptions::for_table(&t);
            o.page_size = page_size;
            let native = run_native(t.config(), &o).unwrap();
            let mut w = Wasm::start(&engine, &component, t.config()).unwrap();
            let wasm = drive(&mut w, &t.metadata_location, &o).unwrap();
            assert_eq!(
                wasm.plan_json, native.plan_json,
                "{} page {page_size}",
                t.name
            );
            assert_eq!(
                wasm.decisions, native.decisions,
                "{} page {page_size}",
                t.name
            );
            assert!(!native.plan().delete.is_empty());
        }
    }
}

/// Page mode through the component, a page in columns: every object of
/// every fixture table gets the native classifier's verdict and reason;
/// columns that describe no page are refused (protocol: bad-input).
#[test]
fn component_classifies_pages_in_columns_like_native() {
    let (engine, component) = load();
    for t in tables() {
        let keep_set = exported_keep_set(&t.config());
        let native = ::lakesweep::PageClassifier::load(keep_set.clone()).unwrap();
        let mut store = Store::new(&engine, ());
        let api = Lakesweep::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
        let pc = api.lakesweep_planner_planner().page_classifier();
        let handle = pc.call_load(&mut store, &keep_set).unwrap().unwrap();
        // The same keep set as hex text (the hosts that move text faster).
        let text: String = keep_set.iter().map(|b| format!("{b:02x}")).collect();
        let by_text = pc.call_load_hex(&mut store, &text).unwrap().unwrap();
        assert!(pc.call_load_hex(&mut store, &text[1..]).unwrap().is_err());
        let listing = list(&t.location, &HostOptions::for_table(&t));
        for page in listing.chunks(7) {
            let rows = native.classify(page.to_vec()).unwrap();
            let c = ::lakesweep::PageColumns::of(page).unwrap();
            let cols = wt::PageColumns {
                keys: c.keys,
                key_ends: c.key_ends,
                sizes: c.sizes,
                last_modified_ms: c.last_modified_ms,
            };
            let v = pc
                .call_classify_columns(&mut store, handle, &cols)
                .unwrap()
                .unwrap();
            let w = pc
                .call_classify_columns(&mut store, by_text, &cols)
                .unwrap()
                .unwrap();
            assert_eq!(format!("{v:?}"), format!("{w:?}"), "{}", t.name);
            assert_eq!(v.verdicts.len(), rows.len(), "{}", t.name);
            for (i, d) in rows.iter().enumerate() {
                assert_eq!(verdict(v.verdicts[i]), d.verdict, "{}: {}", t.name, d.key);
                assert_eq!(v.details[v.detail_of[i] as usize], d.detail, "{}", d.key);
            }
            let mut bad = cols.clone();
            bad.sizes.pop();
            let e = pc.call_classify_columns(&mut store, handle, &bad).unwrap();
            assert!(
                matches!(
                    e.map_err(from_wt),
                    Err(Error::Protocol {
                        reason: ProtocolReason::BadInput,
                        ..
                    })
                ),
                "{}",
                t.name
            );
        }
    }
}

#[test]
fn component_fails_closed_like_native() {
    let (engine, component) = load();
    let t = tables().into_iter().next().unwrap();
    let mut o = HostOptions::for_table(&t);
    let list = std::fs::read_dir(vpath(&format!("{}/metadata", t.location)).unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("snap-"))
        .unwrap();
    o.missing.push(format!("{}/metadata/{list}", t.location));
    let native = run_native(t.config(), &o).expect_err("native refuses");
    let mut w = Wasm::start(&engine, &component, t.config()).unwrap();
    let wasm = drive(&mut w, &t.metadata_location, &o).expect_err("component refuses");
    assert_eq!(wasm, native);
    assert!(matches!(
        native,
        Error::Unsafe {
            reason: UnsafeReason::MissingMetadata,
            ..
        }
    ));
}

/// The policy and the context cross the WIT boundary unchanged: the same
/// `protected` verdicts, window and tokens as the native crate.
#[test]
fn component_honours_policy_and_context_like_native() {
    let (engine, component) = load();
    let t = tables().into_iter().find(|t| t.name == "events").unwrap();
    let uuid = {
        let md: serde_json::Value =
            serde_json::from_slice(&std::fs::read(vpath(&t.metadata_location).unwrap()).unwrap())
                .unwrap();
        md["table-uuid"].as_str().unwrap().to_owned()
    };
    let mut cfg = t.config();
    cfg.policy = Some(format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{uuid}","format":"iceberg"}},
            "fileRetention":{{"orphanSafetyInterval":"2d","maxWriterDuration":"6h"}},"legalHoldGeneration":3}}"#
    ));
    cfg.context = Some(
        r#"{"holds":[{"scope":{"pathPrefix":"data/category=a+b/"},"generation":3,"reason":"case 3"}],
            "writers":[{"stagingPrefix":"metadata/00099-","startedAtMs":0}]}"#
            .into(),
    );
    let o = HostOptions::for_table(&t);
    let native = run_native(cfg.clone(), &o).unwrap();
    let mut w = Wasm::start(&engine, &component, cfg).unwrap();
    let wasm = drive(&mut w, &t.metadata_location, &o).unwrap();
    assert_eq!(wasm.plan_json, native.plan_json);
    assert_eq!(wasm.decisions, native.decisions);
    let v = native.verdicts();
    assert_eq!(
        v["data/category=a+b/orphan-old-in-partition.parquet"].verdict,
        Verdict::Protected
    );
    assert_eq!(
        v["metadata/00099-00000000-0000-0000-0000-000000000063.metadata.json"].verdict,
        Verdict::Protected
    );
    let plan = native.plan();
    assert_eq!(plan.delete.len(), 1, "only the unprotected old orphan");
    assert_eq!(plan.tokens.hold_generation, 3);
    assert!(plan.tokens.policy_digest.is_some());
    assert!(plan
        .warnings
        .iter()
        .any(|w| w.contains("longer than maxWriterDuration")));
}

/// Delta tables plan the same through the component: the log listing, the
/// Parquet checkpoint, log cleanup and the `expired-log` verdict included.
#[test]
fn component_plans_delta_tables_like_native() {
    let (engine, component) = load();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta");
    let expect: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("expect.json")).unwrap()).unwrap();
    let t = &expect["events"];
    let location = format!("file://{}", dir.join("events").display());
    let now = t["generated_at_ms"].as_i64().unwrap() + 40 * 86_400_000;
    let mut cfg = ::lakesweep::SessionConfig::new(&location, "", now, 7 * 86_400_000);
    cfg.format = ::lakesweep::TableFormat::Delta;
    cfg.log_cleanup = true;
    for page_size in [1000, 7] {
        let mut o = HostOptions::synthetic();
        o.page_size = page_size;
        o.mtime_base = Some(location.clone());
        o.mtimes = t["mtimes"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
            .collect();
        let native = run_native(cfg.clone(), &o).unwrap();
        let mut w = Wasm::start(&engine, &component, cfg.clone()).unwrap();
        let wasm = drive(&mut w, "", &o).unwrap();
        assert_eq!(wasm.plan_json, native.plan_json, "page {page_size}");
        assert_eq!(wasm.decisions, native.decisions, "page {page_size}");
        assert!(native
            .decisions
            .iter()
            .any(|d| d.verdict == Verdict::ExpiredLog));
    }
}
