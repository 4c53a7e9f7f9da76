//! A frozen keep set's serialised form, written a range at a time.
//!
//! The form (see [`super::KeepSet::encode`]) is a short prefix (magic,
//! header, source table), the frozen arrays as they sit in memory
//! (little-endian), and a SHA-256 of everything before it. [`Export`]
//! holds only the prefix and the digest: a host that takes the keep set in
//! pieces gets each piece made from the arrays themselves, and the whole
//! (85 MB at ten million keys) is never written out beside them.

use super::fingerprints::FingerprintSet;

/// One run of the serialised form.
pub(super) enum Section<'a> {
    /// Bytes as they are.
    Bytes(&'a [u8]),
    /// 32-bit words, little-endian.
    U32s(&'a [u32]),
    /// 16-bit words, little-endian.
    U16s(&'a [u16]),
}

impl Section<'_> {
    /// Bytes this section takes.
    fn len(&self) -> usize {
        match self {
            Section::Bytes(b) => b.len(),
            Section::U32s(w) => w.len() * 4,
            Section::U16s(w) => w.len() * 2,
        }
    }

    /// Appends this section's bytes `from..to` (within its length).
    fn write(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        match self {
            Section::Bytes(b) => out.extend_from_slice(&b[from..to]),
            Section::U32s(w) => words(w, 4, from, to, out, |v: &u32| v.to_le_bytes()),
            Section::U16s(w) => words(w, 2, from, to, out, |v: &u16| v.to_le_bytes()),
        }
    }
}

/// Appends bytes `from..to` of `w` as `size`-byte little-endian words.
fn words<T, const N: usize>(
    w: &[T],
    size: usize,
    from: usize,
    to: usize,
    out: &mut Vec<u8>,
    le: impl Fn(&T) -> [u8; N],
) {
    let (first, last) = (from / size, to.div_ceil(size));
    let start = out.len();
    for v in &w[first..last] {
        out.extend_from_slice(&le(v));
    }
    // Whole words were written: trim the part of the first and last
    // outside the range.
    let head = from - first * size;
    out.drain(start..start + head);
    out.truncate(start + (to - from));
}

/// The fixed part of a frozen keep set's serialised form: its prefix, its
/// length and its digest (see the module notes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Export {
    /// Magic, header and source table, with their lengths.
    pub(super) prefix: Vec<u8>,
    /// SHA-256 of every byte before it.
    pub(super) digest: [u8; 32],
    /// Bytes in all.
    pub(super) len: usize,
}

impl Export {
    /// Bytes of the whole form.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// The words that open an encoded [`FingerprintSet`]: bits and count.
pub(super) fn set_words(set: &FingerprintSet) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&u64::from(set.bits()).to_le_bytes());
    b[8..].copy_from_slice(&(set.len() as u64).to_le_bytes());
    b
}

/// The sections of an encoded [`FingerprintSet`] after its opening words.
pub(super) fn set_arrays(set: &FingerprintSet) -> [Section<'_>; 3] {
    let (starts, rems, his) = set.arrays();
    [
        Section::U32s(starts),
        Section::U32s(rems),
        Section::U16s(his),
    ]
}

/// Bytes of `sections` from `offset`, at most `length`.
pub(super) fn range(sections: &[Section<'_>], offset: usize, length: usize) -> Vec<u8> {
    let end = offset.saturating_add(length);
    let mut out = Vec::new();
    let mut at = 0usize;
    for s in sections {
        let n = s.len();
        let (from, to) = (offset.max(at), end.min(at + n));
        if from < to {
            out.reserve(to - from);
            s.write(from - at, to - at, &mut out);
        }
        at += n;
        if at >= end {
            break;
        }
    }
    out
}

/// Feeds every byte of `sections` to `f`, a bounded piece at a time.
pub(super) fn for_each_piece(sections: &[Section<'_>], mut f: impl FnMut(&[u8])) {
    const PIECE: usize = 1 << 16;
    let mut buf = Vec::with_capacity(PIECE);
    for s in sections {
        let n = s.len();
        let mut at = 0;
        while at < n {
            let to = (at + PIECE).min(n);
            buf.clear();
            s.write(at, to, &mut buf);
            f(&buf);
            at = to;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_range_is_the_same_bytes_as_the_whole() {
        let a = [1u8, 2, 3];
        let w32 = [0x0403_0201u32, 0x0807_0605, 0x0c0b_0a09];
        let w16 = [0x0201u16, 0x0403, 0x0605];
        let sections = [
            Section::Bytes(&a),
            Section::U32s(&w32),
            Section::U16s(&[]),
            Section::U16s(&w16),
        ];
        let mut whole = Vec::new();
        for_each_piece(&sections, |p| whole.extend_from_slice(p));
        assert_eq!(whole.len(), 3 + 12 + 6);
        assert_eq!(&whole[3..7], &[1, 2, 3, 4]);
        for off in 0..=whole.len() + 2 {
            for len in 0..=whole.len() + 2 {
                let want = &whole[off.min(whole.len())..(off + len).min(whole.len())];
                assert_eq!(range(&sections, off, len), want, "{off}+{len}");
            }
        }
    }
}
