//! The byte reader: zig-zag varints (read a word at a time), lengths
//! checked against the bytes that remain, and byte strings.

use super::{corrupt, AResult};

/// A zig-zag encoded value decoded (0, -1, 1, -2, ... from 0, 1, 2, 3, ...).
#[inline(always)]
fn unzig(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Position-tracking reader over a byte slice.
pub struct Cursor<'a> {
    buf: &'a [u8],
    /// Offset of the next byte to read.
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    /// Starts reading `buf` at offset 0.
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    /// The bytes read since offset `start`.
    pub(super) fn since(&self, start: usize) -> &'a [u8] {
        &self.buf[start.min(self.pos)..self.pos]
    }

    /// Bytes left to read.
    pub(super) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads a zig-zag varint `long`. A one-byte value (most of a
    /// manifest's: statuses, union branches, small counts) is read inline;
    /// longer ones by [`Cursor::long_multi`].
    #[inline(always)]
    pub fn long(&mut self) -> AResult<i64> {
        if let Some(&b) = self.buf.get(self.pos) {
            if b & 0x80 == 0 {
                self.pos += 1;
                return Ok(unzig(u64::from(b)));
            }
        }
        self.long_multi()
    }

    /// [`Cursor::long`] past its one-byte case.
    #[inline(never)]
    fn long_multi(&mut self) -> AResult<i64> {
        // Eight bytes at hand and the value ends within them (two to eight
        // bytes: sizes, counts, days, lengths): read as one word, the
        // terminating byte found by its clear top bit, the seven-bit groups
        // joined pairwise, with no branch per byte.
        if let Some(&eight) = self.buf.get(self.pos..).and_then(|b| b.first_chunk::<8>()) {
            let x = u64::from_le_bytes(eight);
            let stops = !x & 0x8080_8080_8080_8080;
            if stops != 0 {
                // Every bit up to the first stop bit: the value's bytes.
                let mine = stops ^ (stops - 1);
                let x = x & mine & 0x7f7f_7f7f_7f7f_7f7f;
                let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
                let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
                let x = (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4);
                self.pos += stops.trailing_zeros() as usize / 8 + 1;
                return Ok(unzig(x));
            }
        }
        // Ten bytes at hand (nine- and ten-byte values: snapshot ids): the
        // longest varint is read without a bounds check per byte.
        if let Some(ten) = self.buf.get(self.pos..self.pos + 10) {
            let mut value: u64 = 0;
            for (i, &b) in ten.iter().enumerate() {
                value |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    self.pos += i + 1;
                    return Ok(unzig(value));
                }
            }
            return corrupt("varint longer than 10 bytes");
        }
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return corrupt("truncated varint");
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return corrupt("varint longer than 10 bytes");
            }
        }
        Ok(unzig(value))
    }

    /// Reads a length (a `long`), checked against the bytes left.
    #[inline(always)]
    pub(super) fn len(&mut self) -> AResult<usize> {
        let n = self.long()?;
        if n < 0 || n as u64 > self.remaining() as u64 {
            return self.overlong(n);
        }
        Ok(n as usize)
    }

    /// The error for a length `n` past the bytes left.
    #[cold]
    #[inline(never)]
    fn overlong<T>(&self, n: i64) -> AResult<T> {
        corrupt(format!(
            "length {n} exceeds the {} bytes left",
            self.remaining()
        ))
    }

    /// The next `n` bytes, or an error when fewer are left.
    #[inline(always)]
    pub(super) fn take(&mut self, n: usize) -> AResult<&'a [u8]> {
        match self.buf.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => self.short(n),
        }
    }

    /// The error for `n` bytes wanted past the bytes left.
    #[cold]
    #[inline(never)]
    fn short<T>(&self, n: usize) -> AResult<T> {
        corrupt(format!("need {n} bytes, {} left", self.remaining()))
    }

    /// Reads a length-prefixed byte string.
    #[inline(always)]
    pub fn bytes(&mut self) -> AResult<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::avro::tests::zz;

    #[test]
    fn varints_read_the_same_with_ten_bytes_at_hand_or_fewer() {
        // The fast path (ten bytes or more left) and the careful one agree
        // on every length, on both extremes, and on what they refuse.
        let values = [
            0i64,
            -1,
            1,
            63,
            -64,
            64,
            300,
            -300,
            1 << 20,
            1 << 34,
            -(1 << 41),
            1 << 55,
            i64::MAX,
            i64::MIN,
            7_421_954_873_392_187_221,
        ];
        for v in values {
            let mut bytes = Vec::new();
            zz(v, &mut bytes);
            let n = bytes.len();
            for pad in [0usize, 1, 9, 10, 20] {
                let mut b = bytes.clone();
                b.resize(n + pad, 0xff);
                let mut c = Cursor::new(&b);
                assert_eq!(c.long().unwrap(), v, "{v} with {pad} bytes after");
                assert_eq!(c.pos, n, "{v} with {pad} bytes after");
                // Cut short, it is an error, never another value.
                for cut in 0..n {
                    assert!(Cursor::new(&bytes[..cut]).long().is_err(), "{v} cut {cut}");
                }
            }
        }
        // Eleven bytes: refused however many follow.
        for pad in [0usize, 1, 10] {
            let mut b = vec![0x80u8; 10];
            b.push(0x01);
            b.resize(11 + pad, 0);
            let e = format!("{:?}", Cursor::new(&b).long().unwrap_err());
            assert!(e.contains("longer than 10 bytes"), "{pad}: {e}");
        }
    }

    /// A varint read one byte at a time (a tenth byte's bits past the
    /// 64th dropped, as the reader always has): the reference the
    /// word-at-a-time reading must match.
    fn reference_long(b: &[u8]) -> Option<(i64, usize)> {
        let mut value = 0u64;
        for (i, &byte) in b.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7f)
                .checked_shl(7 * i as u32)
                .unwrap_or(0);
            if byte & 0x80 == 0 {
                return Some((unzig(value), i + 1));
            }
        }
        None
    }

    proptest::proptest! {
        #[test]
        fn varints_read_as_the_byte_by_byte_reference_on_any_bytes(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![proptest::num::u8::ANY, 0x80u8..=0xff],
                0..24,
            ),
        ) {
            let mut c = Cursor::new(&bytes);
            match (c.long(), reference_long(&bytes)) {
                (Ok(v), Some((want, used))) => {
                    proptest::prop_assert_eq!(v, want);
                    proptest::prop_assert_eq!(c.pos, used);
                }
                (Err(_), None) => {}
                (got, want) => proptest::prop_assert!(false, "{:?} against {:?}", got, want),
            }
        }
    }
}
