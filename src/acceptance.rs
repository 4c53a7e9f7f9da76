//! The one acceptance path: may the sealed keys of a plan be deleted *now*?
//!
//! Every host and every command that deletes (`apply`, the ledger's
//! approval in `sweep`, later hosts) asks this function, before the first
//! delete and again before every batch. The host passes facts it has just
//! read (the live pointer, the newest Delta commit's identity, the live
//! context, its clock); the core compares them with the plan's tokens and
//! answers for the run and for each key. No host compares generations,
//! pointers or times itself.
//!
//! Rules, each a difference that refuses the whole run:
//! - the live table generation (metadata location; Delta: the newest commit
//!   and, where the plan recorded it, that commit's size, time and ETag)
//!   differs from the plan's;
//! - the plan was judged ahead of the host's clock by more than
//!   [`MAX_CLOCK_SKEW_MS`] (files of running writers would look old), unless
//!   the host says it runs a what-if on purpose;
//! - the plan was made under a context (leases, holds, writers, DR
//!   checkpoints) and none is given now, or the live context differs in any
//!   way (digest, hold generation, lease watermark);
//! - a live legal hold covers the whole table.
//!
//! And per key: a live hold (any generation, also 0 or equal to the plan's)
//! or writer prefix covering a key denies that key whatever else holds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::context::{Context, HoldScope};
use crate::error::ProtocolReason;
use crate::error::Result;
use crate::plan::SealedPlan;
use crate::version::ObjectVersion;

/// How far, in milliseconds, a plan's `now` may lie ahead of the host's clock.
pub const MAX_CLOCK_SKEW_MS: i64 = 5 * 60_000;

/// What the host read just now, to be compared with a sealed plan.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveFacts {
    /// The live pointer (Iceberg: metadata location; Delta: the newest
    /// commit's URI), canonical and mapped like the plan's (see
    /// [`crate::plan::canonical_pointer`]).
    pub metadata_location: String,
    /// Delta: the newest commit's identity as the store lists it now.
    #[serde(default)]
    pub head: Option<ObjectVersion>,
    /// The context as read again just now (JSON; `None`: no context given).
    #[serde(default)]
    pub context: Option<String>,
    /// The host's clock, milliseconds since the Unix epoch.
    pub clock_ms: i64,
    /// Accept a plan judged ahead of `clock_ms` (what-if runs, tests).
    #[serde(default)]
    pub allow_future_now: bool,
}

/// The answer for a run: granted only when nothing differs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Acceptance {
    /// True when no difference was found (keys may still be denied).
    pub granted: bool,
    /// Every difference found, in words; empty when granted.
    pub differences: Vec<String>,
    /// Keys of the plan (relative) that must not be deleted, with the reason.
    pub denied: BTreeMap<String, String>,
    /// The live hold generation (0 without holds), for the record.
    pub live_hold_generation: u64,
    /// The live lease watermark (0 without leases), for the record.
    pub live_lease_watermark: u64,
}

impl Acceptance {
    /// Whether `key` may be deleted under this answer.
    pub fn allows(&self, key: &str) -> bool {
        self.granted && !self.denied.contains_key(key)
    }
}

/// The newest version of a Delta table from a listing of its `_delta_log/`
/// (objects as the store lists them, any order): the URI of the file that
/// defines it (the newest commit, or a newer complete checkpoint's first
/// file), made canonical under `table_location`, and that file's identity.
/// This is what a Delta plan's tokens name; hosts pass it as the live
/// pointer. `None`: the log holds no version (table gone).
pub fn delta_head(
    table_location: &str,
    log_listing: Vec<crate::ListedObject>,
) -> Result<Option<(String, ObjectVersion)>> {
    let location = crate::path::TableLocation::parse(table_location)
        .map_err(|e| crate::Error::invalid("table_location", e))?;
    let prefix = format!("{}_delta_log/", location.prefix());
    let mut listing = crate::delta_log::LogListing::default();
    let mut versions = BTreeMap::new();
    for o in log_listing {
        let uri = crate::path::CanonicalUri::parse(&o.key).map_err(|e| {
            crate::Error::protocol(
                ProtocolReason::BadKey,
                format!("listed key `{}`: {e}", o.key),
            )
        })?;
        let Some(name) = location
            .relative(&uri)
            .and_then(|r| r.strip_prefix("_delta_log/"))
            .map(str::to_owned)
        else {
            return Err(crate::Error::protocol(
                ProtocolReason::BadKey,
                format!("listed key `{}` is not under `{prefix}`", o.key),
            ));
        };
        listing.files.insert(
            name.clone(),
            crate::delta_log::LogEntry {
                size: o.size,
                last_modified_ms: o.last_modified_ms,
                etag: o.etag.clone(),
            },
        );
        versions.insert(
            name,
            ObjectVersion {
                size: o.size,
                last_modified_ms: o.last_modified_ms,
                etag: o.etag,
                version_id: o.version_id,
            },
        );
    }
    Ok(listing.newest().and_then(|(_, file)| {
        let v = versions.remove(&file)?;
        Some((format!("{prefix}{file}"), v))
    }))
}

/// Refuses an evaluation time (`judged_at_ms`) ahead of the host's clock by
/// more than [`MAX_CLOCK_SKEW_MS`]: objects of running writers would look
/// old, snapshots would expire early. `allow_future` is for what-if runs.
pub fn check_clock(judged_at_ms: i64, clock_ms: i64, allow_future: bool) -> Result<()> {
    if judged_at_ms > clock_ms.saturating_add(MAX_CLOCK_SKEW_MS) && !allow_future {
        return Err(crate::Error::invalid(
            "now_ms",
            format!("{judged_at_ms} ms is ahead of the host's clock ({clock_ms} ms): files of running writers would look old and snapshots would expire early (a what-if run must say so)"),
        ));
    }
    Ok(())
}

/// Compares `live` with `plan`'s tokens and answers for the run and for
/// every key of the plan's delete list. `Err` only for a context that does
/// not parse (nothing may be deleted then either).
pub fn accept(plan: &SealedPlan, live: &LiveFacts) -> Result<Acceptance> {
    let mut a = accept_in_ledger(plan, live)?;
    refuse_unrecorded_drill(plan, &mut a);
    Ok(a)
}

/// A deletion without a ledger: a policy's restore-drill gate cannot be
/// shown passed (drills are recorded in a ledger), so nothing is granted.
pub(crate) fn refuse_unrecorded_drill(plan: &SealedPlan, a: &mut Acceptance) {
    if plan.tokens.restore_drill.is_some() {
        a.differences.push(
            "the plan's policy asks for a passed restore drill, which only a ledger records: delete it with `sweep`, not `apply`".into(),
        );
        a.granted = false;
    }
}

/// [`accept`] for the ledger's approval (`Ledger::approve`), which checks the
/// policy's restore-drill gate against its own drills.
pub(crate) fn accept_in_ledger(plan: &SealedPlan, live: &LiveFacts) -> Result<Acceptance> {
    accept_keys(plan, live, plan.delete.iter().map(|d| d.key.as_str()))
}

/// [`accept_in_ledger`] answering for `keys` only (a deletion's batch, or
/// the keys it deleted): `denied` covers those; the run's verdict is the
/// same whichever keys are asked about.
pub(crate) fn accept_keys<'a>(
    plan: &SealedPlan,
    live: &LiveFacts,
    keys: impl IntoIterator<Item = &'a str>,
) -> Result<Acceptance> {
    let t = &plan.tokens;
    let mut differences = Vec::new();
    if live.metadata_location != t.metadata_location {
        differences.push(format!(
            "table generation: the pointer names {}, the plan was judged on {}",
            live.metadata_location, t.metadata_location
        ));
    }
    if let Some(sealed) = &t.head {
        match &live.head {
            // Time 0: a commit the plan's re-check read but never saw listed;
            // only its size is known.
            Some(now)
                if sealed.matches(now)
                    || (sealed.last_modified_ms == 0 && sealed.size == now.size) => {}
            Some(now) => differences.push(format!(
                "table generation: the newest commit was rewritten since the plan ({} bytes at {} ms then, {} bytes at {} ms now)",
                sealed.size, sealed.last_modified_ms, now.size, now.last_modified_ms
            )),
            None => differences.push(
                "table generation: the host did not say what the newest commit looks like now".into(),
            ),
        }
    }
    if let Err(crate::Error::InvalidOptions { detail, .. }) =
        check_clock(t.now_ms, live.clock_ms, live.allow_future_now)
    {
        differences.push(format!("clock: the plan's now, {detail}"));
    }
    let ctx = match live.context.as_deref() {
        Some(text) => Context::parse(text)?,
        None => {
            if t.context_digest != Context::default().digest() && !t.context_digest.is_empty() {
                differences.push(
                    "context: the plan was made under leases, holds, writers or DR checkpoints; pass the current ones"
                        .into(),
                );
            }
            Context::default()
        }
    };
    let (live_holds, live_leases) = (ctx.hold_generation(), ctx.lease_watermark());
    if live.context.is_some() {
        if live_holds > t.hold_generation {
            differences.push(format!(
                "legal holds: generation {live_holds} is newer than the plan's {}",
                t.hold_generation
            ));
        }
        if live_leases != t.lease_watermark {
            differences.push(format!(
                "reader leases: watermark {live_leases} differs from the plan's {}",
                t.lease_watermark
            ));
        }
        if !t.context_digest.is_empty() && ctx.digest() != t.context_digest {
            differences.push(
                "context: a lease, hold, writer or DR checkpoint was added, removed or changed since the plan"
                    .into(),
            );
        }
    }
    if let Some(h) = ctx.holds.iter().find(|h| h.scope == HoldScope::Table) {
        differences.push(format!(
            "legal hold on the whole table (generation {}): {}",
            h.generation, h.reason
        ));
    }
    let mut denied = BTreeMap::new();
    for key in keys {
        if let Some(why) = ctx.protects(key) {
            denied.insert(key.to_owned(), why);
        }
    }
    Ok(Acceptance {
        granted: differences.is_empty(),
        differences,
        denied,
        live_hold_generation: live_holds,
        live_lease_watermark: live_leases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(context: Option<&str>) -> SealedPlan {
        crate::plan::plan_for_tests(
            &[("data/a.parquet", 1), ("data/held/b.parquet", 1)],
            context,
        )
    }

    fn live(context: Option<&str>) -> LiveFacts {
        LiveFacts {
            metadata_location: "s3://b/t/metadata/v3.metadata.json".into(),
            head: None,
            context: context.map(str::to_owned),
            clock_ms: 1_000_000,
            allow_future_now: false,
        }
    }

    #[test]
    fn same_state_is_granted() {
        let a = accept(&plan(None), &live(None)).unwrap();
        assert!(a.granted, "{a:?}");
        assert!(a.allows("data/a.parquet"));
    }

    #[test]
    fn a_hold_of_any_generation_denies_the_keys_it_covers() {
        // Generation 0: not newer than anything, still a hold.
        let held = r#"{"holds":[{"scope":{"pathPrefix":"data/held/"},"generation":0}]}"#;
        let a = accept(&plan(Some(held)), &live(Some(held))).unwrap();
        assert!(a.granted);
        assert!(a.allows("data/a.parquet"));
        assert!(!a.allows("data/held/b.parquet"));
        // Added after the plan with an equal generation: the run stops.
        let a = accept(&plan(None), &live(Some(held))).unwrap();
        assert!(!a.granted);
    }

    #[test]
    fn a_table_hold_stops_the_run_even_when_the_plan_had_it() {
        let table = r#"{"holds":[{"scope":"table","generation":0}]}"#;
        let a = accept(&plan(Some(table)), &live(Some(table))).unwrap();
        assert!(!a.granted);
        assert!(a.differences.iter().any(|d| d.contains("whole table")));
    }

    #[test]
    fn a_lease_added_after_the_plan_stops_the_run() {
        let lease = r#"{"leases":[{"snapshotId":1,"expiresAtMs":9,"readerGeneration":0}]}"#;
        let a = accept(&plan(Some("{}")), &live(Some(lease))).unwrap();
        assert!(!a.granted, "{a:?}");
    }

    #[test]
    fn a_plan_with_a_context_needs_the_live_one() {
        let held = r#"{"holds":[{"scope":{"pathPrefix":"x/"},"generation":3}]}"#;
        let a = accept(&plan(Some(held)), &live(None)).unwrap();
        assert!(!a.granted);
    }

    #[test]
    fn pointer_clock_and_head_are_compared() {
        let mut l = live(None);
        l.metadata_location = "s3://b/t/metadata/v4.metadata.json".into();
        assert!(!accept(&plan(None), &l).unwrap().granted);
        let mut l = live(None);
        l.clock_ms = 1_000_000 - MAX_CLOCK_SKEW_MS - 1;
        assert!(!accept(&plan(None), &l).unwrap().granted);
        l.allow_future_now = true;
        assert!(accept(&plan(None), &l).unwrap().granted);
        let mut p = plan(None);
        let v = ObjectVersion {
            size: 10,
            last_modified_ms: 5_000,
            etag: None,
            version_id: None,
        };
        p.tokens.head = Some(v.clone());
        let mut l = live(None);
        assert!(!accept(&p, &l).unwrap().granted, "no head given");
        l.head = Some(ObjectVersion {
            size: 0,
            ..v.clone()
        });
        assert!(!accept(&p, &l).unwrap().granted, "rewritten commit");
        // Same size, written again later: another commit all the same.
        l.head = Some(ObjectVersion {
            last_modified_ms: 6_000,
            ..v.clone()
        });
        assert!(!accept(&p, &l).unwrap().granted, "same size, rewritten");
        // A head the plan's re-check read but never saw listed (time 0):
        // compared by size.
        let mut q = p.clone();
        q.tokens.head = Some(ObjectVersion {
            last_modified_ms: 0,
            ..v.clone()
        });
        l.head = Some(ObjectVersion {
            last_modified_ms: 9_000,
            ..v.clone()
        });
        assert!(accept(&q, &l).unwrap().granted);
        l.head = Some(ObjectVersion {
            size: 11,
            last_modified_ms: 9_000,
            ..v.clone()
        });
        assert!(!accept(&q, &l).unwrap().granted);
        l.head = Some(v);
        assert!(accept(&p, &l).unwrap().granted);
    }

    fn listed(name: &str, size: u64) -> crate::ListedObject {
        crate::ListedObject {
            key: format!("s3://b/t/_delta_log/{name}"),
            size,
            last_modified_ms: 7,
            etag: Some(format!("\"{name}\"")),
            version_id: None,
        }
    }

    #[test]
    fn the_delta_head_is_the_newest_commit_or_a_newer_checkpoint() {
        let commits: Vec<_> = (0..4u64)
            .map(|v| listed(&format!("{v:020}.json"), 10 + v))
            .collect();
        let (uri, v) = delta_head("s3a://b/t", commits.clone()).unwrap().unwrap();
        assert_eq!(uri, format!("s3://b/t/_delta_log/{:020}.json", 3));
        assert_eq!(v.size, 13);
        assert_eq!(
            v.etag.as_deref(),
            Some(format!("\"{:020}.json\"", 3).as_str())
        );
        // A checkpoint newer than every commit (a checkpoint-only tail).
        let mut with_cp = commits;
        with_cp.push(listed(&format!("{:020}.checkpoint.parquet", 5), 99));
        let (uri, v) = delta_head("s3://b/t", with_cp).unwrap().unwrap();
        assert!(
            uri.ends_with(&format!("{:020}.checkpoint.parquet", 5)),
            "{uri}"
        );
        assert_eq!(v.size, 99);
        assert_eq!(delta_head("s3://b/t", vec![]).unwrap(), None);
        let mut outside = listed("x", 1);
        outside.key = "s3://b/other/_delta_log/00000000000000000000.json".into();
        assert!(delta_head("s3://b/t", vec![outside]).is_err());
    }

    #[test]
    fn the_clock_tolerates_five_minutes_of_skew_and_no_more() {
        let now = 1_000_000_000;
        assert!(check_clock(now + 4 * 60_000, now, false).is_ok());
        assert!(check_clock(now + 5 * 60_000, now, false).is_ok());
        assert!(check_clock(now + 5 * 60_000 + 1, now, false).is_err());
        assert!(check_clock(now + 6 * 60_000, now, false).is_err());
        assert!(check_clock(now + 6 * 60_000, now, true).is_ok());
        assert!(check_clock(now - 86_400_000, now, false).is_ok());
    }

    #[test]
    fn a_context_that_does_not_parse_is_an_error() {
        assert!(accept(&plan(None), &live(Some("{"))).is_err());
    }
}
