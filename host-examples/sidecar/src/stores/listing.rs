//! A bucket listing fanned out over the folders under its prefix: S3
//! through [`crate::stores::s3::Bucket`], GCS and Azure through `object_store`'s
//! paginated listing ([`ObjectPager`]); both are a [`Pager`].
//!
//! A listing pages one prefix in sequence: each request names where the
//! last one stopped, so a table of 10 million keys is 10,000 requests one
//! after another. Here a listing goes in two steps, with up to
//! `LAKESWEEP_LIST_REQUESTS` requests in flight (default 16; `1` lists the
//! prefix in one sequence, as a plain listing does):
//!
//! 1. **Folders.** The prefix is listed with the delimiter `/`: its direct
//!    keys are listed objects, its folders (common prefixes) are found.
//!    While fewer than [`RUNS_PER_REQUEST`] folders per request in flight
//!    are known, and for at most [`DEPTH`] levels, the folders found are
//!    listed the same way, concurrently (a table's `data/` and
//!    `metadata/`, then `data/`'s partitions).
//! 2. **Runs.** The folders found last are cut into runs by the start of
//!    their names, as many as requests in flight times
//!    [`RUNS_PER_REQUEST`]: a run is every folder under one parent whose
//!    name starts with some string (`p=00`, `p=01`, ... for `p=0000/` to
//!    `p=9999/`; a lone folder is its own run). Each run is one listing of
//!    that start, without the delimiter, keeping the keys under its
//!    folders. Runs are listed concurrently. No run asks the store to start
//!    after a key (stores differ on whether that key is included, and moto
//!    drops the first key after a marker that names no key).
//!
//! **Every key once.** A key under the prefix is either a direct key of a
//! folder listed with the delimiter (listed there, and only there: a run
//! keeps only keys under its own folders, and no folder holds its parent's
//! direct keys), or under exactly one folder found last (listed by that
//! folder's run; runs hold disjoint folders). What is not listed is never
//! deleted: a key written under a folder created after its parent was
//! listed, and the keys under a folder whose name is not UTF-8 (reported
//! as that folder).
//!
//! **Requests.** The folders step costs a page per 1,000 direct entries of
//! each folder it lists; the runs cost their keys over 1,000 plus one page
//! each. A table of 10,000 partitions of 1,000 files takes about 10,000
//! requests either way, but 16 at a time. A prefix whose keys all sit in
//! one folder, unpartitioned, is still one sequence.

use crate::error::HostError;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use object_store::list::{PaginatedListOptions, PaginatedListStore};

use crate::stores::object::{object_of, until_end, Batch, Object};

/// Where a listing goes on, and which listing made it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "cloud"), allow(dead_code))]
pub enum Token {
    /// A `ListObjectsV2` continuation token, opaque.
    Objects(String),
    /// `ListObjectVersions` markers: the next key (decoded) and version id.
    Versions {
        /// The key marker.
        key: String,
        /// The version-id marker, when the store gave one.
        version: Option<String>,
    },
}

/// What one listing request asks for.
pub struct Ask<'a> {
    /// Every key listed starts with this.
    pub prefix: &'a str,
    /// With the delimiter `/`: keys with a further `/` after the prefix
    /// come back as their folders (common prefixes), once each.
    pub delimited: bool,
    /// The page after the one that gave this token; `None` for the first.
    pub token: Option<Token>,
}

/// A listed key or folder name: decoded, or `Err` with the name as the
/// store spelled it when it is not UTF-8 once decoded (kept, reported).
pub type Name = Result<String, Undecodable>;

/// A name the listing could not decode, as the store spelled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecodable(pub String);

/// One listing page.
pub struct Page {
    /// Each key (`Err(raw)` when it is not UTF-8 once decoded) and its
    /// object, in the store's (byte) order.
    pub entries: Vec<(Name, Object)>,
    /// With the delimiter: the folders, spelled like the keys.
    pub folders: Vec<Name>,
    /// The token of the next page; `None` on the last.
    pub next: Option<Token>,
    /// Whether the store URL-encoded the keys (`Err` spellings are raw).
    pub encoded: bool,
}

/// Decodes an `encoding-type=url` key: `%XX` escapes, and `+` for a space
/// (S3 encodes a space as `+` and a `+` as `%2B`). `None` when the bytes are
/// not UTF-8 or an escape is malformed.
#[cfg_attr(not(feature = "cloud"), allow(dead_code))]
pub fn url_decode(s: &str) -> Option<String> {
    String::from_utf8(url_decode_bytes(s)?).ok()
}

/// The bytes of an `encoding-type=url` key (see [`url_decode`]), UTF-8 or
/// not; `None` when an escape is malformed.
pub fn url_decode_bytes(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// A store that answers one listing request at a time (a prefix, with or
/// without the delimiter `/`, from a token): all the fan-out asks of it.
/// Keys come back as stored; a store's failure, in words.
pub trait Pager: Send + Sync + 'static {
    /// One page of `ask`'s listing.
    fn page<'a>(&'a self, ask: &'a Ask<'a>) -> BoxFuture<'a, Result<Page, HostError>>;
}

/// GCS or Azure through `object_store`'s paginated listing, whose prefix
/// is the raw key prefix (no `/` added) and whose keys are its `Path`s: a
/// key it cannot parse (an empty segment) fails the page, so the listing;
/// a folder comes back without its trailing `/`, which is put back.
pub struct ObjectPager(pub Arc<dyn PaginatedListStore>);

impl Pager for ObjectPager {
    fn page<'a>(&'a self, ask: &'a Ask<'a>) -> BoxFuture<'a, Result<Page, HostError>> {
        Box::pin(async move {
            let page_token = match &ask.token {
                None => None,
                Some(Token::Objects(t)) => Some(t.clone()),
                Some(Token::Versions { .. }) => {
                    return Err("a version marker handed to an object listing".into())
                }
            };
            let opts = PaginatedListOptions {
                delimiter: ask.delimited.then_some(Cow::Borrowed("/")),
                page_token,
                ..Default::default()
            };
            let prefix = Some(ask.prefix).filter(|p| !p.is_empty());
            let r = self
                .0
                .list_paginated(prefix, opts)
                .await
                .map_err(|e| e.to_string())?;
            let next = r.page_token.map(Token::Objects);
            if next.is_some() && next == ask.token {
                return Err(
                    "the store answered a page with its own token (the listing would not end)"
                        .into(),
                );
            }
            Ok(Page {
                entries: r
                    .result
                    .objects
                    .into_iter()
                    .map(|m| (Ok(m.location.to_string()), object_of(String::new(), m)))
                    .collect(),
                folders: r
                    .result
                    .common_prefixes
                    .into_iter()
                    .map(|f| Ok(format!("{f}/")))
                    .collect(),
                next,
                encoded: false,
            })
        })
    }
}

/// Requests in flight when `LAKESWEEP_LIST_REQUESTS` is not set.
pub const DEFAULT_REQUESTS: usize = 16;
/// The most requests in flight `LAKESWEEP_LIST_REQUESTS` may ask for.
pub const MAX_REQUESTS: usize = 256;
/// Levels of folders listed with the delimiter, the prefix's own included.
pub const DEPTH: usize = 3;
/// Runs per request in flight: enough that a slow run (a folder much
/// larger than its siblings) leaves the other requests work.
pub const RUNS_PER_REQUEST: usize = 4;

/// The requests in flight per listing: `LAKESWEEP_LIST_REQUESTS`, from 1 to
/// [`MAX_REQUESTS`], else [`DEFAULT_REQUESTS`]; an unreadable value is an
/// error (no listing), not a guess.
pub fn requests() -> Result<usize, HostError> {
    requests_of(std::env::var("LAKESWEEP_LIST_REQUESTS").ok().as_deref())
}

/// [`requests`] from the variable's value, if set.
fn requests_of(value: Option<&str>) -> Result<usize, HostError> {
    let Some(v) = value else {
        return Ok(DEFAULT_REQUESTS);
    };
    count_setting("LAKESWEEP_LIST_REQUESTS", v, "requests", MAX_REQUESTS)
}

/// The value `v` of the variable `name`: a whole number of `what` from 1
/// to `max`, or an error naming the variable, the value and the range.
pub fn count_setting(name: &str, v: &str, what: &str, max: usize) -> Result<usize, HostError> {
    v.trim()
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| store_err!("{name}={v} is not a number of {what} from 1 to {max}"))
}

/// Why a listing stopped early.
enum Stop {
    /// Nobody reads the listing any more (the caller had what it needed).
    Gone,
    /// A request failed, or the store broke the listing's rules; in words.
    Failed(HostError),
}

/// Where listed objects go.
struct Sink {
    tx: tokio::sync::mpsc::Sender<Batch>,
    uri: Box<dyn Fn(&str) -> String + Send + Sync>,
    skipped: Arc<Mutex<Vec<String>>>,
    /// The listing's prefix: its own folder marker is not under it.
    root: String,
}

impl Sink {
    /// Gives a page's listed keys to the reader, in one batch; an
    /// unrepresentable one goes to `skipped`.
    async fn send(&self, entries: impl IntoIterator<Item = (Name, Object)>) -> Result<(), Stop> {
        let mut batch = Vec::new();
        for (key, mut object) in entries {
            match key {
                // The prefix's own folder marker (`table/`, as S3A and
                // consoles write it) is not under the prefix.
                Ok(k) if k == self.root => {}
                Ok(k) => {
                    object.uri = (self.uri)(&k);
                    batch.push(object);
                }
                Err(Undecodable(raw)) => self.skip(raw),
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        self.tx.send(Ok(Some(batch))).await.map_err(|_| Stop::Gone)
    }

    fn skip(&self, raw: String) {
        if let Ok(mut v) = self.skipped.lock() {
            v.push(raw);
        }
    }
}

/// Lists every key under `prefix` (see the module's comment), streamed in
/// no particular order; the stream ends with an error when a request fails
/// or the store breaks the listing's rules, never early without one.
pub fn list(
    bucket: Arc<dyn Pager>,
    prefix: String,
    uri: Box<dyn Fn(&str) -> String + Send + Sync>,
    skipped: Arc<Mutex<Vec<String>>>,
) -> BoxStream<'static, Result<Object, HostError>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Batch>(2048);
    tokio::spawn(async move {
        let sink = Sink {
            tx,
            uri,
            skipped,
            root: prefix.clone(),
        };
        let done = match requests() {
            Ok(1) => flat(&*bucket, &prefix, None, &sink).await,
            Ok(n) => fan_out(&*bucket, &prefix, n, &sink).await,
            Err(e) => Err(Stop::Failed(e)),
        };
        let _ = match done {
            Ok(()) => sink.tx.send(Ok(None)).await,
            Err(Stop::Failed(e)) => sink.tx.send(Err(e)).await,
            Err(Stop::Gone) => Ok(()),
        };
    });
    until_end(rx, "bucket listing")
}

/// One page of a listing, its failure in words naming the prefix.
async fn page(bucket: &dyn Pager, ask: &Ask<'_>) -> Result<Page, Stop> {
    bucket
        .page(ask)
        .await
        .map_err(|e| Stop::Failed(store_err!("list {}: {e}", ask.prefix)))
}

/// Every key under `prefix` in one sequence of pages, without the
/// delimiter; with `only`, just the keys under one of those folders
/// (sorted siblings: a run's).
async fn flat(
    bucket: &dyn Pager,
    prefix: &str,
    only: Option<&[String]>,
    sink: &Sink,
) -> Result<(), Stop> {
    let mut token = None;
    loop {
        let ask = Ask {
            prefix,
            delimited: false,
            token: token.take(),
        };
        let p = page(bucket, &ask).await?;
        let encoded = p.encoded;
        sink.send(p.entries.into_iter().filter(|(key, _)| {
            only.is_none_or(|folders| within(folders, &bytes_of(key, encoded)))
        }))
        .await?;
        match p.next {
            Some(t) => token = Some(t),
            None => return Ok(()),
        }
    }
}

/// The folders step, then the runs.
async fn fan_out(
    bucket: &dyn Pager,
    prefix: &str,
    requests: usize,
    sink: &Sink,
) -> Result<(), Stop> {
    let want = requests * RUNS_PER_REQUEST;
    let mut level = vec![prefix.to_owned()];
    for depth in 1..=DEPTH {
        let found: Vec<Vec<String>> = futures::stream::iter(level)
            .map(|f| async move { folders(bucket, &f, sink).await })
            .buffered(requests)
            .try_collect()
            .await?;
        let count: usize = found.iter().map(Vec::len).sum();
        if count == 0 {
            return Ok(());
        }
        if count >= want || depth == DEPTH {
            return futures::stream::iter(runs(found, want).into_iter().map(Ok))
                .try_for_each_concurrent(requests, |r| async move {
                    flat(bucket, &r.prefix, Some(&r.folders), sink).await
                })
                .await;
        }
        level = found.into_iter().flatten().collect();
    }
    Ok(())
}

/// Lists `folder` with the delimiter: gives its direct keys to the sink and
/// answers its sub-folders, sorted. A sub-folder whose name is not UTF-8
/// cannot be asked for: it is skipped (reported, nothing under it listed).
async fn folders(bucket: &dyn Pager, folder: &str, sink: &Sink) -> Result<Vec<String>, Stop> {
    let mut subs = Vec::new();
    let mut token = None;
    loop {
        let ask = Ask {
            prefix: folder,
            delimited: true,
            token: token.take(),
        };
        let p = page(bucket, &ask).await?;
        for (key, _) in &p.entries {
            // A direct key has no `/` after the folder: a store that
            // ignored the delimiter would have a run list it again.
            if let Ok(k) = key {
                if !k.starts_with(folder) || k[folder.len()..].contains('/') {
                    return Err(Stop::Failed(store_err!(
                        "list {folder}: the store answered `{k}` as a key directly under it"
                    )));
                }
            }
        }
        sink.send(p.entries).await?;
        for f in p.folders {
            match f {
                Ok(f)
                    if f.len() > folder.len()
                        && f.starts_with(folder)
                        && f.ends_with('/')
                        && !f[folder.len()..f.len() - 1].contains('/') =>
                {
                    subs.push(f)
                }
                Ok(f) => {
                    return Err(Stop::Failed(store_err!(
                        "list {folder}: the store answered `{f}` as a folder under it"
                    )))
                }
                Err(Undecodable(raw)) => sink.skip(format!("{raw} (a folder: every key under it)")),
            }
        }
        match p.next {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    subs.sort_unstable();
    subs.dedup();
    Ok(subs)
}

/// Sibling folders listed together: every folder found under one parent
/// whose name starts with `prefix`, so that listing `prefix` lists every
/// key under them (and the parent's direct keys that start with it, which
/// the folders step listed: a run passes them over).
#[derive(Debug, PartialEq, Eq)]
struct Run {
    /// What the folders' keys start with: the longest start they share
    /// (the folder itself, for a run of one).
    prefix: String,
    /// The folders, sorted, at least one; siblings, each ending in `/`.
    folders: Vec<String>,
}

impl Run {
    /// The run of `folders` (sorted siblings, at least one).
    fn of(folders: Vec<String>) -> Run {
        let prefix = shared_start(&folders[0], &folders[folders.len() - 1]).to_owned();
        Run { prefix, folders }
    }

    /// Splits the run by the character after its prefix: two runs or more
    /// (its first and last folders differ there), or itself when it holds
    /// one folder.
    fn split(self) -> Vec<Run> {
        let n = self.prefix.len();
        self.folders
            .chunk_by(|a, b| a[n..].chars().next() == b[n..].chars().next())
            .map(|part| Run::of(part.to_vec()))
            .collect()
    }
}

/// Cuts each parent's folders (sorted siblings, a list per parent) into
/// runs, about `want` in all, each parent's share by its count of folders
/// (at least one): the run with the most folders is split (see
/// [`Run::split`]) until the parent has its share or every run is one
/// folder. Every folder is in exactly one run.
fn runs(found: Vec<Vec<String>>, want: usize) -> Vec<Run> {
    let total: usize = found.iter().map(Vec::len).sum();
    let mut out = Vec::new();
    for subs in found {
        if subs.is_empty() {
            continue;
        }
        let share = (subs.len() * want).div_ceil(total.max(1)).max(1);
        let mut mine = vec![Run::of(subs)];
        while mine.len() < share {
            let Some(i) = (0..mine.len())
                .filter(|&i| mine[i].folders.len() > 1)
                .max_by_key(|&i| mine[i].folders.len())
            else {
                break;
            };
            let parts = mine.swap_remove(i).split();
            mine.extend(parts);
        }
        mine.sort_unstable_by(|a, b| a.prefix.cmp(&b.prefix));
        out.extend(mine);
    }
    out
}

/// The bytes a listed key is compared by: its decoded bytes, or for a key
/// that did not decode, its spelling decoded as far as it goes.
fn bytes_of(key: &Name, encoded: bool) -> Cow<'_, [u8]> {
    match key {
        Ok(k) => Cow::Borrowed(k.as_bytes()),
        Err(Undecodable(raw)) if encoded => url_decode_bytes(raw)
            .map(Cow::Owned)
            .unwrap_or(Cow::Borrowed(raw.as_bytes())),
        Err(Undecodable(raw)) => Cow::Borrowed(raw.as_bytes()),
    }
}

/// The longest start `a` and `b` share, cut at a character.
fn shared_start<'a>(a: &'a str, b: &str) -> &'a str {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    &a[..n]
}

/// Whether `key` lies under one of `folders` (sorted siblings): under the
/// last folder not after it, since any key between a folder and a key under
/// it is under it too, and no sibling's name holds a `/`.
fn within(folders: &[String], key: &[u8]) -> bool {
    let i = folders.partition_point(|f| f.as_bytes() <= key);
    i > 0 && key.starts_with(folders[i - 1].as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_keys_decode_like_s3_encodes_them() {
        assert_eq!(url_decode("data/a%2Bb+c").as_deref(), Some("data/a+b c"));
        assert_eq!(url_decode("data//x%01").as_deref(), Some("data//x\u{1}"));
        assert_eq!(url_decode("c%3D100%2525/").as_deref(), Some("c=100%25/"));
        assert_eq!(url_decode("%C3%BC").as_deref(), Some("ü"));
        assert_eq!(url_decode("%FF"), None, "not UTF-8");
        assert_eq!(url_decode("%4"), None, "cut escape");
        assert_eq!(url_decode("%G0"), None, "bad hex");
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn runs_split_each_parent_by_its_share_at_name_starts() {
        let subs: Vec<String> = (0..100).map(|i| format!("t/data/p={i:04}/")).collect();
        let found = vec![subs.clone(), vec![], names(&["t/x/a/", "t/x/b/"])];
        let r = runs(found, 6);
        let prefixes: Vec<&str> = r.iter().map(|r| r.prefix.as_str()).collect();
        assert_eq!(
            prefixes,
            vec![
                "t/data/p=000",
                "t/data/p=001",
                "t/data/p=002",
                "t/data/p=003",
                "t/data/p=004",
                "t/data/p=005",
                "t/data/p=006",
                "t/data/p=007",
                "t/data/p=008",
                "t/data/p=009",
                "t/x/"
            ]
        );
        let all: Vec<String> = r.iter().flat_map(|r| r.folders.clone()).collect();
        let mut want = subs;
        want.extend(names(&["t/x/a/", "t/x/b/"]));
        assert_eq!(all, want, "every folder in one run, in order");
        for r in &r {
            assert!(r.folders.iter().all(|f| f.starts_with(&r.prefix)));
        }
    }

    #[test]
    fn a_run_holds_every_sibling_its_prefix_names() {
        let subs = names(&["t/a b/", "t/a/", "t/a0/", "t/b/", "t/\u{e8}/", "t/\u{e9}/"]);
        let r = runs(vec![subs.clone()], 100);
        let prefixes: Vec<&str> = r.iter().map(|r| r.prefix.as_str()).collect();
        assert_eq!(
            prefixes,
            vec!["t/a b/", "t/a/", "t/a0/", "t/b/", "t/\u{e8}/", "t/\u{e9}/"]
        );
        let one = runs(vec![subs.clone()], 1);
        assert_eq!(
            one,
            vec![Run {
                prefix: "t/".into(),
                folders: subs.clone()
            }]
        );
        for want in 1..8 {
            let r = runs(vec![subs.clone()], want);
            for f in &subs {
                let holders: Vec<&Run> = r.iter().filter(|r| f.starts_with(&r.prefix)).collect();
                assert_eq!(holders.len(), 1, "{f} in one run's prefix ({want})");
                assert!(
                    holders[0].folders.contains(f),
                    "{f} listed by that run ({want})"
                );
            }
        }
    }

    #[test]
    fn a_run_keeps_exactly_the_keys_under_its_folders() {
        let folders = names(&["t/a b/", "t/a/", "t/a0/"]);
        for (key, under) in [
            ("t/a/x", true),
            ("t/a/", true),
            ("t/a//x", true),
            ("t/a b/y", true),
            ("t/a0/z", true),
            ("t/a", false),
            ("t/a.x", false),
            ("t/a-/x", false),
            ("t/a00", false),
            ("t/a1/x", false),
            ("t/", false),
        ] {
            assert_eq!(within(&folders, key.as_bytes()), under, "{key}");
        }
    }

    #[test]
    fn a_run_asks_for_what_its_folders_share() {
        assert_eq!(shared_start("t/p=0010/", "t/p=0019/"), "t/p=001");
        assert_eq!(shared_start("t/a/", "t/a/"), "t/a/");
        assert_eq!(
            shared_start("t/\u{e9}/", "t/\u{e8}/"),
            "t/",
            "not inside a character"
        );
    }

    #[test]
    fn undecodable_keys_are_placed_by_their_bytes() {
        let k: Name = Err(Undecodable("t/a/%FF".into()));
        assert_eq!(&*bytes_of(&k, true), b"t/a/\xff");
        assert_eq!(&*bytes_of(&k, false), b"t/a/%FF");
    }

    #[test]
    fn the_request_count_is_read_strictly() {
        assert_eq!(requests_of(None), Ok(DEFAULT_REQUESTS));
        assert_eq!(requests_of(Some("32")), Ok(32));
        assert_eq!(requests_of(Some("1")), Ok(1));
        assert!(requests_of(Some("0")).is_err());
        assert!(requests_of(Some("257")).is_err());
        assert!(requests_of(Some("many")).unwrap_err().contains("many"));
    }
}
