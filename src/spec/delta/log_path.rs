//! Paths as the log writes them: URI-encoded, relative to the table root
//! or absolute, decoded exactly once.

use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// Decodes a URI-encoded log path exactly once (`%2525` -> `%25`).
pub fn decode_path(uri: &str, raw: &str) -> Result<String> {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| {
                std::str::from_utf8(h)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            });
            let Some(v) = hex else {
                return Err(Error::malformed(
                    MalformedReason::Path,
                    uri,
                    format!("path `{raw}` has an invalid percent escape"),
                ));
            };
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| {
        Error::malformed(
            MalformedReason::Path,
            uri,
            format!("path `{raw}` decodes to invalid UTF-8"),
        )
    })
}

/// True when a log path, **as written** (still encoded), is absolute: it
/// starts with `/` or with an RFC 3986 scheme (`s3://`, `file:/`, `dbfs:/`,
/// `hdfs://`). Writers encode a `:` inside relative paths as `%3A`, so the
/// test is made before decoding.
pub fn is_absolute(raw: &str) -> bool {
    if raw.starts_with('/') {
        return true;
    }
    match raw.split_once(':') {
        Some((scheme, _)) => {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// A path from the log, decoded once, relative to the table root or absolute.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LogPath {
    /// Relative to the table root (decoded).
    Relative(String),
    /// An absolute URI or rooted path (decoded).
    Absolute(String),
}

impl LogPath {
    /// The decoded path (relative or absolute).
    pub fn as_str(&self) -> &str {
        match self {
            LogPath::Relative(p) | LogPath::Absolute(p) => p,
        }
    }

    /// Decodes a path as written in an `add`, `remove`, `cdc` or sidecar action.
    pub fn parse(uri: &str, raw: &str) -> Result<LogPath> {
        let decoded = decode_path(uri, raw)?;
        Ok(if is_absolute(raw) {
            LogPath::Absolute(decoded)
        } else {
            LogPath::Relative(decoded)
        })
    }

    /// [`LogPath::parse`] of a path the caller owns: a path without a
    /// percent escape is its own decoding and is moved, not copied (most
    /// paths of a checkpoint of millions of files).
    pub fn parse_owned(uri: &str, raw: String) -> Result<LogPath> {
        if raw.contains('%') {
            return LogPath::parse(uri, &raw);
        }
        Ok(if is_absolute(&raw) {
            LogPath::Absolute(raw)
        } else {
            LogPath::Relative(raw)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_paths_exactly_once() {
        assert_eq!(
            decode_path("u", "cat=100%2525/a%20b.parquet").unwrap(),
            "cat=100%25/a b.parquet"
        );
        assert_eq!(decode_path("u", "x=na%C3%AFve/f").unwrap(), "x=naïve/f");
        assert_eq!(decode_path("u", "q%3F%23%26+/f").unwrap(), "q?#&+/f");
        assert!(decode_path("u", "bad%2").is_err());
        assert!(decode_path("u", "bad%zz").is_err());
        assert!(decode_path("u", "%ff").is_err());
        assert!(is_absolute("s3://b/t/f"));
        assert!(is_absolute("/t/f"));
        assert!(is_absolute("file:/tmp/t/part-0.parquet"));
        assert!(is_absolute("dbfs:/t/f"));
        assert!(!is_absolute("x=a/f.parquet"));
        assert!(!is_absolute("x=a://b/f"));
        assert!(!is_absolute("a%3A/x"));
        assert_eq!(
            LogPath::parse("u", "a%3A/x").unwrap(),
            LogPath::Relative("a:/x".into())
        );
        assert_eq!(
            LogPath::parse("u", "file:/t/a%20b").unwrap(),
            LogPath::Absolute("file:/t/a b".into())
        );
        // An owned path decodes exactly as a borrowed one.
        for raw in [
            "a%3A/x",
            "file:/t/a%20b",
            "x=1/f.parquet",
            "s3://b/t/f",
            "/t/f",
            "bad%2",
        ] {
            assert_eq!(
                LogPath::parse_owned("u", raw.to_owned()).ok(),
                LogPath::parse("u", raw).ok(),
                "{raw}"
            );
        }
    }
}
