//! Stateless page mode, for hosts that see one listing page per invocation
//! (a serverless function per S3 listing page).
//!
//! A session exports its finished keep set as bytes
//! ([`crate::Session::export_keep_set`]); each invocation loads them into a
//! [`PageClassifier`] and classifies its page with exactly the verdicts the
//! session would give. The one verdict a page cannot settle alone is
//! [`Verdict::OwnerCheck`] (an unreferenced `*.metadata.json`): the host
//! reads that file and calls [`PageClassifier::settle_metadata_file`].
//!
//! Whole-listing checks (no referenced key listed at all; re-check of the
//! pointer) remain the host's duty in this mode: sum `referenced` verdicts
//! across pages and re-read the pointer before deleting.

use std::collections::BTreeSet;

mod columns;
pub use columns::{PageColumns, PageVerdicts};

use serde::{Deserialize, Serialize};

use crate::error::{Error, ProtocolReason, Result, UnsafeReason};
use crate::path::{PathMapping, TableLocation};
use crate::reach::KeepSet;
use crate::split::{ListingSplit, SplitRefusal, SplitTally, SPLIT_REFUSAL_SCHEMA};
use crate::verdict::{Classifier, Decision, Judged, ListedObject, Verdict};

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Header {
    schema: String,
    table_location: String,
    table_uuid: Option<String>,
    metadata_location: String,
    now_ms: i64,
    file_retention_ms: i64,
    partition_names: BTreeSet<String>,
    mappings: Vec<PathMapping>,
    #[serde(default)]
    protections: crate::Context,
    #[serde(default = "iceberg")]
    format: crate::format::TableFormat,
    #[serde(default)]
    expired_log: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    reserved: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    owners: Vec<crate::verdict::OwnedPrefix>,
    /// The write roots outside the location, listed and judged too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    roots: Vec<String>,
    /// Keys kept only as one reading of an ambiguous reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    alt_only: Vec<String>,
    /// Every key of an ambiguous reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    group_members: Vec<String>,
}

fn iceberg() -> crate::format::TableFormat {
    crate::format::TableFormat::Iceberg
}

const KEEPSET_SCHEMA: &str = "lakesweep.keepset.v2";

/// The header of `c`'s exported keep set (built from `metadata_location`):
/// the options its verdicts depend on and the keys of its ambiguous
/// references (`ambiguous`: those kept only as one reading, and every
/// member), for [`PageClassifier::load`].
pub(crate) fn export_header(
    c: &Classifier,
    metadata_location: &str,
    ambiguous: (Vec<String>, Vec<String>),
) -> Vec<u8> {
    let header = Header {
        schema: KEEPSET_SCHEMA.into(),
        table_location: c.location.as_uri(),
        table_uuid: c.table_uuid.clone(),
        metadata_location: metadata_location.into(),
        now_ms: c.now_ms,
        file_retention_ms: c.file_retention_ms,
        partition_names: c.partition_names.clone(),
        mappings: c.mappings.clone(),
        protections: c.protections.clone(),
        format: c.format,
        expired_log: c.expired_log.clone(),
        reserved: c.reserved.clone(),
        owners: c.owners.clone(),
        roots: c.roots.iter().map(TableLocation::as_uri).collect(),
        alt_only: ambiguous.0,
        group_members: ambiguous.1,
    };
    serde_json::to_vec(&header).unwrap_or_default()
}

/// A loaded keep set that classifies listing pages without a session, and
/// lists one [`ListingSplit`] at a time for a session elsewhere (see
/// [`crate::split`]).
#[derive(Debug, Clone)]
pub struct PageClassifier {
    classifier: Classifier,
    metadata_location: String,
    /// XXH3-128 of the loaded bytes, lowercase hex.
    keep_set_digest: String,
    alt_only: crate::hashing::Set<String>,
    group_members: crate::hashing::Set<String>,
    /// The split being listed, if one is.
    split: Option<SplitTally>,
    /// The last split this classifier refused, until the host takes it.
    refused: Option<SplitRefusal>,
}

/// XXH3-128 of an exported keep set, lowercase hex: what a split's partial
/// result names its keep set by.
pub(crate) fn keep_set_digest(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

impl PageClassifier {
    /// [`PageClassifier::load`] from the keep set as lowercase hex text
    /// ([`crate::Session::export_keep_set_hex`]'s pieces joined); text that
    /// is not such hex is refused, naming where.
    pub fn load_hex(keep_set: &str) -> Result<PageClassifier> {
        let bytes = crate::digest::unhex(keep_set).map_err(|at| {
            Error::invalid(
                "keep-set",
                format!(
                    "keep set text is not lowercase hex (at byte {at} of {})",
                    keep_set.len()
                ),
            )
        })?;
        Self::load(bytes)
    }

    /// Loads bytes made by [`crate::Session::export_keep_set`]; damaged or
    /// foreign bytes are refused.
    pub fn load(keep_set: Vec<u8>) -> Result<PageClassifier> {
        let keep_set_digest = keep_set_digest(&keep_set);
        let (keep, header) = KeepSet::decode(&keep_set)?;
        let v: serde_json::Value = serde_json::from_slice(&header)
            .map_err(|e| Error::invalid("keep-set", format!("bad keep set header: {e}")))?;
        match v.get("schema").and_then(|s| s.as_str()) {
            Some(KEEPSET_SCHEMA) => {}
            Some("lakesweep.keepset.v1") => {
                return Err(Error::invalid(
                    "keep-set",
                    "a keep set exported by an earlier lakesweep (lakesweep.keepset.v1): export it again from a new plan",
                ))
            }
            other => {
                return Err(Error::invalid(
                    "keep-set",
                    format!("unknown keep set schema {other:?}"),
                ))
            }
        }
        let h: Header = serde_json::from_value(v)
            .map_err(|e| Error::invalid("keep-set", format!("bad keep set header: {e}")))?;
        let location =
            TableLocation::parse(&h.table_location).map_err(|e| Error::invalid("keep-set", e))?;
        let roots = h
            .roots
            .iter()
            .map(|r| TableLocation::parse(r).map_err(|e| Error::invalid("keep-set", e)))
            .collect::<Result<Vec<_>>>()?;
        Ok(PageClassifier {
            classifier: Classifier {
                location,
                keep,
                now_ms: h.now_ms,
                file_retention_ms: h.file_retention_ms,
                partition_names: h.partition_names,
                table_uuid: h.table_uuid,
                mappings: h.mappings,
                protections: h.protections,
                format: h.format,
                expired_log: h.expired_log,
                reserved: h.reserved,
                roots,
                owners: h.owners,
            },
            metadata_location: h.metadata_location,
            keep_set_digest,
            alt_only: h.alt_only.into_iter().collect(),
            group_members: h.group_members.into_iter().collect(),
            split: None,
            refused: None,
        })
    }

    /// The metadata location the keep set was built from (re-read the pointer
    /// and compare before deleting anything).
    pub fn metadata_location(&self) -> String {
        self.metadata_location.clone()
    }

    /// Whether the keep set still describes the table: `live` is the
    /// pointer now (Iceberg: the catalog's metadata location; Delta: the
    /// newest log entry [`crate::delta_head`] names). A keep set built on
    /// another document is stale (`table-changing`): pages classified with
    /// it prove nothing, export a new one. `None`: the table is gone.
    pub fn check_pointer(&self, live: Option<&str>) -> Result<()> {
        // The keep set names its document as the session read it: the
        // pointer through the table's location maps, in canonical form.
        let canonical = live.map(|p| {
            crate::path::CanonicalUri::parse(&crate::path::apply_mappings(
                p,
                &self.classifier.mappings,
            ))
            .map(|c| c.to_uri_string())
            .unwrap_or_else(|_| p.to_owned())
        });
        match (live, canonical) {
            (Some(_), Some(c)) if c == self.metadata_location => Ok(()),
            (Some(p), _) => Err(Error::unsafe_(
                UnsafeReason::TableChanging,
                format!(
                    "the keep set was built on {}, the pointer now names {p}: export a new keep set",
                    self.metadata_location
                ),
            )),
            (None, _) => Err(Error::unsafe_(
                UnsafeReason::MissingMetadata,
                format!(
                    "the keep set was built on {}, and the table has no pointer now",
                    self.metadata_location
                ),
            )),
        }
    }

    /// Classifies one page. Keys outside the table are a protocol error.
    pub fn classify(&self, objects: Vec<ListedObject>) -> Result<Vec<Decision>> {
        objects
            .into_iter()
            .map(|o| {
                Ok(match self.classifier.judge(o)? {
                    Judged::Final(d) => d,
                    Judged::NeedsOwner { decision } => decision,
                })
            })
            .collect()
    }

    /// [`PageClassifier::classify`] with the page and the decisions in JSON
    /// ([`ListedObject::page_from_json`], [`Decision::list_to_json`]).
    pub fn classify_json(&self, page: &[u8]) -> Result<Vec<u8>> {
        let objects = ListedObject::page_from_json(page)?;
        Ok(Decision::list_to_json(&self.classify(objects)?))
    }

    /// Settles an [`Verdict::OwnerCheck`] with the file's bytes (`None` when
    /// it no longer exists). A file of another table is an `Unsafe` error:
    /// the whole sweep must stop. While a split is open, the object must be
    /// one of its owner checks not yet settled (protocol otherwise), and
    /// the settled decision is tallied into it; a failure refuses the
    /// split ([`PageClassifier::split_refusal`]).
    pub fn settle_metadata_file(
        &mut self,
        object: ListedObject,
        bytes: Option<Vec<u8>>,
    ) -> Result<Decision> {
        let open = self.open_split();
        let r = self.settle(object, bytes);
        self.refusing(open, r)
    }

    fn settle(&mut self, object: ListedObject, bytes: Option<Vec<u8>>) -> Result<Decision> {
        let (_, rel) = self.classifier.relative_key(&object.key)?;
        if let Some(t) = &self.split {
            match t.pending.get(&object.key) {
                None => {
                    return Err(Error::protocol(
                        ProtocolReason::UnexpectedAnswer,
                        format!(
                            "`{}` is no owner check of the open split {} (or was settled already)",
                            object.key, t.result.split.index
                        ),
                    ))
                }
                // Judged on the version the listing gave, no other.
                Some(listed) if *listed != object => {
                    return Err(Error::protocol(
                        ProtocolReason::UnexpectedAnswer,
                        format!(
                            "`{}` is settled with a version other than the one listed in split {}",
                            object.key, t.result.split.index
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        let d = self
            .classifier
            .settle_owner(&object, &rel, bytes.as_deref())?;
        debug_assert_ne!(d.verdict, Verdict::OwnerCheck);
        if let Some(t) = &mut self.split {
            t.pending.remove(&object.key);
            t.tally(
                &d,
                &self.classifier.protections,
                &self.alt_only,
                &self.group_members,
            );
            if let Some(doc) = bytes.as_deref().and_then(|b| {
                crate::verdict::stray_document(
                    &object.key,
                    &rel,
                    b,
                    self.classifier.table_uuid.as_deref(),
                    &self.classifier.mappings,
                )
            }) {
                t.result.stray_documents.push(doc);
            }
        }
        Ok(d)
    }

    /// Opens `split` (cut by [`crate::Session::split_listing`]) for listing:
    /// its keys go through [`PageClassifier::split_page`] in ascending byte
    /// order, and [`PageClassifier::end_split`] gives the partial result.
    /// Fails (protocol) while another split is open or a refusal waits to
    /// be taken, or for a split of a prefix this keep set does not list
    /// (the location or a write root).
    pub fn begin_split(&mut self, split: ListingSplit) -> Result<()> {
        if let Some(r) = &self.refused {
            // Taken first, so a second refusal cannot replace it.
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!(
                    "split {} was refused: take its refusal (split_refusal) before beginning another",
                    r.split.index
                ),
            ));
        }
        if let Some(t) = &self.split {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!(
                    "split {} is open: end it before beginning another",
                    t.result.split.index
                ),
            ));
        }
        let listed = std::iter::once(&self.classifier.location)
            .chain(&self.classifier.roots)
            .any(|l| l.prefix() == split.prefix);
        if !listed {
            return Err(Error::protocol(
                ProtocolReason::BadKey,
                format!(
                    "split of `{}`: this keep set lists `{}` and its write roots only",
                    split.prefix,
                    self.classifier.location.prefix()
                ),
            ));
        }
        self.split = Some(SplitTally::new(
            split,
            self.keep_set_digest.clone(),
            self.metadata_location.clone(),
        ));
        Ok(())
    }

    /// Classifies one page of the open split (keys ascending, after the
    /// previous page's) and tallies it. Answers every decision but
    /// `referenced` ones (those are counted only), owner checks included:
    /// settle each with [`PageClassifier::settle_metadata_file`]. Fails
    /// (protocol) with no split open, or for a key outside it, out of order
    /// or listed twice; the split is then refused
    /// ([`PageClassifier::split_refusal`]).
    pub fn split_page(&mut self, objects: Vec<ListedObject>) -> Result<Vec<Decision>> {
        let open = self.open_split();
        let r = self.classify_split_page(objects);
        self.refusing(open, r)
    }

    fn classify_split_page(&mut self, objects: Vec<ListedObject>) -> Result<Vec<Decision>> {
        let Some(mut t) = self.split.take() else {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "no split is open: begin one first",
            ));
        };
        let mut out = Vec::new();
        for o in objects {
            t.check_in(&o.key, o.size)?;
            match self.classifier.judge(o)? {
                Judged::Final(d) => {
                    t.tally(
                        &d,
                        &self.classifier.protections,
                        &self.alt_only,
                        &self.group_members,
                    );
                    if d.verdict != Verdict::Referenced {
                        out.push(d);
                    }
                }
                Judged::NeedsOwner { decision } => {
                    let listed = ListedObject {
                        key: decision.key.clone(),
                        size: decision.size,
                        last_modified_ms: decision.last_modified_ms,
                        etag: decision.etag.clone(),
                        version_id: decision.version_id.clone(),
                    };
                    t.pending.insert(decision.key.clone(), listed);
                    out.push(decision);
                }
            }
        }
        self.split = Some(t);
        Ok(out)
    }

    /// Takes part of the open split by name, for a host whose listing
    /// gives names cheaply and versions at a cost (a local walk: a stat a
    /// file), as [`crate::Session::handle_names`] does: `keys` ascending,
    /// after the previous ones. Every key the keep set references is
    /// settled and counted here by its name (kept whatever its size and
    /// time). Answers the indices into `keys`, ascending, of every other
    /// key: send those, with their versions, through
    /// [`PageClassifier::split_page`] (leaving out any gone meanwhile).
    /// Fails (protocol) like `split_page`.
    pub fn split_names(&mut self, keys: Vec<String>) -> Result<Vec<u32>> {
        let open = self.open_split();
        let r = self.take_split_names(keys);
        self.refusing(open, r)
    }

    fn take_split_names(&mut self, keys: Vec<String>) -> Result<Vec<u32>> {
        let Some(mut t) = self.split.take() else {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "no split is open: begin one first",
            ));
        };
        let mut needed = Vec::new();
        for (i, key) in keys.into_iter().enumerate() {
            let i = u32::try_from(i).map_err(|_| {
                Error::protocol(ProtocolReason::BadInput, "more than 2^32 names in one call")
            })?;
            t.order(&key)?;
            let f = self.classifier.find(&key, 0, i64::MAX)?;
            // Only `Referenced` is taken from this finding: no size or time
            // enters that verdict. Every other is judged with the version.
            if f.verdict == Verdict::Referenced {
                let rel = f.rel.into_owned();
                t.by_name(
                    &rel,
                    &self.classifier.protections,
                    &self.alt_only,
                    &self.group_members,
                );
            } else {
                needed.push(i);
                t.announced.push_back(key);
            }
        }
        self.split = Some(t);
        Ok(needed)
    }

    /// [`PageClassifier::split_names`] with the keys as a JSON array of
    /// strings; fails (protocol: bad-input) for text that is not one.
    pub fn split_names_json(&mut self, keys: &[u8]) -> Result<Vec<u32>> {
        let open = self.open_split();
        let r = serde_json::from_slice(keys)
            .map_err(|e| {
                Error::protocol(
                    ProtocolReason::BadInput,
                    format!("names are a JSON array of strings: {e}"),
                )
            })
            .and_then(|keys| self.take_split_names(keys));
        self.refusing(open, r)
    }

    /// [`PageClassifier::split_page`] with the page and the decisions in
    /// JSON ([`ListedObject::page_from_json`], [`Decision::list_to_json`]).
    pub fn split_page_json(&mut self, page: &[u8]) -> Result<Vec<u8>> {
        let open = self.open_split();
        let r = ListedObject::page_from_json(page)
            .and_then(|objects| self.classify_split_page(objects))
            .map(|ds| Decision::list_to_json(&ds));
        self.refusing(open, r)
    }

    /// Ends the open split: its partial result, as JSON text, for
    /// [`crate::Session::handle_split_result`]. Fails (protocol) with no
    /// split open, or while an owner check of it is unsettled.
    pub fn end_split(&mut self) -> Result<String> {
        let open = self.open_split();
        let r = match self.split.take() {
            Some(t) => t.finish(),
            None => Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "no split is open",
            )),
        };
        self.refusing(open, r)
    }

    /// The refusal of the last split this classifier refused, as JSON text
    /// for [`crate::Session::handle_split_result`], once (`None`: none
    /// since the last call). A split is refused when a call on it fails
    /// while it is open (`split_page`, `split_names`, their JSON forms,
    /// `settle_metadata_file`, `end_split`: the call's error is the
    /// refusal's, and the split is closed; no split begins until the
    /// refusal is taken): send the refusal in the split's place, so the session
    /// fails with the worker's error and no later attempt at the split
    /// can answer it instead.
    pub fn split_refusal(&mut self) -> Option<String> {
        self.refused.take().map(|r| r.to_json())
    }

    /// The open split, if any.
    fn open_split(&self) -> Option<ListingSplit> {
        self.split.as_ref().map(|t| t.result.split.clone())
    }

    /// Passes `r` through; an error while `open` was the open split closes
    /// it and is kept as its refusal.
    fn refusing<T>(&mut self, open: Option<ListingSplit>, r: Result<T>) -> Result<T> {
        if let (Err(e), Some(split)) = (&r, open) {
            self.split = None;
            self.refused = Some(SplitRefusal {
                schema: SPLIT_REFUSAL_SCHEMA.into(),
                keep_set: self.keep_set_digest.clone(),
                metadata_location: self.metadata_location.clone(),
                split,
                error: e.clone(),
            });
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exported(header: &str) -> Vec<u8> {
        let mut k = KeepSet::new();
        k.freeze().unwrap();
        let mut out = Vec::new();
        k.encode(header.as_bytes(), &mut out).unwrap();
        out
    }

    /// A keep set is checked against the pointer now: the same document
    /// passes; another one, or none, is unsafe (pages classified with it
    /// would prove nothing about the table as it is).
    #[test]
    fn a_keep_set_built_on_another_pointer_is_stale() {
        let c = PageClassifier::load(exported(
            r#"{"schema":"lakesweep.keepset.v2","tableLocation":"s3://b/t","tableUuid":null,
                "metadataLocation":"s3://b/t/metadata/v1.metadata.json","nowMs":0,
                "fileRetentionMs":0,"partitionNames":[],"mappings":[]}"#,
        ))
        .unwrap();
        assert!(c
            .check_pointer(Some("s3://b/t/metadata/v1.metadata.json"))
            .is_ok());
        // Through the keep set's location map, in any scheme alias.
        let mapped = PageClassifier::load(exported(
            r#"{"schema":"lakesweep.keepset.v2","tableLocation":"s3://b/t","tableUuid":null,
                "metadataLocation":"s3://b/t/metadata/v1.metadata.json","nowMs":0,
                "fileRetentionMs":0,"partitionNames":[],
                "mappings":[{"from":"file:///old/t","to":"s3a://b/t"}]}"#,
        ))
        .unwrap();
        assert!(mapped
            .check_pointer(Some("file:///old/t/metadata/v1.metadata.json"))
            .is_ok());
        assert!(mapped
            .check_pointer(Some("file:///old/t/metadata/v2.metadata.json"))
            .is_err());
        for live in [Some("s3://b/t/metadata/v2.metadata.json"), None] {
            let e = c.check_pointer(live).unwrap_err();
            assert!(matches!(e, Error::Unsafe { .. }), "{e:?}");
        }
    }

    #[test]
    fn a_keep_set_of_an_earlier_schema_is_refused_with_advice() {
        let Err(e) = PageClassifier::load(exported(
            r#"{"schema":"lakesweep.keepset.v1","table_location":"s3://b/t"}"#,
        )) else {
            panic!("refused")
        };
        assert!(e.to_string().contains("export it again"), "{e}");
        let Err(e) = PageClassifier::load(exported(r#"{"schema":"other"}"#)) else {
            panic!("refused")
        };
        assert!(e.to_string().contains("unknown keep set schema"), "{e}");
    }
}
