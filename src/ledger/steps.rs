//! One run's steps: fold a plan in, reconcile, observe HEAD answers,
//! approve against the live state, accept a batch, record receipts.

use super::*;

impl Ledger {
    /// [`Ledger::begin_step`], unguarded.
    pub(super) fn begin_step_unguarded(&mut self, plan: &SealedPlan, now_ms: i64) -> Result<Moves> {
        use ObjectState::*;
        self.ready()?;
        self.ensure_table(plan)?;
        self.fold_damage(plan, now_ms)?;
        self.revision += 1;
        self.last_step_ms = Some(now_ms);
        self.probe_cursor = 0;
        let mut moves = Moves::default();
        // Each reason once per step (a step may move a million objects).
        let mut why = |text: &str| self.whys.intern(text);
        let back = why("the deleted version is back (restored after its delete was verified): a candidate again, starting over");
        let reused =
            why("a new object under a key deleted earlier: a candidate again, starting over");
        let interrupted =
            why("approved, but no receipt was recorded (interrupted run): outcome unknown");
        let again = why("a delete candidate again: starting over");
        let dropped = why(&format!("no longer a delete candidate in plan {} (referenced by a commit, leased, held, young or changed): kept", short(&plan.digest)));
        let changed = why("the object changed since it was pinned: kept, starts over");
        let eligible = why("a delete candidate in two consecutive plans");
        let pinned = why(&format!(
            "version pinned; quarantine of {} ms begins",
            self.quarantine_ms
        ));
        let discovered = why(&format!(
            "a delete candidate in plan {}",
            short(&plan.digest)
        ));
        let rediscovered = why(&format!("a delete candidate in plan {}, under a key this ledger deleted and verified earlier (a new object, or the deleted version put back): starting over", short(&plan.digest)));
        let mut new: Vec<(String, Entry)> = Vec::new();
        let discover = |d: &PlannedDelete, why: u32, new: &mut Vec<(String, Entry)>| {
            new.push((
                d.key.clone(),
                Entry {
                    state: Discovered,
                    version: version_of(d),
                    since_ms: now_ms,
                    since_revision: 0,
                    why,
                    unknown_once: false,
                    probe: None,
                    approved_in: 0,
                    receipt: None,
                },
            ));
        };
        let mut next = 0usize;
        for i in 0..self.objects.len() {
            let (key, state, matches, since_ms) = match self.objects.at(i) {
                Some((k, e)) => (k.to_owned(), e.state, e.version.clone(), e.since_ms),
                None => break,
            };
            // The plan's keys before this one are new to the ledger.
            while let Some(d) = plan.delete.get(next).filter(|d| d.key < key) {
                let w = if self
                    .verified_fps
                    .binary_search(&crate::reach::fingerprint(&d.key))
                    .is_ok()
                {
                    rediscovered
                } else {
                    discovered
                };
                discover(d, w, &mut new);
                next += 1;
            }
            let cand = plan.delete.get(next).filter(|d| d.key == key);
            if cand.is_some() {
                next += 1;
            }
            let same = cand.is_some_and(|d| matches.matches(&version_of(d)));
            let probe = |l: &mut Ledger, p: ProbePurpose| {
                if let Some((_, e)) = l.objects.at_mut(i) {
                    e.probe = Some(p);
                }
            };
            match (state, cand) {
                (Verified, Some(d)) => {
                    // Listed again after a verified delete: a new object at
                    // the key, or the deleted version put back. Either way it
                    // starts over, through a whole new quarantine.
                    let w = if same { back } else { reused };
                    self.move_at(i, Discovered, Some(version_of(d)), now_ms, w, &mut moves)?;
                }
                (Verified, None) => {}
                (Deleted, _) => probe(self, ProbePurpose::VerifyGone),
                (DeleteUnknown, _) => probe(self, ProbePurpose::Reconcile),
                (DeleteApproved, _) => {
                    // An approval without receipts: the run died mid-delete.
                    self.move_at(i, DeleteUnknown, None, now_ms, interrupted, &mut moves)?;
                    probe(self, ProbePurpose::Reconcile);
                }
                (Protected, None) => {}
                (Protected, Some(d)) => self.move_at(
                    i,
                    Discovered,
                    Some(version_of(d)),
                    now_ms,
                    again,
                    &mut moves,
                )?,
                (_, None) => self.move_at(i, Protected, None, now_ms, dropped, &mut moves)?,
                (_, Some(d)) if !same => self.move_at(
                    i,
                    Protected,
                    Some(version_of(d)),
                    now_ms,
                    changed,
                    &mut moves,
                )?,
                (Discovered, Some(_)) => {
                    self.move_at(i, UnreferencedEligible, None, now_ms, eligible, &mut moves)?
                }
                (UnreferencedEligible, Some(_)) => {
                    self.move_at(i, Quarantined, None, now_ms, pinned, &mut moves)?
                }
                (Quarantined, Some(_)) => {
                    if now_ms.saturating_sub(since_ms) >= self.quarantine_ms {
                        probe(self, ProbePurpose::RestoreCheck);
                    }
                }
                (RestoreVerified, Some(_)) => {}
            }
        }
        for d in &plan.delete[next.min(plan.delete.len())..] {
            let w = if self
                .verified_fps
                .binary_search(&crate::reach::fingerprint(&d.key))
                .is_ok()
            {
                rediscovered
            } else {
                discovered
            };
            discover(d, w, &mut new);
        }
        for (key, e) in &mut new {
            e.since_revision = self.revision;
            let (k, why) = (key.clone(), self.whys.text(e.why).to_owned());
            moves.note(Discovered, || Move {
                key: k,
                from: None,
                to: Discovered,
                at_ms: now_ms,
                why,
            });
        }
        self.objects.merge(new);
        Ok(moves)
    }

    /// Takes a plan's damage: every key this ledger deleted that the plan
    /// found referenced and missing from the listing is damage (open until
    /// a plan finds it listed again or no longer referenced). A plan not
    /// checked against this ledger's [`Ledger::deleted_index`] is refused
    /// while the ledger has deleted anything: its damage would go unseen.
    /// Damage of a key folded away is named from the archives, which are
    /// then asked for ([`Ledger::next_read`]).
    fn fold_damage(&mut self, plan: &SealedPlan, now_ms: i64) -> Result<()> {
        let in_flight: BTreeMap<u64, String> = self
            .objects
            .iter()
            .filter(|(_, e)| consumed_state(e.state))
            .map(|(k, _)| (crate::reach::fingerprint(k), k.to_owned()))
            .collect();
        if !in_flight.is_empty() || !self.verified_fps.is_empty() {
            let want = hex(&Sha256::digest(self.deleted_index()));
            if plan.tokens.deleted_index.as_deref() != Some(want.as_str()) {
                return Err(Error::invalid(
                    "plan",
                    "the plan was not checked against this ledger's deleted keys (its deleted-index): a key the ledger deleted that the table references again would go unseen; make the plan with the ledger's deleted-index",
                ));
            }
        }
        let mut found = std::collections::BTreeSet::new();
        for d in &plan.damaged {
            let Ok(fp) = u64::from_str_radix(&d.fingerprint, 16) else {
                continue;
            };
            found.insert(format!("{fp:016x}"));
            let why = format!(
                "deleted by this ledger, and the table references it again ({}) while the listing no longer holds it",
                d.reason
            );
            if let Some(key) = in_flight.get(&fp) {
                let version = self
                    .objects
                    .get(key)
                    .map(|e| e.version.clone())
                    .unwrap_or_default();
                self.note_damage(&key.clone(), version, now_ms, why);
            } else if self.verified_fps.binary_search(&fp).is_ok()
                && !self
                    .open_damage()
                    .any(|o| damage_fingerprint(o) == format!("{fp:016x}"))
            {
                self.lookups.push(Lookup {
                    fingerprint: fp,
                    why,
                    found_ms: now_ms,
                });
            }
        }
        if !self.lookups.is_empty() {
            // Newest first: damage is likeliest among recent deletes.
            let archives: Vec<Read> = self
                .verified
                .archives
                .iter()
                .rev()
                .cloned()
                .map(Read::Archive)
                .collect();
            if archives.is_empty() {
                self.name_damage(&[]);
            }
            self.reads.extend(archives);
        }
        for d in self.damage.iter_mut() {
            if d.resolved_ms.is_none() && !found.contains(&damage_fingerprint(d)) {
                d.resolved_ms = Some(now_ms);
            }
        }
        Ok(())
    }

    /// [`Ledger::reconcile_step`], unguarded.
    pub(super) fn reconcile_step_unguarded(&mut self, now_ms: i64) -> Result<Moves> {
        use ObjectState::*;
        self.ready()?;
        self.revision += 1;
        self.last_step_ms = Some(now_ms);
        self.probe_cursor = 0;
        let mut moves = Moves::default();
        let interrupted = self.whys.intern("approved, but no receipt was recorded (interrupted run): outcome unknown, reconciled now");
        for i in 0..self.objects.len() {
            let Some((_, e)) = self.objects.at(i) else {
                break;
            };
            let purpose = match e.state {
                DeleteApproved => {
                    self.move_at(i, DeleteUnknown, None, now_ms, interrupted, &mut moves)?;
                    ProbePurpose::Reconcile
                }
                DeleteUnknown => ProbePurpose::Reconcile,
                Deleted => ProbePurpose::VerifyGone,
                _ => continue,
            };
            if let Some((_, e)) = self.objects.at_mut(i) {
                e.probe = Some(purpose);
            }
        }
        Ok(moves)
    }

    /// How many HEADs this run still wants.
    pub fn probes_pending(&self) -> u64 {
        self.objects
            .iter()
            .filter(|(_, e)| e.probe.is_some())
            .count() as u64
    }

    /// The next `max` HEADs this run wants, in key order (each answered
    /// through [`Ledger::observe`]); empty when none is left to hand out.
    pub fn next_probes(&mut self, max: usize) -> Vec<Probe> {
        let mut out = Vec::new();
        while out.len() < max {
            let Some((key, e)) = self.objects.at(self.probe_cursor) else {
                break;
            };
            self.probe_cursor += 1;
            if let Some(purpose) = e.probe {
                out.push(Probe {
                    key: key.to_owned(),
                    purpose,
                    expect: e.version.clone(),
                });
            }
        }
        out
    }

    /// Every HEAD this run wants (small ledgers, tests).
    pub fn probes(&mut self) -> Vec<Probe> {
        self.probe_cursor = 0;
        self.next_probes(usize::MAX)
    }

    /// [`Ledger::observe`], unguarded.
    pub(super) fn observe_unguarded(
        &mut self,
        observations: &[Observation],
        now_ms: i64,
    ) -> Result<Moves> {
        use ObjectState::*;
        self.ready()?;
        let mut moves = Moves::default();
        for ob in observations {
            let Ok(i) = self.objects.position(&ob.key) else {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    format!(
                        "observation of `{}`, which the ledger does not hold",
                        ob.key
                    ),
                ));
            };
            let (state, same) = {
                let (_, e) = self.objects.at_mut(i).expect("held");
                e.probe = None;
                (
                    e.state,
                    ob.seen.as_ref().is_some_and(|s| e.version.matches(s)),
                )
            };
            let mut go = |l: &mut Ledger, to: ObjectState, v: Option<ObjectVersion>, why: &str| {
                let why = l.whys.intern(why);
                l.move_at(i, to, v, now_ms, why, &mut moves)
            };
            match (state, &ob.seen) {
                (Quarantined, _) if ob.blocked.is_some() => {
                    // No transition: it waits in quarantine, and says why.
                    let why = self.whys.intern(&format!(
                        "held in quarantine: {}",
                        ob.blocked.as_deref().unwrap_or("")
                    ));
                    if let Some((_, e)) = self.objects.at_mut(i) {
                        e.why = why;
                    }
                }
                (Quarantined, _) if same => go(self, RestoreVerified, None, "quarantine passed; the pinned version still exists and can be restored")?,
                (Quarantined, None) => go(self, Protected, None, "vanished during quarantine (not by us): kept in the ledger, investigate")?,
                (Quarantined, Some(_)) => go(self, Protected, ob.seen.clone(), "rewritten during quarantine: kept")?,
                (Deleted, None) => go(self, Verified, None, "confirmed gone")?,
                (Deleted, Some(_)) if same => go(self, Protected, None, "deleted and confirmed, but the pinned version is back (a delete marker removed: restored on purpose?): kept, starts over")?,
                (Deleted, Some(_)) => go(self, Verified, None, "our version is gone; a newer object now has this key (not ours)")?,
                (DeleteUnknown, None) => go(self, Verified, None, "reconciled: gone")?,
                (DeleteUnknown, Some(_)) if same => go(self, RestoreVerified, None, "reconciled: not deleted, the pinned version is intact; retried after a new approval")?,
                (DeleteUnknown, Some(_)) => go(self, Protected, ob.seen.clone(), "reconciled: another version now has this key; kept")?,
                (s, _) => {
                    return Err(Error::protocol(ProtocolReason::UnexpectedAnswer,format!(
                        "observation of `{}` in state {}, which asked for none",
                        ob.key,
                        state_name(s)
                    )))
                }
            }
        }
        Ok(moves)
    }

    /// [`Ledger::approve`], unguarded.
    pub(super) fn approve_unguarded(
        &mut self,
        plan: &SealedPlan,
        live: &LiveState,
        now_ms: i64,
    ) -> Result<(Approval, Moves)> {
        self.ready()?;
        self.ensure_table(plan)?;
        let t = &plan.tokens;
        // The one acceptance path, shared with `apply` and every host.
        let acc = crate::acceptance::accept_in_ledger(
            plan,
            &crate::acceptance::LiveFacts {
                metadata_location: live.metadata_location.clone(),
                head: live.head.clone(),
                context: live.context.clone(),
                clock_ms: live.clock_ms.unwrap_or(now_ms),
                allow_future_now: live.allow_future_now,
            },
        )?;
        let (live_holds, live_leases) = (acc.live_hold_generation, acc.live_lease_watermark);
        let mut differences = acc.differences.clone();
        if let Some(why) = self.rollout_refusal() {
            differences.push(why);
        }
        if let Some(rule) = &t.restore_drill {
            // Age by the host's clock, not the plan's `now` (which may be
            // set in the past to make an old drill look recent).
            if let Some(why) = self.drill_missing(rule, live.clock_ms.unwrap_or(now_ms)) {
                differences.push(why);
            }
        }
        let chosen: Vec<usize> = self
            .objects
            .iter()
            .enumerate()
            .filter(|(_, (k, e))| {
                e.state == ObjectState::RestoreVerified
                    && e.since_revision < self.revision
                    && !live.blocked.contains_key(*k)
                    && !acc.denied.contains_key(*k)
                    && plan
                        .delete
                        .binary_search_by(|d| d.key.as_str().cmp(k))
                        .is_ok_and(|j| e.version.matches(&version_of(&plan.delete[j])))
            })
            .map(|(i, _)| i)
            .collect();
        let mut root = QuarantineRoot::default();
        for i in &chosen {
            if let Some((k, e)) = self.objects.at(*i) {
                root.add(k, &e.version);
            }
        }
        let granted = differences.is_empty() && !chosen.is_empty();
        let approval = Approval {
            revision: self.revision,
            at_ms: now_ms,
            granted,
            differences,
            plan_digest: plan.digest.clone(),
            metadata_location: t.metadata_location.clone(),
            hold_generation: t.hold_generation,
            lease_watermark: t.lease_watermark,
            live_hold_generation: live_holds,
            live_lease_watermark: live_leases,
            quarantine_root: root.hex(),
            approved: if granted { chosen.len() as u64 } else { 0 },
        };
        self.approvals.push(approval.clone());
        let mut moves = Moves::default();
        if granted {
            let why = self.whys.intern(&format!(
                "approved against {} (holds {}, leases {})",
                short(&t.metadata_location),
                t.hold_generation,
                t.lease_watermark
            ));
            for i in chosen {
                self.move_at(
                    i,
                    ObjectState::DeleteApproved,
                    None,
                    now_ms,
                    why,
                    &mut moves,
                )?;
                if let Some((_, e)) = self.objects.at_mut(i) {
                    e.approved_in = self.revision;
                }
            }
        }
        Ok((approval, moves))
    }

    /// The acceptance of one delete batch of this ledger's run: the core's
    /// acceptance path, with the policy's restore-drill gate checked
    /// against this ledger's drills (by the host's clock).
    pub fn accept_batch(
        &self,
        plan: &SealedPlan,
        live: &crate::acceptance::LiveFacts,
    ) -> Result<crate::acceptance::Acceptance> {
        self.ensure_table(plan)?;
        let mut a = crate::acceptance::accept_in_ledger(plan, live)?;
        if let Some(rule) = &plan.tokens.restore_drill {
            if let Some(why) = self.drill_missing(rule, live.clock_ms) {
                a.differences.push(why);
                a.granted = false;
            }
        }
        Ok(a)
    }

    /// The digest of the plan this run's granted approval approved; none
    /// when this run approved nothing.
    pub fn approved_now(&self) -> Option<&str> {
        self.approvals
            .iter()
            .rev()
            .find(|a| a.granted && a.revision == self.revision)
            .map(|a| a.plan_digest.as_str())
    }

    /// The keys this run approved, in key order.
    pub fn approved_keys(&self) -> Vec<String> {
        self.objects
            .iter()
            .filter(|(_, e)| self.approved_this_run(e))
            .map(|(k, _)| k.to_owned())
            .collect()
    }

    fn approved_this_run(&self, e: &Entry) -> bool {
        e.state == ObjectState::DeleteApproved && e.approved_in == self.revision
    }

    /// The indices in `plan`'s deletes of the keys this run approved.
    pub(crate) fn approved_indices(&self, plan: &SealedPlan) -> Vec<u32> {
        plan.delete
            .iter()
            .enumerate()
            .filter(|(_, d)| {
                self.objects
                    .get(&d.key)
                    .is_some_and(|e| self.approved_this_run(e))
            })
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// [`Ledger::record_receipts`], unguarded.
    pub(super) fn record_receipts_unguarded(
        &mut self,
        receipts: &[Receipt],
        now_ms: i64,
    ) -> Result<Moves> {
        self.ready()?;
        if receipts.is_empty() {
            return Ok(Moves::default());
        }
        if self.approved_now().is_none() {
            return Err(Error::unsafe_(
                UnsafeReason::TableChanging,
                "receipts without a granted approval in this run: something deleted objects the ledger did not approve",
            ));
        }
        if let Some(r) = receipts
            .iter()
            .find(|r| r.result == DeleteResult::WouldDelete)
        {
            return Err(Error::protocol(
                ProtocolReason::BadInput,
                format!("`{}`: a dry run's receipt is never recorded", r.key),
            ));
        }
        let mut moves = Moves::default();
        for r in receipts {
            if r.result == DeleteResult::Damaged {
                // Not a delete's outcome: what the check after them found.
                let version = r
                    .version
                    .clone()
                    .or_else(|| self.objects.get(&r.key).map(|o| o.version.clone()));
                if let Some(v) = version {
                    let why = r.detail.clone().unwrap_or_else(|| {
                        "deleted by this run, and the live table references it".into()
                    });
                    self.note_damage(&r.key, v, now_ms, why);
                }
                continue;
            }
            let approved = self
                .objects
                .get(&r.key)
                .is_some_and(|e| self.approved_this_run(e));
            if !approved {
                // Recorded for the audit (the gate `deleted_outside_approval`
                // counts it and the run fails), never folded into a state.
                // A second receipt of a key this run approved is not a
                // delete outside the approval.
                let approved_in_run = self
                    .objects
                    .get(&r.key)
                    .is_some_and(|e| e.approved_in == self.revision);
                if r.result == DeleteResult::Deleted && !approved_in_run {
                    self.audit.deleted_outside_approval += 1;
                }
                self.outside_receipts.push(r.clone());
                continue;
            }
            if let Some((to, why)) = receipt_move(r) {
                self.set(&r.key, to, None, now_ms, &why, &mut moves)?;
                if let Some(e) = self.objects.get_mut(&r.key) {
                    if matches!(to, ObjectState::Deleted | ObjectState::DeleteUnknown) {
                        e.receipt = Some(Box::new(r.clone()));
                    }
                }
            }
        }
        Ok(moves)
    }

    /// [`Ledger::finish_recording`], unguarded.
    pub(super) fn finish_recording_unguarded(&mut self, now_ms: i64) -> Result<Moves> {
        self.ready()?;
        let mut moves = Moves::default();
        let why = self
            .whys
            .intern("approved but no receipt: outcome unknown until reconciled");
        let left: Vec<usize> = self
            .objects
            .iter()
            .enumerate()
            .filter(|(_, (_, e))| self.approved_this_run(e))
            .map(|(i, _)| i)
            .collect();
        for i in left {
            self.move_at(i, ObjectState::DeleteUnknown, None, now_ms, why, &mut moves)?;
        }
        Ok(moves)
    }

    /// Records this run's receipts at once and ends the recording
    /// ([`Ledger::record_receipts`], [`Ledger::finish_recording`]).
    pub fn record(&mut self, receipts: Vec<Receipt>, now_ms: i64) -> Result<Moves> {
        if self.approved_now().is_none() {
            if receipts.is_empty() {
                return Ok(Moves::default());
            }
            return Err(Error::unsafe_(
                UnsafeReason::TableChanging,
                "receipts without a granted approval in this run: something deleted objects the ledger did not approve",
            ));
        }
        let mut moves = self.record_receipts(&receipts, now_ms)?;
        moves.extend(self.finish_recording(now_ms)?);
        Ok(moves)
    }
}

/// The state a delete's receipt moves its object to, and why (`None`:
/// a damage receipt, which moves nothing).
fn receipt_move(r: &Receipt) -> Option<(ObjectState, String)> {
    use ObjectState::*;
    let detail = |or: &str| r.detail.clone().unwrap_or_else(|| or.to_owned());
    Some(match r.result {
        DeleteResult::Deleted if r.delete_marker => (
            Deleted,
            format!(
                "deleted: delete marker {} hides version {}; the bucket keeps that version (undo: remove the marker)",
                r.delete_marker_version_id.as_deref().unwrap_or("(id not given)"),
                r.version.as_ref().and_then(|v| v.version_id.as_deref()).unwrap_or("(id not given)"),
            ),
        ),
        DeleteResult::Deleted => (Deleted, "deleted; the store confirmed".to_owned()),
        DeleteResult::AlreadyAbsent => (Deleted, "already absent when deleted".to_owned()),
        DeleteResult::SkippedChanged => (
            Protected,
            "changed since approval: not deleted, kept".to_owned(),
        ),
        DeleteResult::SkippedStopped => (
            Protected,
            format!(
                "not deleted: the run stopped ({}); kept, starts over",
                detail("the table changed")
            ),
        ),
        DeleteResult::SkippedProtected => (Protected, format!("not deleted: {}", detail("held"))),
        DeleteResult::Failed => (
            DeleteUnknown,
            format!("delete failed ({}): outcome to reconcile", detail("no detail")),
        ),
        DeleteResult::Unknown => (
            DeleteUnknown,
            "no answer from the store: outcome unknown".to_owned(),
        ),
        DeleteResult::Damaged | DeleteResult::WouldDelete => return None,
    })
}

/// SHA-256 (hex) over `key\tsize\tmtime\tetag\tversion` lines, in key
/// order: the exact object list an approval covers, hashed as it is
/// walked.
#[derive(Default)]
pub struct QuarantineRoot(crate::digest::HashWriter);

impl QuarantineRoot {
    /// Adds the next key (keys come in ascending order) and its version.
    pub fn add(&mut self, key: &str, v: &ObjectVersion) {
        use std::io::Write;
        let _ = writeln!(
            self.0,
            "{key}\t{}\t{}\t{}\t{}",
            v.size,
            v.last_modified_ms,
            v.etag.as_deref().unwrap_or(""),
            v.version_id.as_deref().unwrap_or("")
        );
    }

    /// The digest, lowercase hex.
    pub fn hex(self) -> String {
        self.0.hex()
    }
}

/// [`QuarantineRoot`] of `items` in any order (sorted here).
pub fn quarantine_root<'a>(items: impl Iterator<Item = (&'a str, &'a ObjectVersion)>) -> String {
    let mut items: Vec<(&str, &ObjectVersion)> = items.collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    let mut root = QuarantineRoot::default();
    for (k, v) in items {
        root.add(k, v);
    }
    root.hex()
}
