//! Applying a sealed plan: a sans-IO session of the core, like planning
//! one. Every host that deletes (`apply`, `sweep`, the Python package,
//! Spark's executors, a serverless function) drives this one session with
//! a plain I/O loop; the batches, the acceptance of each, the comparison of
//! every object's version, the damage check and the outcome are decided
//! here.
//!
//! ## Calling contract of a [`Deletion`]
//!
//! ```text
//! Deletion::start(config)  (apply)  |  Ledger::deletion(plan, config)  (sweep)
//! loop {
//!     while let Some(r) = poll_request()
//!     answer it:
//!         ReadFacts { .. }   -> handle_facts(facts) | handle_facts_failed(why)
//!         Head { .. }        -> handle_head(key, answer), each key, any order
//!         Delete { .. }      -> handle_delete(key, answer), each key, any order
//!         CheckDamage { .. } -> handle_referenced(keys) | handle_referenced_failed(why)
//!     drain_receipts()          every key ends with exactly one receipt
//! } until is_done()
//! outcome()                     what the run came to, and its exit status
//! ```
//!
//! One run, in this order, per batch of keys: the stop switches are read
//! with the live facts (`ReadFacts { Batch(n) }`, see [`crate::stop`]): a
//! set, unreadable or unread switch stops the run, every key left getting
//! a `skipped-stopped` receipt; the facts are accepted against the plan's
//! tokens (the first refusal stops the run the same way); keys a live hold or writer covers get `skipped-protected`; the
//! others are HEADed (`Head`), and each is deleted (`Delete`, conditioned
//! on its entity tag where it has one) only while the answer is the version
//! the plan pinned. After the last batch, when anything was deleted (or may
//! have been), the facts are read once more (`ReadFacts { Final }`): if the
//! plan is still accepted nothing can reference what went (metadata is
//! immutable); if not, a planner session on the live pointer
//! (`CheckDamage`, the plan's pointer given as a prior read) says which
//! deleted keys the table references now, and each is a `damaged` receipt
//! with how to restore it. A host names the points `Head { batch }` (the
//! batch was just accepted) and `ReadFacts { Final }` (the deletes are
//! over) to a test hook, if it has one; it decides nothing there.
//!
//! Any answer the session did not ask for is a protocol error: the session
//! stops (the keys not yet deleted get `skipped-stopped`), still checks
//! what it deleted, and its outcome says why.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ProtocolReason, Result};
use crate::ledger::{DeleteResult, Drill, Receipt};
use crate::path::PathMapping;
use crate::plan::{SealedPlan, SessionConfig};
use crate::verdict::ListedObject;
use crate::version::ObjectVersion;
use crate::TableFormat;

mod share;
pub use share::{combine, combine_json, DeletionShare, ShareStamp};

/// Keys per batch by default: the live facts are read and accepted again
/// before every batch.
pub const DEFAULT_BATCH: u32 = 256;

/// Receipts one [`Deletion::drain_receipts`] gives at most: a run that
/// stops with a million keys left hands their receipts out in pieces.
pub const MAX_DRAIN: usize = 4096;

/// What a deletion is started with: its plan's document, and the options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionConfig {
    /// The sealed plan document; its digest is checked.
    pub plan: String,
    /// Everything else.
    #[serde(flatten)]
    pub options: DeletionOptions,
}

/// How a deletion runs, whatever its plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionOptions {
    /// The location maps the plan was made with: the live pointer is
    /// mapped by them, as the planner maps it.
    #[serde(default)]
    pub location_map: Vec<PathMapping>,
    /// Keys per batch (none: [`DEFAULT_BATCH`]; at least 1).
    #[serde(default)]
    pub batch_size: Option<u32>,
    /// Check everything, delete nothing: `would-delete` receipts.
    #[serde(default)]
    pub dry_run: bool,
    /// Accept a plan judged ahead of the host's clock (what-if runs, tests).
    #[serde(default)]
    pub allow_future_now: bool,
    /// Whether the host's store answers a HEAD with the object's entity tag.
    /// A key the plan pinned with one cannot be shown to be that version
    /// by a host that reads none: it is kept (`skipped-changed`, saying so).
    #[serde(default = "yes")]
    pub store_gives_etags: bool,
    /// Only these keys of the plan (a serverless function's share); none:
    /// every key of the plan. A key the plan does not delete is refused; a
    /// ledger's run ignores them (its approval chooses).
    #[serde(default)]
    pub keys: Option<Vec<String>>,
    /// Only this share of the plan's deletes (one of several sessions
    /// applying it at once, see [`DeletionShare`]); none: every key, or
    /// `keys`. Not with `keys`; a ledger's run refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<DeletionShare>,
    /// Stop switches to read before each batch besides the table's own
    /// (a fleet's): absolute URIs. See [`crate::stop`].
    #[serde(default)]
    pub stop_switches: Vec<String>,
}

impl Default for DeletionOptions {
    fn default() -> Self {
        DeletionOptions {
            location_map: Vec::new(),
            batch_size: None,
            dry_run: false,
            allow_future_now: false,
            store_gives_etags: true,
            keys: None,
            share: None,
            stop_switches: Vec::new(),
        }
    }
}

fn yes() -> bool {
    true
}

/// Why the facts are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "batch")]
pub enum FactsPurpose {
    /// Before batch `n` (from 1).
    Batch(u32),
    /// After the last batch: the damage check.
    Final,
}

/// One object to HEAD or DELETE.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// Key relative to the table location (absolute under another root).
    pub key: String,
    /// Its URI.
    pub uri: String,
    /// For a DELETE: the entity tag it must still have (`If-Match`), when
    /// the plan pinned one. Never for a HEAD.
    pub if_match: Option<String>,
    /// For a DELETE: the version id it must still be (a GCS generation,
    /// `ifGenerationMatch`), when the plan pinned one. Never for a HEAD.
    #[serde(default)]
    pub if_version: Option<String>,
}

/// Something the host must do and answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum DeletionRequest {
    /// Read the live facts now: the stop switches, the pointer (Iceberg;
    /// or list `log_prefix`, a Delta table's `_delta_log/`), the context,
    /// the clock. Answer with [`Deletion::handle_facts`] (or
    /// `handle_facts_failed`).
    ReadFacts {
        /// Before which batch, or the damage check.
        purpose: FactsPurpose,
        /// Delta: the log prefix to list for the facts.
        log_prefix: Option<String>,
        /// The stop switches to read (each once, answered in
        /// [`Facts::switches`]); none for the damage check.
        switches: Vec<String>,
    },
    /// HEAD each object; answer each with [`Deletion::handle_head`].
    Head {
        /// The batch (accepted just now).
        batch: u32,
        /// The objects.
        objects: Vec<Target>,
    },
    /// DELETE each object, once, never following a redirect, conditioned
    /// on `if_match` where the store can; answer each with
    /// [`Deletion::handle_delete`].
    Delete {
        /// The batch.
        batch: u32,
        /// The objects.
        objects: Vec<Target>,
    },
    /// Run a planner session with `config` (the live pointer, the plan's as
    /// a prior read) until its keep set is complete, and answer which of
    /// the run's deleted keys it references ([`crate::Session::referenced`]
    /// of each piece [`Deletion::damage_keys`] gives) through
    /// [`Deletion::handle_referenced`].
    CheckDamage {
        /// The session to run.
        config: Box<SessionConfig>,
        /// How many keys were deleted (or maybe): the pieces to ask for.
        keys: u64,
    },
}

/// The live facts, as the host read them just now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Facts {
    /// Iceberg: the pointer as the catalog (or command, or hint) answered,
    /// before any mapping. `None` for Delta, or when the table is gone.
    #[serde(default)]
    pub pointer: Option<String>,
    /// Delta: the listing of `_delta_log/`.
    #[serde(default)]
    pub log: Vec<ListedObject>,
    /// The context as read again just now (`None`: no context files).
    #[serde(default)]
    pub context: Option<String>,
    /// The host's clock, ms since the epoch.
    pub clock_ms: i64,
    /// Each stop switch asked for, as read just now.
    #[serde(default)]
    pub switches: Vec<crate::stop::SwitchReading>,
}

/// What a HEAD found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum HeadAnswer {
    /// The object, at this version.
    Found(ObjectVersion),
    /// No such object.
    Absent,
    /// The HEAD failed (the store's words).
    Failed(String),
}

/// What a DELETE came to, as the store answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum StoreAnswer {
    /// The store confirmed it (a versioned bucket: with the delete marker
    /// it made, if it said).
    Deleted(Option<String>),
    /// Nothing was there.
    Absent,
    /// The condition failed: another version is there now.
    Changed,
    /// Refused, nothing happened (the store's words).
    Failed(String),
    /// It may have happened: no answer, a timeout, a 5xx, a redirect not
    /// followed (the words). Never recorded as deleted.
    Unknown(String),
}

/// A receipt as the session writes it: the ledger's receipt, the object's
/// URI, the version the plan pinned, and how to restore a damaged key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionReceipt {
    /// The receipt (what a ledger records).
    pub receipt: Receipt,
    /// The object's URI.
    pub uri: String,
    /// The version the plan pinned.
    pub planned: ObjectVersion,
    /// How to get a damaged key back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<String>,
}

/// What a run came to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionOutcome {
    /// The exit status every host gives: 0 done; 1 a key failed, changed,
    /// was held or not attempted, or its outcome is unknown; 3 damage (or
    /// the damage check could not be made).
    pub exit: u8,
    /// Receipts per result name.
    pub results: BTreeMap<String, u64>,
    /// Bytes deleted (or that would be, in a dry run), by the pinned sizes.
    pub deleted_bytes: u64,
    /// Why the run stopped before its last key, if it did.
    pub stopped: Option<Vec<String>>,
    /// Why the damage check could not be made, if it could not (then the
    /// run may have damaged the table: check its deleted keys).
    pub damage_unchecked: Option<String>,
    /// Why the run was refused before anything was attempted (a plan
    /// applied outside a ledger whose first acceptance failed): exit 2,
    /// and no receipts, nothing was tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<Vec<String>>,
    /// The share this run was, when it was one (see [`combine`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<ShareStamp>,
}

/// One key of the run and where it is: the plan's delete `index`.
#[derive(Debug, Clone)]
struct Item {
    index: u32,
    key: String,
    uri: String,
    pinned: ObjectVersion,
}

/// A set of the plan's deletes, by index: a bit each.
#[derive(Debug, Default)]
struct IndexSet {
    words: Vec<u64>,
    len: usize,
}

impl IndexSet {
    fn insert(&mut self, i: u32) {
        let (w, b) = ((i / 64) as usize, i % 64);
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        if self.words[w] & (1 << b) == 0 {
            self.words[w] |= 1 << b;
            self.len += 1;
        }
    }
    fn contains(&self, i: u32) -> bool {
        self.words
            .get((i / 64) as usize)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    fn is_empty(&self) -> bool {
        self.len == 0
    }
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(w, bits)| {
            (0..64u32)
                .filter(move |b| bits & (1u64 << b) != 0)
                .map(move |b| w as u32 * 64 + b)
        })
    }
}

/// Where a run stands; changes only through [`Deletion::to`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// The facts before batch `n` are asked for.
    AwaitFacts(u32),
    /// Batch `n`: HEADs and DELETEs in flight.
    Deleting(u32),
    /// The facts after the last batch are asked for.
    AwaitFinalFacts,
    /// The damage check's planner session is asked for.
    AwaitDamage,
    /// Nothing more to do.
    Done,
}

impl Phase {
    /// Whether `self -> next` is one of the run's steps.
    fn can_move_to(&self, next: &Phase) -> bool {
        use Phase::*;
        match (self, next) {
            (AwaitFacts(n), Deleting(m)) => n == m,
            (Deleting(n), AwaitFacts(m)) => m == &(n + 1),
            (AwaitFacts(_) | Deleting(_), AwaitFinalFacts | Done) => true,
            (AwaitFinalFacts, AwaitDamage | Done) => true,
            (AwaitDamage, Done) => true,
            _ => false,
        }
    }
}

/// Applying one sealed plan (see the module's calling contract).
#[derive(Debug)]
pub struct Deletion {
    /// Shared with whoever else holds it (a ledger's step): never copied.
    plan: Rc<SealedPlan>,
    config: DeletionOptions,
    /// The ledger's drills when a ledger runs it (its restore-drill gate is
    /// checked for every batch); `None` for `apply`.
    drills: Option<Vec<Drill>>,
    /// The plan's deletes not started yet, in order (indices).
    rest: VecDeque<u32>,
    /// The batch in flight: key -> item, HEAD not answered.
    heads: BTreeMap<String, Item>,
    /// The batch in flight: key -> (item, seen), DELETE not answered.
    deletes: BTreeMap<String, (Item, ObjectVersion)>,
    /// The plan's deletes deleted (or maybe deleted) by this run; in a
    /// share's run, also those found absent (see `absent`).
    deleted: IndexSet,
    /// A share's run: the keys found already absent, which an earlier
    /// attempt of the same share may have deleted (a retried task). Its
    /// damage check covers them.
    absent: IndexSet,
    phase: Phase,
    outbox: VecDeque<DeletionRequest>,
    receipts: VecDeque<DeletionReceipt>,
    /// Keys a stop left (indices), each still to get its `skipped-stopped`
    /// receipt (made as they are drained), and the words they carry.
    stopped_rest: VecDeque<u32>,
    stopped_detail: String,
    outcome: DeletionOutcome,
    /// The raw live pointer last read (the damage check's session starts there).
    live_pointer: Option<String>,
    /// The context last read.
    live_context: Option<String>,
    /// The host's clock at the last facts.
    clock_ms: i64,
    /// The stop switches read before each batch.
    switches: Vec<String>,
}

impl Deletion {
    /// Starts applying `config.plan` (its digest checked). Fails for a plan
    /// that does not verify, a batch size of 0, or a key the plan does not
    /// delete.
    pub fn start(config: DeletionConfig) -> Result<Deletion> {
        let plan = SealedPlan::from_json(&config.plan)?;
        Self::with_plan(Rc::new(plan), config.options)
    }

    /// [`Deletion::start`] over a plan already read (sealed in this
    /// process, or loaded once and shared).
    pub fn with_plan(plan: Rc<SealedPlan>, mut options: DeletionOptions) -> Result<Deletion> {
        if let Some(share) = options.share {
            if options.keys.is_some() {
                return Err(Error::invalid(
                    "share",
                    "a run is given keys or a share, not both",
                ));
            }
            let deletes = u32::try_from(plan.delete.len())
                .map_err(|_| Error::invalid("share", "a plan of more than 2^32 deletes"))?;
            let range = share.range(deletes)?;
            let stamp = ShareStamp {
                plan_digest: plan.digest.clone(),
                deletes,
                share,
                first: range.start,
                keys: range.end - range.start,
                dry_run: options.dry_run,
                finished: false,
            };
            let mut s = Self::begin(plan, options, range.collect(), None)?;
            // A share of no keys is over as it starts.
            s.outcome.share = Some(ShareStamp {
                finished: s.phase == Phase::Done,
                ..stamp
            });
            return Ok(s);
        }
        let chosen: Vec<u32> = match options.keys.take() {
            None => (0..plan.delete.len() as u32).collect(),
            Some(ks) => {
                let mut seen = IndexSet::default();
                let mut out = Vec::with_capacity(ks.len());
                for k in ks {
                    let Some(i) = index_of(&plan, &k) else {
                        return Err(Error::invalid(
                            "keys",
                            format!("`{k}` is not a key the plan deletes"),
                        ));
                    };
                    if !seen.contains(i) {
                        seen.insert(i);
                        out.push(i);
                    }
                }
                out
            }
        };
        Self::begin(plan, options, chosen, None)
    }

    /// The deletion of a ledger's run: exactly the keys the ledger
    /// approved in this run, each at the version the plan pinned, with the
    /// ledger's drills for the policy's restore-drill gate, batch by batch.
    /// `plan` must be the plan approved (its digest the approval's);
    /// `options.keys` is not read (the approval chooses). Fails when this
    /// run approved nothing.
    pub fn for_ledger(
        ledger: &crate::Ledger,
        plan: Rc<SealedPlan>,
        mut options: DeletionOptions,
    ) -> Result<Deletion> {
        ledger.ensure_table(&plan)?;
        // Shadow (or a table of a fleet run without it) deletes nothing,
        // whatever was approved before the run's mode was decided.
        if let Some(why) = ledger.rollout_refusal() {
            return Err(Error::invalid("fleet", why));
        }
        let Some(digest) = ledger.approved_now() else {
            return Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                "no approval was granted in this run: nothing may be deleted",
            ));
        };
        if digest != plan.digest {
            return Err(Error::protocol(
                ProtocolReason::BadInput,
                format!(
                    "the plan given ({}) is not the plan approved ({digest})",
                    plan.digest
                ),
            ));
        }
        if options.share.is_some() {
            return Err(Error::invalid(
                "share",
                "a ledger's run is not cut into shares: its approval chooses the keys",
            ));
        }
        options.keys = None;
        let chosen = ledger.approved_indices(&plan);
        Self::begin(plan, options, chosen, Some(ledger.drills().to_vec()))
    }

    /// A run of `plan`'s deletes `chosen` (indices, each at the version the
    /// plan pinned), with a ledger's `drills` for its gate.
    fn begin(
        plan: Rc<SealedPlan>,
        config: DeletionOptions,
        chosen: Vec<u32>,
        drills: Option<Vec<Drill>>,
    ) -> Result<Deletion> {
        if config.batch_size == Some(0) {
            return Err(Error::invalid("batch_size", "must be at least 1"));
        }
        let switches = crate::stop::switches_for(
            std::slice::from_ref(&plan.table_location),
            &config.stop_switches,
        )?;
        let mut s = Deletion {
            switches,
            plan,
            config,
            drills,
            rest: chosen.into(),
            heads: BTreeMap::new(),
            deletes: BTreeMap::new(),
            deleted: IndexSet::default(),
            absent: IndexSet::default(),
            phase: Phase::AwaitFacts(1),
            outbox: VecDeque::new(),
            receipts: VecDeque::new(),
            stopped_rest: VecDeque::new(),
            stopped_detail: String::new(),
            outcome: DeletionOutcome::default(),
            live_pointer: None,
            live_context: None,
            clock_ms: 0,
        };
        if s.rest.is_empty() {
            s.to(Phase::Done);
        } else {
            s.ask_facts(FactsPurpose::Batch(1));
        }
        Ok(s)
    }

    /// The plan's delete `i` as an item of the run.
    fn item(&self, i: u32) -> Item {
        let d = &self.plan.delete[i as usize];
        Item {
            index: i,
            uri: if d.key.contains("://") {
                d.key.clone()
            } else {
                format!("{}/{}", self.plan.table_location, d.key)
            },
            key: d.key.clone(),
            pinned: crate::ledger::version_of(d),
        }
    }

    /// The next request for the host, if any.
    pub fn poll_request(&mut self) -> Option<DeletionRequest> {
        self.outbox.pop_front()
    }

    /// Receipts written since the last call, in order, at most
    /// [`MAX_DRAIN`] at a time: every key of the run ends with exactly one
    /// (and a damaged key gets a second, its `damaged` receipt). Call it
    /// until it is empty.
    pub fn drain_receipts(&mut self) -> Vec<DeletionReceipt> {
        let take = self.receipts.len().min(MAX_DRAIN);
        let mut out: Vec<DeletionReceipt> = self.receipts.drain(..take).collect();
        while out.len() < MAX_DRAIN {
            let Some(i) = self.stopped_rest.pop_front() else {
                break;
            };
            let it = self.item(i);
            let detail = Some(self.stopped_detail.clone());
            out.push(self.make_receipt(&it, DeleteResult::SkippedStopped, None, detail));
        }
        out
    }

    /// True once nothing is left to do and every receipt was drained:
    /// [`Deletion::outcome`] is final.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done && self.receipts.is_empty() && self.stopped_rest.is_empty()
    }

    /// What the run came to (so far, before it is done).
    pub fn outcome(&self) -> DeletionOutcome {
        self.outcome.clone()
    }

    /// The plan being applied.
    pub fn plan(&self) -> &SealedPlan {
        &self.plan
    }

    fn to(&mut self, next: Phase) {
        debug_assert!(
            self.phase.can_move_to(&next) || self.phase == next,
            "{:?} -> {next:?}",
            self.phase
        );
        if self.phase.can_move_to(&next) {
            self.phase = next;
        }
    }

    fn ask_facts(&mut self, purpose: FactsPurpose) {
        let log_prefix = (self.plan.format == TableFormat::Delta)
            .then(|| format!("{}/_delta_log/", self.plan.table_location));
        let switches = match purpose {
            FactsPurpose::Batch(_) => self.switches.clone(),
            FactsPurpose::Final => Vec::new(),
        };
        self.outbox.push_back(DeletionRequest::ReadFacts {
            purpose,
            log_prefix,
            switches,
        });
    }

    fn unexpected(&mut self, what: String) -> Error {
        let e = Error::protocol(ProtocolReason::UnexpectedAnswer, what);
        self.stop(vec![format!("the host broke the protocol: {e}")]);
        e
    }

    /// Answers `ReadFacts` with what the host read.
    pub fn handle_facts(&mut self, facts: Facts) -> Result<()> {
        let batch = match self.phase {
            Phase::AwaitFacts(n) => Some(n),
            Phase::AwaitFinalFacts => None,
            _ => return Err(self.unexpected("live facts sent when none were asked for".into())),
        };
        self.clock_ms = facts.clock_ms;
        self.live_context = facts.context.clone();
        if batch.is_some() {
            if let Some(why) = crate::stop::stopped_by(&self.switches, &facts.switches) {
                self.halt(why);
                return Ok(());
            }
        }
        let live = match self.live_facts(&facts) {
            Ok(l) => l,
            Err(why) => return self.facts_unreadable(batch, why),
        };
        let judged = match batch {
            Some(_) => self.accept(&live, self.rest.iter().take(self.batch_size()).copied()),
            None => self.accept(&live, self.deleted.iter()),
        };
        let acceptance = match judged {
            Ok(a) => a,
            Err(e) => return self.facts_unreadable(batch, e.to_string()),
        };
        match batch {
            Some(n) => {
                if !acceptance.granted {
                    self.stop(acceptance.differences);
                    return Ok(());
                }
                self.start_batch(n, &acceptance);
            }
            None => self.final_facts(&acceptance),
        }
        Ok(())
    }

    /// Answers `ReadFacts`: the facts could not be read (the catalog
    /// unreachable, a context file gone). Before a batch the run stops;
    /// after the last one the damage check cannot be made.
    pub fn handle_facts_failed(&mut self, why: String) -> Result<()> {
        let batch = match self.phase {
            Phase::AwaitFacts(n) => Some(n),
            Phase::AwaitFinalFacts => None,
            _ => return Err(self.unexpected("live facts failed when none were asked for".into())),
        };
        self.facts_unreadable(batch, why)
    }

    fn facts_unreadable(&mut self, batch: Option<u32>, why: String) -> Result<()> {
        match batch {
            Some(_) => self.stop(vec![format!("the live state could not be read: {why}")]),
            None => {
                self.outcome.damage_unchecked =
                    Some(format!("the live state could not be read: {why}"));
                self.finish();
            }
        }
        Ok(())
    }

    /// The live facts in the acceptance's terms: the pointer mapped and
    /// canonical, or the Delta log's head.
    fn live_facts(&mut self, facts: &Facts) -> std::result::Result<crate::LiveFacts, String> {
        let (metadata_location, head) = if self.plan.format == TableFormat::Delta {
            match crate::delta_head(&self.plan.table_location, facts.log.clone())
                .map_err(|e| e.to_string())?
            {
                Some((uri, v)) => (uri, Some(v)),
                None => return Err("the Delta log holds no version now: the table is gone".into()),
            }
        } else {
            let raw = facts
                .pointer
                .clone()
                .ok_or("the table's pointer is gone (table dropped?)")?;
            self.live_pointer = Some(raw.clone());
            let canon = crate::plan::canonical_pointer(&raw, &self.config.location_map)
                .map_err(|e| e.to_string())?;
            (canon, None)
        };
        Ok(crate::LiveFacts {
            metadata_location,
            head,
            context: facts.context.clone(),
            clock_ms: facts.clock_ms,
            allow_future_now: self.config.allow_future_now,
        })
    }

    /// The acceptance of the run against `live`, answering for the keys
    /// of `indices` (the next batch, or what was deleted): a run of a
    /// million keys judges each key once per batch it is in, not once per
    /// batch of the run.
    fn accept(
        &self,
        live: &crate::LiveFacts,
        indices: impl Iterator<Item = u32>,
    ) -> Result<crate::Acceptance> {
        let keys = indices.map(|i| self.plan.delete[i as usize].key.as_str());
        let mut a = crate::acceptance::accept_keys(&self.plan, live, keys)?;
        match &self.drills {
            None => crate::acceptance::refuse_unrecorded_drill(&self.plan, &mut a),
            Some(drills) => {
                if let Some(rule) = &self.plan.tokens.restore_drill {
                    if let Some(why) = crate::ledger::drill_missing(drills, rule, live.clock_ms) {
                        a.differences.push(why);
                        a.granted = false;
                    }
                }
            }
        }
        Ok(a)
    }

    fn batch_size(&self) -> usize {
        self.config.batch_size.unwrap_or(DEFAULT_BATCH).max(1) as usize
    }

    fn start_batch(&mut self, n: u32, acceptance: &crate::Acceptance) {
        self.to(Phase::Deleting(n));
        let take = self.batch_size().min(self.rest.len());
        let batch: Vec<Item> = self
            .rest
            .drain(..take)
            .collect::<Vec<u32>>()
            .into_iter()
            .map(|i| self.item(i))
            .collect();
        let mut heads = Vec::new();
        for it in batch {
            if let Some(why) = acceptance.denied.get(&it.key) {
                let detail = format!("not deleted: {why}");
                self.receipt(&it, DeleteResult::SkippedProtected, None, Some(detail));
                continue;
            }
            heads.push(Target {
                key: it.key.clone(),
                uri: it.uri.clone(),
                if_match: None,
                if_version: None,
            });
            self.heads.insert(it.key.clone(), it);
        }
        if heads.is_empty() {
            self.batch_done(n);
        } else {
            self.outbox.push_back(DeletionRequest::Head {
                batch: n,
                objects: heads,
            });
        }
    }

    /// Answers one object of a `Head` request.
    pub fn handle_head(&mut self, key: String, answer: HeadAnswer) -> Result<()> {
        let Phase::Deleting(n) = self.phase else {
            return Err(
                self.unexpected(format!("a HEAD answer for `{key}` when none was asked for"))
            );
        };
        let Some(it) = self.heads.remove(&key) else {
            return Err(self.unexpected(format!(
                "a HEAD answer for `{key}`, which was not asked for or was answered already"
            )));
        };
        match answer {
            HeadAnswer::Failed(why) => {
                self.receipt(
                    &it,
                    DeleteResult::Failed,
                    None,
                    Some(format!("HEAD failed: {why}")),
                );
            }
            HeadAnswer::Absent => {
                self.absent_in_share(it.index);
                self.receipt(&it, DeleteResult::AlreadyAbsent, None, None)
            }
            HeadAnswer::Found(seen) => {
                if it.pinned.etag.is_some() && !self.config.store_gives_etags {
                    let detail = "the plan pinned an entity tag this host's store does not give: it cannot be shown to be the planned version, kept".to_owned();
                    self.receipt(&it, DeleteResult::SkippedChanged, Some(seen), Some(detail));
                } else if !it.pinned.matches(&seen) {
                    let detail = "not the version the plan pinned: kept".to_owned();
                    self.receipt(&it, DeleteResult::SkippedChanged, Some(seen), Some(detail));
                } else if self.config.dry_run {
                    self.receipt(&it, DeleteResult::WouldDelete, Some(seen), None);
                } else {
                    self.outbox.push_back(DeletionRequest::Delete {
                        batch: n,
                        objects: vec![Target {
                            key: it.key.clone(),
                            uri: it.uri.clone(),
                            if_match: seen.etag.clone().filter(|_| it.pinned.etag.is_some()),
                            if_version: seen
                                .version_id
                                .clone()
                                .filter(|_| it.pinned.version_id.is_some()),
                        }],
                    });
                    self.deletes.insert(key, (it, seen));
                }
            }
        }
        self.maybe_batch_done(n);
        Ok(())
    }

    /// Answers one object of a `Delete` request: what the store said.
    /// `requested_ms`/`answered_ms`: when it was sent and answered, by the
    /// host's clock (`answered_ms` none: no answer).
    pub fn handle_delete(
        &mut self,
        key: String,
        answer: StoreAnswer,
        requested_ms: i64,
        answered_ms: Option<i64>,
    ) -> Result<()> {
        let Phase::Deleting(n) = self.phase else {
            return Err(self.unexpected(format!(
                "a DELETE answer for `{key}` when none was asked for"
            )));
        };
        let Some((it, seen)) = self.deletes.remove(&key) else {
            return Err(self.unexpected(format!(
                "a DELETE answer for `{key}`, which was not asked for or was answered already"
            )));
        };
        let (result, marker, detail) = match answer {
            StoreAnswer::Deleted(marker) => (DeleteResult::Deleted, marker, None),
            StoreAnswer::Absent => (DeleteResult::AlreadyAbsent, None, None),
            StoreAnswer::Changed => (
                DeleteResult::SkippedChanged,
                None,
                Some("the store's conditional delete found another version: kept".to_owned()),
            ),
            StoreAnswer::Failed(why) => (DeleteResult::Failed, None, Some(why)),
            StoreAnswer::Unknown(why) => (DeleteResult::Unknown, None, Some(why)),
        };
        if matches!(result, DeleteResult::Deleted | DeleteResult::Unknown) {
            self.deleted.insert(it.index);
        } else if result == DeleteResult::AlreadyAbsent {
            self.absent_in_share(it.index);
        }
        // A versioned bucket keeps the deleted version under its marker
        // only when that version had an id.
        let kept_under_marker = marker.is_some() && seen.version_id.is_some();
        let mut r = self.make_receipt(&it, result, Some(seen), detail);
        r.receipt.requested_ms = requested_ms;
        r.receipt.confirmed_ms = if result == DeleteResult::Unknown {
            None
        } else {
            answered_ms
        };
        r.receipt.delete_marker = kept_under_marker;
        r.receipt.delete_marker_version_id = marker;
        self.push(r);
        self.maybe_batch_done(n);
        Ok(())
    }

    fn maybe_batch_done(&mut self, n: u32) {
        if self.heads.is_empty() && self.deletes.is_empty() {
            self.batch_done(n);
        }
    }

    fn batch_done(&mut self, n: u32) {
        if self.rest.is_empty() {
            self.after_last_batch();
        } else {
            self.to(Phase::AwaitFacts(n + 1));
            self.ask_facts(FactsPurpose::Batch(n + 1));
        }
    }

    fn after_last_batch(&mut self) {
        if self.deleted.is_empty() || self.config.dry_run {
            self.finish();
        } else {
            self.to(Phase::AwaitFinalFacts);
            self.ask_facts(FactsPurpose::Final);
        }
    }

    /// The run stops: every key not yet deleted gets `skipped-stopped`;
    /// outside a ledger, a run stopped before anything was tried is
    /// refused instead (no receipts).
    fn stop(&mut self, why: Vec<String>) {
        self.stop_as(why, true)
    }

    /// A stop switch is set: the run stops as [`Deletion::stop`] does, but
    /// every key gets its `skipped-stopped` receipt, even before anything
    /// was tried (an operator halted it; the receipts say so).
    fn halt(&mut self, why: Vec<String>) {
        self.stop_as(why, false)
    }

    fn stop_as(&mut self, why: Vec<String>, refuse_untouched: bool) {
        let untouched = self.phase == Phase::AwaitFacts(1)
            && self.outcome.results.is_empty()
            && self.deleted.is_empty();
        if refuse_untouched && untouched && self.drills.is_none() {
            self.rest.clear();
            self.outcome.refused = Some(why);
            self.finish();
            return;
        }
        let detail = format!("not deleted: the run stopped ({})", why.join("; "));
        // A DELETE in flight may still land: it is not "not attempted".
        for (_, (it, _)) in std::mem::take(&mut self.deletes) {
            self.deleted.insert(it.index);
            let d = "the DELETE was in flight when the run stopped: outcome unknown".to_owned();
            self.receipt(&it, DeleteResult::Unknown, None, Some(d));
        }
        for (_, it) in std::mem::take(&mut self.heads) {
            self.receipt(
                &it,
                DeleteResult::SkippedStopped,
                None,
                Some(detail.clone()),
            );
        }
        // The keys never started get theirs as they are drained (a run
        // may stop with a million left).
        let left = std::mem::take(&mut self.rest);
        *self
            .outcome
            .results
            .entry(DeleteResult::SkippedStopped.as_str().to_owned())
            .or_default() += left.len() as u64;
        self.stopped_rest.extend(left);
        self.stopped_detail = detail;
        self.outcome
            .stopped
            .get_or_insert_with(Vec::new)
            .extend(why);
        self.outbox
            .retain(|r| matches!(r, DeletionRequest::CheckDamage { .. }));
        if matches!(self.phase, Phase::AwaitFacts(_) | Phase::Deleting(_)) {
            self.after_last_batch();
        }
    }

    fn final_facts(&mut self, acceptance: &crate::Acceptance) {
        let mut found: Vec<(u32, String)> = self
            .deleted
            .iter()
            .filter_map(|i| {
                acceptance
                    .denied
                    .get(&self.plan.delete[i as usize].key)
                    .map(|why| (i, format!("now covered by {why}")))
            })
            .collect();
        if acceptance.granted {
            self.damage(std::mem::take(&mut found));
            self.finish();
            return;
        }
        // The table (or the context) changed since the plan: what does the
        // live table reference now?
        self.damage(found);
        self.to(Phase::AwaitDamage);
        let config = self.damage_session();
        self.outbox.push_back(DeletionRequest::CheckDamage {
            config: Box::new(config),
            keys: self.deleted.len as u64,
        });
    }

    /// The keys this run deleted (or maybe), in plan order: `count` of
    /// them from the `start`th, for the damage check's session.
    pub fn damage_keys(&self, start: u64, count: u32) -> Vec<String> {
        let start = usize::try_from(start).unwrap_or(usize::MAX);
        self.deleted
            .iter()
            .skip(start)
            .take(count as usize)
            .map(|i| self.plan.delete[i as usize].key.clone())
            .collect()
    }

    /// The planner session that says what the live table references: the
    /// live pointer (the plan's named as a prior read, so a pointer that
    /// went back refuses), the plan's time and window, the live context.
    fn damage_session(&self) -> SessionConfig {
        let t = &self.plan.tokens;
        let pointer = match self.plan.format {
            TableFormat::Delta => String::new(),
            TableFormat::Iceberg => self.live_pointer.clone().unwrap_or_default(),
        };
        let mut c = SessionConfig::new(
            &self.plan.table_location,
            &pointer,
            t.now_ms,
            t.file_retention_ms,
        );
        c.format = self.plan.format;
        c.allow_short_retention = true;
        c.location_map = self.config.location_map.clone();
        c.context = self.live_context.clone();
        c.prior_pointers = vec![t.metadata_location.clone()];
        c
    }

    /// Answers `CheckDamage`: the deleted keys the live table references,
    /// with why.
    pub fn handle_referenced(&mut self, referenced: Vec<(String, String)>) -> Result<()> {
        if self.phase != Phase::AwaitDamage {
            return Err(self.unexpected("a damage check answered when none was asked for".into()));
        }
        let found = referenced
            .into_iter()
            .filter_map(|(k, why)| index_of(&self.plan, &k).map(|i| (i, why)))
            .collect();
        self.damage(found);
        self.finish();
        Ok(())
    }

    /// Answers `CheckDamage`: the planner session could not say (it was
    /// refused, the store failed). The run may have damaged the table.
    pub fn handle_referenced_failed(&mut self, why: String) -> Result<()> {
        if self.phase != Phase::AwaitDamage {
            return Err(self.unexpected("a damage check failed when none was asked for".into()));
        }
        self.outcome.damage_unchecked = Some(why);
        self.finish();
        Ok(())
    }

    fn damage(&mut self, found: Vec<(u32, String)>) {
        let mut seen = BTreeSet::new();
        for (i, why) in found {
            if !seen.insert(i) || !self.deleted.contains(i) {
                continue;
            }
            let it = self.item(i);
            let detail = if self.absent.contains(i) {
                format!("absent when this share came to it (an earlier attempt of the share may have deleted it), and the live table needs it: {why}")
            } else {
                format!("deleted by this run, and the live table needs it: {why}")
            };
            let mut r = self.make_receipt(
                &it,
                DeleteResult::Damaged,
                Some(it.pinned.clone()),
                Some(detail),
            );
            r.restore = Some(restore_hint(&it.uri, &it.pinned));
            r.receipt.confirmed_ms = None;
            self.push(r);
        }
    }

    /// A key of a share found gone (by its HEAD or its DELETE): an
    /// earlier attempt of the share may have deleted it, so the damage
    /// check covers it.
    fn absent_in_share(&mut self, index: u32) {
        if self.config.share.is_some() && !self.config.dry_run {
            self.deleted.insert(index);
            self.absent.insert(index);
        }
    }

    fn finish(&mut self) {
        let o = &mut self.outcome;
        let count = |r: &str| o.results.get(r).copied().unwrap_or(0);
        // A share run again after an attempt that never answered: that
        // attempt may have deleted keys this one never came to (refused,
        // stopped), and nothing checked them for damage.
        if let (Some(share), Some(stamp)) = (self.config.share, o.share.as_ref()) {
            // Not HEADed, or not shown present or absent: stopped, held,
            // or a HEAD or DELETE that failed.
            let unreached = if o.refused.is_some() {
                u64::from(stamp.keys)
            } else {
                count("skipped-stopped") + count("skipped-protected") + count("failed")
            };
            if share.attempt > 0 && unreached > 0 && o.damage_unchecked.is_none() {
                o.damage_unchecked = Some(format!(
                    "attempt {} of share {} of {}: an earlier attempt of it may have deleted some of the {unreached} keys this one never came to, and no damage check covered them",
                    share.attempt + 1,
                    share.index,
                    share.of
                ));
            }
        }
        o.exit = exit_status(
            &o.results,
            o.damage_unchecked.is_some(),
            o.refused.is_some(),
            o.stopped.is_some(),
        );
        if let Some(stamp) = o.share.as_mut() {
            stamp.finished = true;
        }
        self.to(Phase::Done);
        self.outbox.clear();
    }

    fn make_receipt(
        &self,
        it: &Item,
        result: DeleteResult,
        seen: Option<ObjectVersion>,
        detail: Option<String>,
    ) -> DeletionReceipt {
        DeletionReceipt {
            receipt: Receipt {
                key: it.key.clone(),
                result,
                version: seen,
                requested_ms: self.clock_ms,
                confirmed_ms: Some(self.clock_ms),
                delete_marker: false,
                delete_marker_version_id: None,
                detail,
            },
            uri: it.uri.clone(),
            planned: it.pinned.clone(),
            restore: None,
        }
    }

    fn receipt(
        &mut self,
        it: &Item,
        result: DeleteResult,
        seen: Option<ObjectVersion>,
        detail: Option<String>,
    ) {
        let r = self.make_receipt(it, result, seen, detail);
        self.push(r);
    }

    /// [`Deletion::poll_request`] as JSON.
    pub fn poll_request_json(&mut self) -> Option<String> {
        self.poll_request()
            .map(|r| serde_json::to_string(&r).unwrap_or_default())
    }

    /// Several answers at once, as a JSON array (see [`JsonAnswer`]), in
    /// order; stops at the first that fails (protocol: bad-input for one
    /// that does not parse).
    pub fn handle_answers_json(&mut self, answers: &[u8]) -> Result<()> {
        let answers: Vec<JsonAnswer> = serde_json::from_slice(answers).map_err(|e| {
            Error::protocol(
                ProtocolReason::BadInput,
                format!("deletion answers in JSON must be an array of answers: {e}"),
            )
        })?;
        for a in answers {
            match a {
                JsonAnswer::Head { key, head } => self.handle_head(key, head)?,
                JsonAnswer::Delete {
                    key,
                    delete,
                    requested_ms,
                    answered_ms,
                } => self.handle_delete(key, delete, requested_ms, answered_ms)?,
                JsonAnswer::Facts { facts } => self.handle_facts(facts)?,
                JsonAnswer::FactsFailed { facts_failed } => {
                    self.handle_facts_failed(facts_failed)?
                }
                JsonAnswer::Referenced { referenced } => self.handle_referenced(referenced)?,
                JsonAnswer::ReferencedFailed { referenced_failed } => {
                    self.handle_referenced_failed(referenced_failed)?
                }
            }
        }
        Ok(())
    }

    /// [`Deletion::drain_receipts`] as a JSON array.
    pub fn drain_receipts_json(&mut self) -> String {
        serde_json::to_string(&self.drain_receipts()).unwrap_or_default()
    }

    /// [`Deletion::outcome`] as JSON.
    pub fn outcome_json(&self) -> String {
        serde_json::to_string(&self.outcome).unwrap_or_default()
    }

    fn push(&mut self, r: DeletionReceipt) {
        *self
            .outcome
            .results
            .entry(r.receipt.result.as_str().to_owned())
            .or_default() += 1;
        if matches!(
            r.receipt.result,
            DeleteResult::Deleted | DeleteResult::WouldDelete
        ) {
            self.outcome.deleted_bytes = self.outcome.deleted_bytes.saturating_add(r.planned.size);
        }
        self.receipts.push_back(r);
    }
}

/// A run's exit status from its receipt counts (by result name): 3 damage
/// (or a damage check not made); 2 refused before anything was tried; 1 a
/// key failed, changed, was held, stopped or unknown (or the run stopped);
/// 0 otherwise.
fn exit_status(
    results: &BTreeMap<String, u64>,
    damage_unchecked: bool,
    refused: bool,
    stopped: bool,
) -> u8 {
    let count = |r: &str| results.get(r).copied().unwrap_or(0);
    let troubled = [
        "failed",
        "unknown",
        "skipped-changed",
        "skipped-protected",
        "skipped-stopped",
    ]
    .iter()
    .any(|r| count(r) > 0);
    if count("damaged") > 0 || damage_unchecked {
        3
    } else if refused {
        2
    } else if troubled || stopped {
        1
    } else {
        0
    }
}

/// The index of `key` among `plan`'s deletes (sorted by key).
fn index_of(plan: &SealedPlan, key: &str) -> Option<u32> {
    plan.delete
        .binary_search_by(|d| d.key.as_str().cmp(key))
        .ok()
        .map(|i| i as u32)
}

/// One answer in JSON: by the field it carries.
#[derive(Debug, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum JsonAnswer {
    /// A HEAD's answer.
    Head { key: String, head: HeadAnswer },
    /// A DELETE's answer.
    #[serde(rename_all = "camelCase")]
    Delete {
        key: String,
        delete: StoreAnswer,
        requested_ms: i64,
        answered_ms: Option<i64>,
    },
    /// The live facts.
    Facts { facts: Facts },
    /// The live facts could not be read.
    #[serde(rename_all = "camelCase")]
    FactsFailed { facts_failed: String },
    /// The damage check's answer.
    Referenced { referenced: Vec<(String, String)> },
    /// The damage check could not be made.
    #[serde(rename_all = "camelCase")]
    ReferencedFailed { referenced_failed: String },
}

/// How to get a deleted object back, in words: a versioned store keeps the
/// deleted version (restore it, or remove the delete marker); otherwise
/// only a backup or the writer's output has it.
pub fn restore_hint(uri: &str, pinned: &ObjectVersion) -> String {
    match pinned.version_id.as_deref() {
        Some(v) => format!(
            "versioned store: restore version {v} of {uri} (copy it over the key, or remove the delete marker above it)"
        ),
        None => format!(
            "no version to restore from on this store: restore {uri} from a backup or the writer's output"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run stopped with more keys left than one drain holds hands their
    /// receipts out in pieces, each key exactly once.
    #[test]
    fn a_stop_with_many_keys_left_drains_in_pieces() {
        let keys: Vec<String> = (0..10_000)
            .map(|i| format!("data/{i:05}.parquet"))
            .collect();
        let refs: Vec<(&str, u64)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
        let plan = crate::plan::plan_for_tests(&refs, None);
        let mut d = Deletion::start(DeletionConfig {
            plan: plan.to_json(),
            options: DeletionOptions {
                batch_size: Some(100),
                allow_future_now: true,
                ..DeletionOptions::default()
            },
        })
        .unwrap();
        let facts = |pointer: &str, switches: &[String]| Facts {
            pointer: Some(pointer.to_owned()),
            log: vec![],
            context: None,
            clock_ms: plan.tokens.now_ms,
            switches: absent(switches),
        };
        let mut receipts = Vec::new();
        let mut facts_read = 0;
        while !d.is_done() {
            while let Some(r) = d.poll_request() {
                match r {
                    DeletionRequest::ReadFacts { switches, .. } => {
                        facts_read += 1;
                        // The table moves after the first batch.
                        let p = if facts_read == 1 {
                            plan.tokens.metadata_location.clone()
                        } else {
                            "s3://b/t/metadata/v9.metadata.json".into()
                        };
                        d.handle_facts(facts(&p, &switches)).unwrap();
                    }
                    DeletionRequest::Head { objects, .. } => {
                        for t in objects {
                            d.handle_head(t.key, HeadAnswer::Absent).unwrap();
                        }
                    }
                    other => panic!("{other:?}"),
                }
            }
            let piece = d.drain_receipts();
            assert!(piece.len() <= MAX_DRAIN);
            receipts.extend(piece);
        }
        assert_eq!(receipts.len(), keys.len());
        let mut seen: Vec<&str> = receipts.iter().map(|r| r.receipt.key.as_str()).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), keys.len(), "each key once");
        let o = d.outcome();
        assert_eq!(o.results["already-absent"], 100);
        assert_eq!(o.results["skipped-stopped"], 9_900);
        assert_eq!(o.exit, 1);
    }

    /// A share runs exactly its cut of the plan, stamps its outcome, and
    /// (a retried task) checks the keys it found absent for damage along
    /// with those it deleted; the shares' outcomes combine to the run's.
    #[test]
    fn a_share_runs_its_cut_and_checks_what_it_found_absent() {
        let keys: Vec<String> = (0..10).map(|i| format!("data/{i:02}.parquet")).collect();
        let refs: Vec<(&str, u64)> = keys.iter().map(|k| (k.as_str(), 7)).collect();
        let plan = crate::plan::plan_for_tests(&refs, None);
        let start = |share: DeletionShare, keys: Option<Vec<String>>| {
            Deletion::start(DeletionConfig {
                plan: plan.to_json(),
                options: DeletionOptions {
                    allow_future_now: true,
                    share: Some(share),
                    keys,
                    ..DeletionOptions::default()
                },
            })
        };
        assert!(start(
            DeletionShare {
                index: 0,
                of: 2,
                attempt: 0
            },
            Some(vec![keys[0].clone()])
        )
        .is_err());
        assert!(start(
            DeletionShare {
                index: 2,
                of: 2,
                attempt: 0
            },
            None
        )
        .is_err());
        let mut outcomes = Vec::new();
        let mut damaged = Vec::new();
        for index in 0..3 {
            let mut d = start(
                DeletionShare {
                    index,
                    of: 3,
                    attempt: 0,
                },
                None,
            )
            .unwrap();
            let mut facts_read = 0;
            let mut heads = Vec::new();
            while !d.is_done() {
                while let Some(r) = d.poll_request() {
                    match r {
                        DeletionRequest::ReadFacts { switches, .. } => {
                            facts_read += 1;
                            // The table moves after the last batch.
                            let p = if facts_read == 1 {
                                plan.tokens.metadata_location.clone()
                            } else {
                                "s3://b/t/metadata/v9.metadata.json".into()
                            };
                            d.handle_facts(Facts {
                                pointer: Some(p),
                                log: vec![],
                                context: None,
                                clock_ms: plan.tokens.now_ms,
                                switches: absent(&switches),
                            })
                            .unwrap();
                        }
                        DeletionRequest::Head { objects, .. } => {
                            for (n, t) in objects.into_iter().enumerate() {
                                heads.push(t.key.clone());
                                // An earlier attempt of share 1 deleted its first key.
                                let answer = if index == 1 && n == 0 {
                                    HeadAnswer::Absent
                                } else {
                                    let i = index_of(&plan, &t.key).unwrap() as usize;
                                    HeadAnswer::Found(crate::ledger::version_of(&plan.delete[i]))
                                };
                                d.handle_head(t.key, answer).unwrap();
                            }
                        }
                        DeletionRequest::Delete { objects, .. } => {
                            for t in objects {
                                d.handle_delete(t.key, StoreAnswer::Deleted(None), 1, Some(2))
                                    .unwrap();
                            }
                        }
                        DeletionRequest::CheckDamage { keys: n, .. } => {
                            let checked = d.damage_keys(0, n as u32);
                            assert_eq!(checked.len() as u64, n);
                            // The live table needs the key the earlier attempt deleted.
                            let needed: Vec<(String, String)> = checked
                                .iter()
                                .filter(|k| *k == &keys[3])
                                .map(|k| (k.clone(), "a manifest of snapshot 9".into()))
                                .collect();
                            d.handle_referenced(needed).unwrap();
                        }
                    }
                }
                for r in d.drain_receipts() {
                    if r.receipt.result == DeleteResult::Damaged {
                        damaged.push(r);
                    }
                }
            }
            let cut = DeletionShare {
                index,
                of: 3,
                attempt: 0,
            }
            .range(10)
            .unwrap();
            let want: Vec<String> = keys[cut.start as usize..cut.end as usize].to_vec();
            assert_eq!(heads, want, "share {index} holds its cut");
            let o = d.outcome();
            let stamp = o.share.clone().unwrap();
            assert_eq!(
                (stamp.first, stamp.keys, stamp.deletes),
                (cut.start, cut.end - cut.start, 10)
            );
            assert_eq!(stamp.plan_digest, plan.digest);
            outcomes.push(o);
        }
        // Share 1 is keys 3..6: its first was absent, and it is damage.
        assert_eq!(damaged.len(), 1);
        assert_eq!(damaged[0].receipt.key, keys[3]);
        assert!(damaged[0]
            .receipt
            .detail
            .as_deref()
            .unwrap()
            .contains("an earlier attempt of the share"));
        assert_eq!(outcomes[1].exit, 3);
        let whole = combine(&plan.digest, 10, &outcomes).unwrap();
        assert_eq!(whole.exit, 3);
        assert_eq!(whole.results["deleted"], 9);
        assert_eq!(whole.results["already-absent"], 1);
        assert_eq!(whole.results["damaged"], 1);
        assert_eq!(whole.deleted_bytes, 63);
        assert!(whole.share.is_none());
        assert!(combine(&plan.digest, 10, &outcomes[..2]).is_err());
        assert!(
            combine(&plan.digest, 11, &outcomes).is_err(),
            "another plan's size"
        );
    }

    /// A later attempt at a share that skips a key as held cannot say an
    /// earlier attempt left it alone: its damage is unchecked.
    #[test]
    fn a_retried_share_that_skips_a_held_key_says_its_damage_is_unchecked() {
        let keys: Vec<String> = (0..3).map(|i| format!("data/{i:02}.parquet")).collect();
        let refs: Vec<(&str, u64)> = keys.iter().map(|k| (k.as_str(), 7)).collect();
        // The hold came after the first attempt deleted the key; the plan
        // is sealed with it only so that the context is accepted.
        let held = format!(
            r#"{{"holds":[{{"scope":{{"pathPrefix":"{}"}},"generation":1,"reason":"case"}}]}}"#,
            keys[0]
        );
        let plan = crate::plan::plan_for_tests(&refs, Some(&held));
        let run = |attempt: u32| {
            let mut d = Deletion::start(DeletionConfig {
                plan: plan.to_json(),
                options: DeletionOptions {
                    allow_future_now: true,
                    share: Some(DeletionShare {
                        index: 0,
                        of: 1,
                        attempt,
                    }),
                    ..DeletionOptions::default()
                },
            })
            .unwrap();
            let mut receipts = Vec::new();
            while !d.is_done() {
                while let Some(r) = d.poll_request() {
                    match r {
                        DeletionRequest::ReadFacts { switches, .. } => d
                            .handle_facts(Facts {
                                pointer: Some(plan.tokens.metadata_location.clone()),
                                log: vec![],
                                context: Some(held.clone()),
                                clock_ms: plan.tokens.now_ms,
                                switches: absent(&switches),
                            })
                            .unwrap(),
                        DeletionRequest::Head { objects, .. } => {
                            for t in objects {
                                let i = index_of(&plan, &t.key).unwrap() as usize;
                                let v = crate::ledger::version_of(&plan.delete[i]);
                                d.handle_head(t.key, HeadAnswer::Found(v)).unwrap();
                            }
                        }
                        DeletionRequest::Delete { objects, .. } => {
                            for t in objects {
                                d.handle_delete(t.key, StoreAnswer::Deleted(None), 1, Some(2))
                                    .unwrap();
                            }
                        }
                        other => panic!("{other:?}"),
                    }
                }
                receipts.extend(d.drain_receipts());
            }
            (receipts, d.outcome())
        };
        let (receipts, first) = run(0);
        assert_eq!(
            receipts[0].receipt.result,
            DeleteResult::SkippedProtected,
            "{receipts:?}"
        );
        assert_eq!((first.exit, first.damage_unchecked), (1, None));
        let (_, later) = run(1);
        assert_eq!(later.exit, 3, "{later:?}");
        assert!(later.damage_unchecked.unwrap().contains("earlier attempt"));
    }

    fn absent(switches: &[String]) -> Vec<crate::stop::SwitchReading> {
        switches
            .iter()
            .map(|u| crate::stop::SwitchReading {
                uri: u.clone(),
                answer: crate::stop::SwitchAnswer::Absent,
            })
            .collect()
    }

    /// Drives a run of `n` keys, batches of 2, on a store that holds
    /// every key; `switch(batch, uris)` answers the switches before each
    /// batch. Returns the receipts' results by key and the outcome.
    fn run_with_switch(
        n: usize,
        extra: Vec<String>,
        switch: impl Fn(u32, &[String]) -> Vec<crate::stop::SwitchReading>,
    ) -> (BTreeMap<String, String>, DeletionOutcome) {
        let keys: Vec<String> = (0..n).map(|i| format!("data/{i}.parquet")).collect();
        let refs: Vec<(&str, u64)> = keys.iter().map(|k| (k.as_str(), 1)).collect();
        let plan = crate::plan::plan_for_tests(&refs, None);
        let mut d = Deletion::start(DeletionConfig {
            plan: plan.to_json(),
            options: DeletionOptions {
                batch_size: Some(2),
                allow_future_now: true,
                store_gives_etags: false,
                stop_switches: extra,
                ..DeletionOptions::default()
            },
        })
        .unwrap();
        let mut results = BTreeMap::new();
        while !d.is_done() {
            while let Some(r) = d.poll_request() {
                match r {
                    DeletionRequest::ReadFacts {
                        purpose, switches, ..
                    } => {
                        let batch = match purpose {
                            FactsPurpose::Batch(b) => b,
                            FactsPurpose::Final => {
                                assert!(switches.is_empty(), "no switch after the deletes");
                                0
                            }
                        };
                        d.handle_facts(Facts {
                            pointer: Some(plan.tokens.metadata_location.clone()),
                            log: vec![],
                            context: None,
                            clock_ms: plan.tokens.now_ms,
                            switches: switch(batch, &switches),
                        })
                        .unwrap();
                    }
                    DeletionRequest::Head { objects, .. } => {
                        for t in objects {
                            let v = plan.delete.iter().find(|p| p.key == t.key).unwrap();
                            let seen = crate::ledger::version_of(v);
                            d.handle_head(t.key, HeadAnswer::Found(seen)).unwrap();
                        }
                    }
                    DeletionRequest::Delete { objects, .. } => {
                        for t in objects {
                            d.handle_delete(t.key, StoreAnswer::Deleted(None), 1, Some(2))
                                .unwrap();
                        }
                    }
                    other => panic!("{other:?}"),
                }
            }
            for r in d.drain_receipts() {
                let prior =
                    results.insert(r.receipt.key.clone(), r.receipt.result.as_str().to_owned());
                assert!(prior.is_none(), "one receipt per key");
            }
        }
        (results, d.outcome())
    }

    /// A halt set between two batches stops the run before the next:
    /// what was deleted stays deleted, every key left is `skipped-stopped`
    /// with the halt's words, and every batch read the table's own switch
    /// and the fleet's.
    #[test]
    fn a_halt_between_batches_stops_before_the_next() {
        let fleet = "s3://ops/lakesweep/stop.json".to_owned();
        let set = crate::stop::halt_document(None, "listing looks wrong", "oncall", 7).unwrap();
        let (results, outcome) = run_with_switch(6, vec![fleet.clone()], |batch, uris| {
            if batch > 0 {
                assert_eq!(
                    uris.len(),
                    2,
                    "the table's switch and the fleet's: {uris:?}"
                );
            }
            uris.iter()
                .map(|u| crate::stop::SwitchReading {
                    uri: u.clone(),
                    answer: if batch >= 2 && u == &fleet {
                        crate::stop::SwitchAnswer::Present(set.clone())
                    } else {
                        crate::stop::SwitchAnswer::Absent
                    },
                })
                .collect()
        });
        let deleted = results.values().filter(|r| *r == "deleted").count();
        let stopped = results.values().filter(|r| *r == "skipped-stopped").count();
        assert_eq!((deleted, stopped), (2, 4), "{results:?}");
        let why = outcome.stopped.unwrap().join(" ");
        assert!(
            why.contains("listing looks wrong") && why.contains("oncall"),
            "{why}"
        );
        assert_eq!(outcome.exit, 1);
    }

    /// A switch set before the first batch still gives every key its
    /// receipt (a halted run is not a refused one), and a switch left
    /// unread or unreadable stops the run as a set one does.
    #[test]
    fn a_switch_set_unread_or_unreadable_stops_from_the_first_batch() {
        let set = crate::stop::halt_document(None, "drill", "me", 1).unwrap();
        // None: the switch is not read at all.
        let answers = [
            Some(crate::stop::SwitchAnswer::Present(set)),
            None,
            Some(crate::stop::SwitchAnswer::Failed("503 Slow Down".into())),
            Some(crate::stop::SwitchAnswer::Present(
                "{\"halted\":false}".into(),
            )),
        ];
        for answer in answers {
            let (results, outcome) = run_with_switch(3, vec![], |_, uris| {
                uris.iter()
                    .filter_map(|u| {
                        answer.clone().map(|a| crate::stop::SwitchReading {
                            uri: u.clone(),
                            answer: a,
                        })
                    })
                    .collect()
            });
            assert_eq!(results.len(), 3);
            assert!(
                results.values().all(|r| r == "skipped-stopped"),
                "{results:?}"
            );
            assert!(outcome.refused.is_none());
            assert_eq!(outcome.exit, 1);
        }
    }

    #[test]
    fn only_the_runs_steps_are_transitions() {
        use Phase::*;
        assert!(AwaitFacts(1).can_move_to(&Deleting(1)));
        assert!(!AwaitFacts(1).can_move_to(&Deleting(2)));
        assert!(Deleting(1).can_move_to(&AwaitFacts(2)));
        assert!(!Deleting(1).can_move_to(&AwaitFacts(3)));
        assert!(!Deleting(1).can_move_to(&AwaitDamage));
        assert!(AwaitFinalFacts.can_move_to(&AwaitDamage));
        assert!(!AwaitDamage.can_move_to(&Deleting(1)));
        assert!(!Done.can_move_to(&AwaitFacts(1)));
    }
}
