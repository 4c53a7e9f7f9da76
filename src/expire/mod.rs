//! Snapshot expiry: which snapshots stay readable, and the commit that
//! removes the others.
//!
//! The rules are Java's `RemoveSnapshots`:
//! - `main` never expires; another ref is removed when its snapshot is older
//!   than its `max-ref-age-ms` (default: table property
//!   `history.expire.max-ref-age-ms`, else never) or its snapshot is missing;
//! - each retained branch keeps ancestors of its head while fewer than
//!   `min-snapshots-to-keep` are kept or they are younger than
//!   `max-snapshot-age-ms` (defaults: `history.expire.min-snapshots-to-keep`,
//!   else 1; `history.expire.max-snapshot-age-ms`, else 5 days);
//! - retained tags keep their snapshot;
//! - snapshots no retained ref reaches are kept while younger than the
//!   default age;
//! - explicitly named snapshots expire unless a retained ref points at them
//!   (an error, as in Java);
//! - `gc.enabled=false` forbids expiry.
//!
//! On top, the policy and the context: protected refs never expire, nothing
//! younger than `minSnapshotAge` expires, unexpired leases (capped at
//! `maxReaderLease`), legal holds (table, ref, snapshot) and DR checkpoints
//! keep their snapshots; these also win over explicitly named ids.
//!
//! The output is the commit, planned here and carried out by the host: an
//! Iceberg REST `CommitTableRequest` body and, for file-based catalogs, the
//! new metadata document.
//!
//! Files: `java` (Java's rules), `protections` (the policy's and the
//! context's), `commit` (the REST commit and the next metadata document).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

mod commit;
mod landing;

pub use landing::{expiry_landed, Landing};
mod java;
mod protections;

use crate::context::Context;
use crate::duration::human_ms;
use crate::error::MalformedReason;
use crate::error::{Error, Result, UnsafeReason};
use crate::policy::{Policy, SnapshotRetention};
use crate::spec::iceberg::{maybe_gunzip, TableMetadata};

/// The schema name of [`ExpiryPlan`] documents.
pub const EXPIRY_SCHEMA: &str = "lakesweep.expiry.v1";

/// Java's default `history.expire.max-snapshot-age-ms`: 5 days.
pub const DEFAULT_MAX_SNAPSHOT_AGE_MS: i64 = 5 * 86_400_000;

/// What to expire against.
#[derive(Debug, Clone)]
pub struct ExpiryRequest {
    /// The metadata file the plan is computed from (becomes the commit's base).
    pub metadata_location: String,
    /// Evaluation time, milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// The retention policy, if any (its binding must match the table).
    pub policy: Option<Policy>,
    /// Leases, holds, writers, DR checkpoints.
    pub context: Context,
    /// Snapshots the operator asks to expire explicitly.
    pub expire_ids: Vec<i64>,
    /// Bytes of every DR checkpoint metadata file the context names, as
    /// (URI, bytes); a named file without bytes refuses the plan.
    pub dr_metadata: Vec<(String, Vec<u8>)>,
}

/// A snapshot that stays, with every reason it stays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Retained {
    /// The snapshot.
    pub snapshot_id: i64,
    /// Every reason, in a stable order.
    pub reasons: Vec<String>,
}

/// A snapshot that expires, and why nothing kept it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Expired {
    /// The snapshot.
    pub snapshot_id: i64,
    /// Why no rule retained it.
    pub why: String,
}

/// The planned expiry.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpiryPlan {
    /// Always [`EXPIRY_SCHEMA`].
    pub schema: String,
    /// The table's uuid.
    pub table_uuid: Option<String>,
    /// The metadata the plan was computed from.
    pub metadata_location: String,
    /// Evaluation time.
    pub now_ms: i64,
    /// Digest of the policy used, if any.
    pub policy_digest: Option<String>,
    /// Newest hold generation seen in the context.
    pub hold_generation: u64,
    /// Newest reader generation seen among leases.
    pub lease_watermark: u64,
    /// Snapshot ids to expire, ascending.
    pub expire: Vec<i64>,
    /// Snapshots that stay, with reasons.
    pub retain: Vec<Retained>,
    /// Snapshots that expire, with why.
    pub expired: Vec<Expired>,
    /// Refs to remove.
    pub remove_refs: Vec<String>,
    /// Things the operator should know.
    pub warnings: Vec<String>,
    /// The Iceberg REST `CommitTableRequest` body (`null` when nothing changes).
    pub commit: Value,
    /// The new metadata document for file-based catalogs (`null` when nothing changes).
    pub new_metadata: Value,
}

impl ExpiryPlan {
    /// The stored document (canonical JSON).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Plans the expiry of the table whose metadata is `metadata_bytes`.
pub fn plan_expiry(req: &ExpiryRequest, metadata_bytes: &[u8]) -> Result<ExpiryPlan> {
    let uri = req.metadata_location.as_str();
    let md = TableMetadata::parse(uri, metadata_bytes)?;
    let now = req.now_ms;
    let policy = req.policy.as_ref();
    let Decided {
        expire,
        retain,
        expired,
        remove_refs,
        warnings,
    } = decide(req, &md)?;
    let (commit, new_metadata) = if expire.is_empty() && remove_refs.is_empty() {
        (Value::Null, Value::Null)
    } else {
        let raw = maybe_gunzip(uri, metadata_bytes)?;
        let raw: Value = serde_json::from_slice(&raw).map_err(|e| {
            Error::malformed(MalformedReason::Encoding, uri, format!("not JSON: {e}"))
        })?;
        (
            commit::request(&md, &remove_refs, &expire),
            commit::new_metadata(raw, uri, now, &remove_refs, &expire)?,
        )
    };
    Ok(ExpiryPlan {
        schema: EXPIRY_SCHEMA.into(),
        table_uuid: md.table_uuid.clone(),
        metadata_location: req.metadata_location.clone(),
        now_ms: now,
        policy_digest: policy.map(Policy::digest),
        hold_generation: req.context.hold_generation(),
        lease_watermark: req.context.lease_watermark(),
        expire,
        retain,
        expired,
        remove_refs,
        warnings,
        commit,
        new_metadata,
    })
}

/// Which snapshots an expiry keeps (with every reason) and removes (with
/// why), without the commit: what [`plan_expiry`] decides, for callers
/// that hold the parsed metadata and ask many times (a what-if).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decided {
    /// Snapshot ids to expire, ascending.
    pub expire: Vec<i64>,
    /// Snapshots that stay, by id.
    pub retain: Vec<Retained>,
    /// Snapshots that expire, by id.
    pub expired: Vec<Expired>,
    /// Refs to remove.
    pub remove_refs: Vec<String>,
    /// Things the operator should know, sorted.
    pub warnings: Vec<String>,
}

/// The expiry rules over parsed metadata (see [`plan_expiry`]).
pub(crate) fn decide(req: &ExpiryRequest, md: &TableMetadata) -> Result<Decided> {
    let now = req.now_ms;
    let mut warnings: BTreeSet<String> = BTreeSet::new();

    if !md.gc_enabled() {
        return Err(Error::unsafe_(
            UnsafeReason::GcDisabled,
            "table property gc.enabled=false forbids snapshot expiry",
        ));
    }
    let policy = req.policy.as_ref();
    if let Some(p) = policy {
        p.ensure_valid()?;
        p.ensure_binds(md)?;
        p.ensure_holds_current(&req.context)?;
    }
    let sr = policy
        .map(|p| p.snapshot_retention.clone())
        .unwrap_or_default();
    let defaults = Defaults::of(&sr, md)?;
    let history = History::of(md);
    let holds = protections::Holds::of(&req.context, policy, md, &mut warnings)?;
    let max_writer = policy
        .and_then(|p| p.file_retention.max_writer_duration)
        .map(|d| d.0);
    warnings.extend(req.context.stale_writers(now, max_writer));

    // Java's `RemoveSnapshots`, then ours on top (which win over explicit
    // ids too).
    let mut java = java::Retention::of(md, &sr, &defaults, &history, &holds, now, &mut warnings)?;
    let explicit: BTreeSet<i64> = req.expire_ids.iter().copied().collect();
    java.expire_explicitly(&explicit, &history, &mut warnings)?;
    let ours = protections::reasons(req, md, policy, &history, &holds, now, &mut warnings)?;
    let mut reasons = java.reasons;
    for (id, rs) in ours {
        if explicit.contains(&id) {
            warnings.insert(format!(
                "snapshot {id} was asked to expire but is kept: {}",
                rs.join("; ")
            ));
        }
        reasons.entry(id).or_default().extend(rs);
    }

    let mut expire = Vec::new();
    let mut expired = Vec::new();
    let mut retain = Vec::new();
    for s in &md.snapshots {
        match reasons.get(&s.snapshot_id) {
            Some(rs) if !rs.is_empty() => retain.push(Retained {
                snapshot_id: s.snapshot_id,
                reasons: rs.clone(),
            }),
            _ => {
                let why = if explicit.contains(&s.snapshot_id) {
                    "asked to expire explicitly; no ref, lease, hold or checkpoint keeps it"
                        .to_owned()
                } else if java.reached.contains(&s.snapshot_id) {
                    format!(
                        "beyond its branch's min-snapshots-to-keep and older than its max-snapshot-age (committed {} ago)",
                        human_ms(now.saturating_sub(s.timestamp_ms))
                    )
                } else {
                    format!(
                        "no retained ref reaches it and it is older than {} (committed {} ago)",
                        human_ms(defaults.max_age),
                        human_ms(now.saturating_sub(s.timestamp_ms))
                    )
                };
                expire.push(s.snapshot_id);
                expired.push(Expired {
                    snapshot_id: s.snapshot_id,
                    why,
                });
            }
        }
    }
    expire.sort_unstable();
    retain.sort_by_key(|r| r.snapshot_id);
    expired.sort_by_key(|e| e.snapshot_id);

    Ok(Decided {
        expire,
        retain,
        expired,
        remove_refs: java.remove_refs,
        warnings: warnings.into_iter().collect(),
    })
}

/// The retention settings that apply when a ref says nothing: the table's
/// `history.expire.*` properties, else Java's. A policy value replaces
/// Java's built-in default but can only lengthen what the table itself sets
/// (the more retentive value wins).
struct Defaults {
    /// Snapshots each branch keeps at least.
    min_keep: i64,
    /// The setting `min_keep` comes from, as its source spells it.
    min_keep_by: &'static str,
    /// Age under which a snapshot is kept, ms.
    max_age: i64,
    /// The setting `max_age` comes from, as its source spells it.
    max_age_by: &'static str,
    /// Age over which a ref (not `main`) is removed, ms.
    max_ref_age: i64,
}

impl Defaults {
    fn of(sr: &SnapshotRetention, md: &TableMetadata) -> Result<Defaults> {
        let (min_keep, min_keep_by) = deciding(
            (sr.retain_last.map(i64::from), "retainLast"),
            (
                prop_i64(md, "history.expire.min-snapshots-to-keep")?,
                "history.expire.min-snapshots-to-keep",
            ),
            (1, "min-snapshots-to-keep"),
        );
        let (max_age, max_age_by) = deciding(
            (sr.max_snapshot_age.map(|d| d.0), "maxSnapshotAge"),
            (
                prop_i64(md, "history.expire.max-snapshot-age-ms")?,
                "history.expire.max-snapshot-age-ms",
            ),
            (DEFAULT_MAX_SNAPSHOT_AGE_MS, "max-snapshot-age"),
        );
        Ok(Defaults {
            min_keep,
            min_keep_by,
            max_age,
            max_age_by,
            max_ref_age: more_retentive(
                sr.max_ref_age.map(|d| d.0),
                prop_i64(md, "history.expire.max-ref-age-ms")?,
                i64::MAX,
            ),
        })
    }
}

/// [`more_retentive`], with the name of the setting that decided (the
/// policy's field, the table's property, or Java's default), so a reason
/// names what the operator can change.
fn deciding(
    policy: (Option<i64>, &'static str),
    table: (Option<i64>, &'static str),
    java: (i64, &'static str),
) -> (i64, &'static str) {
    match (policy.0, table.0) {
        (Some(p), Some(t)) if t > p => (t, table.1),
        (Some(p), _) => (p, policy.1),
        (None, Some(t)) => (t, table.1),
        (None, None) => java,
    }
}

/// The policy's value and the table's, the longer winning; Java's default
/// when neither says.
fn more_retentive(policy: Option<i64>, table: Option<i64>, java: i64) -> i64 {
    match (policy, table) {
        (Some(p), Some(t)) => p.max(t),
        (Some(p), None) => p,
        (None, Some(t)) => t,
        (None, None) => java,
    }
}

/// The table's snapshots: when each was committed and its parent.
struct History {
    /// Commit time of each snapshot, ms.
    ts: BTreeMap<i64, i64>,
    /// Parent of each snapshot.
    parent: BTreeMap<i64, Option<i64>>,
}

impl History {
    fn of(md: &TableMetadata) -> History {
        History {
            ts: md
                .snapshots
                .iter()
                .map(|s| (s.snapshot_id, s.timestamp_ms))
                .collect(),
            parent: md
                .snapshots
                .iter()
                .map(|s| (s.snapshot_id, s.parent_snapshot_id))
                .collect(),
        }
    }

    /// Whether the table holds snapshot `id`.
    fn has(&self, id: i64) -> bool {
        self.ts.contains_key(&id)
    }

    /// `head` and its ancestors, newest first, as far as the table holds
    /// them (a cycle stops the walk).
    fn ancestors(&self, head: i64) -> Vec<i64> {
        let mut out = Vec::new();
        let mut cur = Some(head);
        while let Some(id) = cur {
            if !self.has(id) || out.contains(&id) {
                break;
            }
            out.push(id);
            cur = self.parent.get(&id).copied().flatten();
        }
        out
    }

    /// Records `why` for snapshot `id`, if the table holds it.
    fn keep(&self, id: i64, why: String, reasons: &mut BTreeMap<i64, Vec<String>>) {
        if self.has(id) {
            reasons.entry(id).or_default().push(why);
        }
    }
}

fn prop_i64(md: &TableMetadata, key: &str) -> Result<Option<i64>> {
    match md.properties.get(key) {
        None => Ok(None),
        Some(v) => v.trim().parse::<i64>().map(Some).map_err(|_| {
            Error::malformed(
                MalformedReason::Field,
                "table properties",
                format!("property {key}=`{v}` is not a number"),
            )
        }),
    }
}
