//! Reading a line's simd-json tape as Pi's code reads the value `JSON.parse` made of it.
//!
//! [`Val`] is a value on the tape (reached through [`Tape`]'s public node vector, nothing
//! else): a node and, for an array or object, the nodes nested in it. [`Marks`] says what the
//! reader changed in the line before simd-json saw it (stand-ins for lone surrogates and
//! out-of-range numbers, see `repair`; payloads cut out, see `cut`), so that every reader
//! here gives what Pi would get from the original line: `JSON.stringify(v).length`,
//! `String(array)`, `total += v`, or an owned copy of the value.
//!
//! Nothing here recurses: a line may nest arbitrarily deep.

use std::cell::Cell;

use simd_json::StaticNode;
use simd_json::tape::{Node, Tape};

use super::cut::{self, Cut};
use crate::js::{self, JsVal, number_to_string, stringify_num_len};

/// A value on a tape.
#[derive(Debug, Clone, Copy)]
pub struct Val<'t, 'i>(&'t [Node<'i>]);

impl<'t, 'i> Val<'t, 'i> {
    /// The root value of a parsed line.
    pub fn root(tape: &'t Tape<'i>) -> Val<'t, 'i> {
        Val(&tape.0)
    }

    /// The value's own node.
    pub fn node(self) -> Node<'i> {
        self.0[0]
    }

    /// The value's nodes: its own and those nested in it.
    fn nodes(self) -> &'t [Node<'i>] {
        &self.0[..subtree_size(&self.0[0])]
    }

    /// The content of a string.
    pub fn as_str(self) -> Option<&'i str> {
        match self.node() {
            Node::String(s) => Some(s),
            _ => None,
        }
    }

    /// JSON `null`.
    pub fn is_null(self) -> bool {
        matches!(self.node(), Node::Static(StaticNode::Null))
    }

    /// JavaScript truthiness.
    pub fn truthy(self) -> bool {
        match self.node() {
            Node::String(s) => !s.is_empty(),
            Node::Static(StaticNode::Null) => false,
            Node::Static(StaticNode::Bool(b)) => b,
            Node::Static(StaticNode::I64(i)) => i != 0,
            Node::Static(StaticNode::U64(u)) => u != 0,
            Node::Static(StaticNode::F64(f)) => f != 0.0 && !f.is_nan(),
            Node::Array { .. } | Node::Object { .. } => true,
        }
    }

    /// The number, as the JavaScript value `JSON.parse` made of it.
    pub fn number(self, marks: Marks<'_>) -> Option<f64> {
        marks.node_num(&self.node())
    }

    /// An array's items.
    pub fn items(self) -> Option<impl Iterator<Item = Val<'t, 'i>>> {
        let Node::Array { len, .. } = self.node() else {
            return None;
        };
        let mut at = 1;
        Some((0..len).map(move |_| {
            let item = Val(&self.0[at..]);
            at += subtree_size(&self.0[at]);
            item
        }))
    }

    /// An object's keys and values, in the order of the line (a repeated key repeats).
    pub fn pairs(self) -> Option<impl Iterator<Item = (&'i str, Val<'t, 'i>)>> {
        let Node::Object { len, .. } = self.node() else {
            return None;
        };
        let mut at = 1;
        Some((0..len).map(move |_| {
            let key = key_str(&self.0[at]);
            let value = Val(&self.0[at + 1..]);
            at += 1 + subtree_size(&self.0[at + 1]);
            (key, value)
        }))
    }

    /// The value of `key` in an object as `JSON.parse` keeps it: the last of a repeated key.
    pub fn get(self, key: &str) -> Option<Val<'t, 'i>> {
        self.pairs()?.filter(|(k, _)| *k == key).map(|(_, v)| v).last()
    }
}

/// What the reader changed in a line so that simd-json accepts what `JSON.parse` accepts
/// (see `repair`) and so that it parses less (see `cut`). Readers of the tape undo it here.
#[derive(Debug, Clone, Copy, Default)]
pub struct Marks<'c> {
    /// U+FFFF stands for a lone surrogate: one UTF-16 unit, as the original, but
    /// `JSON.stringify` writes a lone surrogate as a six-character escape.
    pub lone_surrogates: bool,
    /// `±f64::MAX` stands for a number literal beyond the double range, which `JSON.parse`
    /// reads as `±Infinity`.
    pub infinities: bool,
    /// Payloads were cut out of the line (a string that begins with U+0000 stands for one);
    /// the cell records that a reader needed what a cut payload held, so that the line is
    /// read again whole.
    cuts: Option<&'c Cell<bool>>,
}

impl Marks<'static> {
    /// Marks of a repaired line (see `repair`): stand-ins, no payload cut.
    pub fn stand_ins(lone_surrogates: bool, infinities: bool) -> Marks<'static> {
        Marks {
            lone_surrogates,
            infinities,
            cuts: None,
        }
    }
}

impl<'c> Marks<'c> {
    /// The same marks for a line whose payloads were cut; `needed` records that a reader
    /// needed one's content.
    pub fn with_cuts<'d>(self, needed: &'d Cell<bool>) -> Marks<'d> {
        Marks {
            lone_surrogates: self.lone_surrogates,
            infinities: self.infinities,
            cuts: Some(needed),
        }
    }

    /// Where a reader needs the very content of the string `s`: when it stands for a cut
    /// payload, the line is read again whole.
    pub fn need_content(self, s: &str) {
        if self.cut(s).is_some() {
            self.need_whole_line();
        }
    }

    /// Tell the parser that the line must be read again whole.
    fn need_whole_line(self) {
        if let Some(needed) = self.cuts {
            needed.set(true);
        }
    }

    /// The JavaScript value of a number read from the tape.
    #[inline]
    pub fn num(self, f: f64) -> f64 {
        if self.infinities && f.abs() == f64::MAX {
            f64::INFINITY.copysign(f)
        } else {
            f
        }
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

    /// What the string `s` of a cut line stands for, if it stands for a cut payload.
    #[inline]
    fn cut(self, s: &str) -> Option<Cut> {
        self.cuts?;
        cut::stands_for(s)
    }

    /// The lengths of the cut string payload `s` stands for. A cut value (not a string) read
    /// where a string is expected: only the whole line can tell, and it will be read.
    #[inline]
    fn cut_string(self, s: &str) -> Option<super::measure::Lengths> {
        match self.cut(s)? {
            Cut::String(l) => Some(l),
            Cut::Value(_) => {
                self.need_whole_line();
                None
            }
        }
    }
}

/// `s.length` of a string read from a tape.
#[inline]
pub fn str_len(s: &str, marks: Marks<'_>) -> u64 {
    marks.cut_string(s).map_or_else(|| js::utf16_len(s), |c| c.units)
}

/// `JSON.stringify(s).length` for a string whose content is `s`.
pub fn stringify_str_len(s: &str, marks: Marks<'_>) -> u64 {
    match marks.cut(s) {
        // Not a string at all: the value it stands for.
        Some(Cut::Value(json)) => return json,
        Some(Cut::String(l)) => return 2 + l.json,
        None => {}
    }
    let mut n = 2 + js::stringified_content_len(s);
    if marks.lone_surrogates {
        n += 5 * s.matches('\u{ffff}').count() as u64;
    }
    n
}

/// Number of tape nodes a value spans (itself and everything nested in it).
#[inline]
fn subtree_size(n: &Node<'_>) -> usize {
    match *n {
        Node::Object { count, .. } | Node::Array { count, .. } => count + 1,
        _ => 1,
    }
}

/// Characters a node writes itself, children excluded: quotes and escapes of a string,
/// digits of a number, brackets and separators of a container (`:` per key, `,` between).
fn own_len(n: &Node<'_>, marks: Marks<'_>) -> u64 {
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

/// `JSON.stringify(v).length`. `JSON.parse` keeps one value per key, the last, so the
/// earlier pairs of a repeated key are not counted.
pub fn stringify_len(v: Val<'_, '_>, marks: Marks<'_>) -> u64 {
    let nodes = v.nodes();
    let mut duplicates = false;
    let mut total = 0u64;
    for (i, n) in nodes.iter().enumerate() {
        total += own_len(n, marks);
        if let Node::Object { len, .. } = *n {
            duplicates |= repeats_key(nodes, i, len);
        }
    }
    if duplicates {
        total - repeated_pairs_len(nodes, marks)
    } else {
        total
    }
}

/// What the earlier pairs of repeated keys add to the sum of [`own_len`]s: their nodes, and
/// each pair's `:` (counted by its object) and one `,`.
fn repeated_pairs_len(nodes: &[Node<'_>], marks: Marks<'_>) -> u64 {
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
    dead_len + 2 * removed_pairs
}

/// Nesting beyond which V8's recursive `JSON.stringify` overflows its stack and throws a
/// `RangeError` (Node 20 with its default stack: 4,104 levels at the top of a script; Pi calls
/// it a few frames deeper). The exact limit depends on the stack, so pisa draws the line a
/// little lower and reports Pi's failure from there on.
pub const MAX_STRINGIFY_DEPTH: usize = 4_000;

/// The same for `Array#join`, which `String(array)` and `total += array` call recursively
/// (3,157 levels measured).
pub const MAX_JOIN_DEPTH: usize = 3_100;

/// Whether a value nests deeper than `limit` levels of arrays and objects. A value of fewer
/// nodes than `limit` cannot, so the usual case costs nothing.
pub fn nests_deeper_than(v: Val<'_, '_>, limit: usize) -> bool {
    let nodes = v.nodes();
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
pub fn stringify_len_checked(v: Val<'_, '_>, marks: Marks<'_>) -> Option<u64> {
    (!nests_deeper_than(v, MAX_STRINGIFY_DEPTH)).then(|| stringify_len(v, marks))
}

/// `String(array)` (`Array#join(",")` all the way down) of an array, at any depth: `null`
/// elements print as "", objects as `[object Object]`. `None` where V8's recursive join
/// throws on the nesting.
pub fn array_to_string(v: Val<'_, '_>, marks: Marks<'_>) -> Option<String> {
    if nests_deeper_than(v, MAX_JOIN_DEPTH) {
        return None;
    }
    let nodes = v.nodes();
    let mut out = String::new();
    // Per open array: elements still to come, and whether the next one is the first.
    let mut open: Vec<(usize, bool)> = Vec::new();
    let mut i = 0;
    while i < nodes.len() {
        if let Some((left, first)) = open.last_mut() {
            if !*first {
                out.push(',');
            }
            *first = false;
            *left -= 1;
        }
        let n = nodes[i];
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

/// Nesting beyond which [`to_json`] stops copying (a stand-in keeps `String(value)` exact):
/// owned JSON values are built, printed and dropped recursively.
pub const MAX_COPY_DEPTH: usize = 64;

/// An owned copy of the value (numbers as JavaScript doubles).
pub fn to_json(v: Val<'_, '_>, marks: Marks<'_>) -> serde_json::Value {
    let mut pos = 0;
    nodes_to_json(v.0, &mut pos, marks, 0)
}

fn nodes_to_json(nodes: &[Node<'_>], pos: &mut usize, marks: Marks<'_>, depth: usize) -> serde_json::Value {
    use serde_json::Value as J;
    let node = nodes[*pos];
    if depth >= MAX_COPY_DEPTH && matches!(node, Node::Array { .. } | Node::Object { .. }) {
        // What stands for the rest keeps `String(value)` of every enclosing array exact
        // (Pi builds grouping keys such as `provider/model` with it): an array becomes the
        // string its `Array#join` makes, an object an empty object ("[object Object]").
        let stand_in = match node {
            Node::Array { .. } => array_to_string(Val(&nodes[*pos..]), marks)
                .map_or_else(|| J::String("[nested too deeply]".into()), J::String),
            _ => J::Object(serde_json::Map::new()),
        };
        *pos += subtree_size(&node);
        return stand_in;
    }
    *pos += 1;
    match node {
        Node::String(s) => {
            marks.need_content(s);
            J::String(s.to_owned())
        }
        Node::Static(StaticNode::Null) => J::Null,
        Node::Static(StaticNode::Bool(b)) => J::Bool(b),
        Node::Static(_) => js::num_json(marks.node_num(&node).unwrap_or(f64::NAN)),
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

/// The JavaScript number a value converts to where Pi adds it (`total += v`): numbers as
/// they are, `null` as 0, booleans as 0/1, absent (`undefined`) and anything else as `NaN`
/// (see [`operand`] for what a string or object makes of the sum).
pub fn add_operand(v: Option<Val<'_, '_>>, marks: Marks<'_>) -> f64 {
    let Some(v) = v else { return f64::NAN };
    match v.node() {
        Node::Static(StaticNode::Null) => 0.0,
        Node::Static(StaticNode::Bool(b)) => f64::from(u8::from(b)),
        n => marks.node_num(&n).unwrap_or(f64::NAN),
    }
}

/// The JavaScript primitive a value is in `total += v` (`None` = the key is absent): objects
/// and arrays as the string `ToPrimitive` makes of them.
pub fn operand(v: Option<Val<'_, '_>>, marks: Marks<'_>) -> JsVal {
    let Some(v) = v else { return JsVal::Undefined };
    match v.node() {
        Node::String(s) => JsVal::Str(s.into()),
        Node::Static(StaticNode::Null) => JsVal::Null,
        Node::Static(StaticNode::Bool(b)) => JsVal::Bool(b),
        n @ Node::Static(_) => JsVal::Num(marks.node_num(&n).unwrap_or(f64::NAN)),
        Node::Object { .. } => JsVal::Str("[object Object]".into()),
        // Too deep for V8's join: the caller reports Pi's RangeError (see `array_to_string`).
        Node::Array { .. } => JsVal::Str(array_to_string(v, marks).unwrap_or_default().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tape(text: &str) -> (Vec<u8>, simd_json::Buffers) {
        (
            text.as_bytes().to_vec(),
            simd_json::Buffers::with_max_depth(1024, usize::MAX),
        )
    }

    #[test]
    fn stringify_lengths_of_strings() {
        assert_eq!(stringify_str_len("a\"b", Marks::default()), 6);
        assert_eq!(stringify_str_len("\u{1}", Marks::default()), 8);
        assert_eq!(stringify_str_len("😀", Marks::default()), 4);
        let stand_in = Marks {
            lone_surrogates: true,
            ..Marks::default()
        };
        assert_eq!(stringify_str_len("\u{ffff}", stand_in), 8);
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
            let (mut bytes, mut buffers) = tape(&text);
            let t = simd_json::to_tape_with_buffers(&mut bytes, &mut buffers).unwrap();
            assert_eq!(
                array_to_string(Val::root(&t), Marks::default()),
                expected,
                "{}",
                &text[..text.len().min(40)]
            );
        }
        let (mut bytes, mut buffers) = tape(&deep(MAX_STRINGIFY_DEPTH + 1, ""));
        let t = simd_json::to_tape_with_buffers(&mut bytes, &mut buffers).unwrap();
        assert_eq!(stringify_len_checked(Val::root(&t), Marks::default()), None);
        assert!(!nests_deeper_than(Val::root(&t), MAX_STRINGIFY_DEPTH + 1));
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
            let t = simd_json::to_tape(&mut bytes).unwrap();
            // 12345678901234567890 prints as 12345678901234567000: the same length.
            assert_eq!(
                stringify_len(Val::root(&t), Marks::default()),
                text.chars().count() as u64,
                "{text}"
            );
        }
    }

    #[test]
    fn repeated_keys_count_once_like_json_parse() {
        let mut bytes = br#"{"k":{"a":1,"a":22},"b":1.0,"c":1E2}"#.to_vec();
        let t = simd_json::to_tape(&mut bytes).unwrap();
        // JSON.stringify(JSON.parse(...)) === '{"k":{"a":22},"b":1,"c":100}'
        assert_eq!(
            stringify_len(Val::root(&t), Marks::default()),
            r#"{"k":{"a":22},"b":1,"c":100}"#.len() as u64
        );
    }

    /// Items, pairs and `get` walk the tape as the value nests; `get` keeps the last of a
    /// repeated key, as `JSON.parse` does.
    #[test]
    fn values_are_walked_like_parsed_json() {
        let mut bytes = br#"{"a":[1,{"x":[2,3]},"s"],"b":{"c":null},"a":7,"d":true}"#.to_vec();
        let t = simd_json::to_tape(&mut bytes).unwrap();
        let root = Val::root(&t);
        let keys: Vec<&str> = root.pairs().unwrap().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b", "a", "d"]);
        let first = root.pairs().unwrap().next().unwrap().1;
        let items: Vec<String> = first
            .items()
            .unwrap()
            .map(|v| to_json(v, Marks::default()).to_string())
            .collect();
        assert_eq!(items, ["1", r#"{"x":[2,3]}"#, r#""s""#]);
        assert_eq!(root.get("a").unwrap().number(Marks::default()), Some(7.0));
        assert!(root.get("b").unwrap().get("c").unwrap().is_null());
        assert!(root.get("d").unwrap().truthy());
        assert!(root.get("zz").is_none());
        assert!(first.get("x").is_none() && root.items().is_none());
    }
}
