//! Test host: serves the committed fixture tables from disk under their
//! neutral root `file:///lakesweep-fixtures`, with the modification times the
//! generator recorded (git checkouts lose them), and drives any planner that
//! implements [`Planner`] (the native crate or the WASM component).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lakesweep::{Decision, Error, ListedObject, SealedPlan, Session, SessionConfig};
use serde_json::Value;

pub const VROOT: &str = "file:///lakesweep-fixtures";
/// Neutral root of the deltalake-written fixtures (`tests/fixtures/delta`),
/// so their plans do not depend on where the repository is checked out.
pub const VDELTA: &str = "file:///lakesweep-delta-fixtures";
/// Neutral root of the writer shapes (`tests/fixtures/shapes`), as their
/// writers recorded it.
pub const VSHAPES: &str = "file:///lakesweep-shapes";

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/generated")
}

pub fn expect() -> Value {
    let text = std::fs::read_to_string(fixtures_dir().join("expect.json")).expect("expect.json");
    serde_json::from_str(&text).expect("expect.json parses")
}

/// A table of the generated fixtures.
pub struct Table {
    pub name: String,
    pub location: String,
    pub metadata_location: String,
    pub now_ms: i64,
    pub retention_ms: i64,
    pub planted: BTreeMap<String, String>,
    pub mtimes: BTreeMap<String, i64>,
}

pub fn tables() -> Vec<Table> {
    let e = expect();
    e.as_object()
        .unwrap()
        .iter()
        .map(|(name, t)| Table {
            name: name.clone(),
            location: t["location"].as_str().unwrap().to_owned(),
            metadata_location: t["metadata_location"].as_str().unwrap().to_owned(),
            now_ms: t["now_ms"].as_i64().unwrap(),
            retention_ms: t["file_retention_ms"].as_i64().unwrap(),
            planted: serde_json::from_value(t["planted"].clone()).unwrap(),
            mtimes: serde_json::from_value(t["mtimes"].clone()).unwrap(),
        })
        .collect()
}

impl Table {
    pub fn config(&self) -> SessionConfig {
        SessionConfig::new(
            &self.location,
            &self.metadata_location,
            self.now_ms,
            self.retention_ms,
        )
    }
}

/// Maps a virtual URI onto the checkout; other `file://` URIs are real paths.
pub fn vpath(uri: &str) -> Option<PathBuf> {
    if let Some(rest) = uri.strip_prefix(VROOT) {
        return Some(fixtures_dir().join(rest.trim_start_matches('/')));
    }
    if let Some(rest) = uri.strip_prefix(VDELTA) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta");
        return Some(dir.join(rest.trim_start_matches('/')));
    }
    if let Some(rest) = uri.strip_prefix(VSHAPES) {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/shapes");
        return Some(dir.join(rest.trim_start_matches('/')));
    }
    uri.strip_prefix("file://").map(PathBuf::from)
}

/// What the host does, and how it pages.
#[derive(Clone)]
pub struct HostOptions {
    /// Objects per listing page.
    pub page_size: usize,
    /// Permutation seed for page order (0: in order).
    pub shuffle: u64,
    /// Pointer answers, in order; when exhausted, the session's start pointer.
    pub pointers: Vec<String>,
    /// Extra (virtual key -> bytes, mtime) objects in the listing and for reads.
    pub extra: BTreeMap<String, (Vec<u8>, i64)>,
    /// Virtual keys hidden from reads (reads answer "missing").
    pub missing: Vec<String>,
    /// Replace bytes read for a URI.
    pub replace: BTreeMap<String, Vec<u8>>,
    /// Mtimes of listed files, relative to the table.
    pub mtimes: BTreeMap<String, i64>,
    /// Mtime for files without a recorded one (None: that is a test bug).
    pub default_mtime: Option<i64>,
    /// The location `mtimes` keys are relative to (None: the listed prefix).
    pub mtime_base: Option<String>,
}

impl HostOptions {
    /// Options serving a fixture table with its recorded mtimes.
    pub fn for_table(t: &Table) -> Self {
        HostOptions {
            mtimes: t.mtimes.clone(),
            ..HostOptions::synthetic()
        }
    }
}

/// The planner surface both the native crate and the component offer: the
/// core's [`Planner`] (the reference loop drives it) and the sealed plan.
pub use lakesweep::host::Planner;

/// A planner that can also hand over its sealed plan.
pub trait Finish: Planner {
    /// The sealed plan as its canonical JSON text.
    fn finish_json(&mut self) -> Result<String, Error>;
}

impl Finish for Session {
    fn finish_json(&mut self) -> Result<String, Error> {
        self.finish().map(|p| p.to_json())
    }
}

/// A host that decodes manifests and Delta checkpoints elsewhere (as
/// parallel workers would) and passes pages and decisions as JSON (as a
/// Python host does): every manifest and checkpoint read is answered with
/// its digest, never its bytes (every other manifest's resolved, where
/// the session offers a resolution). Counts manifests and checkpoint files.
pub struct Digesting(pub Session, pub usize, pub usize);

impl Planner for Digesting {
    fn poll_request(&mut self) -> Option<lakesweep::Request> {
        self.0.poll_request()
    }
    fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<(), lakesweep::Error> {
        if self.0.is_checkpoint_read(&uri) {
            self.2 += 1;
            let digest = lakesweep::digest_checkpoint(&uri, &bytes)?;
            return self.0.handle_checkpoint_digest(uri, digest);
        }
        if !self.0.is_manifest_read(&uri) {
            return self.0.handle_blob(uri, bytes);
        }
        self.1 += 1;
        // Every other manifest resolved where it is read, when the
        // session offers a resolution: both kinds plan alike, mixed too.
        let digest = match self.0.manifest_resolution() {
            Some(r) if self.1 % 2 == 1 => lakesweep::digest_manifest_resolved(&r, &uri, &bytes)?,
            _ => lakesweep::digest_manifest(&uri, &bytes)?,
        };
        assert!(
            digest.len() < bytes.len(),
            "a digest is smaller than its manifest"
        );
        self.0.handle_manifest_digest(uri, digest)
    }
    fn handle_missing(&mut self, uri: String) -> Result<(), lakesweep::Error> {
        self.0.handle_missing(uri)
    }
    fn handle_page(
        &mut self,
        objects: Vec<lakesweep::ListedObject>,
        is_last: bool,
    ) -> Result<(), lakesweep::Error> {
        let page = serde_json::to_vec(&objects).unwrap();
        self.0.handle_page_json(page, is_last)
    }
    fn handle_pointer(&mut self, m: Option<String>) -> Result<(), lakesweep::Error> {
        self.0.handle_pointer(m)
    }
    fn drain_decisions(&mut self) -> Vec<lakesweep::Decision> {
        serde_json::from_slice(&self.0.drain_decisions_json()).unwrap()
    }
}

impl Finish for Digesting {
    fn finish_json(&mut self) -> Result<String, lakesweep::Error> {
        self.0.finish().map(|p| p.to_json())
    }
}

/// A host whose listing gives names first (a local walk without a stat
/// per file): each page of the table's listing goes to `handle_names`,
/// and only the objects it answers go on, with their versions, to
/// `handle_page` (the Delta log's own listing: every object). Counts the
/// objects settled by name.
pub struct ByName(pub Session, pub u64);

impl Planner for ByName {
    fn poll_request(&mut self) -> Option<lakesweep::Request> {
        self.0.poll_request()
    }
    fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<(), Error> {
        self.0.handle_blob(uri, bytes)
    }
    fn handle_missing(&mut self, uri: String) -> Result<(), Error> {
        self.0.handle_missing(uri)
    }
    fn handle_page(&mut self, objects: Vec<ListedObject>, is_last: bool) -> Result<(), Error> {
        let keys = objects.iter().map(|o| o.key.clone()).collect();
        let needed = self.0.handle_names(keys)?;
        assert!(needed.windows(2).all(|w| w[0] < w[1]), "ascending");
        self.1 += (objects.len() - needed.len()) as u64;
        let mut objects: Vec<Option<ListedObject>> = objects.into_iter().map(Some).collect();
        let page = needed
            .iter()
            .map(|&i| objects[i as usize].take().expect("an index of the page"))
            .collect();
        self.0.handle_page(page, is_last)
    }
    fn handle_pointer(&mut self, m: Option<String>) -> Result<(), Error> {
        self.0.handle_pointer(m)
    }
    fn drain_decisions(&mut self) -> Vec<Decision> {
        self.0.drain_decisions()
    }
}

impl Finish for ByName {
    fn finish_json(&mut self) -> Result<String, Error> {
        self.0.finish().map(|p| p.to_json())
    }
}

/// Lists the table under `location` (virtual), sorted.
pub fn list(location: &str, opts: &HostOptions) -> Vec<ListedObject> {
    let dir = vpath(location).expect("virtual location");
    let mut out = Vec::new();
    let mut stack = if dir.is_dir() {
        vec![dir.clone()]
    } else {
        vec![]
    };
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = p
                .strip_prefix(&dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let base_rel = match &opts.mtime_base {
                Some(b) => format!("{location}/{rel}")
                    .strip_prefix(&format!("{b}/"))
                    .map(str::to_owned)
                    .unwrap_or_else(|| rel.clone()),
                None => rel.clone(),
            };
            let mtime = opts
                .mtimes
                .get(&base_rel)
                .copied()
                .or(opts.default_mtime)
                .unwrap_or_else(|| panic!("no recorded mtime for {rel}: regenerate fixtures"));
            out.push(ListedObject {
                key: format!("{location}/{rel}"),
                size: e.metadata().unwrap().len(),
                last_modified_ms: mtime,
                etag: None,
                version_id: None,
            });
        }
    }
    for (k, (b, m)) in &opts.extra {
        if k.starts_with(&format!("{location}/")) {
            out.push(ListedObject {
                key: k.clone(),
                size: b.len() as u64,
                last_modified_ms: *m,
                etag: None,
                version_id: None,
            });
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// The bytes the fixture store serves for `uri` (with `opts`' changes), or
/// `None` for a missing object.
pub fn read(uri: &str, opts: &HostOptions) -> Option<Vec<u8>> {
    if opts.missing.iter().any(|m| m == uri) {
        return None;
    }
    if let Some(b) = opts.replace.get(uri) {
        return Some(b.clone());
    }
    if let Some((b, _)) = opts.extra.get(uri) {
        return Some(b.clone());
    }
    std::fs::read(vpath(uri)?).ok()
}

/// Outcome of a run.
#[derive(Debug)]
pub struct Run {
    pub plan_json: String,
    pub decisions: Vec<Decision>,
}

impl HostOptions {
    /// Options for a purely synthetic table (no files on disk).
    pub fn synthetic() -> Self {
        HostOptions {
            page_size: 1000,
            shuffle: 0,
            pointers: vec![],
            extra: BTreeMap::new(),
            missing: vec![],
            replace: BTreeMap::new(),
            mtimes: BTreeMap::new(),
            default_mtime: None,
            mtime_base: None,
        }
    }
}

impl Run {
    pub fn plan(&self) -> SealedPlan {
        SealedPlan::from_json(&self.plan_json).unwrap()
    }
    /// Final verdict per relative key (the last decision for a key wins: demotions).
    pub fn verdicts(&self) -> BTreeMap<String, Decision> {
        let mut m = BTreeMap::new();
        for d in &self.decisions {
            m.insert(d.relative_key.clone(), d.clone());
        }
        m
    }
}

/// The fixtures (and `opts`' changes to them) as the reference host's
/// store: pages split and ordered as `opts` asks, pointers answered in turn.
struct Fixtures<'a> {
    opts: &'a HostOptions,
    pointers: std::vec::IntoIter<String>,
    start_pointer: &'a str,
}

impl lakesweep::host::Store for Fixtures<'_> {
    fn read(&mut self, uri: &str) -> Option<Vec<u8>> {
        read(uri, self.opts)
    }
    fn list(&mut self, prefix: &str) -> Vec<Vec<ListedObject>> {
        let objs = list(prefix.trim_end_matches('/'), self.opts);
        let mut pages: Vec<Vec<ListedObject>> = objs
            .chunks(self.opts.page_size.max(1))
            .map(|c| c.to_vec())
            .collect();
        permute(&mut pages, self.opts.shuffle);
        pages
    }
    fn pointer(&mut self) -> Option<String> {
        Some(self.pointers.next().unwrap_or_else(|| {
            self.opts
                .pointers
                .last()
                .cloned()
                .unwrap_or_else(|| self.start_pointer.to_owned())
        }))
    }
}

/// Drives `p` to the end through the core's reference loop
/// ([`lakesweep::host::drive`]), with pages split and ordered as asked;
/// an odd `shuffle` answers the newest request first.
pub fn drive(p: &mut dyn Finish, start_pointer: &str, opts: &HostOptions) -> Result<Run, Error> {
    let mut store = Fixtures {
        opts,
        pointers: opts.pointers.clone().into_iter(),
        start_pointer,
    };
    let order = if opts.shuffle % 2 == 1 {
        lakesweep::host::Order::NewestFirst
    } else {
        lakesweep::host::Order::AsAsked
    };
    let decisions = lakesweep::host::drive(p, &mut store, order)?;
    let plan_json = p.finish_json()?;
    Ok(Run {
        plan_json,
        decisions,
    })
}

/// Deterministic permutation (xorshift) of pages.
pub fn permute<T>(v: &mut [T], seed: u64) {
    if seed == 0 {
        return;
    }
    let mut x = seed;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

pub fn run_native(cfg: SessionConfig, opts: &HostOptions) -> Result<Run, Error> {
    let start = cfg.metadata_location.clone();
    let mut s = Session::start(cfg)?;
    drive(&mut s, &start, opts)
}

/// Minimal Avro container writer (null codec) for synthetic manifests.
pub mod pinot;
pub mod synth;

pub mod avro {
    fn zz(v: i64, out: &mut Vec<u8>) {
        let mut n = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            let b = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }
    fn s(v: &[u8], out: &mut Vec<u8>) {
        zz(v.len() as i64, out);
        out.extend_from_slice(v);
    }
    fn container(schema: &str, records: &[Vec<u8>]) -> Vec<u8> {
        let mut out = b"Obj\x01".to_vec();
        zz(1, &mut out);
        s(b"avro.schema", &mut out);
        s(schema.as_bytes(), &mut out);
        zz(0, &mut out);
        let sync = [0x5au8; 16];
        out.extend_from_slice(&sync);
        if !records.is_empty() {
            let body: Vec<u8> = records.concat();
            zz(records.len() as i64, &mut out);
            s(&body, &mut out);
            out.extend_from_slice(&sync);
        }
        out
    }
    const LIST: &str = r#"{"type":"record","name":"manifest_file","fields":[
      {"name":"manifest_path","type":"string"},{"name":"manifest_length","type":"long"},
      {"name":"partition_spec_id","type":"int"},{"name":"content","type":"int"},
      {"name":"added_snapshot_id","type":"long"},
      {"name":"partitions","type":["null",{"type":"array","items":{"type":"record","name":"r508","fields":[{"name":"contains_null","type":"boolean"},{"name":"lower_bound","type":["null","bytes"]}]}}]}]}"#;
    const MANIFEST: &str = r#"{"type":"record","name":"manifest_entry","fields":[
      {"name":"status","type":"int"},{"name":"snapshot_id","type":["null","long"]},
      {"name":"data_file","type":{"type":"record","name":"r2","fields":[
        {"name":"content","type":"int"},{"name":"file_path","type":"string"},
        {"name":"file_format","type":"string"},
        {"name":"value_counts","type":["null",{"type":"array","items":{"type":"record","name":"k119_v120","fields":[{"name":"key","type":"int"},{"name":"value","type":"long"}]}}]},
        {"name":"record_count","type":"long"}]}}]}"#;

    /// A manifest list naming `(path, length, content)` manifests.
    pub fn manifest_list(snapshot_id: i64, manifests: &[(String, u64, i64)]) -> Vec<u8> {
        let recs: Vec<Vec<u8>> = manifests
            .iter()
            .map(|(p, len, content)| {
                let mut r = Vec::new();
                s(p.as_bytes(), &mut r);
                zz(*len as i64, &mut r);
                zz(0, &mut r);
                zz(*content, &mut r);
                zz(snapshot_id, &mut r);
                zz(1, &mut r);
                zz(1, &mut r);
                r.push(0);
                zz(1, &mut r);
                s(b"lo", &mut r);
                zz(0, &mut r);
                r
            })
            .collect();
        container(LIST, &recs)
    }

    /// A manifest with `(status, content, path)` entries.
    pub fn manifest(snapshot_id: i64, entries: &[(i64, i64, String)]) -> Vec<u8> {
        let recs: Vec<Vec<u8>> = entries
            .iter()
            .map(|(status, content, path)| {
                let mut r = Vec::new();
                zz(*status, &mut r);
                zz(1, &mut r);
                zz(snapshot_id, &mut r);
                zz(*content, &mut r);
                s(path.as_bytes(), &mut r);
                s(b"PARQUET", &mut r);
                zz(1, &mut r);
                zz(2, &mut r);
                zz(1, &mut r);
                zz(10, &mut r);
                zz(2, &mut r);
                zz(20, &mut r);
                zz(0, &mut r);
                zz(10, &mut r);
                r
            })
            .collect();
        container(MANIFEST, &recs)
    }
}

/// Copies a folder tree (files and folders) from `from` to `to`.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

/// The Python the tests run: `$LAKESWEEP_PYTHON`, else `python3` (scripts/test.sh
/// puts its virtual environment first on `PATH`). Tests that need it fail
/// without it; they never skip.
pub fn python() -> String {
    std::env::var("LAKESWEEP_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The keep set a session builds for `cfg` on the fixtures, exported as
/// the page mode loads it (the session stops at its listing request).
pub fn exported_keep_set(cfg: &SessionConfig) -> Vec<u8> {
    let mut s = lakesweep::Session::start(cfg.clone()).unwrap();
    while let Some(r) = s.poll_request() {
        match r {
            lakesweep::Request::ReadBlob { uri } => s
                .handle_blob(uri.clone(), std::fs::read(vpath(&uri).unwrap()).unwrap())
                .unwrap(),
            lakesweep::Request::List { .. } => return s.export_keep_set().unwrap(),
            other => panic!("{other:?}"),
        }
    }
    panic!("the session asked for no listing")
}
