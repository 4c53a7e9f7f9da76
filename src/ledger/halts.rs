//! Halts a ledger has seen: when a stop switch is set, every object still
//! waiting in quarantine waits longer, once per halt, so a fleet stopped
//! because something looked wrong does not delete the moment it resumes.

use serde::{Deserialize, Serialize};

use super::*;

/// A halt this ledger lengthened its quarantine for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HaltSeen {
    /// The switch that named it.
    pub switch: String,
    /// The halt's generation at that switch.
    pub generation: u64,
    /// Why it was set, and by whom.
    pub reason: String,
    /// Who set it.
    pub by: String,
    /// When it was set, ms since the epoch.
    pub at_ms: i64,
    /// When this ledger saw it.
    pub seen_ms: i64,
    /// How much longer every waiting object stays, ms.
    pub extension_ms: i64,
    /// Objects whose quarantine was lengthened.
    pub objects: u64,
    /// When the halt was cleared, once this ledger saw it cleared: from
    /// then on every waiting object waited at least the extension more.
    #[serde(default)]
    pub resumed_ms: Option<i64>,
}

impl Ledger {
    /// The halts this ledger lengthened its quarantine for, oldest first.
    pub fn halts(&self) -> &[HaltSeen] {
        &self.halts
    }

    /// Lengthens the quarantine of every waiting object for each halt the
    /// `readings` of the stop switches name (set or already cleared) that
    /// this ledger has not seen: by `extension_ms` (none: the ledger's
    /// quarantine interval). A `QUARANTINED` object's interval runs that
    /// much longer; a `RESTORE_VERIFIED` one goes back to `QUARANTINED`
    /// until its verification time plus the extension. Each halt counts
    /// once, however often it is read. Once a halt is seen cleared, every
    /// waiting object (those quarantined during the halt too) waits at
    /// least until the resume plus the extension: a long halt does not
    /// release everything the moment it ends. Returns the halts newly seen.
    pub fn observe_halts(
        &mut self,
        readings: &[crate::stop::SwitchReading],
        extension_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<Vec<HaltSeen>> {
        self.guarded(|l| l.observe_halts_unguarded(readings, extension_ms, now_ms))
    }

    fn observe_halts_unguarded(
        &mut self,
        readings: &[crate::stop::SwitchReading],
        extension_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<Vec<HaltSeen>> {
        use ObjectState::*;
        self.ready()?;
        let extension = extension_ms.unwrap_or(self.quarantine_ms);
        if extension < 0 {
            return Err(Error::invalid("halt-extension", "must not be negative"));
        }
        let mut seen = Vec::new();
        for (switch, h, resumed) in crate::stop::halts_named(readings) {
            // A halt is its switch, generation and time: a switch written
            // over counts from 1 again, and its halts are new ones.
            let known = self.halts.iter().position(|s| {
                s.switch == switch && s.generation == h.generation && s.at_ms == h.at_ms
            });
            if let Some(i) = known {
                if let (Some(r), None) = (&resumed, self.halts[i].resumed_ms) {
                    let ext = self.halts[i].extension_ms;
                    self.hold_until(r.at_ms.saturating_add(ext), &switch, now_ms)?;
                    self.halts[i].resumed_ms = Some(r.at_ms);
                    self.revision += 1;
                }
                continue;
            }
            let why = self.whys.intern(&format!(
                "halted by {switch} ({}: {}): quarantine lengthened by {}",
                h.by,
                h.reason,
                crate::duration::human_ms(extension)
            ));
            let mut moves = Moves::default();
            let mut count = 0u64;
            for i in 0..self.objects.len() {
                let Some((_, e)) = self.objects.at_mut(i) else {
                    break;
                };
                match e.state {
                    Quarantined => {
                        e.since_ms = e.since_ms.saturating_add(extension);
                        e.why = why;
                        count += 1;
                    }
                    RestoreVerified => {
                        let since = e
                            .since_ms
                            .saturating_add(extension)
                            .saturating_sub(self.quarantine_ms);
                        self.move_at(i, Quarantined, None, since, why, &mut moves)?;
                        count += 1;
                    }
                    _ => {}
                }
            }
            if let Some(r) = &resumed {
                self.hold_until(r.at_ms.saturating_add(extension), &switch, now_ms)?;
            }
            self.revision += 1;
            let s = HaltSeen {
                resumed_ms: resumed.map(|r| r.at_ms),
                switch,
                generation: h.generation,
                reason: h.reason,
                by: h.by,
                at_ms: h.at_ms,
                seen_ms: now_ms,
                extension_ms: extension,
                objects: count,
            };
            self.halts.push(s.clone());
            seen.push(s);
        }
        Ok(seen)
    }
}

impl Ledger {
    /// Every waiting object waits at least until `until_ms` (a resume plus
    /// the extension): a `QUARANTINED` one's interval ends no earlier, a
    /// `RESTORE_VERIFIED` one goes back to `QUARANTINED` until then.
    fn hold_until(&mut self, until_ms: i64, switch: &str, now_ms: i64) -> Result<()> {
        use ObjectState::*;
        let since = until_ms.saturating_sub(self.quarantine_ms);
        let why = self.whys.intern(&format!(
            "resumed after a halt by {switch}: waits until {until_ms} ms at least"
        ));
        let mut moves = Moves::default();
        for i in 0..self.objects.len() {
            let Some((_, e)) = self.objects.at_mut(i) else {
                break;
            };
            match e.state {
                Quarantined if e.since_ms < since => {
                    e.since_ms = since;
                    e.why = why;
                }
                RestoreVerified if until_ms > now_ms => {
                    self.move_at(i, Quarantined, None, since, why, &mut moves)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stop::{halt_document, resume_document, SwitchAnswer, SwitchReading};

    fn reading(doc: &str) -> Vec<SwitchReading> {
        vec![SwitchReading {
            uri: "s3://ops/stop.json".into(),
            answer: SwitchAnswer::Present(doc.into()),
        }]
    }

    #[test]
    fn a_halt_lengthens_waiting_objects_once() {
        let day = 86_400_000;
        let plan =
            crate::plan::plan_for_tests(&[("data/a.parquet", 1), ("data/b.parquet", 1)], None);
        let mut l = Ledger::new(&plan, day).unwrap();
        // Three plans: discovered, eligible, then quarantined at t=2 days.
        l.begin_step(&plan, 0).unwrap();
        l.begin_step(&plan, day).unwrap();
        l.begin_step(&plan, 2 * day).unwrap();
        assert_eq!(l.state_of("data/a.parquet"), Some(ObjectState::Quarantined));
        let before = l.outlook(2 * day);
        let set = halt_document(None, "wrong listing", "oncall", 2 * day + 5).unwrap();
        let seen = l
            .observe_halts(&reading(&set), Some(3 * day), 2 * day + 6)
            .unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].objects, 2);
        let after = l.outlook(2 * day);
        assert_eq!(
            after[0].earliest_ms - before[0].earliest_ms,
            3 * day,
            "{before:?} {after:?}"
        );
        // Read again, or cleared: the same halt counts once.
        assert!(l
            .observe_halts(&reading(&set), Some(3 * day), 2 * day + 7)
            .unwrap()
            .is_empty());
        let cleared = resume_document(Some(&set), "fixed", "oncall", 2 * day + 8).unwrap();
        assert!(l
            .observe_halts(&reading(&cleared), None, 2 * day + 9)
            .unwrap()
            .is_empty());
        // A new halt counts again, by the ledger's own interval by default.
        let again = halt_document(Some(&cleared), "again", "oncall", 2 * day + 10).unwrap();
        let seen = l
            .observe_halts(&reading(&again), None, 2 * day + 11)
            .unwrap();
        assert_eq!(seen[0].extension_ms, day);
        assert_eq!(l.halts().len(), 2);
    }

    #[test]
    fn a_long_halt_keeps_everything_waiting_past_its_resume() {
        let day = 86_400_000;
        let plan = crate::plan::plan_for_tests(&[("data/a.parquet", 1)], None);
        let mut l = Ledger::new(&plan, day).unwrap();
        let set = halt_document(None, "audit", "sre", 0).unwrap();
        // Seen set on day 0 (nothing waits yet)...
        l.observe_halts(&reading(&set), Some(2 * day), 0).unwrap();
        // ...the object is quarantined during the halt, on day 2...
        for t in [day, 2 * day, 2 * day + 1] {
            l.begin_step(&plan, t).unwrap();
        }
        assert_eq!(l.state_of("data/a.parquet"), Some(ObjectState::Quarantined));
        // ...and the halt ends on day 30: it waits until day 32 at least.
        let cleared = resume_document(Some(&set), "done", "sre", 30 * day).unwrap();
        assert!(l
            .observe_halts(&reading(&cleared), None, 30 * day + 5)
            .unwrap()
            .is_empty());
        let w = l.outlook(30 * day + 5);
        assert_eq!(w[0].earliest_ms, 32 * day, "{w:?}");
        assert_eq!(l.halts()[0].resumed_ms, Some(30 * day));
    }
}
