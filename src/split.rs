//! Listing splits: one table listing cut into key ranges, so that many
//! workers (Spark executors, functions) list and classify it at once
//! against the keep set a session exported, and the proof, as their partial
//! results come back, that the ranges covered the listing exactly once.
//!
//! The call order:
//!
//! 1. The session asks for a prefix to be listed. The driver picks boundary
//!    keys (from a sample, anywhere: they decide the balance, not the
//!    outcome) and calls [`crate::Session::split_listing`]. The session cuts
//!    the prefix's keys into consecutive ranges, each the keys after one
//!    boundary up to and including the next in byte order, and remembers
//!    them with its keep set's digest and its pointer.
//! 2. Each worker loads the exported keep set into a
//!    [`crate::PageClassifier`], calls
//!    [`crate::PageClassifier::begin_split`], lists exactly its split's keys
//!    in ascending byte order (S3's `ListObjectsV2` with `StartAfter` set to
//!    `after`, stopping past `through`), classifies them with
//!    [`crate::PageClassifier::split_page`], settles its owner checks, and
//!    ends with [`crate::PageClassifier::end_split`]: the partial result.
//! 3. The driver hands every partial result to
//!    [`crate::Session::handle_split_result`]. Once each split came back
//!    once, the listing is over and the session goes on as after a last
//!    page (the next write root, the pointer's re-read) and seals as always.
//!
//! A partial result holds what the plan needs and no more: the candidates
//! (each judged again by the session against its own keep set), counts and
//! bytes per verdict, near-misses, legal-hold hits, how many referenced keys
//! were listed, and the stray metadata documents its owner checks found.
//! No referenced key crosses (but the few that only an ambiguous
//! reference names, bounded by the keep set): the driver's memory does not
//! grow with the listing.
//!
//! Refused: a result for a split that was not cut, or answered twice; one
//! made with another keep set or pointer; a key outside its split, or
//! listed out of order or twice; owner checks left unsettled. A split that
//! never came back leaves the listing open, and sealing names it. A worker
//! whose classifier refused its split sends the refusal
//! ([`crate::PageClassifier::split_refusal`]) in the split's place: the
//! session fails with the worker's error, for good.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ProtocolReason, Result};
use crate::verdict::{Decision, Verdict};
use crate::verdict::{StrayDocument, Tally};

/// The schema of a split's partial result.
pub const SPLIT_RESULT_SCHEMA: &str = "lakesweep.split-result.v1";

/// The schema of a split's refusal: what a worker sends back instead of a
/// partial result when its classifier refused the split.
pub const SPLIT_REFUSAL_SCHEMA: &str = "lakesweep.split-refusal.v1";

/// The most splits one listing is cut into.
pub const MAX_SPLITS: usize = 1 << 20;

/// One part of a listing: the keys under `prefix` after `after` (not
/// included) up to and including `through`, in byte order. `None` is the
/// start (`after`) or the end (`through`) of the prefix. A listing's splits
/// are numbered `0..of` and follow each other: split `i`'s `through` is
/// split `i + 1`'s `after`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListingSplit {
    /// Its place among the listing's splits, from 0.
    pub index: u32,
    /// How many splits the listing was cut into.
    pub of: u32,
    /// The listed prefix (the session's `list` request), ending with `/`.
    pub prefix: String,
    /// The key the split starts after (S3's `StartAfter`); `None`: the
    /// prefix's first key.
    pub after: Option<String>,
    /// The split's last possible key; `None`: the prefix's last key.
    pub through: Option<String>,
}

impl ListingSplit {
    /// Whether the listed key `key` (spelled as listed, byte for byte)
    /// belongs to this split.
    pub fn contains(&self, key: &str) -> bool {
        key.starts_with(&self.prefix)
            && self.after.as_deref().is_none_or(|a| key > a)
            && self.through.as_deref().is_none_or(|t| key <= t)
    }

    /// The split as JSON text (`{index, of, prefix, after, through}`).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses [`ListingSplit::to_json`]'s text; fails (protocol: bad-input).
    pub fn from_json(text: &str) -> Result<ListingSplit> {
        serde_json::from_str(text).map_err(|e| {
            Error::protocol(
                ProtocolReason::BadInput,
                format!("not a listing split: {e}"),
            )
        })
    }
}

/// Cuts the listing of `prefix` at `boundaries` (keys under it, any order,
/// repeats ignored): one split more than distinct boundaries.
pub(crate) fn cut(prefix: &str, mut boundaries: Vec<String>) -> Result<Vec<ListingSplit>> {
    for b in &boundaries {
        if !b.starts_with(prefix) || b.len() == prefix.len() {
            return Err(Error::protocol(
                ProtocolReason::BadKey,
                format!("split boundary `{b}` is not a key under the listed prefix `{prefix}`"),
            ));
        }
    }
    boundaries.sort_unstable();
    boundaries.dedup();
    if boundaries.len() >= MAX_SPLITS {
        return Err(Error::protocol(
            ProtocolReason::BadInput,
            format!(
                "{} split boundaries: a listing is cut into at most {MAX_SPLITS} splits",
                boundaries.len()
            ),
        ));
    }
    let of = boundaries.len() as u32 + 1;
    let mut out = Vec::with_capacity(boundaries.len() + 1);
    let mut after = None;
    for (i, b) in boundaries.into_iter().map(Some).chain([None]).enumerate() {
        out.push(ListingSplit {
            index: i as u32,
            of,
            prefix: prefix.to_owned(),
            after: after.clone(),
            through: b.clone(),
        });
        after = b;
    }
    Ok(out)
}

/// A candidate a split found, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SplitCandidate {
    /// The key as listed.
    pub(crate) key: String,
    /// `candidate` or `expired-log`.
    pub(crate) verdict: Verdict,
    pub(crate) size: u64,
    pub(crate) last_modified_ms: i64,
    pub(crate) etag: Option<String>,
    pub(crate) version_id: Option<String>,
}

/// How many referenced keys a split listed (see the session's references).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ListedReferences {
    /// Listed keys referenced in their own right.
    pub(crate) matched: u64,
    /// Listed keys that are only one reading of an ambiguous reference.
    pub(crate) matched_alt: u64,
    /// Listed keys of ambiguous references.
    pub(crate) members: Vec<String>,
}

/// What one split's worker returns: everything the plan needs of its keys.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SplitResult {
    pub(crate) schema: String,
    /// XXH3-128 of the exported keep set the split was judged with.
    pub(crate) keep_set: String,
    /// The metadata location that keep set was built from.
    pub(crate) metadata_location: String,
    pub(crate) split: ListingSplit,
    /// Every listed object.
    pub(crate) listed: Tally,
    /// Of those, referenced keys settled by name (no bytes counted).
    #[serde(default)]
    pub(crate) listed_by_name: u64,
    pub(crate) first_key: Option<String>,
    pub(crate) last_key: Option<String>,
    /// Per verdict, settled owner checks included.
    pub(crate) verdicts: BTreeMap<String, Tally>,
    pub(crate) candidates: Vec<SplitCandidate>,
    /// Near-misses kept: (relative key, why).
    pub(crate) near_misses: Vec<(String, String)>,
    /// Per path-prefix hold: (exact hits, near hits).
    pub(crate) hold_hits: BTreeMap<String, (u64, u64)>,
    pub(crate) references: ListedReferences,
    pub(crate) stray_documents: Vec<StrayDocument>,
}

impl SplitResult {
    /// Parses a partial result; fails (protocol: bad-input) for text that
    /// is not one of this version.
    pub(crate) fn from_json(text: &str) -> Result<SplitResult> {
        let r: SplitResult = serde_json::from_str(text).map_err(|e| {
            Error::protocol(
                ProtocolReason::BadInput,
                format!("not a split's partial result: {e}"),
            )
        })?;
        if r.schema != SPLIT_RESULT_SCHEMA {
            return Err(Error::protocol(
                ProtocolReason::BadInput,
                format!(
                    "a partial result of schema `{}`, not {SPLIT_RESULT_SCHEMA}",
                    r.schema
                ),
            ));
        }
        Ok(r)
    }
}

/// What a split's worker sends back when its classifier refused the split
/// (another table's metadata in it, a key outside it, an owner check
/// left unsettled): the error, as the classifier raised it. Handed to the
/// session like a partial result, it fails the session with that error,
/// for good: a worker run again cannot answer the split instead.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SplitRefusal {
    pub(crate) schema: String,
    /// XXH3-128 of the exported keep set the split was judged with.
    pub(crate) keep_set: String,
    /// The metadata location that keep set was built from.
    pub(crate) metadata_location: String,
    pub(crate) split: ListingSplit,
    pub(crate) error: Error,
}

impl SplitRefusal {
    /// The refusal as JSON text.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What a worker sent back for a split: its partial result or its refusal.
pub(crate) enum SplitAnswer {
    Result(Box<SplitResult>),
    Refusal(Box<SplitRefusal>),
}

impl SplitAnswer {
    /// Parses a partial result or a refusal (by its schema); fails
    /// (protocol: bad-input) for text that is neither, of this version.
    pub(crate) fn from_json(text: &str) -> Result<SplitAnswer> {
        #[derive(Deserialize)]
        struct Schema {
            schema: Option<String>,
        }
        let schema = serde_json::from_str::<Schema>(text)
            .ok()
            .and_then(|s| s.schema);
        if schema.as_deref() == Some(SPLIT_REFUSAL_SCHEMA) {
            let r: SplitRefusal = serde_json::from_str(text).map_err(|e| {
                Error::protocol(
                    ProtocolReason::BadInput,
                    format!("not a split's refusal: {e}"),
                )
            })?;
            return Ok(SplitAnswer::Refusal(Box::new(r)));
        }
        SplitResult::from_json(text).map(|r| SplitAnswer::Result(Box::new(r)))
    }
}

/// A split being listed on a worker: its keys checked in and tallied.
#[derive(Debug, Clone)]
pub(crate) struct SplitTally {
    pub(crate) result: SplitResult,
    /// Owner checks not yet settled, by key as listed, with the version
    /// listed (a settlement is judged on that version, no other).
    pub(crate) pending: BTreeMap<String, crate::verdict::ListedObject>,
    /// Keys listed by name whose versions are to come in a page, in order.
    pub(crate) announced: std::collections::VecDeque<String>,
}

impl SplitTally {
    /// A tally of `split` judged with the keep set `keep_set` (its digest)
    /// built from `metadata_location`.
    pub(crate) fn new(split: ListingSplit, keep_set: String, metadata_location: String) -> Self {
        SplitTally {
            result: SplitResult {
                schema: SPLIT_RESULT_SCHEMA.into(),
                keep_set,
                metadata_location,
                split,
                listed: Tally::default(),
                listed_by_name: 0,
                first_key: None,
                last_key: None,
                verdicts: BTreeMap::new(),
                candidates: Vec::new(),
                near_misses: Vec::new(),
                hold_hits: BTreeMap::new(),
                references: ListedReferences::default(),
                stray_documents: Vec::new(),
            },
            pending: BTreeMap::new(),
            announced: std::collections::VecDeque::new(),
        }
    }

    /// Checks the listed key `key` in: inside the split, and after the
    /// last one (a listing in ascending byte order lists a key once).
    /// Fails (protocol: bad-key) otherwise.
    pub(crate) fn order(&mut self, key: &str) -> Result<()> {
        let s = &self.result.split;
        if !s.contains(key) {
            return Err(Error::protocol(
                ProtocolReason::BadKey,
                format!(
                    "`{key}` is outside split {} of {} (keys under `{}` after {:?} through {:?})",
                    s.index, s.of, s.prefix, s.after, s.through
                ),
            ));
        }
        if let Some(last) = self.result.last_key.as_deref() {
            if key <= last {
                return Err(Error::protocol(
                    ProtocolReason::BadKey,
                    format!(
                        "`{key}` listed after `{last}` in split {}: a split is listed in ascending byte order, each key once",
                        s.index
                    ),
                ));
            }
        }
        if self.result.first_key.is_none() {
            self.result.first_key = Some(key.to_owned());
        }
        self.result.last_key = Some(key.to_owned());
        Ok(())
    }

    /// Checks in the listed object `key` of `size` bytes: a key listed by
    /// name before (those not sent are gone meanwhile, and left out), or
    /// one after the last (see [`SplitTally::order`]).
    pub(crate) fn check_in(&mut self, key: &str, size: u64) -> Result<()> {
        let mut announced = false;
        while let Some(front) = self.announced.front() {
            match front.as_str().cmp(key) {
                std::cmp::Ordering::Less => {
                    self.announced.pop_front();
                }
                std::cmp::Ordering::Equal => {
                    self.announced.pop_front();
                    announced = true;
                    break;
                }
                std::cmp::Ordering::Greater => break,
            }
        }
        if !announced {
            self.order(key)?;
        }
        self.result.listed.add(size);
        Ok(())
    }

    /// Counts a referenced key settled by its name alone (no bytes).
    pub(crate) fn by_name(
        &mut self,
        rel: &str,
        protections: &crate::Context,
        alt_only: &crate::hashing::Set<String>,
        members: &crate::hashing::Set<String>,
    ) {
        self.result.listed.add(0);
        self.result.listed_by_name += 1;
        self.count(rel, Verdict::Referenced, 0, protections, alt_only, members);
    }

    /// Counts a final decision (`d`, not an owner check) as the session
    /// counts a listed key's: its verdict, its hold hits, a candidate to
    /// plan, a near-miss to warn of, a referenced key listed.
    pub(crate) fn tally(
        &mut self,
        d: &Decision,
        protections: &crate::Context,
        alt_only: &crate::hashing::Set<String>,
        members: &crate::hashing::Set<String>,
    ) {
        self.count(
            &d.relative_key,
            d.verdict,
            d.size,
            protections,
            alt_only,
            members,
        );
        let r = &mut self.result;
        match d.verdict {
            Verdict::Candidate | Verdict::ExpiredLog => r.candidates.push(SplitCandidate {
                key: d.key.clone(),
                verdict: d.verdict,
                size: d.size,
                last_modified_ms: d.last_modified_ms,
                etag: d.etag.clone(),
                version_id: d.version_id.clone(),
            }),
            Verdict::NearMiss => r
                .near_misses
                .push((d.relative_key.clone(), d.detail.clone())),
            _ => {}
        }
    }

    /// Counts the listed key `rel`'s verdict (`size` bytes): its hold
    /// hits, its verdict's tally, and a referenced key listed.
    fn count(
        &mut self,
        rel: &str,
        verdict: Verdict,
        size: u64,
        protections: &crate::Context,
        alt_only: &crate::hashing::Set<String>,
        members: &crate::hashing::Set<String>,
    ) {
        let r = &mut self.result;
        protections.count_hold_hits(rel, &mut r.hold_hits);
        r.verdicts
            .entry(verdict.as_str().to_owned())
            .or_default()
            .add(size);
        // The version hint is judged referenced by its name alone: it
        // proves nothing about whether the listing is the table's.
        if verdict == Verdict::Referenced && rel != crate::verdict::VERSION_HINT {
            if alt_only.contains(rel) {
                r.references.matched_alt += 1;
            } else {
                r.references.matched += 1;
            }
            if members.contains(rel) {
                r.references.members.push(rel.to_owned());
            }
        }
    }

    /// The partial result; fails (protocol: out-of-order) while an owner
    /// check is unsettled.
    pub(crate) fn finish(self) -> Result<String> {
        if let Some((key, _)) = self.pending.iter().next() {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!(
                    "split {} ended with {} owner checks unsettled (`{key}` first): settle each with its metadata file",
                    self.result.split.index,
                    self.pending.len()
                ),
            ));
        }
        Ok(serde_json::to_string(&self.result).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_tiles_the_prefix() {
        let s = cut(
            "s3://b/t/",
            vec![
                "s3://b/t/data/m".into(),
                "s3://b/t/data/c".into(),
                "s3://b/t/data/m".into(),
            ],
        )
        .unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].after, None);
        assert_eq!(s[0].through.as_deref(), Some("s3://b/t/data/c"));
        assert_eq!(s[1].after.as_deref(), Some("s3://b/t/data/c"));
        assert_eq!(s[2].through, None);
        for k in [
            "s3://b/t/a",
            "s3://b/t/data/c",
            "s3://b/t/data/d",
            "s3://b/t/z",
        ] {
            assert_eq!(s.iter().filter(|x| x.contains(k)).count(), 1, "{k}");
        }
        assert!(!s.iter().any(|x| x.contains("s3://b/u/a")));
        assert!(cut("s3://b/t/", vec!["s3://b/u/x".into()]).is_err());
        assert!(cut("s3://b/t/", vec!["s3://b/t/".into()]).is_err());
        assert_eq!(cut("s3://b/t/", vec![]).unwrap().len(), 1);
    }

    #[test]
    fn a_split_takes_its_keys_once_and_in_order() {
        let split = cut("s3://b/t/", vec!["s3://b/t/m".into()]).unwrap()[1].clone();
        let mut t = SplitTally::new(split, "k".into(), "p".into());
        assert!(t.check_in("s3://b/t/a", 1).is_err(), "before the split");
        t.check_in("s3://b/t/n", 1).unwrap();
        assert!(t.check_in("s3://b/t/n", 1).is_err(), "twice");
        assert!(t.check_in("s3://b/t/m0", 1).is_err(), "backwards");
        t.check_in("s3://b/t/z", 1).unwrap();
        assert_eq!(t.result.listed.count, 2);
        t.pending.insert(
            "s3://b/t/z".into(),
            crate::verdict::ListedObject {
                key: "s3://b/t/z".into(),
                size: 1,
                last_modified_ms: 0,
                etag: None,
                version_id: None,
            },
        );
        assert!(t.clone().finish().is_err());
        t.pending.clear();
        let r = SplitResult::from_json(&t.finish().unwrap()).unwrap();
        assert_eq!(r.last_key.as_deref(), Some("s3://b/t/z"));
        assert!(SplitResult::from_json("{}").is_err());
    }
}
