//! Ledgers an earlier lakesweep wrote (`lakesweep.ledger.v2`, snake_case
//! keys). Their objects are read through field aliases; their integrity
//! digest is checked over the stored bytes themselves, so a v2 ledger is
//! verified exactly as it was sealed, then carried on as the current schema.

use sha2::{Digest, Sha256};

/// Schema name of the snake_case ledgers lakesweep 0.1 wrote.
pub(super) const LEDGER_V2: &str = "lakesweep.ledger.v2";

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
