//! `lakesweep halt` and `resume`: set or clear stop switches. A switch is
//! one object every deleter (`apply`, `sweep`, Spark, Python, Node,
//! `pinot apply`) reads before each batch; the planner names which (each
//! table's own `TABLE/_lakesweep/stop.json`, and a fleet's given with
//! `--stop-switch`) and writes what goes in them (who, why, when, and the
//! halt's generation). On a halt, each TABLE's ledger lengthens the
//! quarantine of every waiting object at once; a ledger not named here
//! does it on its next sweep, which reads the switches first.

use std::process::ExitCode;

use serde_json::json;

use crate::cli::SwitchCmd;
use crate::component::{wasm_path, Planner};
use crate::error::HostError;
use crate::session::ledger::{default_ledger, Lock};
use crate::stores::Store;

/// Runs `halt` (`set`) or `resume`.
pub async fn command(a: &SwitchCmd, set: bool) -> Result<ExitCode, HostError> {
    let now = a.now.now_ms();
    let mut planner = Planner::load(&wasm_path(a.planner.wasm.as_deref()))?;
    let tables = a
        .tables
        .iter()
        .map(|t| crate::stores::table_uri(t))
        .collect::<Result<Vec<_>, _>>()?;
    let switches = planner.stop_switches(&tables, &a.stop.stop_switches)?;
    // Every document first (a resume of a switch that is not set is
    // refused before any is cleared), then every write.
    let mut docs = Vec::new();
    for uri in &switches {
        let store = Store::for_uri(uri)?;
        // A halt is never held up by a switch it cannot read: the planner
        // writes a new one over it.
        let previous = match store.read(uri).await {
            Ok(b) => b.map(|b| String::from_utf8_lossy(&b).into_owned()),
            Err(e) if set => {
                eprintln!(
                    "lakesweep: {uri} could not be read ({e}): a new halt is written over it"
                );
                None
            }
            Err(e) => return Err(e),
        };
        let doc = planner
            .switch_document(set, previous.as_deref(), &a.reason, &a.by, now)
            .map_err(|e| refused!("{uri}: {e}"))?;
        docs.push((uri.clone(), store, doc));
    }
    let mut failed = Vec::new();
    let mut written = Vec::new();
    for (uri, store, doc) in docs {
        match store.overwrite(&uri, doc.into_bytes()).await {
            Ok(()) => written.push(uri),
            Err(e) => failed.push(format!("{uri}: {e}")),
        }
    }
    let verb = if set { "set" } else { "cleared" };
    // Each line as it happens (a halt is read by running deleters at once).
    let say = |line: String| {
        if !a.json {
            progress!("{line}");
        }
    };
    for uri in &written {
        say(format!("{verb} {uri}"));
    }
    for f in &failed {
        eprintln!("lakesweep: not {verb}: {f}");
    }
    let mut lengthened = Vec::new();
    if set {
        let readings = crate::session::switch::read_switches(&switches).await;
        for table in &tables {
            let ledger_uri = default_ledger(table);
            match lengthen(&mut planner, &ledger_uri, &readings, a.extend, now).await {
                Ok(Some(n)) => {
                    say(format!(
                        "{ledger_uri}: the quarantine of {n} waiting objects is longer"
                    ));
                    lengthened.push(json!({"ledger": ledger_uri, "objects": n}));
                }
                Ok(None) => say(format!("{ledger_uri}: no ledger, nothing waits")),
                Err(e) => {
                    eprintln!(
                        "lakesweep: {ledger_uri}: not lengthened now ({e}); its next sweep reads the switch and lengthens it"
                    );
                    lengthened.push(json!({"ledger": ledger_uri, "error": e.to_string()}));
                }
            }
        }
    }
    if a.json {
        outln!(
            "{}",
            json!({"switches": written, "failed": failed, "halted": set, "ledgers": lengthened})
        );
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(HostError::Stopped(format!(
            "{} of {} switches could not be written: {}",
            failed.len(),
            switches.len(),
            failed.join("; ")
        )))
    }
}

/// Lengthens the quarantine in the ledger at `ledger_uri` for the halts the
/// `readings` name, under its lock; `None` when there is no ledger.
async fn lengthen(
    planner: &mut Planner,
    ledger_uri: &str,
    readings: &[crate::component::wt::SwitchReading],
    extension: Option<i64>,
    now: i64,
) -> Result<Option<u64>, HostError> {
    let lock = Lock::take(ledger_uri).await?;
    let r = async {
        let store = Store::for_uri(ledger_uri)?;
        let Some(l) = crate::session::ledger::open(planner, &store, ledger_uri).await? else {
            return Ok(None);
        };
        let seen = planner.ledger_observe_halts(l, readings, extension, now)?;
        crate::session::ledger::save(planner, l, &store, ledger_uri).await?;
        Ok(Some(seen.iter().map(|h| h.objects).sum()))
    }
    .await;
    lock.release().await;
    r
}
