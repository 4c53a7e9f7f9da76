//! Object-store access: the local file system by default; S3 and
//! S3-compatible endpoints (`s3://`, `s3a://`, `s3n://`) through the AWS SDK
//! ([`crate::stores::s3`]), which addresses every key S3 allows byte for byte; GCS
//! (`gs://`) and Azure (`az://`, `abfs[s]://`) through the `object_store`
//! crate. Credentials and endpoints come from the usual environment
//! variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
//!
//! The planner speaks URIs; this module maps them to store keys and back
//! without changing a byte of the key. S3 keys are taken literally, `//`,
//! trailing `/` and all. `object_store` (GCS, Azure) cannot address a key
//! with an empty segment: such a key stops that listing (no plan) rather
//! than being misread. Local files are served with `std::fs` rather than
//! `object_store`'s `LocalFileSystem`, whose listing percent-decodes file
//! names (a directory `category=100%25`, as pyiceberg writes it, is listed
//! as `category=100%`, and a delete of that path would address another
//! file): the encoded-versus-decoded trap docs/design.md warns about, caught by
//! this project's fixture tests.

pub mod ahead;
#[cfg(feature = "cloud")]
pub mod gcs;
pub mod http;
pub mod listing;
pub mod local;
pub mod object;
#[cfg(feature = "cloud")]
pub mod s3;

use crate::error::HostError;
use std::sync::Arc;
#[cfg(feature = "cloud")]
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use object_store::path::Path;
#[cfg(feature = "cloud")]
use object_store::{BackoffConfig, RetryConfig};
use object_store::{ObjectStore, ObjectStoreExt};

use crate::clock::clock_ms;
use local::{
    list_local, local_id, local_object, look_up_files, settled, walk_threads, Folders, Walked,
};
pub use object::{
    content_id_of, object_of, object_uri, Batch, Condition, CreateError, DeleteAnswer, Deleted,
    Object,
};

/// HEADs or DELETEs one blocking task carries on a local disk.
const LOCAL_RUN: usize = 256;

/// A local delete's answer: a file has no versions and no markers.
fn local_gone(existed: bool) -> Deleted {
    Deleted {
        existed,
        delete_marker: None,
        changed: false,
    }
}

#[derive(Clone)]
#[cfg_attr(not(feature = "cloud"), allow(dead_code))]
enum Kind {
    Local,
    /// S3 through the AWS SDK.
    #[cfg(feature = "cloud")]
    S3(Arc<crate::stores::s3::Bucket>),
    /// GCS through its JSON API (names byte for byte, generations).
    #[cfg(feature = "cloud")]
    Gcs(Arc<crate::stores::gcs::Bucket>),
    /// GCS or Azure through `object_store`; listed through its
    /// paginated listing (the same store).
    Bucket(Arc<dyn object_store::list::PaginatedListStore>),
}

/// A store holding one table, with the URI prefix its paths live under.
#[derive(Clone)]
pub struct Store {
    /// The bucket store (unused for local files).
    inner: Arc<dyn ObjectStore>,
    kind: Kind,
    /// Schemes that name this store (`s3`, `s3a`, `s3n`; `file`).
    schemes: &'static [&'static str],
    /// Bucket or container (empty for local).
    authority: String,
    /// Scheme used for URIs we produce.
    scheme: &'static str,
    /// Keys a listing found but could not represent (not UTF-8 once
    /// decoded), as the store spelled them: kept and reported.
    skipped: Arc<std::sync::Mutex<Vec<String>>>,
}

/// Retries for HTTP stores: throttling, 5xx and timeouts back off
/// exponentially, for at most ten attempts or two minutes per request.
#[cfg(feature = "cloud")]
fn retry() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(15),
            base: 2.0,
        },
        max_retries: 10,
        retry_timeout: Duration::from_secs(120),
    }
}

/// Splits `scheme://authority/rest` (rest without the leading slash).
fn split_uri(uri: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = uri.split_once("://")?;
    let (auth, path) = rest.split_once('/').unwrap_or((rest, ""));
    Some((scheme, auth, path))
}

/// Turns a local path (absolute or relative) or `file:` URI into `file:///abs`.
pub fn local_uri(arg: &str) -> Result<String, HostError> {
    let p = arg
        .strip_prefix("file://")
        .or_else(|| arg.strip_prefix("file:"))
        .unwrap_or(arg);
    let p = std::path::Path::new(p);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| store_err!("current directory: {e}"))?
            .join(p)
    };
    let s = abs
        .to_str()
        .ok_or_else(|| store_err!("`{arg}` is not valid UTF-8"))?;
    // Normalise `.` and `..` lexically so the planner sees one spelling.
    let mut parts: Vec<&str> = Vec::new();
    for seg in s.split('/').filter(|x| !x.is_empty()) {
        match seg {
            "." => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    Ok(format!("file:///{}", parts.join("/")))
}

/// The URI of a table argument: remote URIs unchanged (trailing slash
/// dropped), anything else a local path. A file of a table given in its
/// place (a metadata document, the version hint, a Delta log entry, or any
/// local file) is refused with the location to give instead.
pub fn table_uri(arg: &str) -> Result<String, HostError> {
    let uri = match split_uri(arg) {
        Some(("file", _, _)) | None => local_uri(arg)?,
        Some(_) => arg.trim_end_matches('/').to_owned(),
    };
    not_a_table_file(arg, &uri)?;
    Ok(uri)
}

/// Reads a whole document (a fleet document, another job's list) named by
/// a URI or a local path, as UTF-8 text; a missing one is an error naming it.
pub async fn read_document(arg: &str) -> Result<String, HostError> {
    let uri = document_uri(arg)?;
    let bytes = Store::for_uri(&uri)?
        .read(&uri)
        .await?
        .ok_or_else(|| store_err!("no document at {arg}"))?;
    String::from_utf8(bytes).map_err(|_| store_err!("{arg} is not UTF-8 text"))
}

/// Writes a whole document over the one [`read_document`] reads at `arg`.
pub async fn write_document(arg: &str, text: String) -> Result<(), HostError> {
    let uri = document_uri(arg)?;
    Store::for_uri(&uri)?
        .overwrite(&uri, text.into_bytes())
        .await
}

/// The URI of a document named by a URI or a local path.
fn document_uri(arg: &str) -> Result<String, HostError> {
    Ok(match split_uri(arg) {
        Some(("file", _, _)) | None => local_uri(arg)?,
        Some(_) => arg.to_owned(),
    })
}

/// Refuses a table argument that names one of a table's files.
fn not_a_table_file(arg: &str, uri: &str) -> Result<(), HostError> {
    let (parent, name) = uri.rsplit_once('/').unwrap_or(("", uri));
    let table_of_metadata = parent.strip_suffix("/metadata").unwrap_or(parent);
    if name.ends_with(".metadata.json") || name.ends_with(".metadata.json.gz") {
        return Err(store_err!(
            "`{arg}` is a metadata file, not a table: give the table's location and name the file with --metadata (lakesweep plan {table_of_metadata} --metadata {arg})"
        ));
    }
    if name == "version-hint.text" {
        return Err(store_err!(
            "`{arg}` is the table's version hint, not the table: give the table's location ({table_of_metadata})"
        ));
    }
    if let Some((table, _)) = uri.split_once("/_delta_log") {
        return Err(store_err!(
            "`{arg}` is inside a Delta log, not a table: give the table's location ({table})"
        ));
    }
    if let Some(path) = uri.strip_prefix("file://") {
        if std::path::Path::new(path).is_file() {
            return Err(store_err!(
                "`{arg}` is a file, not a table folder: give the folder the table lives in"
            ));
        }
    }
    Ok(())
}

impl Store {
    /// Opens the store that holds `uri` (the table location).
    /// This store when it holds `uri`, else a store for `uri`'s own bucket
    /// or file system (a table's other write roots may live elsewhere).
    pub fn holding(&self, uri: &str) -> Result<Store, HostError> {
        match split_uri(uri) {
            Some((scheme, auth, _)) if self.schemes.contains(&scheme) && auth == self.authority => {
                Ok(self.clone())
            }
            _ => Store::for_uri(uri),
        }
    }

    #[cfg_attr(not(feature = "cloud"), allow(unused_variables))]
    pub fn for_uri(uri: &str) -> Result<Store, HostError> {
        let (scheme, auth, _) =
            split_uri(uri).ok_or_else(|| store_err!("`{uri}` is not a URI (scheme://...)"))?;
        match scheme {
            "file" => Ok(Store {
                inner: Arc::new(object_store::memory::InMemory::new()),
                kind: Kind::Local,
                schemes: &["file"],
                authority: String::new(),
                scheme: "file",
                skipped: Arc::default(),
            }),
            #[cfg(feature = "cloud")]
            "s3" | "s3a" | "s3n" => {
                if auth.is_empty() {
                    return Err(store_err!("`{uri}` names no bucket"));
                }
                Ok(Store {
                    inner: Arc::new(object_store::memory::InMemory::new()),
                    kind: Kind::S3(Arc::new(crate::stores::s3::Bucket::new(auth))),
                    schemes: &["s3", "s3a", "s3n"],
                    authority: auth.to_owned(),
                    scheme: "s3",
                    skipped: Arc::default(),
                })
            }
            #[cfg(feature = "cloud")]
            "gs" => {
                if auth.is_empty() {
                    return Err(store_err!("`{uri}` names no bucket"));
                }
                Ok(Store {
                    inner: Arc::new(object_store::memory::InMemory::new()),
                    kind: Kind::Gcs(Arc::new(crate::stores::gcs::Bucket::new(auth))),
                    schemes: &["gs"],
                    authority: auth.to_owned(),
                    scheme: "gs",
                    skipped: Arc::default(),
                })
            }
            #[cfg(feature = "cloud")]
            "az" | "abfs" | "abfss" => {
                let err = |e: object_store::Error| format!("open store for {uri}: {e}");
                let az = Arc::new(
                    object_store::azure::MicrosoftAzureBuilder::from_env()
                        .with_url(uri)
                        .with_retry(retry())
                        .build()
                        .map_err(err)?,
                );
                // Listed keys keep the table's own spelling of the scheme.
                let scheme = match scheme {
                    "az" => "az",
                    "abfs" => "abfs",
                    _ => "abfss",
                };
                Ok(Store {
                    inner: az.clone(),
                    kind: Kind::Bucket(az),
                    schemes: &["az", "abfs", "abfss"],
                    authority: auth.to_owned(),
                    scheme,
                    skipped: Arc::default(),
                })
            }
            #[cfg(not(feature = "cloud"))]
            "s3" | "s3a" | "s3n" | "gs" | "az" | "abfs" | "abfss" => Err(store_err!(
                "`{scheme}://`: this lakesweep was built without the cloud stores (the demo's build); build it with them: cargo install --path host-examples/sidecar"
            )),
            other => Err(store_err!(
                "`{other}://` is not supported (file, s3, s3a, s3n, gs, az, abfs, abfss)"
            )),
        }
    }

    /// The store path of `uri`, or why it is not in this store.
    pub fn path(&self, uri: &str) -> Result<Path, HostError> {
        let (scheme, auth, rest) =
            split_uri(uri).ok_or_else(|| store_err!("`{uri}` is not a URI"))?;
        if !self.schemes.contains(&scheme) || auth != self.authority {
            return Err(store_err!(
                "`{uri}` is not in the table's store ({}://{})",
                self.scheme,
                self.authority
            ));
        }
        if rest
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..")
            && !rest.is_empty()
        {
            return Err(store_err!(
                "`{uri}` has an empty, `.` or `..` path segment, which object stores cannot address"
            ));
        }
        Path::parse(rest).map_err(|e| store_err!("`{uri}`: {e}"))
    }

    /// The S3 key of `uri`: everything after `bucket/`, byte for byte.
    #[cfg_attr(not(feature = "cloud"), allow(dead_code))]
    fn key<'a>(&self, uri: &'a str) -> Result<&'a str, HostError> {
        let (scheme, auth, rest) =
            split_uri(uri).ok_or_else(|| store_err!("`{uri}` is not a URI"))?;
        if !self.schemes.contains(&scheme) || auth != self.authority {
            return Err(store_err!(
                "`{uri}` is not in the table's store ({}://{})",
                self.scheme,
                self.authority
            ));
        }
        Ok(rest)
    }

    /// Takes the keys the listings so far found but could not represent,
    /// as the store spelled them (never deleted: no reference can name
    /// them), sorted (a local walk finds them in no particular order).
    pub fn take_unrepresentable(&self) -> Vec<String> {
        let mut v = self
            .skipped
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Takes what the store's client has to tell the run (a fallback it took).
    pub fn take_notes(&self) -> Vec<String> {
        match &self.kind {
            #[cfg(feature = "cloud")]
            Kind::S3(b) => b
                .notes
                .lock()
                .map(|mut v| std::mem::take(&mut *v))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The local file of a `file:` URI, byte for byte (no decoding).
    fn file(&self, uri: &str) -> Result<std::path::PathBuf, HostError> {
        self.path(uri)?;
        let rest = uri
            .strip_prefix("file://")
            .ok_or_else(|| store_err!("`{uri}` is not a file:// URI"))?;
        Ok(std::path::PathBuf::from(rest))
    }

    /// The URI of a bucket path (the inverse of [`Store::path`]).
    pub fn uri(&self, p: &Path) -> String {
        format!("{}://{}/{}", self.scheme, self.authority, p.as_ref())
    }

    fn object(&self, m: object_store::ObjectMeta) -> Object {
        object_of(self.uri(&m.location), m)
    }

    /// Reads a whole object; `Ok(None)` when it does not exist.
    pub async fn read(&self, uri: &str) -> Result<Option<Vec<u8>>, HostError> {
        if matches!(self.kind, Kind::Local) {
            return match tokio::fs::read(self.file(uri)?).await {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(store_err!("read {uri}: {e}")),
            };
        }
        Ok(self.read_with_id(uri).await?.map(|(b, _)| b))
    }

    /// Reads a whole object with the identity of the bytes returned
    /// (`None` where the store gives none, see [`Store::content_id`]);
    /// `Ok(None)` when it does not exist. On a local disk the file is
    /// stat-ed before and after the read through the open file: a file
    /// that changed meanwhile has no identity, and neither has one changed
    /// less than a second ago (file times advance in clock ticks: a second
    /// write within the tick of the first could leave every time as it was).
    pub async fn read_with_id(
        &self,
        uri: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, HostError> {
        #[cfg(feature = "cloud")]
        if let Kind::S3(b) = &self.kind {
            return b
                .read_with_id(self.key(uri)?)
                .await
                .map_err(|e| store_err!("{e} ({uri})"));
        }
        #[cfg(feature = "cloud")]
        if let Kind::Gcs(b) = &self.kind {
            return b
                .read_with_id(self.key(uri)?)
                .await
                .map_err(|e| store_err!("{e} ({uri})"));
        }
        if matches!(self.kind, Kind::Local) {
            use tokio::io::AsyncReadExt;
            let mut f = match tokio::fs::File::open(self.file(uri)?).await {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(store_err!("read {uri}: {e}")),
            };
            let io = |e: std::io::Error| format!("read {uri}: {e}");
            let before = f.metadata().await.map_err(io)?;
            // A hostile size (a sparse file of terabytes) is an error, not an abort.
            let mut b = Vec::new();
            b.try_reserve_exact(usize::try_from(before.len()).unwrap_or(usize::MAX))
                .map_err(|e| store_err!("read {uri}: {} bytes: {e}", before.len()))?;
            f.read_to_end(&mut b).await.map_err(io)?;
            let after = f.metadata().await.map_err(io)?;
            let (id, again) = (local_id(&before), local_id(&after));
            let same = id == again && b.len() as u64 == before.len() && settled(&after);
            return Ok(Some((b, Some(id).filter(|_| same))));
        }
        let p = self.path(uri)?;
        match self.inner.get(&p).await {
            Ok(r) => {
                let m = &r.meta;
                let id = content_id_of(m.size as i64, m.e_tag.as_deref(), m.version.as_deref());
                match r.bytes().await {
                    Ok(b) => Ok(Some((b.to_vec(), id))),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(store_err!("read {uri}: {e}")),
                }
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(store_err!("read {uri}: {e}")),
        }
    }

    /// The identity of an object's current content, for caches of what was
    /// derived from it: on object stores its size, ETag and version id (an
    /// ETag changes with the content; `None` without one); on a local disk
    /// its device, inode, size, and modification and change times to the
    /// nanosecond (the change time moves on every write and cannot be set
    /// back). `Ok(None)` also when the object does not exist.
    pub async fn content_id(&self, uri: &str) -> Result<Option<String>, HostError> {
        if matches!(self.kind, Kind::Local) {
            return match tokio::fs::symlink_metadata(self.file(uri)?).await {
                Ok(m) if m.is_file() => Ok(Some(local_id(&m))),
                Ok(_) => Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(store_err!("stat {uri}: {e}")),
            };
        }
        Ok(self
            .head(uri)
            .await?
            .and_then(|o| content_id_of(o.size as i64, o.etag.as_deref(), o.version_id.as_deref())))
    }

    /// Metadata of one object; `Ok(None)` when it does not exist.
    pub async fn head(&self, uri: &str) -> Result<Option<Object>, HostError> {
        #[cfg(feature = "cloud")]
        if let Kind::S3(b) = &self.kind {
            return b.head(self.key(uri)?, uri.to_owned()).await;
        }
        #[cfg(feature = "cloud")]
        if let Kind::Gcs(b) = &self.kind {
            return b.head(self.key(uri)?, uri.to_owned()).await;
        }
        if matches!(self.kind, Kind::Local) {
            return match tokio::fs::symlink_metadata(self.file(uri)?).await {
                Ok(m) => Ok(Some(local_object(uri.to_owned(), &m))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(store_err!("stat {uri}: {e}")),
            };
        }
        let p = self.path(uri)?;
        match self.inner.head(&p).await {
            Ok(m) => Ok(Some(self.object(m))),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(store_err!("head {uri}: {e}")),
        }
    }

    /// How many HEADs or DELETEs one task should carry: a local disk
    /// answers a run of them on one blocking thread (a thread hop per
    /// file costs more than the file system call); a bucket one request
    /// per task, the tasks in flight concurrently.
    pub fn run_length(&self) -> usize {
        match self.kind {
            Kind::Local => LOCAL_RUN,
            _ => 1,
        }
    }

    /// HEADs each of `uris` in turn (answers in their order), each in the
    /// bucket holding it; on a local disk on one blocking thread.
    pub async fn head_run(&self, uris: Vec<String>) -> Vec<Result<Option<Object>, HostError>> {
        if matches!(self.kind, Kind::Local) {
            let files: Vec<_> = uris
                .iter()
                .map(|u| self.holding(u).and_then(|s| s.file(u)))
                .collect();
            let stats = tokio::task::spawn_blocking(move || {
                files
                    .into_iter()
                    .zip(uris)
                    .map(|(f, uri)| {
                        let f = f?;
                        match std::fs::symlink_metadata(&f) {
                            Ok(m) => Ok(Some(local_object(uri, &m))),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                            Err(e) => Err(store_err!("stat {uri}: {e}")),
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .await;
            return stats.unwrap_or_else(|e| vec![Err(store_err!("a stat task failed: {e}"))]);
        }
        let mut out = Vec::with_capacity(uris.len());
        for uri in uris {
            out.push(match self.holding(&uri) {
                Ok(s) => s.head(&uri).await,
                Err(e) => Err(e),
            });
        }
        out
    }

    /// DELETEs each of `targets` (URI, entity tag to condition on) once,
    /// in turn, each in the bucket holding it; on a local disk on one
    /// blocking thread (a local file has no entity tag). Each answer:
    /// `Err` when no request was made (no store holds the URI), else what
    /// the store said (`Err`: the request may have been carried out), with
    /// when the request was made and when it was answered (ms since the
    /// epoch).
    pub async fn delete_run(
        &self,
        targets: Vec<(String, Condition)>,
    ) -> Vec<(DeleteAnswer, i64, i64)> {
        if matches!(self.kind, Kind::Local) {
            let files: Vec<_> = targets
                .iter()
                .map(|(u, _)| self.holding(u).and_then(|s| s.file(u)))
                .collect();
            let n = files.len();
            let done = tokio::task::spawn_blocking(move || {
                files
                    .into_iter()
                    .zip(targets)
                    .map(|(f, (uri, _))| {
                        let requested = clock_ms();
                        let r = f.map(|f| match std::fs::remove_file(&f) {
                            Ok(()) => Ok(local_gone(true)),
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                                Ok(local_gone(false))
                            }
                            Err(e) => Err(store_err!("delete {uri}: {e}")),
                        });
                        (r, requested, clock_ms())
                    })
                    .collect::<Vec<_>>()
            })
            .await;
            return done.unwrap_or_else(|e| {
                let now = clock_ms();
                (0..n)
                    .map(|_| (Ok(Err(store_err!("a delete task failed: {e}"))), now, now))
                    .collect()
            });
        }
        let mut out = Vec::with_capacity(targets.len());
        for (uri, when) in targets {
            let requested = clock_ms();
            let r = match self.holding(&uri) {
                Ok(s) => Ok(s.delete_if(&uri, &when).await),
                Err(e) => Err(e),
            };
            out.push((r, requested, clock_ms()));
        }
        out
    }

    /// Writes a new object; fails if it already exists (the atomic
    /// "create if absent" that metadata commits rely on). On a local disk the
    /// parent folder is made first (object stores have no folders).
    pub async fn create(&self, uri: &str, bytes: Vec<u8>) -> Result<(), CreateError> {
        #[cfg(feature = "cloud")]
        if let Kind::S3(b) = &self.kind {
            return b
                .put(
                    self.key(uri)
                        .map_err(|e| CreateError::Other(e.to_string()))?,
                    bytes,
                    true,
                )
                .await;
        }
        #[cfg(feature = "cloud")]
        if let Kind::Gcs(b) = &self.kind {
            return b
                .put(
                    self.key(uri)
                        .map_err(|e| CreateError::Other(e.to_string()))?,
                    bytes,
                    true,
                )
                .await;
        }
        if matches!(self.kind, Kind::Local) {
            let path = self
                .file(uri)
                .map_err(|e| CreateError::Other(e.to_string()))?;
            return tokio::task::spawn_blocking(move || {
                use std::io::Write;
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let mut f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                f.write_all(&bytes)?;
                f.sync_all()
            })
            .await
            .map_err(|e| CreateError::Other(e.to_string()))?
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => CreateError::Exists,
                _ => CreateError::Other(format!("create {uri}: {e}")),
            });
        }
        let p = self
            .path(uri)
            .map_err(|e| CreateError::Other(e.to_string()))?;
        let opts = object_store::PutOptions::from(object_store::PutMode::Create);
        self.inner
            .put_opts(&p, bytes.into(), opts)
            .await
            .map(|_| ())
            .map_err(|e| match e {
                object_store::Error::AlreadyExists { .. } => CreateError::Exists,
                e => CreateError::Other(format!("create {uri}: {e}")),
            })
    }

    /// Writes (or replaces) an object.
    pub async fn overwrite(&self, uri: &str, bytes: Vec<u8>) -> Result<(), HostError> {
        #[cfg(feature = "cloud")]
        if let Kind::S3(b) = &self.kind {
            return b
                .put(self.key(uri)?, bytes, false)
                .await
                .map_err(|e| store_err!("{e}"));
        }
        #[cfg(feature = "cloud")]
        if let Kind::Gcs(b) = &self.kind {
            return b
                .put(self.key(uri)?, bytes, false)
                .await
                .map_err(|e| store_err!("{e}"));
        }
        if matches!(self.kind, Kind::Local) {
            // Write aside, then rename over: readers see the old or the new
            // content, never a truncated file.
            let path = self.file(uri)?;
            if let Some(dir) = path.parent() {
                tokio::fs::create_dir_all(dir)
                    .await
                    .map_err(|e| store_err!("write {uri}: {e}"))?;
            }
            let tmp = path.with_extension(format!("lakesweep-tmp-{}", std::process::id()));
            // Durable before it replaces the old content (a ledger saved
            // before deletes must survive a power loss).
            return tokio::task::spawn_blocking(move || {
                use std::io::Write;
                let mut f = std::fs::File::create(&tmp)?;
                f.write_all(&bytes)?;
                f.sync_all()?;
                std::fs::rename(&tmp, &path)?;
                if let Some(dir) = path.parent() {
                    std::fs::File::open(dir)?.sync_all()?;
                }
                Ok::<(), std::io::Error>(())
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| store_err!("write {uri}: {e}"));
        }
        let p = self.path(uri)?;
        self.inner
            .put(&p, bytes.into())
            .await
            .map(|_| ())
            .map_err(|e| store_err!("write {uri}: {e}"))
    }

    /// Deletes one object (on a versioned S3 bucket: hides it under a
    /// delete marker, named in the answer).
    pub async fn delete(&self, uri: &str) -> Result<Deleted, HostError> {
        self.delete_if(uri, &Condition::default()).await
    }

    /// [`Store::delete`] under the conditions the store can enforce: on S3
    /// while the ETag is still `if_match`, on GCS while the generation is
    /// still `if_version`.
    #[cfg_attr(not(feature = "cloud"), allow(unused_variables))]
    pub async fn delete_if(&self, uri: &str, when: &Condition) -> Result<Deleted, HostError> {
        let gone = local_gone;
        #[cfg(feature = "cloud")]
        if let Kind::S3(b) = &self.kind {
            return b.delete(self.key(uri)?, when.if_match.as_deref()).await;
        }
        #[cfg(feature = "cloud")]
        if let Kind::Gcs(b) = &self.kind {
            return b.delete(self.key(uri)?, when.if_version.as_deref()).await;
        }
        if matches!(self.kind, Kind::Local) {
            return match tokio::fs::remove_file(self.file(uri)?).await {
                Ok(()) => Ok(gone(true)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(gone(false)),
                Err(e) => Err(store_err!("delete {uri}: {e}")),
            };
        }
        let p = self.path(uri)?;
        match self.inner.delete(&p).await {
            Ok(()) => Ok(gone(true)),
            Err(object_store::Error::NotFound { .. }) => Ok(gone(false)),
            Err(e) => Err(store_err!("delete {uri}: {e}")),
        }
    }

    /// What [`Store::list`] of `prefix_uri` lists, as one string: the
    /// store and the key, folder or path the prefix names (None: `list`
    /// would fail). Two prefixes with the same target list the same
    /// objects, spelled the same (a listing spells URIs with the store's
    /// own scheme, whatever alias the prefix used).
    pub fn listing_target(&self, prefix_uri: &str) -> Option<String> {
        let p = prefix_uri.trim_end_matches('/');
        let at = match &self.kind {
            #[cfg(feature = "cloud")]
            Kind::S3(_) | Kind::Gcs(_) => self.key(p).ok()?.to_owned(),
            Kind::Local => {
                self.file(p).ok()?;
                p.strip_prefix("file://")?.to_owned()
            }
            Kind::Bucket(_) => self.path(p).ok()?.to_string(),
        };
        Some(format!("{}://{}/{at}", self.scheme, self.authority))
    }

    /// Lists every object strictly under `prefix_uri + "/"`, streamed: a
    /// local folder walked on blocking threads; a bucket (S3, GCS, Azure)
    /// fanned out over the prefix's folders (see [`crate::stores::listing`]).
    pub fn list(&self, prefix_uri: &str) -> BoxStream<'static, Result<Object, HostError>> {
        self.list_as(prefix_uri, Walked::Stat)
    }

    /// [`Store::list`], but a local folder's files by their names alone
    /// ([`Object::named_only`]: no stat per file, which is a read of the
    /// disk for each file whose metadata the kernel does not hold); a
    /// bucket's listing gives every object's version anyway. The files
    /// whose versions a plan needs are read with [`Store::look_up`].
    pub fn list_names(&self, prefix_uri: &str) -> BoxStream<'static, Result<Object, HostError>> {
        self.list_as(prefix_uri, Walked::Names)
    }

    fn list_as(
        &self,
        prefix_uri: &str,
        walked: Walked,
    ) -> BoxStream<'static, Result<Object, HostError>> {
        let failed = |e: HostError| futures::stream::once(async move { Err(e) }).boxed();
        let at = prefix_uri.trim_end_matches('/');
        let base = format!("{}://{}/", self.scheme, self.authority);
        match &self.kind {
            Kind::Local => match (self.file(at), walk_threads()) {
                (Ok(dir), Ok(threads)) => list_local(dir, threads, walked, self.skipped.clone()),
                (Err(e), _) | (_, Err(e)) => failed(e),
            },
            #[cfg(feature = "cloud")]
            Kind::S3(b) => {
                let prefix = match self.key(at) {
                    Ok("") => String::new(),
                    Ok(k) => format!("{k}/"),
                    Err(e) => return failed(e),
                };
                b.clone()
                    .list(prefix, move |k| format!("{base}{k}"), self.skipped.clone())
            }
            #[cfg(feature = "cloud")]
            Kind::Gcs(b) => {
                let prefix = match self.key(at) {
                    Ok("") => String::new(),
                    Ok(k) => format!("{k}/"),
                    Err(e) => return failed(e),
                };
                b.clone()
                    .list(prefix, move |k| format!("{base}{k}"), self.skipped.clone())
            }
            Kind::Bucket(pager) => {
                let prefix = match self.path(at) {
                    Ok(p) if p.as_ref().is_empty() => String::new(),
                    Ok(p) => format!("{p}/"),
                    Err(e) => return failed(e),
                };
                crate::stores::listing::list(
                    Arc::new(crate::stores::listing::ObjectPager(pager.clone())),
                    prefix,
                    Box::new(move |k| format!("{base}{k}")),
                    self.skipped.clone(),
                )
            }
        }
    }
}

impl Store {
    /// Reads the sizes and times of objects listed by name
    /// ([`Store::list_names`]) under `prefix_uri`, on up to
    /// [`walk_threads`] threads: each comes back with its version, in
    /// order, except a file gone since it was listed (what is not listed is
    /// never deleted). A file that is no longer a regular file fails, as in
    /// the walk, and so does one whose folder no longer resolves to the
    /// folder walked (a folder on its path replaced by a link since: its
    /// time would be another file's). Objects listed with their versions
    /// pass through.
    pub async fn look_up(
        &self,
        prefix_uri: &str,
        objects: Vec<Object>,
    ) -> Result<Vec<Object>, HostError> {
        if !objects.iter().any(|o| o.named_only) {
            return Ok(objects);
        }
        let root = self.file(prefix_uri.trim_end_matches('/'))?;
        // A named object is a file the walk found, its URI `file://` and
        // the path as read (not parsed as an object path: any name a
        // folder holds, control characters included, is its own).
        let mut files = Vec::with_capacity(objects.len());
        for o in &objects {
            files.push(match (o.named_only, o.uri.strip_prefix("file://")) {
                (false, _) => None,
                (true, Some(p)) if matches!(self.kind, Kind::Local) => {
                    Some(std::path::PathBuf::from(p))
                }
                (true, _) => {
                    return Err(store_err!(
                        "{} was listed by name, but not by a local walk (internal error)",
                        o.uri
                    ))
                }
            });
        }
        let threads = walk_threads()?.min(objects.len().div_ceil(64)).max(1);
        tokio::task::spawn_blocking(move || {
            // The walk starts only at a folder, never a link: so must this.
            match std::fs::symlink_metadata(&root) {
                Ok(m) if m.is_dir() => {}
                _ => {
                    return Err(store_err!(
                        "list {}: no longer a folder (replaced by a link since it was listed?)",
                        root.display()
                    ))
                }
            }
            let walked = std::fs::canonicalize(&root)
                .map_err(|e| store_err!("list {}: {e}", root.display()))?;
            let folders = Folders {
                root: &root,
                walked: &walked,
            };
            let chunk = objects.len().div_ceil(threads);
            let parts: Vec<Result<Vec<Object>, HostError>> = std::thread::scope(|s| {
                let handles: Vec<_> = objects
                    .chunks(chunk)
                    .zip(files.chunks(chunk))
                    .map(|(os, fs)| s.spawn(move || look_up_files(os, fs, folders)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err("a stat thread panicked".into()))
                    })
                    .collect()
            });
            let mut out = Vec::with_capacity(objects.len());
            for p in parts {
                out.extend(p?);
            }
            Ok(out)
        })
        .await
        .map_err(|e| store_err!("stat of listed files: {e}"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stores::local::{walk_threads_of, MAX_WALK_THREADS};
    use crate::stores::object::etag_form;

    #[test]
    fn a_content_identity_needs_a_real_etag() {
        let id = |e: Option<&str>, v: Option<&str>| content_id_of(7, e, v);
        assert_eq!(
            id(Some("abc"), None),
            id(Some("\"abc\""), None),
            "quoted or not"
        );
        assert_ne!(id(Some("abc"), None), id(Some("abd"), None));
        assert_ne!(id(Some("abc"), Some("v1")), id(Some("abc"), Some("v2")));
        assert_eq!(id(Some("abc"), Some("null")), id(Some("abc"), None));
        for none in [None, Some(""), Some("\"\""), Some("W/\"\"")] {
            assert_eq!(id(none, Some("v1")), None, "{none:?}");
        }
        assert_eq!(content_id_of(-1, Some("abc"), None), None, "no size");
    }

    #[tokio::test]
    async fn a_local_identity_changes_with_every_write() {
        let dir = std::env::temp_dir().join(format!("lakesweep-id-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("m.avro");
        std::fs::write(&f, b"one").unwrap();
        let uri = format!("file://{}", f.display());
        let s = Store::for_uri(&format!("file://{}", dir.display())).unwrap();
        let (b, id) = s.read_with_id(&uri).await.unwrap().unwrap();
        assert_eq!(b, b"one");
        assert_eq!(id, None, "changed under a second ago: no identity yet");
        std::thread::sleep(std::time::Duration::from_millis(1100));
        let (_, id) = s.read_with_id(&uri).await.unwrap().unwrap();
        assert!(id.is_some());
        assert_eq!(
            id,
            s.content_id(&uri).await.unwrap(),
            "the read names what a stat names"
        );
        // The same bytes written again: a new change time, a new identity.
        std::fs::write(&f, b"one").unwrap();
        assert_ne!(id, s.content_id(&uri).await.unwrap());
        assert_eq!(s.content_id(&format!("{uri}.gone")).await.unwrap(), None);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A run of HEADs or DELETEs on a local disk answers each file as one
    /// request would; a URI no store holds is never requested.
    #[tokio::test]
    async fn runs_answer_each_file_as_one_request_would() {
        let dir = std::env::temp_dir().join(format!("lakesweep-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a"), b"aa").unwrap();
        let s = Store::for_uri(&format!("file://{}", dir.display())).unwrap();
        let uri = |n: &str| format!("file://{}/{n}", dir.display());
        let heads = s.head_run(vec![uri("a"), uri("b")]).await;
        assert_eq!(heads[0].as_ref().unwrap().as_ref().unwrap().size, 2);
        assert!(heads[1].as_ref().unwrap().is_none());
        let done = s
            .delete_run(vec![
                (uri("a"), Condition::default()),
                (uri("b"), Condition::default()),
                ("s3://elsewhere/x".into(), Condition::default()),
            ])
            .await;
        assert!(done[0].0.as_ref().unwrap().as_ref().unwrap().existed);
        assert!(!done[1].0.as_ref().unwrap().as_ref().unwrap().existed);
        assert!(done[2].0.is_err(), "another store's key is not requested");
        assert!(done
            .iter()
            .all(|(_, requested, answered)| requested <= answered));
        assert!(!dir.join("a").exists());
        let _ = std::fs::remove_dir_all(dir);
    }

    /// Every URI a listing of `root` gives, sorted.
    async fn listed(s: &Store, root: &str) -> Vec<String> {
        let mut got: Vec<String> = s
            .list(root)
            .map(|o| o.unwrap().uri)
            .collect::<Vec<_>>()
            .await;
        got.sort();
        got
    }

    #[tokio::test]
    async fn local_names_are_listed_byte_for_byte() {
        let dir = std::env::temp_dir().join(format!("lakesweep-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let names = ["c=100%25", "c=a%2Fb", "c=a b", "c=ü", "c=q?#&+"];
        for n in names {
            std::fs::create_dir_all(dir.join(n)).unwrap();
            std::fs::write(dir.join(n).join("x.parquet"), b"x").unwrap();
        }
        let root = format!("file://{}", dir.display());
        let s = Store::for_uri(&root).unwrap();
        let got = listed(&s, &root).await;
        let mut want: Vec<String> = names
            .iter()
            .map(|n| format!("{root}/{n}/x.parquet"))
            .collect();
        want.sort();
        assert_eq!(got, want);
        for uri in &want {
            assert_eq!(s.read(uri).await.unwrap().unwrap(), b"x");
            s.delete(uri).await.unwrap();
            assert!(s.head(uri).await.unwrap().is_none());
        }
        assert!(s.path(&format!("{root}//x")).is_err());
        assert!(s.path("s3://b/t/x").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_parallel_walk_lists_every_file_once_and_stops_at_a_link() {
        let dir = std::env::temp_dir().join(format!("lakesweep-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut want = Vec::new();
        for a in 0..7 {
            for b in 0..(a * 3) {
                let d = dir.join(format!("a={a}/b={b}"));
                std::fs::create_dir_all(&d).unwrap();
                for f in 0..(b % 4) {
                    std::fs::write(d.join(format!("{f}.parquet")), b"x").unwrap();
                    want.push(format!("file://{}/{f}.parquet", d.display()));
                }
            }
            std::fs::create_dir_all(dir.join(format!("empty-{a}/deeper"))).unwrap();
        }
        want.sort();
        let root = format!("file://{}", dir.display());
        let s = Store::for_uri(&root).unwrap();
        let got = listed(&s, &root).await;
        assert_eq!(got, want);
        // The same files with one walker, with more walkers than folders
        // at any depth, and with the most a user may ask for.
        // The same by names alone.
        for walked in [Walked::Stat, Walked::Names] {
            for threads in [1, 2, 3, 8, 64, MAX_WALK_THREADS] {
                let mut got: Vec<Object> = list_local(dir.clone(), threads, walked, Arc::default())
                    .map(|o| o.unwrap())
                    .collect()
                    .await;
                got.sort_by(|a, b| a.uri.cmp(&b.uri));
                let uris: Vec<&String> = got.iter().map(|o| &o.uri).collect();
                assert_eq!(uris, want.iter().collect::<Vec<_>>(), "{threads} threads");
                assert!(got
                    .iter()
                    .all(|o| o.named_only == (walked == Walked::Names)));
            }
        }
        // Looked up, names are what the stat walk gives, less a file gone
        // meanwhile; objects with versions pass through.
        let mut stat: Vec<Object> = s.list(&root).map(|o| o.unwrap()).collect().await;
        stat.sort_by(|a, b| a.uri.cmp(&b.uri));
        let mut named: Vec<Object> = s.list_names(&root).map(|o| o.unwrap()).collect().await;
        named.sort_by(|a, b| a.uri.cmp(&b.uri));
        let gone = named[3].clone();
        named[5] = stat[5].clone();
        std::fs::remove_file(gone.uri.strip_prefix("file://").unwrap()).unwrap();
        let mut got = s.look_up(&root, named.clone()).await.unwrap();
        got.sort_by(|a, b| a.uri.cmp(&b.uri));
        stat.retain(|o| o.uri != gone.uri);
        assert_eq!(got, stat);
        std::fs::write(gone.uri.strip_prefix("file://").unwrap(), b"x").unwrap();
        // A folder walked, then replaced by a link to a copy of itself: its
        // files are not looked up through the link; a folder removed
        // whole takes its files with it.
        let a2 = dir.join("a=2");
        std::fs::rename(&a2, dir.join("a=2-moved")).unwrap();
        std::os::unix::fs::symlink(dir.join("a=2-moved"), &a2).unwrap();
        let in_a2: Vec<Object> = named
            .iter()
            .filter(|o| o.uri.contains("/a=2/") && o.named_only)
            .cloned()
            .collect();
        assert!(!in_a2.is_empty());
        let e = s.look_up(&root, in_a2.clone()).await.unwrap_err();
        assert!(e.contains("replaced by a link"), "{e}");
        std::fs::remove_file(&a2).unwrap();
        assert!(s.look_up(&root, in_a2).await.unwrap().is_empty());
        std::fs::rename(dir.join("a=2-moved"), &a2).unwrap();
        // A symbolic link anywhere ends the listing with an error, and a
        // file turned into one fails its look-up.
        std::os::unix::fs::symlink(dir.join("a=6"), dir.join("a=3/b=2/link")).unwrap();
        for walked in [Walked::Stat, Walked::Names] {
            for threads in [1, 8] {
                let all: Vec<Result<Object, crate::error::HostError>> =
                    list_local(dir.clone(), threads, walked, Arc::default())
                        .collect()
                        .await;
                let last = all.last().unwrap();
                assert!(
                    matches!(last, Err(e) if e.contains("symbolic link")),
                    "{threads} threads: {last:?}"
                );
            }
        }
        let link = Object {
            uri: format!("file://{}/a=3/b=2/link", dir.display()),
            ..Object::named(String::new())
        };
        let e = s.look_up(&root, vec![link]).await.unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        let all: Vec<Result<Object, crate::error::HostError>> = s.list(&root).collect().await;
        let last = all.last().unwrap();
        assert!(
            matches!(last, Err(e) if e.contains("symbolic link")),
            "{last:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn walk_threads_are_four_per_core_or_as_set() {
        assert_eq!(walk_threads_of(None, 1), Ok(4));
        assert_eq!(walk_threads_of(None, 2), Ok(8));
        assert_eq!(walk_threads_of(None, 64), Ok(32));
        assert_eq!(walk_threads_of(Some("1"), 2), Ok(1));
        assert_eq!(walk_threads_of(Some(" 16 "), 2), Ok(16));
        for bad in ["0", "257", "-1", "", "eight"] {
            let e = walk_threads_of(Some(bad), 2).unwrap_err();
            assert!(
                e.starts_with(&format!("LAKESWEEP_WALK_THREADS={bad} is not")),
                "{e}"
            );
        }
    }

    #[cfg(feature = "cloud")]
    #[test]
    fn bucket_keys_are_literal_and_s3a_is_s3() {
        let azure = Arc::new(
            object_store::azure::MicrosoftAzureBuilder::new()
                .with_use_emulator(true)
                .with_container_name("b")
                .build()
                .unwrap(),
        );
        let s = Store {
            inner: azure.clone(),
            kind: Kind::Bucket(azure),
            schemes: &["s3", "s3a", "s3n"],
            authority: "b".into(),
            scheme: "s3",
            skipped: Arc::default(),
        };
        let p = s.path("s3a://b/t/c=a%20b/x").unwrap();
        assert_eq!(p.as_ref(), "t/c=a%20b/x");
        assert_eq!(s.uri(&p), "s3://b/t/c=a%20b/x");
        assert!(s.path("s3://other/t/x").is_err());
    }

    #[test]
    fn etags_have_one_form() {
        assert_eq!(etag_form("0x8D".into()), "\"0x8D\"");
        assert_eq!(etag_form("\"0x8D\"".into()), "\"0x8D\"");
        assert_eq!(etag_form("W/\"a\"".into()), "W/\"a\"");
    }

    #[test]
    fn table_arguments() {
        assert_eq!(table_uri("s3a://b/t/").unwrap(), "s3a://b/t");
        assert_eq!(table_uri("/a/./b/../c").unwrap(), "file:///a/c");
        assert_eq!(table_uri("file:///a/b").unwrap(), "file:///a/b");
        // A table's file given in its place: refused with what to give.
        let e = table_uri("s3://b/t/metadata/00003-x.metadata.json").unwrap_err();
        assert!(
            e.contains("--metadata") && e.contains("lakesweep plan s3://b/t --metadata"),
            "{e}"
        );
        let e = table_uri("s3://b/t/metadata/version-hint.text").unwrap_err();
        assert!(e.contains("(s3://b/t)"), "{e}");
        let e = table_uri("s3://b/t/_delta_log/00000000000000000000.json").unwrap_err();
        assert!(e.contains("Delta log") && e.contains("(s3://b/t)"), "{e}");
        let file =
            std::env::temp_dir().join(format!("lakesweep-not-a-table-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let e = table_uri(file.to_str().unwrap()).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert!(e.contains("is a file, not a table folder"), "{e}");
        // A table whose name only contains such words is a table.
        assert!(table_uri("s3://b/metadata.json-archive/t").is_ok());
    }
}
