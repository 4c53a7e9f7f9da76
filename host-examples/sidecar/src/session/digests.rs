//! Iceberg manifests and Delta checkpoint files read for a session: each is
//! decoded into its digest (`digest-manifest`, `digest-checkpoint`) by a
//! spare instance of the component on the blocking pool, so they decode on
//! every core while the session keeps their files (checkpoint files only
//! with the cache: see `plan`). With `--manifest-cache` each digest is also
//! filed on disk under the identity of the bytes it was made from
//! ([`Store::content_id`]: ETag and version, or inode and change time), and
//! a later plan reads the digest instead of the file when the file's
//! identity now is the one it was made from: manifests and checkpoints are
//! written once, so a second plan of an unchanged table costs its listing
//! and metadata reads.
//!
//! Nothing here decides anything: the session checks a digest exactly as it
//! checks the bytes (its checksum and URI, the length its manifest list or
//! log listing gives, the entry counts of the snapshot summaries), and bytes
//! the digest refuses are handed to the session as bytes, so its error is
//! the one a plan without digests gives.

use crate::error::HostError;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::component::{hex, Planner, Wasm};
use crate::stores::Store;

/// Which files a session lets a digest answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An Iceberg manifest (`is-manifest-read`).
    Manifest,
    /// A Delta checkpoint part, V2 checkpoint or sidecar (`is-checkpoint-read`).
    Checkpoint,
}

/// What a digested read answers the session with.
pub enum Answer {
    /// The file's digest (`cached`: read from the cache, not made now).
    Digest { text: String, cached: bool },
    /// The bytes, which did not digest: the session says why.
    Bytes(Vec<u8>),
    /// The file does not exist.
    Missing,
}

/// Reads and digests manifests and checkpoint files for one session.
pub struct Digests {
    wasm: Wasm,
    /// Idle component instances (at most one per core is ever made).
    idle: Mutex<Vec<Planner>>,
    /// Instances that may digest at once.
    permits: tokio::sync::Semaphore,
    cache: Option<DigestCache>,
    hits: AtomicUsize,
    /// Larger files go to the session as bytes, where its memory
    /// budget judges them (a worker instance has no budget of its own).
    max_bytes: usize,
}

impl Digests {
    /// Digesting with the component `wasm`; with a cache when `cache` and a
    /// cache folder exists for this user (`LAKESWEEP_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/lakesweep`, else `~/.cache/lakesweep`).
    /// Files over a sixteenth of `memory_budget` bytes are not digested
    /// here.
    pub fn new(wasm: Wasm, cache: bool, memory_budget: u64) -> Result<Arc<Digests>, HostError> {
        let cache = match cache.then(crate::component::cache_dir).flatten() {
            Some(root) => Some(DigestCache {
                dir: root
                    .join("digests")
                    .join(&crate::component::wasm_sha256(&wasm)?[..16]),
            }),
            None if cache => {
                return Err(
                    "--manifest-cache: no cache folder (LAKESWEEP_CACHE_DIR is empty \
                     and neither XDG_CACHE_HOME nor HOME is set)"
                        .into(),
                )
            }
            None => None,
        };
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
        Ok(Arc::new(Digests {
            wasm,
            idle: Mutex::new(Vec::new()),
            permits: tokio::sync::Semaphore::new(cores),
            cache,
            hits: AtomicUsize::new(0),
            max_bytes: usize::try_from(memory_budget / 16).unwrap_or(usize::MAX),
        }))
    }

    /// Digests answered from the cache so far.
    pub fn cache_hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }

    /// The cache folder of this component's digests, if caching.
    pub fn cache_folder(&self) -> Option<&std::path::Path> {
        self.cache.as_ref().map(|c| c.dir.as_path())
    }

    /// Reads the `kind` of file at `uri` (in `store`) and digests it, or
    /// finds its digest in the cache.
    pub async fn answer(
        self: &Arc<Self>,
        store: &Store,
        uri: &str,
        kind: Kind,
    ) -> Result<Answer, HostError> {
        if let Some(c) = &self.cache {
            if let Some(id) = store.content_id(uri).await? {
                if let Some(text) = c.get(uri, &id) {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(Answer::Digest { text, cached: true });
                }
            }
        }
        let Some((bytes, id)) = store.read_with_id(uri).await? else {
            return Ok(Answer::Missing);
        };
        if bytes.len() > self.max_bytes {
            return Ok(Answer::Bytes(bytes));
        }
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| refused!("digest {uri}: {e}"))?;
        let me = self.clone();
        let u = uri.to_owned();
        let (bytes, digest) = tokio::task::spawn_blocking(move || me.digest(&u, bytes, kind))
            .await
            .map_err(|e| refused!("digest {uri}: {e}"))?;
        drop(permit);
        match digest {
            Ok(text) => {
                if let (Some(c), Some(id)) = (&self.cache, id) {
                    c.put(uri, &id, &text);
                }
                Ok(Answer::Digest {
                    text,
                    cached: false,
                })
            }
            Err(_) => Ok(Answer::Bytes(bytes)),
        }
    }

    /// Digests `bytes` on an idle instance (made when none is idle); an
    /// instance that failed, or digested a checkpoint file, is dropped, not
    /// reused.
    fn digest(
        &self,
        uri: &str,
        bytes: Vec<u8>,
        kind: Kind,
    ) -> (Vec<u8>, Result<String, HostError>) {
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        let mut planner = match idle.map_or_else(|| Planner::load(&self.wasm), Ok) {
            Ok(p) => p,
            Err(e) => return (bytes, Err(e)),
        };
        let r = match kind {
            Kind::Manifest => planner.digest_manifest(uri, &bytes),
            Kind::Checkpoint => planner.digest_checkpoint(uri, &bytes),
        };
        // A checkpoint part grows an instance's memory by megabytes, which
        // wasm never gives back: that instance is not kept for reuse.
        if r.is_ok() && kind == Kind::Manifest {
            if let Ok(mut v) = self.idle.lock() {
                v.push(planner);
            }
        }
        (bytes, r)
    }
}

/// Digests on disk: one file per manifest or checkpoint file version, named by the SHA-256 of
/// its URI and content identity, holding the digest text. A file whose
/// checksum line does not match its text (cut or damaged) is removed and
/// the file read again. The folder may be deleted at any time. It is
/// this user's own, as the compiled component's cache beside it: whoever
/// can write there can already run code as this user.
struct DigestCache {
    dir: PathBuf,
}

impl DigestCache {
    fn file(&self, uri: &str, id: &str) -> PathBuf {
        let mut h = Sha256::new();
        h.update(uri.as_bytes());
        h.update([0]);
        h.update(id.as_bytes());
        self.dir.join(hex(&h.finalize()))
    }

    fn get(&self, uri: &str, id: &str) -> Option<String> {
        let file = self.file(uri, id);
        let text = std::fs::read_to_string(&file).ok()?;
        if whole(&text) {
            Some(text)
        } else {
            let _ = std::fs::remove_file(&file);
            None
        }
    }

    /// Best effort: a digest that cannot be filed only costs a read later.
    fn put(&self, uri: &str, id: &str, text: &str) {
        let file = self.file(uri, id);
        let tmp = file.with_extension(format!("tmp-{}", std::process::id()));
        if std::fs::create_dir_all(&self.dir).is_ok() && std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, &file);
        }
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Whether `text` ends with the checksum line of everything before it
/// (the digest's own integrity line; the session checks it again).
fn whole(text: &str) -> bool {
    let Some(body) = text.strip_suffix('\n') else {
        return false;
    };
    let Some(cut) = body.rfind('\n').map(|i| i + 1) else {
        return false;
    };
    let (before, last) = text.split_at(cut);
    last.strip_prefix("xxh3-128 ")
        .and_then(|s| s.strip_suffix('\n'))
        .is_some_and(|sum| sum == checksum(before))
}

/// A digest's seal: the XXH3-128 of the text before it, 32 lowercase hex
/// digits (the component's own; see its `digest` module for why).
fn checksum(text: &str) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(body: &str) -> String {
        format!("{body}xxh3-128 {}\n", checksum(body))
    }

    #[test]
    fn a_digest_is_whole_only_with_its_checksum_line() {
        let d = sealed("lakesweep-manifest-digest 2\nuri \"x\"\nlength 1\nentries 0\n");
        assert!(whole(&d));
        assert!(!whole(&d[..d.len() - 1]), "cut before its last newline");
        assert!(!whole(&d[..d.len() / 2]), "cut in half");
        assert!(!whole(&d.replace("length 1", "length 2")), "a changed byte");
        assert!(!whole(""));
    }

    #[test]
    fn entries_are_filed_by_uri_and_identity_and_damaged_ones_dropped() {
        let dir = std::env::temp_dir().join(format!("lakesweep-digests-{}", std::process::id()));
        let c = DigestCache { dir: dir.clone() };
        let d = sealed("lakesweep-manifest-digest 2\nuri \"x\"\nlength 1\nentries 0\n");
        c.put("file:///t/m.avro", "local:1", &d);
        assert_eq!(c.get("file:///t/m.avro", "local:1").as_deref(), Some(&*d));
        assert_eq!(
            c.get("file:///t/m.avro", "local:2"),
            None,
            "another version"
        );
        assert_eq!(
            c.get("file:///t/n.avro", "local:1"),
            None,
            "another manifest"
        );
        std::fs::write(c.file("file:///t/m.avro", "local:1"), &d[..10]).unwrap();
        assert_eq!(c.get("file:///t/m.avro", "local:1"), None);
        assert!(!c.file("file:///t/m.avro", "local:1").exists(), "removed");
        let _ = std::fs::remove_dir_all(dir);
    }
}
