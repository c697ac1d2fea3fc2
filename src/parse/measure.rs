//! Measuring a JSON string in place, without decoding it: its length in UTF-16 units and as
//! `JSON.stringify` writes it, 64 bytes at a time.
//!
//! Text and thinking blocks are about half of the bytes of a realistic session, and pisa only
//! needs their lengths. simd-json would find their structure (stage 1), copy and unescape them
//! (a backslash every 22 bytes in real sessions: one branch per escape) and pisa would count
//! the result again. Here each 64-byte block gives bit masks (AVX2 compares), escapes are
//! found without a branch per escape by simdjson's odd-backslash-sequence method (Langdale
//! and Lemire, "Parsing Gigabytes of JSON per Second", 2019), and the counts are popcounts:
//! about 2.7 GB/s on real payloads against 1.2 GB/s for simd-json's parse of the same strings.
//! UTF-8 is checked with masks too, in the blocks that hold bytes that are not ASCII. Only the
//! escapes that are neither a quote, a backslash nor a control letter (`\/`, `\u`: rare) and
//! the leaders whose second byte has a narrower range are looked at one by one. Without AVX2
//! nothing is measured here (the payload is left to simd-json, which is as fast as a scalar
//! scan would be).

/// What a JSON string holds, in the two lengths Pi's code reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lengths {
    /// UTF-16 units of the string (`String#length`).
    pub units: u64,
    /// `JSON.stringify(s).length - 2`.
    pub json: u64,
}

/// The content of the JSON string whose opening quote precedes `payload`: its bytes up to
/// the closing quote and what it holds, if JSON.parse and simd-json both take it as it is
/// (valid UTF-8, no raw control character, valid escapes, no lone surrogate escape). `None`
/// otherwise, or when this machine cannot measure it fast.
#[inline]
pub fn json_string(payload: &[u8]) -> Option<(usize, Lengths)> {
    match masks() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `masks` chose AVX-512 because this CPU has the features `avx512::json_string`
        // is compiled for.
        Masks::Avx512 => unsafe { avx512::json_string(payload) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and `avx2::json_string`.
        Masks::Avx2 => unsafe { avx2::json_string(payload) },
        _ => None,
    }
}

/// Which masks [`json_string`] computes on this CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Masks {
    /// Not known yet (see [`masks`]).
    Unknown,
    /// None: nothing is measured here.
    Without,
    Avx2,
    Avx512,
}

/// The masks this CPU has, looked up once: each of the features is a test of its own, and the
/// measure is called for every string of text (the four tests and the call around them were
/// half a percent of a scan's time).
#[inline]
fn masks() -> Masks {
    use std::sync::atomic::{AtomicU8, Ordering};
    static CHOSEN: AtomicU8 = AtomicU8::new(Masks::Unknown as u8);
    match CHOSEN.load(Ordering::Relaxed) {
        x if x == Masks::Without as u8 => Masks::Without,
        x if x == Masks::Avx2 as u8 => Masks::Avx2,
        x if x == Masks::Avx512 as u8 => Masks::Avx512,
        _ => {
            let chosen = detect();
            CHOSEN.store(chosen as u8, Ordering::Relaxed);
            chosen
        }
    }
}

/// The best masks this CPU has.
#[cold]
fn detect() -> Masks {
    #[cfg(target_arch = "x86_64")]
    if avx512::available() {
        return Masks::Avx512;
    }
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        return Masks::Avx2;
    }
    Masks::Without
}

/// Whether [`json_string`] measures on this machine.
pub fn available() -> bool {
    json_string(b"\"").is_some()
}

/// What one 64-byte block holds, a bit per byte: the masks every block needs.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Basic {
    quote: u64,
    backslash: u64,
    /// Below 0x20 (raw control characters: invalid in a JSON string) or not ASCII: one compare
    /// (signed bytes below 0x20), split in [`Utf8`] for the few blocks that have any. A kernel
    /// may set every bit when any byte is unusual: AVX2 does, with one test of both halves where
    /// the mask itself took two moves out of the vector registers, a shift and an or (the
    /// measure took 11 % less time on real text; only the last block of a string then goes to
    /// [`wide_block`] for a byte past the closing quote).
    unusual: u64,
}

/// The masks of a block with bytes that are not ASCII (read only for those blocks): enough to
/// check UTF-8 in the block itself, a bit per byte, where a call to a validator for each run of
/// such blocks cost a third of the measure on real text (a few characters that are not ASCII
/// per paragraph).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Utf8 {
    /// Below 0x20 (raw control characters).
    control: u64,
    /// 0xC0, 0xC1 and 0xF5 and above: never in UTF-8.
    never: u64,
    /// UTF-8 continuation bytes (`10xxxxxx`).
    continuation: u64,
    /// 0xC2 and above: leaders of sequences of two bytes or more (or not UTF-8, see `never`).
    lead: u64,
    /// 0xE0 and above: leaders of sequences of three bytes or more.
    three: u64,
    /// 0xF0 and above: leaders of four-byte sequences (two UTF-16 units).
    four: u64,
    /// 0xE0, 0xED, 0xF0 and 0xF4: leaders whose second byte has a narrower range (overlong
    /// forms, surrogates and code points past U+10FFFF are not UTF-8).
    narrow: u64,
}

/// The mask of a block with escapes (read only for those blocks).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Escapes {
    /// All but the characters of the short escapes written back as they are (`"\bfnrt`): `/`,
    /// `u` and the characters that may not follow a backslash, each looked at on its own (real
    /// text escapes quotes, backslashes and line ends; a mask for each kind cost a tenth of the
    /// measure).
    unusual: u64,
}

/// The characters of the short escapes (`"\bfnrt`), classed by nibble for one `pshufb` lookup
/// per nibble (simdjson's method): a byte is one of them when the class bits of its low nibble (in
/// `ESCAPE_LOW`) and of its high nibble (in `ESCAPE_HIGH`) share one of bits 0-3, which stand for
/// the high nibbles 2, 5, 6 and 7. `u` (low 5 with high 7) shares bit 7 alone and `/` (low F with
/// high 2) bit 6 alone: both are unusual, as is a byte with its top bit set, which looks up 0 in
/// `ESCAPE_LOW` (`pshufb` gives 0 for it).
#[cfg(target_arch = "x86_64")]
const ESCAPE_LOW: [u8; 16] = [0, 0, 13, 0, 8, 0x80, 4, 0, 0, 0, 0, 0, 2, 0, 4, 0x40];
/// See [`ESCAPE_LOW`].
#[cfg(target_arch = "x86_64")]
const ESCAPE_HIGH: [u8; 16] = [0, 0, 0x41, 0, 0, 2, 4, 0x88, 0, 0, 0, 0, 0, 0, 0, 0];

/// How one block is read: the three sets of masks, each computed only when needed.
trait Kernel {
    fn basic(&self, block: &[u8; 64]) -> Basic;
    fn utf8(&self, block: &[u8; 64]) -> Utf8;
    fn escapes(&self, block: &[u8; 64]) -> Escapes;
    /// [`wide_block`] with these masks.
    fn wide(&self, w: &Wide) -> Option<(u64, u64)>;
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm_loadu_si128, _mm256_and_si256, _mm256_broadcastsi128_si256, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8,
        _mm256_loadu_si256, _mm256_max_epu8, _mm256_min_epu8, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8,
        _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16, _mm256_testz_si256,
    };

    use super::{Basic, ESCAPE_HIGH, ESCAPE_LOW, Escapes, Kernel, Lengths, Utf8, Wide, measure};

    /// Whether this CPU has AVX2, POPCNT and BMI1.
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("bmi1")
    }

    /// [`super::json_string`] with AVX2 masks; POPCNT and BMI1 make the counts single
    /// instructions.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2, POPCNT and BMI1 ([`available`]).
    #[target_feature(enable = "avx2,popcnt,bmi1")]
    pub unsafe fn json_string(payload: &[u8]) -> Option<(usize, Lengths)> {
        measure(payload, &Avx2(()))
    }

    /// The AVX2 masks, made only where the CPU has AVX2.
    pub(super) struct Avx2(());

    impl Avx2 {
        /// The masks, if this CPU has AVX2, POPCNT and BMI1.
        #[cfg(test)]
        pub(super) fn new() -> Self {
            assert!(available());
            Avx2(())
        }
    }

    /// The two 32-byte halves of `block`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn halves(block: &[u8; 64]) -> [__m256i; 2] {
        // SAFETY: the 64 bytes read are `block`.
        unsafe {
            let p = block.as_ptr().cast::<__m256i>();
            [_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))]
        }
    }

    /// The top bits of the bytes of a block's two halves, as one mask.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn mask(low: __m256i, high: __m256i) -> u64 {
        u64::from(_mm256_movemask_epi8(low) as u32) | u64::from(_mm256_movemask_epi8(high) as u32) << 32
    }

    /// The bits of `f` over the two 32-byte halves of `block`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn bits<const N: usize>(block: &[u8; 64], f: impl Fn(__m256i) -> [__m256i; N]) -> [u64; N] {
        // Each half's masks moved out before the next half's are made: making both halves'
        // first, then the masks, measured 1-1.5 % slower on `sessions`.
        let mut out = [0u64; N];
        for (half, v) in halves(block).into_iter().enumerate() {
            for (o, x) in out.iter_mut().zip(f(v)) {
                *o |= u64::from(_mm256_movemask_epi8(x) as u32) << (32 * half);
            }
        }
        out
    }

    impl Avx2 {
        #[target_feature(enable = "avx2")]
        #[inline]
        fn basic(&self, block: &[u8; 64]) -> Basic {
            let [quote, backslash] = bits(block, |v| {
                let set = |b: u8| _mm256_set1_epi8(b as i8);
                [_mm256_cmpeq_epi8(v, set(b'"')), _mm256_cmpeq_epi8(v, set(b'\\'))]
            });
            let [low, high] = halves(block);
            // v < 0x20, signed: control characters and bytes that are not ASCII, in either half.
            let any = _mm256_or_si256(
                _mm256_cmpgt_epi8(_mm256_set1_epi8(0x20), low),
                _mm256_cmpgt_epi8(_mm256_set1_epi8(0x20), high),
            );
            Basic {
                quote,
                backslash,
                unusual: u64::from(_mm256_testz_si256(any, any) == 0).wrapping_neg(),
            }
        }

        #[target_feature(enable = "avx2")]
        #[inline]
        fn utf8(&self, block: &[u8; 64]) -> Utf8 {
            let classes = |v: __m256i| {
                let set = |b: u8| _mm256_set1_epi8(b as i8);
                // v >= b, unsigned.
                let at_least = |b: u8| _mm256_cmpeq_epi8(_mm256_max_epu8(v, set(b)), v);
                let is = |b: u8| _mm256_cmpeq_epi8(v, set(b));
                [
                    // v <= 0x1F, unsigned.
                    _mm256_cmpeq_epi8(_mm256_min_epu8(v, set(0x1F)), v),
                    // 0xC0 and 0xC1 are 0xC0 without the low bit.
                    _mm256_or_si256(
                        _mm256_cmpeq_epi8(_mm256_and_si256(v, set(0xFE)), set(0xC0)),
                        at_least(0xF5),
                    ),
                    _mm256_or_si256(_mm256_or_si256(is(0xE0), is(0xED)), _mm256_or_si256(is(0xF0), is(0xF4))),
                    // 0x80..=0xBF are the signed bytes below -64 (0xC0).
                    _mm256_cmpgt_epi8(set(0xC0), v),
                    at_least(0xC2),
                    at_least(0xE0),
                    at_least(0xF0),
                ]
            };
            let [low, high] = halves(block);
            let (l, h) = (classes(low), classes(high));
            // The masks of bytes a block seldom has: 0 when one test finds none (moving a mask
            // out of the vector registers is what costs).
            let seldom = |i: usize| {
                let any = _mm256_or_si256(l[i], h[i]);
                if _mm256_testz_si256(any, any) != 0 {
                    0
                } else {
                    mask(l[i], h[i])
                }
            };
            Utf8 {
                control: seldom(0),
                never: seldom(1),
                narrow: seldom(2),
                continuation: mask(l[3], h[3]),
                lead: mask(l[4], h[4]),
                three: mask(l[5], h[5]),
                four: mask(l[6], h[6]),
            }
        }

        /// The escape classes by one lookup per nibble ([`ESCAPE_LOW`]), in both 16-byte lanes.
        #[target_feature(enable = "avx2")]
        #[inline]
        fn escapes(&self, block: &[u8; 64]) -> Escapes {
            // SAFETY: the 16 bytes read are the table's.
            let table = |t: &[u8; 16]| _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(t.as_ptr().cast()) });
            let (low, high) = (table(&ESCAPE_LOW), table(&ESCAPE_HIGH));
            let [unusual] = bits(block, |v| {
                let nibble = _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
                let class = _mm256_and_si256(_mm256_shuffle_epi8(low, v), _mm256_shuffle_epi8(high, nibble));
                let short = _mm256_and_si256(class, _mm256_set1_epi8(0x0F));
                [_mm256_cmpeq_epi8(short, _mm256_setzero_si256())]
            });
            Escapes { unusual }
        }
    }

    impl Kernel for Avx2 {
        #[inline(always)]
        fn basic(&self, block: &[u8; 64]) -> Basic {
            // SAFETY: an `Avx2` is made only where the CPU has AVX2.
            unsafe { Avx2::basic(self, block) }
        }

        #[inline(always)]
        fn utf8(&self, block: &[u8; 64]) -> Utf8 {
            // SAFETY: as above.
            unsafe { Avx2::utf8(self, block) }
        }

        #[inline(always)]
        fn escapes(&self, block: &[u8; 64]) -> Escapes {
            // SAFETY: as above.
            unsafe { Avx2::escapes(self, block) }
        }

        #[inline(always)]
        fn wide(&self, w: &Wide) -> Option<(u64, u64)> {
            // SAFETY: as above.
            unsafe { wide(self, w) }
        }
    }

    /// [`super::wide_block`] with AVX2 masks, out of line.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX2, POPCNT and BMI1 ([`available`]).
    #[target_feature(enable = "avx2,popcnt,bmi1")]
    #[inline(never)]
    unsafe fn wide(kernel: &Avx2, w: &Wide) -> Option<(u64, u64)> {
        super::wide_block(kernel, w)
    }
}

/// The masks with AVX-512: each is one compare of the whole block into a 64-bit mask register,
/// where AVX2 needs two compares, two moves out of vector registers and a shift.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::{
        __m512i, _mm_loadu_si128, _mm512_and_si512, _mm512_broadcast_i32x4, _mm512_cmpeq_epi8_mask,
        _mm512_cmpge_epu8_mask, _mm512_cmplt_epi8_mask, _mm512_cmplt_epu8_mask, _mm512_loadu_si512, _mm512_set1_epi8,
        _mm512_shuffle_epi8, _mm512_srli_epi16, _mm512_testn_epi8_mask,
    };

    use super::{Basic, ESCAPE_HIGH, ESCAPE_LOW, Escapes, Kernel, Lengths, Utf8, Wide, measure};

    /// Whether this CPU has AVX-512 (foundation and byte/word instructions), POPCNT and BMI1.
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("bmi1")
    }

    /// [`super::json_string`] with AVX-512 masks.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F, AVX-512BW, POPCNT and BMI1 ([`available`]).
    #[target_feature(enable = "avx512f,avx512bw,popcnt,bmi1")]
    pub unsafe fn json_string(payload: &[u8]) -> Option<(usize, Lengths)> {
        measure(payload, &Avx512(()))
    }

    /// The AVX-512 masks, made only where the CPU has AVX-512F and AVX-512BW.
    pub(super) struct Avx512(());

    impl Avx512 {
        /// The masks, if this CPU has them.
        #[cfg(test)]
        pub(super) fn new() -> Option<Self> {
            available().then_some(Avx512(()))
        }

        #[target_feature(enable = "avx512f,avx512bw")]
        #[inline]
        fn load(block: &[u8; 64]) -> __m512i {
            // SAFETY: the 64 bytes read are `block`.
            unsafe { _mm512_loadu_si512(block.as_ptr().cast()) }
        }

        #[target_feature(enable = "avx512f,avx512bw")]
        #[inline]
        fn basic(&self, block: &[u8; 64]) -> Basic {
            let v = Self::load(block);
            let set = |b: u8| _mm512_set1_epi8(b as i8);
            Basic {
                quote: _mm512_cmpeq_epi8_mask(v, set(b'"')),
                backslash: _mm512_cmpeq_epi8_mask(v, set(b'\\')),
                // Signed: control characters and bytes that are not ASCII.
                unusual: _mm512_cmplt_epi8_mask(v, set(0x20)),
            }
        }

        #[target_feature(enable = "avx512f,avx512bw")]
        #[inline]
        fn utf8(&self, block: &[u8; 64]) -> Utf8 {
            let v = Self::load(block);
            let set = |b: u8| _mm512_set1_epi8(b as i8);
            let at_least = |b: u8| _mm512_cmpge_epu8_mask(v, set(b));
            let is = |b: u8| _mm512_cmpeq_epi8_mask(v, set(b));
            Utf8 {
                control: _mm512_cmplt_epu8_mask(v, set(0x20)),
                never: is(0xC0) | is(0xC1) | at_least(0xF5),
                // 0x80..=0xBF are the signed bytes below -64 (0xC0).
                continuation: _mm512_cmplt_epi8_mask(v, set(0xC0)),
                lead: at_least(0xC2),
                three: at_least(0xE0),
                four: at_least(0xF0),
                narrow: is(0xE0) | is(0xED) | is(0xF0) | is(0xF4),
            }
        }

        /// The escape classes by one lookup per nibble ([`ESCAPE_LOW`]), in four 16-byte lanes.
        #[target_feature(enable = "avx512f,avx512bw")]
        #[inline]
        fn escapes(&self, block: &[u8; 64]) -> Escapes {
            let v = Self::load(block);
            // SAFETY: the 16 bytes read are the table's.
            let table = |t: &[u8; 16]| _mm512_broadcast_i32x4(unsafe { _mm_loadu_si128(t.as_ptr().cast()) });
            let (low, high) = (table(&ESCAPE_LOW), table(&ESCAPE_HIGH));
            let nibble = _mm512_and_si512(_mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
            let class = _mm512_and_si512(_mm512_shuffle_epi8(low, v), _mm512_shuffle_epi8(high, nibble));
            Escapes {
                unusual: _mm512_testn_epi8_mask(class, _mm512_set1_epi8(0x0F)),
            }
        }
    }

    impl Kernel for Avx512 {
        #[inline(always)]
        fn basic(&self, block: &[u8; 64]) -> Basic {
            // SAFETY: an `Avx512` is made only where the CPU has AVX-512F and AVX-512BW.
            unsafe { Avx512::basic(self, block) }
        }

        #[inline(always)]
        fn utf8(&self, block: &[u8; 64]) -> Utf8 {
            // SAFETY: as above.
            unsafe { Avx512::utf8(self, block) }
        }

        #[inline(always)]
        fn escapes(&self, block: &[u8; 64]) -> Escapes {
            // SAFETY: as above.
            unsafe { Avx512::escapes(self, block) }
        }

        #[inline(always)]
        fn wide(&self, w: &Wide) -> Option<(u64, u64)> {
            // SAFETY: as above.
            unsafe { wide(self, w) }
        }
    }

    /// [`super::wide_block`] with AVX-512 masks, out of line.
    ///
    /// # Safety
    ///
    /// The CPU must have AVX-512F, AVX-512BW, POPCNT and BMI1 ([`available`]).
    #[target_feature(enable = "avx512f,avx512bw,popcnt,bmi1")]
    #[inline(never)]
    unsafe fn wide(kernel: &Avx512, w: &Wide) -> Option<(u64, u64)> {
        super::wide_block(kernel, w)
    }
}

/// The masks one byte at a time (the reference for tests).
#[cfg(test)]
struct Portable;

#[cfg(test)]
impl Portable {
    fn mask(block: &[u8; 64], test: impl Fn(u8) -> bool) -> u64 {
        block
            .iter()
            .enumerate()
            .fold(0, |m, (i, &b)| m | (u64::from(test(b)) << i))
    }
}

#[cfg(test)]
impl Kernel for Portable {
    fn basic(&self, block: &[u8; 64]) -> Basic {
        Basic {
            quote: Self::mask(block, |b| b == b'"'),
            backslash: Self::mask(block, |b| b == b'\\'),
            unusual: Self::mask(block, |b| !(0x20..0x80).contains(&b)),
        }
    }

    fn utf8(&self, block: &[u8; 64]) -> Utf8 {
        Utf8 {
            control: Self::mask(block, |b| b < 0x20),
            never: Self::mask(block, |b| matches!(b, 0xC0 | 0xC1) || b >= 0xF5),
            continuation: Self::mask(block, |b| b & 0xC0 == 0x80),
            lead: Self::mask(block, |b| b >= 0xC2),
            three: Self::mask(block, |b| b >= 0xE0),
            four: Self::mask(block, |b| b >= 0xF0),
            narrow: Self::mask(block, |b| matches!(b, 0xE0 | 0xED | 0xF0 | 0xF4)),
        }
    }

    fn escapes(&self, block: &[u8; 64]) -> Escapes {
        Escapes {
            unusual: Self::mask(block, |b| !b"\"\\bfnrt".contains(&b)),
        }
    }

    fn wide(&self, w: &Wide) -> Option<(u64, u64)> {
        wide_block(self, w)
    }
}

/// The code unit of the escape `\uXXXX` at `at`, if it is one.
fn hex_unit(payload: &[u8], at: usize) -> Option<u16> {
    let escape = payload.get(at..at + 6)?;
    if &escape[..2] != br"\u" {
        return None;
    }
    escape[2..].iter().try_fold(0u16, |unit, &c| {
        let digit = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        Some(unit << 4 | u16::from(digit))
    })
}

/// What the rare escapes (`\/` and `\u`) change in a string's lengths, and where the low half of
/// the last surrogate pair is (handled with its high half).
#[derive(Debug, Clone, Copy)]
struct Odd {
    /// UTF-16 units fewer than the escapes' bytes less one per escape say (`\uXXXX`: one unit
    /// for six bytes).
    units_less: u64,
    /// Characters `JSON.stringify` writes fewer than the bytes counted (`\/` comes back as `/`,
    /// `\uXXXX` as one character or as a short or `\u` escape).
    json_less: u64,
    low_half: usize,
}

/// Count the escapes of `block` (at `pos` in `payload`) that are neither a quote, a backslash
/// nor a control letter, `odd` (bits of `block`, each after a backslash) into `tally`; `None`
/// where JSON.parse would not take one. Out of the block loop: real text rarely has them, and
/// the loop keeps its counts in registers without the calls.
#[cold]
#[inline(never)]
fn odd_escapes(payload: &[u8], pos: usize, block: &[u8; 64], mut odd: u64, tally: &mut Odd) -> Option<()> {
    while odd != 0 {
        let i = odd.trailing_zeros() as usize;
        odd &= odd - 1;
        match block[i] {
            b'/' => tally.json_less += 1,
            b'u' => {
                let at = pos + i - 1;
                if at == tally.low_half {
                    continue;
                }
                let unit = hex_unit(payload, at)?;
                // Six bytes: one unit, where the escape counted as one unit of two bytes and
                // four more; JSON.stringify writes it as one character or as an escape.
                tally.units_less += 4;
                tally.json_less += 5;
                match unit {
                    0xD800..0xDC00 => {
                        // A pair: two units, written as they are by JSON.stringify.
                        if !hex_unit(payload, at + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low)) {
                            return None;
                        }
                        tally.low_half = at + 6;
                        tally.units_less += 4;
                        tally.json_less += 5;
                    }
                    0xDC00..0xE000 => return None,
                    0x08 | 0x09 | 0x0a | 0x0c | 0x0d | 0x22 | 0x5c => tally.json_less -= 1,
                    0..0x20 => tally.json_less -= 5,
                    _ => {}
                }
            }
            _ => return None,
        }
    }
    Some(())
}

/// A block with bytes that are not ASCII or raw control characters inside the string, and
/// where it stands (see [`wide_block`]).
struct Wide<'a> {
    payload: &'a [u8],
    /// Where `block` starts in `payload`.
    pos: usize,
    block: &'a [u8; 64],
    /// The bytes of the string in the block (all up to the closing quote).
    inside: u64,
    /// The closing quote, if the block has it.
    quote: u64,
    /// The continuation bytes characters begun before still need (see [`measure`]).
    pending: u64,
}

/// The UTF-16 units of a block's bytes that are not ASCII (its escapes counted as written), and
/// the continuation bytes its last character still needs in the next block; `None` where the
/// bytes are not UTF-8 or hold a raw control character. Each kernel calls it out of the block
/// loop: about one block in ten has such bytes, and with its masks in the loop the loop's
/// counts no longer fitted in registers.
#[inline(always)]
fn wide_block(kernel: &impl Kernel, w: &Wide) -> Option<(u64, u64)> {
    let (inside, quote) = (w.inside, w.quote);
    let u = kernel.utf8(w.block);
    if u.control & inside != 0 {
        return None;
    }
    // UTF-8 up to the closing quote (a character must end before it): each leader
    // followed by as many continuation bytes as it says, no other continuation byte, no
    // byte that never occurs (0xC0, 0xC1, 0xF5 and above).
    let upto = inside | (quote & quote.wrapping_neg());
    let needed = w.pending | (u.lead << 1) | (u.three << 2) | (u.four << 3);
    if ((needed ^ u.continuation) | u.never) & upto != 0 {
        return None;
    }
    let pending = (u.lead >> 63) | (u.three >> 62) | (u.four >> 61);
    // The second byte after a leader with a narrower range.
    let mut narrow = u.narrow & inside;
    while narrow != 0 {
        let at = w.pos + narrow.trailing_zeros() as usize;
        narrow &= narrow - 1;
        let second = *w.payload.get(at + 1)?;
        let fits = match w.payload[at] {
            0xE0 => second >= 0xA0,
            0xED => second < 0xA0,
            0xF0 => second >= 0x90,
            _ => second < 0x90,
        };
        if !fits {
            return None;
        }
    }
    let units = (!u.continuation & inside).count_ones() + (u.four & inside).count_ones();
    Some((u64::from(units), pending))
}

#[inline(always)]
fn measure(payload: &[u8], kernel: &impl Kernel) -> Option<(usize, Lengths)> {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    // Bytes counted as UTF-16 units (escapes included as written) and escapes. `\X` is one unit
    // for two bytes and written back as it is by JSON.stringify (the rare ones in `odd`).
    let (mut raw, mut escapes) = (0u64, 0u64);
    let mut odd = Odd {
        units_less: 0,
        json_less: 0,
        low_half: usize::MAX,
    };
    // The continuation bytes that characters begun in the previous block still need at the start
    // of this one (bits 0 to 2).
    let mut pending = 0u64;
    // The first byte of the next block is escaped (a backslash ended this one).
    let mut carry = 0u64;
    let mut tail;
    let mut pos = 0;
    loop {
        // Past the end after a last block that was cut short: no closing quote.
        let rest = payload.get(pos..)?;
        let block: &[u8; 64] = match rest.first_chunk() {
            Some(b) => b,
            None => {
                if rest.is_empty() {
                    return None;
                }
                tail = [b' '; 64];
                tail[..rest.len()].copy_from_slice(rest);
                &tail
            }
        };
        let m = kernel.basic(block);
        // The characters escaped by a backslash, whatever the runs of backslashes: a run that
        // starts on an odd bit escapes the even bits after it, and the other way round.
        let backslash = m.backslash & !carry;
        let follows = (backslash << 1) | carry;
        let odd_starts = backslash & !EVEN & !follows;
        let (even_starts, overflow) = odd_starts.overflowing_add(backslash);
        carry = u64::from(overflow);
        let escaped = (EVEN ^ (even_starts << 1)) & follows;
        let quote = m.quote & !escaped;
        let inside = if quote == 0 {
            !0
        } else {
            (1u64 << quote.trailing_zeros()) - 1
        };
        let escaped = escaped & inside;
        if m.unusual & inside == 0 {
            // A character the previous block began is cut short (by ASCII or the closing quote).
            if pending != 0 {
                return None;
            }
            raw += u64::from(inside.count_ones());
        } else {
            let wide = Wide {
                payload,
                pos,
                block,
                inside,
                quote,
                pending,
            };
            let units;
            (units, pending) = kernel.wide(&wide)?;
            raw += units;
        }
        if escaped != 0 {
            escapes += u64::from(escaped.count_ones());
            let unusual = escaped & kernel.escapes(block).unusual;
            if unusual != 0 {
                odd_escapes(payload, pos, block, unusual, &mut odd)?;
            }
        }
        if quote != 0 {
            let end = pos + quote.trailing_zeros() as usize;
            let units = raw - escapes - odd.units_less;
            // JSON.stringify writes short escapes back (but `\/` as `/`); `\u` ones as counted.
            let json = raw - odd.json_less;
            return Some((end, Lengths { units, json }));
        }
        pos += 64;
    }
}

/// The deepest object [`json_object`] measures (tool-call arguments nest a few levels).
const MAX_OBJECT_DEPTH: usize = 32;

/// The most keys of one object [`json_object`] checks for repeats.
const MAX_OBJECT_KEYS: usize = 32;

/// The JSON object at the start of `bytes`, written as `JSON.stringify` writes it: its bytes and
/// `JSON.stringify(JSON.parse(object)).length`. Where `JSON.stringify` would write the value
/// back differently in length, `None`: whitespace between tokens, a repeated key (`JSON.parse`
/// keeps one), a key with an escape (a repeat could hide behind it), a number not in its
/// shortest form (`1.0`, `1e2`, `-0`), a string [`json_string`] does not take, nesting deeper
/// than `MAX_OBJECT_DEPTH` (32) or an object of more than `MAX_OBJECT_KEYS` (32) keys. The order of
/// keys (`JSON.stringify` puts integer-like ones first) changes no length.
pub fn json_object(bytes: &[u8]) -> Option<(usize, u64)> {
    if bytes.first() != Some(&b'{') {
        return None;
    }
    // Per open container: whether it is an object, and where its keys start in `keys`.
    // Both kept small and all zeros: made for every tool call, they must cost nothing to make
    // (an array of empty slices was copied in from a constant, 1 KB a call).
    let mut open: [(bool, u8); MAX_OBJECT_DEPTH] = [(false, 0); MAX_OBJECT_DEPTH];
    let mut depth = 0;
    let mut keys: [(u32, u32); MAX_OBJECT_KEYS * 2] = [(0, 0); MAX_OBJECT_KEYS * 2];
    let mut key_count = 0;
    let mut i = 0;
    let mut total = 0u64;
    // Whether a value is expected next (else a separator or an end).
    let mut value = true;
    loop {
        let b = *bytes.get(i)?;
        if value {
            match b {
                b'{' | b'[' => {
                    if depth == MAX_OBJECT_DEPTH {
                        return None;
                    }
                    open[depth] = (b == b'{', key_count as u8);
                    depth += 1;
                    total += 1;
                    i += 1;
                    let close = if b == b'{' { b'}' } else { b']' };
                    if *bytes.get(i)? == close {
                        // Empty: the end is read as any container's end.
                        value = false;
                    } else if b == b'{' {
                        i = object_key(bytes, i, &mut total, key_count, &mut keys, &mut key_count)?;
                    }
                    continue;
                }
                b'"' => {
                    let (n, cut) = json_string(&bytes[i + 1..])?;
                    total += 2 + cut.json;
                    i += n + 2;
                }
                b't' if bytes[i..].starts_with(b"true") => (total, i) = (total + 4, i + 4),
                b'f' if bytes[i..].starts_with(b"false") => (total, i) = (total + 5, i + 5),
                b'n' if bytes[i..].starts_with(b"null") => (total, i) = (total + 4, i + 4),
                b'-' | b'0'..=b'9' => {
                    let n = shortest_number(&bytes[i..])?;
                    total += n as u64;
                    i += n;
                }
                _ => return None,
            }
            value = false;
            continue;
        }
        let (object, first_key) = open[depth - 1];
        let first_key = usize::from(first_key);
        match b {
            b',' => {
                total += 1;
                i += 1;
                if object {
                    i = object_key(bytes, i, &mut total, first_key, &mut keys, &mut key_count)?;
                }
                value = true;
            }
            b'}' | b']' if (b == b'}') == object => {
                key_count = first_key;
                depth -= 1;
                total += 1;
                i += 1;
                if depth == 0 {
                    return Some((i, total));
                }
            }
            _ => return None,
        }
    }
}

/// The key at `at` (and its colon) of the object whose keys start at `first_key` in `keys`:
/// where its value starts. Adds its length and remembers it (where it is in `bytes`, and its
/// length) among the object's keys, `None` on a repeat or an escape.
fn object_key(
    bytes: &[u8],
    at: usize,
    total: &mut u64,
    first_key: usize,
    keys: &mut [(u32, u32); MAX_OBJECT_KEYS * 2],
    key_count: &mut usize,
) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    // Keys are short and plain: up to the quote, no escape, no control character. One loop
    // over their few bytes (a search call and two more passes cost more).
    let rest = &bytes[at + 1..];
    let (mut n, mut ascii) = (0, true);
    loop {
        match *rest.get(n)? {
            b'"' => break,
            b'\\' | 0..0x20 => return None,
            c => ascii &= c < 0x80,
        }
        n += 1;
    }
    let key = &rest[..n];
    if *key_count == keys.len() || *key_count - first_key == MAX_OBJECT_KEYS {
        return None;
    }
    let units = match ascii {
        true => n as u64,
        false => crate::js::utf16_len(std::str::from_utf8(key).ok()?),
    };
    let seen = |&(start, len): &(u32, u32)| bytes.get(start as usize..start as usize + len as usize) == Some(key);
    if keys[first_key..*key_count].iter().any(seen) {
        return None;
    }
    keys[*key_count] = (u32::try_from(at + 1).ok()?, u32::try_from(n).ok()?);
    *key_count += 1;
    let colon = at + n + 2;
    (bytes.get(colon) == Some(&b':')).then(|| {
        *total += 2 + units + 1;
        colon + 1
    })
}

/// The length of the number token at the start of `bytes` if `JSON.stringify` writes its value
/// back the same (then its length is the token's).
fn shortest_number(bytes: &[u8]) -> Option<usize> {
    let end = bytes
        .iter()
        .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        .unwrap_or(bytes.len());
    let token = &bytes[..end];
    let digits = token.strip_prefix(b"-").unwrap_or(token);
    // Integers up to 15 digits without a leading zero are written as they are (but `-0`).
    if !digits.is_empty() && digits.len() <= 15 && digits.iter().all(u8::is_ascii_digit) {
        return (digits == b"0" && token.len() == 1 || digits[0] != b'0').then_some(end);
    }
    let text = std::str::from_utf8(token).ok()?;
    let value: f64 = text.parse().ok()?;
    (value.is_finite() && crate::js::number_to_string(value) == text).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a scalar walk finds (the definition the block method must equal).
    fn reference(payload: &[u8]) -> Option<(usize, Lengths)> {
        let (mut units, mut json) = (0u64, 0u64);
        let mut i = 0;
        let mut low_half = false;
        let end = loop {
            let b = *payload.get(i)?;
            match b {
                b'"' => break i,
                b'\\' => {
                    let e = *payload.get(i + 1)?;
                    if low_half && e != b'u' {
                        return None;
                    }
                    i += 2;
                    units += 1;
                    json += match e {
                        b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'/' => 1,
                        b'u' => {
                            let unit = hex_unit(payload, i - 2)?;
                            i += 4;
                            if low_half {
                                low_half = false;
                                if !(0xDC00..0xE000).contains(&unit) {
                                    return None;
                                }
                                1
                            } else if (0xD800..0xDC00).contains(&unit) {
                                low_half = true;
                                1
                            } else if (0xDC00..0xE000).contains(&unit) {
                                return None;
                            } else {
                                match unit {
                                    0x08 | 0x09 | 0x0a | 0x0c | 0x0d | 0x22 | 0x5c => 2,
                                    0..0x20 => 6,
                                    _ => 1,
                                }
                            }
                        }
                        _ => return None,
                    };
                    continue;
                }
                0..0x20 => return None,
                _ => {}
            }
            if low_half {
                return None;
            }
            let n = u64::from(b & 0xC0 != 0x80) + u64::from(b >= 0xF0);
            units += n;
            json += n;
            i += 1;
        };
        if low_half {
            return None;
        }
        std::str::from_utf8(&payload[..end]).ok()?;
        Some((end, Lengths { units, json }))
    }

    /// A random JSON value for [`objects_measure_as_stringify`]: mostly as `JSON.stringify`
    /// writes values, sometimes not (whitespace, repeated or escaped keys, numbers not in their
    /// shortest form, strings `json_string` refuses, deep nesting).
    fn random_value(next: &mut impl FnMut() -> u64, depth: usize, out: &mut Vec<u8>) {
        const STRINGS: [&[u8]; 9] = [
            b"src/main.rs",
            b"line\\none \\\"quoted\\\" \\u001b[0m",
            "é 日本 😀".as_bytes(),
            b"",
            b"\\/",
            b"\\ud800",
            b"\x01",
            b"\\uD83D\\uDE00",
            b"\\u00e9",
        ];
        const NUMBERS: [&[u8]; 14] = [
            b"0",
            b"-0",
            b"7",
            b"-12",
            b"123456789012345",
            b"1234567890123456789",
            b"1.5",
            b"1.0",
            b"1e2",
            b"1e+21",
            b"0.1",
            b"-2.5e-7",
            b"01",
            b"1.",
        ];
        const KEYS: [&[u8]; 10] = [
            b"path",
            b"edits",
            b"oldText",
            b"1",
            b"a\\u0062",
            b"",
            b"__proto__",
            b"path",
            "ключ".as_bytes(),
            "😀é".as_bytes(),
        ];
        let pick = |next: &mut dyn FnMut() -> u64, n: usize| (next() % n as u64) as usize;
        match if depth > 5 { 2 + pick(next, 3) } else { pick(next, 5) } {
            0 => {
                out.push(b'{');
                for k in 0..pick(next, 5) {
                    if k > 0 {
                        out.push(b',');
                    }
                    if pick(next, 40) == 0 {
                        out.push(b' ');
                    }
                    out.push(b'"');
                    out.extend_from_slice(KEYS[pick(next, KEYS.len())]);
                    out.extend_from_slice(b"\":");
                    random_value(next, depth + 1, out);
                }
                out.push(b'}');
            }
            1 => {
                out.push(b'[');
                for k in 0..pick(next, 4) {
                    if k > 0 {
                        out.push(b',');
                    }
                    random_value(next, depth + 1, out);
                }
                out.push(b']');
            }
            2 => {
                out.push(b'"');
                for _ in 0..pick(next, 4) {
                    let kinds = if pick(next, 8) == 0 { 9 } else { 5 };
                    out.extend_from_slice(STRINGS[pick(next, kinds)]);
                }
                out.push(b'"');
            }
            3 => {
                let kinds = if pick(next, 4) == 0 { 14 } else { 5 };
                out.extend_from_slice(NUMBERS[pick(next, kinds)]);
            }
            _ => out.extend_from_slice([&b"true"[..], b"false", b"null"][pick(next, 3)]),
        }
    }

    /// Random objects: where `json_object` measures one, simd-json parses it and
    /// `JSON.stringify`'s length as pisa computes it from the tape (repeated keys dropped,
    /// numbers written back shortest) is the same; and it measures most of them.
    #[test]
    #[cfg_attr(
        not(pisa_avx2),
        ignore = "this machine lacks AVX2, POPCNT or BMI1: nothing is measured"
    )]
    fn objects_measure_as_stringify() {
        assert!(available(), "the build script saw AVX2, POPCNT and BMI1");
        let mut next = crate::parse::xorshift(0x2545_F491_4F6C_DD1Du64);
        let (mut measured, mut objects) = (0, 0);
        let mut buffers = simd_json::Buffers::default();
        for _ in 0..30_000 {
            let mut text = b"{".to_vec();
            let mut value = Vec::new();
            random_value(&mut next, 1, &mut value);
            if value.starts_with(b"{") {
                text = value;
            } else {
                text.extend_from_slice(b"\"v\":");
                text.extend_from_slice(&value);
                text.push(b'}');
            }
            objects += 1;
            let mut line = text.clone();
            line.extend_from_slice(br#"},"more":"x"}"#);
            let Some((bytes, len)) = json_object(&line) else {
                continue;
            };
            measured += 1;
            let shown = String::from_utf8_lossy(&text).into_owned();
            assert_eq!(bytes, text.len(), "{shown}");
            let mut parsed = text.clone();
            let tape =
                simd_json::to_tape_with_buffers(&mut parsed, &mut buffers).unwrap_or_else(|e| panic!("{shown}: {e}"));
            assert_eq!(
                len,
                super::super::tape::stringify_len(super::super::tape::Val::root(&tape), Default::default()),
                "{shown}"
            );
        }
        assert!(measured > objects / 4, "{measured} of {objects} measured");
    }

    /// Random strings of escapes (valid or not), characters of one to four bytes, control
    /// characters, bytes that are not UTF-8, quotes and backslash runs, cut anywhere: the block
    /// method with the byte-by-byte masks equals the reference.
    #[test]
    fn portable_blocks_measure_as_a_scalar_walk() {
        blocks_measure_as_a_scalar_walk(|p| measure(p, &Portable));
    }

    /// The AVX2 masks equal the byte-by-byte ones for every byte value at every place of a
    /// block (the nibble lookups of `escapes` above all).
    #[test]
    #[cfg_attr(
        not(pisa_avx2),
        ignore = "this machine lacks AVX2, POPCNT or BMI1: nothing is measured"
    )]
    #[cfg(target_arch = "x86_64")]
    fn avx2_masks_equal_the_portable_ones() {
        assert!(available(), "the build script saw AVX2, POPCNT and BMI1");
        masks_equal_the_portable_ones(&avx2::Avx2::new());
    }

    /// Every byte value at every place of four blocks: `kernel`'s masks equal [`Portable`]'s.
    #[cfg(target_arch = "x86_64")]
    fn masks_equal_the_portable_ones(kernel: &impl Kernel) {
        for shift in 0..4u8 {
            let block: [u8; 64] = std::array::from_fn(|i| (i as u8).wrapping_mul(4).wrapping_add(shift));
            let p = &Portable;
            let (k, p_basic) = (kernel.basic(&block), p.basic(&block));
            assert_eq!((k.quote, k.backslash), (p_basic.quote, p_basic.backslash), "{block:?}");
            // The unusual bytes, or every bit when there are any.
            assert!(
                k.unusual == p_basic.unusual || (p_basic.unusual != 0 && k.unusual == !0),
                "{block:?}"
            );
            assert_eq!(kernel.utf8(&block), p.utf8(&block), "{block:?}");
            assert_eq!(kernel.escapes(&block), p.escapes(&block), "{block:?}");
        }
        // Printable ASCII has no unusual byte; one control character or byte that is not ASCII
        // anywhere in either half is seen.
        let ascii: [u8; 64] = std::array::from_fn(|i| 0x20 + (i * 7 % 0x60) as u8);
        assert_eq!(kernel.basic(&ascii).unusual, 0);
        for at in 0..64 {
            for b in [0x00, 0x1F, 0x80, 0xC2, 0xFF] {
                let mut block = ascii;
                block[at] = b;
                assert_ne!(kernel.basic(&block).unusual & (1 << at), 0, "{b:#x} at {at}");
            }
        }
    }

    /// The same for the AVX-512 masks.
    #[test]
    #[cfg_attr(not(pisa_avx512), ignore = "this machine lacks AVX-512F or AVX-512BW")]
    #[cfg(target_arch = "x86_64")]
    fn avx512_masks_equal_the_portable_ones() {
        masks_equal_the_portable_ones(&avx512::Avx512::new().expect("the build script saw AVX-512F and AVX-512BW"));
    }

    /// Both x86 kernels through the whole measure (whichever `json_string` picks is tested by
    /// [`avx2_blocks_measure_as_a_scalar_walk`]).
    #[test]
    #[cfg_attr(not(pisa_avx512), ignore = "this machine lacks AVX-512F or AVX-512BW")]
    #[cfg(target_arch = "x86_64")]
    fn avx512_and_avx2_blocks_measure_as_a_scalar_walk() {
        let avx512 = avx512::Avx512::new().expect("the build script saw AVX-512F and AVX-512BW");
        blocks_measure_as_a_scalar_walk(|p| measure(p, &avx512));
        let avx2 = avx2::Avx2::new();
        blocks_measure_as_a_scalar_walk(|p| measure(p, &avx2));
    }

    /// The same through [`json_string`], with the masks it takes on this machine (AVX-512 where the
    /// CPU has it, else AVX2).
    #[test]
    #[cfg_attr(
        not(pisa_avx2),
        ignore = "this machine lacks AVX2, POPCNT or BMI1: nothing is measured"
    )]
    fn avx2_blocks_measure_as_a_scalar_walk() {
        assert!(available(), "the build script saw AVX2, POPCNT and BMI1");
        blocks_measure_as_a_scalar_walk(json_string);
    }

    /// Long ASCII stretches between characters that are not ASCII, whole or cut short (a
    /// character cut at the end of a block, the next block ASCII, makes the string invalid),
    /// and the sequences UTF-8 forbids though their bytes look right (overlong forms, surrogates,
    /// code points past U+10FFFF, at the edges of what is allowed): the portable masks and
    /// `json_string` on this machine, which check UTF-8 block by block with the masks, measure
    /// as the reference, which checks the whole string with the standard library.
    #[test]
    fn characters_that_are_not_ascii_are_checked_block_by_block() {
        const OTHERS: [&[u8]; 32] = [
            "é".as_bytes(),
            "😀".as_bytes(),
            "日".as_bytes(),
            b"\\n",
            // The smallest and largest of each length, and the edges of the narrow ranges.
            b"\xc2\x80",
            b"\xdf\xbf",
            b"\xe0\xa0\x80",
            b"\xed\x9f\xbf",
            b"\xee\x80\x80",
            b"\xef\xbf\xbf",
            b"\xf0\x90\x80\x80",
            b"\xf4\x8f\xbf\xbf",
            "—→…".as_bytes(),
            // Not UTF-8 (from here on).
            b"\xe2\x82",
            b"\xf0\x9f\x98",
            b"\xff",
            b"\x80",
            b"\xc0\x80",
            b"\xc1\xbf",
            b"\xe0\x80\x80",
            b"\xe0\x9f\xbf",
            b"\xed\xa0\x80",
            b"\xed\xbf\xbf",
            b"\xf0\x80\x80\x80",
            b"\xf0\x8f\xbf\xbf",
            b"\xf4\x90\x80\x80",
            b"\xf5\x80\x80\x80",
            b"\xc3\xa9\xa9",
            b"\xe2\x82\xac\x80",
            b"\xc3",
            b"\xf8\x88\x80\x80\x80",
            b"\xc1",
        ];
        const VALID: u64 = 13;
        let ascii = [b'a'; 150];
        let mut next = crate::parse::xorshift(0xB10C_B10C_B10C_B10C);
        let (mut valid, mut invalid) = (0, 0);
        for case in 0..20_000 {
            let mut p = Vec::new();
            for _ in 0..1 + next() % 8 {
                p.extend_from_slice(&ascii[..(next() % 150) as usize]);
                // Valid characters in three strings of four.
                let other = if case % 4 == 0 {
                    next() % OTHERS.len() as u64
                } else {
                    next() % VALID
                };
                p.extend_from_slice(OTHERS[other as usize]);
            }
            p.extend_from_slice(&ascii[..(next() % 70) as usize]);
            p.push(b'"');
            let want = reference(&p);
            (valid, invalid) = if want.is_some() {
                (valid + 1, invalid)
            } else {
                (valid, invalid + 1)
            };
            assert_eq!(measure(&p, &Portable), want, "{:?}", String::from_utf8_lossy(&p));
            if available() {
                assert_eq!(json_string(&p), want, "{:?}", String::from_utf8_lossy(&p));
                #[cfg(target_arch = "x86_64")]
                assert_eq!(
                    measure(&p, &avx2::Avx2::new()),
                    want,
                    "{:?}",
                    String::from_utf8_lossy(&p)
                );
            }
        }
        assert!(valid > 10_000 && invalid > 4_000, "{valid} valid, {invalid} invalid");
        // A character cut at the very end of a block, the next block ASCII.
        let mut cut = vec![b'a'; 62];
        cut.extend_from_slice(b"\xe2\x82");
        cut.extend_from_slice(&[b'a'; 64]);
        cut.push(b'"');
        assert_eq!(measure(&cut, &Portable), None);
        assert_eq!(json_string(&cut), None);
        // The same with the missing byte after the ASCII block (where a count that forgot the
        // character begun two blocks before would take it as the rest of one).
        let mut parted = vec![b'a'; 63];
        parted.push(0xC3);
        parted.extend_from_slice(&[b'a'; 64]);
        parted.push(0xA9);
        parted.extend_from_slice(&[b'a'; 70]);
        parted.push(b'"');
        assert_eq!(reference(&parted), None);
        assert_eq!(measure(&parted, &Portable), None);
        assert_eq!(json_string(&parted), None);
    }

    fn blocks_measure_as_a_scalar_walk(measured: impl Fn(&[u8]) -> Option<(usize, Lengths)>) {
        const PIECES: [&[u8]; 33] = [
            b"plain ascii words ",
            b"\\n",
            b"\\\"",
            b"\\\\",
            b"\\t",
            b"\\/",
            b"\\b",
            b"\\r",
            b"\\f",
            b"\\u00e9",
            b"\\u001f",
            b"\\u0022",
            b"\\uD83D\\uDE00",
            "é".as_bytes(),
            "日本".as_bytes(),
            "😀".as_bytes(),
            b"\x7f",
            b"\\u005c",
            b"\\u000A",
            b"\\ud800",
            b"\\udc00x",
            b"\\ud83d\\u0041",
            b"\x01",
            b"\xff",
            b"\xe2\x82",
            b"\\x",
            b"\\u12",
            b"\\",
            b"\"",
            b"\\\\\\\"",
            b"\\u",
            b"x",
            b"\\\\\\\\",
        ];
        let mut next = crate::parse::xorshift(0x9E37_79B9_7F4A_7C15u64);
        let mut cut_ones = 0;
        for case in 0..40_000 {
            // All pieces; those that are valid; or ASCII with only the escapes of real text
            // (`\n`, `\"`, `\\`, `\t`), over whole blocks.
            let pieces = match case % 3 {
                0 => PIECES.len(),
                1 => 19,
                _ => 5,
            };
            let mut p = Vec::new();
            for _ in 0..next() % 90 {
                p.extend_from_slice(PIECES[(next() % pieces as u64) as usize]);
            }
            if next().is_multiple_of(2) {
                p.extend_from_slice(b"\"rest\\\"");
            }
            let want = reference(&p);
            cut_ones += usize::from(want.is_some());
            assert_eq!(measured(&p), want, "{:?}", String::from_utf8_lossy(&p));
        }
        assert!(cut_ones > 10_000, "{cut_ones} measurable strings");
    }
}
