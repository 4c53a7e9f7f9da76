//! Canonical object keys: the one mapping every path goes through before it
//! is compared.
//!
//! Rules (`docs/design.md`, "Paths are compared in one canonical form"):
//! - `s3a://` and `s3n://` are `s3://`; the scheme is compared lower-case.
//! - The authority (bucket, namenode) must match exactly. `file:/x`,
//!   `file:///x`, `file://localhost/x` and `/x` are all the local file `/x`.
//! - The path is compared as the literal string: never percent-decoded, never
//!   case-folded, doubled slashes are not collapsed.
//! - A *reference* (a path read from metadata) may be spelled in ways readers
//!   resolve (`docs/design.md`, "Every spelling a reader resolves"): dot
//!   segments, repeated slashes. [`spellings`]
//!   gives every key such a reference may name; the keep set keeps them all.
//! - A key is inside the table only if it is strictly under `location + "/"`.
//!
//! A *loose* form (percent-decoded until stable, lower-cased, slashes
//! collapsed) is used for one purpose only: to find near-misses, listed keys
//! that would equal a referenced path if one of those rules were bent. Such
//! keys are kept and reported, never deleted.

use serde::{Deserialize, Serialize};

/// A rewrite of a path prefix, applied to every path read from table metadata
/// before it is canonicalised (restored backups, tables copied elsewhere,
/// fixtures written under another root).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathMapping {
    /// Prefix as it appears in the metadata, e.g. `s3://old-bucket/warehouse`.
    pub from: String,
    /// Prefix to substitute, e.g. `file:///mnt/restore/warehouse`.
    pub to: String,
}

/// A URI split into its canonical parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CanonicalUri {
    /// Lower-case scheme with aliases resolved (`s3a` -> `s3`); `file` for local paths.
    pub scheme: String,
    /// Authority (bucket, host:port); empty for local files.
    pub authority: String,
    /// Absolute path, starting with `/`, exactly as written.
    pub path: String,
}

impl CanonicalUri {
    /// Parses `raw`; relative paths and empty input are refused with a reason.
    pub fn parse(raw: &str) -> Result<CanonicalUri, String> {
        if raw.is_empty() {
            return Err("empty path".into());
        }
        if raw.starts_with('/') {
            return Ok(CanonicalUri {
                scheme: "file".into(),
                authority: String::new(),
                path: raw.into(),
            });
        }
        let Some(colon) = raw.find(':') else {
            return Err(format!(
                "relative path `{raw}` (map it to an absolute root with a location mapping)"
            ));
        };
        let scheme_raw = &raw[..colon];
        if scheme_raw.is_empty()
            || !scheme_raw
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            || !scheme_raw.starts_with(|c: char| c.is_ascii_alphabetic())
        {
            return Err(format!("relative path `{raw}` (no URI scheme)"));
        }
        let mut scheme = scheme_raw.to_ascii_lowercase();
        if scheme == "s3a" || scheme == "s3n" {
            scheme = "s3".into();
        }
        let rest = &raw[colon + 1..];
        let (mut authority, path) = if let Some(after) = rest.strip_prefix("//") {
            match after.find('/') {
                Some(slash) => (after[..slash].to_owned(), after[slash..].to_owned()),
                None => (after.to_owned(), "/".to_owned()),
            }
        } else if rest.starts_with('/') {
            (String::new(), rest.to_owned())
        } else {
            return Err(format!("opaque URI `{raw}` has no path"));
        };
        if scheme == "file" && authority.eq_ignore_ascii_case("localhost") {
            authority.clear();
        }
        if scheme != "file" && authority.is_empty() && scheme != "hdfs" && scheme != "viewfs" {
            return Err(format!(
                "URI `{raw}` has no authority (bucket or container)"
            ));
        }
        Ok(CanonicalUri {
            scheme,
            authority,
            path,
        })
    }

    /// The canonical text form, `scheme://authority/path`.
    pub fn to_uri_string(&self) -> String {
        format!("{}://{}{}", self.scheme, self.authority, self.path)
    }
}

/// Every URI a reference may name once a reader resolves it
/// (`docs/design.md`, "Every spelling a reader resolves").
///
/// - Local files (`file`): the kernel collapses repeated slashes and resolves
///   `.`/`..` (a `..` at the root stays at the root); URL-based readers (the
///   `url` crate, Java's `URI.normalize`) resolve dot segments without
///   collapsing first (`a//../b` is `a/b` to them, `b` to the kernel). Both
///   forms are returned; the literal form is not, since on a local file
///   system it is the same file.
/// - Object stores and other schemes: the store takes the key literally
///   (`a//b` and `a/../b` are keys of their own), while Hadoop- and
///   pyarrow-based readers collapse slashes and resolve dot segments, so the
///   literal form comes first, then every resolved one. A `..` that climbs
///   above the bucket is never resolved (only the literal form stays).
/// - The authority is kept as written: legacy S3 buckets may hold
///   upper-case letters and are then case-sensitive (a key that differs only
///   there is a near-miss, kept and reported).
///
/// The first element is the literal form for object stores and the kernel's
/// form for local files. Duplicates are removed; the result is never empty.
pub fn spellings(uri: &CanonicalUri) -> Vec<CanonicalUri> {
    let p = uri.path.as_str();
    if !needs_spellings(uri) {
        return vec![uri.clone()];
    }
    let collapsed = collapse_slashes(p);
    let mut paths: Vec<String> = Vec::new();
    if uri.scheme == "file" {
        paths.extend(remove_dot_segments(&collapsed, true));
        paths.extend(remove_dot_segments(p, false));
        if paths.is_empty() {
            paths.push(p.to_owned());
        }
    } else {
        paths.push(p.to_owned());
        paths.push(collapsed.clone());
        paths.extend(remove_dot_segments(p, false));
        paths.extend(remove_dot_segments(&collapsed, false));
    }
    let mut out: Vec<CanonicalUri> = Vec::new();
    for path in paths {
        let c = CanonicalUri {
            scheme: uri.scheme.clone(),
            authority: uri.authority.clone(),
            path,
        };
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// True when `uri` may name more than itself: it has a dot or empty segment.
pub fn needs_spellings(uri: &CanonicalUri) -> bool {
    has_dot_or_empty_segment(&uri.path)
}

/// True for a relative key of lower-case ASCII without `%`, control
/// characters, empty, `.` or `..` segments, or a leading or trailing `/`:
/// a key with one spelling that is its own loose form (see [`loose`];
/// tested against it in this module).
pub fn is_plain_key(rel: &str) -> bool {
    // Folds without a branch per byte (vector compares where the target
    // has them, the component too): the byte classes, then the pairs that
    // make an empty segment (`//`) or may begin a dot segment (`/.`).
    let b = rel.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    let odd_byte = b.iter().fold(false, |f, &c| {
        f | (c >= 0x80) | c.is_ascii_uppercase() | (c < 0x20) | (c == 0x7f) | (c == b'%')
    });
    let (doubled, slash_dot) = b
        .iter()
        .zip(&b[1..])
        .fold((false, false), |(d, sd), (&x, &y)| {
            (
                d | ((x == b'/') & (y == b'/')),
                sd | ((x == b'/') & (y == b'.')),
            )
        });
    if odd_byte || doubled || first == b'/' || last == b'/' {
        return false;
    }
    // Only a segment that begins with `.` can be `.` or `..`.
    !((slash_dot || first == b'.') && has_dot_segment(rel))
}

/// True when a path has a `.` or `..` segment or an empty segment (`//`):
/// spellings that readers may resolve differently from the store.
pub fn has_dot_or_empty_segment(path: &str) -> bool {
    path.as_bytes().windows(2).any(|w| w == b"//") || has_dot_segment(path)
}

/// True when a path has a `.` or `..` segment. Read as bytes (`/` and `.`
/// are single bytes in UTF-8, never inside another character): one pass
/// without a string searcher, which costs most in wasm, where it has no
/// vector instructions.
pub fn has_dot_segment(path: &str) -> bool {
    path.as_bytes()
        .split(|&b| b == b'/')
        .any(|s| s == b"." || s == b"..")
}

/// True when `text` holds `://`, a URI's scheme separator (read as bytes,
/// like [`has_dot_segment`]).
pub fn holds_scheme_separator(text: &str) -> bool {
    // Without a branch per byte, so that it compiles to vector compares
    // (in the component too, built with wasm's SIMD): asked of every
    // unreferenced key, where it showed as a scan a byte at a time.
    let b = text.as_bytes();
    let (next, after) = (
        b.get(1..).unwrap_or_default(),
        b.get(2..).unwrap_or_default(),
    );
    b.iter()
        .zip(next)
        .zip(after)
        .fold(false, |f, ((&x, &y), &z)| {
            f | ((x == b':') & (y == b'/') & (z == b'/'))
        })
}

/// `a == b`, comparing 8 bytes at a time: in wasm, where `==` on byte
/// strings is a byte-by-byte `memcmp`, the equality of every listed key's
/// prefix and of the reasons a page repeats.
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |c: &[u8]| c.first_chunk::<8>().map(|w| u64::from_le_bytes(*w));
    let (xs, ys) = (a.chunks_exact(8), b.chunks_exact(8));
    xs.remainder() == ys.remainder() && xs.zip(ys).all(|(x, y)| word(x) == word(y))
}

/// `text.strip_prefix(prefix)`, compared by [`same_bytes`]: the shortcut
/// of every listed key, where wasm's byte-by-byte `memcmp` showed.
pub fn strip_prefix_fast<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.as_bytes().get(..prefix.len())?;
    // Equal bytes: the prefix, a whole string, ends on a character
    // boundary of `text` too, so this slice is always there.
    if same_bytes(head, prefix.as_bytes()) {
        text.get(prefix.len()..)
    } else {
        None
    }
}

/// Why a listed key cannot be deleted reliably, if it cannot: control
/// characters (C0, DEL, C1) that hosts print, escape or reject differently,
/// or a `.`/`..` segment that an HTTP client or path library may resolve
/// before the request, aiming the delete at another object.
pub fn unaddressable(key: &str, rel: &str) -> Option<String> {
    if has_control(key) {
        return Some(
            "key holds control characters: kept, the hosts cannot address it reliably".into(),
        );
    }
    if has_dot_segment(rel) {
        return Some(
            "key has a `.` or `..` segment: kept, a client may resolve it and delete another object"
                .into(),
        );
    }
    None
}

/// True when `text` holds a control character (C0, DEL or C1: what
/// `char::is_control` answers), read byte by byte: C0 and DEL are single
/// bytes, C1 (U+0080 to U+009F) is 0xC2 then 0x80..=0x9F in UTF-8, and
/// neither byte pattern occurs inside another character's encoding.
fn has_control(text: &str) -> bool {
    let b = text.as_bytes();
    // First a pass without branches for any byte that may be or begin one
    // (vector compares where the target has them: the component is built
    // with wasm's SIMD); the exact test only for a key it flags.
    let flagged = b
        .iter()
        .fold(false, |f, &c| f | (c < 0x20) | (c == 0x7f) | (c == 0xc2));
    flagged
        && b.iter().enumerate().any(|(i, &c)| {
            c < 0x20 || c == 0x7f || (c == 0xc2 && matches!(b.get(i + 1), Some(0x80..=0x9f)))
        })
}

/// Collapses runs of `/` into one.
pub fn collapse_slashes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut prev = false;
    for c in path.chars() {
        if c == '/' && prev {
            continue;
        }
        prev = c == '/';
        out.push(c);
    }
    out
}

/// RFC 3986 `remove_dot_segments` on an absolute path (starting with `/`).
/// A `..` above the root gives `None`, unless `clamp` (a local file system:
/// `/..` is `/`). Empty segments are kept as segments (`a//..` is `a/`).
pub fn remove_dot_segments(path: &str, clamp: bool) -> Option<String> {
    let rest = path.strip_prefix('/')?;
    let segs: Vec<&str> = rest.split('/').collect();
    let mut out: Vec<&str> = Vec::with_capacity(segs.len());
    let last = segs.len().saturating_sub(1);
    for (i, s) in segs.iter().enumerate() {
        match *s {
            "." => {
                if i == last {
                    out.push("");
                }
            }
            ".." => {
                if out.pop().is_none() && !clamp {
                    return None;
                }
                if i == last {
                    out.push("");
                }
            }
            other => out.push(other),
        }
    }
    Some(format!("/{}", out.join("/")))
}

/// Applies the longest matching mapping to `raw`, on a path-segment boundary;
/// among equally long matches (`s3a://b/t` and `s3n://b/t` both given) the
/// first given wins.
///
/// A mapping matches either the raw text or, when both parse, the canonical
/// text (so `from = s3://b/t` also maps `s3a://b/t/x`).
pub fn apply_mappings(raw: &str, mappings: &[PathMapping]) -> String {
    fn strip<'a>(s: &'a str, from: &str) -> Option<&'a str> {
        let from_trim = from.trim_end_matches('/');
        let rest = s.strip_prefix(from_trim)?;
        if rest.is_empty() || rest.starts_with('/') || from_trim.is_empty() {
            Some(rest)
        } else {
            None
        }
    }
    let canonical = CanonicalUri::parse(raw).ok().map(|c| c.to_uri_string());
    let mut best: Option<(usize, String)> = None;
    for m in mappings {
        let hit = strip(raw, &m.from).or_else(|| {
            let from_c = CanonicalUri::parse(m.from.trim_end_matches('/'))
                .ok()?
                .to_uri_string();
            strip(canonical.as_deref()?, &from_c)
        });
        if let Some(rest) = hit {
            let len = m.from.len();
            if best.as_ref().is_none_or(|(l, _)| len > *l) {
                best = Some((len, format!("{}{}", m.to.trim_end_matches('/'), rest)));
            }
        }
    }
    best.map(|(_, s)| s).unwrap_or_else(|| raw.to_owned())
}

/// The table location, canonical, with the rules for "inside the table".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLocation {
    uri: CanonicalUri,
    loose_prefix: String,
    /// `uri` as text plus `/` (the listing prefix).
    prefix: String,
}

impl TableLocation {
    /// Parses a table location; a trailing slash is ignored. The root of a
    /// bucket or file system is refused: a table must be a prefix of its own.
    pub fn parse(raw: &str) -> Result<TableLocation, String> {
        let mut uri = CanonicalUri::parse(raw)?;
        while uri.path.len() > 1 && uri.path.ends_with('/') {
            uri.path.pop();
        }
        if uri.path == "/" || uri.path.is_empty() {
            return Err(format!(
                "`{raw}` is the root of a bucket or file system, not a table location"
            ));
        }
        let loose_prefix = format!("{}/", loose(&uri.path));
        let prefix = format!("{}/", uri.to_uri_string());
        Ok(TableLocation {
            uri,
            loose_prefix,
            prefix,
        })
    }

    /// The canonical location (no trailing slash).
    pub fn canonical(&self) -> &CanonicalUri {
        &self.uri
    }

    /// Canonical URI text of the location, without a trailing slash.
    pub fn as_uri(&self) -> String {
        self.uri.to_uri_string()
    }

    /// The listing prefix: canonical location plus `/`.
    pub fn prefix(&self) -> String {
        self.prefix.clone()
    }

    /// True when the location's path has no `.`, `..` or empty segment:
    /// the location is its own only spelling.
    pub fn has_plain_path(&self) -> bool {
        !has_dot_or_empty_segment(&self.uri.path)
    }

    /// The key relative to the location when `raw` is spelled as the
    /// canonical prefix plus a non-empty key: then parsing `raw` and asking
    /// [`TableLocation::relative`] gives the same key (the prefix is already
    /// canonical), which this finds without parsing or allocating. `None`
    /// says only "not spelled so": such a key takes the parsing path.
    pub fn relative_text<'a>(&self, raw: &'a str) -> Option<&'a str> {
        strip_prefix_fast(raw, &self.prefix).filter(|r| !r.is_empty())
    }

    /// The key relative to the location if `uri` is strictly under
    /// `location + "/"` (same scheme and authority), else `None`.
    pub fn relative<'a>(&self, uri: &'a CanonicalUri) -> Option<&'a str> {
        if uri.scheme != self.uri.scheme || uri.authority != self.uri.authority {
            return None;
        }
        let rest = uri
            .path
            .strip_prefix(self.uri.path.as_str())?
            .strip_prefix('/')?;
        if rest.is_empty() {
            None
        } else {
            Some(rest)
        }
    }

    /// The loose relative form of any path (any scheme or authority) whose
    /// loose path lies under the loose location path; used for near-misses.
    pub fn loose_relative(&self, uri: &CanonicalUri) -> Option<String> {
        let l = loose(&uri.path);
        l.strip_prefix(self.loose_prefix.as_str())
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
    }
}

/// Pairs of tables (indices into `locations`, the smaller first) whose
/// locations are one and the same or lie one inside the other, compared in
/// canonical form (`s3a://` = `s3://`) and, to fail closed, also in loose
/// form (case, encoding, doubled slashes). Such tables share keys: one
/// table's listing holds the other's files, which no single table's plan
/// can judge. A location that does not parse pairs with nothing (its own
/// plan refuses it).
pub fn overlapping_locations(locations: &[String]) -> Vec<(usize, usize)> {
    let parsed: Vec<Option<(String, String, String)>> = locations
        .iter()
        .map(|l| {
            TableLocation::parse(l).ok().map(|t| {
                let u = t.canonical();
                (
                    format!("{}://{}", u.scheme, u.authority.to_ascii_lowercase()),
                    format!("{}/", u.path),
                    t.loose_prefix.clone(),
                )
            })
        })
        .collect();
    let mut out = Vec::new();
    for (i, a) in parsed.iter().enumerate() {
        for (j, b) in parsed.iter().enumerate().skip(i + 1) {
            let (Some(a), Some(b)) = (a, b) else { continue };
            let nested = |x: &str, y: &str| x.starts_with(y) || y.starts_with(x);
            if a.0 == b.0 && (nested(&a.1, &b.1) || nested(&a.2, &b.2)) {
                out.push((i, j));
            }
        }
    }
    out
}

/// Percent-decodes until stable (at most 4 rounds), lower-cases, collapses
/// runs of `/` and drops a trailing `/`.
pub fn loose(path: &str) -> String {
    let mut cur = path.to_owned();
    for _ in 0..4 {
        let next = percent_decode(&cur);
        if next == cur {
            break;
        }
        cur = next;
    }
    let lower = cur.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    let mut prev_slash = false;
    for c in lower.chars() {
        if c == '/' {
            if prev_slash {
                continue;
            }
            prev_slash = true;
        } else {
            prev_slash = false;
        }
        out.push(c);
    }
    while out.len() > 1 && out.ends_with('/') {
        out.pop();
    }
    out
}

/// Decodes `%XX` escapes once; invalid escapes are kept literally, invalid
/// UTF-8 after decoding is replaced (this form is only ever used for matching).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    if !b.contains(&b'%') {
        return s.to_owned();
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_locations_are_found_in_every_spelling() {
        let l = |v: &[&str]| {
            overlapping_locations(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(l(&["s3://b/w/t", "s3a://b/w/t/"]), vec![(0, 1)]);
        assert_eq!(l(&["s3://b/w/t/nested/n", "s3://b/w/t"]), vec![(0, 1)]);
        assert_eq!(l(&["s3://b/w/T", "s3://b/w/t/x"]), vec![(0, 1)]);
        assert_eq!(
            l(&["s3://b/w/t", "s3://b/w/t_1", "s3://c/w/t", "file:///w/t"]),
            vec![]
        );
        assert_eq!(l(&["not a uri", "s3://b/w/t"]), vec![]);
    }

    fn c(s: &str) -> CanonicalUri {
        CanonicalUri::parse(s).unwrap()
    }

    #[test]
    fn scheme_aliases_and_local_forms() {
        assert_eq!(c("s3a://b/t/x"), c("s3://b/t/x"));
        assert_eq!(c("S3N://b/t/x"), c("s3://b/t/x"));
        assert_eq!(c("file:/tmp/x"), c("/tmp/x"));
        assert_eq!(c("file:///tmp/x"), c("/tmp/x"));
        assert_eq!(c("file://localhost/tmp/x"), c("/tmp/x"));
        assert_ne!(c("s3://b/t/x"), c("s3://c/t/x"));
        assert_ne!(c("hdfs:/w/t"), c("hdfs://nn/w/t"));
        assert!(CanonicalUri::parse("data/x").is_err());
        assert!(CanonicalUri::parse("s3:///x").is_err());
    }

    #[test]
    fn inside_needs_the_trailing_slash() {
        let loc = TableLocation::parse("s3://b/db/t/").unwrap();
        assert_eq!(
            loc.relative(&c("s3://b/db/t/data/a.parquet")),
            Some("data/a.parquet")
        );
        assert_eq!(loc.relative(&c("s3://b/db/t2/data/a.parquet")), None);
        assert_eq!(loc.relative(&c("s3://b/db/t")), None);
        assert_eq!(loc.relative(&c("s3://b/db/t/")), None);
        assert_eq!(loc.relative(&c("gs://b/db/t/x")), None);
        assert!(TableLocation::parse("s3://bucket").is_err());
        assert!(TableLocation::parse("s3://bucket/").is_err());
    }

    #[test]
    fn paths_are_literal() {
        let loc = TableLocation::parse("file:///w/t").unwrap();
        let enc = c("file:///w/t/data/category=100%25/a.parquet");
        assert_eq!(loc.relative(&enc), Some("data/category=100%25/a.parquet"));
        let dec = c("file:///w/t/data/category=100%/a.parquet");
        assert_ne!(loc.relative(&enc), loc.relative(&dec));
        assert_eq!(loc.loose_relative(&enc), loc.loose_relative(&dec));
        let dbl = c("file:///w/t/data//A.parquet");
        assert_eq!(loc.loose_relative(&dbl).as_deref(), Some("data/a.parquet"));
    }

    #[test]
    fn mappings_take_longest_on_boundaries() {
        let maps = vec![
            PathMapping {
                from: "file:///lakesweep-fixtures".into(),
                to: "/repo/tests/fixtures".into(),
            },
            PathMapping {
                from: "file:///lakesweep-fixtures/a".into(),
                to: "/elsewhere".into(),
            },
        ];
        assert_eq!(
            apply_mappings("file:///lakesweep-fixtures/b/x", &maps),
            "/repo/tests/fixtures/b/x"
        );
        assert_eq!(
            apply_mappings("file:///lakesweep-fixtures/a/x", &maps),
            "/elsewhere/x"
        );
        assert_eq!(
            apply_mappings("file:///lakesweep-fixtures-2/x", &maps),
            "file:///lakesweep-fixtures-2/x"
        );
        let s3 = vec![PathMapping {
            from: "s3://b/t".into(),
            to: "file:///m/t".into(),
        }];
        assert_eq!(apply_mappings("s3a://b/t/x", &s3), "file:///m/t/x");
        let rel = vec![PathMapping {
            from: "data/persistent".into(),
            to: "/fx".into(),
        }];
        assert_eq!(apply_mappings("data/persistent/t/x", &rel), "/fx/t/x");
    }

    #[test]
    fn spellings_resolve_dots_and_slashes_as_readers_do() {
        let paths = |s: &str| -> Vec<String> {
            spellings(&c(s))
                .into_iter()
                .map(|u| u.to_uri_string())
                .collect()
        };
        assert_eq!(paths("s3://b/t/x"), ["s3://b/t/x"]);
        assert_eq!(paths("file:///w/x/../t/p"), ["file:///w/t/p"]);
        assert_eq!(paths("FILE://localhost/w/t/./p"), ["file:///w/t/p"]);
        assert_eq!(paths("file:///w/t//p"), ["file:///w/t/p", "file:///w/t//p"]);
        // The kernel collapses first, URL readers do not.
        assert_eq!(
            paths("file:///w/t/a//../p"),
            ["file:///w/t/p", "file:///w/t/a/p"]
        );
        assert_eq!(paths("s3a://b/t/x/../p"), ["s3://b/t/x/../p", "s3://b/t/p"]);
        assert_eq!(paths("s3://b/t//p"), ["s3://b/t//p", "s3://b/t/p"]);
        assert_eq!(paths("s3://B/t/p"), ["s3://B/t/p"]);
        // Above the root: literal only (clamped on a local file system).
        assert_eq!(paths("s3://b/../t/p"), ["s3://b/../t/p"]);
        assert_eq!(paths("file:///../w/t/p"), ["file:///w/t/p"]);
        assert_eq!(
            remove_dot_segments("/a/b/..", false).as_deref(),
            Some("/a/")
        );
        assert_eq!(remove_dot_segments("/a/../..", false), None);
        assert_eq!(
            remove_dot_segments("/a/./b/.", false).as_deref(),
            Some("/a/b/")
        );
    }

    /// Kills: `&&` for `||` in the authority rule (every bucket URI
    /// refused), and in the scheme rules (`1s3:`, `s_3:` accepted).
    #[test]
    fn bucket_uris_need_an_authority_and_schemes_their_rfc_form() {
        for ok in [
            "s3://b/k",
            "gs://b/k",
            "abfss://c@a.dfs.core.windows.net/k",
            "hdfs:///k",
        ] {
            assert!(CanonicalUri::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "s3:///k",
            "gs:///k",
            "1s3://b/k",
            "s_3://b/k",
            "://b/k",
            "-x://b/k",
        ] {
            assert!(CanonicalUri::parse(bad).is_err(), "{bad}");
        }
    }

    /// Kills: `||` for `&&` in the `file://localhost` rule (every
    /// authority of a file URI, or `localhost` of any scheme, dropped).
    #[test]
    fn only_file_localhost_loses_its_authority() {
        assert_eq!(c("file://localhost/x").authority, "");
        assert_eq!(c("file://nas/x").authority, "nas");
        assert_ne!(c("file://nas/x"), c("file:///x"));
        assert_eq!(c("s3://localhost/k").authority, "localhost");
    }

    /// Kills: `>=` for `>` in the longest-match rule (the last of equally
    /// long matches would win).
    #[test]
    fn the_first_of_equally_long_mappings_wins() {
        let m = |from: &str, to: &str| PathMapping {
            from: from.into(),
            to: to.into(),
        };
        let maps = [m("s3a://b/t", "file:///x"), m("s3n://b/t", "file:///y")];
        assert_eq!(apply_mappings("s3://b/t/k", &maps), "file:///x/k");
    }

    /// Kills: `>=` for `>` when trimming trailing slashes (the root would
    /// become empty).
    #[test]
    fn the_loose_form_of_the_root_is_the_root() {
        assert_eq!(loose("///"), "/");
        assert_eq!(loose("/A//b/"), "/a/b");
    }

    /// Kills: `has_dot_or_empty_segment` always true, or `==` for `!=`.
    #[test]
    fn dot_and_empty_segments() {
        for yes in ["/a//b", "/a/./b", "/a/../b", "/a/b/.", "/a/b/.."] {
            assert!(has_dot_or_empty_segment(yes), "{yes}");
        }
        for no in ["/a/b", "/a/.b", "/a/..b/c", "/a/b.", "/"] {
            assert!(!has_dot_or_empty_segment(no), "{no}");
        }
    }

    #[test]
    fn control_characters_are_found_byte_by_byte() {
        for c in (0..0x800u32)
            .filter_map(char::from_u32)
            .chain(['\u{2028}', '\u{feff}', '😀'])
        {
            for text in [format!("{c}"), format!("a/{c}b"), format!("é{c}")] {
                assert_eq!(
                    has_control(&text),
                    text.chars().any(char::is_control),
                    "{text:?}"
                );
            }
        }
    }

    #[test]
    fn unaddressable_keys() {
        assert!(unaddressable("s3://b/t/a\nb", "a\nb").is_some());
        assert!(unaddressable("s3://b/t/a\u{7f}", "a\u{7f}").is_some());
        assert!(unaddressable("s3://b/t/x/../a", "x/../a").is_some());
        assert!(unaddressable("s3://b/t/./a", "./a").is_some());
        assert!(unaddressable("s3://b/t/a..b/.c", "a..b/.c").is_none());
        assert!(unaddressable("s3://b/t/a//b", "a//b").is_none());
    }

    #[test]
    fn percent_decode_handles_edges() {
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%25"), "a%");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
        assert_eq!(loose("/x/100%2525"), "/x/100%");
    }
}

#[cfg(test)]
mod fast_path_props {
    use super::*;
    use proptest::prelude::*;

    /// [`is_plain_key`] as it was first written, a byte at a time: the
    /// oracle of the folded one.
    fn is_plain_key_bytewise(rel: &str) -> bool {
        let plain_segment = |s: &[u8]| !s.is_empty() && s != b"." && s != b"..";
        let b = rel.as_bytes();
        let mut start = 0;
        for (i, &c) in b.iter().enumerate() {
            if c == b'/' {
                if !plain_segment(&b[start..i]) {
                    return false;
                }
                start = i + 1;
            } else if !c.is_ascii() || c.is_ascii_uppercase() || c.is_ascii_control() || c == b'%' {
                return false;
            }
        }
        plain_segment(&b[start..])
    }

    fn locations() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "s3://bucket/wh/db/t".to_owned(),
            "file:///tmp/Tables/Events".to_owned(),
            "abfss://c@acct.dfs.core.windows.net/a%2Fb/t%25".to_owned(),
            "gs://b/x/ΣΑΣ".to_owned(),
            "hdfs://nn:8020/user/hive/t".to_owned(),
        ])
    }

    fn tails() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "B",
                "/",
                "//",
                ".",
                "..",
                "%",
                "%2F",
                "%41",
                "=",
                "x.parquet",
                "Σ",
                " ",
                "\t",
            ]),
            0..8,
        )
        .prop_map(|v| v.concat())
    }

    fn texts() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                "/", ".", "..", "a", ":", "é", "//", "x.y", "\u{85}", "\u{7f}",
            ]),
            0..12,
        )
        .prop_map(|v| v.concat())
    }

    proptest! {
        // The byte-level scans answer what the string forms answer.
        #[test]
        fn byte_scans_agree_with_string_forms(text in texts(), other in texts()) {
            prop_assert_eq!(
                has_dot_segment(&text),
                text.split('/').any(|s| s == "." || s == "..")
            );
            prop_assert_eq!(holds_scheme_separator(&text), text.contains("://"));
            let plain = !text.is_empty()
                && text.bytes().all(|b| {
                    b.is_ascii() && !b.is_ascii_uppercase() && !b.is_ascii_control() && b != b'%'
                })
                && !text.starts_with('/')
                && !text.ends_with('/')
                && !has_dot_or_empty_segment(&text);
            prop_assert_eq!(is_plain_key(&text), plain);
            prop_assert_eq!(has_control(&text), text.chars().any(char::is_control));
            let joined = format!("{other}{text}");
            for (t, p) in [(&joined, &other), (&text, &other), (&other, &text), (&text, &text)] {
                prop_assert_eq!(strip_prefix_fast(t, p), t.strip_prefix(p.as_str()));
                prop_assert_eq!(same_bytes(t.as_bytes(), p.as_bytes()), t == p);
            }
        }

        // The shortcut of classification and of references: a key spelled
        // as the canonical prefix plus a tail is the key parsing gives.
        #[test]
        fn relative_text_agrees_with_parsing(loc in locations(), tail in tails()) {
            let l = TableLocation::parse(&loc).unwrap();
            let raw = format!("{}{tail}", l.prefix());
            if let Some(fast) = l.relative_text(&raw) {
                let c = CanonicalUri::parse(&raw).unwrap();
                prop_assert_eq!(l.relative(&c), Some(fast));
            }
        }

        // The folded test answers as the byte-by-byte one it replaced.
        #[test]
        fn plain_keys_are_found_as_byte_by_byte(tail in tails(), extra in "[a-z./%A-Z\u{1}\u{7f}é]{0,12}") {
            for k in [tail.clone(), extra.clone(), format!("{tail}{extra}"), format!("{extra}{tail}")] {
                prop_assert_eq!(is_plain_key(&k), is_plain_key_bytewise(&k), "{:?}", k);
            }
        }

        // A plain key (lower-case ASCII, no `%`, no empty, `.` or `..`
        // segment, no leading or trailing `/`) is its own loose form, so the
        // session adds no loose fingerprint for it.
        #[test]
        fn a_plain_key_is_its_own_loose_form(loc in locations(), tail in tails()) {
            let l = TableLocation::parse(&loc).unwrap();
            if is_plain_key(&tail) {
                let c = CanonicalUri::parse(&format!("{}{tail}", l.prefix())).unwrap();
                prop_assert_eq!(l.loose_relative(&c), Some(tail.clone()));
            }
        }
    }
}
