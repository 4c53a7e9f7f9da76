//! The ledger as stored: a small head document (sealed by an integrity
//! digest chained to the previous one) and the files beside it (object
//! segments, the deleted-keys index, archives of verified objects), read
//! through [`Ledger::next_read`] and written through [`Ledger::next_write`]
//! one file at a time; and the audit of what the archives hold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::files::{self, ArchiveRef, ArchivedObject, FileRef, LedgerFile};
use super::LEDGER_SCHEMA;
use super::{legacy, Approval, Audit, Damage, Drill, Ledger, ObjectState, Receipt, Verified};
use crate::error::{Error, ProtocolReason, Result};

/// The head document, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Head {
    schema: String,
    table_location: String,
    table_uuid: Option<String>,
    revision: u64,
    quarantine_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_step_ms: Option<i64>,
    in_flight: u64,
    objects: Vec<FileRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deleted_index: Option<FileRef>,
    verified: Verified,
    audit: Audit,
    approvals: Vec<Approval>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    outside_receipts: Vec<Receipt>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    drills: Vec<Drill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    damage: Vec<Damage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    halts: Vec<super::HaltSeen>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rollout: Option<super::Rollout>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    full_drills: Vec<super::FullDrill>,
    previous_integrity: Option<String>,
    integrity: String,
}

impl Head {
    /// SHA-256 over the previous digest, a newline and this head's JSON
    /// with `integrity` empty.
    fn compute_integrity(&self) -> String {
        let mut body = self.clone();
        body.integrity = String::new();
        let mut h = crate::digest::HashWriter::default();
        use std::io::Write;
        let _ = h.write_all(self.previous_integrity.as_deref().unwrap_or("").as_bytes());
        let _ = h.write_all(b"\n");
        let _ = serde_json::to_writer(&mut h, &body);
        h.hex()
    }
}

/// A file the ledger waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Read {
    /// The deleted-keys index.
    Index(FileRef),
    /// A segment of the objects in flight.
    Segment(FileRef),
    /// Read to name the keys of damage found by fingerprint.
    Archive(ArchiveRef),
}

impl Read {
    /// The file's name in the ledger's folder.
    pub(super) fn name(&self) -> &str {
        match self {
            Read::Index(f) | Read::Segment(f) => &f.name,
            Read::Archive(a) => &a.file.name,
        }
    }
}

/// Where a save stands (see [`Ledger::next_write`]).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Save {
    /// Verified objects folded by this save, to archive.
    folded: Vec<ArchivedObject>,
    /// Archives written so far.
    archives_done: usize,
    /// The archives written, to add to the head.
    new_archives: Vec<ArchiveRef>,
    /// The index to write (none: unchanged).
    index: Option<(FileRef, Vec<u8>)>,
    /// Object segments written so far.
    segments_done: usize,
    /// The segments written, which the new head names.
    new_segments: Vec<FileRef>,
    /// The files the head before this save named (object files, index).
    old_names: Vec<String>,
}

/// What [`Ledger::audit`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditReport {
    /// Objects in flight.
    pub in_flight: u64,
    /// Verified objects, their bytes, and the archives holding them.
    pub verified: Verified,
    /// Archives read and found whole.
    pub archives_checked: u64,
    /// What does not add up (empty: the ledger verifies).
    pub problems: Vec<String>,
}

impl Ledger {
    /// The names of its archive files, oldest first.
    pub fn archives(&self) -> Vec<String> {
        self.verified
            .archives
            .iter()
            .map(|a| a.file.name.clone())
            .collect()
    }

    /// Checks archive `name` read as `bytes`: its SHA-256 against the
    /// head's, and every object in it against the index; returns its
    /// objects. Fails naming a damaged archive.
    pub fn check_archive(&mut self, name: &str, bytes: &[u8]) -> Result<Vec<ArchivedObject>> {
        let Some(a) = self.verified.archives.iter().find(|a| a.file.name == name) else {
            return Err(Error::invalid(
                "ledger",
                format!("{name} is not an archive of this ledger"),
            ));
        };
        let objects = match files::decode_archive(a, bytes) {
            Ok(o) => o,
            Err(e) => {
                self.problems.push(format!("archive {name}: {e}"));
                return Err(e);
            }
        };
        // Read whole again: what an earlier read of it found is settled.
        let earlier = format!("archive {name}: ");
        self.problems.retain(|p| !p.starts_with(&earlier));
        let missing = objects
            .iter()
            .filter(|o| {
                self.verified_fps
                    .binary_search(&crate::reach::fingerprint(&o.key))
                    .is_err()
            })
            .count();
        if missing > 0 {
            self.problems.push(format!(
                "archive {name}: {missing} of its keys are missing from the deleted-key index (a plan would not see them come back)"
            ));
        }
        self.checked
            .insert(name.to_owned(), (a.file.count, a.object_bytes));
        Ok(objects)
    }

    /// What the ledger holds and what does not add up: every archive not
    /// checked, and the archives' objects and bytes against the summary.
    pub fn audit(&self) -> AuditReport {
        let mut problems = self.problems.clone();
        for a in &self.verified.archives {
            if !self.checked.contains_key(&a.file.name) {
                problems.push(format!("archive {} was not checked", a.file.name));
            }
        }
        let (objects, bytes) = self
            .verified
            .archives
            .iter()
            .fold((0u64, 0u64), |(o, b), a| {
                (o + a.file.count, b + a.object_bytes)
            });
        if objects != self.verified.objects || bytes != self.verified.bytes {
            problems.push(format!(
                "the archives hold {objects} objects ({bytes} bytes); the head counts {} ({} bytes)",
                self.verified.objects, self.verified.bytes
            ));
        }
        if (self.verified_fps.len() as u64) > self.verified.objects {
            problems.push(format!(
                "the deleted-key index holds {} keys, more than the {} verified",
                self.verified_fps.len(),
                self.verified.objects
            ));
        }
        AuditReport {
            in_flight: self.objects.len() as u64,
            verified: self.verified.clone(),
            archives_checked: self.checked.len() as u64,
            problems,
        }
    }

    /// Opens a stored ledger from its head document: the files it names
    /// are then read through [`Ledger::next_read`]. A ledger an earlier
    /// lakesweep wrote whole (`lakesweep.ledger.v3`, `.v2`) is read, its
    /// digest checked, and carried on as the current schema. An unknown or
    /// newer schema, or a head whose digest does not match, is refused.
    pub fn parse(text: &str) -> Result<Ledger> {
        #[derive(Deserialize)]
        struct SchemaOnly {
            schema: Option<String>,
        }
        let schema = serde_json::from_str::<SchemaOnly>(text)
            .map_err(|e| Error::invalid("ledger", format!("not JSON: {e}")))?
            .schema;
        match schema.as_deref() {
            Some(LEDGER_SCHEMA) => {}
            Some(legacy::LEDGER_V3) => return legacy::read(text, false),
            Some(legacy::LEDGER_V2) => return legacy::read(text, true),
            Some("lakesweep.ledger.v1") => {
                return Err(Error::invalid(
                    "ledger",
                    "a ledger written before ledgers were sealed (lakesweep.ledger.v1) cannot be told from an edited one: move it aside and start a new ledger (--new-ledger); its objects start over, nothing is deleted without a new quarantine",
                ))
            }
            Some(s) if s.starts_with("lakesweep.ledger.") => {
                return Err(Error::invalid(
                    "ledger",
                    format!("ledger schema `{s}` is newer than this planner's `{LEDGER_SCHEMA}`: upgrade lakesweep, do not overwrite it"),
                ))
            }
            other => {
                return Err(Error::invalid(
                    "ledger",
                    format!("not a lakesweep ledger (schema {other:?})"),
                ))
            }
        }
        let head: Head = serde_json::from_str(text)
            .map_err(|e| Error::invalid("ledger", format!("damaged head: {e}")))?;
        if head.compute_integrity() != head.integrity {
            return Err(Error::invalid(
                "ledger",
                "edited or damaged: its integrity digest does not match its content (a ledger is only ever written by lakesweep; restore the saved one, or start a new ledger with --new-ledger)",
            ));
        }
        let mut l = Ledger::empty(head.table_location, head.table_uuid, head.quarantine_ms);
        l.revision = head.revision;
        l.last_step_ms = head.last_step_ms;
        l.approvals = head.approvals;
        l.outside_receipts = head.outside_receipts;
        l.drills = head.drills;
        l.damage = head.damage;
        l.halts = head.halts;
        l.rollout = head.rollout;
        l.full_drills = head.full_drills;
        l.audit = head.audit;
        l.verified = head.verified;
        let in_flight: u64 = head.objects.iter().map(|f| f.count).sum();
        if in_flight != head.in_flight {
            return Err(Error::invalid(
                "ledger",
                format!(
                    "damaged head: its object files hold {in_flight} objects, it says {}",
                    head.in_flight
                ),
            ));
        }
        if let Some(f) = &head.deleted_index {
            l.reads.push_back(Read::Index(f.clone()));
        }
        l.reads
            .extend(head.objects.iter().cloned().map(Read::Segment));
        l.segments = head.objects;
        l.index_file = head.deleted_index;
        // The next save chains to this one.
        l.previous_integrity = Some(head.integrity);
        Ok(l)
    }

    /// The next file of the ledger's folder to read, by name (none: it has
    /// what it needs). After opening: the index and the object files; after
    /// a step that found damage it can only name by fingerprint: archives.
    pub fn next_read(&self) -> Option<String> {
        self.reads.front().map(|r| r.name().to_owned())
    }

    /// [`Ledger::handle_read`], unguarded.
    pub(super) fn handle_read_unguarded(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        let Some(r) = self.reads.front() else {
            return Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("ledger file {name} read when none was asked for"),
            ));
        };
        if r.name() != name {
            return Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("ledger file {name} read when {} was asked for", r.name()),
            ));
        }
        let r = self.reads.pop_front().expect("a read asked for");
        match r {
            Read::Index(f) => self.verified_fps = files::decode_index(&f, bytes)?,
            Read::Segment(f) => {
                for (k, e) in files::decode_segment(&f, bytes, &mut self.whys)? {
                    if e.state == ObjectState::Verified {
                        return Err(Error::invalid(
                            "ledger",
                            format!("ledger file {name} holds `{k}` as VERIFIED: verified objects are archived, never in flight (edited?)"),
                        ));
                    }
                    self.objects.push_sorted(k, e).map_err(|why| {
                        Error::invalid("ledger", format!("ledger file {name}: {why}"))
                    })?;
                }
            }
            Read::Archive(a) => {
                let objects = files::decode_archive(&a, bytes)?;
                self.name_damage(&objects);
            }
        }
        Ok(())
    }

    /// [`Ledger::handle_missing`], unguarded.
    pub(super) fn handle_missing_unguarded(&mut self, name: &str) -> Result<()> {
        match self.reads.front() {
            Some(Read::Archive(a)) if a.file.name == name => {
                self.reads.pop_front();
                self.name_damage(&[]);
                Ok(())
            }
            Some(r) if r.name() == name => Err(Error::invalid(
                "ledger",
                format!("ledger file {name}, which the head names, is missing: restore the ledger's folder from a backup, or start a new ledger (--new-ledger)"),
            )),
            _ => Err(Error::protocol(
                ProtocolReason::UnexpectedAnswer,
                format!("ledger file {name} reported missing when it was not asked for"),
            )),
        }
    }

    /// Fails (protocol) while files of the ledger are still to be read:
    /// nothing about its objects is known yet.
    pub(super) fn ready(&self) -> Result<()> {
        match self.reads.front() {
            Some(Read::Index(f) | Read::Segment(f)) => Err(Error::protocol(
                ProtocolReason::OutOfOrder,
                format!("the ledger's files are not all read yet (next: {})", f.name),
            )),
            _ => Ok(()),
        }
    }

    /// [`Ledger::next_write`], unguarded.
    pub(super) fn next_write_unguarded(&mut self) -> Result<Option<LedgerFile>> {
        self.ready()?;
        if self.save.is_none() {
            self.save = Some(self.fold());
        }
        let s = self.save.as_mut().expect("a save");
        if s.archives_done * files::SEGMENT_OBJECTS < s.folded.len() {
            let from = s.archives_done * files::SEGMENT_OBJECTS;
            let to = (from + files::SEGMENT_OBJECTS).min(s.folded.len());
            let (a, bytes) =
                files::encode_archive(&s.folded[from..to], self.revision, s.archives_done)?;
            s.archives_done += 1;
            let name = a.file.name.clone();
            s.new_archives.push(a);
            return Ok(Some(LedgerFile { name, bytes }));
        }
        if let Some((f, bytes)) = s.index.take() {
            return Ok(Some(LedgerFile {
                name: f.name.clone(),
                bytes,
            }));
        }
        let from = s.segments_done * files::SEGMENT_OBJECTS;
        if from < self.objects.len() {
            let to = (from + files::SEGMENT_OBJECTS).min(self.objects.len());
            let items = (from..to).filter_map(|i| self.objects.at(i));
            let (f, bytes) =
                files::encode_segment(items, &self.whys, self.revision, s.segments_done)?;
            s.segments_done += 1;
            let name = f.name.clone();
            s.new_segments.push(f);
            return Ok(Some(LedgerFile { name, bytes }));
        }
        let s = self.save.take().expect("a save");
        let old = s.old_names;
        self.verified.archives.extend(s.new_archives);
        self.segments = s.new_segments;
        let mut head = self.head();
        head.integrity = head.compute_integrity();
        let bytes = serde_json::to_vec_pretty(&head)
            .map_err(|e| Error::invalid("ledger", e.to_string()))?;
        self.previous_integrity = Some(head.integrity);
        self.head_given = true;
        let kept: std::collections::BTreeSet<&str> = self
            .segments
            .iter()
            .chain(self.index_file.as_ref())
            .map(|f| f.name.as_str())
            .collect();
        self.obsolete = old
            .into_iter()
            .filter(|n| !kept.contains(n.as_str()))
            .collect();
        Ok(Some(LedgerFile {
            name: String::new(),
            bytes,
        }))
    }

    /// The files of the folder the last saved head no longer names (its
    /// earlier object files and index): delete them once the head is
    /// stored. Archives are never obsolete.
    pub fn obsolete(&self) -> Vec<String> {
        self.obsolete.clone()
    }

    /// Of `names` (a listing of the ledger's folder, names only), those the
    /// ledger does not name but a save would have written (an object
    /// segment, an archive, an index): left by a save that died before its
    /// head was stored. Delete them under the ledger's lock, after a save.
    /// Anything else in the folder is never named.
    pub fn strays(&self, names: &[String]) -> Vec<String> {
        let named: std::collections::BTreeSet<&str> = self
            .segments
            .iter()
            .chain(self.index_file.as_ref())
            .chain(self.verified.archives.iter().map(|a| &a.file))
            .map(|f| f.name.as_str())
            .collect();
        names
            .iter()
            .filter(|n| files::is_ledger_file_name(n) && !named.contains(n.as_str()))
            .cloned()
            .collect()
    }

    /// Folds every verified object out of the ones in flight: archived
    /// with its receipt, its key's fingerprint added to the index.
    fn fold(&mut self) -> Save {
        let old_names = self
            .segments
            .iter()
            .chain(self.index_file.as_ref())
            .map(|f| f.name.clone())
            .collect();
        let taken = self.objects.extract(|e| e.state == ObjectState::Verified);
        let mut folded = Vec::with_capacity(taken.len());
        let mut fps = Vec::with_capacity(taken.len());
        for (key, e) in taken {
            fps.push(crate::reach::fingerprint(&key));
            self.verified.objects += 1;
            self.verified.bytes = self.verified.bytes.saturating_add(e.version.size);
            folded.push(ArchivedObject {
                why: self.whys.text(e.why).to_owned(),
                key,
                version: e.version,
                receipt: e.receipt.map(|r| *r),
                verified_ms: e.since_ms,
            });
        }
        // Written when it changed, or when a ledger of an earlier schema
        // brought verified keys without one.
        let index = if fps.is_empty() && (self.index_file.is_some() || self.verified_fps.is_empty())
        {
            None
        } else {
            self.verified_fps.extend(fps);
            self.verified_fps.sort_unstable();
            self.verified_fps.dedup();
            let (f, bytes) = files::encode_index(&self.verified_fps);
            self.index_file = Some(f.clone());
            Some((f, bytes))
        };
        self.probe_cursor = 0;
        Save {
            folded,
            archives_done: 0,
            new_archives: Vec::new(),
            index,
            segments_done: 0,
            new_segments: Vec::new(),
            old_names,
        }
    }

    /// The head as it stands.
    fn head(&self) -> Head {
        Head {
            schema: LEDGER_SCHEMA.into(),
            table_location: self.table_location.clone(),
            table_uuid: self.table_uuid.clone(),
            revision: self.revision,
            quarantine_ms: self.quarantine_ms,
            last_step_ms: self.last_step_ms,
            in_flight: self.segments.iter().map(|f| f.count).sum(),
            objects: self.segments.clone(),
            deleted_index: self.index_file.clone(),
            verified: self.verified.clone(),
            audit: self.audit.clone(),
            approvals: self.approvals.clone(),
            outside_receipts: self.outside_receipts.clone(),
            drills: self.drills.clone(),
            damage: self.damage.clone(),
            halts: self.halts.clone(),
            rollout: self.rollout.clone(),
            full_drills: self.full_drills.clone(),
            previous_integrity: self.previous_integrity.clone(),
            integrity: String::new(),
        }
    }

    /// Saves the whole ledger at once: the head document and the folder's
    /// files by name (small ledgers, tests; a host stores a large one a
    /// file at a time through [`Ledger::next_write`]).
    pub fn save_whole(&mut self) -> Result<(String, BTreeMap<String, Vec<u8>>)> {
        let mut folder = BTreeMap::new();
        while let Some(f) = self.next_write()? {
            if f.name.is_empty() {
                let head = String::from_utf8(f.bytes)
                    .map_err(|e| Error::invalid("ledger", e.to_string()))?;
                return Ok((head, folder));
            }
            folder.insert(f.name, f.bytes);
        }
        Err(Error::protocol(
            ProtocolReason::OutOfOrder,
            "a save ended without its head",
        ))
    }

    /// Opens a ledger saved whole by [`Ledger::save_whole`] (`folder`: its
    /// files by name; a file it names that is missing is refused).
    pub fn open_whole(head: &str, folder: &BTreeMap<String, Vec<u8>>) -> Result<Ledger> {
        let mut l = Ledger::parse(head)?;
        while let Some(name) = l.next_read() {
            match folder.get(&name) {
                Some(b) => l.handle_read(&name, b)?,
                None => l.handle_missing(&name)?,
            }
        }
        Ok(l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::tests::{checked, live, receipt, sealed, verified, T};
    use crate::ledger::{DeleteResult, Observation};
    use crate::plan::SealedPlan;

    /// A newer ledger schema asks for an upgrade; anything else is not a
    /// ledger at all; both are refused, with the reason that applies.
    #[test]
    fn other_schemas_are_refused_with_their_own_reason() {
        let e = Ledger::parse(r#"{"schema":"lakesweep.ledger.v9"}"#).unwrap_err();
        assert!(e.to_string().contains("newer"), "{e}");
        let e = Ledger::parse(r#"{"schema":"lakesweep.plan.v1"}"#).unwrap_err();
        assert!(e.to_string().contains("not a lakesweep ledger"), "{e}");
        let e = Ledger::parse(r#"{"objects":{}}"#).unwrap_err();
        assert!(e.to_string().contains("not a lakesweep ledger"), "{e}");
    }

    /// Walks `p`'s keys through approval and a delete each, then a run
    /// that verifies them gone: the ledger `l` with every key VERIFIED in
    /// memory (not saved yet).
    fn deleted_and_verified(p: &SealedPlan) -> Ledger {
        let mut l = verified(p);
        let (a, _) = l.approve(p, &live(None), T).unwrap();
        assert!(a.granted);
        let keys = l.approved_keys();
        l.record(keys.iter().map(|k| receipt(k, false)).collect(), T)
            .unwrap();
        let again = checked(&sealed(&[], None), &l);
        l.begin_step(&again, T).unwrap();
        let obs: Vec<Observation> = l
            .probes()
            .iter()
            .map(|pr| Observation {
                key: pr.key.clone(),
                seen: None,
                blocked: None,
            })
            .collect();
        l.observe(&obs, T).unwrap();
        l
    }

    /// A saved ledger opens to the same objects, reasons, receipts and
    /// counters; its verified objects are folded into an archive and the
    /// deleted-key index, out of the objects in flight.
    #[test]
    fn a_saved_ledger_opens_the_same_and_verified_objects_fold_away() {
        let p = sealed(
            &[
                ("data/a.parquet", 10),
                ("data/b.parquet", 20),
                ("data/c.parquet", 5),
            ],
            None,
        );
        let mut l = deleted_and_verified(&p);
        // One more in flight, at the start of its walk.
        let more = checked(&sealed(&[("data/d.parquet", 1)], None), &l);
        l.begin_step(&more, T).unwrap();
        let (head, folder) = l.save_whole().unwrap();
        assert_eq!(
            folder.len(),
            3,
            "an archive, the index, a segment: {:?}",
            folder.keys()
        );
        assert!(folder.keys().any(|n| n.starts_with("archive-")));
        assert!(folder.keys().any(|n| n.starts_with("deleted-")));
        let back = Ledger::open_whole(&head, &folder).unwrap();
        assert_eq!(back.in_flight(), 1);
        assert_eq!(back.verified().objects, 3);
        assert_eq!(back.verified().bytes, 35);
        assert_eq!(back.state_of("data/a.parquet"), Some(ObjectState::Verified));
        assert_eq!(
            back.state_of("data/d.parquet"),
            Some(ObjectState::Discovered)
        );
        assert_eq!(back.object("data/d.parquet"), l.object("data/d.parquet"));
        assert_eq!(back.gates(), l.gates());
        assert_eq!(back.deleted_index(), l.deleted_index());
        assert_eq!(
            back.consumed(&["data/b.parquet".into(), "data/d.parquet".into()]),
            [true, false]
        );
        // The archive holds each verified object with its receipt.
        let a = &back.verified().archives[0];
        let objects = files::decode_archive(a, &folder[&a.file.name]).unwrap();
        assert_eq!(objects.len(), 3);
        assert!(objects.iter().all(|o| o
            .receipt
            .as_ref()
            .is_some_and(|r| r.result == DeleteResult::Deleted)));
        // Saved again, unchanged: the same files; the chain goes on.
        let mut again = back.clone();
        let (head2, folder2) = again.save_whole().unwrap();
        assert_ne!(head2, head, "a new head chains to the one before");
        assert!(
            folder2.keys().all(|n| folder.contains_key(n)),
            "{:?}",
            folder2.keys()
        );
        assert!(again.obsolete().is_empty());
    }

    /// Every file of the folder is the head's: an edited, truncated or
    /// missing one refuses the ledger, naming it; an edited head too.
    #[test]
    fn an_edited_truncated_or_missing_file_is_refused_by_name() {
        let p = sealed(&[("data/a.parquet", 10), ("data/b.parquet", 20)], None);
        let mut l = deleted_and_verified(&p);
        let more = checked(&sealed(&[("data/d.parquet", 1)], None), &l);
        l.begin_step(&more, T).unwrap();
        let (head, folder) = l.save_whole().unwrap();
        for name in folder.keys().filter(|n| !n.starts_with("archive-")) {
            let mut cut = folder.clone();
            let b = cut.get_mut(name).unwrap();
            b.truncate(b.len() - 1);
            let e = Ledger::open_whole(&head, &cut).unwrap_err().to_string();
            assert!(
                e.contains(name.as_str()) && e.contains("edited or truncated"),
                "{e}"
            );
            let mut gone = folder.clone();
            gone.remove(name);
            let e = Ledger::open_whole(&head, &gone).unwrap_err().to_string();
            assert!(e.contains(name.as_str()) && e.contains("missing"), "{e}");
        }
        let edited = head.replacen("\"revision\": ", "\"revision\": 1", 1);
        let e = Ledger::parse(&edited).unwrap_err().to_string();
        assert!(e.contains("integrity"), "{e}");
        // A ledger whose files are not read yet moves nothing, saves nothing.
        let mut half = Ledger::parse(&head).unwrap();
        assert!(half.next_read().is_some());
        assert!(half.begin_step(&more, T).is_err());
        assert!(
            half.next_write().is_err(),
            "a failed step leaves it refusing"
        );
    }

    /// `ledger verify`: every archive checked, its objects against the
    /// index, the sums against the head.
    #[test]
    fn an_audit_checks_every_archive_against_the_head() {
        let p = sealed(&[("data/a.parquet", 10), ("data/b.parquet", 20)], None);
        let mut l = deleted_and_verified(&p);
        let (head, folder) = l.save_whole().unwrap();
        let mut back = Ledger::open_whole(&head, &folder).unwrap();
        let report = back.audit();
        assert_eq!(report.problems.len(), 1, "{report:?}");
        assert!(report.problems[0].contains("not checked"));
        for name in back.archives() {
            let mut bad = folder[&name].clone();
            bad[12] ^= 1;
            assert!(back.check_archive(&name, &bad).is_err());
            back.check_archive(&name, &folder[&name]).unwrap();
        }
        let report = back.audit();
        assert!(report.problems.is_empty(), "{report:?}");
        assert_eq!((report.verified.objects, report.archives_checked), (2, 1));
    }

    /// A save names the files the new head no longer needs (the old
    /// segments), and a listing's strays (a save that died before its
    /// head); archives are never either.
    #[test]
    fn obsolete_files_and_strays_are_named() {
        let p = sealed(&[("data/a.parquet", 10)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        l.begin_step(&p, T).unwrap();
        let (_, first) = l.save_whole().unwrap();
        l.begin_step(&p, T).unwrap();
        let (_, second) = l.save_whole().unwrap();
        let old: Vec<String> = first.keys().cloned().collect();
        assert_eq!(l.obsolete(), old);
        let mut names: Vec<String> = second.keys().cloned().collect();
        names.extend(old.clone());
        names.push("objects-r000009-0000-ffffffffffffffff.jsonl.gz".into());
        // Not spelled as a save spells its files: never a stray.
        for other in [
            "part-00000.parquet",
            "objects-r1-0-ffffffffffffffff.jsonl.gz",
            "archive-r000009-0000-fffffffffffffff.jsonl.gz",
            "deleted-ffffffffffffffff.idx.tmp",
            "ledger.json",
        ] {
            names.push(other.into());
        }
        let strays = l.strays(&names);
        assert_eq!(strays.len(), old.len() + 1, "{strays:?}");
        assert!(second.keys().all(|n| !strays.contains(n)));
        assert!(strays.iter().all(|n| files::is_ledger_file_name(n)));
    }

    /// Damage of a key folded away (deleted, verified, archived) is named
    /// from the archive the ledger asks for, with the version to restore.
    #[test]
    fn damage_of_an_archived_key_is_named_from_its_archive() {
        let p = sealed(&[("data/a.parquet", 10), ("data/b.parquet", 20)], None);
        let mut l = deleted_and_verified(&p);
        let (head, folder) = l.save_whole().unwrap();
        let mut l = Ledger::open_whole(&head, &folder).unwrap();
        let mut next = checked(&sealed(&[], None), &l);
        next.damaged = vec![crate::plan::DamagedReference {
            fingerprint: format!("{:016x}", crate::reach::fingerprint("data/b.parquet")),
            reason: "snapshot 9 reads it".into(),
        }];
        next.digest = next.compute_digest();
        l.begin_step(&next, T).unwrap();
        let name = l.next_read().expect("its archive");
        assert!(name.starts_with("archive-"));
        l.handle_read(&name, &folder[&name]).unwrap();
        assert!(l.next_read().is_none());
        let d: Vec<&Damage> = l.open_damage().collect();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].key, "data/b.parquet");
        assert_eq!(d[0].version.size, 20);
        assert!(d[0].why.contains("snapshot 9"));
        // Missing archives leave it named by its fingerprint.
        let mut l = Ledger::open_whole(&head, &folder).unwrap();
        l.begin_step(&next, T).unwrap();
        let name = l.next_read().unwrap();
        l.handle_missing(&name).unwrap();
        let d: Vec<&Damage> = l.open_damage().collect();
        assert!(d[0].key.contains("fingerprint"), "{:?}", d[0]);
    }

    /// A ledger of more objects than one segment holds is stored in
    /// several, in key order, and reads back whole.
    #[test]
    fn many_objects_span_segments() {
        let keys: Vec<(String, u64)> = (0..files::SEGMENT_OBJECTS + 10)
            .map(|i| (format!("data/k{i:07}.parquet"), 1))
            .collect();
        let refs: Vec<(&str, u64)> = keys.iter().map(|(k, s)| (k.as_str(), *s)).collect();
        let p = sealed(&refs, None);
        let mut l = Ledger::new(&p, 0).unwrap();
        l.begin_step(&p, T).unwrap();
        let (head, folder) = l.save_whole().unwrap();
        assert_eq!(folder.len(), 2);
        let back = Ledger::open_whole(&head, &folder).unwrap();
        assert_eq!(back.in_flight(), keys.len() as u64);
        assert_eq!(back.objects(0, 3), l.objects(0, 3));
        assert_eq!(
            back.objects(files::SEGMENT_OBJECTS as u64, 20),
            l.objects(files::SEGMENT_OBJECTS as u64, 20)
        );
    }

    /// A save ends with `None` after its head; a host looping "until none"
    /// stops there, and the next save (after a step or not) starts afresh.
    #[test]
    fn a_save_ends_after_its_head() {
        let p = sealed(&[("data/a.parquet", 1)], None);
        let mut l = Ledger::new(&p, 0).unwrap();
        l.begin_step(&p, T).unwrap();
        let mut names = Vec::new();
        while let Some(f) = l.next_write().unwrap() {
            names.push(f.name);
            assert!(names.len() < 10, "a save that never ends: {names:?}");
        }
        assert_eq!(names.last().map(String::as_str), Some(""), "the head last");
        let (head, _) = l.save_whole().unwrap();
        assert!(head.contains("lakesweep.ledger.v4"));
        l.begin_step(&p, T + 1).unwrap();
        assert!(
            l.save_whole().is_ok(),
            "a step after a save starts a new one"
        );
    }
}
