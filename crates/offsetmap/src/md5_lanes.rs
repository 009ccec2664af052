//! MD5 of several short keys side by side.
//!
//! MD5 is one long chain of dependent additions and rotations (64 steps per
//! 64-byte block), so a single digest keeps a core's execution units mostly
//! idle: ~110 ns for a 16-byte key, most of a cleaning round's map pass
//! with Kafka's digest. Independent keys have independent chains. Here
//! [`LANES`] keys that each fit in one block (at most
//! [`MAX_ONE_BLOCK_KEY`] bytes, the message plus its padding) go through
//! the same 64 steps together: every step is written over an array of
//! lanes: two SSE2 registers of four lanes on x86-64 (SSE2 is part of
//! every x86-64, so no feature detection), plain arrays elsewhere. The
//! result is MD5, bit for bit (RFC 1321; tested against the `md-5`
//! crate); longer keys take the scalar path.
//!
//! The cleaner computes a batch's digests before its puts
//! ([`KeyDigest::compute_many`](crate::KeyDigest::compute_many)), which is
//! where the keys to run side by side come from.

/// Keys digested together.
pub(crate) const LANES: usize = 8;

/// The longest key that fits one block with its padding (a `0x80` byte
/// and the 8-byte bit length).
pub(crate) const MAX_ONE_BLOCK_KEY: usize = 55;

type Lanes = [u32; LANES];

/// `floor(abs(sin(i + 1)) * 2^32)`, RFC 1321's table T.
const T: [u32; 64] = [
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
];

/// Left rotations of each round's four steps.
const SHIFTS: [[u32; 4]; 4] = [
    [7, 12, 17, 22],
    [5, 9, 14, 20],
    [4, 11, 16, 23],
    [6, 10, 15, 21],
];

/// The state before the first block.
const INIT: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];

/// The digests of `keys` (each at most [`MAX_ONE_BLOCK_KEY`] bytes), in
/// order. Lanes beyond `keys.len()` digest the empty key and are not
/// returned.
///
/// # Panics
///
/// If there are more than [`LANES`] keys or a key is longer than
/// [`MAX_ONE_BLOCK_KEY`].
pub(crate) fn md5_one_block(keys: &[&[u8]], out: &mut [[u8; 16]]) {
    assert!(keys.len() <= LANES && out.len() >= keys.len());
    // words[w][lane]: the padded block's little-endian 32-bit words.
    let mut words = [[0u32; LANES]; 16];
    for (lane, key) in keys.iter().enumerate() {
        assert!(
            key.len() <= MAX_ONE_BLOCK_KEY,
            "a key of {} bytes",
            key.len()
        );
        let mut block = [0u8; 64];
        block[..key.len()].copy_from_slice(key);
        block[key.len()] = 0x80;
        block[56..].copy_from_slice(&((key.len() as u64) * 8).to_le_bytes());
        for (w, word) in words.iter_mut().enumerate() {
            word[lane] = u32::from_le_bytes(block[4 * w..4 * w + 4].try_into().expect("4 bytes"));
        }
    }
    // Unused lanes digest the empty key: 0x80, zeros, a zero length.
    words[0][keys.len()..].fill(0x80);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64 itself: every CPU this code runs on
    // has it.
    let state = unsafe { compress(&words) };
    #[cfg(not(target_arch = "x86_64"))]
    let state = compress(&words);
    for (lane, digest) in out.iter_mut().enumerate().take(keys.len()) {
        for (i, word) in state.iter().enumerate() {
            digest[4 * i..4 * i + 4].copy_from_slice(&word[lane].to_le_bytes());
        }
    }
}

/// MD5's compression function on one block per lane, from the initial
/// state; returns the final `[a, b, c, d]` lanes.
///
/// Each step: `a = b + ((a + f(b, c, d) + m[g] + T[i]) <<< s)`, then the
/// four words turn: `(a, b, c, d) <- (d, a, b, c)`; `f` and `g` change
/// every 16 steps.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "sse2"))]
fn compress(m: &[Lanes; 16]) -> [Lanes; 4] {
    let m: [V; 16] = std::array::from_fn(|w| V::load(&m[w]));
    let [mut a, mut b, mut c, mut d] = INIT.map(|x| V::splat(x));
    macro_rules! round {
        ($round:expr, $g:expr, $f:expr) => {
            for j in 0..16 {
                let f: V = $f(b, c, d);
                let sum = a.add(f).add(m[$g(j)]).add(V::splat(T[16 * $round + j]));
                let next = b.add(sum.rotate_left(SHIFTS[$round][j % 4]));
                a = d;
                d = c;
                c = b;
                b = next;
            }
        };
    }
    round!(0, |j| j, |b: V, c: V, d: V| b.and(c).or(b.and_not(d)));
    round!(1, |j| (5 * j + 1) % 16, |b: V, c: V, d: V| b
        .and(d)
        .or(d.and_not(c)));
    round!(2, |j| (3 * j + 5) % 16, |b: V, c: V, d: V| b.xor(c).xor(d));
    round!(3, |j| (7 * j) % 16, |b: V, c: V, d: V| c.xor(b.or(d.not())));
    let init = INIT.map(|x| V::splat(x));
    [
        a.add(init[0]),
        b.add(init[1]),
        c.add(init[2]),
        d.add(init[3]),
    ]
    .map(|v| v.store())
}

/// Four-lane SSE2 registers in a [`V`].
#[cfg(target_arch = "x86_64")]
const REGS: usize = LANES / 4;

/// [`LANES`] 32-bit words, one per lane: [`REGS`] SSE2 registers on
/// x86-64 (independent chains the core overlaps), plain arrays elsewhere.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct V([std::arch::x86_64::__m128i; REGS]);

#[cfg(target_arch = "x86_64")]
impl V {
    /// `f` on each register of `self` and `o`.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn zip(
        self,
        o: V,
        f: impl Fn(std::arch::x86_64::__m128i, std::arch::x86_64::__m128i) -> std::arch::x86_64::__m128i,
    ) -> V {
        V(std::array::from_fn(|r| f(self.0[r], o.0[r])))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn splat(x: u32) -> V {
        V([std::arch::x86_64::_mm_set1_epi32(x as i32); REGS])
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(w: &Lanes) -> V {
        use std::arch::x86_64::_mm_set_epi32;
        let i = |l: usize| w[l] as i32;
        V(std::array::from_fn(|r| {
            _mm_set_epi32(i(4 * r + 3), i(4 * r + 2), i(4 * r + 1), i(4 * r))
        }))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn store(self) -> Lanes {
        use std::arch::x86_64::{_mm_cvtsi128_si32, _mm_srli_si128};
        std::array::from_fn(|l| {
            let v = self.0[l / 4];
            let lane = match l % 4 {
                0 => v,
                1 => _mm_srli_si128::<4>(v),
                2 => _mm_srli_si128::<8>(v),
                _ => _mm_srli_si128::<12>(v),
            };
            _mm_cvtsi128_si32(lane) as u32
        })
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn add(self, o: V) -> V {
        self.zip(o, |x, y| std::arch::x86_64::_mm_add_epi32(x, y))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn and(self, o: V) -> V {
        self.zip(o, |x, y| std::arch::x86_64::_mm_and_si128(x, y))
    }

    /// `!self & o`.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn and_not(self, o: V) -> V {
        self.zip(o, |x, y| std::arch::x86_64::_mm_andnot_si128(x, y))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn or(self, o: V) -> V {
        self.zip(o, |x, y| std::arch::x86_64::_mm_or_si128(x, y))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn xor(self, o: V) -> V {
        self.zip(o, |x, y| std::arch::x86_64::_mm_xor_si128(x, y))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn not(self) -> V {
        self.xor(V::splat(u32::MAX))
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    fn rotate_left(self, s: u32) -> V {
        use std::arch::x86_64::{_mm_cvtsi32_si128, _mm_or_si128, _mm_sll_epi32, _mm_srl_epi32};
        let (left, right) = (
            _mm_cvtsi32_si128(s as i32),
            _mm_cvtsi32_si128(32 - s as i32),
        );
        V(self
            .0
            .map(|v| _mm_or_si128(_mm_sll_epi32(v, left), _mm_srl_epi32(v, right))))
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[derive(Clone, Copy)]
struct V(Lanes);

#[cfg(not(target_arch = "x86_64"))]
impl V {
    #[inline(always)]
    fn splat(x: u32) -> V {
        V([x; LANES])
    }

    #[inline(always)]
    fn load(w: &Lanes) -> V {
        V(*w)
    }

    #[inline(always)]
    fn store(self) -> Lanes {
        self.0
    }

    #[inline(always)]
    fn zip(self, o: V, f: impl Fn(u32, u32) -> u32) -> V {
        V(std::array::from_fn(|l| f(self.0[l], o.0[l])))
    }

    #[inline(always)]
    fn add(self, o: V) -> V {
        self.zip(o, u32::wrapping_add)
    }

    #[inline(always)]
    fn and(self, o: V) -> V {
        self.zip(o, |x, y| x & y)
    }

    /// `!self & o`.
    #[inline(always)]
    fn and_not(self, o: V) -> V {
        self.zip(o, |x, y| !x & y)
    }

    #[inline(always)]
    fn or(self, o: V) -> V {
        self.zip(o, |x, y| x | y)
    }

    #[inline(always)]
    fn xor(self, o: V) -> V {
        self.zip(o, |x, y| x ^ y)
    }

    #[inline(always)]
    fn not(self) -> V {
        V(self.0.map(|x| !x))
    }

    #[inline(always)]
    fn rotate_left(self, s: u32) -> V {
        V(self.0.map(|x| x.rotate_left(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::{Digest as _, Md5};
    use proptest::prelude::*;

    fn one(key: &[u8]) -> [u8; 16] {
        let mut out = [[0u8; 16]; 1];
        md5_one_block(&[key], &mut out);
        out[0]
    }

    #[test]
    fn rfc_1321_vectors() {
        let hex = |d: [u8; 16]| d.iter().map(|b| format!("{b:02x}")).collect::<String>();
        assert_eq!(hex(one(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(one(b"a")), "0cc175b9c0f1b6a831c399e269772661");
        assert_eq!(hex(one(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            hex(one(b"message digest")),
            "f96b697d7cb7938d525a2f31aaf161d0"
        );
        assert_eq!(
            hex(one(b"abcdefghijklmnopqrstuvwxyz")),
            "c3fcd3d76192e4007dfb496cca67e13b"
        );
    }

    #[test]
    fn every_length_that_fits_one_block() {
        let bytes: Vec<u8> = (0..=MAX_ONE_BLOCK_KEY as u8)
            .map(|b| b.wrapping_mul(151))
            .collect();
        let keys: Vec<&[u8]> = (0..=MAX_ONE_BLOCK_KEY).map(|n| &bytes[..n]).collect();
        for group in keys.chunks(LANES) {
            let mut out = [[0u8; 16]; LANES];
            md5_one_block(group, &mut out);
            for (key, digest) in group.iter().zip(out) {
                assert_eq!(
                    digest,
                    <[u8; 16]>::from(Md5::digest(key)),
                    "{} bytes",
                    key.len()
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "a key of 56 bytes")]
    fn a_key_of_two_blocks_is_refused() {
        one(&[0u8; 56]);
    }

    proptest! {
        #[test]
        fn lanes_agree_with_scalar_md5(
            keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..=MAX_ONE_BLOCK_KEY), 0..=LANES)
        ) {
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            let mut out = [[0u8; 16]; LANES];
            md5_one_block(&refs, &mut out);
            for (key, digest) in refs.iter().zip(out) {
                prop_assert_eq!(digest, <[u8; 16]>::from(Md5::digest(key)));
            }
        }
    }
}
