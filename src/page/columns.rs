//! A listing page in columns, and its verdicts as codes: page mode for
//! pages of thousands of keys, where a record per object costs more than
//! judging it (a component host lowers every string of every record in and
//! out; the row form allocates a decision per key).
//!
//! The verdicts are exactly those [`PageClassifier::classify`] gives for
//! the same objects: both ask `Classifier::find`, the columns path without
//! assembling a decision around its answer.
//! Entity tags and version ids are not columns: no verdict depends on them
//! (the host keeps them beside its keys and deletes by them).

use crate::error::{Error, ProtocolReason, Result};
use crate::hashing::Map;
use crate::path::same_bytes;
use crate::verdict::{ListedObject, Verdict};

use super::PageClassifier;

/// A listing page in columns: object `i`'s key is
/// `keys[key_ends[i - 1]..key_ends[i]]` (from 0 for the first), its size
/// `sizes[i]`, its time `last_modified_ms[i]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageColumns {
    /// Every object's key (full URI, as listed), back to back.
    pub keys: String,
    /// Where each key ends in `keys`: byte offsets, non-decreasing, each on
    /// a character boundary, the last equal to `keys.len()`.
    pub key_ends: Vec<u32>,
    /// Each object's size in bytes.
    pub sizes: Vec<u64>,
    /// Each object's last-modified time, milliseconds since the Unix epoch.
    pub last_modified_ms: Vec<i64>,
}

impl PageColumns {
    /// Appends one object. Fails (protocol: bad-input) once the keys'
    /// text would pass 4 GiB, which offsets of 32 bits cannot address.
    pub fn push(&mut self, key: &str, size: u64, last_modified_ms: i64) -> Result<()> {
        let end = u32::try_from(self.keys.len() + key.len()).map_err(|_| {
            Error::protocol(
                ProtocolReason::BadInput,
                "a page's keys pass 4 GiB of text: list it in smaller pages",
            )
        })?;
        self.keys.push_str(key);
        self.key_ends.push(end);
        self.sizes.push(size);
        self.last_modified_ms.push(last_modified_ms);
        Ok(())
    }

    /// The page of these objects, in their order.
    pub fn of(objects: &[ListedObject]) -> Result<PageColumns> {
        let mut page = PageColumns::default();
        for o in objects {
            page.push(&o.key, o.size, o.last_modified_ms)?;
        }
        Ok(page)
    }

    /// Number of objects; fails (protocol: bad-input) for columns that do
    /// not describe a page (unequal lengths, offsets out of order, past the
    /// text or inside a character, text after the last key).
    fn objects(&self) -> Result<usize> {
        let bad = |what: String| {
            Error::protocol(ProtocolReason::BadInput, format!("page columns: {what}"))
        };
        let n = self.key_ends.len();
        if self.sizes.len() != n || self.last_modified_ms.len() != n {
            return Err(bad(format!(
                "{n} key ends, {} sizes and {} times: one of each per object",
                self.sizes.len(),
                self.last_modified_ms.len()
            )));
        }
        let mut prev = 0usize;
        for (i, &end) in self.key_ends.iter().enumerate() {
            let end = end as usize;
            if end < prev || !self.keys.is_char_boundary(end) {
                return Err(bad(format!(
                    "key {i} ends at byte {end}: before the key it follows, past the text ({} bytes) or inside a character",
                    self.keys.len()
                )));
            }
            prev = end;
        }
        if prev != self.keys.len() {
            return Err(bad(format!(
                "{} bytes of text after the last key",
                self.keys.len() - prev
            )));
        }
        Ok(n)
    }
}

/// The verdicts on a page in columns, in the page's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageVerdicts {
    /// Object `i`'s verdict.
    pub verdicts: Vec<Verdict>,
    /// Object `i`'s reason, in words: an index into `details`.
    pub detail_of: Vec<u32>,
    /// The page's distinct reasons, each once.
    pub details: Vec<String>,
}

impl PageVerdicts {
    /// Object `i`'s reason (panics for an `i` past the page).
    pub fn detail(&self, i: usize) -> &str {
        &self.details[self.detail_of[i] as usize]
    }

    fn with_capacity(n: usize) -> PageVerdicts {
        PageVerdicts {
            verdicts: Vec::with_capacity(n),
            detail_of: Vec::with_capacity(n),
            details: Vec::new(),
        }
    }
}

/// The index of each distinct reason in a page's `details`.
#[derive(Default)]
struct Details {
    by_text: Map<String, u32>,
    by_source: Map<u32, u32>,
    /// The reason found by text last: garbage comes in runs (one folder,
    /// one failed job, one hour), whose reasons read alike.
    last_text: Option<u32>,
}

impl Details {
    fn of_text(&mut self, out: &mut PageVerdicts, text: &str) -> u32 {
        // Compared a word at a time before the map hashes the text and
        // compares it byte by byte (in wasm).
        if let Some(i) = self.last_text {
            if same_bytes(out.details[i as usize].as_bytes(), text.as_bytes()) {
                return i;
            }
        }
        let i = match self.by_text.get(text) {
            Some(&i) => i,
            None => {
                let i = out.details.len() as u32;
                out.details.push(text.to_owned());
                self.by_text.insert(text.to_owned(), i);
                i
            }
        };
        self.last_text = Some(i);
        i
    }
}

impl PageClassifier {
    /// Classifies one page in columns: for each object the verdict and
    /// reason [`PageClassifier::classify`] gives. Fails (protocol) for a key
    /// outside the table, and (protocol: bad-input) for columns that do not
    /// describe a page.
    pub fn classify_columns(&self, page: PageColumns) -> Result<PageVerdicts> {
        let n = page.objects()?;
        let c = &self.classifier;
        let mut out = PageVerdicts::with_capacity(n);
        let mut details = Details::default();
        let mut start = 0usize;
        // Neighbours in a listing often share a source (one manifest's
        // files, one folder): the last one is checked before the map.
        let mut last: Option<(u32, u32)> = None;
        for i in 0..n {
            let end = page.key_ends[i] as usize;
            let key = &page.keys[start..end];
            start = end;
            let f = c.find(key, page.sizes[i], page.last_modified_ms[i])?;
            let detail = match (f.source, last) {
                (Some(source), Some((seen, d))) if source == seen => d,
                (Some(source), _) => match details.by_source.get(&source) {
                    Some(&d) => d,
                    None => {
                        let d = details.of_text(&mut out, &f.why);
                        details.by_source.insert(source, d);
                        d
                    }
                },
                (None, _) => details.of_text(&mut out, &f.why),
            };
            if let Some(source) = f.source {
                last = Some((source, detail));
            }
            out.verdicts.push(f.verdict);
            out.detail_of.push(detail);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(keys: &[&str]) -> PageColumns {
        let mut p = PageColumns::default();
        for k in keys {
            p.push(k, 1, 0).unwrap();
        }
        p
    }

    #[test]
    fn columns_that_describe_no_page_are_refused() {
        let mut p = page(&["s3://b/t/a", "s3://b/t/é"]);
        assert_eq!(p.objects().unwrap(), 2);
        let mut uneven = p.clone();
        uneven.sizes.pop();
        let mut backwards = p.clone();
        backwards.key_ends = vec![12, 10];
        let mut inside = p.clone();
        *inside.key_ends.last_mut().unwrap() -= 1;
        let mut past = p.clone();
        *past.key_ends.last_mut().unwrap() += 1;
        p.keys.push('x');
        for (cols, says) in [
            (uneven, "one of each per object"),
            (backwards, "before the key it follows"),
            (inside, "inside a character"),
            (past, "past the text"),
            (p, "after the last key"),
        ] {
            let e = cols.objects().unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Protocol {
                        reason: ProtocolReason::BadInput,
                        ..
                    }
                ),
                "{e:?}"
            );
            assert!(e.to_string().contains(says), "{e}");
        }
        assert_eq!(PageColumns::default().objects().unwrap(), 0);
    }
}
