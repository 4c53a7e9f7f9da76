//! Damage: a key the ledger deleted (or may have) that the table
//! references again. Recorded once while open, with the version to
//! restore; a key known only by its fingerprint (verified and folded) is
//! named from the archive that holds it.

use super::files::ArchivedObject;
use super::store::Read;
use super::{Damage, Ledger, ObjectVersion};

/// Damage a plan named by a fingerprint the ledger only holds folded: the
/// archives are read to name its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Lookup {
    /// The key's fingerprint, as the plan named it.
    pub(super) fingerprint: u64,
    /// What references the key now.
    pub(super) why: String,
    /// When the damage was found, ms since the epoch.
    pub(super) found_ms: i64,
}

impl Ledger {
    /// Damage not resolved yet.
    pub fn open_damage(&self) -> impl Iterator<Item = &Damage> {
        self.damage.iter().filter(|d| d.resolved_ms.is_none())
    }

    /// Records damage of `key` (deleted as `version`), unless it is open
    /// already.
    pub(crate) fn note_damage(
        &mut self,
        key: &str,
        version: ObjectVersion,
        now_ms: i64,
        why: String,
    ) {
        let fp = format!("{:016x}", crate::reach::fingerprint(key));
        self.note_damage_fp(key.to_owned(), fp, version, now_ms, why);
    }

    /// Records damage of `key` by its `fingerprint` (16 hex digits),
    /// unless damage of that fingerprint is open already.
    pub(super) fn note_damage_fp(
        &mut self,
        key: String,
        fingerprint: String,
        version: ObjectVersion,
        now_ms: i64,
        why: String,
    ) {
        if self
            .open_damage()
            .any(|d| damage_fingerprint(d) == fingerprint)
        {
            return;
        }
        self.damage.push(Damage {
            key,
            fingerprint: Some(fingerprint),
            version,
            found_ms: now_ms,
            why,
            resolved_ms: None,
        });
    }

    /// Names the damage looked up by fingerprint from archived `objects`
    /// (none: an archive could not be read); once the last archive asked
    /// for is read, what no archive named is recorded by its fingerprint.
    pub(super) fn name_damage(&mut self, objects: &[ArchivedObject]) {
        for o in objects {
            let fp = crate::reach::fingerprint(&o.key);
            if let Some(i) = self.lookups.iter().position(|l| l.fingerprint == fp) {
                let l = self.lookups.remove(i);
                self.note_damage_fp(
                    o.key.clone(),
                    format!("{fp:016x}"),
                    o.version.clone(),
                    l.found_ms,
                    l.why,
                );
            }
        }
        let archives_left = self.reads.iter().any(|r| matches!(r, Read::Archive(_)));
        if self.lookups.is_empty() {
            self.reads.retain(|r| !matches!(r, Read::Archive(_)));
        } else if !archives_left {
            for l in std::mem::take(&mut self.lookups) {
                let fp = format!("{:016x}", l.fingerprint);
                self.note_damage_fp(
                    format!(
                        "(a key with fingerprint {fp}: no archive of this ledger could name it)"
                    ),
                    fp,
                    ObjectVersion::default(),
                    l.found_ms,
                    l.why,
                );
            }
        }
    }
}

/// The fingerprint a damage record is matched by (records saved before
/// fingerprints were kept: their key's).
pub(super) fn damage_fingerprint(d: &Damage) -> String {
    d.fingerprint
        .clone()
        .unwrap_or_else(|| format!("{:016x}", crate::reach::fingerprint(&d.key)))
}
