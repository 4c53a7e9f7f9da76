//! Raw deflate (RFC 1951) blocks inflated one after another into one
//! buffer: the decompressor's state and the output buffer are kept from
//! block to block instead of allocated, zeroed and grown by doubling for
//! every block (an Avro manifest is hundreds of blocks; its small entries
//! inflate to twenty times their compressed size).

use miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
use miniz_oxide::inflate::core::{decompress, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

/// Bytes of output room a block starts with, before it asks for more.
const FIRST_ROOM: usize = 64 << 10;

/// Inflates raw deflate streams, reusing its state and buffer between
/// calls. Owns at most `limit` bytes of output (see [`Inflater::inflate`])
/// plus the decompressor's tables (about 11 KB).
#[derive(Default)]
pub struct Inflater {
    state: Box<DecompressorOxide>,
    /// Output room; bytes past the current block's end are left from
    /// earlier blocks and never read (see [`Inflater::inflate`]).
    out: Vec<u8>,
}

impl Inflater {
    /// The whole inflated contents of the raw deflate stream `data`, at most
    /// `limit` bytes; valid until the next call. Fails, in words, for a
    /// stream that is corrupt, ends early, or inflates to more than `limit`
    /// bytes (a decompression bomb).
    ///
    /// Bytes left in the buffer by an earlier stream are never part of the
    /// answer: the output is the prefix this stream wrote, and the
    /// decompressor refuses a back-reference before the start of its own
    /// output (the non-wrapping buffer's rule), so a corrupt stream cannot
    /// copy them either.
    pub fn inflate(&mut self, mut data: &[u8], limit: usize) -> Result<&[u8], String> {
        let flags = TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
        self.state.init();
        // The room this stream may fill: what the buffer already holds (or a
        // first guess), never past `limit`, whatever earlier calls allowed.
        let want = data.len().saturating_mul(4).max(FIRST_ROOM);
        let mut room = self.out.len().max(want).min(limit);
        let mut at = 0;
        loop {
            if self.out.len() < room {
                self.out.resize(room, 0);
            }
            let (status, read, wrote) =
                decompress(&mut self.state, data, &mut self.out[..room], at, flags);
            at += wrote;
            match status {
                // `at` is within the room, so within `limit`.
                TINFLStatus::Done => return Ok(&self.out[..at]),
                TINFLStatus::HasMoreOutput => {
                    if room >= limit {
                        return Err(format!("inflates past {limit} bytes"));
                    }
                    data = data
                        .get(read..)
                        .ok_or("the decompressor read past its input")?;
                    room = room.saturating_mul(2).min(limit);
                }
                other => return Err(format!("corrupt or truncated stream ({other:?})")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deflated(data: &[u8]) -> Vec<u8> {
        miniz_oxide::deflate::compress_to_vec(data, 6)
    }

    #[test]
    fn streams_one_after_another_each_come_back_whole() {
        let mut inf = Inflater::default();
        // A large stream, then smaller ones: the buffer keeps the large
        // one's tail, which must not show in the smaller answers.
        let big: Vec<u8> = (0..1_000_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let small = b"data/p=1/part-00000.parquet".repeat(3);
        for data in [&big[..], &small[..], b"", &big[..1000], &small[..]] {
            assert_eq!(inf.inflate(&deflated(data), usize::MAX).unwrap(), data);
        }
        // Much more output than input: the room grows by doubling.
        let zeros = vec![0u8; 5_000_000];
        assert_eq!(
            inf.inflate(&deflated(&zeros), usize::MAX).unwrap(),
            &zeros[..]
        );
    }

    #[test]
    fn equals_the_crates_own_inflate() {
        let mut inf = Inflater::default();
        for n in [0usize, 1, 100, 65_535, 65_536, 65_537, 300_000] {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 % 13) as u8).collect();
            let z = deflated(&data);
            let theirs = miniz_oxide::inflate::decompress_to_vec(&z).unwrap();
            assert_eq!(
                inf.inflate(&z, usize::MAX).unwrap(),
                &theirs[..],
                "{n} bytes"
            );
        }
    }

    #[test]
    fn a_bomb_or_a_broken_stream_is_refused() {
        let mut inf = Inflater::default();
        let zeros = deflated(&vec![0u8; 1_000_000]);
        assert!(inf
            .inflate(&zeros, 999_999)
            .unwrap_err()
            .contains("past 999999"));
        assert_eq!(inf.inflate(&zeros, 1_000_000).unwrap().len(), 1_000_000);
        let z = deflated(
            &(0..100_000u32)
                .flat_map(|i| i.to_le_bytes())
                .collect::<Vec<_>>(),
        );
        for cut in [1, z.len() / 2, z.len() - 1] {
            assert!(inf.inflate(&z[..cut], usize::MAX).is_err(), "cut at {cut}");
        }
        assert!(inf.inflate(&[0xff; 64], usize::MAX).is_err(), "not deflate");
        // Still good after failures.
        assert_eq!(inf.inflate(&deflated(b"ok"), 10).unwrap(), b"ok");
        // A smaller limit than an earlier call's holds, though the buffer
        // is larger.
        assert!(inf.inflate(&deflated(&[7u8; 100]), 99).is_err());
        assert_eq!(
            inf.inflate(&deflated(&[7u8; 100]), 100).unwrap(),
            &[7u8; 100]
        );
    }
}
