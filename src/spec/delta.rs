//! Delta Lake log parsing: actions from JSON commits and Parquet or JSON
//! checkpoints, `_delta_log/` file names, the protocol check, deletion-vector
//! file names and table-property durations.
//!
//! Paths in `add`, `remove` and `cdc` actions are URI-encoded, relative to the
//! table root or absolute; [`decode_path`] decodes them exactly once, so
//! `cat=100%2525` in the log is the directory `cat=100%25` in the store.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::codec::parquet::{Column, ParquetError, ParquetFile};
use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// Default `delta.deletedFileRetentionDuration`: 7 days, in milliseconds.
pub const DEFAULT_DELETED_FILE_RETENTION_MS: i64 = 7 * 86_400_000;
/// Default `delta.logRetentionDuration`: 30 days, in milliseconds.
pub const DEFAULT_LOG_RETENTION_MS: i64 = 30 * 86_400_000;

/// A deletion vector descriptor (`add.deletionVector`, `remove.deletionVector`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionVector {
    /// `u` (relative, UUID-named), `p` (absolute path) or `i` (inline).
    pub storage_type: String,
    /// Prefix + Z85 UUID, encoded absolute path, or inline bitmap.
    pub path_or_inline_dv: String,
    /// Start of the vector in the file (files may hold several).
    #[serde(default)]
    pub offset: Option<i64>,
}

/// The table's protocol action.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Protocol {
    /// Minimum reader version.
    pub min_reader_version: i64,
    /// Minimum writer version.
    pub min_writer_version: i64,
    /// Reader features (reader version 3).
    #[serde(default)]
    pub reader_features: Option<Vec<String>>,
    /// Writer features (writer version 7).
    #[serde(default)]
    pub writer_features: Option<Vec<String>>,
}

impl Protocol {
    /// True when the writer features name `f`.
    pub fn has_writer_feature(&self, f: &str) -> bool {
        self.writer_features
            .as_ref()
            .is_some_and(|v| v.iter().any(|x| x == f))
    }
}

/// The table's metaData action (the parts a collector needs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// The table id (a UUID).
    #[serde(default)]
    pub id: String,
    /// Partition column names.
    #[serde(default)]
    pub partition_columns: Vec<String>,
    /// Table properties.
    #[serde(default)]
    pub configuration: BTreeMap<String, Option<String>>,
}

impl Metadata {
    /// A table property, if set.
    pub fn property(&self, key: &str) -> Option<&str> {
        self.configuration.get(key).and_then(|v| v.as_deref())
    }
}

/// One log action the planner acts on. Other actions (txn, domainMetadata,
/// commitInfo details) are skipped. Its serde form is the one a checkpoint
/// digest carries (`{"Add":{"path":…}}`), not the log's own JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Action {
    /// A file added to the table.
    Add {
        /// Encoded path, as written in the log.
        path: String,
        /// Its deletion vector, if any.
        dv: Option<DeletionVector>,
    },
    /// A file removed from the table (a tombstone).
    Remove {
        /// Encoded path, as written in the log.
        path: String,
        /// When it was removed, milliseconds since the epoch (may be missing).
        deletion_timestamp: Option<i64>,
        /// The deletion vector the removed file had, if any.
        dv: Option<DeletionVector>,
    },
    /// A change-data file (`_change_data/...`).
    Cdc {
        /// Encoded path, as written in the log.
        path: String,
    },
    /// The protocol.
    Protocol(Protocol),
    /// The table metadata.
    Metadata(Metadata),
    /// A V2 checkpoint's sidecar file (name relative to `_delta_log/_sidecars/`).
    Sidecar {
        /// Encoded path of the sidecar file.
        path: String,
    },
    /// Commit information: its timestamp (or in-commit timestamp).
    CommitInfo {
        /// Milliseconds since the epoch.
        timestamp: Option<i64>,
    },
    /// A V2 checkpoint's `checkpointMetadata` action.
    CheckpointMetadata,
    /// Not an action: this Parquet checkpoint file has no
    /// `add.deletionVector` columns (fine unless the table uses deletion vectors).
    LacksDeletionVectorColumns,
}

#[derive(Deserialize)]
struct Line {
    add: Option<AddJ>,
    remove: Option<RemoveJ>,
    cdc: Option<PathJ>,
    protocol: Option<Protocol>,
    #[serde(rename = "metaData")]
    meta_data: Option<Metadata>,
    sidecar: Option<PathJ>,
    #[serde(rename = "commitInfo")]
    commit_info: Option<CommitInfoJ>,
    #[serde(rename = "checkpointMetadata")]
    checkpoint_metadata: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddJ {
    path: String,
    #[serde(default)]
    deletion_vector: Option<DeletionVector>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoveJ {
    path: String,
    #[serde(default)]
    deletion_timestamp: Option<i64>,
    #[serde(default)]
    deletion_vector: Option<DeletionVector>,
}

#[derive(Deserialize)]
struct PathJ {
    path: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CommitInfoJ {
    #[serde(default)]
    timestamp: Option<i64>,
    #[serde(default)]
    in_commit_timestamp: Option<i64>,
}

/// Parses newline-delimited JSON actions (a commit, a JSON V2 checkpoint or
/// a log compaction file). Any invalid line is an error: a half-read commit
/// would lose adds.
pub fn parse_json_actions(uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
    parse_json_lines(uri, bytes).map(|(actions, _)| actions)
}

/// Parses one commit file (`<v>.json`). Besides what
/// [`parse_json_actions`] refuses, a commit that is empty (0 bytes, or only
/// blank lines) or holds no action at all (only `{}` lines) is refused: it
/// is a partial or failed write, not a version without changes, and taking
/// it as one would lose the adds of the commit that should be there.
pub fn parse_commit(uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
    if bytes.is_empty() {
        return Err(Error::malformed(
            MalformedReason::PartialWrite,
            uri,
            "the commit file is empty (0 bytes): a partial or failed write, not a Delta version",
        ));
    }
    let (actions, action_lines) = parse_json_lines(uri, bytes)?;
    if action_lines == 0 {
        return Err(Error::malformed(
            MalformedReason::PartialWrite,
            uri,
            "the commit file holds no action: a partial or failed write, not a Delta version",
        ));
    }
    Ok(actions)
}

/// Parses JSON lines; also counts the lines that hold an action (a JSON
/// object with at least one key, known to this parser or not).
fn parse_json_lines(uri: &str, bytes: &[u8]) -> Result<(Vec<Action>, u64)> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::malformed(MalformedReason::Encoding, uri, format!("not UTF-8: {e}")))?;
    let mut out = Vec::new();
    let mut action_lines = 0u64;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let l: Line = serde_json::from_str(line).map_err(|e| {
            Error::malformed(
                MalformedReason::Encoding,
                uri,
                format!("line {}: {e}", n + 1),
            )
        })?;
        let before = out.len();
        if let Some(a) = l.add {
            out.push(Action::Add {
                path: a.path,
                dv: a.deletion_vector,
            });
        }
        if let Some(r) = l.remove {
            out.push(Action::Remove {
                path: r.path,
                deletion_timestamp: r.deletion_timestamp,
                dv: r.deletion_vector,
            });
        }
        if let Some(c) = l.cdc {
            out.push(Action::Cdc { path: c.path });
        }
        if let Some(p) = l.protocol {
            out.push(Action::Protocol(p));
        }
        if let Some(m) = l.meta_data {
            out.push(Action::Metadata(m));
        }
        if let Some(s) = l.sidecar {
            out.push(Action::Sidecar { path: s.path });
        }
        if l.checkpoint_metadata.is_some() {
            out.push(Action::CheckpointMetadata);
        }
        if let Some(c) = l.commit_info {
            out.push(Action::CommitInfo {
                timestamp: c.in_commit_timestamp.or(c.timestamp),
            });
        }
        // Actions this parser skips (txn, domainMetadata, ...) still count;
        // only lines like `{}` hold none. Parsed again only in that rare case.
        if out.len() > before
            || serde_json::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(line)
                .is_ok_and(|m| !m.is_empty())
        {
            action_lines += 1;
        }
    }
    Ok((out, action_lines))
}

fn pq_err(uri: &str, e: ParquetError) -> Error {
    match e {
        ParquetError::Corrupt(d) => {
            Error::malformed(MalformedReason::Encoding, uri, format!("parquet: {d}"))
        }
        ParquetError::Unsupported(f) => Error::unsupported(f, uri),
    }
}

/// Parses the actions of a log file that is not a commit (a checkpoint, a
/// part of one, a V2 checkpoint, a sidecar): Parquet when `uri` ends in
/// `.parquet`, else JSON lines. A session and a digest read them alike.
pub fn parse_checkpoint_file(uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
    if uri.ends_with(".parquet") {
        parse_parquet_actions(uri, bytes)
    } else {
        parse_json_actions(uri, bytes)
    }
}

/// Parses the actions of a Parquet checkpoint (classic, a part of a
/// multi-part checkpoint, a V2 checkpoint or a sidecar file).
pub fn parse_parquet_actions(uri: &str, bytes: &[u8]) -> Result<Vec<Action>> {
    let f = ParquetFile::open(bytes).map_err(|e| pq_err(uri, e))?;
    // A part of a multi-part checkpoint may hold any subset of the action
    // columns (Spark writes parts holding only `txn`): a file without an
    // `add` column holds no adds. But it must hold some action column,
    // and an `add` or `remove` group without its `path` is not one we can
    // read: its files would be lost.
    const ACTIONS: [&str; 10] = [
        "add",
        "remove",
        "metaData",
        "protocol",
        "txn",
        "domainMetadata",
        "commitInfo",
        "checkpointMetadata",
        "sidecar",
        "cdc",
    ];
    if !ACTIONS.iter().any(|a| f.has_column(&[a, "**"])) {
        return Err(Error::malformed(
            MalformedReason::Field,
            uri,
            "no Delta action column (add, remove, metaData, protocol, txn, …): not a Delta checkpoint",
        ));
    }
    for action in ["add", "remove", "sidecar"] {
        if f.has_column(&[action, "**"]) && !f.has_column(&[action, "path"]) {
            return Err(Error::malformed(
                MalformedReason::Field,
                uri,
                format!(
                    "a `{action}` column without `{action}.path`: not a Delta checkpoint (its files would be lost)"
                ),
            ));
        }
    }
    let mut out = Vec::new();
    if f.has_column(&["add", "path"]) && !f.has_column(&["add", "deletionVector", "storageType"]) {
        out.push(Action::LacksDeletionVectorColumns);
    }
    // Row group by row group: only one group's columns are decoded at a
    // time, so a checkpoint of millions of rows never holds every value of
    // every column at once (rows are numbered from the file's first).
    let mut base = 0usize;
    for group in 0..f.row_groups() {
        let col = |p: &[&str]| f.group_column(p, group).map_err(|e| pq_err(uri, e));
        let bad = |what: &str, row: usize| {
            Error::malformed(
                MalformedReason::Encoding,
                uri,
                format!("{what} of row {} is not a UTF-8 string", base + row),
            )
        };
        // A present value that is not a valid string is an error, never
        // "absent". Each value is read once: taken, not copied.
        let s = |c: &mut Column, row: usize, what: &str| -> Result<Option<String>> {
            match c.take(row) {
                None => Ok(None),
                Some(v) => v.into_string().map(Some).ok_or_else(|| bad(what, row)),
            }
        };
        let i = |c: &Column, row: usize| c.flat(row).and_then(|v| v.as_int());
        let strings = |c: &Column, row: usize, what: &str| -> Result<Vec<Option<String>>> {
            c.repeated(row)
                .iter()
                .map(|v| match v {
                    None => Ok(None),
                    Some(v) => v.as_str().map(Some).ok_or_else(|| bad(what, row)),
                })
                .collect()
        };
        let mut add_path = col(&["add", "path"])?;
        let mut add_dv = [
            col(&["add", "deletionVector", "storageType"])?,
            col(&["add", "deletionVector", "pathOrInlineDv"])?,
            col(&["add", "deletionVector", "offset"])?,
        ];
        let mut rm_path = col(&["remove", "path"])?;
        let rm_ts = col(&["remove", "deletionTimestamp"])?;
        let mut rm_dv = [
            col(&["remove", "deletionVector", "storageType"])?,
            col(&["remove", "deletionVector", "pathOrInlineDv"])?,
            col(&["remove", "deletionVector", "offset"])?,
        ];
        let mut sidecar = col(&["sidecar", "path"])?;
        let cp_meta = col(&["checkpointMetadata", "version"])?;
        let p_reader = col(&["protocol", "minReaderVersion"])?;
        let p_writer = col(&["protocol", "minWriterVersion"])?;
        let p_rf = col(&["protocol", "readerFeatures", "**"])?;
        let p_wf = col(&["protocol", "writerFeatures", "**"])?;
        let mut m_id = col(&["metaData", "id"])?;
        let m_parts = col(&["metaData", "partitionColumns", "**"])?;
        let m_keys = col(&["metaData", "configuration", "**", "key"])?;
        let m_vals = col(&["metaData", "configuration", "**", "value"])?;
        let has_rf = f.has_column(&["protocol", "readerFeatures", "**"]);
        let has_wf = f.has_column(&["protocol", "writerFeatures", "**"]);
        let dv_at =
            |cols: &mut [Column; 3], row: usize, what: &str| -> Result<Option<DeletionVector>> {
                match (
                    s(&mut cols[0], row, "deletionVector.storageType")?,
                    s(&mut cols[1], row, "deletionVector.pathOrInlineDv")?,
                ) {
                    (None, None) => Ok(None),
                    (Some(storage_type), Some(path_or_inline_dv)) => Ok(Some(DeletionVector {
                        storage_type,
                        path_or_inline_dv,
                        offset: i(&cols[2], row),
                    })),
                    _ => Err(Error::malformed(
                        MalformedReason::Field,
                        uri,
                        format!("{what}.deletionVector of row {} is half empty", base + row),
                    )),
                }
            };
        for row in 0..f.group_rows(group) {
            if let Some(path) = s(&mut add_path, row, "add.path")? {
                out.push(Action::Add {
                    path,
                    dv: dv_at(&mut add_dv, row, "add")?,
                });
            } else if let Some(path) = s(&mut rm_path, row, "remove.path")? {
                out.push(Action::Remove {
                    path,
                    deletion_timestamp: i(&rm_ts, row),
                    dv: dv_at(&mut rm_dv, row, "remove")?,
                });
            } else if let Some(path) = s(&mut sidecar, row, "sidecar.path")? {
                out.push(Action::Sidecar { path });
            } else if i(&cp_meta, row).is_some() {
                out.push(Action::CheckpointMetadata);
            } else if let Some(r) = i(&p_reader, row) {
                let feats =
                    |c: &Column, present: bool, what: &str| -> Result<Option<Vec<String>>> {
                        if !present {
                            return Ok(None);
                        }
                        Ok(Some(strings(c, row, what)?.into_iter().flatten().collect()))
                    };
                out.push(Action::Protocol(Protocol {
                    min_reader_version: r,
                    min_writer_version: i(&p_writer, row).unwrap_or(0),
                    reader_features: feats(&p_rf, has_rf && r >= 3, "protocol.readerFeatures")?,
                    writer_features: feats(&p_wf, has_wf, "protocol.writerFeatures")?,
                }));
            } else if let Some(id) = s(&mut m_id, row, "metaData.id")? {
                let keys = strings(&m_keys, row, "metaData.configuration")?;
                let vals = strings(&m_vals, row, "metaData.configuration")?;
                if keys.len() != vals.len() {
                    return Err(Error::malformed(
                        MalformedReason::Inconsistent,
                        uri,
                        "metaData.configuration keys and values differ in number",
                    ));
                }
                let mut configuration = BTreeMap::new();
                for (k, v) in keys.into_iter().zip(vals) {
                    let Some(k) = k else {
                        return Err(Error::malformed(
                            MalformedReason::Field,
                            uri,
                            "null configuration key",
                        ));
                    };
                    configuration.insert(k, v);
                }
                out.push(Action::Metadata(Metadata {
                    id,
                    partition_columns: strings(&m_parts, row, "metaData.partitionColumns")?
                        .into_iter()
                        .flatten()
                        .collect(),
                    configuration,
                }));
            }
        }
        base += f.group_rows(group);
    }
    Ok(out)
}

pub fn check_protocol(uri: &str, p: &Protocol) -> Result<()> {
    if !(1..=3).contains(&p.min_reader_version) {
        return Err(Error::unsupported(
            format!("Delta reader version {}", p.min_reader_version),
            uri,
        ));
    }
    if !(1..=7).contains(&p.min_writer_version) {
        return Err(Error::unsupported(
            format!("Delta writer version {}", p.min_writer_version),
            uri,
        ));
    }
    // Each feature once, decided by the table in `delta_feature`.
    let listed = p
        .reader_features
        .iter()
        .flatten()
        .map(|f| (f, true))
        .chain(p.writer_features.iter().flatten().map(|f| (f, false)));
    for (f, reader) in listed {
        if let Some(why) = super::delta_feature::refusal(f, reader) {
            return Err(Error::unsupported(why, uri));
        }
    }
    Ok(())
}

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

const Z85: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

/// Decodes Z85 text (a multiple of 5 characters) into bytes.
pub fn z85_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if b.len() % 5 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 5 * 4);
    for chunk in b.chunks(5) {
        let mut v: u64 = 0;
        for &c in chunk {
            let d = Z85.iter().position(|&z| z == c)? as u64;
            v = v * 85 + d;
        }
        if v > u64::from(u32::MAX) {
            return None;
        }
        out.extend_from_slice(&(v as u32).to_be_bytes());
    }
    Some(out)
}

/// The file a deletion vector lives in, or `None` for inline vectors.
pub fn dv_file(uri: &str, dv: &DeletionVector) -> Result<Option<LogPath>> {
    match dv.storage_type.as_str() {
        "i" => Ok(None),
        "p" => {
            if !is_absolute(&dv.path_or_inline_dv) {
                return Err(Error::malformed(MalformedReason::Path,
                    uri,
                    format!(
                        "deletion vector of storage type p names `{}`, which is not an absolute path",
                        dv.path_or_inline_dv
                    ),
                ));
            }
            LogPath::parse(uri, &dv.path_or_inline_dv).map(Some)
        }
        "u" => {
            let s = &dv.path_or_inline_dv;
            if s.len() < 20 || !s.is_char_boundary(s.len() - 20) {
                return Err(Error::malformed(
                    MalformedReason::Path,
                    uri,
                    format!("deletion vector `{s}` is shorter than a Z85 UUID"),
                ));
            }
            let (prefix, id) = s.split_at(s.len() - 20);
            let Some(bytes) = z85_decode(id) else {
                return Err(Error::malformed(
                    MalformedReason::Path,
                    uri,
                    format!("deletion vector `{s}`: invalid Z85 UUID"),
                ));
            };
            let h: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let name = format!(
                "deletion_vector_{}-{}-{}-{}-{}.bin",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            );
            Ok(Some(LogPath::Relative(if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            })))
        }
        t => Err(Error::unsupported(
            format!("deletion vector storage type `{t}`"),
            uri,
        )),
    }
}

/// Parses a Delta interval property (`interval 7 days`, `168 hours`,
/// `interval 1 week 2 days`) into milliseconds. Months and years have no
/// fixed length and are refused, as Delta refuses them.
pub fn parse_interval(text: &str) -> Option<i64> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_prefix("interval").unwrap_or(&t);
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.is_empty() || words.len() % 2 != 0 {
        return None;
    }
    let mut total: i64 = 0;
    for pair in words.chunks(2) {
        let n: i64 = pair[0].parse().ok()?;
        let unit = pair[1].trim_end_matches('s');
        let ms: f64 = match unit {
            "nanosecond" => 1e-6,
            "microsecond" => 1e-3,
            "millisecond" => 1.0,
            "second" => 1e3,
            "minute" => 6e4,
            "hour" => 3.6e6,
            "day" => 8.64e7,
            "week" => 6.048e8,
            _ => return None,
        };
        total = total.checked_add((n as f64 * ms) as i64)?;
    }
    (total >= 0).then_some(total)
}

/// What a name directly under `_delta_log/` is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogFile {
    /// `<v>.json`: a commit.
    Commit(u64),
    /// `<v>.checkpoint.parquet`: a classic single-file checkpoint.
    Checkpoint(u64),
    /// `<v>.checkpoint.<part>.<parts>.parquet`: one part of a multi-part checkpoint.
    CheckpointPart {
        /// Checkpoint version.
        version: u64,
        /// 1-based part number.
        part: u64,
        /// Number of parts.
        parts: u64,
    },
    /// `<v>.checkpoint.<uuid>.json|parquet`: a V2 checkpoint.
    CheckpointV2 {
        /// Checkpoint version.
        version: u64,
        /// True for `.json`, false for `.parquet`.
        json: bool,
    },
    /// `<v>.crc`: a checksum file.
    Crc(u64),
    /// `<a>.<b>.compacted.json`: a log compaction file.
    Compacted {
        /// First version covered.
        from: u64,
        /// Last version covered.
        to: u64,
    },
    /// `_last_checkpoint`.
    LastCheckpoint,
    /// Anything else (`_sidecars/...`, `_staged_commits/...`, temporary files).
    Other,
}

fn version(s: &str) -> Option<u64> {
    (s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Classifies a name relative to `_delta_log/`.
pub fn log_file(name: &str) -> LogFile {
    if name == "_last_checkpoint" {
        return LogFile::LastCheckpoint;
    }
    if name.contains('/') {
        return LogFile::Other;
    }
    let parts: Vec<&str> = name.split('.').collect();
    match parts.as_slice() {
        [v, "json"] => version(v).map(LogFile::Commit),
        [v, "crc"] => version(v).map(LogFile::Crc),
        [v, "checkpoint", "parquet"] => version(v).map(LogFile::Checkpoint),
        [v, "checkpoint", p, n, "parquet"] if p.len() == 10 && n.len() == 10 => {
            match (version(v), p.parse::<u64>(), n.parse::<u64>()) {
                (Some(version), Ok(part), Ok(parts)) if part >= 1 && part <= parts => {
                    Some(LogFile::CheckpointPart {
                        version,
                        part,
                        parts,
                    })
                }
                _ => None,
            }
        }
        [v, "checkpoint", id, ext @ ("json" | "parquet")] if id.len() == 36 => {
            version(v).map(|version| LogFile::CheckpointV2 {
                version,
                json: *ext == "json",
            })
        }
        [a, b, "compacted", "json"] => match (version(a), version(b)) {
            (Some(from), Some(to)) if from <= to => Some(LogFile::Compacted { from, to }),
            _ => None,
        },
        _ => None,
    }
    .unwrap_or(LogFile::Other)
}

/// The identity of the newest commit a plan was made on (or, for a log
/// holding only a checkpoint, of that checkpoint's first file): enough for a
/// host to tell, before deleting, that the commit it finds now is the same
/// object, not just one with the same version number (a commit rewritten in
/// place, or a table dropped and recreated).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct CommitIdentity {
    /// The version it defines.
    pub version: u64,
    /// Its URI (`<location>/_delta_log/<name>`).
    pub uri: String,
    /// Its size in bytes.
    pub size: u64,
    /// Last-modified time as listed, milliseconds since the Unix epoch
    /// (`None` for a commit found by the re-check read, which is not listed).
    #[serde(default)]
    pub last_modified_ms: Option<i64>,
    /// Entity tag as listed, if the store gave one.
    #[serde(default)]
    pub etag: Option<String>,
}

/// The file name of commit `v`.
pub fn commit_name(v: u64) -> String {
    format!("{v:020}.json")
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

    #[test]
    fn deletion_vector_file_names() {
        // From the Delta protocol's example: prefix "ab", UUID d2c639aa-8816-431a-aaf6-d3fe2512ff61.
        let dv = DeletionVector {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(4),
        };
        assert_eq!(
            dv_file("u", &dv).unwrap().unwrap(),
            LogPath::Relative("ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin".into())
        );
        let inline = DeletionVector {
            storage_type: "i".into(),
            path_or_inline_dv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L".into(),
            offset: None,
        };
        assert_eq!(dv_file("u", &inline).unwrap(), None);
        let abs = DeletionVector {
            storage_type: "p".into(),
            path_or_inline_dv: "s3://b/t/dv%20x.bin".into(),
            offset: None,
        };
        assert_eq!(
            dv_file("u", &abs).unwrap().unwrap(),
            LogPath::Absolute("s3://b/t/dv x.bin".into())
        );
        let rel_p = DeletionVector {
            storage_type: "p".into(),
            path_or_inline_dv: "dv.bin".into(),
            offset: None,
        };
        assert!(dv_file("u", &rel_p).is_err());
        let short = DeletionVector {
            storage_type: "u".into(),
            path_or_inline_dv: "abc".into(),
            offset: None,
        };
        assert!(dv_file("u", &short).is_err());
        let odd = DeletionVector {
            storage_type: "x".into(),
            path_or_inline_dv: String::new(),
            offset: None,
        };
        assert!(matches!(dv_file("u", &odd), Err(Error::Unsupported { .. })));
    }

    #[test]
    fn log_file_names() {
        let v = "00000000000000000010";
        assert_eq!(log_file(&format!("{v}.json")), LogFile::Commit(10));
        assert_eq!(log_file(&format!("{v}.crc")), LogFile::Crc(10));
        assert_eq!(
            log_file(&format!("{v}.checkpoint.parquet")),
            LogFile::Checkpoint(10)
        );
        assert_eq!(
            log_file(&format!("{v}.checkpoint.0000000002.0000000003.parquet")),
            LogFile::CheckpointPart {
                version: 10,
                part: 2,
                parts: 3
            }
        );
        assert_eq!(
            log_file(&format!(
                "{v}.checkpoint.f5ee283b-37c7-46af-b64c-8f77c6a5c43a.json"
            )),
            LogFile::CheckpointV2 {
                version: 10,
                json: true
            }
        );
        assert_eq!(
            log_file(&format!("{v}.00000000000000000012.compacted.json")),
            LogFile::Compacted { from: 10, to: 12 }
        );
        assert_eq!(log_file("_last_checkpoint"), LogFile::LastCheckpoint);
        assert_eq!(log_file("10.json"), LogFile::Other);
        assert_eq!(log_file("_sidecars/x.parquet"), LogFile::Other);
        assert_eq!(log_file(&format!(".{v}.json.tmp")), LogFile::Other);
        assert_eq!(commit_name(10), format!("{v}.json"));
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("interval 7 days"), Some(7 * 86_400_000));
        assert_eq!(parse_interval("interval 1 week"), Some(7 * 86_400_000));
        assert_eq!(parse_interval("168 hours"), Some(7 * 86_400_000));
        assert_eq!(parse_interval("interval 1 day 2 hours"), Some(93_600_000));
        assert_eq!(parse_interval("interval 1 month"), None);
        assert_eq!(parse_interval("seven days"), None);
        assert_eq!(parse_interval(""), None);
    }

    #[test]
    fn protocol_features() {
        let ok = Protocol {
            min_reader_version: 3,
            min_writer_version: 7,
            reader_features: Some(vec!["deletionVectors".into()]),
            writer_features: Some(vec!["deletionVectors".into(), "appendOnly".into()]),
        };
        check_protocol("u", &ok).unwrap();
        let unknown = Protocol {
            reader_features: Some(vec!["deletionVectors".into(), "fancyNewThing".into()]),
            ..ok.clone()
        };
        let e = check_protocol("u", &unknown).unwrap_err();
        assert!(e.to_string().contains("fancyNewThing"), "{e}");
        let catalog = Protocol {
            writer_features: Some(vec!["catalogManaged".into()]),
            ..ok.clone()
        };
        assert!(check_protocol("u", &catalog).is_err());
        let v4 = Protocol {
            min_reader_version: 4,
            ..ok
        };
        assert!(check_protocol("u", &v4).is_err());
    }

    #[test]
    fn json_actions_and_errors() {
        let text = br#"{"commitInfo":{"timestamp":5}}
{"add":{"path":"a%20b.parquet","size":1,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":3,"cardinality":1}}}
{"remove":{"path":"c.parquet","dataChange":true}}
{"cdc":{"path":"_change_data/x.parquet","size":3}}
{"txn":{"appId":"x","version":1}}
"#;
        let a = parse_json_actions("u", text).unwrap();
        assert_eq!(a.len(), 4);
        assert!(matches!(
            &a[2],
            Action::Remove {
                deletion_timestamp: None,
                ..
            }
        ));
        assert!(parse_json_actions("u", b"{\"add\":{\"path\":1}}").is_err());
        assert!(parse_json_actions("u", b"{\"add\":").is_err());
    }

    #[test]
    fn commits_that_are_empty_hold_nothing_or_do_not_parse_are_refused() {
        for bad in [
            &b""[..],
            b"\n\n",
            b"  \n",
            b"{}\n{}",
            b"{\"add\":",
            b"PAR1\x00\x01",
        ] {
            let e = parse_commit("s3://b/t/_delta_log/00000000000000000002.json", bad).unwrap_err();
            assert!(matches!(e, Error::Malformed { .. }), "{e}");
            assert!(e.to_string().contains("00000000000000000002.json"), "{e}");
        }
        // A commit holding only actions this parser skips is a commit.
        assert!(
            parse_commit("u", b"{\"txn\":{\"appId\":\"x\",\"version\":1}}\n")
                .unwrap()
                .is_empty()
        );
        assert_eq!(parse_commit("u", b"{\"commitInfo\":{}}").unwrap().len(), 1);
    }
}
