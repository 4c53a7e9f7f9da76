//! Ledgers an earlier lakesweep wrote whole: `lakesweep.ledger.v3` (one
//! JSON document holding every object, approval, receipt and move ever)
//! and `lakesweep.ledger.v2` (the same with snake_case keys). Each is read
//! as it was sealed (v3: its digest over its canonical JSON; v2: over its
//! stored bytes), then carried on as the current schema: its objects in
//! flight, its verified objects folded into an archive (with their last
//! receipt) at the next save, its history dropped (the head keeps the
//! counters the gates read).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::objects::Entry;
use super::{
    Approval, Audit, Damage, DeleteResult, Drill, Ledger, LedgerObject, Move, ObjectState, Receipt,
};
use crate::error::{Error, Result};

/// Schema name of the whole-document ledgers lakesweep 0.2 wrote.
pub(super) const LEDGER_V3: &str = "lakesweep.ledger.v3";

/// Schema name of the snake_case ledgers lakesweep 0.1 wrote.
pub(super) const LEDGER_V2: &str = "lakesweep.ledger.v2";

/// An approval as v3 stored it: with its keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApprovalV3 {
    revision: u64,
    #[serde(alias = "at_ms")]
    at_ms: i64,
    granted: bool,
    differences: Vec<String>,
    #[serde(alias = "plan_digest")]
    plan_digest: String,
    #[serde(alias = "metadata_location")]
    metadata_location: String,
    #[serde(alias = "hold_generation")]
    hold_generation: u64,
    #[serde(alias = "lease_watermark")]
    lease_watermark: u64,
    #[serde(alias = "live_hold_generation")]
    live_hold_generation: u64,
    #[serde(alias = "live_lease_watermark")]
    live_lease_watermark: u64,
    #[serde(alias = "quarantine_root")]
    quarantine_root: String,
    keys: Vec<String>,
}

/// A v3 ledger, field for field as v3 serialised it (its digest is
/// computed over this serialisation).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LedgerV3 {
    schema: String,
    #[serde(alias = "table_location")]
    table_location: String,
    #[serde(alias = "table_uuid")]
    table_uuid: Option<String>,
    revision: u64,
    #[serde(alias = "quarantine_ms")]
    quarantine_ms: i64,
    objects: BTreeMap<String, LedgerObject>,
    approvals: Vec<ApprovalV3>,
    receipts: Vec<Receipt>,
    history: Vec<Move>,
    #[serde(default)]
    #[serde(alias = "unknown_ever")]
    unknown_ever: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    drills: Vec<Drill>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_step_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    damage: Vec<Damage>,
    #[serde(default)]
    #[serde(alias = "previous_integrity")]
    previous_integrity: Option<String>,
    #[serde(default)]
    integrity: String,
}

impl LedgerV3 {
    fn compute_integrity(&self) -> String {
        let mut body = self.clone();
        body.integrity = String::new();
        let mut h = crate::digest::HashWriter::default();
        use std::io::Write;
        let _ = h.write_all(self.previous_integrity.as_deref().unwrap_or("").as_bytes());
        let _ = h.write_all(b"\n");
        let _ = serde_json::to_writer(&mut h, &body);
        h.hex()
    }
}

/// Reads a whole v3 (or, `v2`, snake_case v2) ledger: checked against its
/// digest, then converted.
pub(super) fn read(text: &str, v2: bool) -> Result<Ledger> {
    let old: LedgerV3 = serde_json::from_str(text)
        .map_err(|e| Error::invalid("ledger", format!("damaged: {e}")))?;
    let expected = if v2 {
        // Sealed over its snake_case bytes: checked over them.
        integrity_v2(text, old.previous_integrity.as_deref())
    } else {
        Some(old.compute_integrity())
    };
    if expected.as_deref() != Some(old.integrity.as_str()) {
        return Err(Error::invalid(
            "ledger",
            "edited or damaged: its integrity digest does not match its content (a ledger is only ever written by lakesweep; restore the saved one, or start a new ledger with --new-ledger)",
        ));
    }
    let mut l = Ledger::empty(old.table_location, old.table_uuid, old.quarantine_ms);
    l.revision = old.revision;
    l.last_step_ms = old.last_step_ms;
    l.drills = old.drills;
    l.damage = old.damage;
    let approved: BTreeSet<&str> = old
        .approvals
        .iter()
        .filter(|a| a.granted)
        .flat_map(|a| a.keys.iter().map(String::as_str))
        .collect();
    // Each object's last receipt (kept with it until it is archived); a
    // receipt of a key no approval listed stays for the audit.
    let mut last: BTreeMap<&str, &Receipt> = BTreeMap::new();
    let mut outside = Vec::new();
    let mut deleted_outside = 0u64;
    for r in &old.receipts {
        if !approved.contains(r.key.as_str()) {
            deleted_outside += u64::from(r.result == DeleteResult::Deleted);
            outside.push(r.clone());
        } else if r.result != DeleteResult::Damaged {
            last.insert(r.key.as_str(), r);
        }
    }
    let unknown: BTreeSet<&str> = old.unknown_ever.iter().map(String::as_str).collect();
    l.audit = Audit {
        deleted_outside_approval: deleted_outside,
        unknown_ever: unknown.len() as u64,
    };
    l.outside_receipts = outside;
    l.approvals = old
        .approvals
        .iter()
        .map(|a| Approval {
            revision: a.revision,
            at_ms: a.at_ms,
            granted: a.granted,
            differences: a.differences.clone(),
            plan_digest: a.plan_digest.clone(),
            metadata_location: a.metadata_location.clone(),
            hold_generation: a.hold_generation,
            lease_watermark: a.lease_watermark,
            live_hold_generation: a.live_hold_generation,
            live_lease_watermark: a.live_lease_watermark,
            quarantine_root: a.quarantine_root.clone(),
            approved: a.keys.len() as u64,
        })
        .collect();
    let mut items = Vec::with_capacity(old.objects.len());
    for (key, o) in &old.objects {
        let keeps_receipt = matches!(
            o.state,
            ObjectState::Deleted | ObjectState::DeleteUnknown | ObjectState::Verified
        );
        items.push((
            key.clone(),
            Entry {
                state: o.state,
                version: o.version.clone(),
                since_ms: o.since_ms,
                since_revision: o.since_revision,
                why: l.whys.intern(&o.why),
                unknown_once: unknown.contains(key.as_str()),
                probe: None,
                approved_in: if o.state == ObjectState::DeleteApproved {
                    o.since_revision
                } else {
                    0
                },
                receipt: last
                    .get(key.as_str())
                    .filter(|_| keeps_receipt)
                    .map(|r| Box::new((*r).clone())),
            },
        ));
    }
    l.objects.merge(items);
    // The next save chains to this one.
    l.previous_integrity = Some(old.integrity);
    Ok(l)
}

/// `text` without the whitespace between tokens (strings untouched): the
/// compact form serde writes, from the pretty form it stored.
fn compact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if !matches!(c, ' ' | '\n' | '\r' | '\t') {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

/// The integrity digest a v2 ledger stored as `text` should carry: SHA-256
/// over its previous digest, a newline and its compact JSON with the
/// top-level `integrity` value emptied (how v2 sealed). `None` when the
/// text does not end in the `integrity` field as v2 wrote it.
pub(super) fn integrity_v2(text: &str, previous: Option<&str>) -> Option<String> {
    let c = compact(text);
    // v2 wrote `integrity` last: `...,"integrity":"<hex>"}`.
    let body = c.strip_suffix("\"}")?;
    let at = body.rfind(",\"integrity\":\"")?;
    let value = &body[at + ",\"integrity\":\"".len()..];
    if !value.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let unsealed = format!("{},\"integrity\":\"\"}}", &body[..at]);
    let mut h = Sha256::new();
    h.update(previous.unwrap_or("").as_bytes());
    h.update(b"\n");
    h.update(unsealed.as_bytes());
    Some(crate::digest::hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_keeps_strings_and_drops_layout() {
        assert_eq!(
            compact("{\n  \"a b\": [1, 2],\n  \"c\": \"x\\\" y\"\n}"),
            "{\"a b\":[1,2],\"c\":\"x\\\" y\"}"
        );
    }

    #[test]
    fn integrity_needs_the_field_last_and_hex() {
        assert!(integrity_v2("{\"integrity\":\"ab\",\"x\":1}", None).is_none());
        assert!(integrity_v2("{\"x\":1,\"integrity\":\"zz\"}", None).is_none());
        let a = integrity_v2("{\"x\":1,\"integrity\":\"ab\"}", None).unwrap();
        let b = integrity_v2("{\"x\": 1, \"integrity\": \"cd\"}", None).unwrap();
        assert_eq!(a, b, "the stored digest and the layout are not hashed");
        assert_ne!(
            a,
            integrity_v2("{\"x\":2,\"integrity\":\"ab\"}", None).unwrap()
        );
        assert_ne!(
            a,
            integrity_v2("{\"x\":1,\"integrity\":\"ab\"}", Some("p")).unwrap()
        );
    }
}
