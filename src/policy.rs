//! The retention policy document, `lakehouseRetentionPolicy.v1`: which
//! snapshots stay readable and how long unreferenced objects wait.
//!
//! Parsed with serde, unknown fields refused; durations are strings with a
//! unit (`12h`, `30d`), never bare numbers. [`Policy::check`] is part of the
//! product: it names the field of every error and warning. The policy's
//! digest is SHA-256 over a canonical form (sorted keys, durations in
//! milliseconds), so `72h` and `3d` give the same digest.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::context::Context;
use crate::error::{Error, Result};
use crate::spec::iceberg::TableMetadata;

/// The schema name a policy document must carry.
pub const POLICY_SCHEMA: &str = "lakehouseRetentionPolicy.v1";

pub use crate::duration::{parse_duration, DurationMs};

/// Which table a policy is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Binding {
    /// The table's `table-uuid`; a policy for another table is refused.
    pub table_uuid: String,
    /// `iceberg` (Delta policies are refused until Delta is supported).
    pub format: String,
    /// The table format version the policy was written for, if pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_version: Option<u8>,
    /// The catalog the table lives in (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<String>,
}

/// Per-ref overrides of the snapshot retention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefRetention {
    /// Keep at least this many ancestors of the branch head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_snapshots_to_keep: Option<u32>,
    /// Keep branch ancestors younger than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snapshot_age: Option<DurationMs>,
    /// Remove the ref when its snapshot is older than this (never `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ref_age: Option<DurationMs>,
}

/// Which snapshots stay readable.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnapshotRetention {
    /// Keep at least this many ancestors per branch (Java `retainLast`;
    /// default: the table's `history.expire.min-snapshots-to-keep`, else 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retain_last: Option<u32>,
    /// Expire snapshots older than this (default: the table's
    /// `history.expire.max-snapshot-age-ms`, else 5 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snapshot_age: Option<DurationMs>,
    /// Remove refs whose snapshot is older than this (default: the table's
    /// `history.expire.max-ref-age-ms`, else never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ref_age: Option<DurationMs>,
    /// Nothing younger than this expires, whatever else says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_snapshot_age: Option<DurationMs>,
    /// Branches and tags that never expire (exact names).
    #[serde(default)]
    pub protected_refs: Vec<String>,
    /// Per-ref overrides, by exact ref name.
    #[serde(default)]
    pub refs: BTreeMap<String, RefRetention>,
}

/// How long unreferenced objects wait, and the limits of readers and writers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileRetention {
    /// The window for unreferenced objects (the orphan sweep's `older-than`).
    pub orphan_safety_interval: DurationMs,
    /// The longest a reader lease may last; longer leases are capped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_reader_lease: Option<DurationMs>,
    /// The longest a writer may take between its first upload and its commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_writer_duration: Option<DurationMs>,
}

/// The bucket's object versioning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectVersioning {
    /// Deletes are final.
    #[default]
    Unversioned,
    /// Deletes leave a delete marker; old versions remain until lifecycle rules remove them.
    Enabled,
    /// Versioning was enabled and is now suspended.
    Suspended,
}

/// A `lakehouseRetentionPolicy.v1` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// Always [`POLICY_SCHEMA`].
    pub schema: String,
    /// The table it is for.
    pub binding: Binding,
    /// Snapshot retention.
    #[serde(default)]
    pub snapshot_retention: SnapshotRetention,
    /// File retention.
    pub file_retention: FileRetention,
    /// The legal-hold generation the policy was written against; holds in
    /// the context with a newer generation win over plans made under it.
    #[serde(default)]
    pub legal_hold_generation: u64,
    /// The bucket's versioning mode.
    #[serde(default)]
    pub object_versioning: ObjectVersioning,
    /// A restore drill deletion waits for, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_drill: Option<RestoreDrill>,
}

/// The policy's restore-drill gate: no deletion is approved unless a drill
/// of at least `min_bundles` quarantine bundles (or every bundle, when the
/// table has fewer) passed no longer than `max_age` ago.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreDrill {
    /// Bundles a drill must verify, at least 1.
    pub min_bundles: u32,
    /// How long a passed drill counts (default 7 days).
    #[serde(default = "RestoreDrill::default_max_age")]
    pub max_age: DurationMs,
    /// Recovery time objective: the longest a full restore into scratch
    /// may take (`lakesweep drill --restore-into`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rto: Option<DurationMs>,
    /// Recovery point objective: how far back a full restore's recovery
    /// point may lie from the drill's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpo: Option<DurationMs>,
    /// How often a full restore drill is due (default: a quarter, 92 days).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_every: Option<DurationMs>,
}

impl RestoreDrill {
    fn default_max_age() -> DurationMs {
        DurationMs(7 * 86_400_000)
    }

    /// The gate as a sealed plan carries it.
    pub fn gate(&self) -> DrillGate {
        DrillGate {
            min_bundles: self.min_bundles,
            max_age_ms: self.max_age.0,
        }
    }
}

/// A restore-drill gate as sealed into a plan's tokens (plain numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DrillGate {
    /// Bundles a drill must verify (or every bundle, when fewer).
    pub min_bundles: u32,
    /// How long a passed drill counts, milliseconds.
    pub max_age_ms: i64,
}

/// One finding of [`Policy::check`], naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Dotted field path, e.g. `fileRetention.orphanSafetyInterval`.
    pub field: String,
    /// What is wrong and why it matters.
    pub message: String,
}

/// The result of validating a policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyReport {
    /// Refuse to use the policy while any error remains.
    pub errors: Vec<Finding>,
    /// Legal but risky settings.
    pub warnings: Vec<Finding>,
    /// The policy digest (SHA-256 hex over the canonical form).
    pub digest: String,
}

fn finding(field: &str, message: impl Into<String>) -> Finding {
    Finding {
        field: field.into(),
        message: message.into(),
    }
}

impl Policy {
    /// Parses a policy document; a syntax error or an unknown field is an
    /// [`Error::InvalidOptions`] on field `policy` naming the problem.
    pub fn parse(json: &str) -> Result<Policy> {
        let p: Policy = serde_json::from_str(json)
            .map_err(|e| Error::invalid("policy", format!("not a valid {POLICY_SCHEMA}: {e}")))?;
        if p.schema != POLICY_SCHEMA {
            return Err(Error::invalid(
                "policy.schema",
                format!("`{}` is not {POLICY_SCHEMA}", p.schema),
            ));
        }
        Ok(p)
    }

    /// Parses, then refuses the policy if [`Policy::check`] finds errors.
    pub fn parse_checked(json: &str) -> Result<Policy> {
        let p = Policy::parse(json)?;
        p.ensure_valid()?;
        Ok(p)
    }

    /// The first error [`Policy::check`] finds, as an
    /// [`Error::InvalidOptions`] naming the field.
    pub fn ensure_valid(&self) -> Result<()> {
        match self.check().errors.first() {
            Some(e) => Err(Error::invalid(
                &format!("policy.{}", e.field),
                e.message.clone(),
            )),
            None => Ok(()),
        }
    }

    /// Refuses a table the policy is not bound to (another uuid, another
    /// format version).
    pub fn ensure_binds(&self, md: &TableMetadata) -> Result<()> {
        if md.table_uuid.as_deref() != Some(self.binding.table_uuid.as_str()) {
            return Err(Error::invalid(
                "policy.binding.tableUuid",
                format!(
                    "the policy is for table {}, this table is {}",
                    self.binding.table_uuid,
                    md.table_uuid.as_deref().unwrap_or("(no uuid)")
                ),
            ));
        }
        match self.binding.format_version {
            Some(v) if v != md.format_version => Err(Error::invalid(
                "policy.binding.formatVersion",
                format!(
                    "the policy is for format version {v}, the table is {}",
                    md.format_version
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Refuses a context whose holds are older than `legalHoldGeneration`.
    pub fn ensure_holds_current(&self, ctx: &Context) -> Result<()> {
        let seen = ctx.hold_generation();
        if seen < self.legal_hold_generation {
            return Err(Error::invalid(
                "context.holds",
                format!(
                    "the context's holds are generation {seen}, the policy expects at least {}: the hold list is stale (or missing)",
                    self.legal_hold_generation
                ),
            ));
        }
        Ok(())
    }

    /// SHA-256 (hex) over the canonical JSON form: sorted keys, durations
    /// in milliseconds.
    pub fn digest(&self) -> String {
        let canonical = serde_json::to_value(self)
            .map(|v| v.to_string())
            .unwrap_or_default();
        let mut h = Sha256::new();
        h.update(canonical.as_bytes());
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Validates the policy: errors make it unusable, warnings are risky
    /// but legal settings.
    pub fn check(&self) -> PolicyReport {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let f = &self.file_retention;
        let s = &self.snapshot_retention;
        if self.binding.format != "iceberg" {
            errors.push(finding(
                "binding.format",
                format!(
                    "`{}`: this version enforces policies on Iceberg tables only",
                    self.binding.format
                ),
            ));
        }
        if self.binding.table_uuid.trim().is_empty() {
            errors.push(finding("binding.tableUuid", "must name the table's uuid"));
        }
        if let Some(d) = &self.restore_drill {
            if d.min_bundles == 0 {
                errors.push(finding(
                    "restoreDrill.minBundles",
                    "must be at least 1 (leave restoreDrill out for no drill gate)",
                ));
            }
            if d.max_age.0 <= 0 {
                errors.push(finding("restoreDrill.maxAge", "must be positive"));
            }
            for (field, v) in [("rto", d.rto), ("rpo", d.rpo), ("fullEvery", d.full_every)] {
                if v.is_some_and(|v| v.0 <= 0) {
                    errors.push(finding(
                        &format!("restoreDrill.{field}"),
                        "must be positive",
                    ));
                }
            }
        }
        if f.orphan_safety_interval.0 < crate::duration::MIN_FILE_RETENTION_MS {
            errors.push(finding(
                "fileRetention.orphanSafetyInterval",
                "shorter than one hour: files of in-flight writers would be swept",
            ));
        }
        if let Some(w) = f.max_writer_duration {
            if f.orphan_safety_interval <= w {
                errors.push(finding(
                    "fileRetention.orphanSafetyInterval",
                    format!(
                        "{} is not greater than maxWriterDuration {}: a writer's uncommitted files would be swept",
                        crate::duration::human_ms(f.orphan_safety_interval.0),
                        crate::duration::human_ms(w.0)
                    ),
                ));
            }
        }
        if s.retain_last == Some(0) {
            errors.push(finding(
                "snapshotRetention.retainLast",
                "must be at least 1 (the current snapshot always stays)",
            ));
        }
        for (name, r) in &s.refs {
            if r.min_snapshots_to_keep == Some(0) {
                errors.push(finding(
                    &format!("snapshotRetention.refs.{name}.minSnapshotsToKeep"),
                    "must be at least 1",
                ));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for r in &s.protected_refs {
            if !seen.insert(r.to_lowercase()) {
                warnings.push(finding(
                    "snapshotRetention.protectedRefs",
                    format!("`{r}` is listed twice (letter case ignored)"),
                ));
            }
        }
        if let Some(age) = s.max_snapshot_age {
            if f.orphan_safety_interval == age {
                warnings.push(finding(
                    "fileRetention.orphanSafetyInterval",
                    "equals snapshotRetention.maxSnapshotAge: no safety margin for readers that resolved a snapshot just before it expired",
                ));
            }
            if let Some(lease) = f.max_reader_lease {
                if lease > age {
                    warnings.push(finding(
                        "fileRetention.maxReaderLease",
                        format!(
                            "{} is longer than snapshotRetention.maxSnapshotAge {}: leases, not the policy, will decide how long snapshots live",
                            crate::duration::human_ms(lease.0),
                            crate::duration::human_ms(age.0)
                        ),
                    ));
                }
            }
            if let Some(min) = s.min_snapshot_age {
                if min > age {
                    warnings.push(finding(
                        "snapshotRetention.minSnapshotAge",
                        "is longer than maxSnapshotAge: maxSnapshotAge has no effect",
                    ));
                }
            }
        }
        for (field, d) in [
            ("snapshotRetention.maxSnapshotAge", s.max_snapshot_age),
            ("snapshotRetention.maxRefAge", s.max_ref_age),
        ] {
            if d.is_some_and(|d| d.0 <= 0) {
                warnings.push(finding(
                    field,
                    "is zero: every snapshot (or ref) past the minimum count expires at once",
                ));
            }
        }
        if self.object_versioning != ObjectVersioning::Unversioned {
            warnings.push(finding(
                "objectVersioning",
                "deletes leave noncurrent versions: space is reclaimed only when the bucket's lifecycle rules remove them",
            ));
        }
        PolicyReport {
            errors,
            warnings,
            digest: self.digest(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(extra: &str) -> String {
        format!(
            r#"{{"schema":"lakehouseRetentionPolicy.v1",
                "binding":{{"tableUuid":"u-1","format":"iceberg"}},
                "fileRetention":{{"orphanSafetyInterval":"3d","maxWriterDuration":"6h"}}{extra}}}"#
        )
    }

    #[test]
    fn durations_need_units() {
        assert_eq!(parse_duration("12h"), Ok(43_200_000));
        assert_eq!(parse_duration("30d"), Ok(2_592_000_000));
        assert!(parse_duration("12").is_err());
        assert!(parse_duration("3y").is_err());
        let bare = doc("").replace("\"3d\"", "259200000");
        let e = Policy::parse(&bare).unwrap_err().to_string();
        assert!(e.contains("needs a unit"), "{e}");
    }

    #[test]
    fn unknown_fields_and_schemas_are_refused() {
        assert!(Policy::parse(&doc(r#","retainLats":3"#)).is_err());
        let e = Policy::parse(&doc("").replace(".v1", ".v9")).unwrap_err();
        assert!(e.to_string().contains("policy.schema"), "{e}");
        assert!(Policy::parse(&doc("")).unwrap().check().errors.is_empty());
    }

    #[test]
    fn inconsistent_windows_are_named() {
        let p = Policy::parse(&doc("").replace("\"6h\"", "\"3d\"")).unwrap();
        let r = p.check();
        assert_eq!(r.errors[0].field, "fileRetention.orphanSafetyInterval");
        assert!(Policy::parse_checked(&doc("").replace("\"6h\"", "\"3d\"")).is_err());
        let p = Policy::parse(&doc(r#","snapshotRetention":{"maxSnapshotAge":"3d"}"#)).unwrap();
        assert_eq!(
            p.check().warnings[0].field,
            "fileRetention.orphanSafetyInterval"
        );
    }

    #[test]
    fn digest_is_over_the_canonical_form() {
        let a = Policy::parse(&doc("")).unwrap();
        let b = Policy::parse(&doc("").replace("\"3d\"", "\"72h\"")).unwrap();
        assert_eq!(a.digest(), b.digest());
        let c = Policy::parse(&doc("").replace("\"3d\"", "\"4d\"")).unwrap();
        assert_ne!(a.digest(), c.digest());
    }
}
