//! Iceberg table metadata files by name, and the file-system (Hadoop)
//! catalog's pointer to the current one.
//!
//! A metadata document is spelled `*.metadata.json`, or compressed
//! `*.gz.metadata.json` (the form Java writes today) or
//! `*.metadata.json.gz` (the older form Java still reads). A file-system
//! catalog names its versions `vN.<spelling>` and writes the newest `N` to
//! `metadata/version-hint.text` after each commit, so the hint may lag:
//! [`current_metadata`] follows it forward as Java's `HadoopTableOperations`
//! does, and falls back to the newest `vN` when there is no hint to read.

use crate::error::{Error, MalformedReason, Result, UnsafeReason};

/// The spellings of version `n`'s document, in the order Java's Hadoop
/// table operations look for them: plain, then gzip in the new form, then
/// gzip in the old form.
fn spellings(n: u64) -> [String; 3] {
    [
        format!("v{n}.metadata.json"),
        format!("v{n}.gz.metadata.json"),
        format!("v{n}.metadata.json.gz"),
    ]
}

/// True when `name` (a file name or a key) is spelled as an Iceberg
/// table metadata document, compressed or not.
pub fn is_metadata_document(name: &str) -> bool {
    name.ends_with(".metadata.json") || name.ends_with(".metadata.json.gz")
}

/// The version `N` of a file-system catalog's `vN.<spelling>` file name;
/// `None` for any other name (including a zero-padded `N`, which Java
/// would never look up by name).
pub fn hadoop_version(name: &str) -> Option<u64> {
    let digits = name.strip_prefix('v').and_then(|r| {
        r.strip_suffix(".gz.metadata.json")
            .or_else(|| r.strip_suffix(".metadata.json.gz"))
            .or_else(|| r.strip_suffix(".metadata.json"))
    })?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// The current metadata document of a file-system catalog table, and why
/// it is the one.
///
/// `table_location` is the table's root (no trailing `/`); `hint` the bytes
/// of `metadata/version-hint.text`, `None` when it does not exist;
/// `metadata_listing` the keys listed under `table_location + "/metadata/"`
/// (any order; keys in folders below it are ignored). A key outside that
/// prefix is the host's mistake and refused.
///
/// Rules: a hint holding a version `N` is followed forward while `vN+1`
/// exists in any spelling (the hint is rewritten after the commit); the
/// document of the version reached must exist. A hint that is not a
/// number, or no hint at all, means the newest `vN` listed. An empty hint,
/// one holding a path, or one that is not UTF-8 is refused (a half-written
/// hint: read again later), as is a table with neither a hint nor any `vN`.
pub fn current_metadata(
    table_location: &str,
    hint: Option<&[u8]>,
    metadata_listing: &[String],
) -> Result<(String, String)> {
    let dir = format!("{}/metadata/", table_location.trim_end_matches('/'));
    let hint_uri = format!("{dir}version-hint.text");
    let mut names = std::collections::BTreeSet::new();
    for key in metadata_listing {
        let Some(rest) = key.strip_prefix(&dir) else {
            return Err(Error::protocol(
                crate::error::ProtocolReason::BadKey,
                format!(
                    "`{key}` was listed as metadata of {table_location} but lies outside `{dir}`"
                ),
            ));
        };
        if !rest.contains('/') {
            names.insert(rest);
        }
    }
    let spelled = |n: u64| {
        spellings(n)
            .into_iter()
            .find(|s| names.contains(s.as_str()))
    };
    let newest = || {
        names
            .iter()
            .filter_map(|n| hadoop_version(n).map(|v| (v, *n)))
            .max_by_key(|(v, _)| *v)
            .and_then(|(v, _)| spelled(v).map(|s| (v, s)))
    };
    let Some(bytes) = hint else {
        return match newest() {
            Some((v, name)) => Ok((
                format!("{dir}{name}"),
                format!("no version-hint.text: the newest version listed in metadata/ is {v}"),
            )),
            None => Err(Error::invalid(
                "metadata-location",
                format!(
                    "{table_location} has no metadata/version-hint.text and no vN.metadata.json: say where the current metadata is (a catalog, or the metadata file itself)"
                ),
            )),
        };
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Error::malformed(MalformedReason::Encoding, &hint_uri, "not UTF-8 text"))?;
    let said = text.trim();
    if said.is_empty() || said.contains('/') {
        return Err(Error::malformed(
            MalformedReason::Field,
            &hint_uri,
            format!(
                "holds `{}`, not a version number (a hint being written? read again later, or say where the current metadata is)",
                said.escape_debug()
            ),
        ));
    }
    let Ok(start) = said.parse::<u64>() else {
        return match newest() {
            Some((v, name)) => Ok((
                format!("{dir}{name}"),
                format!(
                    "version-hint.text holds `{}`, not a number: the newest version listed in metadata/ is {v}",
                    said.escape_debug()
                ),
            )),
            None => Err(Error::invalid(
                "metadata-location",
                format!(
                    "{hint_uri} holds `{}`, not a version number, and metadata/ holds no vN.metadata.json: say where the current metadata is",
                    said.escape_debug()
                ),
            )),
        };
    };
    let Some(mut name) = spelled(start) else {
        return Err(Error::unsafe_(
            UnsafeReason::MissingMetadata,
            format!(
                "version-hint.text says {start} but metadata/ holds no {} (nor its gzip forms)",
                spellings(start)[0]
            ),
        ));
    };
    let mut n = start;
    while let Some(next) = n.checked_add(1).and_then(spelled) {
        n += 1;
        name = next;
    }
    let why = if n == start {
        format!("version-hint.text says {start}")
    } else {
        format!(
            "version-hint.text says {start}; versions up to {n} were committed after it was written"
        )
    };
    Ok((format!("{dir}{name}"), why))
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "s3://b/t";

    fn listing(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| format!("{T}/metadata/{n}")).collect()
    }

    fn current(hint: Option<&str>, names: &[&str]) -> Result<String> {
        current_metadata(T, hint.map(str::as_bytes), &listing(names)).map(|(u, _)| u)
    }

    #[test]
    fn names() {
        assert!(is_metadata_document("metadata/v1.metadata.json"));
        assert!(is_metadata_document("v1.gz.metadata.json"));
        assert!(is_metadata_document("00001-a.metadata.json.gz"));
        assert!(!is_metadata_document("v1.metadata.json.tmp"));
        assert_eq!(hadoop_version("v12.metadata.json"), Some(12));
        assert_eq!(hadoop_version("v2.gz.metadata.json"), Some(2));
        assert_eq!(hadoop_version("v3.metadata.json.gz"), Some(3));
        assert_eq!(hadoop_version("v0.metadata.json"), Some(0));
        for other in [
            "v01.metadata.json",
            "v.metadata.json",
            "vx.metadata.json",
            "1.metadata.json",
        ] {
            assert_eq!(hadoop_version(other), None, "{other}");
        }
    }

    #[test]
    fn the_hint_is_followed_forward_in_any_spelling() {
        let m = |n: &str| format!("{T}/metadata/{n}");
        assert_eq!(
            current(Some("1\n"), &["v1.metadata.json"]).unwrap(),
            m("v1.metadata.json")
        );
        // Only compressed documents (a table written with gzip metadata).
        assert_eq!(
            current(Some("2"), &["v1.gz.metadata.json", "v2.gz.metadata.json"]).unwrap(),
            m("v2.gz.metadata.json")
        );
        assert_eq!(
            current(Some("1"), &["v1.metadata.json.gz", "v2.metadata.json.gz"]).unwrap(),
            m("v2.metadata.json.gz")
        );
        // A lagging hint, spellings mixed, plain first for one version.
        let (u, why) = current_metadata(
            T,
            Some(b"1"),
            &listing(&[
                "v1.metadata.json",
                "v2.gz.metadata.json",
                "v3.metadata.json",
                "v3.gz.metadata.json",
            ]),
        )
        .unwrap();
        assert_eq!(u, m("v3.metadata.json"));
        assert!(why.contains("up to 3"), "{why}");
        // Keys in folders below metadata/ are not the table's versions.
        assert_eq!(
            current(Some("1"), &["v1.metadata.json", "old/v2.metadata.json"]).unwrap(),
            m("v1.metadata.json")
        );
    }

    #[test]
    fn without_a_usable_number_the_newest_listed_version() {
        let m = |n: &str| format!("{T}/metadata/{n}");
        assert_eq!(
            current(
                None,
                &[
                    "v1.metadata.json",
                    "v10.gz.metadata.json",
                    "v9.metadata.json",
                    "snap-1.avro"
                ]
            )
            .unwrap(),
            m("v10.gz.metadata.json")
        );
        assert_eq!(
            current(Some("latest"), &["v1.metadata.json", "v2.metadata.json"]).unwrap(),
            m("v2.metadata.json")
        );
    }

    #[test]
    fn refused() {
        let kind = |r: Result<String>| match r.unwrap_err() {
            Error::Malformed { .. } => "malformed",
            Error::Unsafe { reason, .. } => reason.as_str(),
            Error::InvalidOptions { .. } => "options",
            Error::Protocol { .. } => "protocol",
            e => panic!("{e}"),
        };
        assert_eq!(kind(current(Some(""), &["v1.metadata.json"])), "malformed");
        assert_eq!(
            kind(current(Some(" \n"), &["v1.metadata.json"])),
            "malformed"
        );
        assert_eq!(
            kind(current(
                Some("metadata/v1.metadata.json"),
                &["v1.metadata.json"]
            )),
            "malformed"
        );
        assert_eq!(
            kind(
                current_metadata(T, Some(&[0xff, 0x31]), &listing(&["v1.metadata.json"]))
                    .map(|x| x.0)
            ),
            "malformed"
        );
        assert_eq!(
            kind(current(
                Some("3"),
                &["v1.metadata.json", "v4.metadata.json"]
            )),
            "missing-metadata"
        );
        assert_eq!(kind(current(None, &["00001-a.metadata.json"])), "options");
        assert_eq!(kind(current(Some("x"), &[])), "options");
        assert_eq!(
            kind(
                current_metadata(
                    T,
                    Some(b"1"),
                    &["s3://b/other/metadata/v1.metadata.json".into()]
                )
                .map(|x| x.0)
            ),
            "protocol"
        );
        // u64::MAX walks no further (no overflow).
        let max = format!("v{}.metadata.json", u64::MAX);
        assert!(current(Some(&u64::MAX.to_string()), &[&max]).is_ok());
    }
}
