//! Apache Iceberg: table metadata JSON (format versions 1, 2, 3), manifest
//! lists and manifests, read only as far as a sweeper needs, one noun per
//! file:
//!
//! ```text
//! metadata         the table metadata document (TableMetadata, Lineage)
//! snapshot         snapshots, refs and the totals a snapshot's summary records
//! manifest_list    a snapshot's manifest list (ManifestFile)
//! manifest_entry   a manifest's entries (status, content, file path)
//! ```
//!
//! Paths are returned exactly as written (never percent-decoded); mapping and
//! canonicalisation happen in [`crate::path`].

mod manifest_entry;
mod manifest_list;
mod metadata;
mod snapshot;

pub use manifest_entry::{
    for_each_manifest_entry, for_each_manifest_entry_with_snapshot, ContentType, ManifestStatus,
};
pub use manifest_list::{read_manifest_list, ManifestContent, ManifestFile};
pub(crate) use metadata::maybe_gunzip;
pub use metadata::{Lineage, TableMetadata, MAX_METADATA_BYTES, WRITE_ROOT_PROPERTIES};
pub use snapshot::{RefKind, Snapshot, SnapshotRef, SummaryTotals};

use crate::codec::avro::AvroError;
use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// An Avro container's error as the core's, naming `uri`.
pub(crate) fn avro_err(uri: &str, e: AvroError) -> Error {
    match e {
        AvroError::Corrupt(d) => Error::malformed(MalformedReason::Encoding, uri, d),
        AvroError::Unsupported(f) => Error::unsupported(f, uri),
    }
}

/// `b` as text, or a malformed-encoding error naming `field`. Every
/// manifest entry's path passes here: simdutf8 checks it in vector-wide
/// chunks (SSE/AVX natively, simd128 in the component) and accepts exactly
/// what `std::str::from_utf8` accepts (tested on every length class).
fn utf8<'a>(uri: &str, field: &str, b: &'a [u8]) -> Result<&'a str> {
    simdutf8::basic::from_utf8(b).map_err(|_| {
        Error::malformed(
            MalformedReason::Encoding,
            uri,
            format!("{field} is not UTF-8"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn paths_are_text_exactly_when_std_says_so(
            text in "[a-z/é€𝄞]{0,150}",
            cut in proptest::collection::vec((0usize..600, proptest::num::u8::ANY), 0..3),
        ) {
            // Valid text, then maybe a few bytes written over it.
            let mut b = text.into_bytes();
            for (at, byte) in cut {
                if !b.is_empty() {
                    let at = at % b.len();
                    b[at] = byte;
                }
            }
            proptest::prop_assert_eq!(
                utf8("m", "p", &b).ok(),
                std::str::from_utf8(&b).ok()
            );
        }
    }
}
