//! The sealed plan: the document a session ends in. It names the exact
//! objects to delete ([`PlannedDelete`]) and the state they were judged on
//! ([`PlanTokens`]), sealed with a SHA-256 digest over both; the summary
//! ([`Summary`]) and the report for people ([`PlanReport`]) travel with it
//! outside the seal. A plan whose digest does not match its content is
//! refused when it is read back ([`SealedPlan::from_json`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::format::TableFormat;
use crate::verdict::{Decision, Verdict};

/// Schema name of sealed plan documents.
pub const PLAN_SCHEMA: &str = "lakesweep.plan.v3";

pub use crate::verdict::Tally;

/// What the session saw and decided, in numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Every listed object.
    pub listed: Tally,
    /// Final tallies by verdict name (`referenced`, `young`, `candidate`, ...).
    pub verdicts: BTreeMap<String, Tally>,
    /// Candidates by object kind (`data`, `manifest`, `metadata-json`, ...).
    pub reclaimable: BTreeMap<String, Tally>,
    /// Snapshots of the metadata document the plan was judged on (Delta:
    /// the versions kept, the newest and every one kept on purpose).
    pub snapshots: u64,
    /// Snapshots whose files are kept besides those: of a document the
    /// pointer named earlier in the run, or of a disaster-recovery
    /// checkpoint.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub snapshots_elsewhere: u64,
    /// Manifest lists and manifests read.
    pub manifests_read: u64,
    /// Distinct referenced keys inside the location.
    pub referenced_keys: u64,
    /// Referenced paths outside the location (never deletable, not listed).
    pub external_references: u64,
    /// Heap bytes of the frozen keep-set index (fingerprints and reasons), in
    /// bytes: what the planner's memory grows with.
    pub keep_set_bytes: u64,
    /// Referenced keys that the listing did not contain (missing files or a
    /// partial listing): worth investigating, never deleted by us.
    pub referenced_not_listed: u64,
    /// Listed objects settled by their names alone
    /// ([`crate::Session::handle_names`]): every one referenced, counted in
    /// `listed` and the `referenced` tally without bytes (their sizes were
    /// never read), so those tallies' bytes are a lower bound when this is
    /// not zero.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub listed_by_name: u64,
    /// Times the pointer moved during the session and was re-checked.
    pub rechecks: u32,
    /// The session's memory budget, in bytes.
    #[serde(default)]
    pub memory_budget_bytes: u64,
    /// Every prefix listed and swept: the table location's, then the
    /// table's other write roots (`write.data.path`, ...) outside it.
    #[serde(default)]
    pub swept_prefixes: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The state a plan was judged on. A plan may only be applied while these still hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanTokens {
    /// The metadata document the final keep set was built from.
    pub metadata_location: String,
    /// SHA-256 (hex) over the sorted `name=snapshot-id` lines of every ref.
    pub refs_digest: String,
    /// The refs themselves.
    pub refs: BTreeMap<String, i64>,
    /// Evaluation time, milliseconds since the Unix epoch.
    pub now_ms: i64,
    /// File-retention window, milliseconds.
    pub file_retention_ms: i64,
    /// Whether files of DELETED entries were kept.
    pub keep_deleted_entries: bool,
    /// Digest of the retention policy the plan was made under, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_digest: Option<String>,
    /// Newest legal-hold generation in the context (0: none); a hold with a
    /// newer generation makes the plan stale.
    #[serde(default)]
    pub hold_generation: u64,
    /// Newest reader generation among the context's leases (0: none); a
    /// lease registered after the plan raises it and blocks approval.
    #[serde(default)]
    pub lease_watermark: u64,
    /// Digest of the whole context the plan was made under (see
    /// [`crate::Context::digest`]); approval compares it with the live one.
    #[serde(default)]
    pub context_digest: String,
    /// Delta: the newest commit's identity (size, time, ETag) as listed. A
    /// commit file rewritten under the same version (an empty file whose
    /// content arrived later) is a different table generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<crate::version::ObjectVersion>,
    /// The policy's restore-drill gate, if it has one: approval needs a
    /// recent passed drill in the ledger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_drill: Option<crate::policy::DrillGate>,
    /// SHA-256 (hex) of the deleted-keys index the plan was checked
    /// against (see [`crate::SessionConfig::deleted_index`]); a ledger folds in
    /// only a plan checked against its own index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_index: Option<String>,
}

/// One object the plan deletes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedDelete {
    /// Key relative to the table location.
    pub key: String,
    /// Size in bytes, as listed.
    pub size: u64,
    /// Last-modified time as listed, milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
    /// Entity tag as listed, if any.
    pub etag: Option<String>,
    /// Version id as listed, if any.
    pub version_id: Option<String>,
}

/// The outcome of a session: the exact objects to delete, sealed with a
/// digest over them and the tokens they were judged on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealedPlan {
    /// Always [`PLAN_SCHEMA`].
    pub schema: String,
    /// Table format.
    pub format: TableFormat,
    /// Canonical table location (no trailing slash).
    pub table_location: String,
    /// The table's UUID, when the metadata has one.
    pub table_uuid: Option<String>,
    /// The state the plan was judged on.
    pub tokens: PlanTokens,
    /// How the plan was made (the host's document, see
    /// [`crate::SessionConfig::origin`]); sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Objects to delete, sorted by key.
    pub delete: Vec<PlannedDelete>,
    /// Counts and bytes.
    pub summary: Summary,
    /// Things an operator should look at (sorted, deduplicated); sealed.
    pub warnings: Vec<String>,
    /// Keys a ledger deleted that the table references now and the
    /// listing did not hold (see [`crate::SessionConfig::deleted_index`]); sealed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<DamagedReference>,
    /// SHA-256 (hex) over the canonical JSON of schema, format, location,
    /// uuid, tokens, origin, the delete list, the warnings and the damage.
    /// The summary is a report of what was seen (it differs with how the
    /// host listed: names first or not) and is not sealed.
    pub digest: String,
    /// What the plan keeps and why, for people (see [`SealedPlan::with_report`]):
    /// outside the seal, ignored when the plan is applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<PlanReport>,
}

/// A key a ledger deleted (or may have) that the table references now and
/// the listing did not hold: damage. Named by its fingerprint; the ledger
/// that passed the index knows the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DamagedReference {
    /// The key's fingerprint, 16 hex digits.
    pub fingerprint: String,
    /// What references it now, in words.
    pub reason: String,
}

/// An object a plan keeps, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptObject {
    /// Key relative to the table location.
    pub key: String,
    /// Its verdict.
    pub reason: Verdict,
    /// Why, in words.
    pub detail: String,
    /// Size in bytes, as listed.
    pub size: u64,
}

/// The part of a plan document written for people: every listed object
/// the plan neither deletes nor finds referenced, with its verdict and why
/// (young, protected, near-miss, hidden, ...), and what the host could not
/// hand to the planner. Referenced objects, the table's live data, are
/// counted in the summary (`explain` gives one's references): listing them
/// all would grow the document with the table. Not sealed: the seal covers
/// what is deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReport {
    /// Kept objects, sorted by key.
    pub keep: Vec<KeptObject>,
    /// Listed names the host cannot represent (never given to the planner,
    /// so never deleted), as the store spelled them.
    pub unrepresentable: Vec<String>,
    /// What the host's store client had to say (a fallback it took).
    pub store_notes: Vec<String>,
}

impl SealedPlan {
    /// The digest the plan should carry, recomputed from its content.
    pub fn compute_digest(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Sealed<'a> {
            schema: &'a str,
            format: TableFormat,
            table_location: &'a str,
            table_uuid: &'a Option<String>,
            tokens: &'a PlanTokens,
            #[serde(skip_serializing_if = "Option::is_none")]
            origin: &'a Option<String>,
            delete: &'a [PlannedDelete],
            warnings: &'a [String],
            #[serde(skip_serializing_if = "<[DamagedReference]>::is_empty")]
            damaged: &'a [DamagedReference],
        }
        // Hashed as it is written: a plan of a million deletes is never
        // held twice.
        let mut h = crate::digest::HashWriter::default();
        // Writing into a hash cannot fail, nor can these types fail to
        // serialise.
        let _ = serde_json::to_writer(
            &mut h,
            &Sealed {
                schema: &self.schema,
                format: self.format,
                table_location: &self.table_location,
                table_uuid: &self.table_uuid,
                tokens: &self.tokens,
                origin: &self.origin,
                delete: &self.delete,
                warnings: &self.warnings,
                damaged: &self.damaged,
            },
        );
        h.hex()
    }

    /// This plan with its report: of `decisions` (the session's, in the
    /// order drained: a later one for a key replaces an earlier one), every
    /// key the plan does not delete and whose last verdict is not
    /// `referenced`, with its verdict and why; and the host's
    /// `unrepresentable` names and `store_notes`. So the human report, the
    /// JSON and the sealed list are one document: kept and deleted never
    /// overlap. The digest is unchanged.
    pub fn with_report(
        mut self,
        decisions: Vec<Decision>,
        unrepresentable: Vec<String>,
        store_notes: Vec<String>,
    ) -> SealedPlan {
        let deleted: std::collections::BTreeSet<&str> =
            self.delete.iter().map(|d| d.key.as_str()).collect();
        let mut last: BTreeMap<String, Decision> = BTreeMap::new();
        for d in decisions {
            last.insert(d.relative_key.clone(), d);
        }
        let keep = last
            .into_values()
            .filter(|d| {
                d.verdict != Verdict::Referenced && !deleted.contains(d.relative_key.as_str())
            })
            .map(|d| KeptObject {
                key: d.relative_key,
                reason: d.verdict,
                detail: d.detail,
                size: d.size,
            })
            .collect();
        self.report = Some(PlanReport {
            keep,
            unrepresentable,
            store_notes,
        });
        self
    }

    /// Canonical JSON text of the plan (compact, fields in declaration order).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a plan document and checks its digest; an edited plan is refused.
    pub fn from_json(text: &str) -> Result<SealedPlan> {
        // The schema alone (the rest skipped, never built as a tree).
        #[derive(Deserialize)]
        struct SchemaOnly {
            schema: Option<String>,
        }
        let schema = serde_json::from_str::<SchemaOnly>(text)
            .ok()
            .and_then(|v| v.schema);
        if let Some(old @ ("lakesweep.plan.v1" | "lakesweep.plan.v2")) = schema.as_deref() {
            return Err(Error::invalid(
                "plan",
                format!("a plan made by an earlier lakesweep ({old}, which sealed less): plan again; a plan only holds while its table is unchanged anyway"),
            ));
        }

        let plan: SealedPlan = serde_json::from_str(text)
            .map_err(|e| Error::invalid("plan", format!("not a lakesweep plan: {e}")))?;
        if plan.schema != PLAN_SCHEMA {
            return Err(Error::invalid(
                "plan",
                format!("unknown plan schema `{}`", plan.schema),
            ));
        }
        if plan.compute_digest() != plan.digest {
            return Err(Error::invalid(
                "plan",
                "digest does not match the content (edited or damaged plan)",
            ));
        }
        Ok(plan)
    }
}

/// A sealed plan over `s3://b/t`, judged at 1,000,000 ms, deleting `keys`
/// (key, size; listed at time 0, no ETag) under `context`: the one fixture
/// of the acceptance and ledger unit tests.
#[cfg(test)]
pub(crate) fn plan_for_tests(keys: &[(&str, u64)], context: Option<&str>) -> SealedPlan {
    let ctx = context
        .map(|c| crate::Context::parse(c).unwrap())
        .unwrap_or_default();
    let mut p = SealedPlan {
        schema: PLAN_SCHEMA.into(),
        format: TableFormat::Iceberg,
        table_location: "s3://b/t".into(),
        table_uuid: None,
        tokens: PlanTokens {
            metadata_location: "s3://b/t/metadata/v3.metadata.json".into(),
            refs_digest: String::new(),
            refs: BTreeMap::new(),
            now_ms: 1_000_000,
            file_retention_ms: 0,
            keep_deleted_entries: true,
            policy_digest: None,
            hold_generation: ctx.hold_generation(),
            lease_watermark: ctx.lease_watermark(),
            context_digest: ctx.digest(),
            head: None,
            restore_drill: None,
            deleted_index: None,
        },
        origin: None,
        delete: keys
            .iter()
            .map(|(k, size)| PlannedDelete {
                key: (*k).into(),
                size: *size,
                last_modified_ms: 0,
                etag: None,
                version_id: None,
            })
            .collect(),
        summary: Summary::default(),
        warnings: Vec::new(),
        damaged: Vec::new(),
        digest: String::new(),
        report: None,
    };
    p.digest = p.compute_digest();
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(key: &str, verdict: Verdict) -> Decision {
        Decision {
            key: format!("s3://b/t/{key}"),
            relative_key: key.into(),
            verdict,
            detail: format!("{verdict:?}"),
            size: 7,
            last_modified_ms: 1,
            etag: None,
            version_id: None,
        }
    }

    /// The report keeps every decided key the plan does not delete, with
    /// its last verdict; the seal does not cover it.
    #[test]
    fn the_report_is_every_decided_key_the_plan_does_not_delete() {
        let plan = plan_for_tests(&[("data/a", 1)], None);
        let digest = plan.digest.clone();
        let plan = plan.with_report(
            vec![
                decided("data/a", Verdict::Candidate),
                decided("data/b", Verdict::Candidate),
                decided("data/b", Verdict::Demoted),
                decided("data/c", Verdict::Young),
                decided("data/d", Verdict::Candidate),
                decided("data/d", Verdict::Referenced),
            ],
            vec!["odd".into()],
            vec!["note".into()],
        );
        let report = plan.report.clone().unwrap();
        let kept: Vec<(&str, Verdict)> = report
            .keep
            .iter()
            .map(|k| (k.key.as_str(), k.reason))
            .collect();
        assert_eq!(
            kept,
            [("data/b", Verdict::Demoted), ("data/c", Verdict::Young)]
        );
        assert_eq!(report.unrepresentable, ["odd"]);
        assert_eq!(plan.compute_digest(), digest);
        let back = SealedPlan::from_json(&plan.to_json()).expect("a reported plan verifies");
        assert_eq!(back.report, plan.report);
    }

    /// The host's origin document is sealed: an edited origin is refused,
    /// and a plan without one keeps its digest.
    #[test]
    fn the_origin_is_sealed() {
        let bare = plan_for_tests(&[("data/a", 1)], None);
        let mut made = bare.clone();
        made.origin = Some(r#"{"pointer":"a"}"#.into());
        made.digest = made.compute_digest();
        assert_ne!(made.digest, bare.digest);
        let text = made.to_json();
        assert_eq!(SealedPlan::from_json(&text).unwrap().origin, made.origin);
        let edited = text.replace(r#"\"pointer\":\"a\""#, r#"\"pointer\":\"b\""#);
        assert_ne!(edited, text);
        assert!(SealedPlan::from_json(&edited).is_err());
        assert!(!bare.to_json().contains("origin"));
    }
}
