//! The identity of one stored object version.

use serde::{Deserialize, Serialize};

/// One exact version of an object: what a listing, a HEAD, a plan, a
/// ledger, a receipt and a bundle record of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectVersion {
    /// Size in bytes.
    pub size: u64,
    /// Last-modified time, milliseconds since the epoch.
    #[serde(alias = "last_modified_ms")]
    pub last_modified_ms: i64,
    /// Entity tag, where the store gives one.
    pub etag: Option<String>,
    /// Version id, in versioned buckets.
    #[serde(alias = "version_id")]
    pub version_id: Option<String>,
}

impl ObjectVersion {
    /// Whether `seen` (a HEAD answer) is this version. Stores answer HEAD
    /// with whole-second dates: with an ETag or version id the second is
    /// enough; without either, times must match to the millisecond.
    pub fn matches(&self, seen: &ObjectVersion) -> bool {
        let pinned_by_tag = self.etag.is_some() || self.version_id.is_some();
        let time = if pinned_by_tag {
            self.last_modified_ms.div_euclid(1000) == seen.last_modified_ms.div_euclid(1000)
        } else {
            self.last_modified_ms == seen.last_modified_ms
        };
        self.size == seen.size
            && time
            && (self.etag.is_none() || etag_core(&self.etag) == etag_core(&seen.etag))
            && (self.version_id.is_none() || self.version_id == seen.version_id)
    }
}

/// An ETag without the quotes some stores put around it and others leave
/// off (`"x"` and `x` name the same tag); a weak `W/` stays, it is another
/// tag.
fn etag_core(e: &Option<String>) -> Option<&str> {
    e.as_deref().map(|t| {
        t.strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(t)
    })
}
