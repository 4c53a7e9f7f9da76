//! The refusals a session makes beyond what the formats check: a
//! protection naming a snapshot the table lost, a prefix another table
//! owns, a blob whose decoding would go over the memory budget.

use super::Session;
use crate::error::{Error, Result, UnsafeReason};
use crate::plan::requests::Purpose;

impl Session {
    /// Every snapshot or ref the context protects must be one the keep set
    /// covers; otherwise its files cannot be told apart from garbage.
    pub(super) fn check_protections(&self) -> Result<()> {
        // Delta speaks of versions, Iceberg of snapshots.
        let noun = if self.delta().is_some() {
            "version"
        } else {
            "snapshot"
        };
        use crate::context::{DrCheckpoint, HoldScope};
        let ctx = &self.classifier.protections;
        let now = self.config.now_ms;
        let missing = |what: String| {
            Err(Error::unsafe_(
                UnsafeReason::ProtectedSnapshotMissing,
                format!("{what}, which the table no longer has: its files cannot be identified, nothing is deleted"),
            ))
        };
        for l in ctx.leases.iter().filter(|l| l.expires_at_ms > now) {
            if !self.readable.contains(&l.snapshot_id) {
                return missing(format!(
                    "a live lease of {} protects {noun} {}",
                    l.owner, l.snapshot_id
                ));
            }
        }
        for h in &ctx.holds {
            match &h.scope {
                HoldScope::Snapshot(id) if !self.readable.contains(id) => {
                    return missing(format!("a legal hold protects {noun} {id}"));
                }
                HoldScope::Ref(r) if !self.refs.contains_key(r) => {
                    return missing(format!("a legal hold protects ref `{r}`"));
                }
                _ => {}
            }
        }
        for d in &ctx.dr_checkpoints {
            if let DrCheckpoint::SnapshotId(id) = d {
                if !self.readable.contains(id) {
                    return missing(format!("a DR checkpoint names {noun} {id}"));
                }
            }
        }
        Ok(())
    }

    /// Refuses (`foreign-table`) when another table owns the location or
    /// one of the write roots (the same prefix, or one containing it).
    pub(super) fn check_foreign_roots(&self) -> Result<()> {
        let own = std::iter::once(&self.classifier.location).chain(&self.classifier.roots);
        for mine in own {
            for (root, owner) in &self.foreign {
                let pair = [mine.as_uri(), root.as_uri()];
                let overlaps = !crate::path::overlapping_locations(&pair).is_empty();
                let inside_mine = crate::path::loose(&root.canonical().path).len()
                    > crate::path::loose(&mine.canonical().path).len();
                if overlaps && !inside_mine {
                    return Err(Error::unsafe_(
                        UnsafeReason::ForeignTable,
                        format!(
                            "`{}` is inside `{}`, which {owner} owns: a prefix belongs to one table, nothing is deleted",
                            mine.as_uri(),
                            root.as_uri()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The prefixes other tables own inside the location or a write root,
    /// as keys of this sweep (see [`crate::verdict::OwnedPrefix`]).
    pub(super) fn owned_prefixes(&self) -> Vec<crate::verdict::OwnedPrefix> {
        let mut out = Vec::new();
        for (root, owner) in &self.foreign {
            let Some(key) = self.classifier.key_of(root.canonical()) else {
                continue; // outside everything this table lists
            };
            let prefix = format!("{key}/");
            out.push(crate::verdict::OwnedPrefix {
                loose: format!("{}/", crate::path::loose(&key)),
                prefix,
                owner: format!("{owner} owns"),
            });
        }
        out
    }

    /// Refuses a blob whose decoding would take the session over its memory
    /// budget: estimated from its size (JSON documents expand into trees;
    /// Parquet checkpoints into columns and, with many row groups, into a
    /// large footer) plus what the keep set holds already. Checked before
    /// anything is allocated in proportion to the blob's counts.
    pub(super) fn check_budget(&self, uri: &str, purpose: &Purpose, bytes: &[u8]) -> Result<()> {
        let n = bytes.len() as u64;
        let (what, cost) = match purpose {
            Purpose::Metadata { .. }
            | Purpose::PriorPointer { .. }
            | Purpose::DrMetadata
            | Purpose::OwnerCheck { .. } => ("table metadata document", n.saturating_mul(8)),
            Purpose::DeltaLog { .. } | Purpose::DeltaNextCommit { .. } => {
                if bytes.starts_with(b"PAR1") {
                    // A footer longer than the file is the parser's to refuse
                    // (malformed), not a cost.
                    let footer = crate::codec::parquet::footer_len(bytes)
                        .filter(|&f| f <= bytes.len())
                        .unwrap_or(0) as u64;
                    (
                        "Delta checkpoint",
                        n.saturating_mul(16)
                            .saturating_add(footer.saturating_mul(64)),
                    )
                } else {
                    ("Delta log file", n.saturating_mul(8))
                }
            }
            Purpose::ManifestList { .. } | Purpose::Manifest { .. } => {
                ("manifest", n.saturating_mul(2))
            }
        };
        self.check_cost(uri, what, n, cost)
    }

    /// Refuses (unsupported) decoding `n` bytes of `what` at `uri` when its
    /// `cost` in planner memory and what is held already exceed the budget.
    pub(super) fn check_cost(&self, uri: &str, what: &str, n: u64, cost: u64) -> Result<()> {
        // The keep set: about 64 bytes per key while it is being built,
        // and the keys waiting for a merge as they are held.
        let keep = &self.classifier.keep;
        let held = (keep.slots_held() as u64)
            .saturating_mul(64)
            .saturating_add(keep.deferred_bytes() as u64)
            .max(keep.index_bytes() as u64);
        let budget = self.config.memory_budget_bytes;
        if cost.saturating_add(held) > budget {
            return Err(Error::unsupported(
                format!(
                    "{what} of {n} bytes: decoding it needs about {} MiB of planner memory ({} MiB held already), over the memory budget of {} MiB (raise memory_budget_bytes if the machine has it)",
                    cost >> 20,
                    held >> 20,
                    budget >> 20
                ),
                uri,
            ));
        }
        Ok(())
    }
}
