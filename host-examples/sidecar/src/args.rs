//! Command-line parsing, durations and times.

use crate::context::ContextFiles;
use crate::plan::Format;
use crate::pointer::Pointer;

/// Usage text.
pub const USAGE: &str = "usage:
  lakesweep plan TABLE [POINTER] [--format iceberg|delta|auto] [--older-than DURATION]
                 [--now TIME] [--location-map FROM=TO]... [--json] [--out PLAN.json]
                 [--keep-version N]... [--log-cleanup] [--allow-short-retention]
  lakesweep explain TABLE KEY [same options as plan]
  lakesweep apply PLAN.json [POINTER] [--location-map FROM=TO]... [--dry-run]
                 [--concurrency N] [--batch N] [--receipts FILE] [CONTEXT]
                 [--allow-future-now]
  lakesweep compare PLAN.json OTHER.txt [--json]
  lakesweep expire TABLE [POINTER] [--policy FILE] [CONTEXT] [--now TIME]
                 [--expire-id ID]... [--location-map FROM=TO]... [--json] [--commit]
  lakesweep policy check FILE [--json]
  lakesweep sweep TABLE [--ledger URI] [--quarantine DURATION] [same options as plan]
                 [--concurrency N] [--batch N] [--allow-future-now] [--new-ledger]
  lakesweep reconcile TABLE [--ledger URI] [--json]
  lakesweep drill TABLE [--sample N] [--seed S] [--ledger URI] [--location-map FROM=TO]... [--json]
  lakesweep ledger show TABLE [--ledger URI] [--json]
  lakesweep restore TABLE --bundle ID [POINTER] [--location-map FROM=TO]... [--commit]

  TABLE            table location: a local path, file://, s3://, s3a://, gs://, az:// URI
  POINTER          where the current metadata is, checked again before anything is deleted:
    --metadata URI                 the current metadata file, fixed
    --catalog sqlite:PATH --table NS.NAME
                                   an Iceberg SQL catalog (pyiceberg, Java JDBC schema)
                   (default: TABLE/metadata/version-hint.text)
  --format F       iceberg, delta, or auto (default: a _delta_log/ folder means delta)
  --older-than D   file-retention window, like 72h or 3d (default: 3d for Iceberg, as
                   Iceberg's own; 7d for Delta, delta.deletedFileRetentionDuration's default)
  --keep-version N Delta: keep every file version N reads (repeatable)
  --log-cleanup    Delta: also plan _delta_log entries past delta.logRetentionDuration
                   (30d by default) and below a checkpoint older than that
  --new-ledger     sweep: start a new ledger although quarantine bundles of an earlier one
                   remain (a missing ledger is otherwise refused)
  --memory-budget SIZE
                   memory the planner may use (default 1GiB); a file that would need
                   more is refused by name, never half-read
  --allow-short-retention
                   accept a window under 1h or under the Delta table's
                   delta.deletedFileRetentionDuration (the plan says so)
  --now TIME       evaluation time, RFC 3339 (2026-11-30T12:00:00Z) or epoch milliseconds
                   (default: the clock)
  --location-map   rewrite a path prefix found in the metadata (relocated or restored tables)
  --json           print one JSON object instead of the report
  --out FILE       write the sealed plan (the input of apply and compare) to FILE
  --dry-run        apply: check every key, delete nothing
  --concurrency N  apply, sweep: deletes in flight (default 16)
  --batch N        apply, sweep: keys per batch; the pointer and context are read again
                   and the planner asked again before each batch (default 256)
  --receipts FILE  apply: receipt lines (default PLAN.json.receipts.jsonl)
  --policy FILE    a lakehouseRetentionPolicy.v1 document (plan, explain, expire)
  CONTEXT          what is true right now (plan, explain, expire):
    --context FILE   a whole context document {leases, holds, writers, drCheckpoints}
    --leases FILE    a JSON array of {snapshotId, owner, purpose, expiresAtMs, readerGeneration}
    --holds FILE     a JSON array of {scope: \"table\" | {ref} | {snapshot} | {pathPrefix}, generation, reason}
    --writers FILE   a JSON array of {stagingPrefix, startedAtMs}
  --expire-id ID   expire: also expire this snapshot (refused while a ref points at it)
  --bundle ID      restore: the quarantine bundle `expire --commit` sealed
                   (TABLE/_lakesweep/bundles/ID), verified before anything is written
  --commit         expire: carry the expiry out (SQL catalog compare-and-set, or the next
                   vN.metadata.json and version-hint.text); without it, expire only prints
  --allow-future-now  apply, expire --commit: accept a --now ahead of the clock (tests,
                   what-if runs); otherwise refused, since young files would look old
  --ledger URI     sweep, reconcile, ledger show: the ledger document (default
                   TABLE/_lakesweep/ledger.json, under a hidden prefix no sweep deletes)
  --sample N       drill: quarantine bundles to verify (default 30; all when fewer)
  --seed S         drill: the sample's seed (default: drawn from the clock, reported)
  --quarantine D   sweep: how long an object waits in quarantine before its restore
                   check (default 1d; fixed when the ledger is created)
  --wasm PATH      the component (default: $LAKESWEEP_WASM or target/lakesweep.wasm)

Stores: credentials and endpoints come from the environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP; GOOGLE_*; AZURE_*).
Exit status: 0 done, 1 apply finished but some keys failed or changed, 2 refused
(nothing deleted), 64 bad usage.";

/// A parsed command.
pub enum Command {
    /// `plan`.
    Plan(PlanArgs),
    /// `explain`: a plan, then one key's verdict.
    Explain(PlanArgs, String),
    /// `apply`.
    Apply(ApplyArgs),
    /// `expire`.
    Expire(ExpireArgs),
    /// `policy check FILE`.
    PolicyCheck {
        file: String,
        json: bool,
        wasm: Option<String>,
    },
    /// `compare PLAN OTHER`.
    Compare {
        plan: String,
        other: String,
        json: bool,
    },
    /// `sweep`: one two-phase deletion step.
    Sweep(SweepArgs),
    /// `restore`: a quarantined snapshot back from its bundle.
    Restore(RestoreArgs),
    /// `reconcile`.
    Reconcile {
        table: String,
        ledger: Option<String>,
        json: bool,
        wasm: Option<String>,
    },
    /// `drill`: a restore drill over a seeded sample of the bundles.
    Drill {
        table: String,
        ledger: Option<String>,
        location_map: Vec<(String, String)>,
        sample: u32,
        seed: Option<u64>,
        json: bool,
        wasm: Option<String>,
    },
    /// `ledger show`.
    LedgerShow {
        table: String,
        ledger: Option<String>,
        json: bool,
        wasm: Option<String>,
    },
    /// `help`.
    Help,
}

/// Arguments of `restore`.
pub struct RestoreArgs {
    pub table: String,
    pub bundle: String,
    pub pointer: Pointer,
    pub location_map: Vec<(String, String)>,
    pub now_ms: i64,
    pub commit: bool,
    pub allow_future_now: bool,
    pub wasm: Option<String>,
}

/// Arguments of `sweep`.
pub struct SweepArgs {
    pub plan: PlanArgs,
    pub ledger: Option<String>,
    pub quarantine_ms: i64,
    pub concurrency: usize,
    pub batch: usize,
    pub allow_future_now: bool,
    pub new_ledger: bool,
}

/// Arguments of `plan` and `explain`.
pub struct PlanArgs {
    pub table: String,
    pub pointer: Pointer,
    pub format: Format,
    pub retention_ms: Option<i64>,
    pub now_ms: i64,
    pub location_map: Vec<(String, String)>,
    pub json: bool,
    pub out: Option<String>,
    pub wasm: Option<String>,
    pub inputs: ContextFiles,
    /// `--keep-version` (Delta).
    pub keep_versions: Vec<i64>,
    /// `--log-cleanup` (Delta).
    pub log_cleanup: bool,
    /// `--allow-short-retention`.
    pub allow_short_retention: bool,
    /// `--memory-budget`, bytes (None: the planner's default, 1 GiB).
    pub memory_budget: Option<u64>,
}

/// Arguments of `expire`.
pub struct ExpireArgs {
    pub table: String,
    pub pointer: Pointer,
    pub now_ms: i64,
    pub location_map: Vec<(String, String)>,
    pub expire_ids: Vec<i64>,
    pub json: bool,
    pub commit: bool,
    pub allow_future_now: bool,
    pub wasm: Option<String>,
    pub inputs: ContextFiles,
}

/// Arguments of `apply`.
pub struct ApplyArgs {
    pub plan: String,
    pub pointer: Pointer,
    pub location_map: Vec<(String, String)>,
    pub dry_run: bool,
    pub concurrency: usize,
    pub batch: usize,
    pub receipts: Option<String>,
    pub allow_future_now: bool,
    pub wasm: Option<String>,
    pub inputs: ContextFiles,
}

/// Every option any command takes; each command checks what it accepts.
#[derive(Default)]
struct Opts {
    positional: Vec<String>,
    metadata: Option<String>,
    catalog: Option<String>,
    table: Option<String>,
    format: Option<Format>,
    retention_ms: Option<i64>,
    now_ms: Option<i64>,
    location_map: Vec<(String, String)>,
    json: bool,
    out: Option<String>,
    wasm: Option<String>,
    dry_run: bool,
    concurrency: Option<usize>,
    batch: Option<usize>,
    memory_budget: Option<u64>,
    new_ledger: bool,
    receipts: Option<String>,
    inputs: ContextFiles,
    expire_ids: Vec<i64>,
    commit: bool,
    allow_future_now: bool,
    keep_versions: Vec<i64>,
    log_cleanup: bool,
    allow_short_retention: bool,
    ledger: Option<String>,
    quarantine_ms: Option<i64>,
    bundle: Option<String>,
    sample: Option<u32>,
    seed: Option<u64>,
    given: Vec<&'static str>,
}

fn opts(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let name: &'static str =
            match a.as_str() {
                "--metadata" => {
                    o.metadata = Some(val(a)?);
                    "--metadata"
                }
                "--catalog" => {
                    o.catalog = Some(val(a)?);
                    "--catalog"
                }
                "--table" => {
                    o.table = Some(val(a)?);
                    "--table"
                }
                "--format" => {
                    o.format = Some(match val(a)?.as_str() {
                        "iceberg" => Format::Iceberg,
                        "delta" => Format::Delta,
                        "auto" => Format::Auto,
                        f => return Err(format!("--format `{f}`: iceberg, delta or auto")),
                    });
                    "--format"
                }
                "--older-than" => {
                    o.retention_ms = Some(duration_ms(&val(a)?)?);
                    "--older-than"
                }
                "--now" => {
                    o.now_ms = Some(time_ms(&val(a)?)?);
                    "--now"
                }
                "--location-map" => {
                    let v = val(a)?;
                    let (f, t) = v.split_once('=').ok_or("--location-map takes FROM=TO")?;
                    o.location_map.push((f.to_owned(), t.to_owned()));
                    "--location-map"
                }
                "--json" => {
                    o.json = true;
                    "--json"
                }
                "--out" => {
                    o.out = Some(val(a)?);
                    "--out"
                }
                "--wasm" => {
                    o.wasm = Some(val(a)?);
                    "--wasm"
                }
                "--dry-run" => {
                    o.dry_run = true;
                    "--dry-run"
                }
                "--concurrency" => {
                    o.concurrency = Some(positive("--concurrency", &val(a)?)?);
                    "--concurrency"
                }
                "--batch" => {
                    o.batch = Some(positive("--batch", &val(a)?)?);
                    "--batch"
                }
                "--receipts" => {
                    o.receipts = Some(val(a)?);
                    "--receipts"
                }
                "--policy" => {
                    o.inputs.policy = Some(val(a)?);
                    "--policy"
                }
                "--context" => {
                    o.inputs.context = Some(val(a)?);
                    "--context"
                }
                "--leases" => {
                    o.inputs.leases = Some(val(a)?);
                    "--leases"
                }
                "--holds" => {
                    o.inputs.holds = Some(val(a)?);
                    "--holds"
                }
                "--writers" => {
                    o.inputs.writers = Some(val(a)?);
                    "--writers"
                }
                "--sample" => {
                    let v = val(a)?;
                    o.sample =
                        Some(v.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                            format!("--sample `{v}`: a positive count of bundles")
                        })?);
                    "--sample"
                }
                "--seed" => {
                    let v = val(a)?;
                    o.seed = Some(
                        v.parse()
                            .map_err(|_| format!("--seed `{v}`: an unsigned 64-bit number"))?,
                    );
                    "--seed"
                }
                "--expire-id" => {
                    let v = val(a)?;
                    o.expire_ids.push(
                        v.parse()
                            .map_err(|_| format!("--expire-id `{v}`: a snapshot id"))?,
                    );
                    "--expire-id"
                }
                "--commit" => {
                    o.commit = true;
                    "--commit"
                }
                "--allow-future-now" => {
                    o.allow_future_now = true;
                    "--allow-future-now"
                }
                "--keep-version" => {
                    let v = val(a)?;
                    o.keep_versions.push(
                        v.parse()
                            .ok()
                            .filter(|n| *n >= 0)
                            .ok_or_else(|| format!("--keep-version `{v}`: a table version"))?,
                    );
                    "--keep-version"
                }
                "--bundle" => {
                    o.bundle = Some(val(a)?);
                    "--bundle"
                }
                "--ledger" => {
                    o.ledger = Some(val(a)?);
                    "--ledger"
                }
                "--quarantine" => {
                    o.quarantine_ms = Some(duration_ms(&val(a)?)?);
                    "--quarantine"
                }
                "--log-cleanup" => {
                    o.log_cleanup = true;
                    "--log-cleanup"
                }
                "--allow-short-retention" => {
                    o.allow_short_retention = true;
                    "--allow-short-retention"
                }
                "--new-ledger" => {
                    o.new_ledger = true;
                    "--new-ledger"
                }
                "--memory-budget" => {
                    let v = val(a)?;
                    o.memory_budget = Some(size_bytes(&v)?);
                    "--memory-budget"
                }
                s if s.starts_with('-') => return Err(format!("unknown option `{s}`")),
                s => {
                    o.positional.push(s.to_owned());
                    continue;
                }
            };
        o.given.push(name);
    }
    Ok(o)
}

impl Opts {
    fn only(&self, cmd: &str, allowed: &[&str]) -> Result<(), String> {
        match self.given.iter().find(|g| !allowed.contains(g)) {
            Some(g) => Err(format!("{cmd} does not take {g}")),
            None => Ok(()),
        }
    }
    fn pointer(&self) -> Result<Pointer, String> {
        Pointer::from_args(
            self.metadata.as_deref(),
            self.catalog.as_deref(),
            self.table.as_deref(),
        )
    }
}

const POINTER: [&str; 3] = ["--metadata", "--catalog", "--table"];
const CONTEXT: [&str; 5] = ["--policy", "--context", "--leases", "--holds", "--writers"];
const PLAN: [&str; 18] = [
    "--memory-budget",
    "--keep-version",
    "--log-cleanup",
    "--allow-short-retention",
    "--metadata",
    "--catalog",
    "--table",
    "--format",
    "--older-than",
    "--now",
    "--location-map",
    "--json",
    "--out",
    "--policy",
    "--context",
    "--leases",
    "--holds",
    "--writers",
];

pub fn parse(argv: &[String]) -> Result<Command, String> {
    let Some(cmd) = argv.first() else {
        return Ok(Command::Help);
    };
    let o = opts(&argv[1..])?;
    let plan_args = |o: &Opts, table: &str| -> Result<PlanArgs, String> {
        Ok(PlanArgs {
            table: table.to_owned(),
            pointer: o.pointer()?,
            format: o.format.unwrap_or(Format::Auto),
            retention_ms: o.retention_ms,
            now_ms: o.now_ms.unwrap_or_else(crate::store::clock_ms),
            location_map: o.location_map.clone(),
            json: o.json,
            out: o.out.clone(),
            wasm: o.wasm.clone(),
            inputs: o.inputs.clone(),
            keep_versions: o.keep_versions.clone(),
            log_cleanup: o.log_cleanup,
            allow_short_retention: o.allow_short_retention,
            memory_budget: o.memory_budget,
        })
    };
    let with_wasm = |list: &[&'static str]| {
        let mut v = list.to_vec();
        v.push("--wasm");
        v
    };
    match cmd.as_str() {
        "-h" | "--help" | "help" => Ok(Command::Help),
        "plan" => {
            o.only("plan", &with_wasm(&PLAN))?;
            match o.positional.as_slice() {
                [table] => Ok(Command::Plan(plan_args(&o, table)?)),
                [] => Err("plan needs a TABLE location".into()),
                more => Err(format!("unexpected argument `{}`", more[1])),
            }
        }
        "sweep" => {
            let mut allowed = with_wasm(&PLAN);
            allowed.extend([
                "--ledger",
                "--quarantine",
                "--concurrency",
                "--batch",
                "--allow-future-now",
                "--new-ledger",
            ]);
            allowed.retain(|a| *a != "--out");
            o.only("sweep", &allowed)?;
            match o.positional.as_slice() {
                [table] => Ok(Command::Sweep(SweepArgs {
                    plan: plan_args(&o, table)?,
                    ledger: o.ledger.clone(),
                    quarantine_ms: o.quarantine_ms.unwrap_or(86_400_000),
                    concurrency: o.concurrency.unwrap_or(16),
                    batch: o.batch.unwrap_or(crate::deletion::DEFAULT_BATCH),
                    allow_future_now: o.allow_future_now,
                    new_ledger: o.new_ledger,
                })),
                _ => Err("sweep needs exactly one TABLE".into()),
            }
        }
        "restore" => {
            let mut allowed = with_wasm(&POINTER);
            allowed.extend([
                "--bundle",
                "--location-map",
                "--now",
                "--commit",
                "--allow-future-now",
            ]);
            o.only("restore", &allowed)?;
            match (o.positional.as_slice(), &o.bundle) {
                ([table], Some(b)) => Ok(Command::Restore(RestoreArgs {
                    table: table.clone(),
                    bundle: b.clone(),
                    pointer: o.pointer()?,
                    location_map: o.location_map.clone(),
                    now_ms: o.now_ms.unwrap_or_else(crate::store::clock_ms),
                    commit: o.commit,
                    allow_future_now: o.allow_future_now,
                    wasm: o.wasm.clone(),
                })),
                _ => Err("restore needs TABLE and --bundle ID".into()),
            }
        }
        "drill" => {
            o.only(
                "drill",
                &[
                    "--ledger",
                    "--json",
                    "--wasm",
                    "--sample",
                    "--seed",
                    "--location-map",
                ],
            )?;
            match o.positional.as_slice() {
                [table] => Ok(Command::Drill {
                    table: table.clone(),
                    ledger: o.ledger.clone(),
                    location_map: o.location_map.clone(),
                    sample: o.sample.unwrap_or(30),
                    seed: o.seed,
                    json: o.json,
                    wasm: o.wasm.clone(),
                }),
                _ => Err("drill needs exactly one TABLE".into()),
            }
        }
        "reconcile" => {
            o.only("reconcile", &["--ledger", "--json", "--wasm"])?;
            match o.positional.as_slice() {
                [table] => Ok(Command::Reconcile {
                    table: table.clone(),
                    ledger: o.ledger.clone(),
                    json: o.json,
                    wasm: o.wasm.clone(),
                }),
                _ => Err("reconcile needs exactly one TABLE".into()),
            }
        }
        "ledger" => {
            o.only("ledger", &["--ledger", "--json", "--wasm"])?;
            match o.positional.as_slice() {
                [sub, table] if sub == "show" => Ok(Command::LedgerShow {
                    table: table.clone(),
                    ledger: o.ledger.clone(),
                    json: o.json,
                    wasm: o.wasm.clone(),
                }),
                _ => Err("usage: lakesweep ledger show TABLE [--ledger URI]".into()),
            }
        }
        "explain" => {
            o.only("explain", &with_wasm(&PLAN))?;
            match o.positional.as_slice() {
                [table, key] => Ok(Command::Explain(plan_args(&o, table)?, key.clone())),
                _ => Err("explain needs TABLE and KEY".into()),
            }
        }
        "apply" => {
            let mut allowed = with_wasm(&POINTER);
            allowed.extend(["--location-map", "--dry-run", "--concurrency", "--batch"]);
            allowed.extend([
                "--receipts",
                "--context",
                "--holds",
                "--leases",
                "--writers",
            ]);
            allowed.push("--allow-future-now");
            o.only("apply", &allowed)?;
            match o.positional.as_slice() {
                [plan] => Ok(Command::Apply(ApplyArgs {
                    plan: plan.clone(),
                    pointer: o.pointer()?,
                    location_map: o.location_map.clone(),
                    dry_run: o.dry_run,
                    concurrency: o.concurrency.unwrap_or(16),
                    batch: o.batch.unwrap_or(crate::deletion::DEFAULT_BATCH),
                    receipts: o.receipts.clone(),
                    allow_future_now: o.allow_future_now,
                    wasm: o.wasm.clone(),
                    inputs: o.inputs.clone(),
                })),
                _ => Err("apply needs exactly one PLAN.json".into()),
            }
        }
        "expire" => {
            let mut allowed = with_wasm(&POINTER);
            allowed.extend(CONTEXT);
            allowed.extend([
                "--now",
                "--location-map",
                "--expire-id",
                "--json",
                "--commit",
                "--allow-future-now",
            ]);
            o.only("expire", &allowed)?;
            match o.positional.as_slice() {
                [table] => Ok(Command::Expire(ExpireArgs {
                    table: table.clone(),
                    pointer: o.pointer()?,
                    now_ms: o.now_ms.unwrap_or_else(crate::store::clock_ms),
                    location_map: o.location_map.clone(),
                    expire_ids: o.expire_ids.clone(),
                    json: o.json,
                    commit: o.commit,
                    allow_future_now: o.allow_future_now,
                    wasm: o.wasm.clone(),
                    inputs: o.inputs.clone(),
                })),
                _ => Err("expire needs a TABLE location".into()),
            }
        }
        "policy" => {
            o.only("policy", &["--json", "--wasm"])?;
            match o.positional.as_slice() {
                [sub, file] if sub == "check" => Ok(Command::PolicyCheck {
                    file: file.clone(),
                    json: o.json,
                    wasm: o.wasm.clone(),
                }),
                _ => Err("usage: lakesweep policy check FILE".into()),
            }
        }
        "compare" => {
            o.only("compare", &["--json"])?;
            match o.positional.as_slice() {
                [plan, other] => Ok(Command::Compare {
                    plan: plan.clone(),
                    other: other.clone(),
                    json: o.json,
                }),
                _ => Err("compare needs PLAN.json and OTHER.txt".into()),
            }
        }
        other => Err(format!(
            "unknown command `{other}` (plan, explain, apply, compare, expire, policy)"
        )),
    }
}

/// `72h`, `3d`, `90m`, `30s`, `1500ms` -> milliseconds. Bare numbers are refused.
/// A whole number above zero, for `flag`.
fn positive(flag: &str, v: &str) -> Result<usize, String> {
    v.parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{flag} `{v}`: a positive number"))
}

/// A size like `512MiB`, `2GiB`, `1GB` or plain bytes.
pub fn size_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("`{s}`: a size like 512MiB or 2GiB"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "`{s}`: unknown unit `{u}` (B, KiB, MiB, GiB, KB, MB, GB)"
            ))
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("`{s}`: too large"))
}

pub fn duration_ms(s: &str) -> Result<i64, String> {
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("duration `{s}` needs a unit (ms, s, m, h, d)"))?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().map_err(|_| format!("bad duration `{s}`"))?;
    let mult = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("duration `{s}`: unknown unit `{unit}`")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("duration `{s}` too large"))
}

/// RFC 3339 (`2026-11-30T12:00:00Z`, `...+02:00`, fractional seconds) or epoch milliseconds.
pub fn time_ms(s: &str) -> Result<i64, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse().map_err(|_| format!("bad time `{s}`"));
    }
    let bad = || format!("time `{s}` is neither RFC 3339 nor epoch milliseconds");
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't' || b[10] == b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let num =
        |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<i64>().ok()).ok_or_else(bad);
    let (y, mo, d, h, mi, sec) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    let mut rest = &s[19..];
    let mut frac_ms = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits: String = r.chars().take_while(|c| c.is_ascii_digit()).collect();
        frac_ms = format!("{digits:0<3}")[..3]
            .parse::<i64>()
            .map_err(|_| bad())?;
        rest = &r[digits.len()..];
    }
    let offset_ms = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let oh: i64 = o[1..3].parse().map_err(|_| bad())?;
            let om: i64 = o[4..6].parse().map_err(|_| bad())?;
            sign * (oh * 3_600_000 + om * 60_000)
        }
        _ => return Err(bad()),
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return Err(bad());
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = if y2 >= 0 { y2 } else { y2 - 399 } / 400;
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(((days * 86_400 + h * 3600 + mi * 60 + sec) * 1000 + frac_ms) - offset_ms)
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
            Ok(Command::LedgerShow { .. })
        ));
        assert!(parse(&argv("ledger drop /t")).is_err());
        assert!(parse(&argv("reconcile /t --now 5")).is_err());
    }

    #[test]
    fn durations_need_units() {
        assert_eq!(duration_ms("72h").unwrap(), 259_200_000);
        assert_eq!(duration_ms("3d").unwrap(), 259_200_000);
        assert!(duration_ms("72").is_err());
        assert!(duration_ms("3w").is_err());
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
    }
}
