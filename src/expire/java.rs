//! Java's `RemoveSnapshots` rules: which refs stay, which ancestors each
//! retained branch keeps, unreferenced snapshots younger than the default
//! age, the current snapshot, and snapshots named explicitly.

use std::collections::{BTreeMap, BTreeSet};

use super::protections::Holds;
use super::{more_retentive, Defaults, History};
use crate::duration::human_ms;
use crate::error::{Error, Result};
use crate::policy::SnapshotRetention;
use crate::spec::iceberg::{RefKind, SnapshotRef, TableMetadata};

/// What Java's rules keep, and why.
pub(super) struct Retention {
    /// Every reason each kept snapshot has so far.
    pub reasons: BTreeMap<i64, Vec<String>>,
    /// Refs that stay, with their targets.
    pub retained_refs: Vec<(String, SnapshotRef)>,
    /// Refs to remove.
    pub remove_refs: Vec<String>,
    /// Snapshots a retained ref reaches (branch ancestry or tag).
    pub reached: BTreeSet<i64>,
}

impl Retention {
    /// Applies the rules. Refs on hold (or the whole table on hold) stay,
    /// whatever their age.
    pub fn of(
        md: &TableMetadata,
        sr: &SnapshotRetention,
        defaults: &Defaults,
        history: &History,
        holds: &Holds,
        now: i64,
        warnings: &mut BTreeSet<String>,
    ) -> Result<Retention> {
        let mut reasons: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        // Refs: which stay.
        let mut retained_refs = Vec::new();
        let mut remove_refs = Vec::new();
        for (name, r) in &md.refs {
            let ovr = sr.refs.get(name);
            let max_ref_age = more_retentive(
                ovr.and_then(|o| o.max_ref_age).map(|d| d.0),
                r.max_ref_age_ms,
                defaults.max_ref_age,
            );
            let protected = sr.protected_refs.contains(name);
            let held = holds.refs.contains(name.as_str());
            let stays = if name == "main" || protected || held || holds.table.is_some() {
                true
            } else {
                match history.ts.get(&r.snapshot_id) {
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
            history.keep(r.snapshot_id, why, &mut reasons);
            if r.kind == RefKind::Branch {
                let ovr = sr.refs.get(name);
                let own_keep = r.min_snapshots_to_keep;
                let policy_keep = ovr.and_then(|o| o.min_snapshots_to_keep).map(i64::from);
                let min_keep = more_retentive(policy_keep, own_keep, defaults.min_keep);
                // The setting that decided, as the operator would change it.
                let keep_by = match (policy_keep, own_keep) {
                    (Some(p), Some(o)) if o > p => "min-snapshots-to-keep".to_owned(),
                    (Some(_), _) => format!("the policy's refs.{name}.minSnapshotsToKeep"),
                    (None, Some(_)) => "min-snapshots-to-keep".to_owned(),
                    (None, None) => defaults.min_keep_by.to_owned(),
                };
                let own_age = r.max_snapshot_age_ms;
                let policy_age = ovr.and_then(|o| o.max_snapshot_age).map(|d| d.0);
                let max_age = more_retentive(policy_age, own_age, defaults.max_age);
                let age_by = match (policy_age, own_age) {
                    (Some(p), Some(o)) if o > p => "max-snapshot-age".to_owned(),
                    (Some(_), _) => format!("the policy's refs.{name}.maxSnapshotAge"),
                    (None, Some(_)) => "max-snapshot-age".to_owned(),
                    (None, None) => defaults.max_age_by.to_owned(),
                };
                let older_than = now.saturating_sub(max_age);
                let held = holds.refs.contains(name.as_str());
                for (i, id) in history.ancestors(r.snapshot_id).into_iter().enumerate() {
                    let t = history.ts[&id];
                    if held {
                        history.keep(id, format!("legal hold on ref `{name}`"), &mut reasons);
                    } else if (i as i64) < min_keep {
                        if i > 0 {
                            history.keep(
                                id,
                                format!(
                                    "ancestor {} of branch `{name}`, within {keep_by} {min_keep}",
                                    i + 1
                                ),
                                &mut reasons,
                            );
                        }
                    } else if t >= older_than {
                        history.keep(
                            id,
                            format!(
                                "ancestor of branch `{name}` younger than {age_by} {}",
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
                reached.extend(history.ancestors(r.snapshot_id));
            } else {
                reached.insert(r.snapshot_id);
            }
        }
        let expire_older_than = now.saturating_sub(defaults.max_age);
        for s in &md.snapshots {
            if !reached.contains(&s.snapshot_id) && s.timestamp_ms >= expire_older_than {
                history.keep(
                    s.snapshot_id,
                    format!(
                        "unreferenced, younger than {} {}",
                        defaults.max_age_by,
                        human_ms(defaults.max_age)
                    ),
                    &mut reasons,
                );
            }
        }
        if let Some(c) = md.current_snapshot_id {
            history.keep(c, "the current snapshot".into(), &mut reasons);
        }
        Ok(Retention {
            reasons,
            retained_refs,
            remove_refs,
            reached,
        })
    }

    /// Explicitly named snapshots expire (their Java reasons dropped) unless
    /// a retained ref points at them, which is an error, as in Java.
    pub fn expire_explicitly(
        &mut self,
        explicit: &BTreeSet<i64>,
        history: &History,
        warnings: &mut BTreeSet<String>,
    ) -> Result<()> {
        for id in explicit {
            if !history.has(*id) {
                warnings.insert(format!("snapshot {id} asked to expire does not exist"));
                continue;
            }
            let refs: Vec<&str> = self
                .retained_refs
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
            self.reasons.remove(id);
        }
        Ok(())
    }
}
