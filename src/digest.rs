//! Digests as the documents write them: lowercase hex; and the sealed text
//! of a metadata file's digest (a manifest's, a Delta checkpoint's): a
//! header line, the body, and a last line `sha256 <hex of every byte
//! before it>`, so a digest damaged or cut on its way is refused.

use sha2::{Digest, Sha256};

/// Lowercase hex of `b` (a SHA-256 digest in every document).
pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Appends the checksum line of everything in `text` so far.
pub(crate) fn seal(text: &mut String) {
    let sum = hex(&Sha256::digest(text.as_bytes()));
    text.push_str("sha256 ");
    text.push_str(&sum);
    text.push('\n');
}

/// The lines after `header` of a text [`seal`]ed whole; `Err` says what is
/// wrong (for the caller to name the digest it expected).
pub(crate) fn open_sealed<'a>(text: &'a str, header: &str) -> Result<&'a str, String> {
    if !text.starts_with(header) {
        return Err(format!("it does not start with `{}`", header.trim_end()));
    }
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or("it has no checksum line")?;
    let (body, sum_line) = text.split_at(body_end);
    let sum = sum_line
        .strip_prefix("sha256 ")
        .and_then(|s| s.strip_suffix('\n'))
        .ok_or("its last line is not `sha256 <hex>`")?;
    if body.len() < header.len() || hex(&Sha256::digest(body.as_bytes())) != sum {
        return Err("its checksum does not match (damaged or cut on its way)".into());
    }
    Ok(&body[header.len()..])
}

/// `s` as a JSON string (one line: newlines and quotes escaped).
pub(crate) fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// The string a JSON string spells; `None` when `s` is not one.
pub(crate) fn parse_json_string(s: &str) -> Option<String> {
    serde_json::from_str::<String>(s).ok()
}
