//! The command line: clap (derive) parses it into one struct per command,
//! built of option groups shared by the commands (pointer, context, location
//! map, the planner). These structs are the commands' inputs: there is no
//! second layer of arguments. `parse` checks what clap cannot (options that
//! exclude each other across groups, a pointer that names one table) so a
//! command never starts on bad usage. Durations are humantime's (`72h`,
//! `3d`), times RFC 3339 (jiff) or epoch milliseconds.

use clap::{Args, Parser, Subcommand};

use crate::error::HostError;

use crate::catalogs::pointer::Pointer;
use crate::catalogs::Catalog;
use crate::session::context::ContextFiles;
use crate::session::plan::Format;

/// Shown after every command's `--help`.
const ENVIRONMENT: &str =
    "Stores: credentials and endpoints come from the environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP; GOOGLE_*; AZURE_*).
Exit status: 0 done, 1 finished but some keys failed, changed or stayed unknown,
2 refused (nothing deleted), 3 damage found after deleting, 64 bad usage.";

/// `lakesweep`: plans and carries out garbage collection of lakehouse tables.
#[derive(Parser, Debug)]
#[command(
    name = "lakesweep",
    version,
    about,
    arg_required_else_help = true,
    after_help = ENVIRONMENT
)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// A command and its options, as clap derives them: each command takes its
/// own struct as its input.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Plans a sweep: every object's verdict and why; deletes nothing.
    Plan(PlanCmd),
    /// One object's verdict, with its evidence.
    Explain(ExplainCmd),
    /// Deletes exactly the keys of a sealed plan, each batch accepted by the
    /// planner against the live table first.
    Apply(ApplyCmd),
    /// Whether each table's sweep still runs: the last step's age, objects
    /// per state, what waits, the gates (exit 1 when one is stale).
    Status(StatusCmd),
    /// Diffs a plan's delete list with another tool's candidate list.
    Compare(CompareCmd),
    /// Plans snapshot expiry (and with --commit carries it out).
    Expire(ExpireCmd),
    /// Retention policy documents.
    #[command(subcommand)]
    Policy(PolicyCmd),
    /// Pinot/StarTree snapshot artifacts and segments: plan, apply.
    #[command(subcommand)]
    Pinot(PinotCmd),
    /// One two-phase deletion step (run it on a schedule).
    Sweep(SweepCmd),
    /// Stops every deleter: sets the stop switches every `apply`, `sweep`,
    /// Spark, Python, Node and `pinot apply` run reads before each batch.
    Halt(SwitchCmd),
    /// Clears stop switches set by `halt`.
    Resume(SwitchCmd),
    /// Moves a fleet's cohort between shadow and enforce, through the gate.
    Move(MoveCmd),
    /// HEADs every unconfirmed delete of the ledger and records the answers.
    Reconcile(LedgerTarget),
    /// Proves that a seeded sample of quarantine bundles would restore.
    Drill(DrillCmd),
    /// The deletion ledger.
    #[command(subcommand)]
    Ledger(LedgerCmd),
    /// Brings quarantined snapshots back from their bundle.
    Restore(RestoreCmd),
}

/// Plans a sweep: every object's verdict and why; deletes nothing.
#[derive(Args, Debug, Clone)]
pub struct PlanCmd {
    #[command(flatten)]
    pub plan: PlanOpts,
    /// Writes the sealed plan (the input of apply and compare) to FILE.
    #[arg(long, value_name = "FILE")]
    pub out: Option<String>,
    #[command(flatten)]
    pub many: ManyOpts,
}

/// One object's verdict, with its evidence.
#[derive(Args, Debug, Clone)]
pub struct ExplainCmd {
    #[command(flatten)]
    pub plan: PlanOpts,
    /// The key (relative to the table, or its whole URI).
    #[arg(value_name = "KEY")]
    pub key: Option<String>,
}

/// Deletes exactly the keys of a sealed plan, each batch accepted by the
/// planner against the live table first.
#[derive(Args, Debug, Clone)]
pub struct ApplyCmd {
    /// The sealed plans (`plan --out`), or folders of them (`plan
    /// --out-dir`), applied one after another.
    #[arg(value_name = "PLAN.json", required = true)]
    pub plans: Vec<String>,
    #[command(flatten)]
    pub pointer: PointerOpts,
    #[command(flatten)]
    pub map: MapOpts,
    #[command(flatten)]
    pub context: ContextOpts,
    #[command(flatten)]
    pub deletes: DeleteOpts,
    /// Checks every key, deletes nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Lists every key with its result and size.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Receipt lines (default PLAN.json.receipts.jsonl).
    #[arg(long, value_name = "FILE")]
    pub receipts: Option<String>,
    /// Accepts a plan judged ahead of the clock (tests, what-if runs).
    #[arg(long)]
    pub allow_future_now: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Whether each table's sweep still runs: the last step's age, objects
/// per state, what waits, the gates (exit 1 when one is stale).
#[derive(Args, Debug, Clone)]
pub struct StatusCmd {
    /// Table locations.
    #[arg(value_name = "TABLE", required_unless_present = "namespace")]
    pub tables: Vec<String>,
    /// Every Iceberg table of this namespace of --catalog too.
    #[arg(long, value_name = "NS", requires = "catalog")]
    pub namespace: Option<String>,
    /// The catalog --namespace lists (sqlite:PATH, glue, rest:URL, trino:FILE, spark:NAME).
    #[arg(long, value_name = "CATALOG", requires = "namespace")]
    pub catalog: Option<String>,
    /// The ledger, for one table swept with `--ledger` (default
    /// TABLE/_lakesweep/ledger.json for each table).
    #[arg(long, value_name = "URI")]
    pub ledger: Option<String>,
    /// A table whose last sweep step is older than this is stale (as is
    /// one never swept): exit 1.
    #[arg(long, value_name = "DURATION", value_parser = duration_ms)]
    pub max_age: Option<i64>,
    /// Also writes Prometheus text-format metrics to FILE (`-`: stdout),
    /// whole or not at all (node-exporter's textfile collector).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<String>,
    #[command(flatten)]
    pub now: NowOpts,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Diffs a plan's delete list with another tool's candidate list.
#[derive(Args, Debug, Clone)]
pub struct CompareCmd {
    /// The sealed plan.
    #[arg(value_name = "PLAN.json")]
    pub plan: String,
    /// One key or URI per line (remove_orphan_files, VACUUM DRY RUN, ...).
    #[arg(value_name = "OTHER.txt")]
    pub other: String,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Plans snapshot expiry (and with --commit carries it out).
#[derive(Args, Debug, Clone)]
pub struct ExpireCmd {
    /// The table location.
    pub table: String,
    #[command(flatten)]
    pub pointer: PointerOpts,
    #[command(flatten)]
    pub policy: PolicyOpt,
    #[command(flatten)]
    pub context: ContextOpts,
    #[command(flatten)]
    pub when: NowOpts,
    #[command(flatten)]
    pub future: FutureOpt,
    #[command(flatten)]
    pub map: MapOpts,
    /// Also expires this snapshot (refused while a ref points at it).
    #[arg(long = "expire-id", value_name = "ID")]
    pub expire_ids: Vec<i64>,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Carries the expiry out (the catalog's compare-and-set or REST
    /// commit, or the next vN.metadata.json and version-hint.text).
    #[arg(long)]
    pub commit: bool,
    /// Skips working out the bytes the expiry frees (which plans the
    /// table twice: as it is, and as the expiry would leave it).
    #[arg(long)]
    pub no_bytes: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// One two-phase deletion step (run it on a schedule).
#[derive(Args, Debug, Clone)]
pub struct SweepCmd {
    #[command(flatten)]
    pub plan: PlanOpts,
    /// The ledger (default TABLE/_lakesweep/ledger.json).
    #[arg(long, value_name = "URI")]
    pub ledger: Option<String>,
    /// How long an object waits in quarantine before its restore check
    /// (fixed when the ledger is created; default one day).
    #[arg(long, value_name = "DURATION", value_parser = duration_ms)]
    pub quarantine: Option<i64>,
    #[command(flatten)]
    pub deletes: DeleteOpts,
    #[command(flatten)]
    pub future: FutureOpt,
    /// Starts a new ledger although quarantine bundles of an earlier one
    /// remain (a missing ledger is otherwise refused).
    #[arg(long)]
    pub new_ledger: bool,
    /// The fleet document (`lakesweepFleet.v1`) whose cohort holds the
    /// table: the table's mode (shadow: nothing is deleted), the fleet's
    /// stop switch and halt extension come from it and the ledger.
    #[arg(long, value_name = "URI")]
    pub fleet: Option<String>,
    /// The existing job's candidate list for this same run (one key or URI
    /// per line: `remove_orphan_files`, `VACUUM ... DRY RUN`): compared
    /// with this run's plan and recorded in the ledger (needs --fleet).
    #[arg(long, value_name = "FILE", requires = "fleet")]
    pub compare_with: Option<String>,
}

/// `move`: a cohort's tables from one mode to the other.
#[derive(Args, Debug, Clone)]
pub struct MoveCmd {
    /// The fleet document (rewritten with the cohort's new mode once every
    /// table's ledger recorded the move).
    #[arg(long, value_name = "URI")]
    pub fleet: String,
    /// The cohort to move: every table in it, or none.
    #[arg(long, value_name = "NAME")]
    pub cohort: String,
    /// The mode to move to: `enforce` (each table's gate must be open) or
    /// `shadow` (always).
    #[arg(long, value_name = "MODE", value_parser = ["shadow", "enforce"])]
    pub to: String,
    /// Who moves it (recorded).
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// Why (recorded).
    #[arg(long, value_name = "TEXT")]
    pub why: String,
    #[command(flatten)]
    pub now: NowOpts,
    #[command(flatten)]
    pub future: FutureOpt,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Proves that a seeded sample of quarantine bundles would restore.
#[derive(Args, Debug, Clone)]
pub struct DrillCmd {
    /// The table location.
    pub table: String,
    #[command(flatten)]
    pub ledger: LedgerOpt,
    #[command(flatten)]
    pub map: MapOpts,
    /// Bundles to verify (all when fewer).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    pub sample: u32,
    /// The sample's seed (default: drawn from the clock, reported).
    #[arg(long)]
    pub seed: Option<u64>,
    /// A full restore drill instead: one bundle restored into this empty
    /// scratch location (never the table's), timed, its recovery point
    /// judged against the policy's RTO and RPO, recorded in the ledger.
    #[arg(long, value_name = "URI", conflicts_with_all = ["sample", "seed"])]
    pub restore_into: Option<String>,
    /// With --restore-into: the bundle (default: the newest that verifies).
    #[arg(long, value_name = "ID", requires = "restore_into")]
    pub bundle: Option<String>,
    /// With --restore-into: the snapshot to make current (one of the
    /// bundle's; default: its newest), e.g. the declared DR checkpoint.
    #[arg(long, value_name = "ID", requires = "restore_into")]
    pub snapshot: Option<i64>,
    /// With --restore-into: the retention policy whose restoreDrill names
    /// the targets (rto, rpo, fullEvery).
    #[arg(long, value_name = "FILE", requires = "restore_into")]
    pub policy: Option<String>,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Brings quarantined snapshots back from their bundle.
#[derive(Args, Debug, Clone)]
pub struct RestoreCmd {
    /// The table location.
    pub table: String,
    /// The quarantine bundle `expire --commit` sealed
    /// (TABLE/_lakesweep/bundles/ID).
    #[arg(
        long,
        value_name = "ID",
        required_unless_present = "newest",
        conflicts_with = "newest"
    )]
    pub bundle: Option<String>,
    /// The newest bundle that verifies (newest sealed first; one that
    /// would not restore is named and passed over).
    #[arg(long)]
    pub newest: bool,
    #[command(flatten)]
    pub pointer: PointerOpts,
    #[command(flatten)]
    pub map: MapOpts,
    #[command(flatten)]
    pub when: NowOpts,
    #[command(flatten)]
    pub future: FutureOpt,
    /// Carries the restore out; without it, only says what it would do.
    #[arg(long)]
    pub commit: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// `pinot plan` and `pinot apply`.
#[derive(Subcommand, Debug)]
pub enum PinotCmd {
    /// Plans snapshot-artifact retention for a Pinot table synced from
    /// Iceberg (StarTree snapshot processing): which snapshot folders and
    /// which segments go, and why; deletes nothing.
    Plan(PinotPlanCmd),
    /// Carries out a Pinot plan: plans again from the live state, then
    /// deletes only what both plans delete (segments through the
    /// controller with the plan's retention, artifact objects only at the
    /// version listed).
    Apply(PinotApplyCmd),
}

/// Plans snapshot-artifact retention for a Pinot table synced from
/// Iceberg (StarTree snapshot processing): which snapshot folders and
/// which segments go, and why; deletes nothing.
#[derive(Args, Debug, Clone)]
pub struct PinotPlanCmd {
    #[command(flatten)]
    pub state: PinotStateOpts,
    #[command(flatten)]
    pub layout: PinotLayoutOpts,
    #[command(flatten)]
    pub when: NowOpts,
    /// Writes the sealed plan (the input of pinot apply) to FILE.
    #[arg(long, value_name = "FILE")]
    pub out: Option<String>,
    /// Prints the plan document instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Carries out a Pinot plan: plans again from the live state, then
/// deletes only what both plans delete (segments through the
/// controller with the plan's retention, artifact objects only at the
/// version listed).
#[derive(Args, Debug, Clone)]
pub struct PinotApplyCmd {
    /// The plan file written by `pinot plan --out`.
    pub plan: String,
    #[command(flatten)]
    pub state: PinotStateOpts,
    #[command(flatten)]
    pub layout: PinotLayoutOpts,
    /// The Pinot controller, e.g. http://controller:9000; segments are
    /// deleted with DELETE /segments/{table}/{segment}?retention=...
    #[arg(long, value_name = "URL", required_unless_present = "dry_run")]
    pub controller: Option<String>,
    /// Checks the plan against the live state and prints what would
    /// be deleted; deletes nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Appends one JSON line per segment and object to FILE.
    #[arg(long, value_name = "FILE")]
    pub receipts: Option<String>,
    #[command(flatten)]
    pub stop: StopOpts,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Where a Pinot table's artifacts are and how they are read (apply takes
/// them again: the live run must be the plan's, and a plan file cannot
/// widen them).
#[derive(Args, Debug, Clone)]
pub struct PinotLayoutOpts {
    /// A deep-store root (controller, server, broker; repeatable): a local
    /// path, file://, s3:// URI. Artifacts are under
    /// ROOT/snapshots/<tableNameWithType>/.
    #[arg(long = "root", value_name = "URI", required = true)]
    pub roots: Vec<String>,
    /// The column of final.parquet and batch files that names segments
    /// (default segmentName).
    #[arg(long, value_name = "NAME")]
    pub segment_column: Option<String>,
    /// Artifact objects younger than this are never swept (default one
    /// hour).
    #[arg(long, value_name = "DURATION", value_parser = duration_ms)]
    pub min_age: Option<i64>,
}

/// Where a Pinot run reads its table config and live state: files or
/// http(s) URLs (the controller's REST answers).
#[derive(Args, Debug, Clone)]
pub struct PinotStateOpts {
    /// The table config (GET /tables/{table}).
    #[arg(long, value_name = "FILE|URL")]
    pub table_config: String,
    /// The ideal state (GET /tables/{table}/idealstate).
    #[arg(long, value_name = "FILE|URL")]
    pub ideal_state: String,
    /// The ingestion watermark: {tableNameWithType, snapshotId, state}.
    #[arg(long, value_name = "FILE|URL")]
    pub watermark: String,
    /// The active snapshot list: {tableNameWithType, snapshots: [{snapshotId, completedAtMs}]}.
    #[arg(long, value_name = "FILE|URL")]
    pub active: String,
}

#[derive(Subcommand, Debug)]
pub enum PolicyCmd {
    /// Validates a lakehouseRetentionPolicy.v1 document.
    Check {
        /// The policy document.
        file: String,
        /// Prints one JSON object instead of the report.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        planner: PlannerOpts,
    },
}

#[derive(Subcommand, Debug)]
pub enum LedgerCmd {
    /// Prints every object in flight with its state, and the gates.
    Show {
        #[command(flatten)]
        target: LedgerTarget,
        /// Also every object verified deleted, read from the archives.
        #[arg(long)]
        archived: bool,
    },
    /// Reads the head and every file of the ledger's folder (each checked
    /// against the SHA-256 the head records), then every archive, and
    /// says whether the counts add up; exit 1 when they do not.
    Verify(LedgerTarget),
}

/// A table's ledger, for the commands that read or settle it.
#[derive(Args, Debug)]
pub struct LedgerTarget {
    /// The table location.
    pub table: String,
    #[command(flatten)]
    pub ledger: LedgerOpt,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// Where the current metadata is, checked again before anything is deleted
/// (default: TABLE/metadata/version-hint.text).
#[derive(Args, Debug, Clone)]
pub struct PointerOpts {
    /// The current metadata file, fixed.
    #[arg(long, value_name = "URI")]
    pub metadata: Option<String>,
    /// The catalog: sqlite:PATH (SQL catalog), glue, glue:ACCOUNT, rest:URL,
    /// trino:FILE (a Trino catalog properties file), or spark:NAME[@FILE]
    /// (Spark's spark.sql.catalog.NAME settings, from spark-defaults.conf).
    #[arg(long, value_name = "CATALOG")]
    pub catalog: Option<String>,
    /// The table's name in the catalog.
    #[arg(
        long = "table",
        id = "catalog_table",
        value_name = "NS.NAME",
        requires = "catalog"
    )]
    pub catalog_table: Option<String>,
    /// A shell command that prints the current metadata location (other
    /// catalogs); run again before anything is deleted.
    #[arg(long = "pointer-cmd", value_name = "COMMAND")]
    pub pointer_cmd: Option<String>,
}

impl PointerOpts {
    /// The pointer options given, if any (`apply` then uses the plan's own).
    pub fn given(&self) -> Result<Option<Pointer>, HostError> {
        if self.metadata.is_none()
            && self.catalog.is_none()
            && self.catalog_table.is_none()
            && self.pointer_cmd.is_none()
        {
            return Ok(None);
        }
        self.pointer().map(Some)
    }

    /// The pointer these options name (default: the table's
    /// `version-hint.text`).
    pub fn pointer(&self) -> Result<Pointer, HostError> {
        Pointer::from_args(
            self.metadata.as_deref(),
            self.catalog.as_deref(),
            self.catalog_table.as_deref(),
            self.pointer_cmd.as_deref(),
        )
    }
}

/// Path rewrites.
#[derive(Args, Debug, Clone)]
pub struct MapOpts {
    /// Rewrites a path prefix found in the metadata (relocated or restored tables).
    #[arg(long = "location-map", value_name = "FROM=TO", value_parser = mapping)]
    pub location_map: Vec<(String, String)>,
}

/// The retention policy.
#[derive(Args, Debug, Clone)]
pub struct PolicyOpt {
    /// A lakehouseRetentionPolicy.v1 document.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<String>,
}

/// What is true right now.
#[derive(Args, Debug, Clone)]
pub struct ContextOpts {
    /// A whole context document {leases, holds, writers, drCheckpoints}.
    #[arg(long, value_name = "FILE")]
    pub context: Option<String>,
    /// A JSON array of {snapshotId, owner, purpose, expiresAtMs, readerGeneration}.
    #[arg(long, value_name = "FILE")]
    pub leases: Option<String>,
    /// A JSON array of {scope, generation, reason}.
    #[arg(long, value_name = "FILE")]
    pub holds: Option<String>,
    /// A JSON array of {stagingPrefix, startedAtMs}.
    #[arg(long, value_name = "FILE")]
    pub writers: Option<String>,
}

impl ContextOpts {
    /// The policy and context files given.
    pub fn files(&self, policy: Option<&PolicyOpt>) -> ContextFiles {
        ContextFiles {
            policy: policy.and_then(|p| p.policy.clone()),
            context: self.context.clone(),
            leases: self.leases.clone(),
            holds: self.holds.clone(),
            writers: self.writers.clone(),
        }
    }
}

/// The evaluation time.
#[derive(Args, Debug, Clone)]
pub struct NowOpts {
    /// Evaluation time, RFC 3339 (2026-11-30T12:00:00Z) or epoch milliseconds
    /// (default: the clock).
    #[arg(long, value_name = "TIME", value_parser = time_ms)]
    pub now: Option<i64>,
}

/// For the commands that act: a plan judged ahead of the clock.
#[derive(Args, Debug, Clone)]
pub struct FutureOpt {
    /// Accepts a --now ahead of the clock (tests, what-if runs); otherwise
    /// refused, since young files would look old.
    #[arg(long)]
    pub allow_future_now: bool,
}

impl NowOpts {
    /// The evaluation time, ms since the epoch: `--now`, else the clock
    /// (read once per call: call it once per run).
    pub fn now_ms(&self) -> i64 {
        self.now.unwrap_or_else(crate::clock::clock_ms)
    }
}

/// How deletes run.
#[derive(Args, Debug, Clone)]
pub struct DeleteOpts {
    /// Deletes in flight.
    #[arg(long, default_value_t = 16, value_parser = positive)]
    pub concurrency: usize,
    /// Keys per batch (default: the planner's, 256); the pointer and
    /// context are read again and the planner asked again before each.
    #[arg(long, value_parser = positive_u32)]
    pub batch: Option<u32>,
    #[command(flatten)]
    pub stop: StopOpts,
}

/// The stop switches a deleter reads before each batch.
#[derive(Args, Debug, Clone, Default)]
pub struct StopOpts {
    /// A stop switch to read before each batch besides the table's own
    /// (TABLE/_lakesweep/stop.json): a fleet's, one object every deleter
    /// of the fleet reads (repeatable). While one is set, nothing is
    /// deleted.
    #[arg(long = "stop-switch", value_name = "URI")]
    pub stop_switches: Vec<String>,
}

/// `halt` and `resume`: set or clear stop switches.
#[derive(Args, Debug, Clone)]
pub struct SwitchCmd {
    /// Tables whose own switch (TABLE/_lakesweep/stop.json) is set or
    /// cleared; on a halt each one's ledger lengthens the quarantine of
    /// every waiting object.
    #[arg(value_name = "TABLE", required_unless_present = "stop_switches")]
    pub tables: Vec<String>,
    #[command(flatten)]
    pub stop: StopOpts,
    /// Why (recorded in the switch, shown by every stopped run).
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// Who (recorded in the switch).
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// On a halt: how much longer every waiting object of each TABLE's
    /// ledger stays in quarantine (default: the ledger's quarantine).
    #[arg(long, value_name = "DURATION", value_parser = duration_ms)]
    pub extend: Option<i64>,
    #[command(flatten)]
    pub now: NowOpts,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

/// The ledger's location.
#[derive(Args, Debug, Clone)]
pub struct LedgerOpt {
    /// The ledger (default TABLE/_lakesweep/ledger.json, under a hidden
    /// prefix no sweep deletes).
    #[arg(long, value_name = "URI")]
    pub ledger: Option<String>,
}

/// The component.
#[derive(Args, Debug, Clone)]
pub struct PlannerOpts {
    /// The component (default: $LAKESWEEP_WASM or target/lakesweep.wasm).
    #[arg(long, value_name = "PATH")]
    pub wasm: Option<String>,
}

/// What a plan is made from (plan, explain, sweep).
#[derive(Args, Debug, Clone)]
pub struct PlanOpts {
    /// The table location: a local path, file://, s3://, s3a://, gs://, az:// URI.
    #[arg(value_name = "TABLE")]
    pub table: Option<String>,
    #[command(flatten)]
    pub pointer: PointerOpts,
    /// iceberg, delta, or auto (a _delta_log/ folder means delta).
    #[arg(long, value_enum, default_value = "auto")]
    pub format: FormatArg,
    /// File-retention window, like 72h or 3d (default: 3d for Iceberg, as
    /// Iceberg's own; 7d for Delta, delta.deletedFileRetentionDuration's).
    #[arg(long, value_name = "DURATION", value_parser = duration_ms)]
    pub older_than: Option<i64>,
    #[command(flatten)]
    pub when: NowOpts,
    #[command(flatten)]
    pub map: MapOpts,
    /// Prints one JSON object instead of the report.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyOpt,
    #[command(flatten)]
    pub context: ContextOpts,
    /// Delta: keeps every file version N reads (repeatable).
    #[arg(long = "keep-version", value_name = "N", value_parser = clap::value_parser!(i64).range(0..))]
    pub keep_versions: Vec<i64>,
    /// Delta: also plans _delta_log entries past delta.logRetentionDuration
    /// (30d by default) and below a checkpoint older than that.
    #[arg(long)]
    pub log_cleanup: bool,
    /// Accepts a window under 1h or under the Delta table's
    /// delta.deletedFileRetentionDuration (the plan says so).
    #[arg(long)]
    pub allow_short_retention: bool,
    /// Memory the planner may use (default 1GiB); a file that would need
    /// more is refused by name, never half-read.
    #[arg(long, value_name = "SIZE", value_parser = size_bytes)]
    pub memory_budget: Option<u64>,
    /// Keeps each Iceberg manifest's and Delta checkpoint file's digest
    /// (the paths and actions the plan needs) in the cache folder, filed
    /// under the file's ETag or inode and change time, and reads it instead
    /// of an unchanged file on later plans.
    #[arg(long)]
    pub manifest_cache: bool,
    #[command(flatten)]
    pub planner: PlannerOpts,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy)]
pub enum FormatArg {
    Iceberg,
    Delta,
    Auto,
}

/// Many tables in one run (`plan` only).
#[derive(Args, Debug, Clone)]
pub struct ManyOpts {
    /// Plans every Iceberg table of this namespace of --catalog.
    #[arg(long, value_name = "NS", requires = "catalog", conflicts_with_all = ["table", "catalog_table", "tables"])]
    pub namespace: Option<String>,
    /// Plans every table the file lists, one per line: NS.NAME (of
    /// --catalog) or a table location; `#` starts a comment.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["table", "catalog_table"])]
    pub tables: Option<String>,
    /// Where a run over many tables writes one plan per table.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<String>,
    /// Tables planned at once.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
}

impl PlanOpts {
    /// The table location given (`plan --namespace`/`--tables` plan many
    /// tables and give none; `parse` refuses its absence elsewhere).
    pub fn table(&self) -> Result<&str, HostError> {
        self.table.as_deref().ok_or_else(|| {
            "give the table location (or, with plan, --namespace or --tables)".into()
        })
    }

    /// The table format asked for.
    pub fn format(&self) -> Format {
        match self.format {
            FormatArg::Iceberg => Format::Iceberg,
            FormatArg::Delta => Format::Delta,
            FormatArg::Auto => Format::Auto,
        }
    }
}

/// Why the command line gave no command.
#[derive(Debug)]
pub enum Usage {
    /// `--help` or `--version`: print this, exit 0.
    Shown(String),
    /// Bad usage: print this, exit 64.
    Bad(String),
}

/// A usage error as one line: clap's message (with the arguments it
/// misses and its suggestion, if any) and where the options are listed.
fn usage_line(rendered: &str, argv: &[String]) -> String {
    use clap::CommandFactory;
    let mut lines = rendered.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut msg = lines
        .next()
        .unwrap_or("bad usage")
        .trim_start_matches("error: ")
        .to_owned();
    let mut tip = None;
    for l in lines {
        if let Some(t) = l.strip_prefix("tip: ") {
            // Not "to pass '--x' as a value, use '-- --x'": a typo is likelier.
            if !t.starts_with("to pass") {
                tip = Some(t.to_owned());
            }
        } else if msg.ends_with(':') && !l.starts_with("Usage:") && !l.starts_with("For more") {
            // The arguments a "were not provided:" message lists below it.
            msg.push(' ');
            msg.push_str(l);
        }
    }
    let sub = argv
        .first()
        .filter(|a| Cli::command().find_subcommand(a.as_str()).is_some());
    let help = match sub {
        Some(s) => format!("lakesweep {s} --help"),
        None => "lakesweep --help".into(),
    };
    let tip = tip.map(|t| format!("; {t}")).unwrap_or_default();
    format!("lakesweep: {msg}{tip} (options: {help})\n")
}

/// Parses the arguments after the program name into the command, or says
/// why there is none.
pub fn parse(argv: &[String]) -> Result<Command, Usage> {
    use clap::error::ErrorKind;
    use clap::{CommandFactory, FromArgMatches};
    // A repeated option takes its last value (scripts append overrides);
    // repeatable options (--location-map, --keep-version) keep them all.
    let mut command = Cli::command().args_override_self(true);
    for sub in command.get_subcommands_mut() {
        *sub = sub.clone().args_override_self(true);
        for inner in sub.get_subcommands_mut() {
            *inner = inner.clone().args_override_self(true);
        }
    }
    let cli = command
        .try_get_matches_from(std::iter::once("lakesweep".to_owned()).chain(argv.iter().cloned()))
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => Usage::Shown(e.to_string()),
            _ => Usage::Bad(usage_line(&e.render().to_string(), argv)),
        })?;
    check(&cli.command).map_err(|e| Usage::Bad(usage_line(&format!("error: {e}"), argv)))?;
    Ok(cli.command)
}

/// What clap cannot check: options of different groups that exclude each
/// other, a table and a pointer that must be given, catalogs that must
/// parse.
fn check(command: &Command) -> Result<(), HostError> {
    match command {
        Command::Plan(p) if p.many.namespace.is_some() || p.many.tables.is_some() => {
            if p.out.is_some() {
                return Err(
                    "a run over many tables writes one plan per table: --out-dir DIR, not --out"
                        .into(),
                );
            }
            if p.plan.pointer.metadata.is_some() || p.plan.pointer.pointer_cmd.is_some() {
                return Err(
                    "--metadata and --pointer-cmd name one table's pointer: plan that table alone"
                        .into(),
                );
            }
            if let Some(c) = &p.plan.pointer.catalog {
                Catalog::parse(c)?;
            }
        }
        Command::Plan(p) => {
            if p.many.out_dir.is_some() {
                return Err(
                    "--out-dir is for --namespace or --tables; one table's plan: --out FILE".into(),
                );
            }
            p.plan.table()?;
            p.plan.pointer.pointer()?;
        }
        Command::Explain(e) => {
            e.plan.table()?;
            e.plan.pointer.pointer()?;
            if e.key.is_none() {
                return Err("explain takes TABLE KEY: which object?".into());
            }
        }
        Command::Sweep(s) => {
            s.plan.table()?;
            s.plan.pointer.pointer()?;
        }
        Command::Apply(a) => {
            a.pointer.given()?;
        }
        Command::Status(s) => {
            if s.ledger.is_some() && s.namespace.is_some() {
                return Err("--ledger names one table's ledger: not with --namespace".into());
            }
            if s.ledger.is_some() && s.tables.len() > 1 {
                return Err("--ledger names one table's ledger: give one table with it".into());
            }
            if let Some(c) = &s.catalog {
                Catalog::parse(c)?;
            }
        }
        Command::Expire(e) => {
            e.pointer.pointer()?;
        }
        Command::Restore(r) => {
            r.pointer.pointer()?;
        }
        Command::Compare(_)
        | Command::Policy(_)
        | Command::Pinot(_)
        | Command::Reconcile(_)
        | Command::Drill(_)
        | Command::Halt(_)
        | Command::Resume(_)
        | Command::Move(_)
        | Command::Ledger(_) => {}
    }
    Ok(())
}

/// `FROM=TO`.
fn mapping(v: &str) -> Result<(String, String), HostError> {
    let (f, t) = v
        .split_once('=')
        .ok_or_else(|| refused!("`{v}`: --location-map takes FROM=TO"))?;
    Ok((f.to_owned(), t.to_owned()))
}

/// A whole number above zero.
fn positive(v: &str) -> Result<usize, HostError> {
    v.parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| refused!("`{v}`: a positive number"))
}

/// A positive number of at most 2^32 - 1.
fn positive_u32(v: &str) -> Result<u32, HostError> {
    v.parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| refused!("`{v}`: a positive number (at most 4294967295)"))
}

/// A size like `512MiB`, `2GiB`, `1GB` or plain bytes.
pub fn size_bytes(s: &str) -> Result<u64, HostError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| refused!("`{s}`: a size like 512MiB or 2GiB"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(refused!(
                "`{s}`: unknown unit `{u}` (B, KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| refused!("`{s}`: too large"))
}

/// A duration (`72h`, `3d`, `90m`, `1500ms`, `1h 30m`) in milliseconds.
/// A bare number is refused: its unit would be a guess.
pub fn duration_ms(s: &str) -> Result<i64, HostError> {
    let d = humantime::parse_duration(s)
        .map_err(|e| refused!("duration `{s}`: {e} (like 72h, 3d, 90m)"))?;
    i64::try_from(d.as_millis()).map_err(|_| refused!("duration `{s}` is too large"))
}

/// RFC 3339 (`2026-11-30T12:00:00Z`, `...+02:00`, fractional seconds) or
/// epoch milliseconds.
pub fn time_ms(s: &str) -> Result<i64, HostError> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| refused!("bad time `{s}`"));
    }
    let t: jiff::Timestamp = s
        .parse()
        .map_err(|e| refused!("time `{s}` is neither RFC 3339 nor epoch milliseconds: {e}"))?;
    Ok(t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn commands_take_only_their_options() {
        assert!(matches!(
            parse(&argv("plan /t --json")),
            Ok(Command::Plan(_))
        ));
        assert!(parse(&argv("plan /t --dry-run")).is_err());
        assert!(parse(&argv("apply p.json --older-than 3d")).is_err());
        assert!(matches!(
            parse(&argv("apply p.json --dry-run --concurrency 4")),
            Ok(Command::Apply(_))
        ));
        assert!(parse(&argv("apply p.json --concurrency 0")).is_err());
        assert!(matches!(
            parse(&argv("explain /t data/x.parquet")),
            Ok(Command::Explain(..))
        ));
        assert!(parse(&argv("plan /t --catalog sqlite:c.db")).is_err());
        assert!(parse(&argv("plan /t --format hudi")).is_err());
        assert!(parse(&argv("vacuum /t")).is_err());
        assert!(matches!(
            parse(&argv("sweep /t --quarantine 2d --ledger /l.json")),
            Ok(Command::Sweep(_))
        ));
        assert!(parse(&argv("sweep /t --out p.json")).is_err());
        assert!(parse(&argv("restore /t")).is_err());
        assert!(matches!(
            parse(&argv("restore /t --bundle q-1-2 --commit")),
            Ok(Command::Restore(_))
        ));
        assert!(matches!(
            parse(&argv("ledger show /t")),
            Ok(Command::Ledger(LedgerCmd::Show { .. }))
        ));
        assert!(parse(&argv("ledger drop /t")).is_err());
        assert!(parse(&argv("reconcile /t --now 5")).is_err());
    }

    #[test]
    fn durations_need_units() {
        assert_eq!(duration_ms("72h").unwrap(), 259_200_000);
        assert_eq!(duration_ms("3d").unwrap(), 259_200_000);
        assert_eq!(duration_ms("1h 30m").unwrap(), 5_400_000);
        assert_eq!(duration_ms("1500ms").unwrap(), 1_500);
        assert!(duration_ms("72").is_err());
        assert!(duration_ms("3 fortnights").is_err());
    }

    #[test]
    fn a_repeated_option_takes_its_last_value_and_lists_keep_every_one() {
        let Ok(Command::Plan(p)) = parse(&argv(
            "plan /t --now 5 --now 7 --location-map a=b --location-map c=d --keep-version 1 --keep-version 2",
        )) else {
            panic!("repeated options parse");
        };
        assert_eq!(p.plan.when.now, Some(7));
        assert_eq!(p.plan.map.location_map.len(), 2);
        assert_eq!(p.plan.keep_versions, vec![1, 2]);
    }

    #[test]
    fn options_take_their_value_after_an_equals_sign() {
        let Ok(Command::Plan(p)) = parse(&argv("plan /t --older-than=3d --now=0")) else {
            panic!("--older-than=3d is an option with its value");
        };
        assert_eq!(p.plan.older_than, Some(259_200_000));
        assert_eq!(p.plan.when.now, Some(0));
        let Ok(Command::Sweep(s)) = parse(&argv("sweep /t --quarantine=2d")) else {
            panic!("--quarantine=2d");
        };
        assert_eq!(s.quarantine, Some(2 * 86_400_000));
    }

    #[test]
    fn help_is_shown_per_command_and_usage_errors_name_the_option() {
        for cmd in [
            "plan", "apply", "sweep", "expire", "drill", "restore", "compare",
        ] {
            match parse(&argv(&format!("{cmd} --help"))) {
                Err(Usage::Shown(text)) => assert!(text.contains("Usage: lakesweep"), "{text}"),
                _ => panic!("{cmd} --help shows its help"),
            }
        }
        assert!(
            matches!(
                parse(&argv("plan /t --allow-future-now")),
                Err(Usage::Bad(_))
            ),
            "plan judges nothing against the clock: the flag would do nothing there"
        );
        match parse(&argv("plan /t --dry-run")) {
            Err(Usage::Bad(text)) => assert!(text.contains("--dry-run"), "{text}"),
            _ => panic!("plan does not take --dry-run"),
        }
        assert!(
            matches!(parse(&[]), Err(Usage::Shown(_))),
            "no command: the help"
        );
    }

    #[test]
    fn times() {
        assert_eq!(time_ms("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(time_ms("2026-11-30T12:00:00Z").unwrap(), 1_796_040_000_000);
        assert_eq!(
            time_ms("2026-11-30T14:00:00.5+02:00").unwrap(),
            1_796_040_000_500
        );
        assert_eq!(time_ms("1796040000000").unwrap(), 1_796_040_000_000);
        assert!(time_ms("yesterday").is_err());
        assert!(
            time_ms("2026-11-30T12:00:00").is_err(),
            "a time without offset is ambiguous"
        );
    }
}
