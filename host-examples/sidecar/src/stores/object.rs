//! The stores' shared vocabulary: an object as the planner sees it, what a
//! delete or a create-if-absent answered, a listing's batches, and the
//! forms of an entity tag and a content identity. Every store speaks it;
//! it depends on no store.

use crate::error::HostError;
use futures::stream::BoxStream;
use futures::StreamExt;

/// The URI of a plan or ledger key: keys under the table's other write
/// roots are absolute URIs already (the planner never gives a table-relative
/// key holding `://`), the others are relative to `table`.
pub fn object_uri(table: &str, key: &str) -> String {
    if key.contains("://") {
        key.to_owned()
    } else {
        format!("{table}/{key}")
    }
}

/// One answer of [`crate::stores::Store::delete_run`]: `Err` when no request was made,
/// else what the store said (`Err`: unknown, it may have been carried out).
pub type DeleteAnswer = Result<Result<Deleted, HostError>, HostError>;

/// The conditions a delete is made under, each sent where the store can
/// enforce it (the deletion session sets them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Condition {
    /// The entity tag the object must still have (S3 `If-Match`).
    pub if_match: Option<String>,
    /// The version id it must still be (GCS `ifGenerationMatch`).
    pub if_version: Option<String>,
}

/// What a delete did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// False when the store said the object was already gone (S3 answers
    /// success either way).
    pub existed: bool,
    /// Versioned buckets: the version id of the delete marker the delete
    /// created (the deleted version stays, under it, when it had an id).
    pub delete_marker: Option<String>,
    /// True when a conditional delete found another version: nothing was
    /// deleted.
    pub changed: bool,
}

/// One message of a listing task: a batch of objects (sent a batch at a
/// time, so the receiver is not woken for every object), the listing's
/// explicit end (`Ok(None)`), or its failure.
pub type Batch = Result<Option<Vec<Object>>, HostError>;

/// Streams a listing task's objects until its explicit end (`Ok(None)`): a
/// task that stops without one (a panic) ends the stream with an error, so
/// a cut listing is never taken for a whole one.
pub fn until_end(
    rx: tokio::sync::mpsc::Receiver<Batch>,
    what: &'static str,
) -> BoxStream<'static, Result<Object, HostError>> {
    futures::stream::unfold(Some(rx), move |rx| async move {
        let mut rx = rx?;
        match rx.recv().await {
            Some(Ok(Some(batch))) => Some((Ok(batch), Some(rx))),
            Some(Ok(None)) => None,
            Some(Err(e)) => Some((Err(e), None)),
            None => Some((
                Err(store_err!(
                    "{what} stopped before its end (internal error): no plan"
                )),
                None,
            )),
        }
    })
    .flat_map(one_by_one)
    .boxed()
}

/// A batch of objects, or a failure, as a stream of objects (for
/// `flat_map` over a stream of batches).
pub fn one_by_one(
    batch: Result<Vec<Object>, HostError>,
) -> impl futures::Stream<Item = Result<Object, HostError>> {
    match batch {
        Ok(v) => futures::stream::iter(v.into_iter().map(Ok)).left_stream(),
        Err(e) => futures::stream::once(async move { Err(e) }).right_stream(),
    }
}

/// Why a create-if-absent failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateError {
    /// The object exists already.
    Exists,
    /// Anything else (permissions, the network, a bad path), in words.
    Other(String),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::Exists => f.write_str("it exists already"),
            CreateError::Other(e) => f.write_str(e),
        }
    }
}

/// One listed or inspected object, in the planner's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Absolute URI (`file:///...`, `s3://bucket/key`).
    pub uri: String,
    /// Size in bytes.
    pub size: u64,
    /// Last modification, milliseconds since the Unix epoch.
    pub last_modified_ms: i64,
    /// ETag, where the store gives one.
    pub etag: Option<String>,
    /// Version id, where the store gives one (versioned buckets).
    pub version_id: Option<String>,
    /// Listed by its name alone ([`crate::stores::Store::list_names`]): its size and time
    /// were not read, and stand at 0 and `i64::MAX` (a time that keeps it,
    /// as brand new, wherever it is judged by mistake).
    pub named_only: bool,
}

impl Object {
    /// An object listed by its name alone (see [`Object::named_only`]).
    pub fn named(uri: String) -> Object {
        Object {
            uri,
            size: 0,
            last_modified_ms: i64::MAX,
            etag: None,
            version_id: None,
            named_only: true,
        }
    }

    /// Bytes the object holds in memory, about: its strings and a fixed
    /// overhead (the struct and its allocations).
    pub fn held_bytes(&self) -> usize {
        96 + self.uri.len()
            + self.etag.as_ref().map_or(0, String::len)
            + self.version_id.as_ref().map_or(0, String::len)
    }

    /// The object's version, in the component's terms.
    pub fn version(&self) -> crate::component::wt::ObjectVersion {
        crate::component::wt::ObjectVersion {
            size: self.size,
            last_modified_ms: self.last_modified_ms,
            etag: self.etag.clone(),
            version_id: self.version_id.clone(),
        }
    }
}

/// An ETag in its one quoted form (`"x"`, or `W/"x"` for a weak tag):
/// stores differ in whether they quote it, even between their own listing
/// and HEAD answers (Azure's listing through `object_store` gives `0x8D..`,
/// its HEAD `"0x8D.."`), and a pinned version must compare equal to itself.
pub fn etag_form(e: String) -> String {
    if e.starts_with('"') || e.starts_with("W/\"") {
        e
    } else {
        format!("\"{e}\"")
    }
}

/// The listed object `m`, named `uri`.
pub fn object_of(uri: String, m: object_store::ObjectMeta) -> Object {
    Object {
        uri,
        size: m.size,
        last_modified_ms: m.last_modified.timestamp_millis(),
        etag: m.e_tag.map(etag_form),
        version_id: m.version,
        named_only: false,
    }
}

/// An object store's content identity (see [`crate::stores::Store::content_id`]): size,
/// quoted ETag and version id; `None` without a size or a non-empty ETag
/// (an empty tag would leave the size alone to tell versions apart).
pub fn content_id_of(size: i64, etag: Option<&str>, version: Option<&str>) -> Option<String> {
    let etag = etag_form(etag?.to_owned());
    if etag.trim_start_matches("W/").trim_matches('"').is_empty() {
        return None;
    }
    let version = version.filter(|v| *v != "null").unwrap_or("");
    (size >= 0).then(|| format!("object:{size}:{etag}:{version}"))
}
