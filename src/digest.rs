//! Digests as the documents write them: lowercase hex; and the sealed text
//! of a metadata file's digest (a manifest's, a Delta checkpoint's): a
//! header line, the body, and a last line `xxh3-128 <hex of the XXH3-128
//! of every byte before it>`, so a digest damaged or cut on its way is
//! refused.
//!
//! Why XXH3-128 and not SHA-256 for the seal: the seal has no secret, so
//! no checksum could stop whoever rewrites a digest on purpose from sealing
//! it again; what it catches is damage (a cut, a changed byte, a cache file
//! written halfway), and a 128-bit hash passes a damaged text by chance
//! with odds of 2^-128, as SHA-256 would. A digest spells every path of its
//! manifest (a gigabyte of text for ten million files), and it is sealed
//! where it is made and checked again where it is read: in the component,
//! without SHA instructions, SHA-256 of that text cost about a tenth of a
//! 10-million-file plan; XXH3 reads it at memory speed.

/// Lowercase hex of `b`: two characters a byte (a SHA-256 digest in every
/// document; a keep set for hosts that move text faster than bytes).
pub(crate) fn hex(b: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(b.len() * 2);
    for x in b {
        out.push(DIGITS[usize::from(x >> 4)]);
        out.push(DIGITS[usize::from(x & 0xf)]);
    }
    // Every byte pushed is an ASCII digit.
    String::from_utf8(out).unwrap_or_default()
}

/// The bytes of lowercase hex text (as [`hex`] writes it); `Err(i)`: the
/// character at byte offset `i` is not a lowercase hex digit, or (`i` the
/// length) the text has an odd length.
pub(crate) fn unhex(text: &str) -> std::result::Result<Vec<u8>, usize> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let t = text.as_bytes();
    if t.len() % 2 != 0 {
        return Err(t.len());
    }
    let mut out = Vec::with_capacity(t.len() / 2);
    for (i, pair) in t.chunks_exact(2).enumerate() {
        let hi = digit(pair[0]).ok_or(2 * i)?;
        let lo = digit(pair[1]).ok_or(2 * i + 1)?;
        out.push(hi << 4 | lo);
    }
    Ok(out)
}

/// SHA-256 of whatever is written into it ([`std::io::Write`]), so a large
/// document is hashed as it is serialised, never held whole for it.
#[derive(Default)]
pub(crate) struct HashWriter(sha2::Sha256);

impl HashWriter {
    /// The digest of everything written, lowercase hex.
    pub(crate) fn hex(self) -> String {
        use sha2::Digest;
        hex(&self.0.finalize())
    }
}

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The first word of a seal's line.
const SEAL: &str = "xxh3-128 ";

/// The seal of `body`: its XXH3-128, 32 lowercase hex digits.
fn checksum(body: &str) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(body.as_bytes()))
}

/// Appends the checksum line of everything in `text` so far.
pub(crate) fn seal(text: &mut String) {
    let sum = checksum(text);
    text.push_str(SEAL);
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
        .strip_prefix(SEAL)
        .and_then(|s| s.strip_suffix('\n'))
        .ok_or("its last line is not `xxh3-128 <hex>`")?;
    if body.len() < header.len() || checksum(body) != sum {
        return Err("its checksum does not match (damaged or cut on its way)".into());
    }
    Ok(&body[header.len()..])
}

/// The head of an opened digest: the URI it was made from, the source's
/// length in bytes, the count of items it says it holds, and its item lines.
pub(crate) struct Opened<'a> {
    pub(crate) uri: String,
    pub(crate) source_len: u64,
    pub(crate) count: u64,
    pub(crate) lines: std::str::Lines<'a>,
}

/// Opens a [`seal`]ed digest whose lines after `header` are `uri <JSON
/// string>`, `length <n>` and `<count_name> <n>`; `Err` says what is wrong.
pub(crate) fn open_digest<'a>(
    text: &'a str,
    header: &str,
    count_name: &str,
) -> Result<Opened<'a>, String> {
    let mut lines = open_sealed(text, header)?.lines();
    let mut field = |name: &str| -> Result<&'a str, String> {
        lines
            .next()
            .and_then(|l| l.strip_prefix(name))
            .and_then(|l| l.strip_prefix(' '))
            .ok_or_else(|| format!("no `{name}` line"))
    };
    let uri = field("uri")?;
    let uri = parse_json_string(uri).ok_or_else(|| format!("`{uri}` is not a JSON string"))?;
    let source_len = field("length")?
        .parse::<u64>()
        .map_err(|_| "its length is not a number".to_owned())?;
    let count = field(count_name)?
        .parse::<u64>()
        .map_err(|_| format!("its {count_name} count is not a number"))?;
    Ok(Opened {
        uri,
        source_len,
        count,
        lines,
    })
}

/// `s` as a JSON string (one line: newlines and quotes escaped).
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

/// Appends `s` as a JSON string: quoted, and as serde_json spells it. A
/// string without a quote, backslash or control character needs no escape
/// (most paths): it is copied between quotes, without the serializer.
pub(crate) fn push_json_string(out: &mut String, s: &str) {
    if s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.push_str(&serde_json::to_string(s).expect("a string serializes"));
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

/// The string a JSON string spells; `None` when `s` is not one. Without a
/// backslash between its quotes (no escape: no quote, backslash or control
/// character inside) a JSON string spells exactly the text between them.
pub(crate) fn parse_json_string(s: &str) -> Option<String> {
    let inner = s.strip_prefix('"').and_then(|t| t.strip_suffix('"'));
    match inner {
        Some(t) if !t.bytes().any(|b| b == b'\\' || b == b'"' || b < 0x20) => Some(t.to_owned()),
        _ => serde_json::from_str::<String>(s).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Hex text reads back to its bytes, and any other text is refused
        /// at its first character that is not a lowercase digit.
        #[test]
        fn hex_reads_back_and_anything_else_is_refused(b in proptest::collection::vec(any::<u8>(), 0..64), t in "[0-9a-fA-Fx ]{0,9}") {
            let h = hex(&b);
            prop_assert_eq!(&h, &b.iter().map(|x| format!("{x:02x}")).collect::<String>());
            prop_assert_eq!(unhex(&h), Ok(b));
            let bad = t.bytes().position(|c| !matches!(c, b'0'..=b'9' | b'a'..=b'f'));
            match (bad, t.len() % 2) {
                (_, 1) => prop_assert_eq!(unhex(&t), Err(t.len())),
                (Some(i), _) => prop_assert_eq!(unhex(&t), Err(i)),
                (None, _) => prop_assert!(unhex(&t).is_ok()),
            }
        }

        /// The shortcut reads every string as serde_json does, and refuses
        /// what it refuses.
        #[test]
        fn a_json_string_reads_as_serde_json_reads_it(s in any::<String>(), raw in "\\PC{0,12}") {
            prop_assert_eq!(json_string(&s), serde_json::to_string(&s).unwrap());
            prop_assert_eq!(parse_json_string(&json_string(&s)), Some(s));
            for t in [raw.clone(), format!("\"{raw}\""), format!("\"{raw}")] {
                prop_assert_eq!(parse_json_string(&t), serde_json::from_str::<String>(&t).ok(), "{}", t);
            }
        }
    }

    #[test]
    fn strings_to_escape_are_written_as_serde_json_writes_them() {
        // `any::<String>()` draws no control characters: these are fixed.
        for s in [
            "\0", "\x1f", "a\tb", "\n", "\x7f", "\u{85}", "\u{2028}", "a\"b", "a\\b", "",
        ] {
            assert_eq!(json_string(s), serde_json::to_string(s).unwrap(), "{s:?}");
            assert_eq!(parse_json_string(&json_string(s)).as_deref(), Some(s));
        }
    }

    #[test]
    fn escapes_and_controls_go_the_long_way() {
        assert_eq!(parse_json_string("\"a\\nb\"").as_deref(), Some("a\nb"));
        assert_eq!(parse_json_string("\"a\tb\""), None);
        assert_eq!(parse_json_string("\"a\"b\""), None);
        assert_eq!(parse_json_string("\"\"").as_deref(), Some(""));
        assert_eq!(parse_json_string("\""), None);
    }
}
