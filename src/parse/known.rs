//! Lines of a shape Pi always writes, read straight from their bytes, without a simd-json tape.
//!
//! Tool results, user and assistant messages are nearly all of a session's lines and bytes, and
//! Pi writes them in one fixed form (`JSON.stringify` of objects built in one order):
//!
//! ```text
//! {"type":"message",["id":"…","parentId":"…"|null,]"timestamp":"…","message":{"role":"toolResult",
//!  "toolCallId":"…","toolName":"…","content":[…][,"details":{…}],"isError":true|false[,"durationMs":N],"timestamp":N}}
//! {"type":"message",[…]"message":{"role":"user","content":"…"|[…],"timestamp":N}}
//! {"type":"message",[…]"message":{"role":"assistant","content":[…],"api":"…","provider":"…","model":"…",
//!  "usage":{…},"stopReason":"…","timestamp":N[,"responseId":"…"][,"responseModel":"…"][,"thinkingLevel":"…"][,"errorMessage":"…"]}}
//! ```
//!
//! with content blocks `{"type":"text","text":"…"[,"textSignature":"…"]}`,
//! `{"type":"thinking","thinking":"…"[,"thinkingSignature":"…"][,"redacted":B]}`,
//! `{"type":"toolCall","id":"…","name":"…","arguments":{…}}` and
//! `{"type":"image","data":"…","mimeType":"…"}`. Of such a line pisa keeps the ids, the
//! timestamps, the model and the usage, and the lengths of the texts: [`message`] reads them in
//! one pass, measuring each text where it finds it (`measure`), where the general path copies the
//! line, cuts its payloads and has simd-json build a tape of the rest. Only an assistant message's
//! usage object (numbers, read as simd-json reads them) goes through simd-json.
//!
//! Exact by construction: [`message`] takes a line only when every byte of it matches the form
//! above, so that the line is valid JSON, parses to exactly these keys (none repeated) and
//! `extract` would read from it exactly what is read here; anything else (an escape in an id or a
//! model name, a number not written as a plain integer, a tool result's `usage`, another block
//! type, a space, a `\r`, a lone surrogate) returns `None`, and the line takes the general path.
//! The tests compare both paths on lines varied at every place.

use super::entry::{Body, ContentChars, Entry, EntryType, Message, ResponseId, Role, Usage};
use super::measure;
use crate::js::{Key, StrJv};

/// The entry of a tool-result, user or assistant line written in Pi's form (see the module) at
/// the start of `line`, and the line's length; `None` for any other line. `line` may run on
/// past the line's end into the lines after it: the line must end with a newline or with
/// `line` itself, and is found in the same pass (nothing read here takes a newline: strings
/// hold no control character, numbers and literals are what they are, and a usage object for
/// `usage` is looked for before the newline). `usage` reads an assistant message's usage
/// object (given as its bytes, valid JSON) as `extract::usage_of` reads it; `None` sends the
/// line the general way.
pub fn message(
    line: &[u8],
    line_no: u32,
    offset: u64,
    usage: &mut dyn FnMut(&[u8]) -> Option<Usage>,
) -> Option<(Entry, usize)> {
    let mut l = Cursor { b: line, at: 0 };
    l.lit(br#"{"type":"message","#)?;
    let (mut id, mut parent) = (Key::Undefined, Key::Undefined);
    if l.lit(br#""id":""#).is_some() {
        id = Key::Str(l.plain()?.into());
        l.lit(br#","parentId":"#)?;
        parent = if l.lit(b"null").is_some() {
            Key::Null
        } else {
            l.lit(b"\"")?;
            Key::Str(l.plain()?.into())
        };
        l.lit(b",")?;
    }
    l.lit(br#""timestamp":""#)?;
    let timestamp = l.plain()?;
    l.lit(br#","message":{"role":""#)?;
    // Filled where it lies on the heap (a message is half a kilobyte: built on the stack, it
    // was copied into its box).
    let mut m = Message::boxed();
    m.has_content_key = true;
    if l.lit(br#"toolResult","toolCallId":""#).is_some() {
        l.measured()?;
        l.lit(br#","toolName":""#)?;
        l.measured()?;
        l.lit(br#","content":"#)?;
        m.role = Role::ToolResult;
    } else if l.lit(br#"user","content":"#).is_some() {
        m.role = Role::User;
    } else {
        l.lit(br#"assistant","content":"#)?;
        m.role = Role::Assistant;
    }
    (m.content, m.tool_calls) = l.content()?;
    match m.role {
        Role::ToolResult => {
            if l.lit(br#","details":"#).is_some() {
                l.details()?;
            }
            l.lit(br#","isError":"#)?;
            l.lit(b"true").or_else(|| l.lit(b"false"))?;
            if l.lit(br#","durationMs":"#).is_some() {
                l.integer()?;
            }
            l.lit(br#","timestamp":"#)?;
            m.timestamp_ms = Some(l.integer()?);
        }
        Role::User => {
            l.lit(br#","timestamp":"#)?;
            m.timestamp_ms = Some(l.integer()?);
        }
        _ => {
            l.lit(br#","api":""#)?;
            m.api = Some(l.plain()?.into());
            l.lit(br#","provider":""#)?;
            m.provider = StrJv::str(l.plain()?);
            l.lit(br#","model":""#)?;
            m.model = StrJv::str(l.plain()?);
            l.lit(br#","usage":"#)?;
            let rest = l.rest();
            let (u, n) = match pi_usage(rest) {
                Some(read) => read,
                None => {
                    // Within the line: JSON takes a newline between tokens, a line does not.
                    let line_end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
                    let n = object_end(&rest[..line_end])?;
                    (usage(&rest[..n])?, n)
                }
            };
            m.usage = Some(u);
            l.at += n;
            (m.has_usage_key, m.usage_truthy) = (true, true);
            l.lit(br#","stopReason":""#)?;
            m.stop_reason = StrJv::str(l.plain()?);
            l.lit(br#","timestamp":"#)?;
            m.timestamp_ms = Some(l.integer()?);
            if l.lit(br#","responseId":""#).is_some() {
                m.response_id = Some(ResponseId::new(l.plain()?));
            }
            if l.lit(br#","responseModel":""#).is_some() {
                m.response_model = StrJv::str(l.plain()?);
            }
            if l.lit(br#","thinkingLevel":""#).is_some() {
                m.thinking_level = Some(l.plain()?.into());
            }
            if l.lit(br#","errorMessage":""#).is_some() {
                l.measured()?;
            }
        }
    }
    l.lit(b"}}")?;
    if line.get(l.at).is_some_and(|&b| b != b'\n') {
        return None;
    }
    let entry = Entry {
        line: line_no,
        offset,
        ty: EntryType::Message,
        id,
        parent,
        timestamp: Some(timestamp.into()),
        body: Body::Message(m),
    };
    Some((entry, l.at))
}

/// An assistant message's usage object at the start of `bytes` in the form Pi writes it, read as
/// `extract::usage_of` reads it, and its length; `None` for any other object (which then goes
/// through simd-json):
///
/// ```text
/// {"input":N,"output":N,"cacheRead":N,"cacheWrite":N[,"cacheWrite1h":N][,"reasoning":N][,"totalTokens":N],
///  "cost":{"input":F,"output":F,"cacheRead":F,"cacheWrite":F,"total":F[,"totalFromProvider":B]}
///  [,"cacheWrite1h":N][,"reasoning":N]}
/// ```
///
/// with `N` an integer of at most 15 digits and `F` a non-negative number as `JSON.stringify`
/// writes one (`0.0001236`, `5e-7`). Parsed to the nearest double, as `JSON.parse` and simd-json
/// parse it. Every key read once, no other key: nothing is odd, nothing throws.
fn pi_usage(bytes: &[u8]) -> Option<(Usage, usize)> {
    let mut c = Cursor { b: bytes, at: 0 };
    let mut u = Usage {
        input: f64::NAN,
        output: f64::NAN,
        cache_read: f64::NAN,
        cache_write: f64::NAN,
        cache_write_1h: f64::NAN,
        reasoning: f64::NAN,
        total_tokens: f64::NAN,
        has_cost: true,
        cost_input: f64::NAN,
        cost_output: f64::NAN,
        cost_cache_read: f64::NAN,
        cost_cache_write: f64::NAN,
        cost_total: f64::NAN,
        cost_from_provider: false,
        odd: None,
        join_throws: false,
    };
    // Each key's compare written out (a loop over a table of keys compared through `memcmp`,
    // its lengths unknown when compiling).
    macro_rules! read {
        ($how:ident: $($key:literal => $field:expr),+ $(,)?) => {
            $(
                c.lit($key)?;
                $field = c.$how()?;
            )+
        };
    }
    read!(integer:
        br#"{"input":"# => u.input,
        br#","output":"# => u.output,
        br#","cacheRead":"# => u.cache_read,
        br#","cacheWrite":"# => u.cache_write,
    );
    if c.lit(br#","cacheWrite1h":"#).is_some() {
        u.cache_write_1h = c.integer()?;
    }
    if c.lit(br#","reasoning":"#).is_some() {
        u.reasoning = c.integer()?;
    }
    if c.lit(br#","totalTokens":"#).is_some() {
        u.total_tokens = c.integer()?;
    }
    read!(number:
        br#","cost":{"input":"# => u.cost_input,
        br#","output":"# => u.cost_output,
        br#","cacheRead":"# => u.cost_cache_read,
        br#","cacheWrite":"# => u.cost_cache_write,
        br#","total":"# => u.cost_total,
    );
    if c.lit(br#","totalFromProvider":"#).is_some() {
        u.cost_from_provider = c.lit(b"true").is_some();
        if !u.cost_from_provider {
            c.lit(b"false")?;
        }
    }
    c.lit(b"}")?;
    // Set after the cost by some providers' code, each at most once in all (`JSON.parse` keeps
    // the last of a repeated key: simd-json's reading is left to decide).
    if c.lit(br#","cacheWrite1h":"#).is_some() {
        let n = c.integer()?;
        u.cache_write_1h = u.cache_write_1h.is_nan().then_some(n)?;
    }
    if c.lit(br#","reasoning":"#).is_some() {
        let n = c.integer()?;
        u.reasoning = u.reasoning.is_nan().then_some(n)?;
    }
    c.lit(b"}")?;
    Some((u, c.at))
}

/// A number token at the start of some bytes, of the form `[0-9]+(.[0-9]+)?(e[+-][0-9]+)?`, read
/// in one pass by [`decimal`].
#[derive(Debug, Clone, Copy)]
struct Decimal {
    /// The token's length.
    len: usize,
    /// The length of its integer part.
    int: usize,
    /// Its digits as an integer, `None` past 19 significant digits.
    w: Option<u64>,
    /// The power of ten to scale `w` by (saturated far out of range).
    k: i32,
}

/// Add the digits from `from` on to `w` (wrapping: `w` is only used for up to 19 significant
/// digits, counted in `significant`); how many there were.
fn digits(bytes: &[u8], from: usize, w: &mut u64, significant: &mut u32) -> usize {
    let mut i = from;
    while let Some(d) = bytes.get(i).map(|c| c.wrapping_sub(b'0')).filter(|&d| d < 10) {
        // Leading zeros add no digit to `w`.
        *significant += u32::from(*significant > 0 || d != 0);
        *w = w.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    i - from
}

/// The number token of the form [`Decimal`] at the start of `bytes`, if there is one whose
/// integer part has no leading zero.
fn decimal(bytes: &[u8]) -> Option<Decimal> {
    let (mut w, mut significant) = (0u64, 0u32);
    let int = digits(bytes, 0, &mut w, &mut significant);
    if int == 0 || (int > 1 && bytes[0] == b'0') {
        return None;
    }
    let (mut len, mut k) = (int, 0i32);
    if bytes.get(len) == Some(&b'.') {
        let fraction = digits(bytes, len + 1, &mut w, &mut significant);
        if fraction == 0 {
            return None;
        }
        len += 1 + fraction;
        k = -i32::try_from(fraction).unwrap_or(i32::MAX);
    }
    if bytes.get(len) == Some(&b'e') {
        let negative = match bytes.get(len + 1) {
            Some(b'-') => true,
            Some(b'+') => false,
            _ => return None,
        };
        let (mut e, mut e_significant) = (0u64, 0u32);
        let n = digits(bytes, len + 2, &mut e, &mut e_significant);
        if n == 0 {
            return None;
        }
        len += 2 + n;
        // An exponent of more than four digits is far out of the fast path's range.
        let e = if e_significant > 4 { 100_000 } else { e as i32 };
        k = k.saturating_add(if negative { -e } else { e });
    }
    Some(Decimal {
        len,
        int,
        w: (significant <= 19).then_some(w),
        k,
    })
}

/// The double nearest a [`Decimal`] when Clinger's fast path gives it: its digits as an
/// integer `w` of at most 2^53 and a power of ten `10^k` with `|k| <= 22`, both exact doubles,
/// so that the one rounding of `w * 10^k` or `w / 10^-k` is the nearest double (W. D. Clinger,
/// "How to Read Floating Point Numbers Accurately", 1990). `None` when it does not (the caller
/// parses the token in full).
fn exact_decimal(d: &Decimal) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
        1e20, 1e21, 1e22,
    ];
    let w = d.w.filter(|&w| w <= 1 << 53)? as f64;
    if !(-22..=22).contains(&d.k) {
        return None;
    }
    Some(if d.k < 0 {
        w / POW10[d.k.unsigned_abs() as usize]
    } else {
        w * POW10[d.k as usize]
    })
}

/// The length of the object at the start of `bytes` if it is one whose strings hold no escape:
/// up to the brace that closes it (braces in strings skipped). Whether the object is valid JSON is
/// left to the reader of the bytes: if it is, these are all its bytes (a valid object ends where
/// its braces balance), and a prefix ending inside a string is never valid.
fn object_end(bytes: &[u8]) -> Option<usize> {
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    let mut i = 0;
    loop {
        match *bytes.get(i)? {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b'"' => {
                let n = memchr::memchr2(b'"', b'\\', &bytes[i + 1..])?;
                if bytes[i + 1 + n] != b'"' {
                    return None;
                }
                i += n + 1;
            }
            _ => {}
        }
        i += 1;
    }
}

/// A position in a line, moved on by what is read.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a [u8] {
        &self.b[self.at..]
    }

    /// The bytes `s`, taken if they come next. Inlined, the compare is of a length known
    /// when compiling: a few loads, not a call to `memcmp`.
    #[inline(always)]
    fn lit(&mut self, s: &[u8]) -> Option<()> {
        self.rest().starts_with(s).then(|| self.at += s.len())
    }

    /// The rest of a string whose opening quote was read, if it holds no escape, no control
    /// character and only UTF-8: its text, which is what `JSON.parse` makes of it. The closing
    /// quote is read too.
    fn plain(&mut self) -> Option<&'a str> {
        let rest = self.rest();
        let n = memchr::memchr2(b'"', b'\\', rest)?;
        let text = &rest[..n];
        if rest[n] != b'"' {
            return None;
        }
        // Ids, times and model names are printable ASCII: one test of each byte.
        let text = if text.iter().all(|&c| (0x20..0x80).contains(&c)) {
            // SAFETY: ASCII is UTF-8.
            unsafe { std::str::from_utf8_unchecked(text) }
        } else if text.iter().any(|&c| c < 0x20) {
            return None;
        } else {
            std::str::from_utf8(text).ok()?
        };
        self.at += n + 1;
        Some(text)
    }

    /// The rest of a string whose opening quote was read, if `measure` takes it (valid as it is
    /// for `JSON.parse` and simd-json alike): its length in UTF-16 units. The closing quote is
    /// read too.
    fn measured(&mut self) -> Option<u64> {
        let (n, lengths) = measure::json_string(self.rest())?;
        self.at += n + 1;
        Some(lengths.units)
    }

    /// A non-negative integer of at most 15 digits, written as `JSON.stringify` writes it: its
    /// value (exact as a double, as simd-json's and `JSON.parse`'s). What follows must not be a
    /// part of a number; the literal the caller reads next makes sure of that.
    fn integer(&mut self) -> Option<f64> {
        let rest = self.rest();
        // Read and added up in one pass; 15 digits or fewer do not wrap.
        let (mut value, mut significant) = (0u64, 0u32);
        let n = digits(rest, 0, &mut value, &mut significant);
        if n == 0 || n > 15 || (n > 1 && rest[0] == b'0') {
            return None;
        }
        self.at += n;
        Some(value as f64)
    }

    /// A non-negative number as `JSON.stringify` writes one (`0`, `12`, `0.0001236`, `5e-7`,
    /// `1e+21`), to the nearest double (as `JSON.parse` and simd-json read it). An integer of
    /// more than 15 digits is left to simd-json. What follows must not be a part of a number.
    fn number(&mut self) -> Option<f64> {
        let rest = self.rest();
        let d = decimal(rest)?;
        let end = d.len;
        if end == d.int {
            return self.integer();
        }
        let value = match exact_decimal(&d) {
            Some(v) => v,
            // SAFETY: the token is ASCII digits, `.`, `e`, `+` and `-`.
            None => unsafe { std::str::from_utf8_unchecked(&rest[..end]) }.parse().ok()?,
        };
        // Beyond the doubles `JSON.parse` gives Infinity, which simd-json refuses: the repair's.
        if !value.is_finite() {
            return None;
        }
        self.at += end;
        Some(value)
    }

    /// A message's content: a string or an array of text, image, thinking and tool-call blocks
    /// as Pi writes them, reduced as `extract::content_chars` reduces it; and its tool calls.
    fn content(&mut self) -> Option<(ContentChars, u32)> {
        if self.lit(b"\"").is_some() {
            let n = self.measured()?;
            let chars = ContentChars {
                as_content: Some(n as f64),
                as_assistant: Some(0.0),
                text_len: Some(n),
                nullish: false,
                is_string: true,
            };
            return Some((chars, 0));
        }
        self.lit(b"[")?;
        let (mut content, mut assistant, mut text, mut texts, mut calls) = (0.0, 0.0, 0u64, 0u64, 0u32);
        if self.lit(b"]").is_none() {
            loop {
                if self.lit(br#"{"type":"text","text":""#).is_some() {
                    let n = self.measured()?;
                    if self.lit(br#","textSignature":""#).is_some() {
                        self.measured()?;
                    }
                    // `block.text &&` guards the content count: an empty text adds nothing, as 0 does.
                    content += n as f64;
                    assistant += n as f64;
                    text += n;
                    texts += 1;
                } else if self.lit(br#"{"type":"thinking","thinking":""#).is_some() {
                    assistant += self.measured()? as f64;
                    if self.lit(br#","thinkingSignature":""#).is_some() {
                        self.measured()?;
                    }
                    if self.lit(br#","redacted":"#).is_some() {
                        self.lit(b"true").or_else(|| self.lit(b"false"))?;
                    }
                } else if self.lit(br#"{"type":"toolCall","id":""#).is_some() {
                    self.measured()?;
                    self.lit(br#","name":""#)?;
                    let name = self.measured()?;
                    self.lit(br#","arguments":"#)?;
                    let (n, arguments) = measure::json_object(self.rest())?;
                    self.at += n;
                    // In this order: `chars += name.length + JSON.stringify(arguments).length`.
                    assistant += name as f64;
                    assistant += arguments as f64;
                    calls += 1;
                } else {
                    self.lit(br#"{"type":"image","data":""#)?;
                    self.measured()?;
                    self.lit(br#","mimeType":""#)?;
                    self.measured()?;
                    content += 4800.0;
                }
                self.lit(b"}")?;
                if self.lit(b"]").is_some() {
                    break;
                }
                self.lit(b",")?;
            }
        }
        let chars = ContentChars {
            as_content: Some(content),
            as_assistant: Some(assistant),
            text_len: Some(text + texts.saturating_sub(1)),
            nullish: false,
            is_string: false,
        };
        Some((chars, calls))
    }

    /// A tool result's `details` that holds no subagent usage: an object `measure::json_object`
    /// takes (valid JSON, no key repeated or escaped), none of whose keys (at any depth) is one
    /// `extract` reads children from.
    fn details(&mut self) -> Option<()> {
        let (n, _) = measure::json_object(self.rest())?;
        let object = &self.rest()[..n];
        // Searchers built once: building one costs more than searching a small object.
        static NAMES: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 3]> = std::sync::LazyLock::new(|| {
            [&br#""runId":"#[..], br#""results":"#, br#""completions":"#].map(memchr::memmem::Finder::new)
        });
        if NAMES.iter().any(|name| name.find(object).is_some()) {
            return None;
        }
        self.at += n;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ParsedFile, Scratch, parse_file};

    const H: &str = r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#;

    /// A file parsed with the fast paths (known lines, cut payloads) and whole by simd-json.
    fn parse_both(text: &[u8]) -> (ParsedFile, ParsedFile) {
        let mut whole = Scratch {
            cut_payloads: false,
            ..Scratch::default()
        };
        (parse_file(text, &mut Scratch::default()), parse_file(text, &mut whole))
    }

    /// Pieces of text payloads: escapes of every kind, characters of one to four bytes, and (from
    /// `BAD_TEXT` on) what `measure` refuses: lone surrogates, control characters, bytes that are
    /// not UTF-8, invalid escapes.
    const TEXT: [&[u8]; 16] = [
        b"plain words ",
        b"\\n",
        b"\\\"",
        b"\\\\",
        b"\\/",
        b"\\u00e9",
        b"\\uD83D\\uDE00",
        "\u{e9}\u{65e5}\u{1F600}".as_bytes(),
        b"\\t\\u001f",
        b"x",
        b"\x7f",
        b"\\ud800",
        b"\x01",
        b"\xff",
        b"\\x",
        b"\\u12",
    ];
    const BAD_TEXT: usize = 11;

    fn text(pieces: &[usize], bad: Option<usize>) -> Vec<u8> {
        let mut t: Vec<u8> = pieces
            .iter()
            .flat_map(|&p| TEXT[p % BAD_TEXT].iter().copied())
            .collect();
        if let Some(b) = bad {
            t.extend_from_slice(TEXT[BAD_TEXT + b % (TEXT.len() - BAD_TEXT)]);
        }
        t
    }

    /// The variants of each part of a line; the first is Pi's form, the others either still Pi's
    /// form or JSON the fast path must leave to simd-json (or not JSON at all). Parts: 0 start,
    /// 1 ids, 2 timestamp, 3 role, 4 content, 5 details, 6 usage, 7 isError, 8 durationMs,
    /// 9 message timestamp, 10 a repeated key, 11 end, 12 api/provider/model, 13 assistant extras.
    fn line(choice: &[usize; 14], payload: &[u8]) -> Vec<u8> {
        let pick = |i: usize, options: &[&str]| options[choice[i] % options.len()].to_string();
        let mut l = Vec::new();
        let mut put = |s: &str| l.extend_from_slice(s.as_bytes());
        put(&pick(
            0,
            &[
                r#"{"type":"message","#,
                r#"{ "type":"message","#,
                r#"{"type":"custom","#,
            ],
        ));
        put(&pick(
            1,
            &[
                r#""id":"a1b2c3d4","parentId":"0f0e0d0c","#,
                "",
                r#""id":"a1","parentId":null,"#,
                r#""id":"a\u0062","parentId":"p","#,
                r#""id":"é","parentId":"日本","#,
                r#""id":"a","parentId":1,"#,
                r#""id":{"o":1},"parentId":"p","#,
                r#""id":"a","#,
                r#""id":"","parentId":"","#,
                // A raw control character: not JSON.
                "\"id\":\"a\tb\",\"parentId\":\"p\",",
            ],
        ));
        put(&pick(
            2,
            &[
                r#""timestamp":"2026-01-01T00:00:00.000Z","#,
                r#""timestamp":"","#,
                r#""timestamp":5,"#,
                r#""timestamp":"t\n","#,
            ],
        ));
        let role = choice[3] % 5;
        put(match role {
            0 => r#""message":{"role":"toolResult","toolCallId":"toolu_01","toolName":"read","content":"#,
            1 => r#""message":{"role":"user","content":"#,
            2 => r#""message":{"role":"toolResult","toolCallId":"c\"1","toolName":"bash\u00e9","content":"#,
            3 => r#""message":{"role":"assistant","content":"#,
            _ => r#""message":{"role":"custom","content":"#,
        });
        let block = |l: &mut Vec<u8>, start: &[u8], end: &[u8]| {
            l.extend_from_slice(start);
            l.extend_from_slice(payload);
            l.extend_from_slice(end);
        };
        let text = br#"{"type":"text","text":""#;
        match choice[4] % 15 {
            0 => block(&mut l, &[b"[", &text[..]].concat(), b"\"}]"),
            1 => block(&mut l, b"\"", b"\""),
            2 => l.extend_from_slice(b"[]"),
            3 => {
                block(&mut l, &[b"[", &text[..]].concat(), b"\"}");
                l.extend_from_slice(br#",{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"text","text":""}"#);
                block(&mut l, &[b",", &text[..]].concat(), b"\"}]");
            }
            4 => l.extend_from_slice(br#"[{"type":"image","data":"AAAA","mimeType":"image/jpeg"}]"#),
            5 => block(&mut l, &[b"[", &text[..]].concat(), br#"","textSignature":"{\"v\":1}"}]"#),
            6 => l.extend_from_slice(br#"[{"type":"thinking","thinking":"t"},null]"#),
            7 => l.extend_from_slice(b"null"),
            8 => l.extend_from_slice(br#"[{"type":"text","text":5}]"#),
            9 => {
                block(&mut l, br#"[{"type":"thinking","thinking":""#, br#"","thinkingSignature":"EqQB+/="},"#);
                block(
                    &mut l,
                    br#"{"type":"toolCall","id":"toolu_1","name":"edit","arguments":{"path":"a.rs","edits":[{"oldText":""#,
                    br#"","n":[1,2.5,-3,true,null]}]}},{"type":"text","text":"done"}]"#,
                );
            }
            10 => l.extend_from_slice(
                br#"[{"type":"thinking","thinking":"","thinkingSignature":"x","redacted":true},{"type":"toolCall","id":"c","name":"","arguments":{}}]"#,
            ),
            11 => l.extend_from_slice(br#"[{"type":"toolCall","id":"c","name":"ls","arguments":{"a":1.0}}]"#),
            12 => l.extend_from_slice(br#"[{"type":"toolCall","id":"c","name":"ls","arguments":{"p":"."},"partialJson":"{"}]"#),
            13 => l.extend_from_slice(br#"[{"type":"thinking","thinking":"","redacted":}]"#),
            _ => l.extend_from_slice(br#"[{"type":"toolCall","id":"c","name":"ls","arguments":{ "p":"."}}]"#),
        }
        let mut put = |s: &str| l.extend_from_slice(s.as_bytes());
        let usage = [
            r#"{"input":2775,"output":141,"cacheRead":0,"cacheWrite":0,"totalTokens":2916,"cost":{"input":0.013875000000000002,"output":0.0035250000000000004,"cacheRead":0,"cacheWrite":0,"total":0.017400000000000002}}"#,
            r#"{"input":1.0,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3}"#,
            r#"{"input":"5","output":[2],"cacheRead":null,"cacheWrite":{},"totalTokens":true,"cost":{"total":"x"}}"#,
            r#"null"#,
            r#"{}"#,
            r#"{"input":1,"input":2}"#,
            r#"{"input":0.1,"output":1e-7,"cacheRead":123456789012345680000,"cacheWrite":5e-324,"reasoning":17,"cacheWrite1h":3,"cost":{"totalFromProvider":true,"total":1.7976931348623157e+308}}"#,
            r#"{"input":1,"note":"}{","cost":{"total":2}}"#,
            r#"{"input":1,"note":"\"}"}"#,
            r#"{"input":1,}"#,
            r#"{"input":1 }"#,
        ];
        match role {
            0 | 2 => {
                put(&pick(
                    5,
                    &[
                        "",
                        r#","details":{"diff":"- a\n+ b","firstChangedLine":3}"#,
                        r#","details":{"truncation":{"truncated":true,"truncatedBy":"lines","outputLines":2000}}"#,
                        r#","details":{"runId":"r1","results":[{"usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"cost":0.5}}]}"#,
                        r#","details":{"completions":[{"runId":"r2","results":[]}]}"#,
                        r#","details":{"a":1.0}"#,
                        r#","details":{"a":1,"a":2}"#,
                        r#","details":null"#,
                        r#","details":{"x":[1,{"y":"z"}],"n":-0.5}"#,
                    ],
                ));
                if choice[6] % 2 == 1 {
                    put(&format!(r#","usage":{}"#, usage[0]));
                }
                put(&pick(
                    7,
                    &[
                        r#","isError":false"#,
                        r#","isError":true"#,
                        r#","isError":0"#,
                        "",
                        r#","isError":"#,
                    ],
                ));
                put(&pick(
                    8,
                    &[
                        "",
                        r#","durationMs":12"#,
                        r#","durationMs":012"#,
                        r#","durationMs":1.5"#,
                        r#","durationMs":-3"#,
                    ],
                ));
            }
            3 => {
                put(&pick(
                    12,
                    &[
                        r#","api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5""#,
                        r#","api":"openai-responses","provider":"openai","model":"gpt-5.1-codex""#,
                        r#","api":"a","provider":"p","model":"a\u0062""#,
                        r#","api":"a","provider":"p","model":5"#,
                        r#","provider":"p","model":"m""#,
                    ],
                ));
                put(&format!(r#","usage":{}"#, usage[choice[6] % usage.len()]));
                put(r#","stopReason":"toolUse""#);
            }
            _ => {}
        }
        put(&pick(
            9,
            &[
                r#","timestamp":1767225600000"#,
                r#","timestamp":0"#,
                r#","timestamp":1e3"#,
                r#","timestamp":"x""#,
                r#","timestamp":1234567890123456"#,
                r#","timestamp":123456789012345"#,
                "",
            ],
        ));
        if role == 3 {
            put(&pick(
                13,
                &[
                    "",
                    r#","responseId":"msg_01","thinkingLevel":"high""#,
                    r#","responseModel":"x","thinkingLevel":"off","errorMessage":"bad \"x\"""#,
                    r#","responseId":"r","responseModel":"m","thinkingLevel":"low","errorMessage":"e""#,
                    r#","thinkingLevel":"a\nb""#,
                    r#","thinkingLevel":"low","responseId":"r""#,
                ],
            ));
        }
        put(&pick(
            10,
            &[
                "",
                "",
                "",
                r#","content":"dup""#,
                r#","role":"user""#,
                r#","timestamp":7"#,
            ],
        ));
        put(&pick(
            11,
            &[
                "}}",
                "}}",
                "}} ",
                "}}\r",
                r#"},"message":null}"#,
                "}",
                "}}}",
                r#"},"id":"z"}"#,
            ],
        ));
        l
    }

    /// Whether the fast path reads `line`, with a usage reader like the parser's.
    fn read(line: &[u8]) -> bool {
        let mut buffers = simd_json::Buffers::default();
        let mut usage = |object: &[u8]| {
            let mut bytes = object.to_vec();
            let tape = simd_json::to_tape_with_buffers(&mut bytes, &mut buffers).ok()?;
            super::super::extract::usage_of(super::super::tape::Val::root(&tape), Default::default())
        };
        super::message(line, 0, 0, &mut usage).is_some_and(|(_, n)| n == line.len())
    }

    proptest::proptest! {
        /// Tool-result and user lines in Pi's form and varied at every place, with text payloads
        /// of every kind: the parse with the fast paths equals simd-json's parse of the whole
        /// lines, whether a line is read by `known::message`, cut, repaired or rejected.
        #[test]
        fn known_lines_parse_as_whole(
            lines in proptest::collection::vec(
                (proptest::array::uniform14(0usize..15), proptest::collection::vec(0usize..16, 0..40), 1usize..8,
                 proptest::option::weighted(0.2, 0usize..8)),
                1..6,
            ),
        ) {
            let mut file = format!("{H}\n").into_bytes();
            for (choice, pieces, reps, bad) in &lines {
                let payload = text(&pieces.repeat(*reps), *bad);
                file.extend_from_slice(&line(choice, &payload));
                file.push(b'\n');
            }
            let (fast, whole) = parse_both(&file);
            proptest::prop_assert_eq!(format!("{fast:?}"), format!("{whole:?}"));
        }
    }

    /// Usage objects in Pi's form and near it (numbers of every form JavaScript writes, random
    /// doubles among them, and forms that are not Pi's): where `pi_usage` reads one, it reads
    /// what `extract::usage_of` reads from simd-json's tape, bit for bit; and it reads Pi's form.
    #[test]
    fn pi_usage_reads_as_simd_json() {
        let mut next = crate::parse::xorshift(0x0123_4567_89AB_CDEFu64);
        const NUMBERS: [&str; 22] = [
            "0",
            "1",
            "404",
            "123456789012345",
            "1234567890123456",
            "0.1",
            "0.00012119999999999999",
            "5e-7",
            "1e+21",
            "1.7976931348623157e+308",
            "5e-324",
            "1e+400",
            "-1",
            "-0",
            "01",
            "1.",
            "1.0",
            "1e5",
            "1E-7",
            ".5",
            "1e-",
            "2.5e+",
        ];
        let mut buffers = simd_json::Buffers::default();
        let (mut read, mut pi_form) = (0, 0);
        for case in 0..20_000 {
            let number = |next: &mut dyn FnMut() -> u64, integer: bool| -> String {
                match next() % 4 {
                    0 => NUMBERS[(next() % NUMBERS.len() as u64) as usize].to_string(),
                    1 if !integer => {
                        let f = f64::from_bits(next() >> 2);
                        crate::js::number_to_string(if f.is_finite() { f } else { 0.5 })
                    }
                    1 => (next() % 1_000_000_000_000_000).to_string(),
                    _ if integer => (next() % 100_000).to_string(),
                    _ => crate::js::number_to_string((next() % 1_000_000) as f64 * 1e-7),
                }
            };
            let plain = case % 3 == 0;
            let mut o = String::from("{");
            let mut keys = vec!["input", "output", "cacheRead", "cacheWrite"];
            // Keys some providers set after the cost.
            let mut after = vec![];
            if next().is_multiple_of(4) {
                if next().is_multiple_of(2) {
                    &mut keys
                } else {
                    &mut after
                }
                .push("cacheWrite1h");
            }
            if next().is_multiple_of(2) {
                if next().is_multiple_of(3) {
                    &mut after
                } else {
                    &mut keys
                }
                .push("reasoning");
            }
            if !next().is_multiple_of(5) {
                keys.push("totalTokens");
            }
            // A key given twice.
            if !plain && next().is_multiple_of(8) {
                after.push(["cacheWrite1h", "reasoning"][(next() % 2) as usize]);
            }
            if !plain && next().is_multiple_of(8) {
                keys.swap(0, 1);
            }
            // A token count.
            let integer = |next: &mut dyn FnMut() -> u64| {
                if plain {
                    (next() % 100_000).to_string()
                } else {
                    number(next, true)
                }
            };
            for k in keys {
                let n = integer(&mut next);
                o += &format!(r#""{k}":{n},"#);
            }
            o += r#""cost":{"#;
            for k in ["input", "output", "cacheRead", "cacheWrite", "total"] {
                let n = if plain {
                    crate::js::number_to_string((next() % 1000) as f64 * 1e-6)
                } else {
                    number(&mut next, false)
                };
                o += &format!(r#""{k}":{n},"#);
            }
            o.pop();
            match next() % 4 {
                0 => o += r#","totalFromProvider":true"#,
                1 => o += r#","totalFromProvider":false"#,
                2 if !plain => o += r#","totalFromProvider":1"#,
                _ => {}
            }
            o += "}";
            for k in after {
                let n = integer(&mut next);
                o += &format!(r#","{k}":{n}"#);
            }
            o += if plain || !next().is_multiple_of(8) {
                "}"
            } else {
                ",\"x\":1}"
            };
            // What follows the object in a line.
            let fast = super::pi_usage(format!(r#"{o},"stopReason":"stop"}}"#).as_bytes());
            if plain {
                assert!(fast.is_some(), "{o}");
                pi_form += 1;
            }
            let Some((fast, len)) = fast else { continue };
            assert_eq!(len, o.len(), "{o}");
            read += 1;
            let mut bytes = o.clone().into_bytes();
            let tape = simd_json::to_tape_with_buffers(&mut bytes, &mut buffers).unwrap_or_else(|e| panic!("{o}: {e}"));
            let whole = super::super::extract::usage_of(super::super::tape::Val::root(&tape), Default::default());
            assert_eq!(format!("{:?}", Some(fast)), format!("{whole:?}"), "{o}");
        }
        assert!(read > pi_form + 1000, "{read} read, {pi_form} of them plain");
    }

    /// Clinger's fast path gives the nearest double (as Rust's and simd-json's parsers do)
    /// wherever it takes a token: random doubles written as JavaScript writes them, and random
    /// short decimals with exponents.
    #[test]
    fn exact_decimals_are_the_nearest_doubles() {
        let mut next = crate::parse::xorshift(0x5DEE_CE66_D1CE_4E5Bu64);
        let mut taken = 0;
        for case in 0..200_000 {
            let token = match case % 3 {
                0 => {
                    let f = f64::from_bits(next() >> 2);
                    crate::js::number_to_string(if f.is_finite() { f } else { 1.5 })
                }
                1 => crate::js::number_to_string((next() % 10_000_000) as f64 / 10f64.powi((next() % 12) as i32)),
                _ => format!(
                    "{}.{:0width$}e{}{}",
                    next() % 1000,
                    next() % 100_000,
                    if next().is_multiple_of(2) { '-' } else { '+' },
                    next() % 30,
                    width = (next() % 8) as usize
                ),
            };
            if token.contains('-') && !token.contains("e-") {
                continue;
            }
            let d = super::decimal(token.as_bytes()).unwrap();
            assert_eq!(d.len, token.len(), "{token}");
            if let Some(v) = super::exact_decimal(&d) {
                taken += 1;
                assert_eq!(v.to_bits(), token.parse::<f64>().unwrap().to_bits(), "{token}");
            }
        }
        assert!(taken > 50_000, "{taken} taken");
    }

    /// Pi's form, whatever the payload `measure` takes: the fast path reads every variant of it
    /// (so that the comparison above tests it), and nothing else.
    #[test]
    #[cfg_attr(
        not(pisa_avx2),
        ignore = "this machine lacks AVX2, POPCNT or BMI1: text is not measured in place"
    )]
    fn pi_form_is_read_and_nothing_else() {
        let payload = text(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], None);
        // Per role, per part of the line, whether each of its forms is Pi's.
        let common: [(usize, &[bool]); 6] = [
            (0, &[true, false, false]),
            (1, &[true, true, true, false, true, false, false, false, true, false]),
            (2, &[true, true, false, false]),
            (9, &[true, true, false, false, false, true, false]),
            (10, &[true, true, true, false, false, false]),
            (11, &[true, true, false, false, false, false, false, false]),
        ];
        let content: (usize, &[bool]) = (
            4,
            &[
                true, true, true, true, true, true, false, false, false, true, true, false, false, false, false,
            ],
        );
        let tool_result: [(usize, &[bool]); 5] = [
            (3, &[true, true, true, true, false]),
            (5, &[true, true, true, false, false, false, false, false, true]),
            (6, &[true, false]),
            (7, &[true, true, false, false, false]),
            (8, &[true, true, false, false, false]),
        ];
        let assistant: [(usize, &[bool]); 3] = [
            (
                6,
                &[true, true, true, false, true, true, true, true, false, false, true],
            ),
            (12, &[true, true, false, false, false]),
            (13, &[true, true, true, true, false, false]),
        ];
        for (role, parts) in [(0, &tool_result[..]), (3, &assistant[..])] {
            let mut pi = [0usize; 14];
            pi[3] = role;
            assert!(read(&line(&pi, &payload)), "role {role}");
            for &(part, is_pi) in common.iter().chain([&content]).chain(parts) {
                for (form, &is_pi) in is_pi.iter().enumerate() {
                    let mut choice = pi;
                    choice[part] = form;
                    assert_eq!(
                        read(&line(&choice, &payload)),
                        is_pi,
                        "role {role} part {part} form {form}"
                    );
                }
            }
            // With a payload measure refuses, the line is left to simd-json.
            for bad in 0..TEXT.len() - BAD_TEXT {
                let payload = text(&[0], Some(bad));
                assert!(!read(&line(&pi, &payload)), "role {role} bad text {bad}");
            }
        }
    }

    /// The committed sample and Pi's own sessions parse the same with the fast paths and whole, and
    /// the fast path reads most of their tool results and user messages.
    #[test]
    fn sample_and_pi_sessions_parse_as_whole() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let (mut known, mut files) = (0, 0);
        for dir in ["datasets/sample", "tests/data/pi-mono"] {
            for e in walkdir::WalkDir::new(root.join(dir)).sort_by_file_name() {
                let e = e.unwrap();
                if e.path().extension().is_none_or(|x| x != "jsonl") {
                    continue;
                }
                let bytes = std::fs::read(e.path()).unwrap();
                let (fast, whole) = parse_both(&bytes);
                assert_eq!(format!("{fast:?}"), format!("{whole:?}"), "{}", e.path().display());
                known += bytes.split(|&b| b == b'\n').filter(|l| read(l)).count();
                files += 1;
            }
        }
        assert!(files > 20, "{files} files");
        if super::super::measure::available() {
            assert!(known > 1000, "{known} lines read by the fast path");
        }
    }

    /// A message's box used again (`entry::recycle`) keeps nothing of the message it held: the
    /// sample's files, read one after another on one thread with each file's entries recycled
    /// (assistant messages' usage, models and ids before user messages and tool results, whose
    /// forms leave those unset), parse as a fresh whole parse does; a spare box is empty.
    #[test]
    fn recycled_message_boxes_keep_nothing_of_their_last_message() {
        use super::super::entry::{Message, recycle};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/sample");
        let files: Vec<Vec<u8>> = walkdir::WalkDir::new(root)
            .sort_by_file_name()
            .into_iter()
            .map(Result::unwrap)
            .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
            .map(|e| std::fs::read(e.path()).unwrap())
            .collect();
        assert!(files.len() > 5);
        for bytes in files.iter().chain(&files) {
            let (fast, whole) = parse_both(bytes);
            assert_eq!(format!("{:?}", fast.entries), format!("{:?}", whole.entries));
            recycle(fast.entries);
            recycle(whole.entries);
        }
        assert_eq!(format!("{:?}", Message::boxed()), format!("{:?}", Message::default()));
    }

    /// A line ends at its newline where JSON would go on: an assistant message whose usage object
    /// (not in Pi's form, so read by simd-json) a newline cuts in two is two damaged lines on
    /// both paths, not one entry, and the lines around it are read as they are.
    #[test]
    fn a_newline_ends_a_known_line_where_json_would_go_on() {
        let usage = r#"{"output":2,"input":1,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}"#;
        let line = format!(
            r#"{{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"assistant","content":[],"api":"x","provider":"p","model":"m","usage":{usage},"stopReason":"stop","timestamp":1}}}}"#
        );
        assert!(read(line.as_bytes()));
        let split = line.replacen(r#""input":1,"#, "\"input\":1,\n", 1);
        let file = format!("{H}\n{line}\n{split}\n{line}");
        let (fast, whole) = parse_both(file.as_bytes());
        assert_eq!(format!("{fast:?}"), format!("{whole:?}"));
        assert_eq!(fast.entries.len(), 3);
        assert_eq!(fast.stats.malformed_lines, 2);
    }
}
