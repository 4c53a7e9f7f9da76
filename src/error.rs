//! The one error type of the crate, grouped by who must act.

use std::fmt;

/// Why a sweep must not go ahead even though every input parsed.
///
/// Each reason means "delete nothing for this table now"; none is a bug in
/// the host or the table, they are states of the world that make a plan unsafe.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum UnsafeReason {
    /// A blob needed for the keep set (metadata, manifest list, manifest) does not exist.
    MissingMetadata,
    /// A `*.metadata.json` under the location belongs to another table (shared location).
    ForeignTable,
    /// The metadata's `location` is not the location the sweep was started for.
    LocationMismatch,
    /// The listing holds objects but none of them matches a referenced key
    /// (wrong scheme, relocated table, encoded vs decoded paths).
    NoReferencedKeyListed,
    /// The table kept changing while we re-checked it.
    TableChanging,
    /// The table forbids garbage collection (`gc.enabled=false`).
    GcDisabled,
    /// A lease, hold or checkpoint of the run's context names a snapshot (or
    /// ref) the table no longer has: its files cannot be identified.
    ProtectedSnapshotMissing,
    /// The pointer names an older document than the table's newest
    /// (a lagging `version-hint.text`, a stale fixed pointer), or an older
    /// one than an earlier read of the same run named.
    StalePointer,
    /// Another table of the run has one and the same location or write
    /// root (in any spelling): neither table's plan can tell whose keys
    /// are whose.
    SharedLocation,
    /// The table's location or a write root lies inside another table's:
    /// that table's files may lie under it (the outer table's plan keeps
    /// the prefix, as `foreign`).
    NestedTable,
    /// A stop switch is set (or could not be read, or holds no valid
    /// document): an operator halted every deleter. Nothing is deleted
    /// until it is cleared (`resume`).
    Halted,
}

impl UnsafeReason {
    /// Stable kebab-case name, as used in JSON and WIT.
    pub fn as_str(self) -> &'static str {
        match self {
            UnsafeReason::MissingMetadata => "missing-metadata",
            UnsafeReason::ForeignTable => "foreign-table",
            UnsafeReason::LocationMismatch => "location-mismatch",
            UnsafeReason::NoReferencedKeyListed => "no-referenced-key-listed",
            UnsafeReason::TableChanging => "table-changing",
            UnsafeReason::GcDisabled => "gc-disabled",
            UnsafeReason::ProtectedSnapshotMissing => "protected-snapshot-missing",
            UnsafeReason::StalePointer => "stale-pointer",
            UnsafeReason::SharedLocation => "shared-location",
            UnsafeReason::NestedTable => "nested-table",
            UnsafeReason::Halted => "halted",
        }
    }
}

/// What is wrong with a malformed file (who must act: the table's owner).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum MalformedReason {
    /// The bytes are not what the format says (JSON, Avro, Parquet, gzip,
    /// UTF-8), or are cut short inside a record.
    Encoding,
    /// A field the format requires is missing, empty, of the wrong type or
    /// out of range.
    Field,
    /// The file contradicts itself or the files it names: a ref to a
    /// snapshot it does not hold, a snapshot twice, a gap in the log, a
    /// cycle in the metadata graph.
    Inconsistent,
    /// A path inside it cannot be read as one key: a bad percent escape, not
    /// a URI, several readings.
    Path,
    /// A partial or failed write: an empty commit, one without actions, bytes
    /// that differ from what the listing or the manifest list said.
    PartialWrite,
}

impl MalformedReason {
    /// Stable kebab-case name, as used in JSON and WIT.
    pub fn as_str(self) -> &'static str {
        match self {
            MalformedReason::Encoding => "encoding",
            MalformedReason::Field => "field",
            MalformedReason::Inconsistent => "inconsistent",
            MalformedReason::Path => "path",
            MalformedReason::PartialWrite => "partial-write",
        }
    }
}

/// How the host broke the session protocol (who must act: the host's
/// authors).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolReason {
    /// An answer to a request never made, or made already.
    UnexpectedAnswer,
    /// A listed key that is not a URI, lies outside the listed prefix, or
    /// comes twice.
    BadKey,
    /// A call before its time: finish before done, a keep set asked before
    /// it is complete, a ledger step its states do not allow.
    OutOfOrder,
    /// A value the host passed that does not parse.
    BadInput,
}

impl ProtocolReason {
    /// Stable kebab-case name, as used in JSON and WIT.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolReason::UnexpectedAnswer => "unexpected-answer",
            ProtocolReason::BadKey => "bad-key",
            ProtocolReason::OutOfOrder => "out-of-order",
            ProtocolReason::BadInput => "bad-input",
        }
    }
}

/// Every failure of the planner. Any error means: no plan, delete nothing.
///
/// The variants are grouped by who must act, and map one-to-one onto the
/// WIT `error` variant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Error {
    /// The table's own files are broken (truncated Avro, malformed JSON, a
    /// field of the wrong type). Whoever owns the table must repair it.
    Malformed {
        /// What kind of damage.
        reason: MalformedReason,
        /// The blob (URI) that failed to parse.
        uri: String,
        /// What exactly is wrong.
        detail: String,
    },
    /// The table uses a feature this planner does not understand (a format
    /// version, an encrypted manifest list, an Avro codec). Nothing is guessed.
    Unsupported {
        /// The feature, named as the format names it.
        feature: String,
        /// Where it was found.
        uri: String,
    },
    /// The host broke the session protocol (an answer to a request never made,
    /// a listing key outside the table). A bug in the host.
    Protocol {
        /// What kind of mistake.
        reason: ProtocolReason,
        /// What the host did.
        detail: String,
    },
    /// The operator's options are invalid (a negative window, an unparsable
    /// location). Whoever configured the sweep must fix them.
    InvalidOptions {
        /// The option at fault.
        field: String,
        /// Why it is refused.
        detail: String,
    },
    /// Everything parsed, but deleting now would be unsafe.
    Unsafe {
        /// The condition found.
        reason: UnsafeReason,
        /// Specifics: which key, which table, which blob.
        detail: String,
    },
}

impl Error {
    pub(crate) fn malformed(reason: MalformedReason, uri: &str, detail: impl Into<String>) -> Self {
        Error::Malformed {
            reason,
            uri: uri.to_owned(),
            detail: detail.into(),
        }
    }
    pub(crate) fn unsupported(feature: impl Into<String>, uri: &str) -> Self {
        Error::Unsupported {
            feature: feature.into(),
            uri: uri.to_owned(),
        }
    }
    pub(crate) fn protocol(reason: ProtocolReason, detail: impl Into<String>) -> Self {
        Error::Protocol {
            reason,
            detail: detail.into(),
        }
    }
    pub(crate) fn invalid(field: &str, detail: impl Into<String>) -> Self {
        Error::InvalidOptions {
            field: field.to_owned(),
            detail: detail.into(),
        }
    }
    pub(crate) fn unsafe_(reason: UnsafeReason, detail: impl Into<String>) -> Self {
        Error::Unsafe {
            reason,
            detail: detail.into(),
        }
    }

    /// The same error with `context` put before what it says (its detail;
    /// an unsupported feature's place).
    pub(crate) fn within(self, context: &str) -> Self {
        match self {
            Error::Malformed {
                reason,
                uri,
                detail,
            } => Error::Malformed {
                reason,
                uri,
                detail: format!("{context}{detail}"),
            },
            Error::Unsupported { feature, uri } => Error::Unsupported {
                feature,
                uri: format!("{context}{uri}"),
            },
            Error::Protocol { reason, detail } => Error::Protocol {
                reason,
                detail: format!("{context}{detail}"),
            },
            Error::InvalidOptions { field, detail } => Error::InvalidOptions {
                field,
                detail: format!("{context}{detail}"),
            },
            Error::Unsafe { reason, detail } => Error::Unsafe {
                reason,
                detail: format!("{context}{detail}"),
            },
        }
    }

    /// Who must act, as a short stable word: `table`, `lakesweep`, `host`,
    /// `operator`, `wait`.
    pub fn who_must_act(&self) -> &'static str {
        match self {
            Error::Malformed { .. } => "table",
            Error::Unsupported { .. } => "lakesweep",
            Error::Protocol { .. } => "host",
            Error::InvalidOptions { .. } => "operator",
            Error::Unsafe { .. } => "wait",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Malformed {
                reason,
                uri,
                detail,
            } => write!(f, "malformed input ({}) {uri}: {detail}", reason.as_str()),
            Error::Unsupported { feature, uri } => write!(f, "unsupported: {feature} (in {uri})"),
            Error::Protocol { reason, detail } => {
                write!(f, "host protocol error ({}): {detail}", reason.as_str())
            }
            Error::InvalidOptions { field, detail } => {
                write!(f, "invalid option {field}: {detail}")
            }
            Error::Unsafe { reason, detail } => {
                write!(f, "unsafe to proceed ({}): {detail}", reason.as_str())
            }
        }
    }
}

impl std::error::Error for Error {}

/// Shorthand used across the crate.
pub type Result<T> = std::result::Result<T, Error>;
