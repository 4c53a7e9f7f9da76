//! The local file system, walked with `std::fs` (not `object_store`'s
//! `LocalFileSystem`, whose listing percent-decodes names): a parallel walk
//! that lists every file once, byte for byte, and stops at a link; HEADs
//! by stat; identities from inode and change time.

use crate::error::HostError;
use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;

use crate::stores::object::{until_end, Batch, Object};

/// [`Store::look_up`] of `objects`, whose files (for those named only)
/// are `files`.
pub(crate) fn look_up_files(
    objects: &[Object],
    files: &[Option<std::path::PathBuf>],
    folders: Folders<'_>,
) -> Result<Vec<Object>, HostError> {
    let mut out = Vec::with_capacity(objects.len());
    // Folders checked, and whether each is still there.
    let mut checked: HashMap<&std::path::Path, bool> = HashMap::new();
    for (o, f) in objects.iter().zip(files) {
        let Some(f) = f else {
            out.push(o.clone());
            continue;
        };
        let parent = f.parent().unwrap_or(folders.root);
        let present = match checked.get(parent) {
            Some(p) => *p,
            None => {
                let p = folders.check(parent)?;
                checked.insert(parent, p);
                p
            }
        };
        if !present {
            continue;
        }
        match std::fs::symlink_metadata(f) {
            Ok(m) if m.is_file() => out.push(local_object(o.uri.clone(), &m)),
            Ok(_) => {
                return Err(store_err!(
                    "list {}: {} is a symbolic link or special file; lakesweep sweeps only regular files",
                    f.parent().map_or(String::new(), |p| p.display().to_string()),
                    f.display()
                ))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(store_err!("stat {}: {e}", f.display())),
        }
    }
    Ok(out)
}

/// The folder a listing walked (`root`, as named, and `walked`, its
/// canonical path when looked up).
#[derive(Clone, Copy)]
pub(crate) struct Folders<'a> {
    pub(crate) root: &'a std::path::Path,
    pub(crate) walked: &'a std::path::Path,
}

impl Folders<'_> {
    /// Whether `folder` (under the root, as walked) is still there, as the
    /// same folder: its canonical path is the walked root's followed by
    /// the same names (no folder on the way became a link). A folder gone
    /// is `false` (its files are gone with it).
    fn check(&self, folder: &std::path::Path) -> Result<bool, HostError> {
        let rel = folder.strip_prefix(self.root).map_err(|_| {
            format!(
                "{} is not under the folder listed, {} (internal error)",
                folder.display(),
                self.root.display()
            )
        })?;
        match std::fs::canonicalize(folder) {
            Ok(c) if c == self.walked.join(rel) => Ok(true),
            Ok(c) => Err(store_err!(
                "list {}: it now resolves to {} (a folder replaced by a link since it was listed); lakesweep sweeps only regular files",
                folder.display(),
                c.display()
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(store_err!("list {}: {e}", folder.display())),
        }
    }
}

/// What a local walk reads of each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walked {
    /// Its size and time (a stat).
    Stat,
    /// Its name and type only (the folder's entry).
    Names,
}

/// Whether a local file last changed at least a second ago by this
/// machine's clock (a change time ahead of the clock: not settled).
pub(crate) fn settled(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let changed_ns = i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec());
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    now_ns - changed_ns >= 1_000_000_000
}

/// A local file's content identity (see [`Store::content_id`]).
pub(crate) fn local_id(m: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    format!(
        "local:{}:{}:{}:{}.{:09}:{}.{:09}",
        m.dev(),
        m.ino(),
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    )
}

pub(crate) fn local_object(uri: String, m: &std::fs::Metadata) -> Object {
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        // Unknown time: treated as brand new (kept), never as old.
        .unwrap_or(i64::MAX);
    Object {
        uri,
        size: m.len(),
        last_modified_ms: mtime,
        etag: None,
        version_id: None,
        named_only: false,
    }
}

/// Files a walking thread sends at once.
const WALK_BATCH: usize = 256;

/// The most threads `LAKESWEEP_WALK_THREADS` may ask for.
pub const MAX_WALK_THREADS: usize = 256;

/// Threads walking a local folder: `LAKESWEEP_WALK_THREADS`, from 1 to
/// [`MAX_WALK_THREADS`], else four per core (at least 4, at most 32). A
/// walk whose metadata is not cached waits on the disk for every stat:
/// threads beyond the cores keep the disk and the cores busy (on 2 cores,
/// 8.7 million files not cached, `find` run N at once: 147 s with 2, 113 s
/// with 4, 96 s with 8, 103 s with 16; cached, the same with 2 or 8; the
/// plan of 10 million such files: 153 to 172 s with 8 walking threads, 178
/// to 334 s with 2, and 4 % slower with 8 when cached). An unreadable
/// value is an error (no listing), not a guess.
pub fn walk_threads() -> Result<usize, HostError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    walk_threads_of(
        std::env::var("LAKESWEEP_WALK_THREADS").ok().as_deref(),
        cores,
    )
}

/// [`walk_threads`] from the variable's value, if set, on `cores` cores.
pub(crate) fn walk_threads_of(value: Option<&str>, cores: usize) -> Result<usize, HostError> {
    let Some(v) = value else {
        return Ok(cores.saturating_mul(4).clamp(4, 32));
    };
    crate::stores::listing::count_setting("LAKESWEEP_WALK_THREADS", v, "threads", MAX_WALK_THREADS)
}

/// Walks `dir` on `threads` blocking threads (sharing a stack of
/// folders) and streams its files, in no particular order. A
/// folder is known by its entry's type, without a stat of its own; each
/// file is looked up relative to its open folder (`DirEntry::metadata`, no
/// symbolic link followed), not by its whole path. A symbolic link or any
/// other non-regular file ends the stream with an error (deleting a link
/// to a folder would cut off live data; following it could reach another
/// table). A file whose name is not UTF-8 is put in `skipped`: no
/// reference (metadata is UTF-8) can name it, so it is kept and reported.
pub(crate) fn list_local(
    dir: std::path::PathBuf,
    threads: usize,
    walked: Walked,
    skipped: Arc<std::sync::Mutex<Vec<String>>>,
) -> BoxStream<'static, Result<Object, HostError>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Batch>(64);
    tokio::task::spawn_blocking(move || {
        let stack = match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => vec![dir],
            _ => vec![],
        };
        let walk = Walk {
            state: std::sync::Mutex::new((stack, 0)),
            wake: std::sync::Condvar::new(),
            failed: std::sync::atomic::AtomicBool::new(false),
            walked,
        };
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| walk.work(&tx, &skipped));
            }
        });
        if !walk.failed.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = tx.blocking_send(Ok(None));
        }
    });
    until_end(rx, "local listing")
}

/// One folder read: on drop, its sub-folders join the stack and the
/// count of folders being read goes down; a panic fails the walk.
pub(crate) struct Done<'a> {
    walk: &'a Walk,
    found: Vec<std::path::PathBuf>,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::SeqCst;
        if std::thread::panicking() {
            self.walk.failed.store(true, SeqCst);
        }
        let mut g = match self.walk.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let more = !self.found.is_empty();
        g.0.append(&mut self.found);
        g.1 -= 1;
        // Waiting workers wait for folders, the walk's end or a failure.
        if more || g.1 == 0 || self.walk.failed.load(SeqCst) {
            self.walk.wake.notify_all();
        }
    }
}

/// The shared state of a parallel folder walk: folders to read and how
/// many are being read (the walk ends when both are zero), and whether a
/// worker failed (then every worker stops and no end is sent).
pub(crate) struct Walk {
    state: std::sync::Mutex<(Vec<std::path::PathBuf>, usize)>,
    wake: std::sync::Condvar,
    failed: std::sync::atomic::AtomicBool,
    walked: Walked,
}

impl Walk {
    /// Takes folders until none is left and none is being read. The files
    /// found go out in batches of [`WALK_BATCH`] across folders (a table of
    /// one file per folder is not a message per file); a batch is sent
    /// before the worker waits or ends, so every file is sent before the
    /// walk's end.
    fn work(&self, tx: &tokio::sync::mpsc::Sender<Batch>, skipped: &std::sync::Mutex<Vec<String>>) {
        use std::sync::atomic::Ordering::SeqCst;
        let mut batch = Vec::with_capacity(WALK_BATCH);
        loop {
            let next = {
                let mut g = match self.state.lock() {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
                loop {
                    if self.failed.load(SeqCst) {
                        return;
                    }
                    if let Some(d) = g.0.pop() {
                        g.1 += 1;
                        break Some(d);
                    }
                    if !batch.is_empty() {
                        // Sent outside the lock, then back here.
                        break None;
                    }
                    if g.1 == 0 {
                        self.wake.notify_all();
                        return;
                    }
                    g = match self.wake.wait(g) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    };
                }
            };
            let Some(d) = next else {
                if tx
                    .blocking_send(Ok(Some(std::mem::take(&mut batch))))
                    .is_err()
                {
                    self.failed.store(true, SeqCst);
                    self.wake.notify_all();
                    return;
                }
                continue;
            };
            // Counts the folder done however reading it ends (a panic
            // included: then the walk fails instead of waiting forever).
            let mut done = Done {
                walk: self,
                found: Vec::new(),
            };
            if !self.read_folder(&d, tx, skipped, &mut done.found, &mut batch) {
                self.failed.store(true, SeqCst);
            }
        }
    }

    /// Adds the files of folder `d` to `batch` (sending it when full) and
    /// collects its sub-folders; false when it sent an error (or the
    /// receiver is gone).
    fn read_folder(
        &self,
        d: &std::path::Path,
        tx: &tokio::sync::mpsc::Sender<Batch>,
        skipped: &std::sync::Mutex<Vec<String>>,
        found: &mut Vec<std::path::PathBuf>,
        batch: &mut Vec<Object>,
    ) -> bool {
        let entries = match std::fs::read_dir(d) {
            Ok(e) => e,
            Err(e) => {
                let _ = tx.blocking_send(Err(store_err!("list {}: {e}", d.display())));
                return false;
            }
        };
        for e in entries {
            if self.failed.load(std::sync::atomic::Ordering::SeqCst) {
                return true;
            }
            // A folder is known from its entry's type (no stat); a file is
            // stat-ed for its size and time, relative to the open folder,
            // unless names alone are asked for (its type is the entry's).
            let r = e
                .and_then(|e| {
                    let t = e.file_type()?;
                    if t.is_dir() {
                        return Ok((e.path(), None));
                    }
                    if self.walked == Walked::Names {
                        return Ok((e.path(), Some((t.is_file(), None))));
                    }
                    let m = e.metadata()?;
                    Ok((e.path(), Some((m.is_file(), Some(m)))))
                })
                .map_err(|err| store_err!("list {}: {err}", d.display()));
            let (path, regular, m) = match r {
                Ok((path, Some((regular, m)))) => (path, regular, m),
                Ok((path, None)) => {
                    found.push(path);
                    continue;
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return false;
                }
            };
            match path.to_str() {
                _ if !regular => {
                    let _ = tx.blocking_send(Err(store_err!(
                        "list {}: {} is a symbolic link or special file; lakesweep sweeps only regular files",
                        d.display(),
                        path.display()
                    )));
                    return false;
                }
                Some(p) => batch.push(match &m {
                    Some(m) => local_object(format!("file://{p}"), m),
                    None => Object::named(format!("file://{p}")),
                }),
                None => {
                    if let Ok(mut v) = skipped.lock() {
                        v.push(format!("file://{}", path.display()));
                    }
                }
            }
            if batch.len() == WALK_BATCH {
                let full = std::mem::replace(batch, Vec::with_capacity(WALK_BATCH));
                if tx.blocking_send(Ok(Some(full))).is_err() {
                    return false;
                }
            }
        }
        true
    }
}
