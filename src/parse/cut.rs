//! Payloads cut out of a line before simd-json sees it, and what stands for them.
//!
//! Image, text and thinking blocks are about two thirds of the bytes of a realistic session
//! file, and pisa only ever needs their lengths; tool-call arguments count only as
//! `JSON.stringify(arguments).length`. [`copy_cutting_payloads`] measures such payloads in
//! place (`measure`) and puts a short string in their place, so simd-json neither finds their
//! structure nor copies and unescapes them. This module owns that format: the encoding here,
//! its reading in [`stands_for`]. A reader that needs what a cut payload held tells the
//! parser through its `tape::Marks`, and the line is read again whole.

use super::measure::{self, Lengths};

/// What stands for a cut payload in a cut line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The content of a string: `"\u0000<units>_<json>"`.
    String(Lengths),
    /// A whole value (tool-call arguments), by its `JSON.stringify` length: `"\u0000=<json>"`.
    Value(u64),
}

/// What the string `s` of a cut line stands for, if it stands for a cut payload. Only cut
/// payloads begin with U+0000 in a cut line: a line holding the escape `\u0000` outside its
/// payloads is never cut.
#[inline]
pub fn stands_for(s: &str) -> Option<Cut> {
    let rest = s.strip_prefix('\0')?;
    if let Some(json) = rest.strip_prefix('=') {
        return json.parse().ok().map(Cut::Value);
    }
    let (units, json) = rest.split_once('_')?;
    Some(Cut::String(Lengths {
        units: units.parse().ok()?,
        json: json.parse().ok()?,
    }))
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

/// Copy `line` into `out`, cutting the payload out of every image, text and thinking block Pi
/// wrote: pisa needs only their lengths (in UTF-16 units, and as `JSON.stringify` writes
/// them), which are measured here, once, without simd-json copying and unescaping the bytes.
/// A payload becomes the string `"\u0000<units>_<json>"`, the arguments of a tool call written
/// as Pi writes it `"\u0000=<json>"` (see `tool_call_arguments`, [`Cut`]).
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
    let mut cut_at = |data: usize, measured: Option<(usize, Cut)>, copied: &mut usize| {
        let Some((bytes, marker)) = measured else { return data };
        copy(out, &line[*copied..data]);
        let mut digits = itoa::Buffer::new();
        match marker {
            Cut::String(c) => {
                out.extend_from_slice(br"\u0000");
                out.extend_from_slice(digits.format(c.units).as_bytes());
                out.push(b'_');
                out.extend_from_slice(digits.format(c.json).as_bytes());
            }
            Cut::Value(json) => {
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
                Payload::Text => measure::json_string(&line[data..]),
            };
            measured
                .filter(|&(bytes, _)| bytes >= MIN_CUT)
                .map(|(bytes, c)| (bytes, Cut::String(c)))
        };
        if rest.starts_with(TOOL_CALL) {
            if let Some((args, bytes, json)) = tool_call_arguments(line, ty + TOOL_CALL.len()) {
                next = cut_at(args, Some((bytes, Cut::Value(json))), &mut copied);
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

/// How Pi writes a tool call up to its id: `{"type":"toolCall","id":"…","name":"…","arguments":{…}}`.
const TOOL_CALL: &[u8] = br#"toolCall","id":""#;

/// Arguments shorter than this are left in place.
const MIN_ARGUMENTS: usize = 64;

/// The arguments of the tool call whose id starts at `id`, if Pi wrote the call in its usual
/// form and `JSON.stringify` would write them back as they are (see
/// [`measure::json_object`]): where they start, their bytes and their
/// `JSON.stringify` length. Pi needs only that length (the estimate counts
/// `JSON.stringify(arguments).length`); the object becomes the string `"\u0000=<length>"`.
fn tool_call_arguments(line: &[u8], id: usize) -> Option<(usize, usize, u64)> {
    let (n, _) = measure::json_string(&line[id..])?;
    let name = id + n;
    let name = name + line[name..].starts_with(br#"","name":""#).then_some(10)?;
    let (n, _) = measure::json_string(&line[name..])?;
    let args = name + n;
    let args = args + line[args..].starts_with(br#"","arguments":"#).then_some(14)?;
    let (bytes, json) = measure::json_object(&line[args..])?;
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
fn measure_base64(payload: &[u8]) -> Option<(usize, Lengths)> {
    let n = memchr::memchr2(b'"', b'\\', payload)?;
    let len = n as u64;
    (payload[n] == b'"' && printable_ascii(&payload[..n])).then_some((n, Lengths { units: len, json: len }))
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn stand_ins_read_back() {
        let mut out = Vec::new();
        let text = "x".repeat(300);
        let line = format!(r#"{{"content":[{{"type":"text","text":"{text}"}}]}}"#);
        assert!(copy_cutting_payloads(line.as_bytes(), &mut out, &Cutter::default()));
        let cut = String::from_utf8(out).unwrap();
        let v: serde_json::Value = serde_json::from_str(&cut).unwrap();
        let s = v["content"][0]["text"].as_str().unwrap();
        assert_eq!(stands_for(s), Some(Cut::String(Lengths { units: 300, json: 300 })));
        assert_eq!(stands_for("\0=42"), Some(Cut::Value(42)));
        assert_eq!(stands_for("plain"), None);
    }
}
