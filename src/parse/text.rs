//! Making a line that `JSON.parse` accepts acceptable to simd-json too.
//!
//! Three inputs are valid for Pi but rejected by simd-json: bytes that are not UTF-8 (Node
//! decodes them to U+FFFD before parsing), `\uD800`–`\uDFFF` escapes that do not form a
//! pair (JavaScript strings may hold lone surrogates), and number literals beyond the
//! double range (`1e400` is `Infinity` to `JSON.parse`). All are rewritten only after a
//! parse failed, so well-formed lines never pay for it; [`Marks`] tells the readers of the
//! tape how to undo the stand-ins.

use crate::js::Marks;

/// What [`repair_line`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Repair {
    /// Invalid UTF-8 was replaced by U+FFFD (maximal subparts, like Node's decoder).
    pub lossy: bool,
    /// Stand-ins the tape readers must undo.
    pub marks: Marks,
}

impl Repair {
    /// Whether anything changed.
    pub fn any(self) -> bool {
        self.lossy || self.marks.lone_surrogates || self.marks.infinities
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
                let end = i + b[i..]
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
                    repair.marks.infinities = true;
                } else {
                    out.extend_from_slice(token.as_bytes());
                }
                i = end;
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
            b'\\' if b.get(i + 1) == Some(&b'u') => {
                let Some(unit) = hex4(b, i + 2) else {
                    out.extend_from_slice(&b[i..i + 2]);
                    i += 2;
                    continue;
                };
                let paired_low = || {
                    (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
                        .then(|| hex4(b, i + 8))
                        .flatten()
                        .is_some_and(|l| (0xDC00..=0xDFFF).contains(&l))
                };
                if (0xD800..=0xDBFF).contains(&unit) && paired_low() {
                    out.extend_from_slice(&b[i..i + 12]);
                    i += 12;
                } else if (0xD800..=0xDFFF).contains(&unit) {
                    out.extend_from_slice(b"\\uFFFF");
                    repair.marks.lone_surrogates = true;
                    i += 6;
                } else {
                    out.extend_from_slice(&b[i..i + 6]);
                    i += 6;
                }
            }
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

/// How Pi writes the start of a content block; its type follows.
pub const BLOCK_START: &[u8] = br#"{"type":""#;

/// Payloads shorter than this are left in place: cutting them does not pay.
const MIN_CUT: usize = 256;

/// The blocks whose payload is cut: what follows `{"type":"` up to the payload's first byte.
/// Images carry base64; text and thinking blocks carry prose, code and tool output. Together
/// they are about two thirds of the bytes of a realistic session file, and pisa only ever
/// needs their lengths.
const CUT_BLOCKS: [(&[u8], Payload); 3] = [
    (br#"image","data":""#, Payload::Base64),
    (br#"text","text":""#, Payload::Text),
    (br#"thinking","thinking":""#, Payload::Text),
];

#[derive(Clone, Copy)]
enum Payload {
    /// Printable ASCII without `"` or `\`: its bytes are its length every way it is measured.
    Base64,
    /// Any JSON string content.
    Text,
}

/// What a cut payload stood for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// UTF-16 units of the string it holds (`String#length`).
    pub units: u64,
    /// `JSON.stringify(s).length - 2`.
    pub json: u64,
}

/// Copy `line` into `out`, cutting the payload out of every image, text and thinking block Pi
/// wrote: pisa needs only their lengths (in UTF-16 units, and as `JSON.stringify` writes
/// them), which are measured here, once, without simd-json copying and unescaping the bytes.
/// A payload becomes the string `"\u0000<units>_<json>"`; readers that could meet it ask
/// [`crate::js::Marks::cut`], and the line is read again whole if one needs the content.
/// The arguments of a tool call written as Pi writes it become `"\u0000=<json>"` (see
/// [`tool_call_arguments`]; [`crate::js::Marks::cut_value`]).
/// Returns whether anything was cut.
///
/// Only sure cases are cut, so that the cut line is valid JSON exactly when the line is, and
/// parses to the same values but for the payloads:
/// - the pattern `{"type":"…","…":"` can only stand at a value's start in valid JSON (inside
///   a string its quotes would be escaped);
/// - the payload must be a string JSON.parse and simd-json both accept as it is: valid UTF-8,
///   no raw control character, only valid escapes, and no lone surrogate escape (`\uD800` to
///   `\uDFFF` not in a pair: it takes the repair path, which measures it differently);
/// - what stays of the line must not hold the escape `\u0000` (so no other string of the
///   line begins with U+0000).
pub fn copy_cutting_payloads(line: &[u8], out: &mut Vec<u8>, cutter: &Cutter) -> bool {
    out.clear();
    let Some(first) = cutter.blocks.find(line) else {
        out.extend_from_slice(line);
        return false;
    };
    let mut copied = 0;
    let mut cut = false;
    // The escape `\u0000` in what stays of the line (a cut payload may hold it: it is gone).
    // Looked for only in what is copied: a payload begins and ends next to a quote, which no
    // escape spans.
    let mut nul = false;
    let mut at = Some(first);
    let mut copy = |out: &mut Vec<u8>, part: &[u8]| {
        nul |= cutter.nul.find(part).is_some();
        out.extend_from_slice(part);
    };
    // Put the marker in place of the value of `bytes` bytes starting at `data`, if it was
    // measured: where the line goes on.
    let mut cut_at = |data: usize, measured: Option<(usize, Marker)>, copied: &mut usize| {
        let Some((bytes, marker)) = measured else { return data };
        copy(out, &line[*copied..data]);
        let mut digits = itoa::Buffer::new();
        match marker {
            Marker::String(c) => {
                out.extend_from_slice(br"\u0000");
                out.extend_from_slice(digits.format(c.units).as_bytes());
                out.push(b'_');
                out.extend_from_slice(digits.format(c.json).as_bytes());
            }
            Marker::Value(json) => {
                out.extend_from_slice(br#""\u0000="#);
                out.extend_from_slice(digits.format(json).as_bytes());
                out.push(b'"');
            }
        }
        *copied = data + bytes;
        cut = true;
        data + bytes
    };
    while let Some(p) = at {
        let ty = p + BLOCK_START.len();
        let mut next = ty;
        let rest = &line[ty..];
        // The string starting at `data`, measured as `kind`, when it is long enough to cut.
        let string = |data: usize, kind: Payload| {
            let measured = match kind {
                Payload::Base64 => measure_base64(&line[data..]),
                Payload::Text => super::measure::json_string(&line[data..]),
            };
            measured
                .filter(|&(bytes, _)| bytes >= MIN_CUT)
                .map(|(bytes, c)| (bytes, Marker::String(c)))
        };
        if rest.starts_with(TOOL_CALL) {
            if let Some((args, bytes, json)) = tool_call_arguments(line, ty + TOOL_CALL.len()) {
                next = cut_at(args, Some((bytes, Marker::Value(json))), &mut copied);
            }
        } else if let Some(&(pattern, kind)) = CUT_BLOCKS.iter().find(|(pattern, _)| rest.starts_with(pattern)) {
            let data = ty + pattern.len();
            next = cut_at(data, string(data, kind), &mut copied);
            // A thinking block's signature (opaque, never read) follows its text.
            if pattern == CUT_BLOCKS[2].0 && line[next..].starts_with(SIGNATURE) {
                let data = next + SIGNATURE.len();
                next = cut_at(data, string(data, Payload::Text), &mut copied);
            }
        }
        at = cutter.blocks.find(&line[next..]).map(|i| i + next);
    }
    copy(out, &line[copied..]);
    if nul && cut {
        // Another string of the line could begin with U+0000 and pass for a cut payload.
        out.clear();
        out.extend_from_slice(line);
        return false;
    }
    cut
}

/// What stands for a cut value.
enum Marker {
    /// The content of a string: `\u0000<units>_<json>`.
    String(Cut),
    /// A whole value (tool-call arguments): `"\u0000=<json>"`.
    Value(u64),
}

/// How Pi writes a tool call up to its id: `{"type":"toolCall","id":"…","name":"…","arguments":{…}}`.
const TOOL_CALL: &[u8] = br#"toolCall","id":""#;

/// Arguments shorter than this are left in place.
const MIN_ARGUMENTS: usize = 64;

/// The arguments of the tool call whose id starts at `id`, if Pi wrote the call in its usual
/// form and `JSON.stringify` would write them back as they are (see
/// [`super::measure::json_object`]): where they start, their bytes and their
/// `JSON.stringify` length. Pi needs only that length (the estimate counts
/// `JSON.stringify(arguments).length`); the object becomes the string `"\u0000=<length>"`.
fn tool_call_arguments(line: &[u8], id: usize) -> Option<(usize, usize, u64)> {
    let (n, _) = super::measure::json_string(&line[id..])?;
    let name = id + n;
    let name = name + line[name..].starts_with(br#"","name":""#).then_some(10)?;
    let (n, _) = super::measure::json_string(&line[name..])?;
    let args = name + n;
    let args = args + line[args..].starts_with(br#"","arguments":"#).then_some(14)?;
    let (bytes, json) = super::measure::json_object(&line[args..])?;
    (bytes >= MIN_ARGUMENTS).then_some((args, bytes, json))
}

/// What follows a thinking block's text when Pi wrote its signature.
const SIGNATURE: &[u8] = br#"","thinkingSignature":""#;

/// The searchers [`copy_cutting_payloads`] uses, made once per worker.
#[derive(Debug)]
pub struct Cutter {
    blocks: memchr::memmem::Finder<'static>,
    nul: memchr::memmem::Finder<'static>,
}

impl Default for Cutter {
    fn default() -> Cutter {
        Cutter {
            blocks: memchr::memmem::Finder::new(BLOCK_START),
            nul: memchr::memmem::Finder::new(br"\u0000"),
        }
    }
}

/// A base64 payload up to its closing quote, if it is one: its bytes and what they hold.
fn measure_base64(payload: &[u8]) -> Option<(usize, Cut)> {
    let n = memchr::memchr2(b'"', b'\\', payload)?;
    let len = n as u64;
    (payload[n] == b'"' && printable_ascii(&payload[..n])).then_some((n, Cut { units: len, json: len }))
}

/// Every byte is printable ASCII (`0x20..0x80`). Checked 64 bytes at a time without an early
/// exit inside a block, so the compiler vectorizes it: image payloads are a fifth of the bytes
/// of a realistic corpus, and a byte-at-a-time check was 4 % of the scan's profile.
fn printable_ascii(bytes: &[u8]) -> bool {
    let outside = |block: &[u8]| block.iter().fold(false, |bad, &b| bad | !(0x20..0x80).contains(&b));
    let mut blocks = bytes.chunks_exact(64);
    for block in &mut blocks {
        if outside(block) {
            return false;
        }
    }
    !outside(blocks.remainder())
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
    fn printable_ascii_finds_any_byte_outside_at_any_place() {
        for len in [0, 1, 63, 64, 65, 200] {
            let base = vec![b'A'; len];
            assert!(printable_ascii(&base));
            for at in 0..len {
                for bad in [0x00, 0x1f, 0x80, 0xff] {
                    let mut v = base.clone();
                    v[at] = bad;
                    assert!(!printable_ascii(&v), "{len} bytes, {bad:#x} at {at}");
                }
                let mut v = base.clone();
                v[at] = b' ';
                v[len - 1 - at] = 0x7f;
                assert!(printable_ascii(&v));
            }
        }
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
        assert!(r.marks.infinities);
        assert!(!r.marks.lone_surrogates);
    }

    #[test]
    fn invalid_utf8_is_replaced_like_node() {
        let (s, r) = fix(b"\"a\xffb\xe2\x82\"");
        assert_eq!(s, "\"a\u{fffd}b\u{fffd}\"");
        assert!(r.lossy);
    }
}
