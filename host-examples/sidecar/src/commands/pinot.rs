//! `lakesweep pinot plan|apply`: snapshot-artifact retention for a Pinot
//! table synced from Iceberg (StarTree's snapshot processing).
//!
//! The planner's `pinot-session` decides; this host reads the table config
//! and the live state (files, or the controller's REST answers over
//! http(s)), lists and reads the deep-store roots through the same stores
//! as `plan`, and carries out a plan: segments through the controller's
//! `DELETE /segments/{table}/{segment}?type=..&retention=..`, artifact
//! objects through the store, each only at the version the plan listed.

use crate::cli::{PinotApplyCmd, PinotPlanCmd, PinotStateOpts};
use crate::error::HostError;
use std::io::Write;

use futures::StreamExt;
use serde_json::Value;

use crate::commands::report::{bytes, esc};
use crate::component::{done, wt, Planner};
use crate::stores::{self, Store};

/// Exit status of a plan that says "retry next time": a retained
/// snapshot's artifact was missing or unreadable, nothing was pruned
/// (75, EX_TEMPFAIL).
pub const RETRY: u8 = 75;

/// Objects handed to the planner per page.
const PAGE: usize = 1000;

/// Reads a file, or GETs an http(s) URL (a non-2xx answer is an error).
async fn fetch(src: &str) -> Result<String, HostError> {
    if src.starts_with("http://") || src.starts_with("https://") {
        let r = reqwest::get(src)
            .await
            .map_err(|e| refused!("GET {src}: {e}"))?;
        let status = r.status();
        let text = r.text().await.map_err(|e| refused!("GET {src}: {e}"))?;
        if !status.is_success() {
            return Err(refused!("GET {src}: {status}: {}", text.trim()));
        }
        Ok(text)
    } else {
        std::fs::read_to_string(src).map_err(|e| refused!("read {src}: {e}"))
    }
}

/// A root as the planner takes it: local paths become `file:///abs`.
fn root_uri(r: &str) -> Result<String, HostError> {
    let uri = if r.contains("://") && !r.starts_with("file:") {
        r.to_owned()
    } else {
        stores::local_uri(r)?
    };
    Ok(uri.trim_end_matches('/').to_owned())
}

/// Runs one planning session to its sealed plan: the host's whole part is
/// answering the planner's requests.
pub async fn plan(
    planner: &mut Planner,
    sources: &PinotStateOpts,
    roots: &[String],
    segment_column: Option<String>,
    min_age_ms: Option<i64>,
    now_ms: i64,
) -> Result<wt::PinotPlan, HostError> {
    let cfg = wt::PinotConfig {
        roots: roots
            .iter()
            .map(|r| root_uri(r))
            .collect::<Result<_, _>>()?,
        table_config: fetch(&sources.table_config).await?,
        now_ms,
        min_age_ms,
        segment_column,
        origin: None,
    };
    let session = done(
        planner
            .api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_start(&mut planner.store, &cfg),
    )?;
    loop {
        let api = planner.api.lakesweep_planner_planner().pinot_session();
        if api
            .call_is_done(&mut planner.store, session)
            .map_err(crate::component::trap)?
        {
            break;
        }
        let mut asked = Vec::new();
        while let Some(r) = api
            .call_poll_request(&mut planner.store, session)
            .map_err(crate::component::trap)?
        {
            asked.push(r);
        }
        if asked.is_empty() {
            return Err("the planner stopped without a plan (internal error)".into());
        }
        for r in asked {
            match r {
                wt::PinotRequest::ReadState => {
                    let (i, w, a) = futures::try_join!(
                        fetch(&sources.ideal_state),
                        fetch(&sources.watermark),
                        fetch(&sources.active)
                    )?;
                    done(api.call_handle_state(&mut planner.store, session, &i, &w, &a))?;
                }
                wt::PinotRequest::List(prefix) => {
                    let s = Store::for_uri(&prefix)?;
                    let mut listing = s.list(&prefix);
                    let mut page = Vec::with_capacity(PAGE);
                    while let Some(o) = listing.next().await {
                        let o = o?;
                        page.push(wt::ListedObject {
                            version: o.version(),
                            key: o.uri,
                        });
                        if page.len() == PAGE {
                            done(api.call_handle_page(
                                &mut planner.store,
                                session,
                                &prefix,
                                &page,
                                false,
                            ))?;
                            page.clear();
                        }
                    }
                    if let Some(k) = s.take_unrepresentable().first() {
                        return Err(refused!(
                            "{k}: a key the store cannot spell exactly is under {prefix}; \
                             no plan"
                        ));
                    }
                    done(api.call_handle_page(&mut planner.store, session, &prefix, &page, true))?;
                }
                wt::PinotRequest::ReadBlob(uri) => {
                    let bytes = Store::for_uri(&uri)?.read(&uri).await?;
                    done(match bytes {
                        Some(b) => api.call_handle_blob(&mut planner.store, session, &uri, &b),
                        None => api.call_handle_missing(&mut planner.store, session, &uri),
                    })?;
                }
            }
        }
    }
    done(
        planner
            .api
            .lakesweep_planner_planner()
            .pinot_session()
            .call_finish(&mut planner.store, session),
    )
}

/// `pinot plan`: prints the report (or the document) and writes the plan.
/// Exit 0, or [`RETRY`] when the plan says retry.
pub async fn run_plan(a: &PinotPlanCmd) -> Result<u8, HostError> {
    let mut planner = Planner::load(&crate::component::wasm_path(a.planner.wasm.as_deref()))?;
    let p = plan(
        &mut planner,
        &a.state,
        &a.layout.roots,
        a.layout.segment_column.clone(),
        a.layout.min_age,
        a.when.now_ms(),
    )
    .await?;
    if let Some(out) = &a.out {
        std::fs::write(out, &p.document).map_err(|e| refused!("write {out}: {e}"))?;
    }
    if a.json {
        outln!("{}", p.document);
    } else {
        out!("{}", human(&p.document)?);
        if let Some(out) = &a.out {
            outln!("plan written to {out}; to carry it out: lakesweep pinot apply {out} --controller URL (with the live state sources and the same --root options)");
        }
    }
    Ok(match p.status {
        wt::PinotStatus::Retry => RETRY,
        _ => 0,
    })
}

/// The report for people, from the plan document.
pub fn human(document: &str) -> Result<String, HostError> {
    let v: Value = serde_json::from_str(document).map_err(|e| refused!("plan: {e}"))?;
    let mut o = String::new();
    let s = |v: &Value| esc(v.as_str().unwrap_or(""));
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    o += &format!(
        "Pinot table {}: snapshot-artifact retention plan ({})\n  {}\n",
        s(&v["tableNameWithType"]),
        s(&v["status"]),
        s(&v["statusDetail"])
    );
    let st = &v["settings"];
    o += &format!(
        "  maxActiveVersions {}, deletedSegmentRetention {}, segment column `{}`\n",
        st["maxActiveVersions"],
        s(&st["deletedSegmentRetention"]),
        s(&v["segmentColumn"])
    );
    for note in st["notes"].as_array().into_iter().flatten() {
        o += &format!("  note: {}\n", s(note));
    }
    o += "\nSnapshots:\n";
    for x in v["snapshots"].as_array().into_iter().flatten() {
        o += &format!(
            "  {:<20} {:<11} {:<6} {:>5} objects {:>10}  {}\n",
            s(&x["snapshotId"]),
            s(&x["role"]),
            if x["swept"].as_bool() == Some(true) {
                "swept"
            } else {
                "kept"
            },
            n(&x["objects"]),
            bytes(n(&x["bytes"])),
            s(&x["detail"])
        );
    }
    let segs = v["deleteSegments"].as_array().cloned().unwrap_or_default();
    o += &format!(
        "\nSegments to delete through the controller (retention {}): {}\n",
        s(&st["deletedSegmentRetention"]),
        segs.len()
    );
    for x in &segs {
        o += &format!("  {}  ({})\n", s(&x["segment"]), s(&x["why"]));
    }
    let objs = v["deleteObjects"].as_array().cloned().unwrap_or_default();
    o += &format!("\nArtifact objects to delete: {}\n", objs.len());
    for x in &objs {
        o += &format!(
            "  {:>10}  {}  (snapshot {})\n",
            bytes(n(&x["version"]["size"])),
            s(&x["key"]),
            s(&x["snapshotId"])
        );
    }
    for x in v["stray"].as_array().into_iter().flatten() {
        o += &format!("  kept: {}  ({})\n", s(&x["key"]), s(&x["why"]));
    }
    for w in v["warnings"].as_array().into_iter().flatten() {
        o += &format!("  warning: {}\n", s(w));
    }
    let sm = &v["summary"];
    o += &format!(
        "\nSummary: {} segments in the ideal state, {} named by retained or in-progress snapshots \
         ({} of them not in the ideal state), {} to delete; {} artifact objects ({}) listed, {} ({}) \
         to delete; {} re-reads.\nDigest {}. Nothing was deleted.\n",
        n(&sm["idealStateSegments"]),
        n(&sm["keptSegments"]),
        n(&sm["keptNotInIdealState"]),
        segs.len(),
        n(&sm["objectsListed"]),
        bytes(n(&sm["bytesListed"])),
        n(&sm["objectsDeleted"]),
        bytes(n(&sm["bytesDeleted"])),
        n(&sm["rechecks"]),
        s(&v["digest"])
    );
    Ok(o)
}

/// `pinot apply`: plans again from the live state, has the planner accept
/// the plan against it, then deletes what both agree on. Exit 0 when every
/// approved deletion went through, 1 when one failed or stayed unknown,
/// [`RETRY`] when the live run says retry.
pub async fn run_apply(a: &PinotApplyCmd) -> Result<u8, crate::error::HostError> {
    let text = std::fs::read_to_string(&a.plan).map_err(|e| refused!("read {}: {e}", a.plan))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| refused!("{}: {e}", a.plan))?;
    let mut planner = Planner::load(&crate::component::wasm_path(a.planner.wasm.as_deref()))?;
    // The live run takes its roots, column and age from the command line:
    // the planner refuses a plan of other roots or another column, and a
    // plan file cannot widen them.
    let fresh = plan(
        &mut planner,
        &a.state,
        &a.layout.roots,
        a.layout.segment_column.clone(),
        a.layout.min_age,
        crate::clock::clock_ms(),
    )
    .await?;
    let approval = done(
        planner
            .api
            .lakesweep_planner_planner()
            .call_accept_pinot_plan(&mut planner.store, &text, &fresh.document),
    )?;
    for w in &approval.withheld {
        outln!("withheld: {}", esc(w));
    }
    if fresh.status == wt::PinotStatus::Retry {
        outln!("the live state says retry: {}", esc(&fresh.status_detail));
        return Ok(RETRY);
    }
    let table = v["tableNameWithType"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let table_type = v["settings"]["tableType"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let raw = table
        .strip_suffix(&format!("_{table_type}"))
        .unwrap_or(&table)
        .to_owned();
    if a.dry_run {
        for s in &approval.segments {
            outln!(
                "would delete segment {} (retention {})",
                esc(s),
                approval.segment_retention
            );
        }
        for o in &approval.objects {
            outln!("would delete {} ({})", esc(&o.key), bytes(o.version.size));
        }
        outln!(
            "dry run: {} segments and {} objects approved; nothing deleted",
            approval.segments.len(),
            approval.objects.len()
        );
        return Ok(0);
    }
    let controller = a
        .controller
        .as_deref()
        .ok_or("--controller URL is needed to delete segments")?
        .trim_end_matches('/')
        .to_owned();
    let mut receipts = match &a.receipts {
        Some(f) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(f)
                .map_err(|e| refused!("open {f}: {e}"))?,
        ),
        None => None,
    };
    // The receipts file first: a receipt is on disk before it is printed,
    // and a closed output never stops the run (`progress!`).
    let mut write = |line: Value| -> Result<(), crate::error::HostError> {
        if let Some(f) = receipts.as_mut() {
            writeln!(f, "{line}")
                .map_err(|e| crate::error::HostError::Stopped(format!("write receipts: {e}")))?;
        }
        progress!("{line}");
        Ok(())
    };
    // A DELETE never follows a redirect: a 3xx re-aims it at whatever the
    // Location names (another segment, another table).
    let client = crate::stores::http::mutating_client()?;
    let mut failed = 0;
    // The stop switches (each deep-store root's own, then the fleet's) are
    // read before every DELETE: once one is set, what is left is
    // `skipped-stopped` (the planner judges the readings).
    let switches = planner.stop_switches(&a.layout.roots, &a.stop.stop_switches)?;
    let mut halted: Option<String> = None;
    for s in &approval.segments {
        if let Some(why) = halted_by(&mut planner, &switches, &mut halted).await {
            write(
                serde_json::json!({"segment": s, "result": "skipped-stopped", "retention": approval.segment_retention, "detail": why}),
            )?;
            failed += 1;
            continue;
        }
        let url = format!(
            "{controller}/segments/{}/{}?type={}&retention={}",
            enc(&raw),
            enc(s),
            enc(&table_type),
            enc(&approval.segment_retention)
        );
        // The request must name exactly this segment: a URL library that
        // resolves `.` or `..` would aim it at the whole table.
        let parsed = reqwest::Url::parse(&url).map_err(|e| refused!("{url}: {e}"))?;
        if !parsed
            .path()
            .ends_with(&format!("/segments/{}/{}", enc(&raw), enc(s)))
        {
            return Err(refused!(
                "the DELETE for segment {s:?} would go to {}: refused",
                parsed.path()
            ));
        }
        let what = format!("DELETE {}", parsed.path());
        let answer = crate::stores::http::answer(client.delete(parsed).send().await).await;
        let (outcome, detail) = planner.judge_mutation(&what, &answer)?;
        let result = match outcome {
            wt::MutationOutcome::Done => "deleted",
            wt::MutationOutcome::Absent => "already-absent",
            wt::MutationOutcome::Refused => "failed",
            wt::MutationOutcome::Unknown => "unknown",
        };
        write(
            serde_json::json!({"segment": s, "result": result, "retention": approval.segment_retention, "detail": detail}),
        )?;
        if matches!(
            outcome,
            wt::MutationOutcome::Refused | wt::MutationOutcome::Unknown
        ) {
            failed += 1;
        }
    }
    for o in &approval.objects {
        if let Some(why) = halted_by(&mut planner, &switches, &mut halted).await {
            write(
                serde_json::json!({"key": o.key, "result": "skipped-stopped", "size": o.version.size, "detail": why}),
            )?;
            failed += 1;
            continue;
        }
        let st = Store::for_uri(&o.key)?;
        let seen = st
            .head(&o.key)
            .await
            .map_err(|e| crate::error::HostError::Stopped(format!("HEAD {}: {e}", o.key)))?;
        let (result, detail) = match seen {
            None => ("already-absent", String::new()),
            Some(seen) => {
                if !planner.same_version(&o.version, &seen.version())? {
                    (
                        "skipped-changed",
                        "not the version the plan listed".to_owned(),
                    )
                } else {
                    let when = crate::stores::Condition {
                        if_match: o.version.etag.clone(),
                        if_version: o.version.version_id.clone(),
                    };
                    match st.delete_if(&o.key, &when).await {
                        Ok(d) if d.changed => {
                            ("skipped-changed", "changed before the delete".into())
                        }
                        Ok(_) => ("deleted", String::new()),
                        Err(e) => ("failed", e.to_string()),
                    }
                }
            }
        };
        write(
            serde_json::json!({"key": o.key, "result": result, "size": o.version.size, "detail": detail}),
        )?;
        if result == "failed" {
            failed += 1;
        }
    }
    if let Some(why) = &halted {
        outln!("stopped: {why}");
    }
    outln!(
        "applied: {} segments and {} objects approved, {} withheld, {} failed or stopped",
        approval.segments.len(),
        approval.objects.len(),
        approval.withheld.len(),
        failed
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

/// Why nothing more may be deleted, once a stop switch of `switches` is
/// read set (or unreadable): read again before every DELETE until then.
async fn halted_by(
    planner: &mut Planner,
    switches: &[String],
    halted: &mut Option<String>,
) -> Option<String> {
    if halted.is_none() {
        let readings = crate::session::switch::read_switches(switches).await;
        if let Err(e) = planner.check_stop_switches(switches, &readings) {
            *halted = Some(e.to_string());
        }
    }
    halted.clone()
}

/// Everything but RFC 3986's unreserved characters is escaped.
const ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes one URL path segment or query value (a segment name
/// with `/`, `?`, `%` or a space stays one path segment).
fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, ESCAPED).to_string()
}
