//! Delta table features (`protocol.readerFeatures` / `writerFeatures`):
//! every name the Delta protocol, its RFCs and the writers in the field use
//! today, each with the decision a sweeper makes about it.
//!
//! A feature matters to a sweeper only when it changes **which files a
//! version references** or **when a file may go**. Those it understands are
//! handled where the log is read (deletion vectors, change data, V2
//! checkpoint sidecars, checkpoint protection, UniForm metadata); those it
//! does not are refused by name. A feature that changes neither (a column
//! type, a constraint, a collation) is accepted. A name missing from the
//! table is refused: nothing is guessed about a feature nobody has read.

/// What a sweeper does with a table that lists a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The feature changes neither which files a version references nor
    /// when a file may go: the table is read as without it.
    NoFileEffect,
    /// The feature changes what is referenced or when it may go, and the
    /// planner handles it (the text says how).
    Handled(&'static str),
    /// The feature changes what is referenced or when it may go in a way
    /// the planner cannot follow from `_delta_log/` alone: refused.
    Refused(&'static str),
}

/// One table feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    /// The name as it appears in the protocol action.
    pub name: &'static str,
    /// True for a reader-writer feature (listed in `readerFeatures` too).
    pub reader_writer: bool,
    /// What it does, in a line.
    pub what: &'static str,
    /// The sweeper's decision.
    pub decision: Decision,
}

const fn f(
    name: &'static str,
    reader_writer: bool,
    what: &'static str,
    decision: Decision,
) -> Feature {
    Feature {
        name,
        reader_writer,
        what,
        decision,
    }
}

use Decision::{Handled, NoFileEffect, Refused};

const STAGED: &str = "the catalog decides which commits exist: ratified commits may sit in the catalog or in `_delta_log/_staged_commits/` (failed attempts beside them) and cleanup is the catalog's to allow, so the log listing is not the table";

/// Every known feature, in the order the protocol introduced them.
pub const FEATURES: &[Feature] = &[
    f("appendOnly", false, "`delta.appendOnly`: no removes or updates", NoFileEffect),
    f("invariants", false, "column invariants", NoFileEffect),
    f("checkConstraints", false, "CHECK constraints", NoFileEffect),
    f(
        "changeDataFeed",
        false,
        "change data in `_change_data/`, named by `cdc` actions of commits only",
        Handled("change-data files of commits inside the window are kept, also those of commits just before the checkpoint"),
    ),
    f("generatedColumns", false, "generated columns", NoFileEffect),
    f(
        "columnMapping",
        true,
        "logical column names mapped to physical ones (random path prefixes in `name` and `id` mode)",
        Handled("paths are the log's, whatever the folders are called; nothing is read from data files"),
    ),
    f("identityColumns", false, "identity columns", NoFileEffect),
    f(
        "deletionVectors",
        true,
        "deletion-vector files named by `add`/`remove.deletionVector`",
        Handled("the DV file of every live file and of every tombstone inside the window is kept (one file may serve many); a checkpoint without DV columns is refused"),
    ),
    f("rowTracking", false, "row ids and commit versions (domain metadata, columns in data files)", NoFileEffect),
    f("timestampNtz", true, "TIMESTAMP_NTZ columns", NoFileEffect),
    f("timestampWithoutTimezone", true, "an old writer's name for timestampNtz", NoFileEffect),
    f("domainMetadata", false, "`domainMetadata` actions", NoFileEffect),
    f(
        "v2Checkpoint",
        true,
        "UUID-named checkpoints whose adds may sit in `_delta_log/_sidecars/`",
        Handled("sidecars are read (a missing one stops the plan) and kept with the checkpoints that name them"),
    ),
    f("icebergCompatV1", false, "UniForm: Iceberg metadata under `metadata/`", Handled("`metadata/` is reserved: sweep it as an Iceberg table")),
    f("icebergCompatV2", false, "UniForm: Iceberg metadata under `metadata/`", Handled("`metadata/` is reserved: sweep it as an Iceberg table")),
    f("icebergCompatV3", false, "UniForm v3: Iceberg metadata under `metadata/`, deletion vectors allowed", Handled("`metadata/` is reserved: sweep it as an Iceberg table")),
    f("icebergWriterCompatV1", false, "a stricter icebergCompatV2 (UniForm)", Handled("`metadata/` is reserved: sweep it as an Iceberg table")),
    f("icebergWriterCompatV3", false, "a stricter icebergCompatV3 (UniForm)", Handled("`metadata/` is reserved: sweep it as an Iceberg table")),
    f("clustering", false, "liquid clustering (domain metadata)", NoFileEffect),
    f(
        "vacuumProtocolCheck",
        true,
        "VACUUM must check the writer protocol too",
        Handled("every writer feature is checked against this table before anything is planned"),
    ),
    f(
        "inCommitTimestamp",
        false,
        "commit times from `commitInfo.inCommitTimestamp`",
        Handled("tombstones expire by `remove.deletionTimestamp`; log cleanup goes by the listed times of commit files, as Spark's does, and keeps the commit at the cutoff checkpoint"),
    ),
    f("typeWidening", true, "columns widened in place; older files keep the narrower type", NoFileEffect),
    f("typeWidening-preview", true, "preview name of typeWidening", NoFileEffect),
    f("variantType", true, "VARIANT columns", NoFileEffect),
    f("variantType-preview", true, "preview name of variantType", NoFileEffect),
    f("variantShredding", true, "shredded VARIANT columns inside Parquet", NoFileEffect),
    f("variantShredding-preview", true, "preview name of variantShredding", NoFileEffect),
    f("allowColumnDefaults", false, "column default values", NoFileEffect),
    f(
        "checkpointProtection",
        false,
        "checkpoints before `delta.requireCheckpointProtectionBeforeVersion` may be removed only by writers that support every protocol before it",
        Handled("log cleanup is skipped for the table (data files are planned as usual)"),
    ),
    f("collations", false, "collated strings (domain metadata)", NoFileEffect),
    f("collations-preview", false, "preview name of collations", NoFileEffect),
    f("materializePartitionColumns", false, "partition values also written inside data files", NoFileEffect),
    f("geospatial", true, "GEOMETRY and GEOGRAPHY columns", NoFileEffect),
    f("geospatial-dev", true, "preview name of geospatial", NoFileEffect),
    f("timestampNanos", true, "nanosecond timestamps", NoFileEffect),
    f("columnMappingUsageTracking", false, "records whether columns were dropped or renamed", NoFileEffect),
    f("catalogManaged", true, "commits ratified by a catalog", Refused(STAGED)),
    f("catalogOwned-preview", true, "preview name of catalogManaged", Refused(STAGED)),
    f(
        "coordinatedCommits-preview",
        false,
        "commits ratified by a commit coordinator",
        Refused("commits may sit in `_delta_log/_commits/` or `_staged_commits/` until a coordinator backfills them: the log listing is not the table"),
    ),
    f(
        "redirectReaderWriter-preview",
        true,
        "reads and writes redirected to another table",
        Refused("the table's reads and writes go to another table (a redirect being set up blocks writes): sweep the table it names"),
    ),
    f(
        "redirectWriterOnly-preview",
        false,
        "writes redirected to another table",
        Refused("the table's writes go to another table: sweep the table it names"),
    ),
    f(
        "adaptiveMetadata",
        true,
        "Iceberg v4 manifest trees inside a Delta table",
        Refused("manifests may lie anywhere and removes are not kept as tombstones: files are referenced from outside `_delta_log/`"),
    ),
    f("adaptiveMetadata-preview", true, "preview name of adaptiveMetadata", Refused("manifests may lie anywhere and removes are not kept as tombstones: files are referenced from outside `_delta_log/`")),
];

/// The feature named `name`, if the table knows it (names are compared
/// exactly, as the protocol spells them).
pub fn feature(name: &str) -> Option<&'static Feature> {
    FEATURES.iter().find(|f| f.name == name)
}

/// Why a table listing `name` cannot be swept, or `None` when it can.
/// `in_reader_features`: listed in `readerFeatures` (only reader-writer
/// features belong there).
pub fn refusal(name: &str, in_reader_features: bool) -> Option<String> {
    match feature(name) {
        None => Some(format!(
            "Delta {} feature {name} (not a feature lakesweep knows: what it does to the files a version references is unknown)",
            if in_reader_features { "reader" } else { "writer" }
        )),
        Some(Feature {
            decision: Refused(why),
            ..
        }) => Some(format!("Delta table feature {name}: {why}")),
        Some(f) if in_reader_features && !f.reader_writer => Some(format!(
            "Delta reader feature {name} (a writer-only feature listed as a reader feature)"
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_decisions_explained() {
        let mut seen = std::collections::BTreeSet::new();
        for f in FEATURES {
            assert!(seen.insert(f.name), "{} twice", f.name);
            assert!(!f.what.is_empty());
            if let Handled(w) | Refused(w) = f.decision {
                assert!(!w.is_empty(), "{}", f.name);
            }
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(refusal("deletionVectors", true), None);
        assert_eq!(refusal("collations", false), None);
        assert!(refusal("catalogManaged", true)
            .unwrap()
            .contains("_staged_commits"));
        assert!(refusal("fancyNewThing", false)
            .unwrap()
            .contains("writer feature fancyNewThing"));
        assert!(refusal("appendOnly", true).is_some());
        // Exact spelling, as kernel-rs compares them.
        assert!(refusal("DeletionVectors", true).is_some());
    }
}
