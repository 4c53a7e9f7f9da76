//! XXH3-64 (seed 0, the default secret) of keys up to 240 bytes, the
//! lengths of nearly every relative key: bit for bit the function
//! `xxhash_rust::xxh3::xxh3_64` computes (tested below on every length to
//! 300 bytes and on random keys), which remains the one for longer input.
//!
//! Why a second implementation: XXH3 folds 64x64 -> 128-bit products, and
//! wasm32 has no 128-bit multiply, so a `u128` product there is a call to
//! the generic `__multi3` (128x128 bits, returned through memory). In the
//! component that call was a tenth of the time of classifying a listing
//! page. [`fold`] here builds the product from four 32x32 -> 64-bit
//! multiplies, inline, on wasm32, and multiplies natively elsewhere.
//!
//! The output is part of the keep set's exported form (its fingerprints):
//! it must never change without a new keep-set schema.

use xxhash_rust::const_xxh3::const_custom_default_secret;

/// The default secret (seed 0), as the crate defines it.
const SECRET: [u8; 192] = const_custom_default_secret(0);

const P64_1: u64 = 0x9E37_79B1_85EB_CA87;
const P64_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const P64_3: u64 = 0x1656_67B1_9E37_79F9;
const MX1: u64 = 0x1656_6791_9E37_79F9;
const MX2: u64 = 0x9FB2_1C65_1E98_DF25;

/// Bytes `at..at + 8` of `b`, little-endian (callers keep `at + 8 <= len`).
#[inline(always)]
fn read64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Bytes `at..at + 4` of `b`, little-endian.
#[inline(always)]
fn read32(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u64::from(u32::from_le_bytes(w))
}

/// The 128-bit product of `a` and `b`, its two halves XORed together.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    #[cfg(target_arch = "wasm32")]
    {
        fold_in_halves(a, b)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        let p = u128::from(a) * u128::from(b);
        (p as u64) ^ ((p >> 64) as u64)
    }
}

/// [`fold`] from four 32x32 -> 64-bit products (for targets without a
/// 64x64 -> 128-bit multiply). No sum below overflows: `mid` adds three
/// numbers below 2^32 each, and the high half is below 2^64 by
/// construction of a 128-bit product.
#[inline(always)]
#[cfg_attr(not(any(target_arch = "wasm32", test)), allow(dead_code))]
fn fold_in_halves(a: u64, b: u64) -> u64 {
    const M: u64 = 0xFFFF_FFFF;
    let (a0, a1, b0, b1) = (a & M, a >> 32, b & M, b >> 32);
    let (p00, p01, p10, p11) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let mid = (p00 >> 32) + (p01 & M) + (p10 & M);
    let lo = (p00 & M) | (mid << 32);
    let hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    lo ^ hi
}

#[inline(always)]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 37;
    h = h.wrapping_mul(MX1);
    h ^ (h >> 32)
}

#[inline(always)]
fn xxh64_avalanche(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(P64_2);
    h ^= h >> 29;
    h = h.wrapping_mul(P64_3);
    h ^ (h >> 32)
}

#[inline(always)]
fn rrmxmx(mut h: u64, len: u64) -> u64 {
    h ^= h.rotate_left(49) ^ h.rotate_left(24);
    h = h.wrapping_mul(MX2);
    h ^= (h >> 35).wrapping_add(len);
    h = h.wrapping_mul(MX2);
    h ^ (h >> 28)
}

/// Sixteen input bytes at `at` mixed with sixteen secret bytes at `s`.
#[inline(always)]
fn mix16(b: &[u8], at: usize, s: usize) -> u64 {
    fold(
        read64(b, at) ^ read64(&SECRET, s),
        read64(b, at + 8) ^ read64(&SECRET, s + 8),
    )
}

/// XXH3-64 of `b` with seed 0: the value `xxhash_rust::xxh3::xxh3_64(b)`.
pub(super) fn xxh3_64(b: &[u8]) -> u64 {
    let len = b.len();
    let n = len as u64;
    match len {
        0 => xxh64_avalanche(read64(&SECRET, 56) ^ read64(&SECRET, 64)),
        1..=3 => {
            let c = (u64::from(b[0]) << 16)
                | (u64::from(b[len >> 1]) << 24)
                | u64::from(b[len - 1])
                | (n << 8);
            xxh64_avalanche(c ^ (read32(&SECRET, 0) ^ read32(&SECRET, 4)))
        }
        4..=8 => {
            let input = read32(b, len - 4).wrapping_add(read32(b, 0) << 32);
            rrmxmx(input ^ (read64(&SECRET, 8) ^ read64(&SECRET, 16)), n)
        }
        9..=16 => {
            let lo = read64(b, 0) ^ (read64(&SECRET, 24) ^ read64(&SECRET, 32));
            let hi = read64(b, len - 8) ^ (read64(&SECRET, 40) ^ read64(&SECRET, 48));
            avalanche(
                n.wrapping_add(lo.swap_bytes())
                    .wrapping_add(hi)
                    .wrapping_add(fold(lo, hi)),
            )
        }
        17..=128 => {
            let mut acc = n.wrapping_mul(P64_1);
            if len > 32 {
                if len > 64 {
                    if len > 96 {
                        acc = acc.wrapping_add(mix16(b, 48, 96));
                        acc = acc.wrapping_add(mix16(b, len - 64, 112));
                    }
                    acc = acc.wrapping_add(mix16(b, 32, 64));
                    acc = acc.wrapping_add(mix16(b, len - 48, 80));
                }
                acc = acc.wrapping_add(mix16(b, 16, 32));
                acc = acc.wrapping_add(mix16(b, len - 32, 48));
            }
            acc = acc.wrapping_add(mix16(b, 0, 0));
            acc = acc.wrapping_add(mix16(b, len - 16, 16));
            avalanche(acc)
        }
        129..=240 => {
            let mut acc = n.wrapping_mul(P64_1);
            for i in 0..8 {
                acc = acc.wrapping_add(mix16(b, 16 * i, 16 * i));
            }
            acc = avalanche(acc);
            for i in 8..len / 16 {
                acc = acc.wrapping_add(mix16(b, 16 * i, 16 * (i - 8) + 3));
            }
            acc = acc.wrapping_add(mix16(b, len - 16, 136 - 17));
            avalanche(acc)
        }
        _ => xxhash_rust::xxh3::xxh3_64(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equals_the_crate_on_every_length_to_300() {
        let mut b = Vec::new();
        let mut x = 0x1234_5678_9abc_def0u64;
        for len in 0..=300 {
            for _ in 0..20 {
                b.clear();
                for _ in 0..len {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    b.push((x >> 56) as u8);
                }
                assert_eq!(xxh3_64(&b), xxhash_rust::xxh3::xxh3_64(&b), "length {len}");
            }
        }
    }

    proptest! {
        #[test]
        fn equals_the_crate_on_random_keys(b in proptest::collection::vec(any::<u8>(), 0..260)) {
            prop_assert_eq!(xxh3_64(&b), xxhash_rust::xxh3::xxh3_64(&b));
        }

        #[test]
        fn the_product_in_halves_is_the_128_bit_product(a in any::<u64>(), b in any::<u64>()) {
            let p = u128::from(a) * u128::from(b);
            prop_assert_eq!(fold_in_halves(a, b), (p as u64) ^ ((p >> 64) as u64));
        }
    }

    #[test]
    fn the_product_in_halves_at_the_extremes() {
        for (a, b) in [
            (u64::MAX, u64::MAX),
            (0, u64::MAX),
            (1 << 63, 2),
            (u64::MAX, 1),
        ] {
            let p = u128::from(a) * u128::from(b);
            assert_eq!(fold_in_halves(a, b), (p as u64) ^ ((p >> 64) as u64));
        }
    }
}
