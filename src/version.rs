//! The identity of one stored object version.

use serde::{Deserialize, Serialize};

/// One exact version of an object: what a listing, a HEAD, a plan, a
/// ledger, a receipt and a bundle record of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectVersion {
    /// Size in bytes.
    pub size: u64,
    /// Last-modified time, milliseconds since the epoch.
    pub last_modified_ms: i64,
    /// Entity tag, where the store gives one.
    pub etag: Option<String>,
    /// Version id, in versioned buckets.
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

#[cfg(test)]
mod tests {
    use super::*;

    const T: i64 = 1_800_000_000_000;

    /// A HEAD answer of 100 bytes.
    fn seen(ms: i64, etag: Option<&str>, version_id: Option<&str>) -> ObjectVersion {
        ObjectVersion {
            size: 100,
            last_modified_ms: ms,
            etag: etag.map(str::to_owned),
            version_id: version_id.map(str::to_owned),
        }
    }

    /// The check before every delete: another ETag in the same second is a
    /// rewrite; without an ETag in the answer nothing proves the content.
    #[test]
    fn another_etag_in_the_same_second_is_not_the_pinned_version() {
        let pinned = seen(T + 123, Some("\"a\""), None);
        // HEAD dates are whole seconds: with an ETag the second is enough.
        assert!(pinned.matches(&seen(T, Some("\"a\""), None)));
        assert!(pinned.matches(&seen(T + 999, Some("\"a\""), None)));
        assert!(!pinned.matches(&seen(T + 123, Some("\"b\""), None)));
        assert!(!pinned.matches(&seen(T, Some("\"b\""), None)));
        assert!(!pinned.matches(&seen(T + 123, None, None)));
        let mut bigger = seen(T + 123, Some("\"a\""), None);
        bigger.size += 1;
        assert!(!pinned.matches(&bigger));
        assert!(!pinned.matches(&seen(T + 1000, Some("\"a\""), None)));
    }

    /// The same bytes uploaded again: same ETag, a new version id.
    #[test]
    fn the_same_etag_with_another_version_id_is_not_the_pinned_version() {
        let pinned = seen(T, Some("\"a\""), Some("v1"));
        assert!(pinned.matches(&seen(T + 500, Some("\"a\""), Some("v1"))));
        assert!(!pinned.matches(&seen(T, Some("\"a\""), Some("v2"))));
        assert!(!pinned.matches(&seen(T, Some("\"a\""), None)));
    }

    /// Without a tag (local files) only the exact millisecond and size say
    /// it is the same version.
    #[test]
    fn a_version_pinned_without_tags_needs_the_exact_millisecond() {
        let pinned = seen(T + 123, None, None);
        assert!(pinned.matches(&seen(T + 123, None, None)));
        assert!(!pinned.matches(&seen(T + 124, None, None)));
        assert!(!pinned.matches(&seen(T, None, None)));
        let mut smaller = seen(T + 123, None, None);
        smaller.size -= 1;
        assert!(!pinned.matches(&smaller));
    }
}
