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

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Value};

use crate::context::{Context, DrCheckpoint, HoldScope};
use crate::duration::human_ms;
use crate::error::{Error, Result, UnsafeReason};
use crate::policy::Policy;
use crate::spec::iceberg::{maybe_gunzip, RefKind, TableMetadata};

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

fn prop_i64(md: &TableMetadata, key: &str) -> Result<Option<i64>> {
    match md.properties.get(key) {
        None => Ok(None),
        Some(v) => v.trim().parse::<i64>().map(Some).map_err(|_| {
            Error::malformed(
                "table properties",
                format!("property {key}=`{v}` is not a number"),
            )
        }),
    }
}

/// Plans the expiry of the table whose metadata is `metadata_bytes`.
pub fn plan_expiry(req: &ExpiryRequest, metadata_bytes: &[u8]) -> Result<ExpiryPlan> {
    let uri = req.metadata_location.as_str();
    let md = TableMetadata::parse(uri, metadata_bytes)?;
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
        p.ensure_binds(&md)?;
        p.ensure_holds_current(&req.context)?;
    }
    let sr = policy
        .map(|p| p.snapshot_retention.clone())
        .unwrap_or_default();

    // Defaults: the table's `history.expire.*` properties, else Java's. A
    // policy value replaces Java's built-in default but can only lengthen
    // what the table itself sets (the more retentive value wins).
    let both = |policy: Option<i64>, table: Option<i64>, java: i64| match (policy, table) {
        (Some(p), Some(t)) => p.max(t),
        (Some(p), None) => p,
        (None, Some(t)) => t,
        (None, None) => java,
    };
    let min_keep_default = both(
        sr.retain_last.map(i64::from),
        prop_i64(&md, "history.expire.min-snapshots-to-keep")?,
        1,
    );
    let max_age_default = both(
        sr.max_snapshot_age.map(|d| d.0),
        prop_i64(&md, "history.expire.max-snapshot-age-ms")?,
        DEFAULT_MAX_SNAPSHOT_AGE_MS,
    );
    let max_ref_age_default = both(
        sr.max_ref_age.map(|d| d.0),
        prop_i64(&md, "history.expire.max-ref-age-ms")?,
        i64::MAX,
    );
    let expire_older_than = now.saturating_sub(max_age_default);

    // Protected refs: exact names only; a case-only match is an error.
    for name in &sr.protected_refs {
        if md.refs.contains_key(name) {
            continue;
        }
        if let Some(other) = md.refs.keys().find(|k| k.eq_ignore_ascii_case(name)) {
            return Err(Error::invalid(
                "policy.snapshotRetention.protectedRefs",
                format!(
                    "`{name}` matches ref `{other}` only when letter case is ignored: name it exactly"
                ),
            ));
        }
        warnings.insert(format!("protected ref `{name}` does not exist"));
    }
    let held_refs: BTreeSet<&str> = req
        .context
        .holds
        .iter()
        .filter_map(|h| match &h.scope {
            HoldScope::Ref(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    for r in &held_refs {
        if !md.refs.contains_key(*r) {
            warnings.insert(format!("legal hold on ref `{r}`, which does not exist"));
        }
    }
    let max_writer = policy
        .and_then(|p| p.file_retention.max_writer_duration)
        .map(|d| d.0);
    warnings.extend(req.context.stale_writers(now, max_writer));
    let table_hold = req
        .context
        .holds
        .iter()
        .find(|h| h.scope == HoldScope::Table);

    let ts: BTreeMap<i64, i64> = md
        .snapshots
        .iter()
        .map(|s| (s.snapshot_id, s.timestamp_ms))
        .collect();
    let parent: BTreeMap<i64, Option<i64>> = md
        .snapshots
        .iter()
        .map(|s| (s.snapshot_id, s.parent_snapshot_id))
        .collect();
    let ancestors = |head: i64| {
        let mut out = Vec::new();
        let mut cur = Some(head);
        while let Some(id) = cur {
            if !ts.contains_key(&id) || out.contains(&id) {
                break;
            }
            out.push(id);
            cur = parent.get(&id).copied().flatten();
        }
        out
    };

    let mut reasons: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let keep = |id: i64, why: String, reasons: &mut BTreeMap<i64, Vec<String>>| {
        if ts.contains_key(&id) {
            reasons.entry(id).or_default().push(why);
        }
    };

    // Refs: which stay.
    let mut retained_refs = Vec::new();
    let mut remove_refs = Vec::new();
    for (name, r) in &md.refs {
        let ovr = sr.refs.get(name);
        let max_ref_age = both(
            ovr.and_then(|o| o.max_ref_age).map(|d| d.0),
            r.max_ref_age_ms,
            max_ref_age_default,
        );
        let protected = sr.protected_refs.contains(name);
        let held = held_refs.contains(name.as_str());
        let stays = if name == "main" || protected || held || table_hold.is_some() {
            true
        } else {
            match ts.get(&r.snapshot_id) {
                None => {
                    warnings.insert(format!(
                        "ref `{name}` points at missing snapshot {}: removed",
                        r.snapshot_id
                    ));
                    false
                }
                Some(&t) => now.saturating_sub(t) <= max_ref_age,
            }
        };
        if stays {
            retained_refs.push((name.clone(), r.clone()));
        } else {
            remove_refs.push(name.clone());
        }
    }
    for (name, r) in &retained_refs {
        let kind = if r.kind == RefKind::Branch {
            "branch"
        } else {
            "tag"
        };
        let mut why = format!("head of {kind} `{name}`");
        if sr.protected_refs.contains(name) {
            why.push_str(" (protected ref)");
        }
        keep(r.snapshot_id, why, &mut reasons);
        if r.kind == RefKind::Branch {
            let ovr = sr.refs.get(name);
            let min_keep = both(
                ovr.and_then(|o| o.min_snapshots_to_keep).map(i64::from),
                r.min_snapshots_to_keep,
                min_keep_default,
            );
            let max_age = both(
                ovr.and_then(|o| o.max_snapshot_age).map(|d| d.0),
                r.max_snapshot_age_ms,
                max_age_default,
            );
            let older_than = now.saturating_sub(max_age);
            let held = held_refs.contains(name.as_str());
            for (i, id) in ancestors(r.snapshot_id).into_iter().enumerate() {
                let t = ts[&id];
                if held {
                    keep(id, format!("legal hold on ref `{name}`"), &mut reasons);
                } else if (i as i64) < min_keep {
                    if i > 0 {
                        keep(
                            id,
                            format!(
                                "ancestor {} of branch `{name}`, within min-snapshots-to-keep {min_keep}",
                                i + 1
                            ),
                            &mut reasons,
                        );
                    }
                } else if t >= older_than {
                    keep(
                        id,
                        format!(
                            "ancestor of branch `{name}` younger than max-snapshot-age {}",
                            human_ms(max_age)
                        ),
                        &mut reasons,
                    );
                } else {
                    break;
                }
            }
        }
    }
    // Snapshots no retained ref reaches.
    let mut reached: BTreeSet<i64> = BTreeSet::new();
    for (_, r) in &retained_refs {
        if r.kind == RefKind::Branch {
            reached.extend(ancestors(r.snapshot_id));
        } else {
            reached.insert(r.snapshot_id);
        }
    }
    for s in &md.snapshots {
        if !reached.contains(&s.snapshot_id) && s.timestamp_ms >= expire_older_than {
            keep(
                s.snapshot_id,
                format!(
                    "unreferenced, younger than max-snapshot-age {}",
                    human_ms(max_age_default)
                ),
                &mut reasons,
            );
        }
    }
    if let Some(c) = md.current_snapshot_id {
        keep(c, "the current snapshot".into(), &mut reasons);
    }

    // Explicitly named snapshots (Java: allowed unless a retained ref points at them).
    let explicit: BTreeSet<i64> = req.expire_ids.iter().copied().collect();
    for id in &explicit {
        if !ts.contains_key(id) {
            warnings.insert(format!("snapshot {id} asked to expire does not exist"));
            continue;
        }
        let refs: Vec<&str> = retained_refs
            .iter()
            .filter(|(_, r)| r.snapshot_id == *id)
            .map(|(n, _)| n.as_str())
            .collect();
        if !refs.is_empty() {
            return Err(Error::invalid(
                "expire_ids",
                format!("cannot expire {id}: still referenced by refs {refs:?}"),
            ));
        }
        reasons.remove(id);
    }

    // Ours, on top of Java's: these win over explicit ids too.
    let mut ours: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    if let Some(h) = table_hold {
        for &id in ts.keys() {
            ours.entry(id).or_default().push(format!(
                "legal hold on the table (generation {}): {}",
                h.generation, h.reason
            ));
        }
    }
    if let Some(min_age) = sr.min_snapshot_age {
        for (&id, &t) in &ts {
            if now.saturating_sub(t) < min_age.0 {
                ours.entry(id).or_default().push(format!(
                    "younger than minSnapshotAge {}",
                    human_ms(min_age.0)
                ));
            }
        }
    }
    let lease_cap = policy.and_then(|p| p.file_retention.max_reader_lease);
    for l in &req.context.leases {
        let mut until = l.expires_at_ms;
        if let Some(cap) = lease_cap {
            let limit = now.saturating_add(cap.0);
            if until > limit {
                warnings.insert(format!(
                    "lease of {} on snapshot {} runs past maxReaderLease {}: capped",
                    l.owner,
                    l.snapshot_id,
                    human_ms(cap.0)
                ));
                until = limit;
            }
        }
        if !ts.contains_key(&l.snapshot_id) {
            warnings.insert(format!(
                "lease of {} on unknown snapshot {}",
                l.owner, l.snapshot_id
            ));
            continue;
        }
        if until > now {
            ours.entry(l.snapshot_id).or_default().push(format!(
                "reader lease of {} ({}) for {}",
                l.owner,
                l.purpose,
                human_ms(until.saturating_sub(now))
            ));
        }
    }
    for h in &req.context.holds {
        if let HoldScope::Snapshot(id) = h.scope {
            if ts.contains_key(&id) {
                ours.entry(id).or_default().push(format!(
                    "legal hold on the snapshot (generation {}): {}",
                    h.generation, h.reason
                ));
            } else {
                warnings.insert(format!("legal hold on unknown snapshot {id}"));
            }
        }
    }
    for d in &req.context.dr_checkpoints {
        match d {
            DrCheckpoint::SnapshotId(id) if ts.contains_key(id) => {
                ours.entry(*id)
                    .or_default()
                    .push("disaster-recovery checkpoint".into());
            }
            DrCheckpoint::SnapshotId(id) => {
                warnings.insert(format!("DR checkpoint names unknown snapshot {id}"));
            }
            DrCheckpoint::MetadataFile(f) => {
                let bytes = req
                    .dr_metadata
                    .iter()
                    .find(|(u, _)| u == f)
                    .map(|(_, b)| b)
                    .ok_or_else(|| {
                        Error::unsafe_(
                            UnsafeReason::MissingMetadata,
                            format!("DR checkpoint metadata file {f} could not be read: nothing expires until it can"),
                        )
                    })?;
                let dr = TableMetadata::parse(f, bytes)?;
                if dr.table_uuid != md.table_uuid {
                    return Err(Error::invalid(
                        "context.drCheckpoints",
                        format!(
                            "{f} is table {}, not this table",
                            dr.table_uuid.as_deref().unwrap_or("(no uuid)")
                        ),
                    ));
                }
                for s in &dr.snapshots {
                    if ts.contains_key(&s.snapshot_id) {
                        ours.entry(s.snapshot_id)
                            .or_default()
                            .push(format!("disaster-recovery checkpoint {f}"));
                    } else {
                        warnings.insert(format!(
                            "DR checkpoint {f} names snapshot {}, which is no longer in the table: that checkpoint cannot be fully restored",
                            s.snapshot_id
                        ));
                    }
                }
            }
        }
    }
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
                } else if reached.contains(&s.snapshot_id) {
                    format!(
                        "beyond its branch's min-snapshots-to-keep and older than its max-snapshot-age (committed {} ago)",
                        human_ms(now.saturating_sub(s.timestamp_ms))
                    )
                } else {
                    format!(
                        "no retained ref reaches it and it is older than {} (committed {} ago)",
                        human_ms(max_age_default),
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

    let (commit, new_metadata) = if expire.is_empty() && remove_refs.is_empty() {
        (Value::Null, Value::Null)
    } else {
        let raw = maybe_gunzip(uri, metadata_bytes)?;
        let raw: Value = serde_json::from_slice(&raw)
            .map_err(|e| Error::malformed(uri, format!("not JSON: {e}")))?;
        (
            commit_request(&md, &remove_refs, &expire),
            new_metadata(raw, uri, now, &remove_refs, &expire)?,
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
        warnings: warnings.into_iter().collect(),
        commit,
        new_metadata,
    })
}

/// The REST `CommitTableRequest` body: assert the table and every ref touched.
fn commit_request(md: &TableMetadata, remove_refs: &[String], expire: &[i64]) -> Value {
    // Every ref the retention was computed from is asserted: if any moved
    // meanwhile (a rollback to an old snapshot, say), the commit fails.
    let mut requirements = vec![json!({"type": "assert-table-uuid", "uuid": md.table_uuid})];
    for (name, r) in &md.refs {
        requirements.push(
            json!({"type": "assert-ref-snapshot-id", "ref": name, "snapshot-id": r.snapshot_id}),
        );
    }
    let mut updates = Vec::new();
    for name in remove_refs {
        updates.push(json!({"action": "remove-snapshot-ref", "ref-name": name}));
    }
    if !expire.is_empty() {
        updates.push(json!({"action": "remove-snapshots", "snapshot-ids": expire}));
    }
    json!({"requirements": requirements, "updates": updates})
}

/// The next metadata document: snapshots, refs, snapshot-log and statistics
/// of expired snapshots removed; the old file appended to `metadata-log`
/// (trimmed to `write.metadata.previous-versions-max`, default 100).
fn new_metadata(
    mut raw: Value,
    uri: &str,
    now: i64,
    remove_refs: &[String],
    expire: &[i64],
) -> Result<Value> {
    let gone: BTreeSet<i64> = expire.iter().copied().collect();
    let obj = raw
        .as_object_mut()
        .ok_or_else(|| Error::malformed(uri, "metadata is not a JSON object"))?;
    let id_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_i64);
    if let Some(Value::Array(snaps)) = obj.get_mut("snapshots") {
        snaps.retain(|s| !id_of(s, "snapshot-id").is_some_and(|id| gone.contains(&id)));
    }
    if let Some(Value::Object(refs)) = obj.get_mut("refs") {
        for r in remove_refs {
            refs.remove(r);
        }
    }
    // Java's updateSnapshotLog: an entry of a removed snapshot clears the
    // history before it (time travel by timestamp must not land on a
    // snapshot that was never current at that time).
    if let Some(Value::Array(log)) = obj.get_mut("snapshot-log") {
        let mut kept = Vec::new();
        for e in log.drain(..) {
            if id_of(&e, "snapshot-id").is_some_and(|id| gone.contains(&id)) {
                kept.clear();
            } else {
                kept.push(e);
            }
        }
        *log = kept;
    }
    for key in ["statistics", "partition-statistics"] {
        if let Some(Value::Array(st)) = obj.get_mut(key) {
            st.retain(|e| !id_of(e, "snapshot-id").is_some_and(|id| gone.contains(&id)));
        }
    }
    let last_updated = obj
        .get("last-updated-ms")
        .and_then(Value::as_i64)
        .unwrap_or(now);
    let max_prev = obj
        .get("properties")
        .and_then(|p| p.get("write.metadata.previous-versions-max"))
        .and_then(Value::as_str)
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(100)
        .max(1);
    let log = obj
        .entry("metadata-log")
        .or_insert_with(|| Value::Array(vec![]));
    if let Value::Array(log) = log {
        log.push(json!({"timestamp-ms": last_updated, "metadata-file": uri}));
        if log.len() > max_prev {
            let cut = log.len() - max_prev;
            log.drain(..cut);
        }
    }
    obj.insert("last-updated-ms".into(), json!(now.max(last_updated)));
    Ok(raw)
}
