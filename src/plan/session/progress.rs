//! How a session moves on: each answered read processed for its purpose,
//! and, once no read is pending, the next phase entered (the listing once
//! the keep set is complete, the next write root, the pointer's re-read, a
//! re-check's demotions). Every phase change goes through [`super::State`].

use super::Session;
use crate::error::{Error, Result, UnsafeReason};
use crate::path::CanonicalUri;
use crate::plan::delta::VALIDATE;
use crate::plan::requests::Purpose;
use crate::plan::state::Phase;
use crate::verdict::{object_kind, Decision, Verdict};

impl Session {
    /// Processes the answer to a read of `uri` made for `purpose`
    /// (`bytes`: `None` when the object does not exist).
    pub(super) fn process_blob(
        &mut self,
        uri: &str,
        purpose: Purpose,
        bytes: Option<&[u8]>,
    ) -> Result<()> {
        if let Purpose::OwnerCheck { obj, rel } = purpose {
            let d = self.classifier.settle_owner(&obj, &rel, bytes)?;
            if let Some(b) = bytes {
                self.note_stray_document(uri, &rel, b);
            }
            self.record(d);
            return Ok(());
        }
        if let Purpose::DeltaNextCommit { version } = purpose {
            return self.delta_next_commit(uri, version, bytes);
        }
        if let (Purpose::PriorPointer { read }, None) = (&purpose, bytes) {
            return self.process_prior_pointer(uri, None, *read);
        }
        if let (
            Purpose::DeltaLog {
                order: (VALIDATE, _),
            },
            None,
        ) = (&purpose, bytes)
        {
            return self.delta_validation_missing(uri);
        }
        let Some(bytes) = bytes else {
            let what = match &purpose {
                Purpose::DeltaLog { .. } => "Delta log file".to_owned(),
                Purpose::DeltaNextCommit { .. } => "Delta commit".to_owned(),
                Purpose::Metadata { .. } => "table metadata".to_owned(),
                Purpose::PriorPointer { .. } => "table metadata".to_owned(),
                Purpose::DrMetadata => "disaster-recovery checkpoint metadata".to_owned(),
                Purpose::ManifestList { snapshot_id } => {
                    format!("manifest list of snapshot {snapshot_id}")
                }
                Purpose::Manifest { .. } => "manifest".to_owned(),
                Purpose::OwnerCheck { .. } => "metadata file".to_owned(),
            };
            return Err(Error::unsafe_(
                UnsafeReason::MissingMetadata,
                format!("{what} `{uri}` does not exist; the keep set cannot be completed, nothing is deleted"),
            ));
        };
        self.summary.manifests_read += u64::from(!matches!(
            purpose,
            Purpose::Metadata { .. }
                | Purpose::PriorPointer { .. }
                | Purpose::DrMetadata
                | Purpose::DeltaLog { .. }
        ));
        match purpose {
            Purpose::DeltaLog { order } => self.delta_log_blob(uri, order, bytes),
            Purpose::DeltaNextCommit { .. } => Ok(()),
            Purpose::Metadata { read } => self.process_metadata(uri, bytes, read),
            Purpose::PriorPointer { read } => self.process_prior_pointer(uri, Some(bytes), read),
            Purpose::DrMetadata => self.process_dr_metadata(uri, bytes),
            Purpose::ManifestList { .. } => self.process_manifest_list(uri, bytes),
            Purpose::Manifest {
                expected_len,
                added_by,
            } => self.process_manifest(uri, bytes, expected_len, added_by),
            // Settled at the top of this function.
            Purpose::OwnerCheck { .. } => Ok(()),
        }
    }

    /// The order of the next pointer read of the run.
    pub(super) fn next_pointer_read(&mut self) -> u32 {
        let n = self.pointer_reads;
        self.pointer_reads = n.saturating_add(1);
        n
    }

    /// Starts the table listing once the keep set is complete: the
    /// context's protections are checked against it, and it is frozen.
    pub(super) fn start_listing(&mut self) -> Result<()> {
        // Deferred keys merged first: every check below sees them.
        self.classifier.keep.settle()?;
        self.check_role_conflict()?;
        self.check_foreign_roots()?;
        self.classifier.owners = self.owned_prefixes();
        self.check_protections()?;
        self.classifier.keep.freeze()?;
        self.state.start_listing()?;
        self.ask_listing(self.classifier.location.prefix());
        Ok(())
    }

    /// Moves the state machine forward once no reads are pending.
    pub(super) fn advance(&mut self) -> Result<()> {
        if !self.requests.all_answered() {
            return Ok(());
        }
        // A Delta checkpoint is read after the commits that follow it.
        if matches!(self.state.phase(), Phase::Reading { .. }) && self.delta_release_checkpoint()? {
            return Ok(());
        }
        match self.state.phase().clone() {
            Phase::Reading { .. } if self.delta().is_some_and(|d| !d.replayed) => {
                self.delta_replay()?;
                // Log cleanup may first read the checkpoint it stops at.
                if self.requests.all_answered() {
                    self.start_listing()?;
                }
            }
            Phase::Reading { .. } if self.delta().is_some_and(|d| d.validating.is_some()) => {
                self.delta_finish_validation()?;
                self.start_listing()?;
            }
            Phase::Reading { recheck: true } => {
                self.check_summaries()?;
                self.demote();
                self.state.await_pointer()?;
                self.requests.resolve_pointer();
            }
            Phase::Reading { recheck: false } => {
                self.check_summaries()?;
                self.start_listing()?;
            }
            Phase::Listing {
                last_page_seen: true,
            } if self.roots_listed < self.classifier.roots.len() => {
                let prefix = self.classifier.roots[self.roots_listed].prefix();
                self.roots_listed += 1;
                self.state.list_next_root()?;
                self.ask_listing(prefix);
            }
            Phase::Listing {
                last_page_seen: true,
            } => {
                let referenced = self.classifier.keep.len() as u64;
                if self.summary.listed.count > 0 && referenced > 0 && self.references.none_listed()
                {
                    return Err(Error::unsafe_(
                        UnsafeReason::NoReferencedKeyListed,
                        format!(
                            "{} objects listed under `{}` but none of the {referenced} referenced keys among them: wrong scheme, relocated table or mismatched encoding; refusing to call everything garbage",
                            self.summary.listed.count,
                            self.classifier.location.prefix()
                        ),
                    ));
                }
                self.state.await_pointer()?;
                if self.delta().is_some() {
                    self.request_next_commit();
                } else {
                    self.requests.resolve_pointer();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Why candidate `rel` is kept after a re-check (a commit that landed
    /// during the sweep references it, or a near-miss of one), if it is.
    pub(super) fn demotion(&self, rel: &str) -> Option<String> {
        if let Some(src) = self.classifier.keep.lookup(rel) {
            return Some(format!(
                "referenced by a commit that landed during the sweep: {}",
                src.describe()
            ));
        }
        let loose = CanonicalUri::parse(&self.absolute(rel))
            .ok()
            .and_then(|c| self.classifier.loose_key_of(&c));
        loose
            .filter(|l| self.classifier.keep.contains_loose(l))
            .map(|_| {
                "near-miss of a path referenced by a commit that landed during the sweep".to_owned()
            })
    }

    /// After a re-check, candidates that became referenced are kept.
    pub(super) fn demote(&mut self) {
        // Judged over the candidates as they stand; only the demoted ones'
        // keys are copied.
        let demoted: Vec<(String, String)> = self
            .candidates
            .keys()
            .filter_map(|rel| Some((rel.clone(), self.demotion(rel)?)))
            .collect();
        for (rel, detail) in demoted {
            if let Some(c) = self.candidates.remove(&rel) {
                if let Some(t) = self.summary.verdicts.get_mut("candidate") {
                    t.sub(c.size);
                }
                if let Some(t) = self.summary.reclaimable.get_mut(object_kind(&rel)) {
                    t.sub(c.size);
                }
                let d = Decision {
                    key: self.absolute(&rel),
                    relative_key: rel,
                    verdict: Verdict::Demoted,
                    detail,
                    size: c.size,
                    last_modified_ms: c.last_modified_ms,
                    etag: c.etag.clone(),
                    version_id: c.version_id.clone(),
                };
                self.summary
                    .verdicts
                    .entry("demoted".into())
                    .or_default()
                    .add(d.size);
                self.decisions.push(d);
            }
        }
    }
}
