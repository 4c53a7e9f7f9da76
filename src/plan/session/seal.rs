//! Sealing: the session's findings made into the plan document, with its
//! tokens, warnings, damage and digest.

use sha2::{Digest, Sha256};

use super::Session;
use crate::digest::hex;
use crate::error::Result;
use crate::path::TableLocation;
use crate::plan::document::{DamagedReference, PlanTokens, PlannedDelete, SealedPlan, PLAN_SCHEMA};

impl Session {
    /// Seals the plan. Fails unless the session is done (or once
    /// [`Session::seal`] took its candidates).
    pub fn finish(&self) -> Result<SealedPlan> {
        self.check_splits_back()?;
        self.state.ready_to_seal()?;
        let delete = self
            .candidates
            .iter()
            .map(|(k, p)| p.clone().planned(k.clone()))
            .collect();
        self.sealed_with(delete)
    }

    /// Seals the plan, moving the candidates into it rather than copying
    /// them (a plan of a million deletes is held once): the session seals
    /// nothing after this. Fails like [`Session::finish`].
    pub fn seal(&mut self) -> Result<SealedPlan> {
        self.check_splits_back()?;
        self.state.seal()?;
        let delete = std::mem::take(&mut self.candidates)
            .into_iter()
            .map(|(k, p)| p.planned(k))
            .collect();
        self.sealed_with(delete)
    }

    /// The sealed plan deleting `delete` (sorted by key).
    pub(super) fn sealed_with(&self, delete: Vec<PlannedDelete>) -> Result<SealedPlan> {
        // A merge during a re-check may have found a key in two roles.
        self.check_role_conflict()?;
        let mut summary = self.summary.clone();
        summary.snapshots = match self.delta() {
            // The latest version and every version kept on purpose.
            Some(d) => 1 + d.kept_versions(),
            None => self.iceberg().map_or(0, |i| i.pointer_snapshots),
        };
        if self.delta().is_none() {
            summary.snapshots_elsewhere =
                (self.readable.len() as u64).saturating_sub(summary.snapshots);
        }
        summary.referenced_keys = self.classifier.keep.len() as u64;
        summary.keep_set_bytes = self.classifier.keep.index_bytes() as u64;
        summary.referenced_not_listed = self.references.not_listed(summary.referenced_keys);
        summary.external_references = self.references.external();
        summary.rechecks = self.rechecks;
        summary.memory_budget_bytes = self.config.memory_budget_bytes;
        summary.swept_prefixes = std::iter::once(self.classifier.location.prefix())
            .chain(self.classifier.roots.iter().map(TableLocation::prefix))
            .collect();
        let mut warnings = self.warnings.clone();
        warnings.extend(self.references.warnings());
        let max_writer = self
            .policy
            .as_ref()
            .and_then(|p| p.file_retention.max_writer_duration)
            .map(|d| d.0);
        warnings.extend(
            self.classifier
                .protections
                .stale_writers(self.config.now_ms, max_writer),
        );
        for h in &self.classifier.protections.holds {
            if let crate::context::HoldScope::PathPrefix(p) = &h.scope {
                match self.hold_hits.get(p).copied().unwrap_or_default() {
                    (0, 0) => {
                        warnings.insert(format!(
                            "legal hold on `{p}` matches no listed key: check its spelling (letter case, slashes) and the table it was meant for"
                        ));
                    }
                    (0, near) => {
                        warnings.insert(format!(
                            "legal hold on `{p}` matches no listed key exactly; {near} keys equal to it up to letter case, encoding or doubled slashes are kept as near-misses: correct the hold"
                        ));
                    }
                    _ => {}
                }
            }
        }
        let unchecked = self.iceberg().map_or(0, |i| i.unchecked_summaries);
        if unchecked > 0 {
            warnings.insert(format!(
                "{unchecked} snapshots record no totals in their summary (total-data-files, total-delete-files): a manifest list of theirs cut at an Avro block boundary could not be told from a shorter one"
            ));
        }
        if summary.referenced_not_listed > 0 {
            warnings.insert(format!(
                "{} referenced objects were not in the listing: the table references files that do not exist (or the listing was incomplete)",
                summary.referenced_not_listed
            ));
        }
        let refs_text: String = self
            .refs
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        let mut plan = SealedPlan {
            schema: PLAN_SCHEMA.into(),
            format: self.config.format,
            table_location: self.classifier.location.as_uri(),
            table_uuid: self.classifier.table_uuid.clone(),
            tokens: PlanTokens {
                metadata_location: self.metadata_location.clone(),
                refs_digest: hex(&Sha256::digest(refs_text.as_bytes())),
                refs: self.refs.clone(),
                now_ms: self.config.now_ms,
                file_retention_ms: self.classifier.file_retention_ms,
                keep_deleted_entries: self.config.keep_deleted_entries,
                policy_digest: self.policy.as_ref().map(crate::Policy::digest),
                restore_drill: self
                    .policy
                    .as_ref()
                    .and_then(|p| p.restore_drill.as_ref().map(|d| d.gate())),
                hold_generation: self.classifier.protections.hold_generation(),
                lease_watermark: self.classifier.protections.lease_watermark(),
                context_digest: self.classifier.protections.digest(),
                head: self.delta().and_then(|d| d.head_identity()),
                deleted_index: self
                    .config
                    .deleted_index
                    .as_deref()
                    .map(|b| hex(&Sha256::digest(b))),
            },

            origin: self.config.origin.clone(),
            delete,
            summary,
            warnings: warnings.into_iter().collect(),
            damaged: self.damaged(),
            digest: String::new(),
            report: None,
        };
        plan.digest = plan.compute_digest();
        Ok(plan)
    }

    /// The keys a ledger deleted that the final keep set references and
    /// the listing did not hold, by fingerprint, ascending.
    pub(super) fn damaged(&self) -> Vec<DamagedReference> {
        let mut out: Vec<DamagedReference> = self
            .deleted
            .iter()
            .filter(|fp| !self.deleted_listed.contains(*fp))
            .filter_map(|fp| {
                let why = self.classifier.keep.reason_of_fingerprint(*fp)?;
                Some(DamagedReference {
                    fingerprint: format!("{fp:016x}"),
                    reason: why.to_owned(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        out
    }
}
