//! A frozen set of 64-bit key fingerprints, about 6.5 bytes per key.
//!
//! The top `bits` bits of a fingerprint choose a bucket; `starts` holds
//! each bucket's first slot (2^bits + 1 entries, `bits` chosen for 8 to 16
//! keys per bucket, so at most half a byte per key), and each slot the low
//! 48 bits of a fingerprint (`rems` the low 32, `his` the next 16), sorted
//! within its bucket. A lookup reads one pair of starts and searches one
//! short run: a few cache lines.
//!
//! Collisions, and why they are safe: two keys whose fingerprints agree in
//! their bucket bits and their low 48 bits share one slot. The set never
//! loses a member through that (both keys answer "present"), so the only
//! error possible is a key that is *not* a member answering "present":
//! with k keys in its bucket that happens with probability about k / 2^48
//! (below 6 in 10^14 per lookup; a listing of a billion garbage objects
//! meets one with odds of about 1 in 20,000). Every user of the keep set
//! reads "present" as "keep": a collision keeps a piece of garbage, and
//! never deletes a live file. Checks where "present" would *relax* a
//! safety rule use exact sets instead (see
//! [`super::KeepSet::references_document`]).

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

/// Bucket bits from which a slot key is the whole fingerprint (the top
/// `bits` and the low 48 bits cover all 64): a set with at least these
/// many can be re-bucketed to more bits without losing anything.
pub(super) const LOSSLESS_BITS: u32 = 16;

/// The longest bucket [`FingerprintSet::find`] scans slot by slot.
const SCAN_MAX: usize = 64;

/// The low 48 bits of a fingerprint: what a slot stores.
const LOW: u64 = (1 << 48) - 1;

/// The slot key of a fingerprint under `bits` bucket bits: the fingerprint
/// with only its bucket bits and its low 48 bits kept (the bits between,
/// when `bits` < 16, are dropped). Slot keys sort by bucket, then by the low
/// 48 bits: the order of the frozen arrays. Equal slot keys share a slot.
pub(super) fn slot(fp: u64, bits: u32) -> u64 {
    if bits == 0 {
        fp & LOW
    } else {
        fp & ((!0u64 << (64 - bits)) | LOW)
    }
}

/// The bucket of a fingerprint (or slot key) under `bits` bucket bits.
fn bucket(fp: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (fp >> (64 - bits)) as usize
    }
}

/// A frozen fingerprint set; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FingerprintSet {
    bits: u32,
    starts: Vec<u32>,
    rems: Vec<u32>,
    his: Vec<u16>,
}

impl Default for FingerprintSet {
    fn default() -> Self {
        FingerprintSet {
            bits: 0,
            starts: vec![0, 0],
            rems: Vec::new(),
            his: Vec::new(),
        }
    }
}

impl FingerprintSet {
    /// Builds the set from slot keys (see [`slot`], all made with `bits`)
    /// sorted ascending and without repeats; `expected` is how many come
    /// (room is made for them; more or fewer are still placed right). Fails
    /// past 2^32 slots.
    pub(super) fn from_sorted_slots(
        bits: u32,
        expected: usize,
        slots: impl Iterator<Item = u64>,
    ) -> Result<Self> {
        let too_many = || {
            Error::invalid(
                "keep-set",
                "more than 2^32 referenced keys: beyond what one keep set indexes",
            )
        };
        if expected > u32::MAX as usize {
            return Err(too_many());
        }
        let buckets = 1usize << bits;
        let mut starts = vec![0u32; buckets + 1];
        let mut rems = Vec::with_capacity(expected);
        let mut his = Vec::with_capacity(expected);
        for s in slots {
            starts[bucket(s, bits) + 1] += 1;
            rems.push(s as u32);
            his.push((s >> 32) as u16);
        }
        if rems.len() > u32::MAX as usize {
            return Err(too_many());
        }
        // `expected` may overcount (keys merged twice): no unused room kept.
        rems.shrink_to_fit();
        his.shrink_to_fit();
        for i in 0..buckets {
            starts[i + 1] += starts[i];
        }
        Ok(FingerprintSet {
            bits,
            starts,
            rems,
            his,
        })
    }

    /// Bucket bits.
    pub(super) fn bits(&self) -> u32 {
        self.bits
    }

    /// Number of slots.
    pub(super) fn len(&self) -> usize {
        self.rems.len()
    }

    /// The low 48 bits slot `i` holds.
    fn low(&self, i: usize) -> u64 {
        (u64::from(self.his[i]) << 32) | u64::from(self.rems[i])
    }

    /// The slot index of `fp`, if present. A bucket holds 8 to 16 slots on
    /// average: a scan of its low 32 bits (one or two cache lines, a branch
    /// the predictor gets right until the match) beats a binary search's
    /// unpredictable branches. A bucket past [`SCAN_MAX`] slots (keys made
    /// to share one) is searched by halves, so no spelling of keys makes a
    /// lookup cost more than a logarithm.
    pub(super) fn find(&self, fp: u64) -> Option<usize> {
        let b = bucket(fp, self.bits);
        let (lo, hi) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        if hi - lo > SCAN_MAX {
            return self.search(lo, hi, fp & LOW);
        }
        let (rem, hi16) = (fp as u32, (fp >> 32) as u16);
        self.rems[lo..hi]
            .iter()
            .zip(&self.his[lo..hi])
            .position(|(&r, &h)| r == rem && h == hi16)
            .map(|i| lo + i)
    }

    /// Binary search of slots `lo..hi` for the low 48 bits `want`.
    fn search(&self, mut lo: usize, mut hi: usize, want: u64) -> Option<usize> {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.low(mid).cmp(&want) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Every slot key, in order.
    pub(super) fn slots(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        let mut b = 0usize;
        (0..self.rems.len()).map(move |i| {
            while self.starts[b + 1] as usize <= i {
                b += 1;
            }
            let top = if self.bits == 0 {
                0
            } else {
                (b as u64) << (64 - self.bits)
            };
            top | self.low(i)
        })
    }

    /// Heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        (self.starts.capacity() + self.rems.capacity()) * 4 + self.his.capacity() * 2
    }

    /// The arrays: bucket starts, low 32 bits, next 16 bits.
    pub(super) fn arrays(&self) -> (&[u32], &[u32], &[u16]) {
        (&self.starts, &self.rems, &self.his)
    }

    /// Reads what [`super::KeepSet::encode`] wrote of a set (bits, count,
    /// starts, rems, his, little-endian) from `take` (a reader
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
        // The count is checked against the bytes present before anything
        // of that size is allocated.
        let u32s = |b: &[u8]| -> Vec<u32> {
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let starts = u32s(take((buckets + 1) * 4)?);
        let rems = u32s(take(n * 4)?);
        let his: Vec<u16> = take(n * 2)?
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        if starts[0] != 0 || starts[buckets] as usize != n || starts.windows(2).any(|w| w[0] > w[1])
        {
            return Err(bad("bucket starts"));
        }
        let set = FingerprintSet {
            bits,
            starts,
            rems,
            his,
        };
        for w in set.starts.windows(2) {
            if (w[0] as usize + 1..w[1] as usize).any(|i| set.low(i - 1) >= set.low(i)) {
                return Err(bad("fingerprints not sorted"));
            }
        }
        Ok(set)
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
        FingerprintSet::from_sorted_slots(bits, slots.len(), slots.into_iter()).unwrap()
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
        assert!(s.heap_bytes() <= 100_000 * 6 + 100_000 / 2 + 8);
        assert!(s.slots().eq(set_of(&fps).slots()));
    }

    #[test]
    fn a_crowded_bucket_is_searched_by_halves_with_the_same_answers() {
        // 1,000 keys made to share a bucket (same top bits), among others.
        let crowded: Vec<u64> = (0..1_000u64)
            .map(|i| (0xabcd << 48) | xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes()) >> 16)
            .collect();
        let mut fps = crowded.clone();
        fps.extend((0..10_000u64).map(|i| xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())));
        let s = set_of(&fps);
        let b = bucket(crowded[0], s.bits());
        assert!(s.starts[b + 1] - s.starts[b] > SCAN_MAX as u32);
        assert!(fps.iter().all(|&f| s.find(f).is_some()));
        for f in &crowded {
            let (lo, hi) = (s.starts[b] as usize, s.starts[b + 1] as usize);
            let scanned = (lo..hi).find(|&i| s.low(i) == f & LOW);
            assert_eq!(s.find(*f), scanned);
            assert_eq!(
                s.find(f ^ 1 << 40).is_some(),
                (lo..hi).any(|i| s.low(i) == (f ^ 1 << 40) & LOW)
            );
        }
    }

    #[test]
    fn a_collision_keeps_both_keys_present() {
        // Same top bits and same low 48 bits: one slot, both "present".
        let a = 0x1234_5678_0000_0042u64;
        let b = 0x1fff_5678_0000_0042u64;
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
        // As a keep set writes it: bits, count, starts, rems, his.
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&u64::from(s.bits()).to_le_bytes());
        bytes.extend_from_slice(&(s.len() as u64).to_le_bytes());
        for v in s.starts.iter().chain(&s.rems) {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        for v in &s.his {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
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
        // The first two slots of bucket 0 swapped (both halves).
        assert!(s.starts[1] >= 2);
        let mut swapped = bytes.clone();
        let rems = 16 + s.starts.len() * 4;
        let his = rems + s.len() * 4;
        for i in 0..4 {
            swapped.swap(rems + i, rems + 4 + i);
        }
        swapped.swap(his, his + 2);
        swapped.swap(his + 1, his + 3);
        assert!(read(&swapped).is_err());
        assert!(read(&bytes[..bytes.len() - 1]).is_err());
    }
}
