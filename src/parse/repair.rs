//! Making a line that `JSON.parse` accepts acceptable to simd-json too.
//!
//! Three inputs are valid for Pi but rejected by simd-json: bytes that are not UTF-8 (Node
//! decodes them to U+FFFD before parsing), `\uD800`–`\uDFFF` escapes that do not form a
//! pair (JavaScript strings may hold lone surrogates), and number literals beyond the
//! double range (`1e400` is `Infinity` to `JSON.parse`). All are rewritten only after a
//! parse failed, so well-formed lines never pay for it; [`Repair::marks`] tells the readers of
//! the tape how to undo the stand-ins.

use super::tape::Marks;

/// What [`repair_line`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Repair {
    /// Invalid UTF-8 was replaced by U+FFFD (maximal subparts, like Node's decoder).
    pub lossy: bool,
    /// Lone surrogates stand as U+FFFF.
    pub lone_surrogates: bool,
    /// Numbers beyond the double range stand as `±f64::MAX`.
    pub infinities: bool,
}

impl Repair {
    /// Whether anything changed.
    pub fn any(self) -> bool {
        self.lossy || self.lone_surrogates || self.infinities
    }

    /// What the tape readers must undo.
    pub fn marks(self) -> Marks<'static> {
        Marks::stand_ins(self.lone_surrogates, self.infinities)
    }
}

/// Write into `out` the line as Pi's reader would hand it to `JSON.parse`, in a form
/// simd-json accepts with the same string lengths: lone surrogates become `\uFFFF` (one
/// UTF-16 unit, like the original) and out-of-range numbers `±1.7976931348623157e308`.
pub fn repair_line(line: &[u8], out: &mut Vec<u8>) -> Repair {
    let mut repair = Repair::default();
    out.clear();
    let text = match std::str::from_utf8(line) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => {
            repair.lossy = true;
            String::from_utf8_lossy(line)
        }
    };
    let b = text.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !in_string {
            if c == b'"' {
                in_string = true;
            } else if c == b'-' || c.is_ascii_digit() {
                i = copy_number(&text, i, out, &mut repair);
                continue;
            }
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_string = false;
                out.push(c);
                i += 1;
            }
            b'\\' if b.get(i + 1) == Some(&b'u') => i = copy_unicode_escape(b, i, out, &mut repair),
            b'\\' if i + 1 < b.len() => {
                out.extend_from_slice(&b[i..i + 2]);
                i += 2;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    repair
}

/// Copy the number literal at `i` of `text`, a stand-in when it is beyond the double range;
/// where the line goes on.
fn copy_number(text: &str, i: usize, out: &mut Vec<u8>, repair: &mut Repair) -> usize {
    let end = i + text.as_bytes()[i..]
        .iter()
        .take_while(|&&d| d.is_ascii_digit() || b"+-.eE".contains(&d))
        .count();
    let token = &text[i..end];
    if token.parse::<f64>().is_ok_and(f64::is_infinite) {
        out.extend_from_slice(if token.starts_with('-') {
            b"-1.7976931348623157e308"
        } else {
            b"1.7976931348623157e308"
        });
        repair.infinities = true;
    } else {
        out.extend_from_slice(token.as_bytes());
    }
    end
}

/// Copy the `\u` escape at `i` of a string (with its pair), `\uFFFF` for a lone surrogate;
/// where the line goes on.
fn copy_unicode_escape(b: &[u8], i: usize, out: &mut Vec<u8>, repair: &mut Repair) -> usize {
    let Some(unit) = hex4(b, i + 2) else {
        out.extend_from_slice(&b[i..i + 2]);
        return i + 2;
    };
    let paired_low = || {
        (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
            .then(|| hex4(b, i + 8))
            .flatten()
            .is_some_and(|l| (0xDC00..=0xDFFF).contains(&l))
    };
    if (0xD800..=0xDBFF).contains(&unit) && paired_low() {
        out.extend_from_slice(&b[i..i + 12]);
        i + 12
    } else if (0xD800..=0xDFFF).contains(&unit) {
        out.extend_from_slice(b"\\uFFFF");
        repair.lone_surrogates = true;
        i + 6
    } else {
        out.extend_from_slice(&b[i..i + 6]);
        i + 6
    }
}

fn hex4(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at + 4)?;
    let s = std::str::from_utf8(s).ok()?;
    u16::from_str_radix(s, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(s: &[u8]) -> (String, Repair) {
        let mut out = Vec::new();
        let r = repair_line(s, &mut out);
        (String::from_utf8(out).unwrap(), r)
    }

    #[test]
    fn lone_surrogates_become_one_unit_placeholders() {
        assert_eq!(fix(br#""\ud83d""#).0, r#""\uFFFF""#);
        assert_eq!(fix(br#""\udc00x""#).0, r#""\uFFFFx""#);
        let (s, r) = fix(br#""\ud83d\ude00""#);
        assert_eq!(s, r#""\ud83d\ude00""#);
        assert!(!r.any());
        assert_eq!(fix(br#""\\ud83d""#).0, r#""\\ud83d""#);
        assert_eq!(fix(br#""\ud83d\u0041""#).0, r#""\uFFFF\u0041""#);
    }

    #[test]
    fn numbers_beyond_the_double_range_become_marked_maxima() {
        let (s, r) = fix(br#"{"a":1e400,"b":[-2E999],"c":"1e400","d":1.5}"#);
        assert_eq!(
            s,
            r#"{"a":1.7976931348623157e308,"b":[-1.7976931348623157e308],"c":"1e400","d":1.5}"#
        );
        assert!(r.infinities);
        assert!(!r.lone_surrogates);
    }

    #[test]
    fn invalid_utf8_is_replaced_like_node() {
        let (s, r) = fix(b"\"a\xffb\xe2\x82\"");
        assert_eq!(s, "\"a\u{fffd}b\u{fffd}\"");
        assert!(r.lossy);
    }
}
