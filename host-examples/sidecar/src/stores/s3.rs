//! S3 and S3-compatible stores through the official AWS SDK, key for key.
//!
//! A key is whatever bytes the bucket holds: `data//x.parquet`, a folder
//! marker `data/`, its file twin `data`, a key with control characters. The
//! `object_store` crate normalises keys (it rejects empty segments and merges
//! trailing-slash twins), so a table holding one such key could not be
//! planned at all; the SDK sends the key it is given and S3 signs it
//! unnormalised. Listings ask for `encoding-type=url` (XML cannot carry
//! every key) and are decoded only when the answer says it was encoded.
//!
//! Listings are `ListObjectVersions` (current versions only) where the
//! credentials allow it, so on a versioned bucket every listed object
//! carries its version id; a delete answers with the delete marker it
//! created.
//!
//! Configuration is the SDK's: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_REGION` (default `us-east-1`), profiles, `AWS_ENDPOINT_URL` (also `object_store`'s
//! `AWS_ENDPOINT`). A custom endpoint is addressed path-style unless
//! `AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true`.

use crate::error::HostError;
use std::time::Duration;

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::types::EncodingType;
use aws_sdk_s3::Client;
use futures::stream::BoxStream;
use tokio::sync::OnceCell;

use crate::stores::listing::{url_decode, Ask, Name, Page, Token, Undecodable};
use crate::stores::object::{content_id_of, etag_form, CreateError, Deleted, Object};

/// One bucket, its client made on first use.
pub struct Bucket {
    /// The bucket's name.
    pub name: String,
    client: OnceCell<Client>,
    /// False once `ListObjectVersions` was refused or unreadable on a
    /// listing's first page: plain listings from then on.
    versions_allowed: std::sync::atomic::AtomicBool,
    /// False once the store refused `If-Match` on DELETE as unsupported.
    conditional_deletes: std::sync::atomic::AtomicBool,
    /// What the run should be told (a fallback taken), once each.
    pub notes: std::sync::Mutex<Vec<String>>,
}

/// The words of an SDK error: the service's code and message where it gave
/// them, else the error and its causes (connection, timeout, an answer that
/// does not parse), without the raw response.
fn words<E, R>(e: &aws_sdk_s3::error::SdkError<E, R>) -> String
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    if let (Some(c), m) = (e.code(), e.message()) {
        return match m {
            Some(m) => format!("{c}: {m}"),
            None => c.to_owned(),
        };
    }
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    no_credentials(out)
}

/// A store error that comes from finding no credentials, said so first.
fn no_credentials(out: String) -> String {
    let lower = out.to_ascii_lowercase();
    if lower.contains("loading credentials") || lower.contains("no credentials") {
        return format!(
            "no S3 credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or run where an instance or pod role provides them ({out})"
        );
    }
    out
}

/// The AWS SDK's configuration as every AWS client here uses it: the
/// environment and profiles, `AWS_ENDPOINT` as a fallback endpoint, region
/// `us-east-1` when none is configured, and retries with backoff.
pub async fn aws_config() -> aws_config::SdkConfig {
    // Throttling, 5xx and transient network errors back off
    // exponentially: ten attempts, a minute per attempt.
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(10)
                .with_max_backoff(Duration::from_secs(15)),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(10))
                .operation_attempt_timeout(Duration::from_secs(60))
                .build(),
        );
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        if let Ok(e) = std::env::var("AWS_ENDPOINT") {
            loader = loader.endpoint_url(e);
        }
    }
    let shared = loader.load().await;
    if shared.region().is_some() {
        return shared;
    }
    // As object_store did: no region configured means us-east-1.
    shared
        .into_builder()
        .region(aws_config::Region::from_static("us-east-1"))
        .build()
}

impl Bucket {
    /// A bucket handle; nothing is contacted until the first request.
    pub fn new(name: &str) -> Bucket {
        Bucket {
            name: name.to_owned(),
            client: OnceCell::new(),
            versions_allowed: std::sync::atomic::AtomicBool::new(true),
            conditional_deletes: std::sync::atomic::AtomicBool::new(true),
            notes: std::sync::Mutex::new(Vec::new()),
        }
    }

    async fn client(&self) -> &Client {
        self.client
            .get_or_init(|| async {
                let shared = aws_config().await;
                let custom = shared.endpoint_url().is_some();
                let virtual_hosted = std::env::var("AWS_VIRTUAL_HOSTED_STYLE_REQUEST")
                    .is_ok_and(|v| v.eq_ignore_ascii_case("true"));
                let conf = aws_sdk_s3::config::Builder::from(&shared)
                    .force_path_style(custom && !virtual_hosted)
                    // S3-compatible servers differ on the newer checksum
                    // trailers; send checksums only where an API needs them.
                    .request_checksum_calculation(
                        aws_sdk_s3::config::RequestChecksumCalculation::WhenRequired,
                    )
                    .response_checksum_validation(
                        aws_sdk_s3::config::ResponseChecksumValidation::WhenRequired,
                    )
                    .build();
                Client::from_conf(conf)
            })
            .await
    }

    /// Reads a whole object with the identity of the bytes returned (see
    /// [`crate::stores::Store::content_id`]): from the GET's own answer, so
    /// it names these bytes even if the object changed since any HEAD.
    pub async fn read_with_id(
        &self,
        key: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, HostError> {
        let r = self
            .client()
            .await
            .get_object()
            .bucket(&self.name)
            .key(key)
            .send()
            .await;
        match r {
            Ok(o) => {
                let id = content_id_of(o.content_length().unwrap_or(-1), o.e_tag(), o.version_id());
                o.body
                    .collect()
                    .await
                    .map(|b| Some((b.into_bytes().to_vec(), id)))
                    .map_err(|e| store_err!("read {key}: {e}"))
            }
            Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => Ok(None),
            Err(e) => Err(store_err!("read {key}: {}", words(&e))),
        }
    }

    /// HEAD of one object; `Ok(None)` when it does not exist.
    pub async fn head(&self, key: &str, uri: String) -> Result<Option<Object>, HostError> {
        let r = self
            .client()
            .await
            .head_object()
            .bucket(&self.name)
            .key(key)
            .send()
            .await;
        match r {
            Ok(o) => Ok(Some(Object {
                uri,
                size: o.content_length().unwrap_or(0).max(0) as u64,
                last_modified_ms: o
                    .last_modified()
                    .and_then(|t| t.to_millis().ok())
                    // Unknown time: treated as brand new (kept), never old.
                    .unwrap_or(i64::MAX),
                etag: o.e_tag().map(|e| etag_form(e.to_owned())),
                // Unversioned (or suspended) buckets answer "null": no
                // version to pin, and none kept after a delete.
                version_id: o.version_id().filter(|v| *v != "null").map(str::to_owned),
                named_only: false,
            })),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => Ok(None),
            Err(e) => Err(store_err!("head {key}: {}", words(&e))),
        }
    }

    /// Writes an object; with `if_absent`, only when the key is free.
    pub async fn put(&self, key: &str, bytes: Vec<u8>, if_absent: bool) -> Result<(), CreateError> {
        let mut req = self
            .client()
            .await
            .put_object()
            .bucket(&self.name)
            .key(key)
            .body(bytes.into());
        if if_absent {
            req = req.if_none_match("*");
        }
        req.send().await.map(|_| ()).map_err(|e| {
            if if_absent && e.code() == Some("PreconditionFailed") {
                CreateError::Exists
            } else {
                CreateError::Other(format!("write {key}: {}", words(&e)))
            }
        })
    }

    /// Deletes the key's current version: on a versioned bucket a delete
    /// marker hides it and the answer names the marker. With `if_match`
    /// (the ETag HEAD just gave) the store deletes only that content
    /// (`If-Match`), closing the window between HEAD and DELETE where it is
    /// supported; a store that does not implement conditional deletes gets
    /// the plain DELETE, and the run is told once.
    pub async fn delete(&self, key: &str, if_match: Option<&str>) -> Result<Deleted, HostError> {
        use std::sync::atomic::Ordering;
        let conditional = if_match.filter(|_| self.conditional_deletes.load(Ordering::Relaxed));
        let send = |etag: Option<&str>| {
            self.client.get().map(|c| {
                c.delete_object()
                    .bucket(&self.name)
                    .key(key)
                    .set_if_match(etag.map(str::to_owned))
                    .send()
            })
        };
        self.client().await;
        let first = send(conditional).ok_or("no S3 client")?.await;
        let o = match first {
            Err(e) if conditional.is_some() && e.code() == Some("PreconditionFailed") => {
                return Ok(Deleted {
                    existed: true,
                    delete_marker: None,
                    changed: true,
                })
            }
            Err(e)
                if conditional.is_some()
                    && matches!(e.code(), Some("NotImplemented" | "InvalidArgument")) =>
            {
                self.conditional_deletes.store(false, Ordering::Relaxed);
                if let Ok(mut n) = self.notes.lock() {
                    n.push(format!(
                        "bucket {}: conditional deletes are not supported ({}); each delete is checked by HEAD just before it",
                        self.name,
                        words(&e)
                    ));
                }
                send(None)
                    .ok_or("no S3 client")?
                    .await
                    .map_err(|e| store_err!("delete {key}: {}", words(&e)))?
            }
            r => r.map_err(|e| store_err!("delete {key}: {}", words(&e)))?,
        };
        Ok(Deleted {
            existed: true,
            delete_marker: if o.delete_marker().unwrap_or(false) {
                o.version_id().map(str::to_owned)
            } else {
                None
            },
            changed: false,
        })
    }

    /// Lists every object whose key starts with `prefix`, each key exactly
    /// as stored, fanned out over the prefix's folders (`crate::stores::listing`);
    /// `uri` makes an object's URI from its key. A key that is not UTF-8
    /// once decoded is put in `skipped` (raw, as the store spelled it)
    /// instead: no reference can name it, so it is never deleted, and the
    /// run reports it.
    pub fn list(
        self: std::sync::Arc<Self>,
        prefix: String,
        uri: impl Fn(&str) -> String + Send + Sync + 'static,
        skipped: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    ) -> BoxStream<'static, Result<Object, HostError>> {
        crate::stores::listing::list(self, prefix, Box::new(uri), skipped)
    }

    /// One listing page (at most 1,000 entries). `ListObjectVersions`
    /// first, so that a versioned bucket's objects carry their version ids
    /// (an unversioned bucket answers "null", read as none). Where a
    /// listing's first page is refused (no `s3:ListBucketVersions`
    /// permission) or cannot be read (a store that ignores
    /// `encoding-type=url` there and writes bytes XML cannot hold), the plain
    /// `ListObjectsV2` from then on, whose objects carry no version id: each
    /// delete is still pinned by size, time and ETag and checked by HEAD.
    /// The run is told once. A later page failing fails the listing.
    /// A later page goes to the listing that made its token. A store that
    /// answers a token with itself would page forever: an error instead.
    pub async fn page(&self, ask: &Ask<'_>) -> Result<Page, HostError> {
        let page = self.any_page(ask).await?;
        if page.next.is_some() && page.next == ask.token {
            return Err(
                "the store answered a page with its own token (the listing would not end)".into(),
            );
        }
        Ok(page)
    }

    /// [`Bucket::page`] without the check of its token.
    async fn any_page(&self, ask: &Ask<'_>) -> Result<Page, HostError> {
        use std::sync::atomic::Ordering;
        match ask.token {
            Some(Token::Versions { .. }) => return self.versions_page(ask).await,
            Some(Token::Objects(_)) => return self.objects_page(ask).await,
            None => {}
        }
        if self.versions_allowed.load(Ordering::Relaxed) {
            match self.versions_page(ask).await {
                Err(e)
                    if e.to_string().starts_with("AccessDenied")
                        || e.to_string().contains("XML") =>
                {
                    if self.versions_allowed.swap(false, Ordering::Relaxed) {
                        if let Ok(mut n) = self.notes.lock() {
                            n.push(format!(
                                "bucket {}: the version listing failed ({e}); listed without version ids (deletes are pinned by size, time and ETag)",
                                self.name
                            ));
                        }
                    }
                }
                r => return r,
            }
        }
        self.objects_page(ask).await
    }

    /// The key of a listing entry: decoded when the answer says it was
    /// encoded; `Err(raw)` when it cannot be represented.
    fn key(raw: &str, encoded: bool) -> Name {
        if encoded {
            url_decode(raw).ok_or_else(|| Undecodable(raw.to_owned()))
        } else {
            Ok(raw.to_owned())
        }
    }

    /// One `ListObjectsV2` page.
    async fn objects_page(&self, ask: &Ask<'_>) -> Result<Page, HostError> {
        let r = self
            .client()
            .await
            .list_objects_v2()
            .bucket(&self.name)
            .prefix(ask.prefix)
            .encoding_type(EncodingType::Url)
            .set_delimiter(ask.delimited.then(|| "/".to_owned()))
            .set_continuation_token(match &ask.token {
                Some(Token::Objects(t)) => Some(t.clone()),
                _ => None,
            })
            .send()
            .await
            .map_err(|e| words(&e))?;
        let encoded = r.encoding_type() == Some(&EncodingType::Url);
        let entries = r
            .contents()
            .iter()
            .map(|o| {
                let raw = o.key().unwrap_or_default();
                let obj = Object {
                    uri: String::new(),
                    size: o.size().unwrap_or(0).max(0) as u64,
                    last_modified_ms: o
                        .last_modified()
                        .and_then(|t| t.to_millis().ok())
                        .unwrap_or(i64::MAX),
                    etag: o.e_tag().map(|e| etag_form(e.to_owned())),
                    version_id: None,
                    named_only: false,
                };
                (Self::key(raw, encoded), obj)
            })
            .collect();
        let folders = r
            .common_prefixes()
            .iter()
            .map(|p| Self::key(p.prefix().unwrap_or_default(), encoded))
            .collect();
        let next = match (r.is_truncated(), r.next_continuation_token()) {
            (Some(true), Some(t)) => Some(Token::Objects(t.to_owned())),
            (Some(true), None) => {
                return Err(
                    "the store said the listing goes on but gave no continuation token".into(),
                )
            }
            _ => None,
        };
        Ok(Page {
            entries,
            folders,
            next,
            encoded,
        })
    }

    /// One `ListObjectVersions` page: the current version of each key (a
    /// key whose current version is a delete marker is not listed), and the
    /// next key and version-id markers.
    async fn versions_page(&self, ask: &Ask<'_>) -> Result<Page, HostError> {
        let (key_marker, version_marker) = match ask.token.clone() {
            Some(Token::Versions { key, version }) => (Some(key), version),
            _ => (None, None),
        };
        let r = self
            .client()
            .await
            .list_object_versions()
            .bucket(&self.name)
            .prefix(ask.prefix)
            .encoding_type(EncodingType::Url)
            .set_delimiter(ask.delimited.then(|| "/".to_owned()))
            .set_key_marker(key_marker)
            .set_version_id_marker(version_marker)
            .send()
            .await
            .map_err(|e| words(&e))?;
        let encoded = r.encoding_type() == Some(&EncodingType::Url);
        let entries = r
            .versions()
            .iter()
            .filter(|v| v.is_latest() == Some(true))
            .map(|v| {
                let raw = v.key().unwrap_or_default();
                let obj = Object {
                    uri: String::new(),
                    size: v.size().unwrap_or(0).max(0) as u64,
                    last_modified_ms: v
                        .last_modified()
                        .and_then(|t| t.to_millis().ok())
                        .unwrap_or(i64::MAX),
                    etag: v.e_tag().map(|e| etag_form(e.to_owned())),
                    named_only: false,
                    // Unversioned buckets answer the version id "null".
                    version_id: v.version_id().filter(|v| *v != "null").map(str::to_owned),
                };
                (Self::key(raw, encoded), obj)
            })
            .collect();
        let folders = r
            .common_prefixes()
            .iter()
            .map(|p| Self::key(p.prefix().unwrap_or_default(), encoded))
            .collect();
        let next = match (r.is_truncated(), r.next_key_marker()) {
            (Some(true), Some(k)) => {
                // The key marker is encoded like the keys; it goes back raw.
                let k = Self::key(k, encoded).map_err(|k| {
                    store_err!("the store's next key marker `{}` does not decode", k.0)
                })?;
                Some(Token::Versions {
                    key: k,
                    version: r.next_version_id_marker().map(str::to_owned),
                })
            }
            (Some(true), None) => {
                return Err("the store said the listing goes on but gave no key marker".into())
            }
            _ => None,
        };
        Ok(Page {
            entries,
            folders,
            next,
            encoded,
        })
    }
}

/// The fan-out listing pages through this bucket.
impl crate::stores::listing::Pager for Bucket {
    fn page<'a>(
        &'a self,
        ask: &'a Ask<'a>,
    ) -> futures::future::BoxFuture<'a, Result<Page, HostError>> {
        Box::pin(Bucket::page(self, ask))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_credentials_are_said_first() {
        let e = no_credentials("dispatch failure: other: an error occurred while loading credentials: IMDS is disabled".into());
        assert!(
            e.starts_with("no S3 credentials were found: set AWS_ACCESS_KEY_ID"),
            "{e}"
        );
        assert_eq!(
            no_credentials("NoSuchBucket: gone".into()),
            "NoSuchBucket: gone"
        );
    }
}
