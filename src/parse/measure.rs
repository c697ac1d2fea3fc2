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
//! Only `\u` escapes (rare) are looked at one by one. Without AVX2 nothing is measured here
//! (the payload is left to simd-json, which is as fast as a scalar scan would be).

use super::text::Cut;

/// The content of the JSON string whose opening quote precedes `payload`: its bytes up to
/// the closing quote and what it holds, if JSON.parse and simd-json both take it as it is
/// (valid UTF-8, no raw control character, valid escapes, no lone surrogate escape). `None`
/// otherwise, or when this machine cannot measure it fast.
pub fn json_string(payload: &[u8]) -> Option<(usize, Cut)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
        && std::arch::is_x86_feature_detected!("bmi1")
    {
        // SAFETY: the features the function is compiled for are present.
        return unsafe { avx2::json_string(payload) };
    }
    let _ = payload;
    None
}

/// Whether [`json_string`] measures on this machine.
pub fn available() -> bool {
    json_string(b"\"").is_some()
}

/// What one 64-byte block holds, a bit per byte.
#[derive(Debug, Default)]
struct Masks {
    backslash: u64,
    quote: u64,
    /// Below 0x20 (raw control characters: invalid in a JSON string).
    control: u64,
    /// UTF-8 continuation bytes (`10xxxxxx`).
    continuation: u64,
    /// Leaders of four-byte sequences (two UTF-16 units).
    four: u64,
    /// Not ASCII.
    high: u64,
    u: u64,
    slash: u64,
    /// Characters that may follow a backslash: `"\/bfnrtu`.
    escapable: u64,
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8, _mm256_xor_si256,
    };

    use super::{Cut, Masks, measure};

    #[target_feature(enable = "avx2,popcnt,bmi1")]
    pub unsafe fn json_string(payload: &[u8]) -> Option<(usize, Cut)> {
        measure(payload, masks)
    }

    #[inline(always)]
    fn masks(block: &[u8; 64]) -> Masks {
        let mut m = Masks::default();
        // SAFETY: only called from `json_string`, compiled with AVX2; both loads are within
        // the 64 bytes of `block`.
        unsafe {
            let set = |b: u8| _mm256_set1_epi8(b as i8);
            for half in 0..2 {
                let v = _mm256_loadu_si256(block.as_ptr().add(32 * half).cast::<__m256i>());
                let bits = |x: __m256i| u64::from(_mm256_movemask_epi8(x) as u32) << (32 * half);
                let eq = |b: u8| _mm256_cmpeq_epi8(v, set(b));
                // Signed compares on bytes shifted by 0x80 compare them unsigned.
                let shifted = _mm256_xor_si256(v, set(0x80));
                let (u, slash, quote, backslash) = (eq(b'u'), eq(b'/'), eq(b'"'), eq(b'\\'));
                m.backslash |= bits(backslash);
                m.quote |= bits(quote);
                m.control |= bits(_mm256_cmpgt_epi8(set(0x20 ^ 0x80), shifted));
                m.continuation |= bits(_mm256_cmpeq_epi8(_mm256_and_si256(v, set(0xC0)), set(0x80)));
                m.four |= bits(_mm256_cmpgt_epi8(shifted, set(0xEF ^ 0x80)));
                m.high |= bits(v);
                m.u |= bits(u);
                m.slash |= bits(slash);
                let short = _mm256_or_si256(
                    _mm256_or_si256(eq(b'b'), eq(b'f')),
                    _mm256_or_si256(_mm256_or_si256(eq(b'n'), eq(b'r')), eq(b't')),
                );
                let escapable = _mm256_or_si256(_mm256_or_si256(u, slash), _mm256_or_si256(quote, backslash));
                m.escapable |= bits(_mm256_or_si256(escapable, short));
            }
        }
        m
    }
}

/// The masks of [`Masks`] one byte at a time (the reference for tests).
#[cfg(test)]
fn portable_masks(block: &[u8; 64]) -> Masks {
    let mut m = Masks::default();
    for (i, &b) in block.iter().enumerate() {
        let bit = 1u64 << i;
        let set = |mask: &mut u64, yes: bool| *mask |= if yes { bit } else { 0 };
        set(&mut m.backslash, b == b'\\');
        set(&mut m.quote, b == b'"');
        set(&mut m.control, b < 0x20);
        set(&mut m.continuation, b & 0xC0 == 0x80);
        set(&mut m.four, b >= 0xF0);
        set(&mut m.high, b >= 0x80);
        set(&mut m.u, b == b'u');
        set(&mut m.slash, b == b'/');
        set(&mut m.escapable, b"\"\\/bfnrtu".contains(&b));
    }
    m
}

/// The code unit of the escape `\uXXXX` at `at`, if it is one.
fn hex_unit(payload: &[u8], at: usize) -> Option<u16> {
    let escape = payload.get(at..at + 6)?;
    if &escape[..2] != br"\u" || !escape[2..].iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(&escape[2..]).ok()?, 16).ok()
}

#[inline(always)]
fn measure(payload: &[u8], masks: impl Fn(&[u8; 64]) -> Masks) -> Option<(usize, Cut)> {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    // Bytes counted as UTF-16 units (escapes included as written), escapes, `\/` escapes,
    // `\u` escapes and what the latter add to JSON.stringify's length.
    let (mut raw, mut escapes, mut slashes, mut us, mut u_extra) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut high = false;
    // The first byte of the next block is escaped (a backslash ended this one).
    let mut carry = 0u64;
    // The low half of a surrogate pair, handled with its high half.
    let mut low_half = usize::MAX;
    let mut tail;
    let mut pos = 0;
    loop {
        let block: &[u8; 64] = match payload.get(pos..pos + 64).and_then(|b| b.try_into().ok()) {
            Some(b) => b,
            None => {
                let rest = payload.get(pos..).filter(|r| !r.is_empty())?;
                tail = [b' '; 64];
                tail[..rest.len()].copy_from_slice(rest);
                &tail
            }
        };
        let m = masks(block);
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
        if (m.control & inside) | (escaped & !m.escapable) != 0 {
            return None;
        }
        raw += u64::from((!m.continuation & inside).count_ones() + (m.four & inside).count_ones());
        escapes += u64::from(escaped.count_ones());
        slashes += u64::from((escaped & m.slash).count_ones());
        high |= m.high & inside != 0;
        let mut u = escaped & m.u;
        while u != 0 {
            let at = pos + u.trailing_zeros() as usize - 1;
            u &= u - 1;
            if at == low_half {
                continue;
            }
            let unit = hex_unit(payload, at)?;
            us += 1;
            match unit {
                0xD800..0xDC00 => {
                    // A pair: two units, written as they are by JSON.stringify.
                    if !hex_unit(payload, at + 6).is_some_and(|low| (0xDC00..0xE000).contains(&low)) {
                        return None;
                    }
                    low_half = at + 6;
                    us += 1;
                }
                0xDC00..0xE000 => return None,
                0x08 | 0x09 | 0x0a | 0x0c | 0x0d | 0x22 | 0x5c => u_extra += 1,
                0..0x20 => u_extra += 5,
                _ => {}
            }
        }
        if quote != 0 {
            let end = pos + quote.trailing_zeros() as usize;
            if high {
                simdutf8::basic::from_utf8(&payload[..end]).ok()?;
            }
            // `\X` is one unit for two bytes, `\uXXXX` one for six.
            let units = raw - escapes - 4 * us;
            // JSON.stringify writes short escapes back (but `\/` as `/`); `\u` ones as counted.
            let json = units + (escapes - slashes - us) + u_extra;
            return Some((end, Cut { units, json }));
        }
        pos += 64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a scalar walk finds (the definition the block method must equal).
    fn reference(payload: &[u8]) -> Option<(usize, Cut)> {
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
        Some((end, Cut { units, json }))
    }

    /// Random strings of escapes (valid or not), characters of one to four bytes, control
    /// characters, bytes that are not UTF-8, quotes and backslash runs, cut anywhere: the block
    /// method (with this machine's masks and with the byte-by-byte ones) equals the reference.
    #[test]
    fn blocks_measure_as_a_scalar_walk() {
        const PIECES: [&[u8]; 31] = [
            b"plain ascii words ",
            b"\\n",
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\b",
            b"\\t",
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
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cut_ones = 0;
        for case in 0..40_000 {
            let pieces = if case % 3 == 0 { PIECES.len() } else { 17 };
            let mut p = Vec::new();
            for _ in 0..next() % 90 {
                p.extend_from_slice(PIECES[(next() % pieces as u64) as usize]);
            }
            if next() % 2 == 0 {
                p.extend_from_slice(b"\"rest\\\"");
            }
            let want = reference(&p);
            cut_ones += usize::from(want.is_some());
            if available() {
                assert_eq!(json_string(&p), want, "{:?}", String::from_utf8_lossy(&p));
            }
            assert_eq!(measure(&p, portable_masks), want, "{:?}", String::from_utf8_lossy(&p));
        }
        assert!(cut_ones > 10_000, "{cut_ones} measurable strings");
    }
}
