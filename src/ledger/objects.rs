//! The objects in flight: a table sorted by key, each with its state, the
//! version pinned, when and why it got there. Reasons are interned (a step
//! moves a million objects for one reason, which is kept once).

use std::collections::HashMap;

use super::{ObjectState, ObjectVersion, ProbePurpose, Receipt};

/// One object in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    /// Its state.
    pub state: ObjectState,
    /// The version pinned.
    pub version: ObjectVersion,
    /// When it entered its state, ms since the epoch.
    pub since_ms: i64,
    /// The ledger revision in which it entered its state.
    pub since_revision: u64,
    /// Why it is in its state: an index into the ledger's [`Whys`].
    pub why: u32,
    /// It was once in `DELETE_UNKNOWN` (the gates count those).
    pub unknown_once: bool,
    /// The HEAD this run wants of it, not answered yet (never stored).
    pub probe: Option<ProbePurpose>,
    /// The revision whose approval approved it (0: none; never stored:
    /// an approval holds within its run).
    pub approved_in: u64,
    /// The receipt of its delete (`DELETED`, `DELETE_UNKNOWN`), archived
    /// with it once it is verified.
    pub receipt: Option<Box<Receipt>>,
}

/// The objects in flight, sorted by key (relative to the table location).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Objects {
    items: Vec<(String, Entry)>,
}

impl Objects {
    /// How many.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Where `key` is (`Ok`), or would go (`Err`).
    pub fn position(&self, key: &str) -> Result<usize, usize> {
        self.items.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The entry of `key`.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.position(key).ok().map(|i| &self.items[i].1)
    }

    /// The entry of `key`, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        match self.position(key) {
            Ok(i) => Some(&mut self.items[i].1),
            Err(_) => None,
        }
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.items.iter().map(|(k, e)| (k.as_str(), e))
    }

    /// The `i`th entry in key order.
    pub fn at(&self, i: usize) -> Option<(&str, &Entry)> {
        self.items.get(i).map(|(k, e)| (k.as_str(), e))
    }

    /// The `i`th entry in key order, to change.
    pub fn at_mut(&mut self, i: usize) -> Option<(&str, &mut Entry)> {
        self.items.get_mut(i).map(|(k, e)| (k.as_str(), e))
    }

    /// Adds entries whose keys are new (sorted, no repeats among
    /// themselves or with the table's).
    pub fn merge(&mut self, mut new: Vec<(String, Entry)>) {
        if new.is_empty() {
            return;
        }
        new.sort_by(|a, b| a.0.cmp(&b.0));
        let sorted_after = self
            .items
            .last()
            .is_none_or(|(last, _)| new[0].0.as_str() > last.as_str());
        self.items.append(&mut new);
        if !sorted_after {
            self.items.sort_by(|a, b| a.0.cmp(&b.0));
        }
    }

    /// Appends an entry read from storage; its key must sort after every
    /// key held (storage is written in key order).
    pub fn push_sorted(&mut self, key: String, e: Entry) -> Result<(), String> {
        if let Some((last, _)) = self.items.last() {
            if key.as_str() <= last.as_str() {
                return Err(format!("`{key}` is out of order (after `{last}`)"));
            }
        }
        self.items.push((key, e));
        Ok(())
    }

    /// Takes out every entry `take` selects, in key order.
    pub fn extract(&mut self, take: impl Fn(&Entry) -> bool) -> Vec<(String, Entry)> {
        let mut out = Vec::new();
        let mut kept = Vec::with_capacity(self.items.len());
        for (k, e) in std::mem::take(&mut self.items) {
            if take(&e) {
                out.push((k, e));
            } else {
                kept.push((k, e));
            }
        }
        self.items = kept;
        out
    }
}

/// The reasons objects are where they are, each kept once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Whys {
    texts: Vec<String>,
    index: HashMap<String, u32>,
}

impl Whys {
    /// The index of `text`, added when new.
    pub fn intern(&mut self, text: &str) -> u32 {
        if let Some(i) = self.index.get(text) {
            return *i;
        }
        let i = self.texts.len() as u32;
        self.texts.push(text.to_owned());
        self.index.insert(text.to_owned(), i);
        i
    }

    /// The text of `i`.
    pub fn text(&self, i: u32) -> &str {
        self.texts.get(i as usize).map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Entry {
        Entry {
            state: ObjectState::Discovered,
            version: ObjectVersion::default(),
            since_ms: 0,
            since_revision: 0,
            why: 0,
            unknown_once: false,
            probe: None,
            approved_in: 0,
            receipt: None,
        }
    }

    #[test]
    fn entries_stay_sorted_and_are_found_by_key() {
        let mut o = Objects::default();
        o.merge(vec![("b".into(), entry()), ("a".into(), entry())]);
        o.merge(vec![("c".into(), entry())]);
        o.merge(vec![("aa".into(), entry())]);
        let keys: Vec<&str> = o.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "aa", "b", "c"]);
        assert!(o.get("aa").is_some() && o.get("ab").is_none());
        assert!(o.push_sorted("b".into(), entry()).is_err());
        assert!(o.push_sorted("d".into(), entry()).is_ok());
        let taken = o.extract(|e| e.since_ms == 0);
        assert_eq!(taken.len(), 5);
        assert_eq!(o.len(), 0);
    }

    #[test]
    fn a_reason_is_kept_once() {
        let mut w = Whys::default();
        let a = w.intern("x");
        assert_eq!(w.intern("y"), a + 1);
        assert_eq!(w.intern("x"), a);
        assert_eq!(w.text(a), "x");
        assert_eq!(w.text(99), "");
    }
}
