//! How the interface's values are spelled: a planner error in one line,
//! verdicts, ledger states and delete results as the plan's JSON spells
//! them, an object version as JSON.

use crate::wit::wt;

/// One line for a planner error.
pub fn describe(e: &wt::Error) -> String {
    match e {
        wt::Error::Malformed(m) => format!(
            "malformed input ({}) {}: {}",
            malformed_name(m.reason),
            m.uri,
            m.detail
        ),
        wt::Error::Unsupported(u) => {
            format!("unsupported: {} (in {})", option_words(&u.feature), u.uri)
        }
        wt::Error::Protocol(p) => format!(
            "host protocol error ({}): {}",
            protocol_name(p.reason),
            p.detail
        ),
        wt::Error::InvalidOptions(i) => format!(
            "invalid option {}: {}",
            option_words(&i.field),
            option_words(&i.detail)
        ),
        wt::Error::Unsafe(u) => format!(
            "unsafe to proceed ({}): {}",
            unsafe_name(u.reason),
            option_words(&u.detail)
        ),
    }
}

/// The verdict's name as the plan JSON spells it.
pub fn verdict_name(v: wt::Verdict) -> &'static str {
    match v {
        wt::Verdict::Referenced => "referenced",
        wt::Verdict::NearMiss => "near-miss",
        wt::Verdict::Young => "young",
        wt::Verdict::Hidden => "hidden",
        wt::Verdict::Unverified => "unverified",
        wt::Verdict::OwnerCheck => "owner-check",
        wt::Verdict::Protected => "protected",
        wt::Verdict::Candidate => "candidate",
        wt::Verdict::Demoted => "demoted",
        wt::Verdict::ExpiredLog => "expired-log",
        wt::Verdict::Unaddressable => "unaddressable",
        wt::Verdict::FolderMarker => "folder-marker",
        wt::Verdict::Foreign => "foreign",
    }
}

/// A ledger state as ledger documents spell it (`DELETE_UNKNOWN`).
pub fn state_name(s: wt::ObjectState) -> &'static str {
    match s {
        wt::ObjectState::Protected => "PROTECTED",
        wt::ObjectState::Discovered => "DISCOVERED",
        wt::ObjectState::UnreferencedEligible => "UNREFERENCED_ELIGIBLE",
        wt::ObjectState::Quarantined => "QUARANTINED",
        wt::ObjectState::RestoreVerified => "RESTORE_VERIFIED",
        wt::ObjectState::DeleteApproved => "DELETE_APPROVED",
        wt::ObjectState::Deleted => "DELETED",
        wt::ObjectState::Verified => "VERIFIED",
        wt::ObjectState::DeleteUnknown => "DELETE_UNKNOWN",
    }
}

/// A delete's result as receipts spell it.
pub fn result_name(r: wt::DeleteResult) -> &'static str {
    match r {
        wt::DeleteResult::Deleted => "deleted",
        wt::DeleteResult::AlreadyAbsent => "already-absent",
        wt::DeleteResult::SkippedChanged => "skipped-changed",
        wt::DeleteResult::SkippedStopped => "skipped-stopped",
        wt::DeleteResult::SkippedProtected => "skipped-protected",
        wt::DeleteResult::Failed => "failed",
        wt::DeleteResult::Unknown => "unknown",
        wt::DeleteResult::Damaged => "damaged",
        wt::DeleteResult::WouldDelete => "would-delete",
    }
}

/// An object version as this host's own JSON outputs (receipts, reports)
/// write it: `{size, last_modified_ms, etag, version_id}`.
pub fn version_json(v: &wt::ObjectVersion) -> serde_json::Value {
    serde_json::json!({"size": v.size, "lastModifiedMs": v.last_modified_ms,
                       "etag": v.etag, "versionId": v.version_id})
}

/// An unsafe-reason's name, as the core spells it.
pub fn unsafe_name(r: wt::UnsafeReason) -> &'static str {
    match r {
        wt::UnsafeReason::MissingMetadata => "missing-metadata",
        wt::UnsafeReason::ForeignTable => "foreign-table",
        wt::UnsafeReason::LocationMismatch => "location-mismatch",
        wt::UnsafeReason::NoReferencedKeyListed => "no-referenced-key-listed",
        wt::UnsafeReason::TableChanging => "table-changing",
        wt::UnsafeReason::GcDisabled => "gc-disabled",
        wt::UnsafeReason::ProtectedSnapshotMissing => "protected-snapshot-missing",
        wt::UnsafeReason::StalePointer => "stale-pointer",
        wt::UnsafeReason::SharedLocation => "shared-location",
        wt::UnsafeReason::NestedTable => "nested-table",
        wt::UnsafeReason::Halted => "halted",
    }
}

/// A malformed-reason's name, as the core spells it.
fn malformed_name(r: wt::MalformedReason) -> &'static str {
    match r {
        wt::MalformedReason::Encoding => "encoding",
        wt::MalformedReason::Field => "field",
        wt::MalformedReason::Inconsistent => "inconsistent",
        wt::MalformedReason::Path => "path",
        wt::MalformedReason::PartialWrite => "partial-write",
    }
}

/// A protocol-reason's name, as the core spells it.
fn protocol_name(r: wt::ProtocolReason) -> &'static str {
    match r {
        wt::ProtocolReason::UnexpectedAnswer => "unexpected-answer",
        wt::ProtocolReason::BadKey => "bad-key",
        wt::ProtocolReason::OutOfOrder => "out-of-order",
        wt::ProtocolReason::BadInput => "bad-input",
    }
}

/// The planner's option names as this command line spells them: an error
/// names the option to use (`--older-than`), not a field of the planner's
/// configuration (`file_retention_ms`).
const OPTIONS: [(&str, &str); 9] = [
    ("location_map", "--location-map"),
    ("allow_short_retention", "--allow-short-retention"),
    ("file_retention_ms", "--older-than"),
    ("memory_budget_bytes", "--memory-budget"),
    ("metadata_location", "--metadata"),
    ("keep_versions", "--keep-version"),
    ("quarantine_ms", "--quarantine"),
    ("expire_ids", "--expire-id"),
    ("table_location", "TABLE"),
];

/// `text` with every planner option name replaced by its command-line name.
pub fn option_words(text: &str) -> String {
    // Whole words only: a key or URI that happens to contain a field's name
    // (`s3://b/table_location/x`) is printed as it is.
    let word = |c: char| c.is_ascii_alphanumeric() || "_/.:-".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while let Some(c) = rest.chars().next() {
        for (field, option) in OPTIONS {
            if let Some(after) = rest.strip_prefix(field) {
                let before_ok = !out.chars().last().is_some_and(word);
                let after_ok = !after.chars().next().is_some_and(word);
                if before_ok && after_ok {
                    out.push_str(option);
                    rest = after;
                    continue 'scan;
                }
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A rollout mode's name (`shadow`, `enforce`).
pub fn mode_name(m: wt::Mode) -> &'static str {
    match m {
        wt::Mode::Shadow => "shadow",
        wt::Mode::Enforce => "enforce",
    }
}
