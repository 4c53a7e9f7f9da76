//! The wasm-bindgen exports for the browser simulator
//! (`host-examples/browser`), beside the WIT component the other hosts
//! load: a thin mapping onto the crate's public API, documents as JSON
//! text. No decision is made here. wasm-bindgen writes the TypeScript
//! declarations of these classes and functions from their Rust types;
//! the JSON shapes they carry are declared below.
//!
//! Snapshot ids are 64-bit: JSON made here for the page writes them as
//! strings (a JavaScript number cannot hold them); stored documents (plans,
//! expiry plans) are returned byte for byte as the core writes them.

use wasm_bindgen::prelude::*;

use crate as core;
use crate::reclaim::{CurveField, ReclaimBuilder, ReclaimIndex, SizedKey};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** A request of a planning session (`WebSession.pollRequest`). */
export type SessionRequest =
  | { kind: "read-blob"; uri: string }
  | { kind: "list"; prefix: string }
  | { kind: "resolve-pointer" };
/** One snapshot of the table (`Simulator.tableJson`). */
export interface TableSnapshot { snapshotId: string; parentId: string | null; timestampMs: number }
/** The table as the simulator read it. */
export interface TableInfo {
  tableUuid: string | null; location: string; currentSnapshotId: string | null;
  snapshots: TableSnapshot[]; refs: { name: string; snapshotId: string; kind: "branch" | "tag" }[];
}
/** A retention what-if (`Simulator.whatIf`). */
export interface WhatIf {
  retain: { snapshotId: string; reasons: string[] }[];
  expired: { snapshotId: string; why: string }[];
  removeRefs: string[]; warnings: string[];
  freedObjects: number; freedBytes: number; freedNowObjects: number; freedNowBytes: number;
  referencedObjects: number; referencedBytes: number;
}
/** One point of a retention curve (`Simulator.curve`). */
export interface CurvePoint { value: number; retained: number; freedBytes: number }
"#;

/// The planner's error, as the page shows it: who must act, then what.
fn js(e: core::Error) -> JsError {
    JsError::new(&format!("{} must act: {e}", e.who_must_act()))
}

/// The session's configuration, as the page writes it (camelCase JSON).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WebConfig {
    table_location: String,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    metadata_location: String,
    now_ms: i64,
    #[serde(default)]
    file_retention_ms: Option<i64>,
    #[serde(default = "yes")]
    keep_deleted_entries: bool,
    #[serde(default)]
    allow_short_retention: bool,
    #[serde(default)]
    location_map: Vec<(String, String)>,
    #[serde(default)]
    policy: Option<String>,
    #[serde(default)]
    context: Option<String>,
    #[serde(default)]
    keep_versions: Vec<i64>,
    #[serde(default)]
    log_cleanup: bool,
    #[serde(default)]
    pointer_authoritative: bool,
    #[serde(default)]
    memory_budget_bytes: Option<u64>,
    #[serde(default)]
    origin: Option<String>,
}

fn yes() -> bool {
    true
}

/// A planning session ([`core::Session`]) driven from JavaScript.
#[wasm_bindgen]
pub struct WebSession(core::Session);

#[wasm_bindgen]
impl WebSession {
    /// Starts a session from its configuration (JSON: `tableLocation`,
    /// `format` ("iceberg" | "delta"), `metadataLocation`, `nowMs`,
    /// `fileRetentionMs`, optional `policy`, `context` documents, ...).
    #[wasm_bindgen(constructor)]
    pub fn new(config_json: &str) -> Result<WebSession, JsError> {
        let c: WebConfig = serde_json::from_str(config_json)
            .map_err(|e| JsError::new(&format!("host must act: session config: {e}")))?;
        let format = format_of(c.format.as_deref())?;
        let config = core::SessionConfig {
            table_location: c.table_location,
            format,
            metadata_location: c.metadata_location,
            now_ms: c.now_ms,
            file_retention_ms: c.file_retention_ms,
            keep_deleted_entries: c.keep_deleted_entries,
            allow_short_retention: c.allow_short_retention,
            location_map: c
                .location_map
                .into_iter()
                .map(|(from, to)| core::PathMapping { from, to })
                .collect(),
            policy: c.policy,
            context: c.context,
            keep_versions: c.keep_versions,
            log_cleanup: c.log_cleanup,
            pointer_authoritative: c.pointer_authoritative,
            memory_budget_bytes: c.memory_budget_bytes.unwrap_or(core::DEFAULT_MEMORY_BUDGET),
            origin: c.origin,
            foreign_roots: Vec::new(),
            prior_pointers: Vec::new(),
            deleted_index: None,
        };

        core::Session::start(config).map(WebSession).map_err(js)
    }

    /// The next request (a `SessionRequest` as JSON), if any.
    #[wasm_bindgen(js_name = pollRequest)]
    pub fn poll_request(&mut self) -> Option<String> {
        self.0.poll_request().map(|r| {
            match r {
                core::Request::ReadBlob { uri } => {
                    serde_json::json!({"kind": "read-blob", "uri": uri})
                }
                core::Request::List { prefix } => {
                    serde_json::json!({"kind": "list", "prefix": prefix})
                }
                core::Request::ResolvePointer => serde_json::json!({"kind": "resolve-pointer"}),
            }
            .to_string()
        })
    }

    /// Answers a read with the object's bytes.
    #[wasm_bindgen(js_name = handleBlob)]
    pub fn handle_blob(&mut self, uri: String, bytes: Vec<u8>) -> Result<(), JsError> {
        self.0.handle_blob(uri, bytes).map_err(js)
    }

    /// Answers a read: no such object.
    #[wasm_bindgen(js_name = handleMissing)]
    pub fn handle_missing(&mut self, uri: String) -> Result<(), JsError> {
        self.0.handle_missing(uri).map_err(js)
    }

    /// Answers a listing with one page: a JSON array of `{key, size,
    /// lastModifiedMs, etag?, versionId?}`; `isLast` on the last page.
    #[wasm_bindgen(js_name = handlePageJson)]
    pub fn handle_page_json(&mut self, page: &str, is_last: bool) -> Result<(), JsError> {
        self.0
            .handle_page_json(page.as_bytes().to_vec(), is_last)
            .map_err(js)
    }

    /// Answers the pointer request with the metadata location now.
    #[wasm_bindgen(js_name = handlePointer)]
    pub fn handle_pointer(&mut self, metadata_location: Option<String>) -> Result<(), JsError> {
        self.0.handle_pointer(metadata_location).map_err(js)
    }

    /// The decisions so far, as a JSON array (a later one for a key
    /// replaces an earlier one).
    #[wasm_bindgen(js_name = drainDecisionsJson)]
    pub fn drain_decisions_json(&mut self) -> String {
        String::from_utf8(self.0.drain_decisions_json()).unwrap_or_default()
    }

    /// True once `finish` can be called.
    #[wasm_bindgen(js_name = isDone)]
    pub fn is_done(&self) -> bool {
        self.0.is_done()
    }

    /// The sealed plan document, or the error that ended the session.
    pub fn finish(&self) -> Result<String, JsError> {
        self.0.finish().map(|p| p.to_json()).map_err(js)
    }
}

/// The expiry plan document (`lakesweep.expiry.v1`) for a metadata
/// document, a policy and a context (either may be empty) at `now_ms`.
#[wasm_bindgen(js_name = planExpiry)]
pub fn plan_expiry(
    metadata_location: String,
    metadata: &[u8],
    policy: Option<String>,
    context: Option<String>,
    now_ms: f64,
) -> Result<String, JsError> {
    let req = core::ExpiryRequest {
        metadata_location,
        now_ms: now_ms as i64,
        policy: policy
            .as_deref()
            .map(core::Policy::parse)
            .transpose()
            .map_err(js)?,
        context: match context.as_deref() {
            Some(c) => core::Context::parse(c).map_err(js)?,
            None => core::Context::default(),
        },
        expire_ids: Vec::new(),
        dr_metadata: Vec::new(),
    };
    core::plan_expiry(&req, metadata)
        .map(|p| p.to_json())
        .map_err(js)
}

/// The current metadata document of a table folder chosen by hand, by the
/// file-system catalog's rules ([`core::current_metadata`]):
/// `hint` the bytes of `metadata/version-hint.text` (none when the folder
/// has none), `paths_json` every file's path relative to the folder (a JSON
/// array of strings), `folder` its name (for messages). Returns
/// `{"metadata": PATH, "why": TEXT}`; fails when the rules cannot choose
/// (the page then asks which document is current).
#[wasm_bindgen(js_name = currentMetadata)]
pub fn current_metadata(
    hint: Option<Vec<u8>>,
    paths_json: &str,
    folder: &str,
) -> Result<String, JsError> {
    const ROOT: &str = "file:///chosen-folder";
    let paths: Vec<String> = serde_json::from_str(paths_json)
        .map_err(|e| JsError::new(&format!("host must act: the folder's paths: {e}")))?;
    let listing: Vec<String> = paths
        .iter()
        .filter(|p| p.starts_with("metadata/"))
        .map(|p| format!("{ROOT}/{p}"))
        .collect();
    let (uri, why) = core::current_metadata(ROOT, hint.as_deref(), &listing).map_err(|e| {
        let named = format!("the folder \"{folder}\"");
        JsError::new(&format!(
            "{} must act: {}",
            e.who_must_act(),
            e.to_string().replace(ROOT, &named)
        ))
    })?;
    let rel = uri.strip_prefix(&format!("{ROOT}/")).unwrap_or(&uri);
    Ok(serde_json::json!({ "metadata": rel, "why": why }).to_string())
}

/// A duration in milliseconds, read as documents and the command line
/// write them (`12h`, `1h 30m`); fails naming what is wrong.
#[wasm_bindgen(js_name = parseDuration)]
pub fn parse_duration(text: &str) -> Result<f64, JsError> {
    core::parse_duration(text)
        .map(|ms| ms as f64)
        .map_err(|e| JsError::new(&format!("operator must act: {e}")))
}

/// The format a page names (`iceberg` when none).
fn format_of(name: Option<&str>) -> Result<core::TableFormat, JsError> {
    match name {
        None | Some("iceberg") => Ok(core::TableFormat::Iceberg),
        Some("delta") => Ok(core::TableFormat::Delta),
        Some(other) => Err(JsError::new(&format!("host must act: format `{other}`"))),
    }
}

/// The file-retention window (ms) a session of this format (`iceberg` or
/// `delta`) uses when neither the page nor a policy gives one: the page
/// shows it instead of holding a duration of its own.
#[wasm_bindgen(js_name = defaultFileRetentionMs)]
pub fn default_file_retention_ms(format: &str) -> Result<f64, JsError> {
    // Whole days: exact in an f64.
    Ok(format_of(Some(format))?.default_file_retention_ms() as f64)
}

/// A policy check (`errors`, `warnings` by field, `digest`) as JSON.
#[wasm_bindgen(js_name = checkPolicy)]
pub fn check_policy(policy: &str) -> Result<String, JsError> {
    let r = core::Policy::parse(policy).map_err(js)?.check();
    serde_json::to_string(&r).map_err(|e| JsError::new(&e.to_string()))
}

/// The retention what-if engine over one Iceberg table
/// ([`crate::reclaim`]): built once from its manifest lists and manifests,
/// then asked on every policy change.
#[wasm_bindgen]
pub struct Simulator {
    builder: Option<ReclaimBuilder>,
    index: Option<ReclaimIndex>,
    location: String,
}

fn policy_of(json: Option<String>) -> Result<Option<core::Policy>, JsError> {
    json.as_deref()
        .map(core::Policy::parse)
        .transpose()
        .map_err(js)
}

fn context_of(json: Option<String>) -> Result<core::Context, JsError> {
    match json.as_deref() {
        Some(c) => core::Context::parse(c).map_err(js),
        None => Ok(core::Context::default()),
    }
}

#[wasm_bindgen]
impl Simulator {
    /// Starts reading the table whose current metadata is `metadata`.
    #[wasm_bindgen(constructor)]
    pub fn new(metadata_location: &str, metadata: &[u8]) -> Result<Simulator, JsError> {
        let b = ReclaimBuilder::start(metadata_location, metadata).map_err(js)?;
        Ok(Simulator {
            location: b.location(),
            builder: Some(b),
            index: None,
        })
    }

    /// The table location, canonical: the prefix of every URI the
    /// simulator reads (a host keys its files by it, and hands the same
    /// location to a session).
    pub fn location(&self) -> String {
        self.location.clone()
    }

    /// A synthetic table of `snapshots` × `files` (for measuring).
    /// Refused over 100,000 snapshots or 50,000,000 files.
    pub fn synthetic(
        snapshots: u32,
        files: u32,
        rewrite_every: u32,
        seed: u32,
        now_ms: f64,
    ) -> Result<Simulator, JsError> {
        if snapshots == 0 || snapshots > 100_000 || files > 50_000_000 {
            return Err(JsError::new(
                "operator must act: a generated table has 1 to 100,000 snapshots and at most 50,000,000 files",
            ));
        }
        Ok(Simulator {
            location: "file:///synthetic".into(),
            builder: None,
            index: Some(ReclaimIndex::synthetic(
                snapshots,
                files,
                rewrite_every,
                u64::from(seed),
                now_ms as i64,
            )),
        })
    }

    /// The next manifest list or manifest to read, if any.
    #[wasm_bindgen(js_name = nextRead)]
    pub fn next_read(&mut self) -> Option<String> {
        self.builder.as_mut().and_then(ReclaimBuilder::next_read)
    }

    /// Answers a read.
    #[wasm_bindgen(js_name = handleBlob)]
    pub fn handle_blob(&mut self, uri: &str, bytes: &[u8]) -> Result<(), JsError> {
        match self.builder.as_mut() {
            Some(b) => b.handle_blob(uri, bytes).map_err(js),
            None => Err(JsError::new(
                "host must act: the simulator is already built",
            )),
        }
    }

    /// Answers a read: no such object (the simulator cannot be built).
    #[wasm_bindgen(js_name = handleMissing)]
    pub fn handle_missing(&mut self, uri: &str) -> Result<(), JsError> {
        match self.builder.as_mut() {
            Some(b) => b.handle_missing(uri).map_err(js),
            None => Err(JsError::new(
                "host must act: the simulator is already built",
            )),
        }
    }

    /// Builds the index once every read is answered; `listing` is a JSON
    /// array of `{key, size, lastModifiedMs}`, keys relative to the table
    /// location.
    pub fn build(&mut self, listing: &str) -> Result<(), JsError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Listed {
            key: String,
            size: u64,
            last_modified_ms: i64,
        }
        if !self.builder.as_ref().is_some_and(ReclaimBuilder::is_done) {
            return Err(JsError::new(
                "host must act: build before every read was answered, or built already",
            ));
        }
        let listed: Vec<Listed> = serde_json::from_str(listing)
            .map_err(|e| JsError::new(&format!("host must act: listing: {e}")))?;
        let b = self
            .builder
            .take()
            .ok_or_else(|| JsError::new("host must act: the simulator is already built"))?;
        let keys: Vec<SizedKey> = listed
            .into_iter()
            .map(|l| SizedKey {
                key: l.key,
                size: l.size,
                last_modified_ms: l.last_modified_ms,
            })
            .collect();
        self.index = Some(b.finish(&keys).map_err(js)?);
        Ok(())
    }

    fn index(&self) -> Result<&ReclaimIndex, JsError> {
        self.index
            .as_ref()
            .ok_or_else(|| JsError::new("host must act: the simulator is not built yet"))
    }

    /// The table's snapshots and refs (`TableInfo` JSON).
    #[wasm_bindgen(js_name = tableJson)]
    pub fn table_json(&self) -> Result<String, JsError> {
        Ok(self.index()?.table_json())
    }

    /// Snapshots and objects indexed, as `[snapshots, objects]`.
    pub fn size(&self) -> Result<Vec<u32>, JsError> {
        let i = self.index()?;
        Ok(vec![i.snapshot_count() as u32, i.object_count() as u32])
    }

    /// The what-if (`WhatIf` JSON) for a policy and context (JSON
    /// documents; either may be absent) at `now_ms`.
    #[wasm_bindgen(js_name = whatIf)]
    pub fn what_if(
        &self,
        policy: Option<String>,
        context: Option<String>,
        now_ms: f64,
    ) -> Result<String, JsError> {
        let w = self
            .index()?
            .what_if(policy_of(policy)?, context_of(context)?, now_ms as i64)
            .map_err(js)?;
        Ok(crate::reclaim::what_if_json(&w))
    }

    /// The freed bytes at each value of `field` (`retainLast` or
    /// `maxSnapshotAge` in ms), the rest of `policy` unchanged
    /// (`CurvePoint[]` JSON).
    pub fn curve(
        &self,
        policy: &str,
        context: Option<String>,
        now_ms: f64,
        field: &str,
        values: Vec<f64>,
    ) -> Result<String, JsError> {
        let field = match field {
            "retainLast" => CurveField::RetainLast,
            "maxSnapshotAge" => CurveField::MaxSnapshotAge,
            other => {
                return Err(JsError::new(&format!(
                    "host must act: no curve over `{other}`"
                )))
            }
        };
        let p = core::Policy::parse(policy).map_err(js)?;
        let values: Vec<i64> = values.into_iter().map(|v| v as i64).collect();
        let points = self
            .index()?
            .curve(&p, &context_of(context)?, now_ms as i64, field, &values)
            .map_err(js)?;
        serde_json::to_string(&points).map_err(|e| JsError::new(&e.to_string()))
    }
}
