//! `lakesweep expire`: plans snapshot expiry in the component from the
//! current metadata, the policy and the context, prints it, and with
//! `--commit` carries it out: the new metadata document is written under a
//! new name (create-if-absent), then the pointer is swapped with a
//! compare-and-set (SQL catalog) or `version-hint.text` is rewritten after
//! checking it still names the metadata the plan was made from. A commit
//! that lands meanwhile makes the swap fail cleanly; the new file is removed.

use std::process::ExitCode;

use crate::catalogs::commit::{commit, split_dir};
use crate::catalogs::pointer::Pointer;
use crate::catalogs::CommitError;
use crate::cli::ExpireCmd;
use crate::component::{wasm_path, wt, Planner};
use crate::error::HostError;
use crate::session::context::ContextFiles;
use crate::stores::{table_uri, Store};

/// A finished `expire` run.
pub struct Expiry {
    /// The expiry plan.
    pub plan: wt::ExpiryPlan,
    /// The new metadata location, when committed.
    pub committed: Option<String>,
    /// The quarantine bundle sealed before the commit (its URI).
    pub bundle: Option<String>,
    /// What the expiry frees, by object kind (count, bytes), or why that is
    /// not known; `None` when not asked for or nothing expires.
    pub frees: Option<Result<Frees, HostError>>,
}

/// Objects only the expired snapshots read, by kind: (count, bytes). These
/// are the ones the next plan deletes once the expiry is committed (those
/// older than the window; younger ones follow later).
pub type Frees = std::collections::BTreeMap<String, (u64, u64)>;

/// Plans the table as it is and as `new_metadata` would leave it (without
/// writing it), and returns what the second plan reclaims beyond the first.
async fn frees(
    a: &ExpireCmd,
    pointer: &Pointer,
    now_ms: i64,
    inputs: &ContextFiles,
    table: &str,
    original: &str,
    new_metadata: &[u8],
) -> Result<Frees, HostError> {
    let mut planner = Planner::load(&wasm_path(a.planner.wasm.as_deref()))?;
    let dir = split_dir(original)?.0;
    let input = crate::session::plan::PlanInput {
        table: table.to_owned(),
        pointer: pointer.clone(),
        format: crate::session::plan::Format::Iceberg,
        now_ms,
        retention_ms: None,
        location_map: a.map.location_map.clone(),
        wasm: a.planner.wasm.clone(),
        policy: inputs.policy_json()?,
        context: inputs.context_json(&mut planner)?,
        keep_all_decisions: false,
        keep_versions: Vec::new(),
        log_cleanup: false,
        allow_short_retention: false,
        memory_budget: None,
        manifest_cache: false,
        origin: None,
        report: false,
        what_if: None,
        foreign_roots: Vec::new(),
        prior_pointers: Vec::new(),
        deleted_index: None,
        compare_keys: None,
    };
    let before = crate::session::plan::run(&input).await?;
    let after = crate::session::plan::run(&crate::session::plan::PlanInput {
        what_if: Some(crate::session::plan::WhatIf {
            uri: format!("{dir}/lakesweep-what-if-expiry.metadata.json"),
            bytes: new_metadata.to_vec(),
        }),
        ..input
    })
    .await?;
    let tally = |p: &wt::SealedPlan| -> Frees {
        p.summary
            .reclaimable
            .iter()
            .map(|t| (t.name.clone(), (t.tally.count, t.tally.bytes)))
            .collect()
    };
    let was = tally(&before.plan);
    let mut out = Frees::new();
    for (kind, (c, b)) in tally(&after.plan) {
        let (c0, b0) = was.get(&kind).copied().unwrap_or_default();
        if c > c0 {
            out.insert(kind, (c - c0, b.saturating_sub(b0)));
        }
    }
    Ok(out)
}

/// Runs `expire`.
pub async fn run(a: &ExpireCmd) -> Result<Expiry, HostError> {
    let pointer = a.pointer.pointer()?;
    let now_ms = a.when.now_ms();
    let inputs = a.context.files(Some(&a.policy));
    let table = table_uri(&a.table)?;
    let store = Store::for_uri(&table)?;
    let mut planner = Planner::load(&wasm_path(a.planner.wasm.as_deref()))?;
    let original = pointer.resolve(&mut planner, &store, &table).await?;
    let mapped = planner.canonical_pointer(&original, &a.map.location_map)?;
    let bytes = store
        .read(&mapped)
        .await?
        .ok_or_else(|| refused!("the current metadata {mapped} does not exist"))?;
    let policy = inputs.policy_json()?;
    let context = inputs.context_json(&mut planner)?;
    // Every DR checkpoint metadata file the context names, read for the planner.
    let mut dr_metadata = Vec::new();
    if let Some(ctx) = &context {
        for f in planner.dr_metadata_files(ctx)? {
            let physical = planner.canonical_pointer(&f, &a.map.location_map)?;
            if let Some(b) = store.read(&physical).await? {
                dr_metadata.push(wt::Blob { key: f, bytes: b });
            }
        }
    }
    let plan = planner.plan_expiry(
        &original,
        &bytes,
        policy.as_deref(),
        context.as_deref(),
        now_ms,
        &a.expire_ids,
        &dr_metadata,
    )?;
    // Worked out before the commit, on the table as its pointer names it
    // now (the document the expiry was planned on, unless a commit landed).
    let frees = match (&plan.new_metadata, !a.no_bytes) {
        (Some(doc), true) if !plan.expire.is_empty() => {
            Some(frees(a, &pointer, now_ms, &inputs, &table, &original, doc).await)
        }
        _ => None,
    };
    let mut committed = None;
    let mut bundle = None;
    if let (true, Some(new_metadata)) = (a.commit, &plan.new_metadata) {
        planner
            .check_clock(now_ms, a.future.allow_future_now)
            .map_err(|e| refused!("expiry not committed: {e}"))?;
        let ids: Vec<i64> = plan.expire.clone();
        if let Pointer::Explicit(_) | Pointer::Command(_) = pointer {
            return Err(
                "--commit needs a pointer it can swap: --catalog, or the table's version-hint.text (--metadata and --pointer-cmd only read one)"
                    .into(),
            );
        }
        // Quarantine before the irreversible step: the expired snapshots'
        // whole chain is sealed into a bundle first; no bundle, no expiry.
        if !ids.is_empty() {
            let id = format!("q-{}-{}", ids[0], now_ms);
            bundle = Some(
                crate::commands::bundle::seal(
                    &mut planner,
                    &store,
                    &table,
                    &a.map.location_map,
                    &original,
                    &mapped,
                    &bytes,
                    &ids,
                    &id,
                    now_ms,
                )
                .await
                .map_err(|e| refused!("expiry not committed: the quarantine bundle failed: {e}"))?,
            );
        }
        let landed = match (&pointer, &plan.rest_commit) {
            (
                Pointer::Catalog {
                    catalog,
                    namespace,
                    name,
                },
                Some(request),
            ) if catalog.commits_requests() => {
                match catalog
                    .commit_request(namespace, name, request, &original)
                    .await
                {
                    Err(e) => Err(e),
                    Ok(answer) => {
                        settle_rest(
                            &mut planner,
                            catalog,
                            namespace,
                            name,
                            &original,
                            &plan.document,
                            &a.map.location_map,
                            answer,
                        )
                        .await
                    }
                }
            }
            _ => {
                commit(
                    &pointer,
                    &table,
                    &store,
                    &original,
                    &mapped,
                    new_metadata.clone(),
                )
                .await
            }
        };
        match landed {
            Ok(m) => committed = Some(m),
            // The expiry did not happen: its bundle must not linger (every
            // sweep walks every bundle).
            Err(CommitError::Refused(e)) => {
                let e = format!("expiry not committed: {e}");
                if let Some(id) = &bundle {
                    if let Err(d) = crate::commands::bundle::discard(&store, &table, id).await {
                        return Err(refused!(
                            "{e}; its quarantine bundle {id} could not be removed: {d}"
                        ));
                    }
                }
                return Err(e.into());
            }
            // It may have happened: the bundle stays, it may be all that
            // holds the expired snapshots' metadata.
            Err(e @ CommitError::Unknown(_)) => {
                return Err(HostError::Unknown(format!(
                    "{e}; check the table's pointer: if it moved, the expiry landed{}",
                    bundle
                        .as_deref()
                        .map(|b| format!(" and bundle {b} holds the expired snapshots"))
                        .unwrap_or_default()
                )))
            }
        }
    }
    Ok(Expiry {
        plan,
        committed,
        bundle,
        frees,
    })
}

/// What a REST commit came to: the planner judges the answer; anything but
/// a plain success is settled by reading the table again and asking the
/// planner whether the expiry landed (a 409 can follow a commit that
/// landed, when a gateway retried it).
#[allow(clippy::too_many_arguments)]
async fn settle_rest(
    planner: &mut Planner,
    catalog: &crate::catalogs::Catalog,
    namespace: &str,
    name: &str,
    original: &str,
    expiry: &str,
    location_map: &[(String, String)],
    sent: crate::catalogs::RestAnswer,
) -> Result<String, CommitError> {
    let (outcome, why) = planner
        .judge_mutation(&sent.what, &sent.answer)
        .map_err(|e| CommitError::Unknown(e.to_string()))?;
    if outcome == wt::MutationOutcome::Done {
        if let Some(m) = sent.metadata_location.filter(|m| m != original) {
            return Ok(m);
        }
    }
    let definite = matches!(
        outcome,
        wt::MutationOutcome::Refused | wt::MutationOutcome::Absent
    );
    let unsettled = |more: String| CommitError::Unknown(format!("{why}; {more}"));
    let now = catalog
        .load(namespace, name)
        .await
        .map_err(|e| unsettled(format!("the table could not be read again: {e}")))?;
    if now.metadata == original {
        return Err(if definite {
            CommitError::Refused(why)
        } else {
            unsettled("the table still names the planned document".into())
        });
    }
    let read = async {
        let uri = planner.canonical_pointer(&now.metadata, location_map)?;
        crate::stores::Store::for_uri(&uri)?
            .read(&uri)
            .await?
            .ok_or_else(|| refused!("{uri} does not exist"))
    };
    let bytes = read
        .await
        .map_err(|e| unsettled(format!("the table's new metadata could not be read: {e}")))?;
    let (landing, how) = planner
        .expiry_landed(expiry, &now.metadata, &bytes)
        .map_err(|e| unsettled(e.to_string()))?;
    match landing {
        wt::Landing::Landed => Ok(now.metadata),
        wt::Landing::NotLanded if definite => Err(CommitError::Refused(format!(
            "{why}; the table moved meanwhile and {how}"
        ))),
        _ => Err(unsettled(how)),
    }
}

/// The human report of an expiry plan.
pub fn human(e: &Expiry) -> String {
    use crate::commands::report::esc;
    let p = &e.plan;
    let mut out = format!(
        "lakesweep expire (metadata {})\n",
        esc(&p.metadata_location)
    );
    if let Some(d) = &p.policy_digest {
        out.push_str(&format!("  policy digest {d}\n"));
    }
    out.push_str(&format!(
        "  expire {} snapshots, retain {}, remove {} refs\n",
        p.expire.len(),
        p.retain.len(),
        p.remove_refs.len()
    ));
    for x in &p.expired {
        out.push_str(&format!("  - expire {}: {}\n", x.snapshot_id, esc(&x.why)));
    }
    for x in &p.retain {
        out.push_str(&format!(
            "  + keep {}: {}\n",
            x.snapshot_id,
            esc(&x.reasons.join("; "))
        ));
    }
    for r in &p.remove_refs {
        out.push_str(&format!(
            "  - remove ref {}\n",
            esc(&serde_json::json!(r).to_string())
        ));
    }
    for w in &p.warnings {
        out.push_str(&format!("  warning: {}\n", esc(w)));
    }
    match &e.frees {
        Some(Ok(f)) if f.is_empty() => out.push_str(
            "  frees nothing the next plan would delete (every file is still read, or younger than the window)\n",
        ),
        Some(Ok(f)) => {
            let kinds: Vec<String> = f
                .iter()
                .map(|(k, (c, b))| format!("{k} {c} ({})", crate::commands::report::bytes(*b)))
                .collect();
            out.push_str(&format!(
                "  frees {} once committed, in the next plan: {}\n",
                crate::commands::report::bytes(f.values().map(|(_, b)| b).sum()),
                kinds.join(", ")
            ));
        }
        Some(Err(why)) => out.push_str(&format!("  bytes freed unknown: {}\n", esc(&why.to_string()))),
        None => {}
    }
    match &e.committed {
        Some(m) => {
            if let Some(b) = &e.bundle {
                out.push_str(&format!(
                    "quarantine bundle sealed first: {b} (lakesweep restore --bundle restores it)\n"
                ));
            }
            out.push_str(&format!("committed: the table now points at {m}\n"))
        }
        None if p.new_metadata.is_none() => out.push_str("nothing to expire\n"),
        None => out.push_str("dry run: pass --commit to carry it out\n"),
    }
    out
}

/// `expire TABLE`: the expiry plan printed (with what was committed and
/// what it frees), or as the planner's document with those added.
pub async fn command(a: &ExpireCmd) -> Result<ExitCode, HostError> {
    let e = run(a).await?;
    if a.json {
        // The expiry document as the planner wrote it, with what was done.
        let mut v: serde_json::Value =
            serde_json::from_str(&e.plan.document).map_err(|e| e.to_string())?;
        v["committed"] = e.committed.clone().into();
        v["bundle"] = e.bundle.clone().into();
        v["frees"] = match &e.frees {
            None => serde_json::Value::Null,
            Some(Ok(f)) => serde_json::json!({
                "bytes": f.values().map(|(_, b)| b).sum::<u64>(),
                "byKind": f.iter().map(|(k, (c, b))| (k.clone(), serde_json::json!({"count": c, "bytes": b}))).collect::<serde_json::Map<_, _>>(),
            }),
            Some(Err(why)) => serde_json::json!({"unknown": why.to_string()}),
        };
        outln!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        out!("{}", human(&e));
    }
    Ok(ExitCode::SUCCESS)
}
