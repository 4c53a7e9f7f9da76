//! Whether an expiry's commit landed, judged from the table as read again
//! after an answer that did not say so (a 409 after a gateway retried a
//! commit that had landed, a 5xx, a lost answer): never from the answer
//! alone.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::spec::iceberg::TableMetadata;

/// What the table, read again, says of an expiry's commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Landing {
    /// The table descends from the planned document and holds none of the
    /// expired snapshots: the expiry took effect.
    Landed,
    /// The table holds every expired snapshot: the expiry did not take
    /// effect (yet).
    NotLanded,
    /// Neither can be told (some expired snapshots gone, or the table no
    /// longer descends from the planned document).
    Unknown,
}

/// Judges the expiry `plan` (its stored document) against the table's
/// current metadata (`live_uri`, `live`), read after its commit: with why.
/// Fails on a plan or document that does not parse.
pub fn expiry_landed(plan: &str, live_uri: &str, live: &[u8]) -> Result<(Landing, String)> {
    /// What of the stored expiry plan this needs.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Planned {
        table_uuid: Option<String>,
        metadata_location: String,
        expire: Vec<i64>,
    }
    let plan: Planned = serde_json::from_str(plan)
        .map_err(|e| Error::invalid("expiry", format!("not an expiry plan: {e}")))?;
    let md = TableMetadata::parse(live_uri, live)?;
    if plan.expire.is_empty() {
        return Ok((
            Landing::Unknown,
            "the plan expires no snapshot: nothing in the table can show its commit".into(),
        ));
    }
    if md.table_uuid != plan.table_uuid {
        return Ok((
            Landing::Unknown,
            format!(
                "the table is now {} (the plan's was {}): replaced",
                md.table_uuid.as_deref().unwrap_or("(no uuid)"),
                plan.table_uuid.as_deref().unwrap_or("(no uuid)")
            ),
        ));
    }
    let present: Vec<i64> = plan
        .expire
        .iter()
        .copied()
        .filter(|id| md.snapshots.iter().any(|s| s.snapshot_id == *id))
        .collect();
    let same = live_uri == plan.metadata_location;
    let descends = md.metadata_log.contains(&plan.metadata_location);
    Ok(if present.len() == plan.expire.len() {
        (
            Landing::NotLanded,
            format!(
                "the table{} still holds all {} snapshots the expiry removes",
                if same {
                    " still names the planned document and"
                } else {
                    ""
                },
                plan.expire.len()
            ),
        )
    } else if present.is_empty() && descends {
        (
            Landing::Landed,
            format!(
                "the table's metadata `{live_uri}` descends from the planned document and holds none of the {} expired snapshots",
                plan.expire.len()
            ),
        )
    } else if present.is_empty() {
        (
            Landing::Unknown,
            "none of the expired snapshots is left, but the table's metadata-log does not name the planned document".into(),
        )
    } else {
        (
            Landing::Unknown,
            format!(
                "{} of the {} expired snapshots are still there: another commit changed the table",
                present.len(),
                plan.expire.len()
            ),
        )
    })
}
