//! The table's listing, started when the session starts instead of when it
//! asks for it: the walk of a table's folders (or its pages of an object
//! store) then runs while the session reads metadata, manifest lists,
//! manifests or a Delta checkpoint, and the session's listing request is
//! answered from what was already listed. On a local disk the walk is
//! about half of a large table's plan; this overlaps it with the other
//! half.
//!
//! Nothing is decided here and nothing changes for the plan: the objects
//! are the ones a listing started later would find, except objects written
//! or removed meanwhile (a listing is never a snapshot of a moment; the
//! planner keeps what is young and checks the table's pointer again after
//! the listing, whenever it started). The session gets them only when it
//! asks for a prefix whose listing target ([`Store::listing_target`]) is
//! the one listed ahead, through a store of its own, so its unrepresentable
//! keys and fallbacks are reported with that listing only.
//!
//! Memory is bounded: objects listed ahead wait within a byte budget
//! (their URI, tags and a fixed overhead each, counted by
//! [`Object::held_bytes`]); when it is full the walk waits for the session.
//! A listing ahead that the session never asks for is stopped when it is
//! dropped.

use crate::error::HostError;
use std::sync::Arc;

use futures::stream::{BoxStream, StreamExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::stores::{Batch, Object, Store};

/// Objects sent to the waiting side at once.
const BATCH: usize = 1000;

/// A listing running ahead of the session's request for it.
pub struct ListingAhead {
    /// What is listed ([`Store::listing_target`]).
    target: String,
    /// The store listing it (its own: notes and skipped keys are this listing's).
    store: Store,
    /// Batches of objects with the budget they hold; `Ok(None)` is the end.
    rx: mpsc::UnboundedReceiver<(Batch, Option<OwnedSemaphorePermit>)>,
    task: tokio::task::AbortHandle,
    /// The session took the listing (it runs on to its end).
    taken: bool,
}

impl ListingAhead {
    /// Starts listing `prefix` (a URI) on a store of its own, holding at
    /// most `budget_bytes` of listed objects until the session asks for
    /// them; local files by their names alone with `names`
    /// ([`Store::list_names`]). None when `prefix` names nothing a store
    /// can list (the session's own request then fails or lists as it would
    /// have).
    pub fn start(prefix: &str, budget_bytes: usize, names: bool) -> Option<ListingAhead> {
        let store = Store::for_uri(prefix).ok()?;
        let target = store.listing_target(prefix)?;
        // A permit is a KiB (a batch takes at most u32::MAX permits).
        let permits = (budget_bytes >> 10).clamp(1, u32::MAX as usize);
        let budget = Arc::new(Semaphore::new(permits));
        let (tx, rx) = mpsc::unbounded_channel();
        let mut stream = if names {
            store.list_names(prefix)
        } else {
            store.list(prefix)
        };
        let task = tokio::spawn(async move {
            let mut batch = Vec::with_capacity(BATCH);
            let mut bytes = 0usize;
            loop {
                // The listing's end (`Ok(None)`) or its failure, once reached.
                let end = match stream.next().await {
                    Some(Ok(o)) => {
                        bytes += o.held_bytes();
                        batch.push(o);
                        None
                    }
                    Some(Err(e)) => Some(Err(e)),
                    None => Some(Ok(None)),
                };
                if batch.len() == BATCH || (end.is_some() && !batch.is_empty()) {
                    // At least one permit a batch, at most the whole budget:
                    // an object larger than the budget still gets through.
                    let n = (bytes >> 10).clamp(1, permits) as u32;
                    let Ok(permit) = budget.clone().acquire_many_owned(n).await else {
                        return;
                    };
                    let sent = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    bytes = 0;
                    if tx.send((Ok(Some(sent)), Some(permit))).is_err() {
                        return;
                    }
                }
                if let Some(last) = end {
                    let _ = tx.send((last, None));
                    return;
                }
            }
        })
        .abort_handle();
        Some(ListingAhead {
            target,
            store,
            rx,
            task,
            taken: false,
        })
    }

    /// The listing of `prefix`, when it is the one listed ahead: the store
    /// that lists it and the objects, first those already listed. None
    /// for another target, and once taken (a second listing of the same
    /// target lists again).
    pub fn take(
        &mut self,
        store: &Store,
        prefix: &str,
    ) -> Option<(Store, BoxStream<'static, Result<Object, HostError>>)> {
        if store.listing_target(prefix).as_deref() != Some(self.target.as_str()) {
            return None;
        }
        if self.taken {
            return None;
        }
        self.taken = true;
        let rx = std::mem::replace(&mut self.rx, mpsc::unbounded_channel().1);
        let objects = futures::stream::unfold(Some(rx), |rx| async move {
            let mut rx = rx?;
            match rx.recv().await {
                // The permit goes with the batch: the budget frees as the
                // session takes the objects.
                Some((Ok(Some(batch)), _permit)) => Some((Ok(batch), Some(rx))),
                Some((Ok(None), _)) => None,
                Some((Err(e), _)) => Some((Err(e), None)),
                None => Some((
                    Err(store_err!(
                        "the listing ahead stopped before its end (internal error): no plan"
                    )),
                    None,
                )),
            }
        })
        .flat_map(crate::stores::object::one_by_one)
        .boxed();
        Some((self.store.clone(), objects))
    }
}

impl Drop for ListingAhead {
    fn drop(&mut self) {
        if !self.taken {
            self.task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn keys(
        stream: BoxStream<'static, Result<Object, crate::error::HostError>>,
    ) -> Vec<String> {
        let mut v: Vec<String> = stream.map(|o| o.unwrap().uri).collect().await;
        v.sort();
        v
    }

    /// A table of 1,300 files: one folder of 600 (more than a walking
    /// thread's batch), the rest spread over 50 folders.
    fn table(name: &str) -> (std::path::PathBuf, String) {
        let dir =
            std::env::temp_dir().join(format!("lakesweep-ahead-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for i in 0..1300 {
            let d = if i < 600 {
                dir.join("data/big")
            } else {
                dir.join(format!("data/p={}", i % 50))
            };
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("{i}.parquet")), b"x").unwrap();
        }
        let root = format!("file://{}", dir.display());
        (dir, root)
    }

    #[tokio::test]
    async fn the_listing_ahead_is_the_listing_and_waits_within_its_budget() {
        let (dir, root) = table("same");
        let store = Store::for_uri(&root).unwrap();
        let want = keys(store.list(&root)).await;
        assert_eq!(want.len(), 1300);
        // A budget of one KiB holds one batch at a time: the walk waits
        // for the session, and still every object arrives.
        let mut ahead = ListingAhead::start(&root, 1024, false).unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        // Another folder is another listing; a trailing slash or the
        // session's own store is the same one.
        assert!(ahead.take(&store, &format!("{root}/data")).is_none());
        let (s, stream) = ahead.take(&store, &format!("{root}/")).unwrap();
        assert_eq!(keys(stream).await, want);
        assert!(s.take_unrepresentable().is_empty());
        // Taken once: a second listing of the table lists again.
        assert!(ahead.take(&store, &root).is_none());
        drop(ahead);
        // By names, the same objects, named only.
        let mut ahead = ListingAhead::start(&root, 1024, true).unwrap();
        let (_, stream) = ahead.take(&store, &root).unwrap();
        let named: Vec<Object> = stream.map(|o| o.unwrap()).collect().await;
        assert!(named.iter().all(|o| o.named_only));
        let mut got: Vec<String> = named.into_iter().map(|o| o.uri).collect();
        got.sort();
        assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_failed_listing_ahead_fails_the_listing() {
        let (dir, root) = table("link");
        std::os::unix::fs::symlink(dir.join("data/big"), dir.join("data/p=3/link")).unwrap();
        let store = Store::for_uri(&root).unwrap();
        let mut ahead = ListingAhead::start(&root, 1 << 20, true).unwrap();
        let (_, stream) = ahead.take(&store, &root).unwrap();
        let all: Vec<Result<Object, crate::error::HostError>> = stream.collect().await;
        let last = all.last().unwrap();
        assert!(
            matches!(last, Err(e) if e.contains("symbolic link")),
            "{last:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_listing_ahead_needs_a_listable_prefix() {
        assert!(ListingAhead::start("file:///tmp/a/../b", 1 << 20, false).is_none());
        assert!(ListingAhead::start("not a uri", 1 << 20, true).is_none());
    }
}
