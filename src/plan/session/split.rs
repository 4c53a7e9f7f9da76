//! A listing answered in splits (see [`crate::split`]): the session cuts
//! the prefix it asked for, checks every partial result against the split
//! it cut, its own keep set and its pointer, judges each candidate again,
//! and ends the listing once every split came back exactly once.

use super::{Pinned, Session};
use crate::error::{Error, ProtocolReason, Result, UnsafeReason};
use crate::split::{cut, ListingSplit, SplitAnswer, SplitResult};
use crate::verdict::{object_kind, Judged, ListedObject, Verdict};

/// The splits of the listing under way and which came back.
#[derive(Debug)]
pub(super) struct SplitLedger {
    splits: Vec<ListingSplit>,
    back: Vec<bool>,
    /// How many have not come back.
    left: usize,
    /// The digest of the keep set the splits must be judged with.
    keep_set: String,
    /// The metadata location that keep set was built from.
    metadata_location: String,
}

impl Session {
    /// Asks for `prefix` to be listed (the table's, or a write root's).
    pub(super) fn ask_listing(&mut self, prefix: String) {
        self.listing_prefix = Some(prefix.clone());
        self.listing_fed = false;
        self.requests.list(prefix);
    }

    /// Notes pages or names handed over for the listing; fails (protocol)
    /// when the listing was cut into splits.
    pub(super) fn feed_listing(&mut self) -> Result<()> {
        if self.splits.is_some() {
            return Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                "this listing was cut into splits: answer it with each split's partial result, not pages",
            ));
        }
        self.listing_fed = true;
        Ok(())
    }

    /// Cuts the listing asked for now into splits at `boundaries` (keys
    /// under its prefix, any order; one split more than distinct
    /// boundaries), to be listed and classified elsewhere against
    /// [`Session::export_keep_set`] and answered with
    /// [`Session::handle_split_result`]. Fails (protocol) when no table
    /// listing is asked for, once pages were handed over or the listing was
    /// cut already, or for a boundary outside the prefix; (unsupported) in
    /// a session checking a ledger's deleted keys, which needs every
    /// referenced key listed to pass through it. Any failure fails the
    /// session (fail closed): decide to cut before asking.
    pub fn split_listing(&mut self, boundaries: Vec<String>) -> Result<Vec<ListingSplit>> {
        let mut out = Vec::new();
        self.guard(|s| {
            let prefix = match (&s.listing_prefix, s.state.is_listing()) {
                (Some(p), true) => p.clone(),
                _ => {
                    return Err(Error::protocol(
                        ProtocolReason::OutOfOrder,
                        "no table listing is asked for now: only the table's listing (and its write roots') is cut into splits",
                    ))
                }
            };
            if s.listing_fed || s.splits.is_some() {
                return Err(Error::protocol(
                    ProtocolReason::OutOfOrder,
                    format!("the listing of `{prefix}` is under way already: cut it before its first page, once"),
                ));
            }
            if s.config.deleted_index.is_some() {
                return Err(Error::unsupported(
                    "a listing in splits for a sweep that checks a ledger's deleted keys (each referenced key listed must pass through the session): list it in pages",
                    &prefix,
                ));
            }
            let splits = cut(&prefix, boundaries)?;
            // The export is kept for the host's that follows: the same bytes.
            let keep_set = s.keep_set_digest()?;
            s.splits = Some(Box::new(SplitLedger {
                back: vec![false; splits.len()],
                left: splits.len(),
                splits: splits.clone(),
                keep_set,
                metadata_location: s.metadata_location.clone(),
            }));
            out = splits;
            Ok(())
        })?;
        Ok(out)
    }

    /// Answers one split of the listing with its partial result
    /// ([`crate::PageClassifier::end_split`]'s text). Once every split came
    /// back, the listing is over (as after its last page). Fails (protocol)
    /// for a result of a split that was not cut or came back already, of
    /// another keep set, with a key outside its split, or a candidate the
    /// session judges otherwise; (unsafe: table-changing) for a result
    /// judged on another pointer. A failure fails the session.
    ///
    /// A split's refusal ([`crate::PageClassifier::split_refusal`]'s text)
    /// is taken in its place: the session fails with the worker's error,
    /// named with the split, whichever split it names. A worker run again
    /// cannot then answer the split instead (a foreign table's document
    /// gone by the retry would otherwise leave that table's files to plan).
    pub fn handle_split_result(&mut self, result: String) -> Result<()> {
        self.guard(|s| {
            let r = match SplitAnswer::from_json(&result)? {
                SplitAnswer::Result(r) => *r,
                SplitAnswer::Refusal(r) => {
                    let known = s
                        .splits
                        .as_deref()
                        .is_some_and(|l| l.splits.get(r.split.index as usize) == Some(&r.split));
                    return Err(r.error.within(&format!(
                        "split {} of {} under `{}`{} was refused on its worker: ",
                        r.split.index,
                        r.split.of,
                        r.split.prefix,
                        if known {
                            ""
                        } else {
                            " (a split this session did not cut)"
                        }
                    )));
                }
            };
            let Some(l) = s.splits.as_deref() else {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    "a split's result sent when no listing was cut into splits",
                ));
            };
            let i = r.split.index as usize;
            if l.splits.get(i) != Some(&r.split) {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    format!(
                        "the result of split {} of {} under `{}` (after {:?} through {:?}) answers no split this listing was cut into",
                        r.split.index, r.split.of, r.split.prefix, r.split.after, r.split.through
                    ),
                ));
            }
            if l.back[i] {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    format!(
                        "split {i} of {} came back twice: its keys would be counted twice, nothing is planned",
                        l.splits.len()
                    ),
                ));
            }
            if r.metadata_location != l.metadata_location {
                return Err(Error::unsafe_(
                    UnsafeReason::TableChanging,
                    format!(
                        "split {i} was judged with a keep set built on {}, this session's is built on {}",
                        r.metadata_location, l.metadata_location
                    ),
                ));
            }
            if r.keep_set != l.keep_set {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    format!(
                        "split {i} was judged with another keep set ({}, this session's is {}): export it again and list the split again",
                        r.keep_set, l.keep_set
                    ),
                ));
            }
            for k in [&r.first_key, &r.last_key].into_iter().flatten() {
                if !r.split.contains(k) {
                    return Err(Error::protocol(
                        ProtocolReason::BadKey,
                        format!("split {i} reports `{k}`, which is outside it"),
                    ));
                }
            }
            s.merge_split(r)?;
            if let Some(l) = s.splits.as_deref_mut() {
                l.back[i] = true;
                l.left -= 1;
                if l.left > 0 {
                    return Ok(());
                }
            }
            s.splits = None;
            s.state.last_page_seen()?;
            s.advance()
        })
    }

    /// The splits of the listing under way that have not come back (their
    /// indices), empty when the listing is not cut.
    pub fn splits_outstanding(&self) -> Vec<u32> {
        self.splits.as_deref().map_or_else(Vec::new, |l| {
            (0..l.splits.len() as u32)
                .filter(|i| !l.back[*i as usize])
                .collect()
        })
    }

    /// Fails (protocol) while a split has not come back: the listing is
    /// not covered, nothing can be sealed. A failed session fails with
    /// its own error first (what failed it, not what it left undone).
    pub(super) fn check_splits_back(&self) -> Result<()> {
        if let Some(e) = self.state.failed() {
            return Err(e.clone());
        }
        let left = self.splits_outstanding();
        if left.is_empty() {
            return Ok(());
        }
        let shown: Vec<String> = left.iter().take(10).map(u32::to_string).collect();
        Err(Error::protocol(
            ProtocolReason::OutOfOrder,
            format!(
                "{} splits of the listing never came back (split {}{}): the listing is not covered, nothing is sealed",
                left.len(),
                shown.join(", "),
                if left.len() > 10 { ", ..." } else { "" }
            ),
        ))
    }

    /// Adds a checked split's findings, as its pages would have added them.
    fn merge_split(&mut self, r: SplitResult) -> Result<()> {
        let i = r.split.index;
        for c in r.candidates {
            if !r.split.contains(&c.key) {
                return Err(Error::protocol(
                    ProtocolReason::BadKey,
                    format!("split {i} plans `{}`, which is outside it", c.key),
                ));
            }
            // Judged again here, against this session's own keep set: a
            // candidate is planned only when the session finds it one.
            let obj = ListedObject {
                key: c.key.clone(),
                size: c.size,
                last_modified_ms: c.last_modified_ms,
                etag: c.etag.clone(),
                version_id: c.version_id.clone(),
            };
            let d = match self.classifier.judge(obj)? {
                Judged::Final(d) if d.verdict == c.verdict => d,
                Judged::Final(d) => {
                    return Err(Error::protocol(
                        ProtocolReason::UnexpectedAnswer,
                        format!(
                            "split {i} plans `{}` as {}, the session judges it {}: {}",
                            c.key,
                            c.verdict.as_str(),
                            d.verdict.as_str(),
                            d.detail
                        ),
                    ))
                }
                // An unreferenced metadata document old enough to go: the
                // split's worker settled its owner check with the file
                // (a document of another table stops the whole sweep there).
                Judged::NeedsOwner { mut decision } if c.verdict == Verdict::Candidate => {
                    decision.verdict = Verdict::Candidate;
                    decision
                }
                Judged::NeedsOwner { .. } => {
                    return Err(Error::protocol(
                        ProtocolReason::UnexpectedAnswer,
                        format!(
                            "split {i} plans `{}` as {}, the session finds a metadata document to check the owner of",
                            c.key,
                            c.verdict.as_str()
                        ),
                    ))
                }
            };
            if !matches!(d.verdict, Verdict::Candidate | Verdict::ExpiredLog) {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    format!("split {i} plans `{}` as a kept verdict", c.key),
                ));
            }
            let pinned = Pinned {
                size: d.size,
                last_modified_ms: d.last_modified_ms,
                etag: d.etag,
                version_id: d.version_id,
            };
            if self
                .candidates
                .insert(d.relative_key.clone(), pinned)
                .is_some()
            {
                return Err(Error::protocol(
                    ProtocolReason::BadKey,
                    format!(
                        "`{}` is planned by two splits (or listed twice): nothing is planned",
                        d.relative_key
                    ),
                ));
            }
            self.summary
                .reclaimable
                .entry(object_kind(&d.relative_key).into())
                .or_default()
                .add(d.size);
        }
        // A worker's counts, added without overflow whatever they claim.
        let add = |t: &mut crate::verdict::Tally, o: crate::verdict::Tally| {
            t.count = t.count.saturating_add(o.count);
            t.bytes = t.bytes.saturating_add(o.bytes);
        };
        self.summary.listed_by_name = self.summary.listed_by_name.saturating_add(r.listed_by_name);
        add(&mut self.summary.listed, r.listed);
        for (v, t) in r.verdicts {
            add(self.summary.verdicts.entry(v).or_default(), t);
        }
        for (p, (exact, near)) in r.hold_hits {
            let e = self.hold_hits.entry(p).or_default();
            e.0 = e.0.saturating_add(exact);
            e.1 = e.1.saturating_add(near);
        }
        for (rel, detail) in r.near_misses {
            self.warnings
                .insert(format!("near-miss kept: `{rel}` {detail}"));
        }
        self.references.listed_in_split(r.references);
        for doc in r.stray_documents {
            if let super::Machine::Iceberg(ice) = &mut self.machine {
                ice.note_stray_document(doc);
            }
        }
        Ok(())
    }
}
