//! A frozen set of 64-bit key fingerprints, about 4.5 bytes per key.
//!
//! The top `bits` bits of a fingerprint choose a bucket; `starts` holds
//! each bucket's first slot (2^bits + 1 entries, `bits` chosen for 8 to 16
//! keys per bucket, so at most half a byte per key) and `rems` the low 32
//! bits of every fingerprint, sorted within its bucket. A lookup reads one
//! pair of starts and searches one short run: two or three cache lines,
//! where a binary search over 16-byte fingerprints touched about twenty.
//!
//! Collisions, and why they are safe: two keys whose fingerprints agree in
//! their bucket bits and their low 32 bits share one slot. The set never
//! loses a member through that (both keys answer "present"), so the only
//! error possible is a key that is *not* a member answering "present":
//! with k keys in its bucket that happens with probability about
//! k / 2^32 (below 4 in 10^9 per lookup). Every user of the keep set reads
//! "present" as "keep": a collision keeps a piece of garbage, and never
//! deletes a live file. Checks where "present" would *relax* a safety rule
//! use exact sets instead (see [`super::KeepSet::references_document`]).

use crate::error::{Error, Result};

/// The most bucket bits (2^28 buckets: 2 billion keys).
const MAX_BITS: u32 = 28;

/// Bucket bits for `n` keys: 2^bits buckets hold 8 to 16 keys on average.
pub(super) fn bits_for(n: usize) -> u32 {
    let per = n / 8;
    if per < 2 {
        0
    } else {
        (usize::BITS - 1 - per.leading_zeros()).min(MAX_BITS)
    }
}

/// The slot key of a fingerprint under `bits` bucket bits: bucket in the
/// high half, low 32 bits of the fingerprint in the low half. Slots sort
/// in the order of the frozen arrays.
pub(super) fn slot(fp: u64, bits: u32) -> u64 {
    let bucket = if bits == 0 { 0 } else { fp >> (64 - bits) };
    (bucket << 32) | (fp & 0xffff_ffff)
}

/// A frozen fingerprint set; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FingerprintSet {
    bits: u32,
    starts: Vec<u32>,
    rems: Vec<u32>,
}

impl Default for FingerprintSet {
    fn default() -> Self {
        FingerprintSet {
            bits: 0,
            starts: vec![0, 0],
            rems: Vec::new(),
        }
    }
}

impl FingerprintSet {
    /// Builds the set from slot keys (see [`slot`], all made with `bits`)
    /// sorted ascending and without repeats.
    pub(super) fn from_sorted_slots(bits: u32, slots: impl ExactSizeIterator<Item = u64>) -> Self {
        let buckets = 1usize << bits;
        let mut starts = vec![0u32; buckets + 1];
        let mut rems = Vec::with_capacity(slots.len());
        for s in slots {
            starts[(s >> 32) as usize + 1] += 1;
            rems.push(s as u32);
        }
        for i in 0..buckets {
            starts[i + 1] += starts[i];
        }
        FingerprintSet { bits, starts, rems }
    }

    /// Bucket bits.
    pub(super) fn bits(&self) -> u32 {
        self.bits
    }

    /// Number of slots.
    pub(super) fn len(&self) -> usize {
        self.rems.len()
    }

    /// The slot index of `fp`, if present.
    pub(super) fn find(&self, fp: u64) -> Option<usize> {
        let s = slot(fp, self.bits);
        let b = (s >> 32) as usize;
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        self.rems[lo..hi]
            .binary_search(&(s as u32))
            .ok()
            .map(|i| lo + i)
    }

    /// Every slot key, in order.
    pub(super) fn slots(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        let mut bucket = 0usize;
        (0..self.rems.len()).map(move |i| {
            while self.starts[bucket + 1] as usize <= i {
                bucket += 1;
            }
            ((bucket as u64) << 32) | u64::from(self.rems[i])
        })
    }

    /// Heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        (self.starts.capacity() + self.rems.capacity()) * 4
    }

    /// Appends the set: bits, count, starts, rems (little-endian).
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&u64::from(self.bits).to_le_bytes());
        out.extend_from_slice(&(self.rems.len() as u64).to_le_bytes());
        for v in self.starts.iter().chain(&self.rems) {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// Reads what [`FingerprintSet::encode`] wrote from `take` (a reader
    /// that fails on truncation), checking every invariant lookups rely on.
    pub(super) fn decode<'a>(
        mut take: impl FnMut(usize) -> Result<&'a [u8]>,
        bad: impl Fn(&str) -> Error,
    ) -> Result<Self> {
        let word = |b: &[u8]| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        };
        let bits = word(take(8)?);
        let n = word(take(8)?);
        if bits > u64::from(MAX_BITS) || n > u64::from(u32::MAX) {
            return Err(bad("fingerprint set size"));
        }
        let bits = bits as u32;
        let buckets = 1usize << bits;
        let n = usize::try_from(n)
            .ok()
            .filter(|n| n.checked_mul(4).is_some())
            .ok_or_else(|| bad("fingerprint set size"))?;
        let u32s = |b: &[u8]| -> Vec<u32> {
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        // The count is checked against the bytes present before anything
        // of that size is allocated.
        let starts = u32s(take((buckets + 1) * 4)?);
        let rems = u32s(take(n * 4)?);
        if starts[0] != 0 || starts[buckets] as usize != n || starts.windows(2).any(|w| w[0] > w[1])
        {
            return Err(bad("bucket starts"));
        }
        for w in starts.windows(2) {
            if rems[w[0] as usize..w[1] as usize]
                .windows(2)
                .any(|r| r[0] >= r[1])
            {
                return Err(bad("fingerprints not sorted"));
            }
        }
        Ok(FingerprintSet { bits, starts, rems })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(fps: &[u64]) -> FingerprintSet {
        let bits = bits_for(fps.len());
        let mut slots: Vec<u64> = fps.iter().map(|&f| slot(f, bits)).collect();
        slots.sort_unstable();
        slots.dedup();
        FingerprintSet::from_sorted_slots(bits, slots.into_iter())
    }

    #[test]
    fn members_are_found_and_buckets_hold_8_to_16_keys() {
        let fps: Vec<u64> = (0..100_000u64)
            .map(|i| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()))
            .collect();
        let s = set_of(&fps);
        assert_eq!(s.bits(), 13);
        assert!(fps.iter().all(|&f| s.find(f).is_some()));
        let misses = (100_000..200_000u64)
            .filter(|i| {
                s.find(xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()))
                    .is_some()
            })
            .count();
        assert_eq!(misses, 0, "a false hit is ~1e-9 per lookup");
        assert!(s.heap_bytes() <= 100_000 * 4 + 100_000 / 2 + 8);
        assert!(s.slots().eq(set_of(&fps).slots()));
    }

    #[test]
    fn a_collision_keeps_both_keys_present() {
        // Same top bits and same low 32 bits: one slot, both "present".
        let a = 0x1234_5678_0000_0042u64;
        let b = 0x1fff_ffff_0000_0042u64;
        let mut fps = vec![a, b];
        fps.extend((0..64u64).map(|i| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())));
        assert_eq!(bits_for(fps.len()), 3);
        assert_eq!(slot(a, 3), slot(b, 3));
        let s = set_of(&fps);
        assert_eq!(s.len(), 65);
        assert!(s.find(a).is_some() && s.find(b).is_some());
    }

    #[test]
    fn small_and_empty_sets() {
        let e = FingerprintSet::default();
        assert_eq!(e.find(7), None);
        assert_eq!(bits_for(0), 0);
        assert_eq!(bits_for(15), 0);
        assert_eq!(bits_for(16), 1);
        assert_eq!(bits_for(usize::MAX), MAX_BITS);
        let s = set_of(&[1, 2, 3]);
        assert!(s.find(2).is_some() && s.find(4).is_none());
    }

    #[test]
    fn decode_refuses_what_lookups_could_not_trust() {
        let s = set_of(
            &(0..1000u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
                .collect::<Vec<_>>(),
        );
        let mut bytes = Vec::new();
        s.encode(&mut bytes);
        let read = |b: &[u8]| {
            let mut pos = 0usize;
            FingerprintSet::decode(
                |n| {
                    let end = pos.checked_add(n).filter(|&e| e <= b.len());
                    let Some(end) = end else {
                        return Err(Error::invalid("keep-set", "truncated"));
                    };
                    let out = &b[pos..end];
                    pos = end;
                    Ok(out)
                },
                |d| Error::invalid("keep-set", d.to_owned()),
            )
        };
        let b = bytes.clone();
        assert_eq!(read(&b).unwrap(), s);
        let mut huge = bytes.clone();
        huge[0] = 29;
        assert!(read(&huge).is_err());
        let mut swapped = bytes.clone();
        let at = 16 + s.starts.len() * 4;
        swapped.swap(at, at + 4);
        swapped.swap(at + 1, at + 5);
        swapped.swap(at + 2, at + 6);
        swapped.swap(at + 3, at + 7);
        assert!(read(&swapped).is_err());
        assert!(read(&bytes[..bytes.len() - 1]).is_err());
    }
}
