//! JavaScript value semantics that Pi's code relies on and pisa must reproduce.
//!
//! Pi reads session lines with `JSON.parse` and then works with plain JavaScript values:
//! ids are `Map` keys (SameValueZero), truthiness decides whether a walk goes on, string
//! lengths are UTF-16 code units, sums of missing fields become `NaN`, and
//! `JSON.stringify(x).length` feeds the token estimate. This module holds those rules once.

use std::borrow::Cow;
use std::fmt::Write as _;

use simd_json::StaticNode;
use simd_json::tape::{Node, Value as TapeValue};

/// A parsed JSON value as Pi sees it, reduced to what pisa keeps: `None` stands for
/// JavaScript `undefined` (the key was absent).
pub type Jv = Option<serde_json::Value>;

/// An entry id or any value used as a `Map` key by Pi (`id`, `parentId`, `targetId`, ...).
///
/// JSON gives ids of any type; `Map` compares them with SameValueZero, so `5` and `"5"`
/// differ, and two objects are never equal (each parse makes a new one).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum Key {
    /// The field is absent.
    #[default]
    Undefined,
    /// JSON `null`.
    Null,
    /// JSON `true` / `false`.
    Bool(bool),
    /// A number, by the bits of its f64 value (`-0` folded into `0`).
    Num(u64),
    /// A string.
    Str(compact_str::CompactString),
    /// An object or array: unique, equal to nothing else (the value is kept for printing).
    Unique(u32, Opaque),
}

/// A JSON value carried along for output only: every `Opaque` equals every other, so it
/// never takes part in comparing or hashing the key that holds it.
#[derive(Debug, Clone, Default)]
pub struct Opaque(pub Box<serde_json::Value>);

impl serde::Serialize for Opaque {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for Opaque {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Opaque, D::Error> {
        let text = String::deserialize(d)?;
        serde_json::from_str(&text)
            .map(|v| Opaque(Box::new(v)))
            .map_err(serde::de::Error::custom)
    }
}

/// Serde of a [`Jv`] for pisa's cache: the value as JSON text, so that a format that does
/// not describe itself (postcard) keeps `undefined` (absent) and `null` apart.
pub mod jv_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &super::Jv, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|v| v.to_string()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<super::Jv, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| serde_json::from_str(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

impl PartialEq for Opaque {
    fn eq(&self, _: &Opaque) -> bool {
        true
    }
}

impl Eq for Opaque {}

impl std::hash::Hash for Opaque {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

impl Key {
    /// JavaScript truthiness (`if (id)`): `undefined`, `null`, `false`, `0` and `""` are falsy.
    pub fn truthy(&self) -> bool {
        match self {
            Key::Undefined | Key::Null => false,
            Key::Bool(b) => *b,
            Key::Num(bits) => {
                let f = f64::from_bits(*bits);
                f != 0.0 && !f.is_nan()
            }
            Key::Str(s) => !s.is_empty(),
            Key::Unique(..) => true,
        }
    }

    /// A string key.
    pub fn str(s: &str) -> Key {
        Key::Str(s.into())
    }

    /// The key from a number.
    pub fn num(f: f64) -> Key {
        let f = if f == 0.0 { 0.0 } else { f };
        Key::Num(f.to_bits())
    }

    /// The string content, when the key is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Key::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The key as JSON (`undefined` prints as `null`, like `x ?? null`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Key::Undefined | Key::Null => serde_json::Value::Null,
            Key::Bool(b) => serde_json::Value::Bool(*b),
            Key::Num(bits) => num_json(f64::from_bits(*bits)),
            Key::Str(s) => serde_json::Value::String(s.to_string()),
            Key::Unique(_, v) => (*v.0).clone(),
        }
    }

    /// `String(key)` in JavaScript (used where Pi builds strings from ids).
    pub fn js_string(&self) -> Cow<'_, str> {
        match self {
            Key::Undefined => "undefined".into(),
            Key::Null => "null".into(),
            Key::Bool(b) => if *b { "true" } else { "false" }.into(),
            Key::Num(bits) => number_to_string(f64::from_bits(*bits)).into(),
            Key::Str(s) => Cow::Borrowed(s),
            Key::Unique(_, v) => js_string_of(&Some((*v.0).clone())).into_owned().into(),
        }
    }
}

/// A JSON number for output: integral values within 2^53 print without a fraction, like JavaScript.
pub fn num_json(f: f64) -> serde_json::Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        serde_json::Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

/// `Number.prototype.toString()` for a double.
pub fn number_to_string(f: f64) -> String {
    let mut buf = ryu_js::Buffer::new();
    buf.format(f).to_owned()
}

/// `s.length` of a string read from a tape: measured before the parse when `s` stands for a
/// cut payload (see [`Marks::cut`]).
#[inline]
pub fn str_len(s: &str, marks: Marks) -> u64 {
    marks.cut(s).map_or_else(|| utf16_len(s), |c| c.units)
}

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
fn stringified_content_len(s: &str) -> u64 {
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
pub fn cmp_utf16(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// What the reader changed in a line so that simd-json accepts what `JSON.parse` accepts
/// (see `parse::text`). Readers of the tape undo it through these marks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks {
    /// U+FFFF stands for a lone surrogate: one UTF-16 unit, as the original, but
    /// `JSON.stringify` writes a lone surrogate as a six-character escape.
    pub lone_surrogates: bool,
    /// `±f64::MAX` stands for a number literal beyond the double range, which `JSON.parse`
    /// reads as `±Infinity`.
    pub infinities: bool,
    /// Payloads of image, text and thinking blocks were cut out of the line (see
    /// `parse::text::copy_cutting_payloads`): a string that begins with U+0000 stands for one,
    /// and gives its lengths.
    pub payloads_cut: bool,
}

thread_local! {
    /// A reader needed the content of a cut payload (see [`Marks::cut`]).
    static CUT_READ: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Note that a reader met a cut payload whose content it needs: the line is read again whole.
pub fn note_cut_read() {
    CUT_READ.set(true);
}

/// Whether a reader met a cut payload since the last call (and forget it).
pub fn take_cut_read() -> bool {
    CUT_READ.replace(false)
}

impl Marks {
    /// The JavaScript value of a number read from the tape.
    #[inline]
    pub fn num(self, f: f64) -> f64 {
        if self.infinities && f.abs() == f64::MAX {
            f64::INFINITY.copysign(f)
        } else {
            f
        }
    }

    /// What the cut payload `s` stands for, if it stands for one. Only cut payloads begin
    /// with U+0000 in a line whose payloads were cut: a line holding the escape `\u0000`
    /// outside its cut payloads is never cut.
    #[inline]
    pub fn cut(self, s: &str) -> Option<crate::parse::text::Cut> {
        if !self.payloads_cut || s.as_bytes().first() != Some(&0) {
            return None;
        }
        if s.as_bytes().get(1) == Some(&b'=') {
            // A cut value (not a string) read as a string: only the whole line can tell.
            note_cut_read();
            return None;
        }
        let (units, json) = s[1..].split_once('_')?;
        let (units, json) = (units.parse().ok()?, json.parse().ok()?);
        Some(crate::parse::text::Cut { units, json })
    }

    /// `JSON.stringify(value).length` of the value (tool-call arguments) that `s` stands for,
    /// if it stands for one (see `parse::text::copy_cutting_payloads`).
    #[inline]
    pub fn cut_value(self, s: &str) -> Option<u64> {
        if !self.payloads_cut {
            return None;
        }
        s.strip_prefix("\0=")?.parse().ok()
    }

    /// The number a tape node holds, if it is one.
    #[inline]
    pub fn node_num(self, n: &Node<'_>) -> Option<f64> {
        match *n {
            Node::Static(StaticNode::I64(i)) => Some(i as f64),
            Node::Static(StaticNode::U64(u)) => Some(u as f64),
            Node::Static(StaticNode::F64(f)) => Some(self.num(f)),
            _ => None,
        }
    }
}

/// `JSON.stringify(s).length` for a string whose content is `s`.
pub fn stringify_str_len(s: &str, marks: Marks) -> u64 {
    if let Some(json) = marks.cut_value(s) {
        // Not a string at all: the value it stands for.
        return json;
    }
    if let Some(c) = marks.cut(s) {
        return 2 + c.json;
    }
    let mut n = 2 + stringified_content_len(s);
    if marks.lone_surrogates {
        n += 5 * s.matches('\u{ffff}').count() as u64;
    }
    n
}

/// `JSON.stringify(v).length` for a number.
pub fn stringify_num_len(f: f64) -> u64 {
    if !f.is_finite() {
        return 4; // "null"
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Integers print in plain decimal; count digits without formatting.
        let mut a = f.abs();
        let mut digits = 1u64;
        while a >= 10.0 {
            a /= 10.0;
            digits += 1;
        }
        // Division can drift near powers of ten; confirm with exact formatting there.
        if digits >= 15 {
            return number_to_string(f).len() as u64;
        }
        return digits + u64::from(f < 0.0);
    }
    let mut buf = ryu_js::Buffer::new();
    buf.format(f).len() as u64
}

/// Number of tape nodes a value spans (itself and everything nested in it).
#[inline]
pub fn subtree_size(n: &Node<'_>) -> usize {
    match *n {
        Node::Object { count, .. } | Node::Array { count, .. } => count + 1,
        _ => 1,
    }
}

/// Characters a node writes itself, children excluded: quotes and escapes of a string,
/// digits of a number, brackets and separators of a container (`:` per key, `,` between).
fn own_len(n: &Node<'_>, marks: Marks) -> u64 {
    match *n {
        Node::String(s) => stringify_str_len(s, marks),
        Node::Static(StaticNode::Null | StaticNode::Bool(true)) => 4,
        Node::Static(StaticNode::Bool(false)) => 5,
        Node::Static(_) => stringify_num_len(marks.node_num(n).unwrap_or(f64::NAN)),
        Node::Array { len, .. } => 2 + len.saturating_sub(1) as u64,
        Node::Object { len, .. } => 2 + len.saturating_sub(1) as u64 + len as u64,
    }
}

/// Positions of the keys of the object at `nodes[at]`.
fn object_keys(nodes: &[Node<'_>], at: usize, len: usize) -> impl Iterator<Item = usize> {
    let mut p = at + 1;
    (0..len).map(move |_| {
        let k = p;
        p += 1 + subtree_size(&nodes[p + 1]);
        k
    })
}

/// Whether the object at `nodes[at]` repeats a key.
fn repeats_key(nodes: &[Node<'_>], at: usize, len: usize) -> bool {
    match len {
        0 | 1 => false,
        // Small objects (nearly all of them): compare pairwise, without allocating.
        2..=16 => {
            let mut keys = [""; 16];
            for (slot, k) in keys.iter_mut().zip(object_keys(nodes, at, len)) {
                *slot = key_str(&nodes[k]);
            }
            let keys = &keys[..len];
            keys.iter().enumerate().any(|(i, k)| keys[i + 1..].contains(k))
        }
        _ => {
            let mut seen = hashbrown::HashSet::with_capacity(len);
            object_keys(nodes, at, len).any(|k| !seen.insert(key_str(&nodes[k])))
        }
    }
}

fn key_str<'i>(n: &Node<'i>) -> &'i str {
    match *n {
        Node::String(s) => s,
        _ => "",
    }
}

/// `JSON.stringify(v).length` for a value on a simd-json tape, without recursion (a line
/// may nest arbitrarily deep). `JSON.parse` keeps one value per key, the last, so the
/// earlier pairs of a repeated key are not counted.
pub fn stringify_len(v: TapeValue<'_, '_>, marks: Marks) -> u64 {
    let all = tape_nodes(v);
    let nodes = &all[..subtree_size(&all[0])];
    let mut duplicates = false;
    let mut total = 0u64;
    for (i, n) in nodes.iter().enumerate() {
        total += own_len(n, marks);
        if let Node::Object { len, .. } = *n {
            duplicates |= repeats_key(nodes, i, len);
        }
    }
    if !duplicates {
        return total;
    }
    let mut dead = vec![false; nodes.len()];
    let mut removed_pairs = 0u64;
    for i in 0..nodes.len() {
        let Node::Object { len, .. } = nodes[i] else { continue };
        if dead[i] || !repeats_key(nodes, i, len) {
            continue;
        }
        let keys: Vec<usize> = object_keys(nodes, i, len).collect();
        for (a, &ka) in keys.iter().enumerate() {
            if keys[a + 1..]
                .iter()
                .any(|&kb| key_str(&nodes[kb]) == key_str(&nodes[ka]))
            {
                let end = ka + 1 + subtree_size(&nodes[ka + 1]);
                dead[ka..end].iter_mut().for_each(|d| *d = true);
                removed_pairs += 1;
            }
        }
    }
    let dead_len: u64 = nodes
        .iter()
        .zip(&dead)
        .filter(|(_, d)| **d)
        .map(|(n, _)| own_len(n, marks))
        .sum();
    // Each removed pair also takes its `:` (counted by the object) and one `,`.
    total - dead_len - 2 * removed_pairs
}

/// Nesting beyond which V8's recursive `JSON.stringify` overflows its stack and throws a
/// `RangeError` (Node 20 with its default stack: 4,104 levels at the top of a script; Pi calls
/// it a few frames deeper). The exact limit depends on the stack, so pisa draws the line a
/// little lower and reports Pi's failure from there on.
pub const MAX_STRINGIFY_DEPTH: usize = 4_000;

/// The same for `Array#join`, which `String(array)` and `total += array` call recursively
/// (3,157 levels measured).
pub const MAX_JOIN_DEPTH: usize = 3_100;

/// Whether a tape value nests deeper than `limit` levels of arrays and objects, without
/// recursion. A value of fewer nodes than `limit` cannot, so the usual case costs nothing.
pub fn nests_deeper_than(v: TapeValue<'_, '_>, limit: usize) -> bool {
    nodes_nest_deeper_than(tape_nodes(v), limit)
}

fn nodes_nest_deeper_than(all: &[Node<'_>], limit: usize) -> bool {
    let nodes = &all[..subtree_size(&all[0])];
    if nodes.len() <= limit {
        return false;
    }
    // Positions where each open container ends.
    let mut open: Vec<usize> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        while open.last().is_some_and(|&end| end <= i) {
            open.pop();
        }
        if let Node::Array { .. } | Node::Object { .. } = n {
            open.push(i + subtree_size(n));
            if open.len() > limit {
                return true;
            }
        }
    }
    false
}

/// `JSON.stringify(v).length`, or `None` where V8's `JSON.stringify` throws on the nesting.
pub fn stringify_len_checked(v: TapeValue<'_, '_>, marks: Marks) -> Option<u64> {
    (!nests_deeper_than(v, MAX_STRINGIFY_DEPTH)).then(|| stringify_len(v, marks))
}

/// `String(array)` (`Array#join(",")` all the way down) of an array on a tape, without
/// recursion and at any depth: `null` elements print as "", objects as `[object Object]`.
/// `None` where V8's recursive join throws on the nesting.
pub fn array_to_string(v: TapeValue<'_, '_>, marks: Marks) -> Option<String> {
    join_nodes(tape_nodes(v), marks)
}

/// [`array_to_string`] of the array at `all[0]`.
fn join_nodes(all: &[Node<'_>], marks: Marks) -> Option<String> {
    if nodes_nest_deeper_than(all, MAX_JOIN_DEPTH) {
        return None;
    }
    let end = subtree_size(&all[0]);
    let mut out = String::new();
    // Per open array: elements still to come, and whether the next one is the first.
    let mut open: Vec<(usize, bool)> = Vec::new();
    let mut i = 0;
    while i < end {
        if let Some((left, first)) = open.last_mut() {
            if !*first {
                out.push(',');
            }
            *first = false;
            *left -= 1;
        }
        let n = all[i];
        i += 1;
        match n {
            Node::Array { len, .. } => open.push((len, true)),
            Node::Object { .. } => {
                out.push_str("[object Object]");
                i += subtree_size(&n) - 1;
            }
            Node::String(s) => out.push_str(s),
            Node::Static(StaticNode::Null) => {}
            Node::Static(StaticNode::Bool(b)) => out.push_str(if b { "true" } else { "false" }),
            Node::Static(_) => out.push_str(&number_to_string(marks.node_num(&n).unwrap_or(f64::NAN))),
        }
        while open.last().is_some_and(|&(left, _)| left == 0) {
            open.pop();
        }
    }
    Some(out)
}

/// The nodes of a tape value (the value and everything nested in it).
pub fn tape_nodes<'t, 'i>(v: TapeValue<'t, 'i>) -> &'t [Node<'i>] {
    // SAFETY: `tape::Value` is `#[repr(transparent)]` over `&'t [Node<'i>]`; simd-json exposes
    // the slice only crate-internally, and this reinterprets the reference, nothing else.
    unsafe { std::mem::transmute::<TapeValue<'t, 'i>, &'t [Node<'i>]>(v) }
}

/// Nesting beyond which [`to_json`] stops copying (a stand-in keeps `String(value)` exact):
/// owned JSON values are built, printed and dropped recursively.
pub const MAX_COPY_DEPTH: usize = 64;

/// Convert a tape value into an owned JSON value (numbers as JavaScript doubles).
pub fn to_json(v: TapeValue<'_, '_>, marks: Marks) -> serde_json::Value {
    let nodes = tape_nodes(v);
    let mut pos = 0;
    nodes_to_json(nodes, &mut pos, marks, 0)
}

fn nodes_to_json(nodes: &[Node<'_>], pos: &mut usize, marks: Marks, depth: usize) -> serde_json::Value {
    use serde_json::Value as J;
    let node = nodes[*pos];
    if depth >= MAX_COPY_DEPTH && matches!(node, Node::Array { .. } | Node::Object { .. }) {
        // What stands for the rest keeps `String(value)` of every enclosing array exact
        // (Pi builds grouping keys such as `provider/model` with it): an array becomes the
        // string its `Array#join` makes, an object an empty object ("[object Object]").
        let stand_in = match node {
            Node::Array { .. } => {
                join_nodes(&nodes[*pos..], marks).map_or_else(|| J::String("[nested too deeply]".into()), J::String)
            }
            _ => J::Object(serde_json::Map::new()),
        };
        *pos += subtree_size(&node);
        return stand_in;
    }
    *pos += 1;
    match node {
        Node::String(s) => {
            if marks.cut(s).is_some() {
                note_cut_read();
            }
            J::String(s.to_owned())
        }
        Node::Static(StaticNode::Null) => J::Null,
        Node::Static(StaticNode::Bool(b)) => J::Bool(b),
        Node::Static(_) => num_json(marks.node_num(&node).unwrap_or(f64::NAN)),
        Node::Array { len, .. } => J::Array((0..len).map(|_| nodes_to_json(nodes, pos, marks, depth + 1)).collect()),
        Node::Object { len, .. } => {
            let mut map = serde_json::Map::new();
            for _ in 0..len {
                let key = match nodes_to_json(nodes, pos, marks, depth + 1) {
                    J::String(k) => k,
                    other => other.to_string(),
                };
                // JSON.parse keeps the last duplicate; Map::insert replaces in place too.
                map.insert(key, nodes_to_json(nodes, pos, marks, depth + 1));
            }
            J::Object(map)
        }
    }
}

/// The JavaScript number a tape value converts to where Pi adds it (`total += v`):
/// numbers as they are, `null` as 0, booleans as 0/1, absent (`undefined`) and anything
/// else as `NaN` (pisa does not model string concatenation).
pub fn js_add_operand(v: Option<TapeValue<'_, '_>>, marks: Marks) -> f64 {
    let Some(v) = v else { return f64::NAN };
    let n = &tape_nodes(v)[0];
    match *n {
        Node::Static(StaticNode::Null) => 0.0,
        Node::Static(StaticNode::Bool(b)) => f64::from(u8::from(b)),
        _ => marks.node_num(n).unwrap_or(f64::NAN),
    }
}

/// A JavaScript primitive as Pi's sums see it: `total += usage.input` with whatever the file
/// holds. Objects and arrays are kept as the string `ToPrimitive` makes of them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JsVal {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(Box<str>),
}

impl Default for JsVal {
    fn default() -> Self {
        JsVal::Num(0.0)
    }
}

impl JsVal {
    /// The operand a number field converts to (`NaN` stands for an absent field).
    pub fn from_f64(f: f64) -> JsVal {
        if f.is_nan() { JsVal::Undefined } else { JsVal::Num(f) }
    }

    /// The operand a tape value is (`None` = the key is absent).
    pub fn from_tape(v: Option<TapeValue<'_, '_>>, marks: Marks) -> JsVal {
        let Some(v) = v else { return JsVal::Undefined };
        let n = &tape_nodes(v)[0];
        match *n {
            Node::String(s) => JsVal::Str(s.into()),
            Node::Static(StaticNode::Null) => JsVal::Null,
            Node::Static(StaticNode::Bool(b)) => JsVal::Bool(b),
            Node::Static(_) => JsVal::Num(marks.node_num(n).unwrap_or(f64::NAN)),
            Node::Object { .. } => JsVal::Str("[object Object]".into()),
            // Too deep for V8's join: the caller reports Pi's RangeError (see `array_to_string`).
            Node::Array { .. } => JsVal::Str(array_to_string(v, marks).unwrap_or_default().into()),
        }
    }

    /// `ToNumber`.
    pub fn to_number(&self) -> f64 {
        match self {
            JsVal::Undefined => f64::NAN,
            JsVal::Null => 0.0,
            JsVal::Bool(b) => f64::from(u8::from(*b)),
            JsVal::Num(f) => *f,
            JsVal::Str(s) => js_to_number(&serde_json::Value::String(s.to_string())),
        }
    }

    /// `ToString`.
    pub fn to_js_string(&self) -> Cow<'_, str> {
        match self {
            JsVal::Undefined => "undefined".into(),
            JsVal::Null => "null".into(),
            JsVal::Bool(b) => if *b { "true" } else { "false" }.into(),
            JsVal::Num(f) => number_to_string(*f).into(),
            JsVal::Str(s) => Cow::Borrowed(s),
        }
    }

    /// JavaScript truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            JsVal::Undefined | JsVal::Null => false,
            JsVal::Bool(b) => *b,
            JsVal::Num(f) => *f != 0.0 && !f.is_nan(),
            JsVal::Str(s) => !s.is_empty(),
        }
    }

    /// `self + rhs`: string concatenation when either side is a string, else numeric addition.
    pub fn plus(&self, rhs: &JsVal) -> JsVal {
        match (self, rhs) {
            (JsVal::Num(a), JsVal::Num(b)) => JsVal::Num(a + b),
            (JsVal::Str(_), _) | (_, JsVal::Str(_)) => {
                JsVal::Str(format!("{}{}", self.to_js_string(), rhs.to_js_string()).into())
            }
            _ => JsVal::Num(self.to_number() + rhs.to_number()),
        }
    }

    /// `self += rhs`.
    pub fn add_assign(&mut self, rhs: &JsVal) {
        if let (JsVal::Num(a), JsVal::Num(b)) = (&mut *self, rhs) {
            *a += b;
        } else {
            *self = self.plus(rhs);
        }
    }

    /// The value as `JSON.stringify` prints it (`NaN` and `undefined` as `null`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            JsVal::Undefined | JsVal::Null => serde_json::Value::Null,
            JsVal::Bool(b) => serde_json::Value::Bool(*b),
            JsVal::Num(f) => num_json(*f),
            JsVal::Str(s) => serde_json::Value::String(s.to_string()),
        }
    }
}

/// `String(v)` in JavaScript for a JSON value (`undefined` when absent).
pub fn js_string_of(v: &Jv) -> Cow<'_, str> {
    match v {
        None => "undefined".into(),
        Some(serde_json::Value::Null) => "null".into(),
        Some(serde_json::Value::Bool(b)) => if *b { "true" } else { "false" }.into(),
        Some(serde_json::Value::Number(n)) => number_to_string(n.as_f64().unwrap_or(f64::NAN)).into(),
        Some(serde_json::Value::String(s)) => Cow::Borrowed(s.as_str()),
        Some(serde_json::Value::Array(a)) => {
            // Array#toString: elements joined by ",", null/undefined as "".
            let mut out = String::new();
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !item.is_null() {
                    let _ = write!(out, "{}", js_string_of(&Some(item.clone())));
                }
            }
            out.into()
        }
        Some(serde_json::Value::Object(_)) => "[object Object]".into(),
    }
}

/// JavaScript `ToNumber` for the values a header `version` can hold.
pub fn js_to_number(v: &serde_json::Value) -> f64 {
    match v {
        serde_json::Value::Null => 0.0,
        serde_json::Value::Bool(b) => f64::from(u8::from(*b)),
        serde_json::Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        serde_json::Value::String(s) => {
            let t = js_trim(s);
            if t.is_empty() {
                0.0
            } else if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16).map_or(f64::NAN, |u| u as f64)
            } else {
                match t {
                    "Infinity" | "+Infinity" => f64::INFINITY,
                    "-Infinity" => f64::NEG_INFINITY,
                    _ if t.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) => {
                        t.parse::<f64>().unwrap_or(f64::NAN)
                    }
                    _ => f64::NAN,
                }
            }
        }
        serde_json::Value::Array(a) => match a.as_slice() {
            [] => 0.0,
            [one] => js_to_number(one),
            _ => f64::NAN,
        },
        serde_json::Value::Object(_) => f64::NAN,
    }
}

/// JavaScript truthiness of a JSON value.
pub fn js_truthy(v: &Jv) -> bool {
    match v {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(serde_json::Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    stringify_str_len(&s, Marks::default()),
                    json.encode_utf16().count() as u64,
                    "{s:?}"
                );
            }
        }
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

    #[test]
    fn stringify_lengths() {
        assert_eq!(stringify_str_len("a\"b", Marks::default()), 6);
        assert_eq!(stringify_str_len("\u{1}", Marks::default()), 8);
        assert_eq!(stringify_str_len("😀", Marks::default()), 4);
        assert_eq!(
            stringify_str_len(
                "\u{ffff}",
                Marks {
                    lone_surrogates: true,
                    ..Marks::default()
                }
            ),
            8
        );
        let text = "line one\nline \"two\"\tand a \\ backslash \u{1} \u{1f} é 😀 and a long ascii tail here";
        let expected: u64 = 2 + text
            .chars()
            .map(|c| match c {
                '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
                '\0'..='\u{1f}' => 6,
                c => c.len_utf16() as u64,
            })
            .sum::<u64>();
        assert_eq!(stringify_str_len(text, Marks::default()), expected);
        assert_eq!(stringify_num_len(0.0), 1);
        assert_eq!(stringify_num_len(-12.0), 3);
        assert_eq!(stringify_num_len(0.1), 3);
        assert_eq!(stringify_num_len(1e21), 5);
        assert_eq!(stringify_num_len(123456789012345680000.0), 21);
        assert_eq!(
            stringify_num_len(99999999999999990.0),
            number_to_string(99999999999999990.0).len() as u64
        );
    }

    #[test]
    fn deep_arrays_convert_to_strings_like_array_join() {
        let deep = |n: usize, leaf: &str| "[".repeat(n) + leaf + &"]".repeat(n);
        for (text, expected) in [
            ("[]".to_string(), Some(String::new())),
            (
                r#"[1,null,[2,[true,"s"]],{"a":[3]},[],[[]]]"#.to_string(),
                Some("1,,2,true,s,[object Object],,".to_string()),
            ),
            (deep(100, "7"), Some("7".to_string())),
            (deep(3000, "[1],[2]"), Some("1,2".to_string())),
            (deep(MAX_JOIN_DEPTH + 1, ""), None),
        ] {
            let mut bytes = text.clone().into_bytes();
            let mut buffers = simd_json::Buffers::with_max_depth(1024, usize::MAX);
            let tape = simd_json::to_tape_with_buffers(&mut bytes, &mut buffers).unwrap();
            assert_eq!(
                array_to_string(tape.as_value(), Marks::default()),
                expected,
                "{}",
                &text[..text.len().min(40)]
            );
        }
        let mut bytes = deep(MAX_STRINGIFY_DEPTH + 1, "").into_bytes();
        let mut buffers = simd_json::Buffers::with_max_depth(1024, usize::MAX);
        let tape = simd_json::to_tape_with_buffers(&mut bytes, &mut buffers).unwrap();
        assert_eq!(stringify_len_checked(tape.as_value(), Marks::default()), None);
        assert!(!nests_deeper_than(tape.as_value(), MAX_STRINGIFY_DEPTH + 1));
    }

    #[test]
    fn stringify_len_of_tape_values() {
        for text in [
            r#"{"a":1,"b":[true,null,"x"],"c":{"d":-0.5}}"#,
            r#"[]"#,
            r#"{}"#,
            r#"{"path":"/tmp/é","n":12345678901234567890}"#,
        ] {
            let mut bytes = text.as_bytes().to_vec();
            let tape = simd_json::to_tape(&mut bytes).unwrap();
            // 12345678901234567890 prints as 12345678901234567000: the same length.
            assert_eq!(
                stringify_len(tape.as_value(), Marks::default()),
                text.chars().count() as u64,
                "{text}"
            );
        }
    }

    #[test]
    fn repeated_keys_count_once_like_json_parse() {
        let mut bytes = br#"{"k":{"a":1,"a":22},"b":1.0,"c":1E2}"#.to_vec();
        let tape = simd_json::to_tape(&mut bytes).unwrap();
        // JSON.stringify(JSON.parse(...)) === '{"k":{"a":22},"b":1,"c":100}'
        assert_eq!(
            stringify_len(tape.as_value(), Marks::default()),
            r#"{"k":{"a":22},"b":1,"c":100}"#.len() as u64
        );
    }

    #[test]
    fn keys_follow_same_value_zero_and_truthiness() {
        assert_eq!(Key::num(0.0), Key::num(-0.0));
        assert_ne!(Key::num(5.0), Key::str("5"));
        assert!(!Key::str("").truthy());
        assert!(!Key::num(0.0).truthy());
        assert!(Key::Unique(1, Opaque::default()).truthy());
        assert_eq!(Key::num(5.0).js_string(), "5");
    }

    #[test]
    fn to_number_matches_javascript() {
        assert_eq!(js_to_number(&serde_json::json!("2")), 2.0);
        assert_eq!(js_to_number(&serde_json::json!(" 3 ")), 3.0);
        assert!(js_to_number(&serde_json::json!("v3")).is_nan());
        assert_eq!(js_to_number(&serde_json::json!(true)), 1.0);
    }
}
