//! The Pinot test host: serves the layout tests/fixtures/generate_pinot.py
//! wrote (three deep-store roots) with its recorded mtimes, can change the
//! world between rounds, and drives any [`PinotPlanner`] (the crate's
//! session, or the component's in wasmtime).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use lakesweep::pinot::plan::PinotPlan;
use lakesweep::pinot::{PinotConfig, PinotRequest, PinotSession};
use lakesweep::{Error, ListedObject};
use serde_json::Value;

pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pinot")
}

pub fn layout() -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir().join("layout.json")).unwrap()).unwrap()
}

pub fn doc(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap()
}

pub const ROOTS: [&str; 3] = ["controller", "server", "broker"];

pub fn root_uri(r: &str) -> String {
    format!("file://{}", dir().join("deepstore").join(r).display())
}

/// The table config with `props` set in its ExternalTableSyncTask map
/// (`None` removes the property).
pub fn config_with(props: &[(&str, Option<&str>)]) -> String {
    let mut v: Value = serde_json::from_str(&doc("table-config.json")).unwrap();
    let m = v
        .pointer_mut("/task/taskTypeConfigsMap/ExternalTableSyncTask")
        .unwrap()
        .as_object_mut()
        .unwrap();
    for (k, val) in props {
        let key = format!("iceberg.snapshotProcessing.retention.{k}");
        match val {
            Some(x) => m.insert(key, Value::String(x.to_string())),
            None => m.remove(&key),
        };
    }
    v.to_string()
}

pub fn config(table_config: String) -> PinotConfig {
    PinotConfig {
        roots: ROOTS.iter().map(|r| root_uri(r)).collect(),
        table_config,
        now_ms: layout()["nowMs"].as_i64().unwrap(),
        min_age_ms: Some(3_600_000),
        segment_column: Some("segmentName".into()),
        origin: None,
    }
}

pub type State = (String, String, String);

/// A host over the layout on disk, with the recorded mtimes, that can
/// change the world between rounds (a round starts with each state read).
pub struct Host {
    pub mtimes: BTreeMap<String, i64>,
    /// The state answered at each read (the last one repeats).
    pub states: Vec<State>,
    pub state_reads: usize,
    /// Layout-relative keys hidden from listings.
    pub hide: BTreeSet<String>,
    /// Layout-relative keys served cut to half their bytes.
    pub truncate: BTreeSet<String>,
    /// Layout-relative keys listed but gone when read.
    pub vanish: BTreeSet<String>,
    /// Objects that appear from a round on: (round, rel, bytes, mtime);
    /// the listings after the Nth state read are round N (the first
    /// listing is round 1, the re-read's round 2).
    pub extra: Vec<(usize, String, Vec<u8>, i64)>,
    pub page_size: usize,
    pub reverse: bool,
}

pub fn base_state() -> State {
    (
        doc("idealstate.json"),
        doc("watermark.json"),
        doc("active.json"),
    )
}

impl Host {
    pub fn new() -> Host {
        let mtimes = serde_json::from_value(layout()["mtimes"].clone()).unwrap();
        Host {
            mtimes,
            states: vec![base_state()],
            state_reads: 0,
            hide: BTreeSet::new(),
            truncate: BTreeSet::new(),
            vanish: BTreeSet::new(),
            extra: Vec::new(),
            page_size: 1000,
            reverse: false,
        }
    }

    pub fn rel(uri: &str) -> String {
        let base = format!("file://{}/", dir().join("deepstore").display());
        uri.strip_prefix(&base).unwrap().to_owned()
    }

    pub fn list(&self, prefix: &str) -> Vec<ListedObject> {
        let rel = Self::rel(prefix);
        let round = self.state_reads;
        let mut out: Vec<ListedObject> = self
            .mtimes
            .iter()
            .filter(|(k, _)| k.starts_with(&rel) && !self.hide.contains(*k))
            .map(|(k, ms)| ListedObject {
                key: format!("{prefix}{}", &k[rel.len()..]),
                size: std::fs::metadata(dir().join("deepstore").join(k))
                    .unwrap()
                    .len(),
                last_modified_ms: *ms,
                etag: None,
                version_id: None,
            })
            .collect();
        for (from, k, bytes, ms) in &self.extra {
            if round >= *from && k.starts_with(&rel) {
                out.push(ListedObject {
                    key: format!("{prefix}{}", &k[rel.len()..]),
                    size: bytes.len() as u64,
                    last_modified_ms: *ms,
                    etag: None,
                    version_id: None,
                });
            }
        }
        if self.reverse {
            out.reverse();
        }
        out
    }

    pub fn read(&self, uri: &str) -> Option<Vec<u8>> {
        let rel = Self::rel(uri);
        if self.vanish.contains(&rel) {
            return None;
        }
        if let Some((_, _, b, _)) = self.extra.iter().find(|e| e.1 == rel) {
            return Some(b.clone());
        }
        let bytes = std::fs::read(dir().join("deepstore").join(&rel)).ok()?;
        Some(if self.truncate.contains(&rel) {
            bytes[..bytes.len() / 2].to_vec()
        } else {
            bytes
        })
    }

    pub fn run(&mut self, cfg: PinotConfig) -> Result<PinotPlan, Error> {
        let mut s = Native(PinotSession::start(cfg)?);
        self.drive(&mut s)?;
        s.0.finish()
    }

    /// Answers every request of `s` until it is done.
    pub fn drive<P: PinotPlanner>(&mut self, s: &mut P) -> Result<(), P::E> {
        while !s.is_done() {
            let mut asked = Vec::new();
            while let Some(r) = s.poll() {
                asked.push(r);
            }
            assert!(
                !asked.is_empty(),
                "a session that is not done asks for something"
            );
            if self.reverse {
                asked.reverse();
            }
            for r in asked {
                match r {
                    PinotRequest::ReadState => {
                        let st = self.states[self.state_reads.min(self.states.len() - 1)].clone();
                        self.state_reads += 1;
                        s.state(st.0, st.1, st.2)?;
                    }
                    PinotRequest::List(p) => {
                        let objs = self.list(&p);
                        let pages: Vec<_> = objs.chunks(self.page_size.max(1)).collect();
                        if pages.is_empty() {
                            s.page(p.clone(), vec![], true)?;
                        }
                        for (i, page) in pages.iter().enumerate() {
                            s.page(p.clone(), page.to_vec(), i + 1 == pages.len())?;
                        }
                    }
                    PinotRequest::ReadBlob(u) => {
                        let b = self.read(&u);
                        s.blob(u, b)?
                    }
                }
            }
        }
        Ok(())
    }
}

/// A Pinot session as the test host drives it: the crate's, or the
/// component's in wasmtime.
pub trait PinotPlanner {
    type E: std::fmt::Debug;
    fn poll(&mut self) -> Option<PinotRequest>;
    fn state(&mut self, ideal: String, w: String, a: String) -> Result<(), Self::E>;
    fn page(&mut self, prefix: String, o: Vec<ListedObject>, last: bool) -> Result<(), Self::E>;
    fn blob(&mut self, uri: String, bytes: Option<Vec<u8>>) -> Result<(), Self::E>;
    fn is_done(&mut self) -> bool;
}

pub struct Native(pub PinotSession);

impl PinotPlanner for Native {
    type E = Error;
    fn poll(&mut self) -> Option<PinotRequest> {
        self.0.poll_request()
    }
    fn state(&mut self, ideal: String, w: String, a: String) -> Result<(), Error> {
        self.0.handle_state(ideal, w, a)
    }
    fn page(&mut self, prefix: String, o: Vec<ListedObject>, last: bool) -> Result<(), Error> {
        self.0.handle_page(prefix, o, last)
    }
    fn blob(&mut self, uri: String, bytes: Option<Vec<u8>>) -> Result<(), Error> {
        match bytes {
            Some(b) => self.0.handle_blob(uri, b),
            None => self.0.handle_missing(uri),
        }
    }
    fn is_done(&mut self) -> bool {
        self.0.is_done()
    }
}
