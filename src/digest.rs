//! Digests as the documents write them: lowercase hex.

/// Lowercase hex of `b` (a SHA-256 digest in every document).
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
