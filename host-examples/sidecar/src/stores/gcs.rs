//! Google Cloud Storage through its JSON API, key for key.
//!
//! A GCS object name is any UTF-8 string: `data//x.parquet`, a name ending
//! in `/`, a segment that is empty. `object_store` cannot address such
//! names (its paths reject empty segments), so a table holding one could
//! not be planned; here every name is sent percent-encoded whole (`/`
//! included) and listed exactly as the JSON answer spells it.
//!
//! Every object carries its generation, reported as its version id: a plan
//! pins it as it pins an S3 version id, and a delete is made conditional
//! on it (`ifGenerationMatch`), so an object rewritten after its HEAD (a
//! new generation) is never deleted: the store answers 412 and nothing is
//! deleted. Writes that must not replace anything send
//! `ifGenerationMatch=0`. No request follows a redirect.
//!
//! Configuration: `STORAGE_EMULATOR_HOST` (the variable Google's clients
//! read: `host:port` or a URL) sends every request there without
//! credentials; otherwise `https://storage.googleapis.com` with the
//! credentials `object_store` finds (`GOOGLE_SERVICE_ACCOUNT`,
//! `GOOGLE_APPLICATION_CREDENTIALS`, the metadata server).

use crate::error::HostError;
use std::time::Duration;

use futures::stream::BoxStream;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;
use tokio::sync::OnceCell;

use crate::stores::listing::{Ask, Page, Token};
use crate::stores::object::{content_id_of, CreateError, Deleted, Object};

/// Every byte but the unreserved ones is encoded: `/` too, since an object
/// name is one path segment of the API's URL.
const NAME: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Attempts for a request the store answered 429 or 5xx, or that failed
/// in transport.
const ATTEMPTS: u32 = 5;

/// How requests are authorised.
enum Auth {
    /// An emulator: no credentials.
    None,
    /// GCS: a bearer token from `object_store`'s credential chain.
    Token(object_store::gcp::GcpCredentialProvider),
}

/// The client, its endpoint and its credentials.
struct Client {
    http: reqwest::Client,
    base: String,
    auth: Auth,
}

/// One bucket, its client made on first use.
pub struct Bucket {
    /// The bucket's name.
    pub name: String,
    client: OnceCell<Result<Client, HostError>>,
}

/// The endpoint `STORAGE_EMULATOR_HOST` names (`host:port` means http).
fn emulator() -> Option<String> {
    let v = std::env::var("STORAGE_EMULATOR_HOST").ok()?;
    let v = v.trim().trim_end_matches('/');
    if v.is_empty() {
        return None;
    }
    Some(if v.contains("://") {
        v.to_owned()
    } else {
        format!("http://{v}")
    })
}

/// A query string (`?k=v&…`), every value encoded as a name is.
fn query(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(k);
        out.push('=');
        out.extend(utf8_percent_encode(v, NAME));
    }
    out
}

/// The JSON body of a successful answer.
async fn json(what: &str, r: reqwest::Response) -> Result<Value, HostError> {
    let body = r.bytes().await.map_err(|e| store_err!("{what}: {e}"))?;
    serde_json::from_slice(&body).map_err(|e| store_err!("{what}: the answer is not JSON: {e}"))
}

/// Milliseconds since the epoch of an RFC 3339 time; unknown: brand new
/// (kept), never old.
fn ms(t: Option<&str>) -> i64 {
    t.and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or(i64::MAX, |t| t.as_millisecond())
}

/// An object resource of the JSON API as an [`Object`] (`uri` filled in
/// by the caller).
fn object_of(v: &Value, uri: String) -> Object {
    let s = |k: &str| v.get(k).and_then(Value::as_str);
    Object {
        uri,
        size: s("size").and_then(|n| n.parse().ok()).unwrap_or(0),
        last_modified_ms: ms(s("updated")),
        etag: s("etag").map(str::to_owned),
        version_id: s("generation").map(str::to_owned),
        named_only: false,
    }
}

impl Bucket {
    /// A bucket handle; nothing is contacted until the first request.
    pub fn new(name: &str) -> Bucket {
        Bucket {
            name: name.to_owned(),
            client: OnceCell::new(),
        }
    }

    async fn client(&self) -> Result<&Client, HostError> {
        let c = self
            .client
            .get_or_init(|| async {
                let http = crate::stores::http::mutating_client()?;
                if let Some(base) = emulator() {
                    return Ok(Client {
                        http,
                        base,
                        auth: Auth::None,
                    });
                }
                let gcs = object_store::gcp::GoogleCloudStorageBuilder::from_env()
                    .with_bucket_name(&self.name)
                    .build()
                    .map_err(|e| store_err!("GCS credentials for bucket {}: {e}", self.name))?;
                Ok(Client {
                    http,
                    base: "https://storage.googleapis.com".into(),
                    auth: Auth::Token(gcs.credentials().clone()),
                })
            })
            .await;
        c.as_ref().map_err(Clone::clone)
    }

    fn object_url(&self, base: &str, key: &str) -> String {
        format!(
            "{base}/storage/v1/b/{}/o/{}",
            utf8_percent_encode(&self.name, NAME),
            utf8_percent_encode(key, NAME)
        )
    }

    /// Sends the request `make` builds, with credentials, again while the
    /// store answers 429 or 5xx or the transport fails (backing off); the
    /// last answer or error otherwise. A redirect is an answer, never
    /// followed.
    async fn send(
        &self,
        what: &str,
        make: impl Fn(&Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, HostError> {
        let c = self.client().await?;
        let mut wait = Duration::from_millis(200);
        for attempt in 1..=ATTEMPTS {
            let mut req = make(c);
            if let Auth::Token(p) = &c.auth {
                let t = p
                    .get_credential()
                    .await
                    .map_err(|e| store_err!("{what}: GCS credentials: {e}"))?;
                req = req.bearer_auth(&t.bearer);
            }
            let retry = match req.send().await {
                Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => {
                    if attempt == ATTEMPTS {
                        return Ok(r);
                    }
                    true
                }
                Ok(r) => return Ok(r),
                Err(e) if attempt == ATTEMPTS => return Err(store_err!("{what}: {e}")),
                Err(_) => true,
            };
            if retry {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(10));
            }
        }
        Err(store_err!("{what}: no answer"))
    }

    /// The store's words for an answer that is not a success.
    async fn failure(what: &str, r: reqwest::Response) -> String {
        let status = r.status();
        if status.is_redirection() {
            let to = r
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("?")
                .to_owned();
            return format!(
                "{what}: the store answered {status}, a redirect to {to} (not followed)"
            );
        }
        let body = r.text().await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| body.chars().take(200).collect());
        format!("{what}: {status}: {message}")
    }

    /// Reads a whole object with the identity of the bytes returned (size,
    /// and the generation the answer names); `Ok(None)` when it does not
    /// exist.
    pub async fn read_with_id(
        &self,
        key: &str,
    ) -> Result<Option<(Vec<u8>, Option<String>)>, HostError> {
        let what = format!("read {key}");
        let r = self
            .send(&what, |c| {
                c.http
                    .get(self.object_url(&c.base, key) + &query(&[("alt", "media")]))
            })
            .await?;
        if r.status().as_u16() == 404 {
            return Ok(None);
        }
        if !r.status().is_success() {
            return Err(HostError::Store(Self::failure(&what, r).await));
        }
        let header = |h: &str| {
            r.headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (etag, generation) = (header("etag"), header("x-goog-generation"));
        let bytes = r
            .bytes()
            .await
            .map_err(|e| store_err!("{what}: {e}"))?
            .to_vec();
        let id = content_id_of(bytes.len() as i64, etag.as_deref(), generation.as_deref());
        Ok(Some((bytes, id)))
    }

    /// The object's metadata; `Ok(None)` when it does not exist.
    pub async fn head(&self, key: &str, uri: String) -> Result<Option<Object>, HostError> {
        let what = format!("head {key}");
        let r = self
            .send(&what, |c| {
                c.http
                    .get(self.object_url(&c.base, key) + &query(&[("projection", "noAcl")]))
            })
            .await?;
        if r.status().as_u16() == 404 {
            return Ok(None);
        }
        if !r.status().is_success() {
            return Err(HostError::Store(Self::failure(&what, r).await));
        }
        let v = json(&what, r).await?;
        Ok(Some(object_of(&v, uri)))
    }

    /// Writes an object; with `if_absent`, only when the name is free
    /// (`ifGenerationMatch=0`).
    pub async fn put(&self, key: &str, bytes: Vec<u8>, if_absent: bool) -> Result<(), CreateError> {
        let what = format!("write {key}");
        let r = self
            .send(&what, |c| {
                let mut q = vec![("uploadType", "media"), ("name", key)];
                if if_absent {
                    q.push(("ifGenerationMatch", "0"));
                }
                c.http
                    .post(format!(
                        "{}/upload/storage/v1/b/{}/o{}",
                        c.base,
                        utf8_percent_encode(&self.name, NAME),
                        query(&q)
                    ))
                    .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                    .body(bytes.clone())
            })
            .await
            .map_err(|e| CreateError::Other(e.to_string()))?;
        match r.status().as_u16() {
            200..=299 => Ok(()),
            412 if if_absent => Err(CreateError::Exists),
            _ => Err(CreateError::Other(Self::failure(&what, r).await)),
        }
    }

    /// Deletes the object; with `if_generation` (the generation the plan
    /// pinned and HEAD confirmed) only that generation
    /// (`ifGenerationMatch`): a newer one answers 412 and stays.
    pub async fn delete(
        &self,
        key: &str,
        if_generation: Option<&str>,
    ) -> Result<Deleted, HostError> {
        let what = format!("delete {key}");
        let r = self
            .send(&what, |c| {
                let url = self.object_url(&c.base, key);
                c.http.delete(match if_generation {
                    Some(g) => url + &query(&[("ifGenerationMatch", g)]),
                    None => url,
                })
            })
            .await?;
        match r.status().as_u16() {
            200..=299 => Ok(Deleted {
                existed: true,
                delete_marker: None,
                changed: false,
            }),
            404 => Ok(Deleted {
                existed: false,
                delete_marker: None,
                changed: false,
            }),
            412 if if_generation.is_some() => Ok(Deleted {
                existed: true,
                delete_marker: None,
                changed: true,
            }),
            _ => Err(HostError::Store(Self::failure(&what, r).await)),
        }
    }

    /// Lists every object whose name starts with `prefix`, exactly as
    /// stored, fanned out over the prefix's folders (`crate::stores::listing`).
    pub fn list(
        self: std::sync::Arc<Self>,
        prefix: String,
        uri: impl Fn(&str) -> String + Send + Sync + 'static,
        skipped: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    ) -> BoxStream<'static, Result<Object, HostError>> {
        crate::stores::listing::list(self, prefix, Box::new(uri), skipped)
    }

    /// One listing page (up to 1,000 objects), with the delimiter `/`
    /// when asked. A store that answers a page with its own token would
    /// page forever: an error instead.
    pub async fn page(&self, ask: &Ask<'_>) -> Result<Page, HostError> {
        let token = match &ask.token {
            None => None,
            Some(Token::Objects(t)) => Some(t.clone()),
            Some(Token::Versions { .. }) => {
                return Err("a version marker handed to a GCS listing".into())
            }
        };
        let what = format!("list gs://{}/{}", self.name, ask.prefix);
        let r = self
            .send(&what, |c| {
                let mut q = vec![
                    ("prefix", ask.prefix),
                    ("maxResults", "1000"),
                    ("projection", "noAcl"),
                ];
                if ask.delimited {
                    q.push(("delimiter", "/"));
                }
                if let Some(t) = &token {
                    q.push(("pageToken", t));
                }
                c.http.get(format!(
                    "{}/storage/v1/b/{}/o{}",
                    c.base,
                    utf8_percent_encode(&self.name, NAME),
                    query(&q)
                ))
            })
            .await?;
        if !r.status().is_success() {
            return Err(HostError::Store(Self::failure(&what, r).await));
        }
        let v = json(&what, r).await?;
        let mut entries = Vec::new();
        for item in v["items"].as_array().into_iter().flatten() {
            let Some(name) = item["name"].as_str() else {
                return Err(store_err!("{what}: an object without a name"));
            };
            entries.push((Ok(name.to_owned()), object_of(item, String::new())));
        }
        let folders = v["prefixes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|p| Ok(p.to_owned()))
            .collect();
        let next = v["nextPageToken"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(|t| Token::Objects(t.to_owned()));
        if next.is_some() && next == ask.token {
            return Err(store_err!(
                "{what}: the store answered a page with its own token (the listing would not end)"
            ));
        }
        Ok(Page {
            entries,
            folders,
            next,
            encoded: false,
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
    fn names_are_one_encoded_segment() {
        let b = Bucket::new("bk");
        assert_eq!(
            b.object_url("http://h", "t/data//a b+%.parquet"),
            "http://h/storage/v1/b/bk/o/t%2Fdata%2F%2Fa%20b%2B%25.parquet"
        );
        assert_eq!(
            b.object_url("http://h", "t/ü~"),
            "http://h/storage/v1/b/bk/o/t%2F%C3%BC~"
        );
    }

    #[test]
    fn objects_carry_their_generation() {
        let v = serde_json::json!({"name": "t/x", "size": "12", "updated": "2026-01-02T03:04:05.678Z",
            "etag": "CKih16GjycICEAE=", "generation": "1700000000000001"});
        let o = object_of(&v, "gs://bk/t/x".into());
        assert_eq!(o.size, 12);
        assert_eq!(o.version_id.as_deref(), Some("1700000000000001"));
        assert_eq!(o.last_modified_ms, 1_767_323_045_678);
        assert_eq!(
            object_of(&serde_json::json!({}), String::new()).last_modified_ms,
            i64::MAX
        );
    }
}
