//! Our protections on top of Java's rules: protected refs, legal holds (on
//! the table, a ref or a snapshot), `minSnapshotAge`, reader leases (capped
//! at `maxReaderLease`) and disaster-recovery checkpoints. They win over
//! snapshots named explicitly too.

use std::collections::{BTreeMap, BTreeSet};

use super::{ExpiryRequest, History};
use crate::context::{Context, DrCheckpoint, Hold, HoldScope};
use crate::duration::human_ms;
use crate::error::{Error, Result, UnsafeReason};
use crate::policy::Policy;
use crate::spec::iceberg::TableMetadata;

/// The holds Java's ref rules must see: refs on hold, and a hold on the
/// whole table.
pub(super) struct Holds {
    /// Names of refs under a legal hold.
    pub refs: BTreeSet<String>,
    /// A legal hold on the whole table, if any.
    pub table: Option<Hold>,
}

impl Holds {
    /// Reads the context's holds and checks the policy's protected refs
    /// name refs exactly (a case-only match is an error; a missing one a
    /// warning).
    pub fn of(
        context: &Context,
        policy: Option<&Policy>,
        md: &TableMetadata,
        warnings: &mut BTreeSet<String>,
    ) -> Result<Holds> {
        for name in policy
            .iter()
            .flat_map(|p| &p.snapshot_retention.protected_refs)
        {
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
        let refs: BTreeSet<String> = context
            .holds
            .iter()
            .filter_map(|h| match &h.scope {
                HoldScope::Ref(r) => Some(r.clone()),
                _ => None,
            })
            .collect();
        for r in &refs {
            if !md.refs.contains_key(r) {
                warnings.insert(format!("legal hold on ref `{r}`, which does not exist"));
            }
        }
        Ok(Holds {
            refs,
            table: context
                .holds
                .iter()
                .find(|h| h.scope == HoldScope::Table)
                .cloned(),
        })
    }
}

/// Every snapshot our protections keep, with the reasons.
pub(super) fn reasons(
    req: &ExpiryRequest,
    md: &TableMetadata,
    policy: Option<&Policy>,
    history: &History,
    holds: &Holds,
    now: i64,
    warnings: &mut BTreeSet<String>,
) -> Result<BTreeMap<i64, Vec<String>>> {
    let ts = &history.ts;
    let mut ours: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    if let Some(h) = &holds.table {
        for &id in ts.keys() {
            ours.entry(id).or_default().push(format!(
                "legal hold on the table (generation {}): {}",
                h.generation, h.reason
            ));
        }
    }
    if let Some(min_age) = policy.and_then(|p| p.snapshot_retention.min_snapshot_age) {
        for (&id, &t) in ts {
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
        if !history.has(l.snapshot_id) {
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
            if history.has(id) {
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
            DrCheckpoint::SnapshotId(id) if history.has(*id) => {
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
                    if history.has(s.snapshot_id) {
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
    Ok(ours)
}
