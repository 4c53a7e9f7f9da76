//! Checkpoints: the actions of a log file that is not a commit (a classic
//! or multi-part Parquet checkpoint, a V2 checkpoint, a sidecar), read a
//! row group at a time.

use std::collections::BTreeMap;

use super::{parse_json_actions, Action, DeletionVector, Metadata, Protocol};
use crate::codec::parquet::{Column, ParquetError, ParquetFile};
use crate::error::MalformedReason;
use crate::error::{Error, Result};

/// A Parquet reader's error as the core's, naming `uri`.
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
