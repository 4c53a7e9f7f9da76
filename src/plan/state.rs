//! Where a session stands ([`Phase`]) and the one type that moves it
//! ([`State`]). Every transition is a method of [`State`] that checks the
//! phase it leaves: an illegal move is refused with a protocol error
//! (out of order) and the phase is left as it was, so the session fails
//! closed instead of skipping a step.
//!
//! ```text
//! Iceberg: Reading ─────────────────────┐
//! Delta:   LogListing ──► Reading ──────┤ (keep set complete, frozen)
//!                                       ▼
//!          Listing ⇄ (last page; next write root) ──► AwaitPointer
//!          AwaitPointer ──► Reading (re-check) ──► AwaitPointer
//!          AwaitPointer ──► Done ──► Sealed
//!          any phase but Failed ──► Failed
//! ```

use crate::error::{Error, ProtocolReason, Result};
use crate::format::TableFormat;

/// Where a session stands; each phase carries what only it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Phase {
    /// Delta: listing `_delta_log/` before anything is read.
    LogListing,
    /// Reading blobs. `recheck`: the pointer moved; once the new snapshots
    /// are read, their files demote candidates and the pointer is read again.
    Reading {
        /// The pointer moved: these reads are a re-check.
        recheck: bool,
    },
    /// Listing a prefix; `last_page_seen`: its last page was handled.
    Listing {
        /// The prefix's last page was handled.
        last_page_seen: bool,
    },
    /// Waiting for the pointer (Delta: the next commit) to be read again.
    AwaitPointer,
    /// The plan can be sealed.
    Done,
    /// The plan was sealed by moving the candidates into it: nothing more
    /// can be sealed.
    Sealed,
    /// The session failed: it plans nothing, and every later call says why.
    Failed(Error),
}

impl Phase {
    /// The phase in words, for refusals.
    fn name(&self) -> &'static str {
        match self {
            Phase::LogListing => "listing the Delta log",
            Phase::Reading { recheck: false } => "reading metadata",
            Phase::Reading { recheck: true } => "re-reading metadata after the pointer moved",
            Phase::Listing {
                last_page_seen: false,
            } => "listing",
            Phase::Listing {
                last_page_seen: true,
            } => "past a listing's last page",
            Phase::AwaitPointer => "waiting for the pointer",
            Phase::Done => "done",
            Phase::Sealed => "sealed",
            Phase::Failed(_) => "failed",
        }
    }
}

/// A session's phase. It changes only through the transition methods
/// below, each of which checks the phase it leaves.
#[derive(Debug)]
pub(super) struct State {
    phase: Phase,
}

impl State {
    /// The first phase of a session of `format`: Iceberg reads its
    /// metadata, Delta lists its log first.
    pub(super) fn new(format: TableFormat) -> State {
        let phase = match format {
            TableFormat::Iceberg => Phase::Reading { recheck: false },
            TableFormat::Delta => Phase::LogListing,
        };
        State { phase }
    }

    /// The phase as it stands.
    pub(super) fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The error the session failed with, if it did.
    pub(super) fn failed(&self) -> Option<&Error> {
        match &self.phase {
            Phase::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the plan can be sealed, or was.
    pub(super) fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Sealed)
    }

    /// Whether the keep set is complete: the table listing was requested
    /// (and, on a re-check, the keep set only grows from there).
    pub(super) fn listing_requested(&self) -> bool {
        matches!(
            self.phase,
            Phase::Listing { .. }
                | Phase::AwaitPointer
                | Phase::Done
                | Phase::Sealed
                | Phase::Reading { recheck: true }
        )
    }

    /// Whether `_delta_log/` is being listed.
    pub(super) fn is_log_listing(&self) -> bool {
        self.phase == Phase::LogListing
    }

    /// Whether a listing is open: requested, its last page not yet handled.
    pub(super) fn is_listing(&self) -> bool {
        self.phase
            == Phase::Listing {
                last_page_seen: false,
            }
    }

    /// Whether the session waits for the pointer to be read again.
    pub(super) fn is_awaiting_pointer(&self) -> bool {
        self.phase == Phase::AwaitPointer
    }

    /// Moves to `to` when the phase is one `from` accepts; otherwise
    /// refuses (protocol: out of order), the phase unchanged.
    fn go(&mut self, from: impl Fn(&Phase) -> bool, to: Phase) -> Result<()> {
        if !from(&self.phase) {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!(
                    "the session cannot move from {} to {}",
                    self.phase.name(),
                    to.name()
                ),
            ));
        }
        self.phase = to;
        Ok(())
    }

    /// Delta: the log is listed; its files are read next.
    pub(super) fn log_listed(&mut self) -> Result<()> {
        self.go(
            |p| *p == Phase::LogListing,
            Phase::Reading { recheck: false },
        )
    }

    /// The keep set is complete: the table's listing is requested.
    pub(super) fn start_listing(&mut self) -> Result<()> {
        self.go(
            |p| *p == Phase::Reading { recheck: false },
            Phase::Listing {
                last_page_seen: false,
            },
        )
    }

    /// The open listing's last page was handled.
    pub(super) fn last_page_seen(&mut self) -> Result<()> {
        self.go(
            |p| {
                *p == Phase::Listing {
                    last_page_seen: false,
                }
            },
            Phase::Listing {
                last_page_seen: true,
            },
        )
    }

    /// A listing ended: the next write root is listed.
    pub(super) fn list_next_root(&mut self) -> Result<()> {
        self.go(
            |p| {
                *p == Phase::Listing {
                    last_page_seen: true,
                }
            },
            Phase::Listing {
                last_page_seen: false,
            },
        )
    }

    /// Every prefix was listed, or a re-check's reads are done: the pointer
    /// (Delta: the next commit) is read again.
    pub(super) fn await_pointer(&mut self) -> Result<()> {
        self.go(
            |p| {
                matches!(
                    p,
                    Phase::Listing {
                        last_page_seen: true
                    } | Phase::Reading { recheck: true }
                )
            },
            Phase::AwaitPointer,
        )
    }

    /// The pointer moved: the new document is read (a re-check).
    pub(super) fn recheck(&mut self) -> Result<()> {
        self.go(
            |p| *p == Phase::AwaitPointer,
            Phase::Reading { recheck: true },
        )
    }

    /// The pointer stayed (Delta: no commit landed): the plan can be sealed.
    pub(super) fn done(&mut self) -> Result<()> {
        self.go(|p| *p == Phase::AwaitPointer, Phase::Done)
    }

    /// Before sealing: fails with the session's error, unless it is done
    /// and not sealed yet.
    pub(super) fn ready_to_seal(&self) -> Result<()> {
        match &self.phase {
            Phase::Failed(e) => Err(e.clone()),
            Phase::Done => Ok(()),
            Phase::Sealed => Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "the plan was sealed already (its candidates went into it)",
            )),
            _ => Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "finish called before the session was done",
            )),
        }
    }

    /// The candidates went into the plan: nothing more can be sealed.
    pub(super) fn seal(&mut self) -> Result<()> {
        self.ready_to_seal()?;
        self.go(|p| *p == Phase::Done, Phase::Sealed)
    }

    /// The session failed with `e`, from any phase; a session that failed
    /// already keeps its first error.
    pub(super) fn fail(&mut self, e: Error) {
        if self.failed().is_none() {
            self.phase = Phase::Failed(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iceberg_done() -> State {
        let mut s = State::new(TableFormat::Iceberg);
        s.start_listing().unwrap();
        s.last_page_seen().unwrap();
        s.await_pointer().unwrap();
        s.done().unwrap();
        s
    }

    /// The legal paths through a session, for both formats.
    #[test]
    fn the_phases_follow_the_planning_flow() {
        let mut s = State::new(TableFormat::Delta);
        assert!(s.is_log_listing());
        s.log_listed().unwrap();
        assert!(!s.listing_requested());
        s.start_listing().unwrap();
        assert!(s.is_listing() && s.listing_requested());
        s.last_page_seen().unwrap();
        s.list_next_root().unwrap();
        s.last_page_seen().unwrap();
        s.await_pointer().unwrap();
        assert!(s.is_awaiting_pointer());
        s.recheck().unwrap();
        assert!(s.listing_requested());
        s.await_pointer().unwrap();
        s.done().unwrap();
        assert!(s.is_done());
        s.seal().unwrap();
        assert!(s.is_done() && s.listing_requested());
    }

    /// A move from the wrong phase is refused and changes nothing.
    #[test]
    fn an_illegal_move_is_refused_and_leaves_the_phase() {
        let mut s = State::new(TableFormat::Iceberg);
        for refused in [
            State::log_listed,
            State::last_page_seen,
            State::list_next_root,
            State::await_pointer,
            State::recheck,
            State::done,
            State::seal,
        ] {
            assert!(refused(&mut s).is_err());
            assert_eq!(*s.phase(), Phase::Reading { recheck: false });
        }
        let e = s.done().unwrap_err().to_string();
        assert!(e.contains("reading metadata"), "{e}");
        let mut s = iceberg_done();
        assert!(s.start_listing().is_err() && s.recheck().is_err());
        s.seal().unwrap();
        let e = s.seal().unwrap_err().to_string();
        assert!(e.contains("sealed already"), "{e}");
        assert_eq!(*s.phase(), Phase::Sealed);
    }

    /// Failing is legal from anywhere; the first error stays.
    #[test]
    fn a_failed_session_keeps_its_first_error() {
        let mut s = iceberg_done();
        s.fail(Error::invalid("a", "first"));
        s.fail(Error::invalid("b", "second"));
        assert!(s.failed().unwrap().to_string().contains("first"));
        assert!(s.ready_to_seal().unwrap_err().to_string().contains("first"));
        assert!(!s.is_done() && !s.listing_requested());
        assert!(s.done().is_err());
    }
}
