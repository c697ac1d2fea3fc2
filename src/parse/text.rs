//! Making a line that `JSON.parse` accepts acceptable to simd-json too.
//!
//! Two inputs are valid for Pi but rejected by simd-json: bytes that are not UTF-8 (Node
//! decodes them to U+FFFD before parsing) and `\uD800`–`\uDFFF` escapes that do not form a
//! pair (JavaScript strings may hold lone surrogates). Both are repaired only after a
//! parse failed, so well-formed lines never pay for it.

/// What [`repair_line`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Repair {
    /// Invalid UTF-8 was replaced by U+FFFD (maximal subparts, like Node's decoder).
    pub lossy: bool,
    /// Lone surrogate escapes were replaced by `\uFFFF` (one UTF-16 unit, like the original).
    pub lone_surrogates: bool,
}

impl Repair {
    /// Whether anything changed.
    pub fn any(self) -> bool {
        self.lossy || self.lone_surrogates
    }
}

/// Write into `out` the line as Pi's reader would hand it to `JSON.parse`, in a form
/// simd-json accepts with the same string lengths.
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
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        if b[i + 1] != b'u' {
            out.extend_from_slice(&b[i..i + 2]);
            i += 2;
            continue;
        }
        let Some(unit) = hex4(b, i + 2) else {
            out.extend_from_slice(&b[i..i + 2]);
            i += 2;
            continue;
        };
        match unit {
            0xD800..=0xDBFF => {
                let low = if b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u') {
                    hex4(b, i + 8)
                } else {
                    None
                };
                if low.is_some_and(|l| (0xDC00..=0xDFFF).contains(&l)) {
                    out.extend_from_slice(&b[i..i + 12]);
                    i += 12;
                } else {
                    out.extend_from_slice(b"\\uFFFF");
                    repair.lone_surrogates = true;
                    i += 6;
                }
            }
            0xDC00..=0xDFFF => {
                out.extend_from_slice(b"\\uFFFF");
                repair.lone_surrogates = true;
                i += 6;
            }
            _ => {
                out.extend_from_slice(&b[i..i + 6]);
                i += 6;
            }
        }
    }
    repair
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
    fn invalid_utf8_is_replaced_like_node() {
        let (s, r) = fix(b"\"a\xffb\xe2\x82\"");
        assert_eq!(s, "\"a\u{fffd}b\u{fffd}\"");
        assert!(r.lossy);
    }
}
