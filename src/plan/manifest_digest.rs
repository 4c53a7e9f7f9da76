//! A manifest's digest: what a session needs of one Iceberg manifest (each
//! entry's status, content, snapshot id and file path), made where the
//! manifest was read, so that a host with many workers can decode
//! manifests in parallel and hand one session the small digests instead of
//! the manifests' bytes (column statistics make manifests many times larger
//! than their paths).
//!
//! The digest carries no decision: the session that asked for the manifest
//! checks its length against the manifest list, counts its entries against
//! the snapshot summaries and keeps its files exactly as it does for the
//! bytes ([`super::iceberg::read_manifest_digest`]), so a plan made from
//! digests is byte for byte the plan made from the manifests.
//!
//! Wire form: UTF-8 text, one item per line (text, because some hosts'
//! bindings copy a string in one piece but a byte list value by value):
//!
//! ```text
//! lakesweep-manifest-digest 2
//! uri "s3://b/t/metadata/m0.avro"          the URI read (a JSON string)
//! length 7021                              the manifest's bytes
//! entries 2
//! 1 0 7 "s3://b/t/data/a.parquet"          status, content (the spec's
//! 2 1 - "s3://b/t/data/d.puffin"           numbers), snapshot id or -, path
//! xxh3-128 <hex of the XXH3-128 of every byte before this line>
//! ```
//!
//! A digest damaged on its way (a changed byte would change a kept path)
//! fails its checksum and is refused.
//!
//! A *resolved* digest ([`digest_manifest_resolved`], version 3) goes one
//! step further where the manifest was read, so the session's work per
//! file is a merge instead of a resolution: given the session's
//! resolution ([`crate::Session::manifest_resolution`]: its table
//! location, offered only when no location mapping is set and the
//! location is its own only spelling), each path spelled as the location's
//! prefix plus a plain key ([`crate::path::is_plain_key`]: the only object
//! it can name) is written as the XXH3-64 fingerprint of that key, which
//! is what the session would compute from the path. Every other path stays
//! text and is resolved by the session. The resolution is written after the
//! count, and the session refuses a digest resolved against anything but
//! its own:
//!
//! ```text
//! lakesweep-manifest-digest 3
//! uri "s3://b/t/metadata/m0.avro"
//! length 7021
//! entries 2
//! resolved "plain-keys-xxh3-64/1 s3://b/t" the resolution used
//! 1 0 7 #5f0c2a9b1d3e4f60                  a plain key, by fingerprint
//! 2 1 - "s3://b/t/data/../d.puffin"        any other path, as text
//! xxh3-128 <hex>
//! ```

use crate::digest::{json_string, open_digest, push_json_string, seal};
use crate::duration::push_int;
use crate::error::{Error, ProtocolReason, Result};
use crate::path::TableLocation;
use crate::spec::iceberg::{for_each_manifest_entry_with_snapshot, ContentType, ManifestStatus};

const HEADER: &str = "lakesweep-manifest-digest 2\n";

/// The header of a resolved digest.
const HEADER_RESOLVED: &str = "lakesweep-manifest-digest 3\n";

/// The rules a resolution names before its location: which paths are plain
/// keys ([`crate::path::is_plain_key`] of the text after the location's
/// prefix) and how a key is fingerprinted (XXH3-64). A build that changes
/// either changes this, so a session never takes keys resolved by rules
/// other than its own.
pub(crate) const RESOLUTION_RULES: &str = "plain-keys-xxh3-64/1";

/// The resolution a session with table location `location` gives.
pub(crate) fn resolution_of(location: &TableLocation) -> String {
    format!("{RESOLUTION_RULES} {}", location.as_uri())
}

/// A manifest entry's file path: as written, or (resolved where the
/// manifest was read, see the module) the fingerprint of
/// the plain key it names under the table's location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ManifestPath {
    /// The path exactly as written.
    Text(String),
    /// [`crate::reach::fingerprint`] of the plain key (relative to the
    /// location) the path names, and nothing else.
    Key(crate::reach::Fingerprint),
}

/// One manifest entry as the session counts and keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DigestEntry {
    pub(crate) status: ManifestStatus,
    pub(crate) content: ContentType,
    /// The entry's own snapshot id (none: inherited from the manifest list).
    pub(crate) snapshot_id: Option<i64>,
    /// The file path as written, or the fingerprint of the plain key it
    /// names (a resolved digest).
    pub(crate) path: ManifestPath,
}

/// A decoded digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ManifestDigest {
    /// The URI the manifest was read from, as the session asked for it.
    pub(crate) uri: String,
    /// The manifest's length in bytes (checked against its manifest list).
    pub(crate) source_len: u64,
    /// The resolution a resolved digest was made with (see the module).
    pub(crate) resolved: Option<String>,
    pub(crate) entries: Vec<DigestEntry>,
}

/// Digests the manifest `bytes` read from `uri` (the URI exactly as the
/// session's read request named it). Fails (malformed) for bytes that are
/// not a readable manifest, exactly as the session would on the bytes.
pub fn digest_manifest(uri: &str, bytes: &[u8]) -> Result<String> {
    write_digest(uri, bytes, None)
}

/// [`digest_manifest`], resolved (see the module): each path spelled as
/// `resolution`'s prefix plus a plain key is written as that key's
/// fingerprint. `resolution` is what the session's
/// [`crate::Session::manifest_resolution`] gave; fails (invalid) for text
/// that is not a table location spelled canonically and plainly, and
/// (malformed) for bytes that are not a readable manifest.
pub fn digest_manifest_resolved(resolution: &str, uri: &str, bytes: &[u8]) -> Result<String> {
    let location = resolution
        .strip_prefix(RESOLUTION_RULES)
        .and_then(|l| l.strip_prefix(' '))
        .and_then(|l| TableLocation::parse(l).ok().filter(|p| p.as_uri() == l))
        .filter(TableLocation::has_plain_path)
        .ok_or_else(|| {
            Error::invalid(
                "resolution",
                format!("`{resolution}` is not a resolution a session of this build gives (`{RESOLUTION_RULES}` and a table location, canonical and plain)"),
            )
        })?;
    write_digest(uri, bytes, Some(&location))
}

/// Writes a digest, resolved against `location` when given.
fn write_digest(uri: &str, bytes: &[u8], location: Option<&TableLocation>) -> Result<String> {
    let mut lines = String::with_capacity(64 + bytes.len() / 4);
    let mut n = 0u64;
    // Written piece by piece: a line per entry, millions per table.
    for_each_manifest_entry_with_snapshot(uri, bytes, |status, content, snap, path| {
        n += 1;
        lines.push(char::from(b'0' + status_number(status)));
        lines.push(' ');
        lines.push(char::from(b'0' + content_number(content)));
        lines.push(' ');
        match snap {
            Some(id) => push_int(&mut lines, id),
            None => lines.push('-'),
        }
        lines.push(' ');
        let key = location
            .and_then(|l| l.relative_text(path))
            .filter(|rel| crate::path::is_plain_key(rel));
        match key {
            Some(rel) => {
                lines.push('#');
                push_hex16(&mut lines, crate::reach::fingerprint(rel));
            }
            None => push_json_string(&mut lines, path),
        }
        lines.push('\n');
    })?;
    let mut out = match location {
        None => format!(
            "{HEADER}uri {}\nlength {}\nentries {n}\n",
            json_string(uri),
            bytes.len()
        ),
        Some(l) => format!(
            "{HEADER_RESOLVED}uri {}\nlength {}\nentries {n}\nresolved {}\n",
            json_string(uri),
            bytes.len(),
            json_string(&resolution_of(l))
        ),
    };
    out.push_str(&lines);
    seal(&mut out);
    Ok(out)
}

/// Appends `v` as 16 lowercase hex digits.
fn push_hex16(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for i in (0..16).rev() {
        out.push(char::from(DIGITS[((v >> (i * 4)) & 0xf) as usize]));
    }
}

/// Reads 16 lowercase hex digits (as [`push_hex16`] writes them). By
/// table, without a branch per digit: digits and letters come in no
/// order a branch could learn, and this runs once per key.
fn parse_hex16(s: &str) -> Option<u64> {
    /// Each byte's digit value, or 16 for a byte that is not a lowercase
    /// hex digit.
    const VALUE: [u8; 256] = {
        let mut t = [16u8; 256];
        let mut i = 0;
        while i < 10 {
            t[b'0' as usize + i] = i as u8;
            i += 1;
        }
        let mut i = 0;
        while i < 6 {
            t[b'a' as usize + i] = 10 + i as u8;
            i += 1;
        }
        t
    };
    let b: &[u8; 16] = s.as_bytes().try_into().ok()?;
    let (mut v, mut any_bad) = (0u64, 0u8);
    for &c in b {
        let d = VALUE[c as usize];
        any_bad |= d & 16;
        v = v << 4 | u64::from(d & 15);
    }
    (any_bad == 0).then_some(v)
}

impl ManifestDigest {
    /// Reads a digest. Fails (protocol: bad-input) for text that is not a
    /// whole digest of this version: a digest is made by the planner, so
    /// anything else is the host's mistake.
    pub(crate) fn decode(text: &str) -> Result<ManifestDigest> {
        let header = if text.starts_with(HEADER_RESOLVED) {
            HEADER_RESOLVED
        } else {
            HEADER
        };
        let crate::digest::Opened {
            uri,
            source_len,
            count,
            mut lines,
        } = open_digest(text, header, "entries").map_err(|e| bad(&e))?;
        let resolved = if header == HEADER_RESOLVED {
            let line = lines.next().unwrap_or_default();
            let r = line
                .strip_prefix("resolved ")
                .ok_or_else(|| bad("no `resolved` line"))?;
            Some(parse_json_string(r)?)
        } else {
            None
        };
        let mut entries = Vec::new();
        let keys = resolved.is_some();
        for line in lines {
            entries.push(decode_entry(line, keys)?);
        }
        if entries.len() as u64 != count {
            return Err(bad(&format!(
                "it says {count} entries and holds {}",
                entries.len()
            )));
        }
        Ok(ManifestDigest {
            uri,
            source_len,
            resolved,
            entries,
        })
    }
}

/// Reads one entry line, `<status> <content> <snapshot id or -> <path>`,
/// byte by byte (a line per entry, millions per table): the status and
/// content one digit each, the path a JSON string or, with `keys` (a
/// resolved digest), `#` and 16 lowercase hex digits.
fn decode_entry(line: &str, keys: bool) -> Result<DigestEntry> {
    let b = line.as_bytes();
    let entry = || bad(&format!("entry `{line}`"));
    if b.len() < 6 || b[1] != b' ' || b[3] != b' ' {
        return Err(entry());
    }
    let status = match b[0] {
        b'0' => ManifestStatus::Existing,
        b'1' => ManifestStatus::Added,
        b'2' => ManifestStatus::Deleted,
        _ => return Err(bad(&format!("entry status {}", &line[..1]))),
    };
    let content = match b[2] {
        b'0' => ContentType::Data,
        b'1' => ContentType::PositionDeletes,
        b'2' => ContentType::EqualityDeletes,
        _ => return Err(bad(&format!("entry content {}", &line[2..3]))),
    };
    // The snapshot id ends at the next space (an id holds none).
    let end = 4 + b[4..].iter().position(|&c| c == b' ').ok_or_else(entry)?;
    let snapshot_id = match &line[4..end] {
        "-" => None,
        // Only as the digest writes it: no sign but `-`, no leading zero.
        id => Some(
            matches!(
                id.as_bytes(),
                [b'0'] | [b'1'..=b'9', ..] | [b'-', b'1'..=b'9', ..]
            )
            .then(|| id.parse::<i64>().ok())
            .flatten()
            .ok_or_else(|| bad(&format!("snapshot id {id}")))?,
        ),
    };
    let p = &line[end + 1..];
    let path = match p.strip_prefix('#') {
        Some(hex) if keys => {
            ManifestPath::Key(parse_hex16(hex).ok_or_else(|| bad(&format!("key `{p}`")))?)
        }
        // A JSON string as the writer writes it: quotes, nothing around them.
        _ if p.len() >= 2 && p.starts_with('"') && p.ends_with('"') => {
            ManifestPath::Text(parse_json_string(p)?)
        }
        _ => return Err(bad(&format!("`{p}` is not a JSON string"))),
    };
    Ok(DigestEntry {
        status,
        content,
        snapshot_id,
        path,
    })
}

fn parse_json_string(s: &str) -> Result<String> {
    crate::digest::parse_json_string(s).ok_or_else(|| bad(&format!("`{s}` is not a JSON string")))
}

fn status_number(s: ManifestStatus) -> u8 {
    match s {
        ManifestStatus::Existing => 0,
        ManifestStatus::Added => 1,
        ManifestStatus::Deleted => 2,
    }
}

fn content_number(c: ContentType) -> u8 {
    match c {
        ContentType::Data => 0,
        ContentType::PositionDeletes => 1,
        ContentType::EqualityDeletes => 2,
    }
}

fn bad(why: &str) -> Error {
    Error::protocol(
        ProtocolReason::BadInput,
        format!("not a manifest digest: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A key reads back as written, and 16 characters that are not
        /// all lowercase hex digits, or any other length, read as nothing.
        #[test]
        fn a_key_reads_back_and_anything_else_is_refused(v in any::<u64>(), t in "[0-9a-fA-Fg #\u{e9}]{0,18}") {
            let mut hex = String::new();
            push_hex16(&mut hex, v);
            prop_assert_eq!(parse_hex16(&hex), Some(v));
            let lower_hex = t.len() == 16 && t.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
            prop_assert_eq!(parse_hex16(&t), lower_hex.then(|| u64::from_str_radix(&t, 16).unwrap()));
        }

        /// Any entry line, sealed (as a host that forged a digest would
        /// send it), reads as an entry or is refused, never a panic; one
        /// that reads writes back as the same line.
        #[test]
        fn any_entry_line_reads_back_or_is_refused(line in "[0-2x\u{e9}] [0-2#] (-|-?[0-9]{1,20}|x) (\"[a-z/ ]{0,6}\"|[ \t]?\"[a-z]{0,3}\"[ \t]?|#[0-9a-g]{15,17}|[a-z]{0,3})", resolved in any::<bool>()) {
            let head = if resolved {
                "lakesweep-manifest-digest 3\nuri \"s3://b/t/m.avro\"\nlength 1\nentries 1\nresolved \"plain-keys-xxh3-64/1 s3://b/t\"\n"
            } else {
                "lakesweep-manifest-digest 2\nuri \"s3://b/t/m.avro\"\nlength 1\nentries 1\n"
            };
            if let Ok(d) = ManifestDigest::decode(&sealed(&format!("{head}{line}\n"))) {
                let e = &d.entries[0];
                let mut again = format!("{} {} ", status_number(e.status), content_number(e.content));
                match e.snapshot_id {
                    Some(id) => push_int(&mut again, id),
                    None => again.push('-'),
                }
                again.push(' ');
                match &e.path {
                    ManifestPath::Key(fp) => {
                        again.push('#');
                        push_hex16(&mut again, *fp);
                    }
                    ManifestPath::Text(p) => push_json_string(&mut again, p),
                }
                prop_assert_eq!(again, line);
            }
        }
    }

    fn sealed(body: &str) -> String {
        let mut text = body.to_owned();
        seal(&mut text);
        text
    }

    const BODY: &str = "lakesweep-manifest-digest 2\nuri \"s3://b/t/metadata/m.avro\"\nlength 1234\nentries 2\n1 0 7 \"s3://b/t/data/a b\\n.parquet\"\n2 1 - \"s3://b/t/data/d.puffin\"\n";

    #[test]
    fn a_digest_reads_back_entry_for_entry() {
        let d = ManifestDigest::decode(&sealed(BODY)).unwrap();
        assert_eq!(d.uri, "s3://b/t/metadata/m.avro");
        assert_eq!(d.source_len, 1234);
        assert_eq!(
            d.entries,
            vec![
                DigestEntry {
                    status: ManifestStatus::Added,
                    content: ContentType::Data,
                    snapshot_id: Some(7),
                    path: ManifestPath::Text("s3://b/t/data/a b\n.parquet".into())
                },
                DigestEntry {
                    status: ManifestStatus::Deleted,
                    content: ContentType::PositionDeletes,
                    snapshot_id: None,
                    path: ManifestPath::Text("s3://b/t/data/d.puffin".into())
                },
            ]
        );
    }

    #[test]
    fn every_cut_and_every_changed_byte_is_refused() {
        let full = sealed(BODY);
        for n in 0..full.len() {
            let e = ManifestDigest::decode(&full[..n]).unwrap_err();
            assert!(matches!(e, Error::Protocol { .. }), "cut at {n}: {e}");
        }
        for i in 0..full.len() {
            let mut changed = full.clone().into_bytes();
            changed[i] = if changed[i] == b'x' { b'y' } else { b'x' };
            let changed = String::from_utf8(changed).unwrap();
            assert!(
                ManifestDigest::decode(&changed).is_err(),
                "byte {i} changed"
            );
        }
        // Well sealed but not well formed: each is named.
        for (body, why) in [
            (BODY.replace("2 1 -", "9 1 -"), "status 9"),
            (
                BODY.replace("entries 2", "entries 3"),
                "says 3 entries and holds 2",
            ),
            (BODY.replace("1 0 7", "1 0 x"), "snapshot id x"),
            (
                BODY.replace("\"s3://b/t/data/d.puffin\"", "s3://b/t/data/d.puffin"),
                "not a JSON string",
            ),
            (BODY.replace("length 1234", "size 1234"), "no `length` line"),
        ] {
            let e = ManifestDigest::decode(&sealed(&body)).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
    }

    /// A resolved digest: a plain key by fingerprint, another path as text.
    const RESOLVED: &str = "lakesweep-manifest-digest 3\nuri \"s3://b/t/metadata/m.avro\"\nlength 1234\nentries 2\nresolved \"plain-keys-xxh3-64/1 s3://b/t\"\n1 0 7 #00000000000000ff\n2 1 - \"s3://b/t/data/../d.puffin\"\n";

    #[test]
    fn a_resolved_digest_reads_back_and_every_damage_is_refused() {
        let d = ManifestDigest::decode(&sealed(RESOLVED)).unwrap();
        assert_eq!(d.resolved.as_deref(), Some("plain-keys-xxh3-64/1 s3://b/t"));
        assert_eq!(d.entries[0].path, ManifestPath::Key(0xff));
        assert_eq!(
            d.entries[1].path,
            ManifestPath::Text("s3://b/t/data/../d.puffin".into())
        );
        let full = sealed(RESOLVED);
        for n in 0..full.len() {
            assert!(ManifestDigest::decode(&full[..n]).is_err(), "cut at {n}");
        }
        for (body, why) in [
            (RESOLVED.replace("#00000000000000ff", "#ff"), "key `#ff`"),
            (
                RESOLVED.replace("#00000000000000ff", "#00000000000000FF"),
                "key `#00000000000000FF`",
            ),
            (
                RESOLVED.replace("resolved \"plain-keys-xxh3-64/1 s3://b/t\"\n", ""),
                "no `resolved` line",
            ),
            // A key by fingerprint is only read in a resolved digest.
            (
                BODY.replace("\"s3://b/t/data/d.puffin\"", "#00000000000000ff"),
                "not a JSON string",
            ),
        ] {
            let e = ManifestDigest::decode(&sealed(&body)).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn a_resolution_must_be_a_location_a_session_gives() {
        let loc = TableLocation::parse("s3://b/t").unwrap();
        assert_eq!(resolution_of(&loc), "plain-keys-xxh3-64/1 s3://b/t");
        assert!(
            digest_manifest_resolved(&resolution_of(&loc), "s3://b/t/metadata/m.avro", b"")
                .is_err_and(|e| matches!(e, Error::Malformed { .. }))
        );
        for bad in [
            "s3://b/t",
            "plain-keys-xxh3-64/0 s3://b/t",
            "plain-keys-xxh3-64/1 s3://b/t/",
            "plain-keys-xxh3-64/1 s3://b/x/../t",
            "plain-keys-xxh3-64/1 s3://b",
            "plain-keys-xxh3-64/1 t",
            "plain-keys-xxh3-64/1 S3://b/t",
            "plain-keys-xxh3-64/1s3://b/t",
        ] {
            let e = digest_manifest_resolved(bad, "s3://b/t/metadata/m.avro", b"").unwrap_err();
            assert!(matches!(e, Error::InvalidOptions { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn bytes_that_are_not_a_manifest_are_malformed_as_in_a_session() {
        let e = digest_manifest("s3://b/t/metadata/m.avro", b"Obj\x01 not really").unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
    }
}
