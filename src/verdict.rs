//! Per-object verdicts: what the planner says about one listed object, and
//! the classifier shared by the session and the stateless page mode.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::duration::push_human_ms;
use crate::error::ProtocolReason;
use crate::error::{Error, Result, UnsafeReason};
use crate::path::{apply_mappings, is_plain_key, CanonicalUri, PathMapping, TableLocation};
use crate::reach::KeepSet;

/// One object of a listing page, as the store reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedObject {
    /// Full URI of the object (`s3://bucket/t/data/x.parquet`, `file:///t/x`).
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// Last-modified time, milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
    /// Entity tag, where the store gives one.
    pub etag: Option<String>,
    /// Object version id, in versioned buckets.
    pub version_id: Option<String>,
}

impl ListedObject {
    /// A listing page from its JSON form: an array of objects with this
    /// type's fields (`key`, `size`, `lastModifiedMs`, optional `etag` and
    /// `versionId`). Hosts in languages where the component's records are
    /// costly pass pages this way. Fails (protocol: bad-input) for text
    /// that is not such an array.
    pub fn page_from_json(page: &[u8]) -> Result<Vec<ListedObject>> {
        let objects: Vec<JsonObject> = serde_json::from_slice(page).map_err(|e| {
            Error::protocol(
                ProtocolReason::BadInput,
                format!("a listing page in JSON must be an array of {{key, size, lastModifiedMs, etag?, versionId?}}: {e}"),
            )
        })?;
        Ok(objects
            .into_iter()
            .map(|o| ListedObject {
                key: o.key,
                size: o.size,
                last_modified_ms: o.last_modified_ms,
                etag: o.etag,
                version_id: o.version_id,
            })
            .collect())
    }
}

/// A listed object as a JSON page spells it: any other field (a misspelt
/// `eTag` would otherwise drop the version a plan pins) is refused.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JsonObject {
    key: String,
    size: u64,
    last_modified_ms: i64,
    #[serde(default)]
    etag: Option<String>,
    #[serde(default)]
    version_id: Option<String>,
}

impl Decision {
    /// Decisions as one JSON array (each with this type's fields, in
    /// camelCase), for hosts that take them in bulk.
    pub fn list_to_json(decisions: &[Decision]) -> Vec<u8> {
        serde_json::to_vec(decisions).expect("decisions serialize")
    }
}

/// The verdict on one listed object. Every verdict but [`Verdict::Candidate`] keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Referenced by a snapshot or a table-level role; the detail says by what.
    Referenced,
    /// Not referenced, but equal to a referenced path up to percent-encoding,
    /// letter case or doubled slashes: kept and reported, never deleted.
    NearMiss,
    /// Younger than the file-retention window (or dated in the future).
    Young,
    /// A path component starts with `_` or `.` (and is not a partition directory).
    Hidden,
    /// A metadata file whose owner could not be established (unreadable or vanished): kept.
    Unverified,
    /// Page mode only: an unreferenced `*.metadata.json`; the host must read
    /// it and settle it with the page classifier before anything is deleted.
    OwnerCheck,
    /// Unreferenced, but under a legal hold or a writer's staging prefix
    /// (from the run's context): kept.
    Protected,
    /// Unreferenced and old enough: a delete candidate.
    Candidate,
    /// Was a candidate, became referenced when the table was re-checked.
    Demoted,
    /// A Delta log entry (commit, checkpoint, checksum) that log retention
    /// allows removing; only with log cleanup enabled. Deleted like a candidate.
    ExpiredLog,
    /// Unreferenced, but the key holds control characters or a `.`/`..`
    /// segment: hosts cannot print, address or delete it reliably. Kept.
    Unaddressable,
    /// A key ending in `/`: a folder marker (zero-byte object that stores
    /// and tools write for a "directory"), or the slash twin of a file's key.
    /// No table references such a key; it is kept and named, so it never
    /// churns as a candidate nor merges with its twin.
    FolderMarker,
    /// Under a prefix another table owns (its location or a write root, from
    /// the ownership map of a many-table run): kept, whatever else holds.
    Foreign,
}

impl Verdict {
    /// Stable kebab-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Referenced => "referenced",
            Verdict::NearMiss => "near-miss",
            Verdict::Young => "young",
            Verdict::Hidden => "hidden",
            Verdict::Unverified => "unverified",
            Verdict::OwnerCheck => "owner-check",
            Verdict::Protected => "protected",
            Verdict::Candidate => "candidate",
            Verdict::Demoted => "demoted",
            Verdict::ExpiredLog => "expired-log",
            Verdict::Unaddressable => "unaddressable",
            Verdict::FolderMarker => "folder-marker",
            Verdict::Foreign => "foreign",
        }
    }
}

/// A verdict on one object, with the evidence it was judged on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// Full URI, as listed.
    pub key: String,
    /// Key relative to the table location (canonical).
    pub relative_key: String,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in words (which snapshot or manifest references it, how young it is).
    pub detail: String,
    /// Size in bytes, as listed.
    pub size: u64,
    /// Last-modified time as listed, milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
    /// Entity tag as listed (the apply step deletes only this version).
    pub etag: Option<String>,
    /// Version id as listed, in versioned buckets.
    pub version_id: Option<String>,
}

/// What the classifier finds for one listed key, before a [`Decision`] is
/// assembled around it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Finding<'a> {
    /// The canonical key (borrowed from the listed key when it is plain).
    pub(crate) rel: Cow<'a, str>,
    /// The verdict.
    pub(crate) verdict: Verdict,
    /// Why, in words.
    pub(crate) why: Cow<'a, str>,
    /// For a referenced key found without parsing, the keep set's id of
    /// its source: equal ids give equal reasons.
    pub(crate) source: Option<u32>,
}

/// Name of the file-system catalog pointer, relative to the location.
pub const VERSION_HINT: &str = "metadata/version-hint.text";

/// Everything needed to judge a listed object once the keep set is complete.
#[derive(Debug, Clone)]
pub struct Classifier {
    pub(crate) location: TableLocation,
    pub(crate) keep: KeepSet,
    pub(crate) now_ms: i64,
    pub(crate) file_retention_ms: i64,
    pub(crate) partition_names: BTreeSet<String>,
    pub(crate) table_uuid: Option<String>,
    pub(crate) mappings: Vec<PathMapping>,
    /// Hold prefixes and writers' staging prefixes (never swept).
    pub(crate) protections: crate::Context,
    /// The table format (hidden-path and log rules differ).
    pub(crate) format: crate::format::TableFormat,
    /// Delta log entries log retention allows removing: relative key -> why.
    pub(crate) expired_log: BTreeMap<String, String>,
    /// Prefixes kept whole whatever their age: (relative prefix, why).
    pub(crate) reserved: Vec<(String, String)>,
    /// Iceberg: data and metadata roots outside the location that the table
    /// writes to (`write.data.path`, ...). Their objects are listed and
    /// judged too; their keys are absolute canonical URIs (a table-relative
    /// key never holds `://`: such a key is kept as unaddressable).
    pub(crate) roots: Vec<TableLocation>,
    /// Prefixes other tables own inside the location or a root, in the key
    /// namespace of [`Classifier::key_of`] (each ends with `/`), with their
    /// loose forms and whose they are. Keys under them are `foreign`.
    pub(crate) owners: Vec<OwnedPrefix>,
}

/// A prefix of the swept keys that another table owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OwnedPrefix {
    /// The prefix as a key of this sweep (relative, or absolute under
    /// another root), ending with `/`.
    pub(crate) prefix: String,
    /// The same in loose form (case, encoding, doubled slashes), so a
    /// near-spelling of the prefix is kept too.
    pub(crate) loose: String,
    /// Whose it is and what it is to them, in words.
    pub(crate) owner: String,
}

/// Outcome of classifying one object before any owner check.
pub(crate) enum Judged {
    Final(Decision),
    NeedsOwner { decision: Decision },
}

impl Classifier {
    fn decision(obj: &ListedObject, rel: &str, verdict: Verdict, detail: String) -> Decision {
        Decision {
            key: obj.key.clone(),
            relative_key: rel.to_owned(),
            verdict,
            detail,
            size: obj.size,
            last_modified_ms: obj.last_modified_ms,
            etag: obj.etag.clone(),
            version_id: obj.version_id.clone(),
        }
    }

    /// The key a URI has in this sweep: relative to the table location, or
    /// (under one of the table's other roots) the absolute canonical URI.
    /// `None`: outside every root.
    pub(crate) fn key_of(&self, uri: &CanonicalUri) -> Option<String> {
        if let Some(rel) = self.location.relative(uri) {
            return Some(rel.to_owned());
        }
        self.roots
            .iter()
            .any(|r| r.relative(uri).is_some())
            .then(|| uri.to_uri_string())
    }

    /// The loose (near-miss) form of a URI's key, in the same namespaces as
    /// [`Classifier::key_of`]: other roots' loose keys carry the root's URI.
    pub(crate) fn loose_key_of(&self, uri: &CanonicalUri) -> Option<String> {
        if let Some(l) = self.location.loose_relative(uri) {
            return Some(l);
        }
        self.roots.iter().find_map(|r| {
            r.relative(uri)?;
            r.loose_relative(uri).map(|l| format!("{}{l}", r.prefix()))
        })
    }

    /// The part of a key below its root (the key itself for table keys).
    pub(crate) fn inner<'a>(&self, key: &'a str) -> &'a str {
        if !crate::path::holds_scheme_separator(key) {
            return key;
        }
        self.roots
            .iter()
            .find_map(|r| key.strip_prefix(r.prefix().as_str()))
            .map(|rest| &key[key.len() - rest.len()..])
            .unwrap_or(key)
    }

    /// Canonical key of a listed object (see [`Classifier::key_of`]); outside
    /// the table and its roots is a host error.
    pub(crate) fn relative_key(&self, key: &str) -> Result<(CanonicalUri, String)> {
        let uri = CanonicalUri::parse(key).map_err(|e| {
            Error::protocol(
                ProtocolReason::BadKey,
                format!("listed key `{key}` is not a URI: {e}"),
            )
        })?;
        match self.key_of(&uri) {
            Some(rel) => Ok((uri, rel)),
            None => Err(Error::protocol(
                ProtocolReason::BadKey,
                format!(
                    "listed key `{key}` is not under the table location `{}`",
                    self.location.prefix()
                ),
            )),
        }
    }

    /// Judges one object. Unreferenced metadata JSON files need an owner check.
    pub(crate) fn judge(&self, obj: ListedObject) -> Result<Judged> {
        let f = self.find(&obj.key, obj.size, obj.last_modified_ms)?;
        let (verdict, relative_key, detail) = (f.verdict, f.rel.into_owned(), f.why.into_owned());
        // The listed strings are moved into the decision.
        let decision = Decision {
            relative_key,
            verdict,
            detail,
            size: obj.size,
            last_modified_ms: obj.last_modified_ms,
            key: obj.key,
            etag: obj.etag,
            version_id: obj.version_id,
        };
        Ok(if verdict == Verdict::OwnerCheck {
            Judged::NeedsOwner { decision }
        } else {
            Judged::Final(decision)
        })
    }

    /// What [`Classifier::judge`] finds for the object listed as `key`
    /// (`size` bytes, modified at `modified_ms`), without the decision
    /// around it. Most keys are spelled as the canonical prefix plus a
    /// plain key (see [`crate::path::is_plain_key`]): judged without
    /// parsing, as the key the parse would give
    /// (`TableLocation::relative_text`) and its own loose form (both
    /// properties are tested in `path`). Fails (protocol) for a key outside
    /// the table and its roots.
    pub(crate) fn find<'a>(
        &'a self,
        key: &'a str,
        size: u64,
        modified_ms: i64,
    ) -> Result<Finding<'a>> {
        if let Some(rel) = self.location.relative_text(key) {
            let fp = match self.keep.reason_or_fingerprint(rel) {
                Ok((source, why)) => {
                    return Ok(Finding {
                        rel: Cow::Borrowed(rel),
                        verdict: Verdict::Referenced,
                        why: Cow::Borrowed(why),
                        source: Some(source),
                    })
                }
                Err(fp) => fp,
            };
            if is_plain_key(rel) {
                // Not referenced (just asked): judged without asking again.
                // A plain key is its own loose form, and no referenced
                // key equals it: only a loose form of a referenced key
                // spelled otherwise can match it.
                let (verdict, why) =
                    self.unreferenced_key_finding(key, rel, size, modified_ms, || {
                        self.keep.in_loose_forms_only(fp)
                    })?;
                return Ok(Finding {
                    rel: Cow::Borrowed(rel),
                    verdict,
                    why: Cow::Owned(why),
                    source: None,
                });
            }
        }
        self.find_parsed(key, size, modified_ms)
    }

    /// [`Classifier::find`] on the parsed key: for any spelling.
    fn find_parsed<'a>(&'a self, key: &str, size: u64, modified_ms: i64) -> Result<Finding<'a>> {
        let (uri, rel) = self.relative_key(key)?;
        let (verdict, why) = self.finding(key, &rel, size, modified_ms, || {
            self.loose_key_of(&uri)
                .is_some_and(|l| self.keep.contains_loose(&l))
        })?;
        Ok(Finding {
            rel: Cow::Owned(rel),
            verdict,
            why: Cow::Owned(why),
            source: None,
        })
    }

    /// The verdict on the object listed as `key` (`size` bytes, modified at
    /// `modified_ms`), whose canonical key is `rel`, and why: everything
    /// [`Classifier::judge`] decides, without the decision around it.
    /// `near_miss` answers, when asked, whether the key's loose form (see
    /// [`Classifier::loose_key_of`]) is a referenced path's. [`Verdict::OwnerCheck`] for an
    /// unreferenced metadata JSON file.
    pub(crate) fn finding(
        &self,
        key: &str,
        rel: &str,
        size: u64,
        modified_ms: i64,
        near_miss: impl FnOnce() -> bool,
    ) -> Result<(Verdict, String)> {
        if let Some(why) = self.keep.reason(rel) {
            return Ok((Verdict::Referenced, why.to_owned()));
        }
        self.unreferenced_key_finding(key, rel, size, modified_ms, near_miss)
    }

    /// [`Classifier::finding`] for a key the keep set does not reference.
    fn unreferenced_key_finding(
        &self,
        key: &str,
        rel: &str,
        size: u64,
        modified_ms: i64,
        near_miss: impl FnOnce() -> bool,
    ) -> Result<(Verdict, String)> {
        if rel == VERSION_HINT && self.format == crate::format::TableFormat::Iceberg {
            return Ok((
                Verdict::Referenced,
                crate::reach::Source::VersionHint.describe(),
            ));
        }
        if let Some(o) = self.owner_of(rel) {
            return Ok((
                Verdict::Foreign,
                format!("under `{}`, which {}: kept", o.prefix, o.owner),
            ));
        }
        let names_scheme = crate::path::holds_scheme_separator(rel);
        // The part below its root (the key itself for a table key: one
        // without `://`), found once for every rule below.
        let inner = if names_scheme { self.inner(rel) } else { rel };
        let external = inner.len() < rel.len();
        if let Some((at, what)) = self.table_marker(inner, !external) {
            let root = &rel[..rel.len() - inner.len() + at];
            let detail = if root.is_empty() {
                format!(
                    "`{key}` is {what} at the table's own root: the table is written in two formats (Delta UniForm, or converted in place), and one format's plan would call files only the other's log names garbage. Nothing is deleted: plan it as the format whose log is its source of truth"
                )
            } else {
                format!(
                    "`{key}` is {what}: another table lives at `{}{root}`, inside the table swept here. A prefix belongs to one table: nothing is deleted. Move that table out, or plan this one in a many-table run whose catalog records the other (its prefix is then kept)",
                    if external { String::new() } else { self.location.prefix() },
                )
            };
            return Err(Error::unsafe_(UnsafeReason::ForeignTable, detail));
        }
        if !external && names_scheme {
            return Ok((
                Verdict::Unaddressable,
                "key relative to the table holds `://`: kept, it would read as another location's URI".into(),
            ));
        }
        if rel.ends_with('/') {
            return Ok((
                Verdict::FolderMarker,
                format!(
                    "folder marker ({size} bytes): a key ending in `/` that no table references; kept"
                ),
            ));
        }
        if let Some(why) = crate::path::unaddressable(key, inner) {
            return Ok((Verdict::Unaddressable, why));
        }
        if near_miss() {
            return Ok((
                Verdict::NearMiss,
                "equals a referenced path up to percent-encoding, letter case or doubled slashes"
                    .into(),
            ));
        }
        if self.format == crate::format::TableFormat::Delta {
            if let Some(found) = self.delta_log_finding(rel) {
                return Ok(found);
            }
        }
        if let Some((_, why)) = self
            .reserved
            .iter()
            .find(|(p, _)| rel.starts_with(p.as_str()))
        {
            return Ok((Verdict::Hidden, why.clone()));
        }
        if crate::spec::metadata_file::is_metadata_document(rel) {
            return Ok((
                Verdict::OwnerCheck,
                "unreferenced table metadata file: owner must be checked".into(),
            ));
        }
        Ok(self.unreferenced_finding(rel, inner, modified_ms))
    }

    /// The other table that owns `rel`'s prefix, if any (exactly, or up to
    /// case, encoding and doubled slashes).
    fn owner_of(&self, rel: &str) -> Option<&OwnedPrefix> {
        if self.owners.is_empty() {
            return None;
        }
        if let Some(o) = self.owners.iter().find(|o| rel.starts_with(&o.prefix)) {
            return Some(o);
        }
        let l = crate::path::loose(rel);
        self.owners.iter().find(|o| l.starts_with(&o.loose))
    }

    /// Where in `inner` (a key below its root; `own_root`: below the
    /// table location itself) another table's marker begins, and what it
    /// is: a Delta log folder (but the Delta table's own, at its root), a
    /// Hudi timeline, a Hadoop-catalog version hint (but the Iceberg
    /// table's own), or in a Delta table any Iceberg metadata document.
    /// The offset is where that table's root ends in `inner`.
    fn table_marker(&self, inner: &str, own_root: bool) -> Option<(usize, &'static str)> {
        use crate::format::TableFormat::{Delta, Iceberg};
        let b = inner.as_bytes();
        // Cheap first: none of the markers' telling bytes, no marker.
        let delta_json =
            self.format == Delta && crate::spec::metadata_file::is_metadata_document(inner);
        let hint = inner.ends_with("version-hint.text");
        if !delta_json && !hint && !b.windows(6).any(|w| w == b"_delta" || w == b".hoodi") {
            return None;
        }
        let mut start = 0;
        for seg in inner.split('/') {
            let end = start + seg.len();
            let is_dir = end < inner.len();
            if is_dir && seg == "_delta_log" && !(own_root && start == 0 && self.format == Delta) {
                return Some((start, "a Delta table's transaction log (`_delta_log/`)"));
            }
            if is_dir && seg == ".hoodie" {
                return Some((start, "a Hudi table's timeline (`.hoodie/`)"));
            }
            start = end + 1;
        }
        // A Delta UniForm table's own Iceberg metadata lies in its reserved
        // `metadata/` prefix: that is the table's, not another's.
        if own_root
            && self
                .reserved
                .iter()
                .any(|(p, _)| inner.starts_with(p.as_str()))
        {
            return None;
        }
        let parent = |name_len: usize| {
            let dir = &inner[..inner.len() - name_len];
            // A metadata document's table is the folder above `metadata/`.
            dir.strip_suffix("metadata/").map_or(dir.len(), str::len)
        };
        let is_hint = inner == VERSION_HINT || inner.ends_with("/metadata/version-hint.text");
        let own_hint = own_root && self.format == Iceberg && inner == VERSION_HINT;
        if hint && is_hint && !own_hint {
            return Some((
                parent("version-hint.text".len()),
                "a Hadoop-catalog Iceberg table's version hint",
            ));
        }
        if delta_json {
            let name = inner.rsplit('/').next().unwrap_or(inner);
            return Some((parent(name.len()), "an Iceberg table's metadata document"));
        }
        None
    }

    /// Everything under `_delta_log/` is kept unless log retention expired it.
    fn delta_log_finding(&self, rel: &str) -> Option<(Verdict, String)> {
        if !rel.starts_with("_delta_log/") {
            return None;
        }
        if let Some(why) = self.protections.protects(rel) {
            return Some((Verdict::Protected, why));
        }
        Some(match self.expired_log.get(rel) {
            Some(why) => (Verdict::ExpiredLog, why.clone()),
            None => (
                Verdict::Hidden,
                "Delta transaction log: kept (log retention is planned separately, with log cleanup)"
                    .into(),
            ),
        })
    }

    /// Verdict for an unreferenced object: young, hidden or candidate.
    pub(crate) fn unreferenced(&self, obj: &ListedObject, rel: &str) -> Decision {
        let (verdict, detail) =
            self.unreferenced_finding(rel, self.inner(rel), obj.last_modified_ms);
        Self::decision(obj, rel, verdict, detail)
    }

    /// [`Classifier::unreferenced`]'s verdict and reason; `inner` is
    /// [`Classifier::inner`] of `rel`.
    fn unreferenced_finding(&self, rel: &str, inner: &str, modified_ms: i64) -> (Verdict, String) {
        if let Some(why) = self.protections.protects(rel) {
            return (Verdict::Protected, why);
        }
        let age = self.now_ms.saturating_sub(modified_ms);
        // The reasons are appended piece by piece: one per listed piece of
        // garbage, where `format!` cost more than the verdict (see
        // `push_human_ms`).
        let mut why = String::with_capacity(112);
        if age < 0 {
            why.push_str("modified ");
            push_human_ms(&mut why, age.saturating_neg());
            why.push_str(" in the future");
            return (Verdict::Young, why);
        }
        if age < self.file_retention_ms {
            why.push_str("modified ");
            push_human_ms(&mut why, age);
            why.push_str(" ago; file retention is ");
            push_human_ms(&mut why, self.file_retention_ms);
            return (Verdict::Young, why);
        }
        if let Some(hidden) = self.hidden_component(inner) {
            return (Verdict::Hidden, hidden);
        }
        why.push_str("referenced by no snapshot, no metadata and no table-level role; modified ");
        push_human_ms(&mut why, age);
        why.push_str(" ago (retention ");
        push_human_ms(&mut why, self.file_retention_ms);
        why.push(')');
        (Verdict::Candidate, why)
    }

    fn hidden_component(&self, rel: &str) -> Option<String> {
        // Segments split on bytes (`/` is one byte in UTF-8, never inside
        // another character): a string searcher costs most in wasm.
        let mut parts = rel.as_bytes().split(|&c| c == b'/').enumerate().peekable();
        let mut start = 0;
        while let Some((i, part)) = parts.next() {
            let comp = &rel[start..start + part.len()];
            start += part.len() + 1;
            if !matches!(part.first(), Some(b'_' | b'.')) {
                continue;
            }
            let is_dir = parts.peek().is_some();
            // Delta's change-data folder is swept like data (VACUUM does too).
            if i == 0
                && comp == "_change_data"
                && is_dir
                && self.format == crate::format::TableFormat::Delta
            {
                continue;
            }
            if is_dir {
                if let Some((name, _)) = comp.split_once('=') {
                    if self.partition_names.contains(name) {
                        continue;
                    }
                }
            }
            return Some(format!(
                "hidden path component `{comp}` (starts with `{}`)",
                &comp[..1]
            ));
        }
        None
    }

    /// Settles an owner check with the metadata file's bytes (`None`: it vanished).
    pub(crate) fn settle_owner(
        &self,
        obj: &ListedObject,
        rel: &str,
        bytes: Option<&[u8]>,
    ) -> Result<Decision> {
        let Some(bytes) = bytes else {
            return Ok(Self::decision(
                obj,
                rel,
                Verdict::Unverified,
                "metadata file vanished before its owner could be checked".into(),
            ));
        };
        let (uuid, loc) = match crate::spec::iceberg::TableMetadata::probe_owner(&obj.key, bytes) {
            Ok(p) => p,
            Err(e) => {
                return Ok(Self::decision(
                    obj,
                    rel,
                    Verdict::Unverified,
                    format!("owner unknown, kept: {e}"),
                ));
            }
        };
        let foreign = |what: String| {
            Err(Error::unsafe_(
                UnsafeReason::ForeignTable,
                format!("`{}` belongs to another table ({what}); the location is shared, nothing can be deleted safely", obj.key),
            ))
        };
        match (&self.table_uuid, &uuid) {
            (Some(ours), Some(theirs)) if ours != theirs => {
                return foreign(format!("table-uuid {theirs}, ours is {ours}"))
            }
            (Some(_), Some(_)) => {}
            _ => {
                let theirs = loc
                    .as_deref()
                    .map(|l| apply_mappings(l, &self.mappings))
                    .and_then(|l| TableLocation::parse(&l).ok());
                match theirs {
                    Some(l) if l == self.location => {}
                    Some(l) => return foreign(format!("location {}", l.as_uri())),
                    None => {
                        return Ok(Self::decision(
                            obj,
                            rel,
                            Verdict::Unverified,
                            "metadata file names no table-uuid or location; owner unknown, kept"
                                .into(),
                        ))
                    }
                }
            }
        }
        let mut d = self.unreferenced(obj, rel);
        if d.verdict == Verdict::Candidate {
            d.detail = format!("metadata file of this table that no commit references (failed or superseded commit); {}", d.detail);
        }
        Ok(d)
    }
}

/// The broad kind of an object, for reporting reclaimable bytes.
pub fn object_kind(rel: &str) -> &'static str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if rel.starts_with("_delta_log/") {
        "delta-log"
    } else if name.starts_with("deletion_vector_") && name.ends_with(".bin") {
        "deletion-vector"
    } else if crate::spec::metadata_file::is_metadata_document(name) {
        "metadata-json"
    } else if rel.starts_with("metadata/") && name.ends_with(".avro") {
        "manifest"
    } else if name.ends_with(".puffin") || name.ends_with(".stats") {
        "statistics"
    } else if name.ends_with(".parquet") || name.ends_with(".orc") || name.ends_with(".avro") {
        "data"
    } else {
        "other"
    }
}

/// Count and bytes of a class of objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// Number of objects.
    pub count: u64,
    /// Their total size in bytes.
    pub bytes: u64,
}

impl Tally {
    /// Counts one more object of `size` bytes.
    pub(crate) fn add(&mut self, size: u64) {
        self.count = self.count.saturating_add(1);
        self.bytes = self.bytes.saturating_add(size);
    }

    /// Takes back one object of `size` bytes.
    pub(crate) fn sub(&mut self, size: u64) {
        self.count = self.count.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(size);
    }
}

/// An unreferenced `*.metadata.json` of this table (same `table-uuid`) and
/// where it stands in the table's history.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct StrayDocument {
    /// Key relative to the table location.
    pub(crate) rel: String,
    /// Its `metadata-log` entries, mapped and canonical.
    pub(crate) log: BTreeSet<String>,
    /// Its `last-sequence-number`.
    pub(crate) sequence: Option<i64>,
}

/// A document's `metadata-log` entries, each mapped by `maps` and
/// canonical (one that does not parse is left out: it names nothing this
/// table reads).
pub(crate) fn canonical_log<'a>(
    log: &'a [String],
    maps: &'a [PathMapping],
) -> impl Iterator<Item = String> + 'a {
    log.iter().filter_map(move |f| {
        CanonicalUri::parse(&apply_mappings(f, maps))
            .ok()
            .map(|c| c.to_uri_string())
    })
}

/// The unreferenced metadata document `uri` (`rel` relative to the table)
/// whose owner check passed, with its place in the table's history (its
/// log mapped by `maps`), when it is of table `table_uuid`. Worked out
/// wherever the owner check ran (the session, or a listing split's
/// worker), and judged by the session against its final pointer.
pub(crate) fn stray_document(
    uri: &str,
    rel: &str,
    bytes: &[u8],
    table_uuid: Option<&str>,
    maps: &[PathMapping],
) -> Option<StrayDocument> {
    // A document that does not parse was kept as `unverified` already.
    let l = crate::spec::iceberg::TableMetadata::probe_lineage(uri, bytes).ok()?;
    // The owner check passed: the same `table-uuid`, or (v1 documents
    // without one, on both sides) the same location.
    if l.table_uuid.as_deref() != table_uuid {
        return None;
    }
    let log = canonical_log(&l.metadata_log, maps).collect();
    Some(StrayDocument {
        rel: rel.to_owned(),
        log,
        sequence: l.last_sequence_number,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_page_reads_as_the_records_would() {
        let page = br#"[{"key":"s3://b/t/data/a","size":3,"lastModifiedMs":7,"etag":"\"e\""},
                       {"key":"s3://b/t/data/b","size":0,"lastModifiedMs":-1,"versionId":"v1"}]"#;
        let objs = ListedObject::page_from_json(page).unwrap();
        assert_eq!(objs[0].etag.as_deref(), Some("\"e\""));
        assert_eq!(objs[1].version_id.as_deref(), Some("v1"));
        assert_eq!(objs[1].etag, None);
        for bad in [
            &b"{}"[..],
            b"[{\"key\":\"s3://b/t/x\"}]",
            b"[1]",
            b"",
            b"[{\"key\":1,\"size\":1,\"lastModifiedMs\":1}]",
            b"[{\"key\":\"s3://b/t/x\",\"size\":1,\"lastModifiedMs\":1,\"eTag\":\"e\"}]",
        ] {
            let e = ListedObject::page_from_json(bad).unwrap_err();
            assert!(matches!(e, Error::Protocol { .. }), "{e}");
        }
    }
    use crate::format::TableFormat;

    const LOC: &str = "s3://bucket/db/t";
    const NOW: i64 = 1_800_000_000_000;
    const RETENTION: i64 = 3 * 86_400_000;

    fn classifier(format: TableFormat) -> Classifier {
        Classifier {
            location: TableLocation::parse(LOC).unwrap(),
            keep: KeepSet::new(),
            now_ms: NOW,
            file_retention_ms: RETENTION,
            partition_names: BTreeSet::from(["_p".to_owned()]),
            table_uuid: None,
            mappings: vec![],
            protections: Default::default(),
            format,
            expired_log: BTreeMap::new(),
            reserved: vec![],
            roots: vec![],
            owners: vec![],
        }
    }

    /// `hidden_component` as it was first written, on `str::split`: the
    /// oracle of the one that splits bytes.
    fn hidden_component_by_str(c: &Classifier, rel: &str) -> Option<String> {
        let mut parts = rel.split('/').enumerate().peekable();
        while let Some((i, comp)) = parts.next() {
            if !(comp.starts_with('_') || comp.starts_with('.')) {
                continue;
            }
            let is_dir = parts.peek().is_some();
            if i == 0 && comp == "_change_data" && is_dir && c.format == TableFormat::Delta {
                continue;
            }
            if is_dir {
                if let Some((name, _)) = comp.split_once('=') {
                    if c.partition_names.contains(name) {
                        continue;
                    }
                }
            }
            return Some(format!(
                "hidden path component `{comp}` (starts with `{}`)",
                &comp[..1]
            ));
        }
        None
    }

    proptest::proptest! {
        #[test]
        fn hidden_components_are_found_as_by_str_split(
            parts in proptest::collection::vec(
                proptest::sample::select(vec![
                    "_p=1", "_q=1", "_change_data", ".hidden", "_", ".", "", "data", "é_x", "a.b",
                ]),
                0..6,
            ),
        ) {
            let rel = parts.join("/");
            for format in [TableFormat::Iceberg, TableFormat::Delta] {
                let c = classifier(format);
                proptest::prop_assert_eq!(c.hidden_component(&rel), hidden_component_by_str(&c, &rel));
            }
        }
    }

    fn obj(rel: &str, last_modified_ms: i64) -> ListedObject {
        ListedObject {
            key: format!("{LOC}/{rel}"),
            size: 1,
            last_modified_ms,
            etag: None,
            version_id: None,
        }
    }

    fn judged(c: &Classifier, rel: &str, mtime: i64) -> Decision {
        match c.judge(obj(rel, mtime)).unwrap() {
            Judged::Final(d) => d,
            Judged::NeedsOwner { decision } => decision,
        }
    }

    const OLD: i64 = NOW - 2 * RETENTION;

    /// A plain key is judged without parsing: the same key, verdict and
    /// reason as the parse gives, near-misses to a non-plain referenced
    /// spelling included.
    #[test]
    fn plain_keys_are_found_as_the_parse_finds_them() {
        for format in [TableFormat::Iceberg, TableFormat::Delta] {
            let mut c = classifier(format);
            let source = || crate::reach::Source::ManifestList { snapshot_id: 7 };
            c.keep.insert("data/a.parquet", source());
            c.keep.insert("data/Upper.parquet", source());
            c.keep.insert_loose("data/upper.parquet");
            c.keep.freeze().unwrap();
            c.expired_log.insert(
                "_delta_log/00000000000000000000.json".into(),
                "expired".into(),
            );
            c.reserved.push(("data/_staging/".into(), "staging".into()));
            for rel in [
                "data/a.parquet",
                "data/upper.parquet",
                "data/b.parquet",
                VERSION_HINT,
                "metadata/00009-x.metadata.json",
                "_delta_log/00000000000000000000.json",
                "_delta_log/00000000000000000001.json",
                "data/_staging/x.parquet",
                "data/.hidden.parquet",
                "_p=1/x.parquet",
                "data/a:b.parquet",
            ] {
                assert!(crate::path::is_plain_key(rel), "{rel}");
                for mtime in [OLD, NOW - 1, NOW + 1] {
                    let key = format!("{LOC}/{rel}");
                    // A Delta table holding Iceberg's files refuses alike.
                    let (plain, parsed) =
                        match (c.find(&key, 3, mtime), c.find_parsed(&key, 3, mtime)) {
                            (Err(a), Err(b)) => {
                                assert_eq!(a, b, "{rel}");
                                assert!(
                                    matches!(
                                        a,
                                        Error::Unsafe {
                                            reason: UnsafeReason::ForeignTable,
                                            ..
                                        }
                                    ),
                                    "{rel}: {a}"
                                );
                                continue;
                            }
                            (a, b) => (a.unwrap(), b.unwrap()),
                        };
                    let mut parsed = parsed;
                    // Only the shortcut names a referenced key's source.
                    parsed.source = plain.source;
                    assert_eq!(plain, parsed, "{rel}");
                    assert!(matches!(plain.rel, Cow::Borrowed(_)), "{rel} was parsed");
                }
            }
            assert_eq!(
                c.find(&format!("{LOC}/data/upper.parquet"), 3, OLD)
                    .unwrap()
                    .verdict,
                Verdict::NearMiss
            );
        }
    }

    #[test]
    fn a_table_key_holding_scheme_separator_is_unaddressable() {
        let c = classifier(TableFormat::Iceberg);
        let d = judged(&c, "data/a://b.parquet", OLD);
        assert_eq!(d.verdict, Verdict::Unaddressable, "{}", d.detail);
        assert!(d.detail.contains("://"), "{}", d.detail);
    }

    #[test]
    fn future_objects_are_young_and_say_so_but_objects_dated_now_do_not() {
        let c = classifier(TableFormat::Iceberg);
        let d = judged(&c, "data/f.parquet", NOW + 60_000);
        assert_eq!(d.verdict, Verdict::Young);
        assert!(d.detail.contains("in the future"), "{}", d.detail);
        let d = judged(&c, "data/n.parquet", NOW);
        assert_eq!(d.verdict, Verdict::Young);
        assert!(!d.detail.contains("in the future"), "{}", d.detail);
    }

    #[test]
    fn an_object_exactly_retention_old_is_a_candidate() {
        let c = classifier(TableFormat::Iceberg);
        let d = judged(&c, "data/edge.parquet", NOW - RETENTION);
        assert_eq!(d.verdict, Verdict::Candidate, "{}", d.detail);
        let d = judged(&c, "data/edge2.parquet", NOW - RETENTION + 1);
        assert_eq!(d.verdict, Verdict::Young, "{}", d.detail);
    }

    #[test]
    fn a_delta_file_named_change_data_at_the_root_is_hidden_its_folder_is_not() {
        let c = classifier(TableFormat::Delta);
        let d = judged(&c, "_change_data", OLD);
        assert_eq!(d.verdict, Verdict::Hidden, "{}", d.detail);
        let d = judged(&c, "_change_data/cdc-1.parquet", OLD);
        assert_eq!(d.verdict, Verdict::Candidate, "{}", d.detail);
    }

    #[test]
    fn underscore_partition_names_exempt_folders_not_files() {
        let c = classifier(TableFormat::Iceberg);
        for rel in ["_p=1", "data/_p=1"] {
            let d = judged(&c, rel, OLD);
            assert_eq!(d.verdict, Verdict::Hidden, "{rel}: {}", d.detail);
        }
        for rel in ["_p=1/x.parquet", "data/_p=1/x.parquet"] {
            let d = judged(&c, rel, OLD);
            assert_eq!(d.verdict, Verdict::Candidate, "{rel}: {}", d.detail);
        }
    }

    /// Another table's marker anywhere in the listing refuses the plan, in
    /// every format; the table's own log, hint and (UniForm) Iceberg
    /// metadata do not.
    #[test]
    fn another_tables_markers_refuse_and_the_tables_own_do_not() {
        let refused = |c: &Classifier, rel: &str| match c.find(&format!("{LOC}/{rel}"), 1, OLD) {
            Err(Error::Unsafe {
                reason: UnsafeReason::ForeignTable,
                detail,
            }) => Some(detail),
            Err(e) => panic!("{rel}: {e}"),
            Ok(_) => None,
        };
        let ice = classifier(TableFormat::Iceberg);
        let delta = classifier(TableFormat::Delta);
        for rel in [
            "nested/_delta_log/00000000000000000000.json",
            "data/x/_delta_log/_last_checkpoint",
            "data/x/_delta_log/",
            "lake/.hoodie/hoodie.properties",
            "nested/metadata/version-hint.text",
        ] {
            for c in [&ice, &delta] {
                let why = refused(c, rel).unwrap_or_else(|| panic!("{rel} not refused"));
                assert!(why.contains("another table lives at"), "{why}");
            }
        }
        let why = refused(&ice, "nested/_delta_log/00000000000000000000.json").unwrap();
        assert!(why.contains(&format!("`{LOC}/nested/`")), "{why}");
        // A Delta log at an Iceberg table's root: two formats, one table.
        let why = refused(&ice, "_delta_log/00000000000000000000.json").unwrap();
        assert!(why.contains("two formats"), "{why}");
        // Iceberg metadata in a Delta table, but its own UniForm folder.
        let why = refused(&delta, "metadata/00001-a.metadata.json").unwrap();
        assert!(why.contains("two formats"), "{why}");
        assert!(refused(&delta, "sub/metadata/v1.metadata.json")
            .unwrap()
            .contains("`s3://bucket/db/t/sub/`"));
        let mut uniform = classifier(TableFormat::Delta);
        uniform
            .reserved
            .push(("metadata/".into(), "UniForm".into()));
        assert_eq!(refused(&uniform, "metadata/00001-a.metadata.json"), None);
        assert!(refused(&uniform, "sub/metadata/v1.metadata.json").is_some());
        // The tables' own: Delta's log, Iceberg's hint; look-alikes.
        assert_eq!(
            refused(&delta, "_delta_log/00000000000000000000.json"),
            None
        );
        assert_eq!(refused(&ice, VERSION_HINT), None);
        for rel in [
            "data/_delta_logs/x",
            "data/my_delta_log",
            "data/.hoodie",
            "data/version-hint.txt",
            "version-hint.text",
            "data/version-hint.text",
        ] {
            assert_eq!(refused(&ice, rel), None, "{rel}");
            assert_eq!(refused(&delta, rel), None, "{rel}");
        }
        // Under a prefix another table owns: kept, not refused.
        let mut owned = classifier(TableFormat::Iceberg);
        owned.owners.push(OwnedPrefix {
            prefix: "nested/".into(),
            loose: "nested/".into(),
            owner: "table db.n owns (its location)".into(),
        });
        for rel in [
            "nested/_delta_log/00000000000000000000.json",
            "nested/data/a.parquet",
            "NESTED/x",
        ] {
            let key = format!("{LOC}/{rel}");
            let f = owned.find(&key, 1, OLD).unwrap();
            assert_eq!(f.verdict, Verdict::Foreign, "{rel}");
            assert!(f.why.contains("db.n"), "{}", f.why);
        }
        assert_eq!(
            owned
                .find(&format!("{LOC}/nestedx/a"), 1, OLD)
                .unwrap()
                .verdict,
            Verdict::Candidate
        );
    }
}
