//! Strings as JavaScript measures and orders them: lengths in UTF-16 code units and as
//! `JSON.stringify` writes them, `String.prototype.trim`, and the default sort order.

/// Length in UTF-16 code units (`String#length`) of valid UTF-8 text.
#[inline]
pub fn utf16_len(s: &str) -> u64 {
    // Every byte that is not a continuation byte starts one scalar value, and four-byte
    // sequences (leaders >= 0xF0) need a surrogate pair: one unit more. Counted 64 bytes at
    // a time in byte-wide lanes, a loop the compiler turns into vector instructions.
    let (blocks, rest) = s.as_bytes().as_chunks::<64>();
    let mut n = 0u64;
    for block in blocks {
        let mut units = 0u8;
        for &b in block {
            units += u8::from((b as i8) >= -0x40) + u8::from(b >= 0xF0);
        }
        n += u64::from(units);
    }
    for &b in rest {
        n += byte_utf16_units(b);
    }
    n
}

/// UTF-16 units that one byte of UTF-8 starts.
#[inline]
fn byte_utf16_units(b: u8) -> u64 {
    u64::from((b as i8) >= -0x40) + u64::from(b >= 0xF0)
}

/// Extra characters `JSON.stringify` adds for the escapes of one byte: one for `"`, `\\`
/// and the short control escapes, five for other control characters (`\u00XX`).
#[inline]
fn byte_escape_extra(b: u8) -> u64 {
    match b {
        b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 1,
        0..=0x1f => 5,
        _ => 0,
    }
}

/// `JSON.stringify(s).length - 2` in one pass: UTF-16 units plus escape characters, 64 bytes
/// at a time in byte-wide lanes (see [`utf16_len`]).
pub fn stringified_content_len(s: &str) -> u64 {
    let (blocks, rest) = s.as_bytes().as_chunks::<64>();
    let mut n = 0u64;
    for block in blocks {
        let (mut units, mut escaped, mut long) = (0u8, 0u8, 0u8);
        for &b in block {
            units += u8::from((b as i8) >= -0x40) + u8::from(b >= 0xF0);
            // `"`, `\\` and control characters are escaped; those without a short escape
            // (`\\b \\t \\n \\f \\r`) take `\\u00XX`, four more.
            escaped += u8::from(b == b'"' || b == b'\\' || b < 0x20);
            long += u8::from(b < 0x20 && !matches!(b, 0x08..=0x0a | 0x0c | 0x0d));
        }
        n += u64::from(units) + u64::from(escaped) + 4 * u64::from(long);
    }
    for &b in rest {
        n += byte_utf16_units(b) + byte_escape_extra(b);
    }
    n
}

/// Whether `c` is removed by `String.prototype.trim` (WhiteSpace and LineTerminator).
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}' | '\u{a}' | '\u{b}' | '\u{c}' | '\u{d}' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// `String.prototype.trim`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// `!line.trim()`: the line holds only JavaScript whitespace. Invalid UTF-8 decodes to
/// U+FFFD, which is not whitespace, so such a line is never blank.
pub fn is_js_blank(line: &[u8]) -> bool {
    for (i, &b) in line.iter().enumerate() {
        match b {
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => continue,
            0x80.. => {
                return match std::str::from_utf8(&line[i..]) {
                    Ok(rest) => rest.chars().all(is_js_space),
                    Err(_) => false,
                };
            }
            _ => return false,
        }
    }
    true
}

/// Compare two strings in JavaScript's default order (UTF-16 code units).
///
/// Their common start is skipped as bytes; only from the character where they differ on are
/// they compared as UTF-16, where the order can differ from UTF-8's (a character past U+FFFF,
/// a surrogate pair, sorts before U+E000-U+FFFF). With the comparisons in UTF-16 all along
/// (and the sessions moved by the sort, see `corpus::analyze_files`), sorting a corpus's
/// sessions by path kept the main thread alone for 4-8 ms at the end of a scan.
pub fn cmp_utf16(a: &str, b: &str) -> std::cmp::Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let end = x.len().min(y.len());
    // Eight bytes at a time, then one at a time.
    let mut same = 0;
    while same + 8 <= end && x[same..same + 8] == y[same..same + 8] {
        same += 8;
    }
    while same < end && x[same] == y[same] {
        same += 1;
    }
    // Back to the start of the character the first difference is in.
    while !a.is_char_boundary(same) {
        same -= 1;
    }
    a[same..].encode_utf16().cmp(b[same..].encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order of UTF-16 code units, which is not UTF-8's past U+FFFF, on strings that share
    /// starts of every length and differ in characters of every width.
    #[test]
    fn utf16_order_matches_javascript() {
        let chars = [
            "a",
            "z",
            "é",
            "\u{7ff}",
            "日",
            "\u{e000}",
            "\u{ffff}",
            "😀",
            "\u{10000}",
            "\u{10ffff}",
            "𝄞",
        ];
        let mut strings = vec![String::new()];
        for c in chars {
            for d in chars {
                for start in ["", "a", "日", "😀", "x/𝄞/y"] {
                    strings.push(format!("{start}{c}{d}"));
                    strings.push(format!("{start}{c}"));
                }
            }
        }
        for a in &strings {
            for b in &strings {
                assert_eq!(cmp_utf16(a, b), a.encode_utf16().cmp(b.encode_utf16()), "{a:?} {b:?}");
            }
        }
        // Past U+FFFF sorts before U+E000-U+FFFF in UTF-16, after it in UTF-8.
        assert_eq!(cmp_utf16("😀", "\u{ffff}"), std::cmp::Ordering::Less);
        assert_eq!("😀".cmp("\u{ffff}"), std::cmp::Ordering::Greater);
    }

    #[test]
    fn utf16_lengths_match_javascript() {
        assert_eq!(utf16_len("abc"), 3);
        assert_eq!(utf16_len("é"), 1);
        assert_eq!(utf16_len("日本"), 2);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_len("e\u{301}"), 2);
        assert_eq!(utf16_len("\u{fffd}"), 1);
        let mixed = "ascii text, é, 日本, 😀, e\u{301} and more ascii to fill several words 𝄞!";
        assert_eq!(utf16_len(mixed), mixed.encode_utf16().count() as u64);
    }

    /// The block counts equal JavaScript's on text of every kind and length around the block size.
    #[test]
    fn block_counts_match_a_reference() {
        let pieces = [
            "a", "é", "日", "😀", "\"", "\\", "\n", "\u{1}", "\u{1f}", "\t", "\u{7f}", "\u{2028}",
        ];
        let mut seed = 7u64;
        for len in [0, 1, 63, 64, 65, 127, 128, 200, 1000] {
            for _ in 0..20 {
                let mut s = String::new();
                for _ in 0..len {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let p = if seed >> 60 < 9 {
                        "x"
                    } else {
                        pieces[(seed >> 33) as usize % pieces.len()]
                    };
                    s.push_str(p);
                }
                assert_eq!(utf16_len(&s), s.encode_utf16().count() as u64, "{s:?}");
                let json = serde_json::to_string(&s).unwrap();
                assert_eq!(
                    2 + stringified_content_len(&s),
                    json.encode_utf16().count() as u64,
                    "{s:?}"
                );
            }
        }
    }

    #[test]
    fn stringified_lengths_count_escapes() {
        let text = "line one\nline \"two\"\tand a \\ backslash \u{1} \u{1f} é 😀 and a long ascii tail here";
        let expected: u64 = text
            .chars()
            .map(|c| match c {
                '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
                '\0'..='\u{1f}' => 6,
                c => c.len_utf16() as u64,
            })
            .sum::<u64>();
        assert_eq!(stringified_content_len(text), expected);
        assert_eq!(stringified_content_len("a\"b"), 4);
        assert_eq!(stringified_content_len("\u{1}"), 6);
        assert_eq!(stringified_content_len("😀"), 2);
    }

    #[test]
    fn trim_and_blank_follow_string_trim() {
        assert!(is_js_blank(b""));
        assert!(is_js_blank(b" \t\r"));
        assert!(is_js_blank("\u{feff}".as_bytes()));
        assert!(is_js_blank("\u{a0}\u{3000}".as_bytes()));
        assert!(!is_js_blank(b" x "));
        assert!(!is_js_blank(b"\xff"));
        assert_eq!(js_trim("\u{feff} a \u{2028}"), "a");
    }
}
