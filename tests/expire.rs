//! Snapshot expiry: Java `RemoveSnapshots` behaviour as a table of cases,
//! each asserting the exact expired set; then the policy and context
//! protections, alone and combined; then bad policies.

use lakesweep::context::Context;
use lakesweep::{plan_expiry, Error, ExpiryPlan, ExpiryRequest, Policy, UnsafeReason};
use serde_json::{json, Value};

const DAY: i64 = 86_400_000;
const NOW: i64 = 1_800_000_000_000;
const UUID: &str = "0f0e0d0c-0000-4000-8000-00000000e1e1";
const LOC: &str = "s3://b/db/t";

/// A v2 table: `snaps` are (id, parent, age in days); refs as given (None:
/// no `refs`, implicit main on the last snapshot).
fn table(snaps: &[(i64, Option<i64>, i64)], refs: Option<Value>, props: Value) -> Vec<u8> {
    let snapshots: Vec<Value> = snaps
        .iter()
        .map(|(id, parent, age)| {
            json!({"snapshot-id": id, "parent-snapshot-id": parent, "timestamp-ms": NOW - age * DAY,
                   "manifest-list": format!("{LOC}/metadata/snap-{id}.avro"), "summary": {"operation": "append"}})
        })
        .collect();
    let current = refs
        .as_ref()
        .and_then(|r| r["main"]["snapshot-id"].as_i64())
        .or(snaps.last().map(|s| s.0))
        .unwrap_or(-1);
    let mut md = json!({
        "format-version": 2, "table-uuid": UUID, "location": LOC, "last-sequence-number": 1,
        "last-updated-ms": NOW - DAY, "last-column-id": 1, "current-schema-id": 0,
        "schemas": [{"type": "struct", "schema-id": 0, "fields": []}],
        "default-spec-id": 0, "partition-specs": [{"spec-id": 0, "fields": []}],
        "last-partition-id": 999, "default-sort-order-id": 0, "sort-orders": [],
        "properties": props, "current-snapshot-id": current, "snapshots": snapshots,
        "snapshot-log": snaps.iter().map(|(id, _, age)| json!({"snapshot-id": id, "timestamp-ms": NOW - age * DAY})).collect::<Vec<_>>(),
        "metadata-log": [],
    });
    if let Some(r) = refs {
        md["refs"] = r;
    }
    serde_json::to_vec(&md).unwrap()
}

fn run(
    bytes: &[u8],
    policy: Option<&str>,
    ctx: &str,
    explicit: &[i64],
) -> Result<ExpiryPlan, Error> {
    plan_expiry(
        &ExpiryRequest {
            metadata_location: format!("{LOC}/metadata/00005-x.metadata.json"),
            now_ms: NOW,
            policy: policy.map(|p| Policy::parse(p).unwrap()),
            context: Context::parse(ctx).unwrap(),
            expire_ids: explicit.to_vec(),
            dr_metadata: vec![],
        },
        bytes,
    )
}

fn expired(bytes: &[u8]) -> Vec<i64> {
    run(bytes, None, "{}", &[]).unwrap().expire
}

/// A linear history 1..=n, snapshot i committed (n - i + 1) * 2 days ago... ages given.
fn linear(ages: &[i64]) -> Vec<(i64, Option<i64>, i64)> {
    ages.iter()
        .enumerate()
        .map(|(i, age)| {
            let id = i as i64 + 1;
            (id, if id == 1 { None } else { Some(id - 1) }, *age)
        })
        .collect()
}

fn policy(extra_snapshot: &str, extra_file: &str) -> String {
    format!(
        r#"{{"schema":"lakehouseRetentionPolicy.v1","binding":{{"tableUuid":"{UUID}","format":"iceberg"}},
            "snapshotRetention":{{{extra_snapshot}}},
            "fileRetention":{{"orphanSafetyInterval":"3d","maxWriterDuration":"6h"{extra_file}}}}}"#
    )
}

#[test]
fn java_defaults_keep_five_days_and_the_current_snapshot() {
    // Ages 20, 10, 6, 4, 1 days: 5-day default keeps 4 and 5 (and 5 is main).
    let t = table(&linear(&[20, 10, 6, 4, 1]), None, json!({}));
    assert_eq!(expired(&t), vec![1, 2, 3]);
    // Everything old: only the current snapshot (min-snapshots-to-keep 1) stays.
    let t = table(&linear(&[20, 10, 9]), None, json!({}));
    assert_eq!(expired(&t), vec![1, 2]);
}

#[test]
fn table_properties_are_the_defaults() {
    let props = json!({"history.expire.min-snapshots-to-keep": "3", "history.expire.max-snapshot-age-ms": (2 * DAY).to_string()});
    let t = table(&linear(&[20, 10, 6, 4, 1]), None, props);
    assert_eq!(expired(&t), vec![1, 2]);
    let bad = table(
        &linear(&[1]),
        None,
        json!({"history.expire.min-snapshots-to-keep": "three"}),
    );
    assert!(matches!(
        run(&bad, None, "{}", &[]),
        Err(Error::Malformed { .. })
    ));
}

#[test]
fn retain_last_and_max_age_from_the_policy() {
    let t = table(&linear(&[20, 10, 6, 4, 1]), None, json!({}));
    let p = policy(r#""retainLast":4,"maxSnapshotAge":"30d""#, "");
    assert!(run(&t, Some(&p), "{}", &[]).unwrap().expire.is_empty());
    let p = policy(r#""retainLast":2,"maxSnapshotAge":"2d""#, "");
    assert_eq!(run(&t, Some(&p), "{}", &[]).unwrap().expire, vec![1, 2, 3]);
}

/// A reason names the setting that decided, as its source spells it: the
/// policy's field, the table's property, or the ref's own.
#[test]
fn reasons_name_the_setting_that_decided() {
    let t = table(&linear(&[20, 10, 6, 4, 1]), None, json!({}));
    let p = policy(r#""retainLast":3,"maxSnapshotAge":"30d""#, "");
    let plan = run(&t, Some(&p), "{}", &[]).unwrap();
    assert_eq!(
        reasons_of(&plan, 4),
        vec!["ancestor 2 of branch `main`, within retainLast 3".to_owned()]
    );
    assert!(
        reasons_of(&plan, 1)[0].contains("younger than maxSnapshotAge 30d"),
        "{:?}",
        reasons_of(&plan, 1)
    );
    // The table's property is longer than the policy's: it decides, and says so.
    let props = json!({"history.expire.min-snapshots-to-keep": "4"});
    let t = table(&linear(&[20, 10, 6, 4, 1]), None, props);
    let p = policy(r#""retainLast":2"#, "");
    let plan = run(&t, Some(&p), "{}", &[]).unwrap();
    assert_eq!(
        reasons_of(&plan, 2),
        vec![
            "ancestor 4 of branch `main`, within history.expire.min-snapshots-to-keep 4".to_owned()
        ]
    );
    // A per-ref override of the policy's.
    let p = policy(r#""refs":{"main":{"minSnapshotsToKeep":5}}"#, "");
    let t = table(&linear(&[20, 10, 6, 4, 1]), None, json!({}));
    let plan = run(&t, Some(&p), "{}", &[]).unwrap();
    assert_eq!(
        reasons_of(&plan, 1),
        vec![
            "ancestor 5 of branch `main`, within the policy's refs.main.minSnapshotsToKeep 5"
                .to_owned()
        ]
    );
}

#[test]
fn branch_and_tag_ageing() {
    // main: 1 <- 2 <- 3 ; branch `dev` off 1: 4 (old), tag `v1` on 1, tag `old` on 2.
    let snaps = vec![
        (1, None, 40),
        (2, Some(1), 30),
        (3, Some(2), 1),
        (4, Some(1), 35),
    ];
    let refs = json!({
        "main": {"snapshot-id": 3, "type": "branch"},
        "dev": {"snapshot-id": 4, "type": "branch", "max-ref-age-ms": 60 * DAY},
        "v1": {"snapshot-id": 1, "type": "tag"},
        "old": {"snapshot-id": 2, "type": "tag", "max-ref-age-ms": 10 * DAY},
    });
    let t = table(&snaps, Some(refs), json!({}));
    let p = run(&t, None, "{}", &[]).unwrap();
    // `old` is older than its max-ref-age: removed, and 2 with it. `dev`
    // (young enough as a ref) keeps its head 4; `v1` keeps 1.
    assert_eq!(p.remove_refs, vec!["old".to_owned()]);
    assert_eq!(p.expire, vec![2]);
    let reasons = |id: i64| {
        p.retain
            .iter()
            .find(|r| r.snapshot_id == id)
            .unwrap()
            .reasons
            .join("; ")
    };
    assert!(reasons(1).contains("tag `v1`"), "{}", reasons(1));
    assert!(reasons(4).contains("branch `dev`"));
    let commit = &p.commit;
    assert_eq!(commit["requirements"][0]["type"], "assert-table-uuid");
    assert!(commit["requirements"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["ref"] == "old" && r["snapshot-id"] == 2));
    assert!(commit["requirements"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["ref"] == "main" && r["snapshot-id"] == 3));
    assert_eq!(commit["updates"][0]["action"], "remove-snapshot-ref");
    assert_eq!(commit["updates"][1]["snapshot-ids"], json!([2]));
    // The new metadata document drops snapshot 2, ref `old`, its log entry,
    // and logs the old metadata file.
    let md = &p.new_metadata;
    assert_eq!(md["snapshots"].as_array().unwrap().len(), 3);
    assert!(md["refs"].get("old").is_none());
    // Java's rule: removing 2 clears the history before it.
    assert_eq!(
        md["snapshot-log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["snapshot-id"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        vec![3, 4]
    );
    assert_eq!(
        md["metadata-log"][0]["metadata-file"],
        format!("{LOC}/metadata/00005-x.metadata.json")
    );
    assert_eq!(md["last-updated-ms"], NOW);
}

#[test]
fn per_branch_min_snapshots_and_max_age() {
    let snaps = linear(&[50, 40, 30, 20, 10]);
    let refs = json!({"main": {"snapshot-id": 5, "type": "branch", "min-snapshots-to-keep": 3}});
    assert_eq!(expired(&table(&snaps, Some(refs), json!({}))), vec![1, 2]);
    let refs =
        json!({"main": {"snapshot-id": 5, "type": "branch", "max-snapshot-age-ms": 35 * DAY}});
    assert_eq!(expired(&table(&snaps, Some(refs), json!({}))), vec![1, 2]);
}

/// Java silently removes a ref whose snapshot is missing; we refuse the
/// table as malformed and let a human look (the same rule as the sweep).
#[test]
fn a_ref_whose_snapshot_is_missing_is_refused() {
    let refs = json!({"main": {"snapshot-id": 2, "type": "branch"}, "ghost": {"snapshot-id": 99, "type": "tag"}});
    let e = run(
        &table(&linear(&[20, 1]), Some(refs), json!({})),
        None,
        "{}",
        &[],
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::Malformed { detail, .. } if detail.contains("ghost")),
        "{e}"
    );
}

#[test]
fn explicit_ids_expire_unless_a_ref_points_at_them() {
    let t = table(&linear(&[3, 2, 1]), None, json!({}));
    assert_eq!(run(&t, None, "{}", &[2]).unwrap().expire, vec![2]);
    let e = run(&t, None, "{}", &[3]).unwrap_err();
    assert!(e.to_string().contains("still referenced"), "{e}");
}

#[test]
fn no_snapshots_and_gc_disabled() {
    let empty = table(&[], None, json!({}));
    let p = run(&empty, None, "{}", &[]).unwrap();
    assert!(p.expire.is_empty() && p.commit.is_null());
    let off = table(&linear(&[20, 1]), None, json!({"gc.enabled": "false"}));
    assert!(matches!(
        run(&off, None, "{}", &[]),
        Err(Error::Unsafe {
            reason: UnsafeReason::GcDisabled,
            ..
        })
    ));
}

#[test]
fn every_context_kind_protects_alone_and_combined() {
    // Ages 30, 20, 10, 1: defaults expire 1, 2, 3.
    let t = table(&linear(&[30, 20, 10, 1]), None, json!({}));
    let exp = |ctx: &str| run(&t, None, ctx, &[]).unwrap().expire;
    assert_eq!(exp("{}"), vec![1, 2, 3]);
    let lease = format!(
        r#"{{"leases":[{{"snapshotId":2,"owner":"ml","purpose":"training","expiresAtMs":{}}}]}}"#,
        NOW + DAY
    );
    assert_eq!(exp(&lease), vec![1, 3]);
    let expired_lease = format!(
        r#"{{"leases":[{{"snapshotId":2,"expiresAtMs":{}}}]}}"#,
        NOW - 1
    );
    assert_eq!(
        exp(&expired_lease),
        vec![1, 2, 3],
        "an expired lease protects nothing"
    );
    assert_eq!(
        exp(r#"{"holds":[{"scope":{"snapshot":1},"generation":7,"reason":"case 7"}]}"#),
        vec![2, 3]
    );
    assert!(exp(r#"{"holds":[{"scope":"table","generation":7}]}"#).is_empty());
    assert_eq!(exp(r#"{"drCheckpoints":[{"snapshotId":3}]}"#), vec![1, 2]);
    let all = format!(
        r#"{{"leases":[{{"snapshotId":2,"expiresAtMs":{}}}],"holds":[{{"scope":{{"snapshot":1}},"generation":7}}],"drCheckpoints":[{{"snapshotId":3}}]}}"#,
        NOW + DAY
    );
    assert!(exp(&all).is_empty());
    // Ours win over explicit ids, and say so.
    let p = run(&t, None, &lease, &[2]).unwrap();
    assert!(!p.expire.contains(&2));
    assert!(p
        .warnings
        .iter()
        .any(|w| w.contains("asked to expire but is kept")));
    // A lease on an unknown snapshot is reported.
    let ghost = format!(
        r#"{{"leases":[{{"snapshotId":77,"owner":"bi","expiresAtMs":{}}}]}}"#,
        NOW + DAY
    );
    assert!(run(&t, None, &ghost, &[])
        .unwrap()
        .warnings
        .iter()
        .any(|w| w.contains("unknown snapshot 77")));
    // A DR checkpoint by metadata file keeps every snapshot it names that
    // still exists; unreadable, it stops expiry; another table's is refused.
    let dr_file = format!("{LOC}/metadata/00002-dr.metadata.json");
    let ctx = format!(r#"{{"drCheckpoints":[{{"metadataFile":"{dr_file}"}}]}}"#);
    let dr_req = |bytes: Vec<u8>| ExpiryRequest {
        metadata_location: format!("{LOC}/metadata/00005-x.metadata.json"),
        now_ms: NOW,
        policy: None,
        context: Context::parse(&ctx).unwrap(),
        expire_ids: vec![],
        dr_metadata: vec![(dr_file.clone(), bytes)],
    };
    let old = table(&linear(&[30, 20]), None, json!({}));
    let p = plan_expiry(&dr_req(old), &t).unwrap();
    assert_eq!(p.expire, vec![3]);
    let mut missing = dr_req(vec![]);
    missing.dr_metadata.clear();
    assert!(matches!(
        plan_expiry(&missing, &t),
        Err(Error::Unsafe {
            reason: UnsafeReason::MissingMetadata,
            ..
        })
    ));
    let foreign = String::from_utf8(table(&linear(&[30]), None, json!({})))
        .unwrap()
        .replace(UUID, "22222222-0000-4000-8000-000000000000");
    assert!(plan_expiry(&dr_req(foreign.into_bytes()), &t).is_err());
    // The sweep keeps the checkpoint file itself.
    assert!(Context::parse(&ctx)
        .unwrap()
        .protects("metadata/00002-dr.metadata.json")
        .is_some());
}

#[test]
fn policy_protections_min_age_protected_refs_and_lease_caps() {
    let snaps = vec![
        (1, None, 40),
        (2, Some(1), 30),
        (3, Some(2), 1),
        (4, Some(1), 35),
    ];
    let refs = json!({"main": {"snapshot-id": 3, "type": "branch"},
                      "audit": {"snapshot-id": 4, "type": "branch", "max-ref-age-ms": DAY}});
    let t = table(&snaps, Some(refs), json!({}));
    // Without protection, `audit` is too old: removed with 4; 1 and 2 expire.
    let p = run(&t, None, "{}", &[]).unwrap();
    assert_eq!(
        (p.remove_refs.clone(), p.expire.clone()),
        (vec!["audit".to_owned()], vec![1, 2, 4])
    );
    let protected = policy(r#""protectedRefs":["audit"]"#, "");
    let p = run(&t, Some(&protected), "{}", &[]).unwrap();
    assert!(p.remove_refs.is_empty());
    assert_eq!(p.expire, vec![1, 2]);
    assert!(p.policy_digest.is_some());
    // Case-only match is an error, not a silent miss.
    let wrong_case = policy(r#""protectedRefs":["Audit"]"#, "");
    let e = run(&t, Some(&wrong_case), "{}", &[]).unwrap_err();
    assert!(e.to_string().contains("letter case"), "{e}");
    // minSnapshotAge: nothing younger than 32 days expires (2 is 30 days old).
    let young = policy(r#""minSnapshotAge":"32d""#, "");
    assert_eq!(run(&t, Some(&young), "{}", &[]).unwrap().expire, vec![1, 4]);
    // A lease beyond maxReaderLease is capped and reported (still protects now).
    let capped = policy("", r#","maxReaderLease":"1d""#);
    let lease = format!(
        r#"{{"leases":[{{"snapshotId":2,"owner":"ml","expiresAtMs":{}}}]}}"#,
        NOW + 30 * DAY
    );
    let p = run(&t, Some(&capped), &lease, &[]).unwrap();
    assert!(!p.expire.contains(&2));
    assert!(p.warnings.iter().any(|w| w.contains("capped")));
    // A hold on a ref keeps the ref and its whole ancestry.
    let p = run(
        &t,
        None,
        r#"{"holds":[{"scope":{"ref":"audit"},"generation":3}]}"#,
        &[],
    )
    .unwrap();
    assert!(p.remove_refs.is_empty());
    assert_eq!(p.expire, vec![2]);
    assert_eq!(p.hold_generation, 3);
}

#[test]
fn a_policy_for_another_table_or_version_is_refused() {
    let t = table(&linear(&[1]), None, json!({}));
    let other = policy("", "").replace(UUID, "11111111-0000-4000-8000-000000000000");
    let e = run(&t, Some(&other), "{}", &[]).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidOptions { field, .. } if field == "policy.binding.tableUuid"),
        "{e}"
    );
    let v3 = policy("", "").replace(
        r#""format":"iceberg""#,
        r#""format":"iceberg","formatVersion":3"#,
    );
    let e = run(&t, Some(&v3), "{}", &[]).unwrap_err();
    assert!(e.to_string().contains("formatVersion"), "{e}");
    let inconsistent = policy("", "").replace("\"6h\"", "\"5d\"");
    let e = run(&t, Some(&inconsistent), "{}", &[]).unwrap_err();
    assert!(e.to_string().contains("maxWriterDuration"), "{e}");
}

#[test]
fn a_stale_hold_list_is_refused() {
    let t = table(&linear(&[20, 1]), None, json!({}));
    let p = policy("", "").replace(
        r#""fileRetention""#,
        r#""legalHoldGeneration":7,"fileRetention""#,
    );
    let e = run(
        &t,
        Some(&p),
        r#"{"holds":[{"scope":{"snapshot":2},"generation":6}]}"#,
        &[],
    )
    .unwrap_err();
    assert!(e.to_string().contains("stale"), "{e}");
    assert!(run(
        &t,
        Some(&p),
        r#"{"holds":[{"scope":{"snapshot":2},"generation":7}]}"#,
        &[]
    )
    .is_ok());
}

/// The reasons a retained snapshot of `p` stays, in order.
fn reasons_of(p: &ExpiryPlan, id: i64) -> Vec<String> {
    p.retain
        .iter()
        .find(|r| r.snapshot_id == id)
        .unwrap_or_else(|| panic!("{id} is not retained: {:?}", p.expire))
        .reasons
        .clone()
}

#[test]
fn a_hold_on_a_missing_ref_is_reported_one_on_a_present_ref_is_not() {
    let t = table(&linear(&[20, 1]), None, json!({}));
    let warned = |ctx: &str, r: &str| {
        run(&t, None, ctx, &[])
            .unwrap()
            .warnings
            .iter()
            .any(|w| w.contains(&format!("legal hold on ref `{r}`, which does not exist")))
    };
    assert!(warned(
        r#"{"holds":[{"scope":{"ref":"gone"},"generation":1}]}"#,
        "gone"
    ));
    assert!(!warned(
        r#"{"holds":[{"scope":{"ref":"main"},"generation":1}]}"#,
        "main"
    ));
}

/// Expired parents are normal: the walk up a branch stops at the first
/// snapshot that is no longer in the table.
#[test]
fn the_ancestry_of_a_branch_stops_at_an_expired_parent() {
    // 2's parent 1 is gone; keep up to 5 per branch: 2 and 3 stay, nothing else.
    let snaps = vec![(2, Some(1), 20), (3, Some(2), 10)];
    let t = table(
        &snaps,
        None,
        json!({"history.expire.min-snapshots-to-keep": "5"}),
    );
    let p = run(&t, None, "{}", &[]).unwrap();
    assert!(p.expire.is_empty(), "{:?}", p.expire);
    assert_eq!(
        p.retain.iter().map(|r| r.snapshot_id).collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert!(reasons_of(&p, 2)[0].contains("ancestor 2 of branch `main`"));
}

#[test]
fn a_branch_head_is_kept_as_the_head_not_as_its_own_ancestor() {
    let refs = json!({"main": {"snapshot-id": 2, "type": "branch", "min-snapshots-to-keep": 2}});
    let p = run(
        &table(&linear(&[20, 10]), Some(refs), json!({})),
        None,
        "{}",
        &[],
    )
    .unwrap();
    assert!(p.expire.is_empty());
    assert_eq!(
        reasons_of(&p, 2),
        vec![
            "head of branch `main`".to_owned(),
            "the current snapshot".to_owned()
        ]
    );
    assert_eq!(
        reasons_of(&p, 1),
        vec!["ancestor 2 of branch `main`, within min-snapshots-to-keep 2".to_owned()]
    );
}

/// Java: a branch's own max-snapshot-age decides for its ancestors; the
/// table default only keeps snapshots no retained ref reaches.
#[test]
fn ancestors_of_a_branch_older_than_its_max_age_expire_though_younger_than_the_default() {
    // Ages 3, 2, 1 days: all younger than the 5-day default, but main's own
    // max-snapshot-age is 36 hours.
    let refs = json!({"main": {"snapshot-id": 3, "type": "branch", "max-snapshot-age-ms": 36 * 3_600_000}});
    let p = run(
        &table(&linear(&[3, 2, 1]), Some(refs), json!({})),
        None,
        "{}",
        &[],
    )
    .unwrap();
    assert_eq!(p.expire, vec![1, 2]);
    assert!(p
        .expired
        .iter()
        .all(|e| e.why.contains("beyond its branch's")));
}

/// Snapshots no retained ref reaches (a tag reaches only its own snapshot)
/// stay while younger than the default age.
#[test]
fn unreferenced_snapshots_stay_while_younger_than_the_default_age() {
    // main: 1 <- 2. Off 1, unreferenced: 3 (2 days), 4 (8 days), and 6 (4 days),
    // the parent of 7, which tag `t` points at.
    let snaps = vec![
        (1, None, 20),
        (2, Some(1), 10),
        (3, Some(1), 2),
        (4, Some(1), 8),
        (6, Some(1), 4),
        (7, Some(6), 3),
    ];
    let refs = json!({"main": {"snapshot-id": 2, "type": "branch"},
                      "t": {"snapshot-id": 7, "type": "tag"}});
    let p = run(&table(&snaps, Some(refs), json!({})), None, "{}", &[]).unwrap();
    assert_eq!(p.expire, vec![1, 4]);
    for id in [3, 6] {
        assert_eq!(
            reasons_of(&p, id),
            vec!["unreferenced, younger than max-snapshot-age 5d 0h".to_owned()]
        );
    }
    let why = |id: i64| {
        p.expired
            .iter()
            .find(|e| e.snapshot_id == id)
            .unwrap()
            .why
            .clone()
    };
    assert!(why(1).contains("beyond its branch's"), "{}", why(1));
    assert!(why(4).contains("no retained ref reaches it"), "{}", why(4));
}

#[test]
fn a_snapshot_exactly_min_snapshot_age_old_may_expire() {
    let t = table(&linear(&[32, 31, 1]), None, json!({}));
    let p = policy(r#""minSnapshotAge":"32d""#, "");
    let p = run(&t, Some(&p), "{}", &[]).unwrap();
    assert_eq!(p.expire, vec![1]);
    assert!(reasons_of(&p, 2)
        .iter()
        .any(|r| r.contains("younger than minSnapshotAge")));
}

#[test]
fn a_lease_ending_exactly_at_max_reader_lease_is_not_capped() {
    let t = table(&linear(&[30, 20, 1]), None, json!({}));
    let capped = policy("", r#","maxReaderLease":"1d""#);
    let lease = |until: i64| {
        format!(r#"{{"leases":[{{"snapshotId":2,"owner":"ml","expiresAtMs":{until}}}]}}"#)
    };
    let p = run(&t, Some(&capped), &lease(NOW + DAY), &[]).unwrap();
    assert_eq!(p.expire, vec![1]);
    assert!(
        !p.warnings.iter().any(|w| w.contains("capped")),
        "{:?}",
        p.warnings
    );
    let p = run(&t, Some(&capped), &lease(NOW + DAY + 1), &[]).unwrap();
    assert_eq!(p.expire, vec![1]);
    assert!(p.warnings.iter().any(|w| w.contains("capped")));
}

#[test]
fn a_lease_ending_exactly_now_protects_nothing() {
    let t = table(&linear(&[30, 20, 1]), None, json!({}));
    let lease = |until: i64| format!(r#"{{"leases":[{{"snapshotId":2,"expiresAtMs":{until}}}]}}"#);
    assert_eq!(run(&t, None, &lease(NOW), &[]).unwrap().expire, vec![1, 2]);
    assert_eq!(run(&t, None, &lease(NOW + 1), &[]).unwrap().expire, vec![1]);
}

#[test]
fn a_dr_checkpoint_on_an_unknown_snapshot_is_reported() {
    let t = table(&linear(&[30, 20, 1]), None, json!({}));
    let p = run(&t, None, r#"{"drCheckpoints":[{"snapshotId":99}]}"#, &[]).unwrap();
    assert_eq!(p.expire, vec![1, 2]);
    assert!(
        p.warnings
            .iter()
            .any(|w| w.contains("DR checkpoint names unknown snapshot 99")),
        "{:?}",
        p.warnings
    );
}

/// After a commit whose answer did not say (a 409 a gateway's retry of a
/// landed commit got, a 5xx, a lost answer), the table read again settles
/// it: the planned document, or one still holding every expired snapshot,
/// is "not landed"; a descendant holding none of them is "landed"; a
/// partial one cannot be told.
#[test]
fn whether_an_expiry_landed_is_read_from_the_table_again() {
    use lakesweep::{expiry_landed, Landing};
    let bytes = table(&linear(&[40, 30, 20, 1]), None, json!({}));
    let plan = run(&bytes, None, "{}", &[]).unwrap();
    assert!(!plan.expire.is_empty(), "{:?}", plan.expire);
    let doc = plan.to_json();
    let original = format!("{LOC}/metadata/00005-x.metadata.json");
    let next = format!("{LOC}/metadata/00006-y.metadata.json");
    // Read back the planned document: not landed.
    let (l, why) = expiry_landed(&doc, &original, &bytes).unwrap();
    assert_eq!(l, Landing::NotLanded, "{why}");
    // The document the commit wrote: landed.
    let new_md = serde_json::to_vec(&plan.new_metadata).unwrap();
    let (l, why) = expiry_landed(&doc, &next, &new_md).unwrap();
    assert_eq!(l, Landing::Landed, "{why}");
    // Another commit instead, still holding everything: not landed.
    let mut other: Value = serde_json::from_slice(&bytes).unwrap();
    other["metadata-log"] = json!([{"metadata-file": original, "timestamp-ms": NOW}]);
    let (l, _) = expiry_landed(&doc, &next, &serde_json::to_vec(&other).unwrap()).unwrap();
    assert_eq!(l, Landing::NotLanded);
    // Some expired snapshots gone, some not: unknown.
    let mut partial = other.clone();
    let first = plan.expire[0];
    partial["snapshots"]
        .as_array_mut()
        .unwrap()
        .retain(|s| s["snapshot-id"] != first);
    if plan.expire.len() > 1 {
        let (l, _) = expiry_landed(&doc, &next, &serde_json::to_vec(&partial).unwrap()).unwrap();
        assert_eq!(l, Landing::Unknown);
    }
    // None left, but not a descendant of the planned document: unknown.
    let mut orphan: Value = serde_json::from_slice(&new_md).unwrap();
    orphan["metadata-log"] = json!([]);
    let (l, _) = expiry_landed(&doc, &next, &serde_json::to_vec(&orphan).unwrap()).unwrap();
    assert_eq!(l, Landing::Unknown);
}
