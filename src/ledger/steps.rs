//! One run's steps: fold a plan in, reconcile, observe HEAD answers,
//! approve against the live state, accept a batch, record receipts.

use super::*;

impl Ledger {
    /// Starts a run: folds a fresh plan into the ledger (at most one step per
    /// object) and returns the HEADs the host must make.
    pub fn begin_step(
        &mut self,
        plan: &SealedPlan,
        now_ms: i64,
    ) -> Result<(Vec<Move>, Vec<Probe>)> {
        use ObjectState::*;
        self.ensure_table(plan)?;
        self.fold_damage(plan, now_ms)?;
        self.revision += 1;
        self.last_step_ms = Some(now_ms);
        let candidates: BTreeMap<&str, &PlannedDelete> =
            plan.delete.iter().map(|d| (d.key.as_str(), d)).collect();
        let mut moves = Vec::new();
        let mut probes = Vec::new();
        let keys: Vec<String> = self.objects.keys().cloned().collect();
        for key in keys {
            let o = self.objects[&key].clone();
            let cand = candidates.get(key.as_str()).copied();
            let probe = |purpose| Probe {
                key: key.clone(),
                purpose,
                expect: o.version.clone(),
            };
            match (o.state, cand) {
                (Verified, Some(d)) => {
                    // Listed again after a verified delete: a new object at
                    // the key, or the deleted version put back (a delete
                    // marker removed). Either way it starts over, through
                    // a whole new quarantine, never on the old one.
                    let why = if o.version.matches(&version_of(d)) {
                        "the deleted version is back (restored after its delete was verified): a candidate again, starting over"
                    } else {
                        "a new object under a key deleted earlier: a candidate again, starting over"
                    };
                    self.set(&key, Discovered, Some(version_of(d)), now_ms, why.into(), &mut moves)?
                }
                (Verified, None) => {}
                (Deleted, _) => probes.push(probe(ProbePurpose::VerifyGone)),
                (DeleteUnknown, _) => probes.push(probe(ProbePurpose::Reconcile)),
                (DeleteApproved, _) => {
                    // An approval without receipts: the run died mid-delete.
                    self.set(&key, DeleteUnknown, None, now_ms, "approved, but no receipt was recorded (interrupted run): outcome unknown".into(), &mut moves)?;
                    probes.push(probe(ProbePurpose::Reconcile));
                }
                (Protected, None) => {}
                (Protected, Some(d)) => self.set(&key, Discovered, Some(version_of(d)), now_ms, "a delete candidate again: starting over".into(), &mut moves)?,
                (_, None) => self.set(&key, Protected, None, now_ms, format!("no longer a delete candidate in plan {} (referenced by a commit, leased, held, young or changed): kept", short(&plan.digest)), &mut moves)?,
                (_, Some(d)) if !o.version.matches(&version_of(d)) => self.set(&key, Protected, Some(version_of(d)), now_ms, "the object changed since it was pinned: kept, starts over".into(), &mut moves)?,
                (Discovered, Some(_)) => self.set(&key, UnreferencedEligible, None, now_ms, "a delete candidate in two consecutive plans".into(), &mut moves)?,
                (UnreferencedEligible, Some(_)) => self.set(&key, Quarantined, None, now_ms, format!("version pinned; quarantine of {} ms begins", self.quarantine_ms), &mut moves)?,
                (Quarantined, Some(_)) => {
                    if now_ms.saturating_sub(o.since_ms) >= self.quarantine_ms {
                        probes.push(probe(ProbePurpose::RestoreCheck));
                    }
                }
                (RestoreVerified, Some(_)) => {}
            }
        }
        for d in &plan.delete {
            if !self.objects.contains_key(&d.key) {
                self.set(
                    &d.key,
                    Discovered,
                    Some(version_of(d)),
                    now_ms,
                    format!("a delete candidate in plan {}", short(&plan.digest)),
                    &mut moves,
                )?;
            }
        }
        Ok((moves, probes))
    }

    /// Takes a plan's damage: every key this ledger deleted that the plan
    /// found referenced and missing from the listing is damage (open until
    /// a plan finds it listed again or no longer referenced). A plan not
    /// checked against this ledger's [`Ledger::deleted_index`] is refused
    /// while the ledger has deleted anything: its damage would go unseen.
    fn fold_damage(&mut self, plan: &SealedPlan, now_ms: i64) -> Result<()> {
        let consumed = self.consumed_keys();
        if !consumed.is_empty() {
            let want = hex(&Sha256::digest(self.deleted_index()));
            if plan.tokens.deleted_index.as_deref() != Some(want.as_str()) {
                return Err(Error::invalid(
                    "plan",
                    "the plan was not checked against this ledger's deleted keys (its deleted-index): a key the ledger deleted that the table references again would go unseen; make the plan with the ledger's deleted-index",
                ));
            }
        }
        let by_fingerprint: BTreeMap<String, &String> = consumed
            .iter()
            .map(|k| (format!("{:016x}", crate::reach::fingerprint(k)), k))
            .collect();
        let mut found = std::collections::BTreeSet::new();
        for d in &plan.damaged {
            let Some(key) = by_fingerprint.get(&d.fingerprint) else {
                continue;
            };
            found.insert((*key).clone());
            let version = self.objects[key.as_str()].version.clone();
            self.note_damage(
                key,
                version,
                now_ms,
                format!(
                    "deleted by this ledger, and the table references it again ({}) while the listing no longer holds it",
                    d.reason
                ),
            );
        }
        for d in self.damage.iter_mut() {
            if d.resolved_ms.is_none() && !found.contains(&d.key) {
                d.resolved_ms = Some(now_ms);
            }
        }
        Ok(())
    }

    /// Starts a recovery run (`reconcile`): every delete whose outcome is not
    /// confirmed is settled by HEAD. An approval left without receipts (the
    /// run died mid-delete) becomes `DELETE_UNKNOWN` first. Returns the moves
    /// and the HEADs the host must make; nothing is approved or deleted.
    pub fn reconcile_step(&mut self, now_ms: i64) -> Result<(Vec<Move>, Vec<Probe>)> {
        use ObjectState::*;
        self.revision += 1;
        self.last_step_ms = Some(now_ms);
        let mut moves = Vec::new();
        let mut probes = Vec::new();
        let keys: Vec<String> = self.objects.keys().cloned().collect();
        for key in keys {
            let o = self.objects[&key].clone();
            let probe = |purpose| Probe {
                key: key.clone(),
                purpose,
                expect: o.version.clone(),
            };
            match o.state {
                DeleteApproved => {
                    self.set(&key, DeleteUnknown, None, now_ms, "approved, but no receipt was recorded (interrupted run): outcome unknown, reconciled now".into(), &mut moves)?;
                    probes.push(probe(ProbePurpose::Reconcile));
                }
                DeleteUnknown => probes.push(probe(ProbePurpose::Reconcile)),
                Deleted => probes.push(probe(ProbePurpose::VerifyGone)),
                _ => {}
            }
        }
        Ok((moves, probes))
    }

    /// Applies the store's answers to this run's probes.
    pub fn observe(&mut self, observations: &[Observation], now_ms: i64) -> Result<Vec<Move>> {
        use ObjectState::*;
        let mut moves = Vec::new();
        for ob in observations {
            let Some(o) = self.objects.get(&ob.key).cloned() else {
                return Err(Error::protocol(
                    ProtocolReason::UnexpectedAnswer,
                    format!(
                        "observation of `{}`, which the ledger does not hold",
                        ob.key
                    ),
                ));
            };
            let same = ob.seen.as_ref().is_some_and(|s| o.version.matches(s));
            match (o.state, &ob.seen) {
                (Quarantined, _) if ob.blocked.is_some() => {
                    // No transition: it waits in quarantine, and says why.
                    if let Some(obj) = self.objects.get_mut(&ob.key) {
                        obj.why = format!(
                            "held in quarantine: {}",
                            ob.blocked.as_deref().unwrap_or("")
                        );
                    }
                }
                (Quarantined, _) if same => self.set(&ob.key, RestoreVerified, None, now_ms, "quarantine passed; the pinned version still exists and can be restored".into(), &mut moves)?,
                (Quarantined, None) => self.set(&ob.key, Protected, None, now_ms, "vanished during quarantine (not by us): kept in the ledger, investigate".into(), &mut moves)?,
                (Quarantined, Some(_)) => self.set(&ob.key, Protected, ob.seen.clone(), now_ms, "rewritten during quarantine: kept".into(), &mut moves)?,
                (Deleted, None) => self.set(&ob.key, Verified, None, now_ms, "confirmed gone".into(), &mut moves)?,
                (Deleted, Some(_)) if same => self.set(&ob.key, Protected, None, now_ms, "deleted and confirmed, but the pinned version is back (a delete marker removed: restored on purpose?): kept, starts over".into(), &mut moves)?,
                (Deleted, Some(_)) => self.set(&ob.key, Verified, None, now_ms, "our version is gone; a newer object now has this key (not ours)".into(), &mut moves)?,
                (DeleteUnknown, None) => self.set(&ob.key, Verified, None, now_ms, "reconciled: gone".into(), &mut moves)?,
                (DeleteUnknown, Some(_)) if same => self.set(&ob.key, RestoreVerified, None, now_ms, "reconciled: not deleted, the pinned version is intact; retried after a new approval".into(), &mut moves)?,
                (DeleteUnknown, Some(_)) => self.set(&ob.key, Protected, ob.seen.clone(), now_ms, "reconciled: another version now has this key; kept".into(), &mut moves)?,
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

    /// The one irreversible acceptance point: compares the live state with
    /// the sealed plan and, when nothing differs, approves exactly the
    /// objects verified before this run that the plan still lists. Any
    /// difference approves nothing (the plan must be recomputed).
    pub fn approve(
        &mut self,
        plan: &SealedPlan,
        live: &LiveState,
        now_ms: i64,
    ) -> Result<(Approval, Vec<Move>)> {
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
        if let Some(rule) = &t.restore_drill {
            // Age by the host's clock, not the plan's `now` (which may be
            // set in the past to make an old drill look recent).
            if let Some(why) = self.drill_missing(rule, live.clock_ms.unwrap_or(now_ms)) {
                differences.push(why);
            }
        }
        let candidates: BTreeMap<&str, &PlannedDelete> =
            plan.delete.iter().map(|d| (d.key.as_str(), d)).collect();
        let keys: Vec<String> = self
            .objects
            .iter()
            .filter(|(k, o)| {
                o.state == ObjectState::RestoreVerified
                    && o.since_revision < self.revision
                    && !live.blocked.contains_key(k.as_str())
                    && !acc.denied.contains_key(k.as_str())
                    && candidates
                        .get(k.as_str())
                        .is_some_and(|d| o.version.matches(&version_of(d)))
            })
            .map(|(k, _)| k.clone())
            .collect();
        let root = quarantine_root(keys.iter().map(|k| (k.as_str(), &self.objects[k].version)));
        let granted = differences.is_empty() && !keys.is_empty();
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
            quarantine_root: root,
            keys: if granted { keys.clone() } else { Vec::new() },
        };
        self.approvals.push(approval.clone());
        let mut moves = Vec::new();
        if granted {
            for k in &keys {
                self.set(
                    k,
                    ObjectState::DeleteApproved,
                    None,
                    now_ms,
                    format!(
                        "approved against {} (holds {}, leases {})",
                        short(&t.metadata_location),
                        t.hold_generation,
                        t.lease_watermark
                    ),
                    &mut moves,
                )?;
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

    /// The keys this run approved (the last approval granted in this
    /// revision), and the digest of the plan it approved; none when this
    /// run approved nothing.
    pub fn approved_now(&self) -> Option<(&[String], &str)> {
        self.approvals
            .iter()
            .rev()
            .find(|a| a.granted && a.revision == self.revision)
            .map(|a| (a.keys.as_slice(), a.plan_digest.as_str()))
    }

    /// Records the receipts of the last granted approval. An approved key
    /// without a receipt is `DELETE_UNKNOWN`, never "deleted".
    pub fn record(&mut self, receipts: Vec<Receipt>, now_ms: i64) -> Result<Vec<Move>> {
        use ObjectState::*;
        let Some(approval) = self
            .approvals
            .iter()
            .rev()
            .find(|a| a.granted && a.revision == self.revision)
            .cloned()
        else {
            if receipts.is_empty() {
                return Ok(Vec::new());
            }
            return Err(Error::unsafe_(
                UnsafeReason::TableChanging,
                "receipts without a granted approval in this run: something deleted objects the ledger did not approve",
            ));
        };
        if let Some(r) = receipts
            .iter()
            .find(|r| r.result == DeleteResult::WouldDelete)
        {
            return Err(Error::protocol(
                ProtocolReason::BadInput,
                format!("`{}`: a dry run's receipt is never recorded", r.key),
            ));
        }
        let mut by_key: BTreeMap<String, Receipt> = BTreeMap::new();
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
                self.receipts.push(r);
                continue;
            }
            if !approval.keys.contains(&r.key) {
                // Recorded for the audit (the gate `deleted_outside_approval`
                // counts it and the run fails), never folded into a state.
                self.receipts.push(r);
                continue;
            }
            by_key.insert(r.key.clone(), r);
        }
        let mut moves = Vec::new();
        for k in &approval.keys {
            match by_key.remove(k) {
                None => self.set(
                    k,
                    DeleteUnknown,
                    None,
                    now_ms,
                    "approved but no receipt: outcome unknown until reconciled".into(),
                    &mut moves,
                )?,
                Some(r) => {
                    if let Some((to, why)) = receipt_move(&r) {
                        self.set(k, to, None, now_ms, why, &mut moves)?;
                    }
                    self.receipts.push(r);
                }
            }
        }
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

fn short(s: &str) -> String {
    s.rsplit('/').next().unwrap_or(s).chars().take(64).collect()
}

/// SHA-256 (hex) over `key\tsize\tmtime\tetag\tversion` lines, sorted by key.
pub fn quarantine_root<'a>(items: impl Iterator<Item = (&'a str, &'a ObjectVersion)>) -> String {
    let mut lines: Vec<String> = items
        .map(|(k, v)| {
            format!(
                "{k}\t{}\t{}\t{}\t{}\n",
                v.size,
                v.last_modified_ms,
                v.etag.as_deref().unwrap_or(""),
                v.version_id.as_deref().unwrap_or("")
            )
        })
        .collect();
    lines.sort();
    hex(&Sha256::digest(lines.concat().as_bytes()))
}
