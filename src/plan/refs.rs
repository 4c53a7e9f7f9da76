//! Reference resolution: how a path named in metadata becomes keys of the
//! keep set. A reference is rewritten by the location mappings, made
//! canonical, and spelled every way a reader may resolve it (dot segments,
//! repeated slashes, a default file system); every key inside the table it
//! may name is kept. A blob whose contents the keep set needs must name one
//! object only, and no path may play two roles in the metadata graph.
//!
//! [`References`] holds what the resolution learns on the way: which keys
//! are only one reading of an ambiguous reference, which of those the
//! listing held, the metadata graph's blobs outside the table, and the
//! examples the plan's warnings name. It takes the classifier (the keep set
//! and the table's location) and the mappings as arguments.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::error::{Error, MalformedReason, Result};
use crate::path::{apply_mappings, CanonicalUri, PathMapping, TableLocation};
use crate::reach::{fingerprint, Fingerprint, KeepSet, Source};
use crate::verdict::Classifier;

/// How many examples a warning names of a kind of reference.
const SAMPLES: usize = 5;

/// Examples of references the plan warns about: the smallest few, so the
/// warnings (which the plan's digest seals) do not depend on the order the
/// host answered reads in.
#[derive(Debug, Default)]
struct Samples {
    /// References that may name several keys, with how many.
    ambiguous: BTreeSet<(String, usize)>,
    /// References outside the table.
    external: BTreeSet<String>,
}

/// Adds `item` to `set`, keeping only the `n` smallest.
fn keep_smallest<T: Ord>(set: &mut BTreeSet<T>, item: T, n: usize) {
    set.insert(item);
    if set.len() > n {
        set.pop_last();
    }
}

/// Role name of content files in the metadata graph.
const CONTENT_FILE: &str = "content file";

/// The error for a cycle in the metadata graph: `raw`, named in `blob` as
/// a `role`, is also a `other` of the table.
fn cycle(blob: &str, raw: &str, role: &str, other: &str) -> Error {
    Error::malformed(
        MalformedReason::Inconsistent,
        blob,
        format!(
            "cycle in the metadata graph: `{raw}` is named as a {role} but is also a {other} of this table"
        ),
    )
}

/// `raw`'s key when it needs none of [`References::reference_all`]'s
/// work: `raw` is spelled as the canonical location prefix plus a key
/// [`is_plain`] accepts.
fn plain_key<'a>(cls: &Classifier, maps: &[PathMapping], raw: &'a str) -> Option<&'a str> {
    let rel = cls.location.relative_text(raw)?;
    is_plain(cls, maps, rel).then_some(rel)
}

/// True when the key `rel` (relative to the table) is the only object
/// its reference can name: no location maps are set, and `rel` is a
/// plain key ([`crate::path::is_plain_key`]), its own only spelling and
/// its own loose form (so no loose fingerprint is added, as
/// `reference_all` adds none).
pub(super) fn is_plain(cls: &Classifier, maps: &[PathMapping], rel: &str) -> bool {
    // A location with dot or empty segments has other spellings itself
    // (refused at the start; checked again here, where it would matter).
    maps.is_empty() && cls.location.has_plain_path() && crate::path::is_plain_key(rel)
}

/// Maps a reference: the mapped text, and (when the reference has other
/// spellings and mappings are set) every spelling mapped on its own, so
/// a mapping matches the resolved form (`s3://old/x/../t/p` under a
/// mapping of `s3://old/t`) and nothing is mapped twice.
fn map_reference(maps: &[PathMapping], raw: &str) -> (String, Vec<String>) {
    let mapped = apply_mappings(raw, maps);
    let spelled = match CanonicalUri::parse(raw) {
        Ok(c) if !maps.is_empty() && crate::path::needs_spellings(&c) => crate::path::spellings(&c)
            .iter()
            .map(|s| apply_mappings(&s.to_uri_string(), maps))
            .collect(),
        _ => Vec::new(),
    };
    (mapped, spelled)
}

/// Every URI a mapped reference may name (see [`crate::path::spellings`]);
/// a reference without an authority on `hdfs`/`viewfs` may also mean the
/// table's file system (its default, that of `location`), and the other
/// way round.
fn spellings_of(location: &TableLocation, canon: CanonicalUri) -> Vec<CanonicalUri> {
    let loc = location.canonical();
    let other_fs = canon.scheme == loc.scheme
        && canon.authority != loc.authority
        && (canon.authority.is_empty() || loc.authority.is_empty());
    if !other_fs && !crate::path::needs_spellings(&canon) {
        // The common case: one spelling, no copies.
        return vec![canon];
    }
    let mut all = crate::path::spellings(&canon);
    if other_fs {
        let more: Vec<CanonicalUri> = all
            .iter()
            .map(|c| CanonicalUri {
                authority: loc.authority.clone(),
                ..c.clone()
            })
            .collect();
        for c in more {
            if !all.contains(&c) {
                all.push(c);
            }
        }
    }
    all
}

/// What reference resolution learned: ambiguous references and which of
/// their keys were listed, the metadata graph outside the table, and the
/// examples the plan's warnings name.
#[derive(Debug, Default)]
pub(super) struct References {
    /// Blobs of the metadata graph outside the table, by canonical URI, with
    /// their role (those inside are in the keep set with their reason).
    graph: HashMap<String, &'static str>,
    /// Keys kept only as one of several keys an ambiguous reference may
    /// name, by fingerprint (a reference resolved where the manifest was
    /// read names its key by fingerprint only).
    alt_only: crate::hashing::Map<Fingerprint, String>,
    /// Keys of ambiguous references that may all lie inside the table.
    groups: BTreeSet<Vec<String>>,
    /// Every key of an ambiguous reference.
    group_members: HashSet<String>,
    /// Keys of ambiguous references that the listing held.
    listed_members: crate::hashing::Set<String>,
    /// Listed keys referenced in their own right.
    matched: u64,
    /// Listed keys that are only alternatives of ambiguous references.
    matched_alt: u64,
    /// References that may name more than one key.
    ambiguous: u64,
    /// References outside the table (never deletable, not listed).
    external: u64,
    /// The references the plan's warnings name as examples.
    samples: Samples,
}

impl References {
    /// Canonicalises a path from metadata (`raw`, named in `blob`) and
    /// records it in `cls`'s keep set, after `maps`.
    pub(super) fn reference(
        &mut self,
        cls: &mut Classifier,
        maps: &[PathMapping],
        blob: &str,
        raw: &str,
        source: Source,
    ) -> Result<()> {
        if let Some(rel) = plain_key(cls, maps, raw) {
            return self.keep_plain(cls, blob, raw, rel, source);
        }
        let (mapped, spelled) = map_reference(maps, raw);
        self.reference_all(cls, blob, raw, &mapped, &spelled, source)
            .map(|_| ())
    }

    /// Keeps `rel`, a key [`is_plain`] accepts, named as `raw` in `blob`:
    /// the common case, with exactly the effects `reference_all` has on it
    /// (one spelling, inside the table, its own loose form).
    pub(super) fn keep_plain(
        &mut self,
        cls: &mut Classifier,
        blob: &str,
        raw: &str,
        rel: &str,
        source: Source,
    ) -> Result<()> {
        self.check_graph(&cls.keep, blob, raw, &[rel], &[], &source)?;
        cls.keep.insert(rel, source);
        if !self.alt_only.is_empty() {
            self.no_longer_alt_only(fingerprint(rel));
        }
        Ok(())
    }

    /// [`References::keep_plain`] for a plain key known by its
    /// fingerprint `fp` only (resolved where its manifest was read, see
    /// [`crate::plan::manifest_digest`]); `raw` names it in messages.
    pub(super) fn keep_plain_fingerprint(
        &mut self,
        cls: &mut Classifier,
        blob: &str,
        raw: &str,
        fp: Fingerprint,
        source: Source,
    ) -> Result<()> {
        self.check_graph_role(blob, raw, cls.keep.lookup_fingerprint(fp), &source)?;
        cls.keep.insert_fingerprint(fp, source);
        if !self.alt_only.is_empty() {
            self.no_longer_alt_only(fp);
        }
        Ok(())
    }

    /// Whether a plain reference may be kept by [`KeepSet::defer`]: while
    /// no reference was ambiguous, no key is kept as an alternative
    /// reading only, so a plain reference changes nothing here but its
    /// key, and its graph role is checked when the key is merged.
    pub(super) fn may_defer(&self) -> bool {
        self.ambiguous == 0 && self.alt_only.is_empty()
    }

    /// The fingerprint of the key `raw` names when it is a plain key and
    /// [`References::may_defer`] (see [`KeepSet::defer`]); `None` when it
    /// must be referenced.
    pub(super) fn deferrable(
        &self,
        cls: &Classifier,
        maps: &[PathMapping],
        raw: &str,
    ) -> Option<Fingerprint> {
        if !self.may_defer() {
            return None;
        }
        plain_key(cls, maps, raw).map(fingerprint)
    }

    /// A key kept as an alternative reading only is referenced in its own
    /// right now: counted like any key.
    fn no_longer_alt_only(&mut self, fp: Fingerprint) {
        if let Some(rel) = self.alt_only.remove(&fp) {
            if self.listed_members.contains(&rel) {
                self.matched += 1;
                self.matched_alt = self.matched_alt.saturating_sub(1);
            }
        }
    }

    /// Records a path that is already mapped (the pointer: mapping it twice
    /// would break mappings whose target lies under their source).
    pub(super) fn reference_mapped(
        &mut self,
        cls: &mut Classifier,
        blob: &str,
        raw: &str,
        mapped: &str,
        source: Source,
    ) -> Result<()> {
        self.reference_all(cls, blob, raw, mapped, &[], source)
            .map(|_| ())
    }

    /// Records a reference to a blob the keep set needs the contents of
    /// (manifest list, manifest, checkpoint metadata) and returns the one
    /// canonical URI to read. A path readers may resolve to different
    /// objects is refused: which contents to walk would be a guess.
    pub(super) fn reference_blob(
        &mut self,
        cls: &mut Classifier,
        maps: &[PathMapping],
        blob: &str,
        raw: &str,
        source: Source,
    ) -> Result<String> {
        let (mapped, spelled) = map_reference(maps, raw);
        let all = self.reference_all(cls, blob, raw, &mapped, &spelled, source)?;
        match all.as_slice() {
            [one] => Ok(one.to_uri_string()),
            many => Err(Error::malformed(MalformedReason::Path,
                blob,
                format!(
                    "path `{raw}` names {} different objects depending on the reader ({}): ambiguous, refused",
                    many.len(),
                    many.iter()
                        .map(CanonicalUri::to_uri_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Canonicalises a mapped path, refuses cycles in the metadata graph,
    /// and keeps every key inside the table the path may name. `spelled`,
    /// when not empty, holds the reference's spellings mapped one by one
    /// (see [`map_reference`]) and replaces `mapped`. Returns every
    /// URI it may name.
    fn reference_all(
        &mut self,
        cls: &mut Classifier,
        blob: &str,
        raw: &str,
        mapped: &str,
        spelled: &[String],
        source: Source,
    ) -> Result<Vec<CanonicalUri>> {
        let canon = CanonicalUri::parse(mapped).map_err(|e| {
            Error::malformed(MalformedReason::Path, blob, format!("path `{raw}`: {e}"))
        })?;
        let mut all: Vec<CanonicalUri> = Vec::new();
        for s in spelled {
            if let Ok(c) = CanonicalUri::parse(s) {
                for x in spellings_of(&cls.location, c) {
                    if !all.contains(&x) {
                        all.push(x);
                    }
                }
            }
        }
        if all.is_empty() {
            all = spellings_of(&cls.location, canon);
        }
        // Per spelling: its key inside the table, if any.
        let mut inside: Vec<String> = Vec::with_capacity(1);
        let mut outside: Vec<&CanonicalUri> = Vec::new();
        let mut loose: Vec<String> = Vec::with_capacity(1);
        for c in &all {
            match cls.key_of(c) {
                Some(rel) => {
                    if !inside.contains(&rel) {
                        inside.push(rel);
                    }
                }
                None => outside.push(c),
            }
            if let Some(l) = cls.loose_key_of(c) {
                loose.push(l);
            }
        }
        if all.len() > 1 && cls.keep.has_deferred() {
            // Whether each key is new must be known exactly from here on
            // (see `may_defer`): the deferred keys are merged first.
            cls.keep.settle()?;
        }
        for l in &loose {
            // A loose form equal to a canonical key is in the keep set already.
            if !inside.contains(l) {
                cls.keep.insert_loose(l);
            }
        }
        self.check_graph(&cls.keep, blob, raw, &inside, &outside, &source)?;
        let external = !outside.is_empty();
        let plain = all.len() == 1;
        for rel in &inside {
            let new = cls.keep.insert(rel, source.clone());
            if plain {
                if !self.alt_only.is_empty() {
                    self.no_longer_alt_only(fingerprint(rel));
                }
            } else {
                if new {
                    self.alt_only.insert(fingerprint(rel), rel.clone());
                }
                self.group_members.insert(rel.clone());
            }
        }
        if !plain {
            if !external {
                let mut g = inside.clone();
                g.sort();
                self.groups.insert(g);
            }
            self.ambiguous += 1;
            keep_smallest(
                &mut self.samples.ambiguous,
                (raw.to_owned(), all.len()),
                SAMPLES,
            );
        }
        if inside.is_empty() {
            self.external += 1;
            keep_smallest(&mut self.samples.external, all[0].to_uri_string(), SAMPLES);
        }
        Ok(all)
    }

    /// Refuses a cycle in the metadata graph: a path named in one role
    /// (metadata file, manifest list, manifest, content file) that is already
    /// known in another. Keys inside the table are checked against the keep
    /// set's reasons, blobs outside it against the blobs seen so far.
    fn check_graph(
        &mut self,
        keep: &KeepSet,
        blob: &str,
        raw: &str,
        inside: &[impl AsRef<str>],
        outside: &[&CanonicalUri],
        source: &Source,
    ) -> Result<()> {
        let Some(role) = source.graph_role() else {
            return Ok(());
        };
        for rel in inside {
            self.check_graph_role(blob, raw, keep.lookup(rel.as_ref()), source)?;
        }
        for c in outside {
            let uri = c.to_uri_string();
            match self.graph.get(&uri) {
                Some(other) if *other != role => return Err(cycle(blob, raw, role, other)),
                Some(_) => {}
                None if role != CONTENT_FILE => {
                    self.graph.insert(uri, role);
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Refuses `raw` (named in `blob` with `source`) when the key it names
    /// is known (`known`, its smallest reason) in another graph role.
    fn check_graph_role(
        &self,
        blob: &str,
        raw: &str,
        known: Option<&Source>,
        source: &Source,
    ) -> Result<()> {
        match (source.graph_role(), known.and_then(Source::graph_role)) {
            (Some(role), Some(other)) if other != role => Err(cycle(blob, raw, role, other)),
            _ => Ok(()),
        }
    }

    /// A key the keep set references (`rel`, not the version hint) was
    /// listed: counted as matched, or as an alternative reading only, and
    /// as a listed member of its ambiguous references.
    pub(super) fn listed(&mut self, rel: &str) {
        if !self.alt_only.is_empty() && self.alt_only.contains_key(&fingerprint(rel)) {
            self.matched_alt += 1;
        } else {
            self.matched += 1;
        }
        if self.group_members.contains(rel) {
            self.listed_members.insert(rel.to_owned());
        }
    }

    /// The keys of ambiguous references, sorted: those kept only as one
    /// reading, and every member (what a split's worker needs to count
    /// listed references as [`References::listed`] does).
    pub(super) fn ambiguous_keys(&self) -> (Vec<String>, Vec<String>) {
        let mut alt: Vec<String> = self.alt_only.values().cloned().collect();
        let mut members: Vec<String> = self.group_members.iter().cloned().collect();
        alt.sort_unstable();
        members.sort_unstable();
        (alt, members)
    }

    /// Adds what a listing split counted of the referenced keys it listed
    /// (see [`References::listed`]).
    pub(super) fn listed_in_split(&mut self, r: crate::split::ListedReferences) {
        self.matched = self.matched.saturating_add(r.matched);
        self.matched_alt = self.matched_alt.saturating_add(r.matched_alt);
        for k in r.members {
            if self.group_members.contains(&k) {
                self.listed_members.insert(k);
            }
        }
    }

    /// Whether no referenced key was listed at all (not even an
    /// alternative reading of an ambiguous reference).
    pub(super) fn none_listed(&self) -> bool {
        self.matched + self.matched_alt == 0
    }

    /// Of `referenced_keys` (the keep set's size), the references the
    /// listing did not hold. A key kept only as one reading of an ambiguous
    /// reference is not missing when another reading was listed: count
    /// references, not keys.
    pub(super) fn not_listed(&self, referenced_keys: u64) -> u64 {
        let unlisted_groups = self
            .groups
            .iter()
            .filter(|g| !g.iter().any(|k| self.listed_members.contains(k)))
            .count() as u64;
        referenced_keys
            .saturating_sub(self.alt_only.len() as u64)
            .saturating_sub(self.matched)
            + unlisted_groups
    }

    /// References outside the table.
    pub(super) fn external(&self) -> u64 {
        self.external
    }

    /// The warnings naming example references: ambiguous ones and those
    /// outside the table.
    pub(super) fn warnings(&self) -> impl Iterator<Item = String> + '_ {
        let ambiguous = self.samples.ambiguous.iter().map(|(raw, n)| {
            format!(
                "reference `{raw}` may name {n} keys depending on the reader (dot segments, repeated slashes, a default file system): every one inside the table is kept"
            )
        });
        let external = self
            .samples
            .external
            .iter()
            .map(|uri| format!("external reference kept and never deleted: {uri}"));
        ambiguous.chain(external)
    }
}
