//! Tape → typed entry: pull the fields pisa needs out of one parsed line.
//!
//! Each object is walked once; for a key that occurs twice the later value wins, as with
//! `JSON.parse`. Content is reduced to the character counts of `estimateTokens`.

use simd_json::StaticNode;
use simd_json::tape::{Node, Value as V};

use super::entry::*;
use crate::js::{self, Jv, Key, Marks, tape_nodes, utf16_len};

/// Per-line context the extraction needs.
#[derive(Debug, Clone, Copy)]
pub struct LineCtx {
    /// What the reader changed in the line (see `parse::text`).
    pub marks: Marks,
    /// Counter for ids that are objects or arrays (each one unique).
    pub unique_base: u32,
}

fn node<'t, 'i>(v: V<'t, 'i>) -> Node<'i> {
    tape_nodes(v)[0]
}

fn as_str<'i>(v: V<'_, 'i>) -> Option<&'i str> {
    match node(v) {
        Node::String(s) => Some(s),
        _ => None,
    }
}

fn is_null(v: V<'_, '_>) -> bool {
    matches!(node(v), Node::Static(StaticNode::Null))
}

fn number(v: V<'_, '_>, marks: Marks) -> Option<f64> {
    marks.node_num(&tape_nodes(v)[0])
}

/// JavaScript truthiness of a tape value.
fn truthy(v: V<'_, '_>) -> bool {
    match node(v) {
        Node::String(s) => !s.is_empty(),
        Node::Static(StaticNode::Null) => false,
        Node::Static(StaticNode::Bool(b)) => b,
        Node::Static(StaticNode::I64(i)) => i != 0,
        Node::Static(StaticNode::U64(u)) => u != 0,
        Node::Static(StaticNode::F64(f)) => f != 0.0 && !f.is_nan(),
        Node::Array { .. } | Node::Object { .. } => true,
    }
}

fn key_of(v: Option<V<'_, '_>>, ctx: &mut LineCtx) -> Key {
    let Some(v) = v else { return Key::Undefined };
    match node(v) {
        Node::String(s) => Key::Str(s.into()),
        Node::Static(StaticNode::Null) => Key::Null,
        Node::Static(StaticNode::Bool(b)) => Key::Bool(b),
        n @ Node::Static(_) => Key::num(ctx.marks.node_num(&n).unwrap_or(f64::NAN)),
        Node::Array { .. } | Node::Object { .. } => {
            ctx.unique_base = ctx.unique_base.wrapping_add(1);
            Key::Unique(ctx.unique_base, js::Opaque(Box::new(js::to_json(v, ctx.marks))))
        }
    }
}

fn jv(v: Option<V<'_, '_>>, marks: Marks) -> Jv {
    v.map(|v| js::to_json(v, marks))
}

fn str_box(v: Option<V<'_, '_>>) -> Option<Box<str>> {
    v.and_then(as_str).map(Into::into)
}

/// `x.length` where Pi reads it unguarded: UTF-16 units of a string, elements of an array,
/// `NaN` for other values (`(5).length` is `undefined`), `None` (throws) for `undefined`
/// and `null`.
fn js_len(v: Option<V<'_, '_>>, marks: Marks) -> Chars {
    match node(v?) {
        Node::String(s) => Some(js::str_len(s, marks) as f64),
        Node::Array { len, .. } => Some(len as f64),
        Node::Static(StaticNode::Null) => None,
        _ => Some(f64::NAN),
    }
}

/// Length of `String(x)` as `Array#join` writes an element: `null` as "", numbers and
/// booleans as JavaScript prints them, objects as `[object Object]`, arrays joined by `,` at
/// any depth. `None` where V8's recursive join throws (see [`js::array_to_string`]).
fn js_join_len(v: V<'_, '_>, marks: Marks) -> Option<u64> {
    let n = node(v);
    match n {
        Node::String(s) => Some(js::str_len(s, marks)),
        Node::Static(StaticNode::Null) => Some(0),
        Node::Static(StaticNode::Bool(b)) => Some(if b { 4 } else { 5 }),
        Node::Static(_) => marks.node_num(&n).map(|f| js::number_to_string(f).len() as u64),
        Node::Object { .. } => Some(15),
        Node::Array { .. } => js::array_to_string(v, marks).map(|s| utf16_len(&s)),
    }
}

/// Reduce message content to the counts of `estimateTokens` and `contentText`.
pub fn content_chars(v: Option<V<'_, '_>>, marks: Marks) -> ContentChars {
    let Some(v) = v else {
        return ContentChars {
            nullish: true,
            ..Default::default()
        };
    };
    match node(v) {
        Node::String(s) => {
            let n = js::str_len(s, marks);
            ContentChars {
                as_content: Some(n as f64),
                // `for (const block of "text")` visits one-character strings: nothing counts.
                as_assistant: Some(0.0),
                text_len: Some(n),
                nullish: false,
                is_string: true,
            }
        }
        Node::Static(StaticNode::Null) => ContentChars {
            nullish: true,
            ..Default::default()
        },
        Node::Array { .. } => {
            let arr = v.as_array().expect("array node");
            let mut content: Chars = Some(0.0);
            let mut assistant: Chars = Some(0.0);
            let mut text = Some(0u64);
            let mut text_blocks = 0u64;
            for block in arr.iter() {
                let Some(obj) = block.as_object() else {
                    if is_null(block) {
                        // `block.type` on null throws in every counting loop.
                        content = None;
                        assistant = None;
                        text = None;
                    }
                    continue;
                };
                let mut ty = None;
                let mut text_v = None;
                let mut thinking_v = None;
                let mut name_v = None;
                let mut args_v = None;
                for (k, val) in obj.iter() {
                    match k {
                        "type" => ty = Some(val),
                        "text" => text_v = Some(val),
                        "thinking" => thinking_v = Some(val),
                        "name" => name_v = Some(val),
                        "arguments" => args_v = Some(val),
                        _ => {}
                    }
                }
                match ty.and_then(as_str) {
                    Some("text") => {
                        // A string text (nearly always) is measured once for all three counts.
                        let (len, joined) = match text_v.map(node) {
                            Some(Node::String(s)) => {
                                let n = js::str_len(s, marks);
                                (Some(n as f64), Some(n))
                            }
                            _ => (
                                js_len(text_v, marks),
                                text_v.map_or(Some(0), |tv| js_join_len(tv, marks)),
                            ),
                        };
                        // estimateTextAndImageContentChars: `block.text &&` guards the length.
                        if text_v.is_some_and(truthy) {
                            content = content.zip(len).map(|(a, b)| a + b);
                        }
                        assistant = assistant.zip(len).map(|(a, b)| a + b);
                        // contentText joins `block.text` (undefined/null print as "").
                        text = text.zip(joined).map(|(a, b)| a + b);
                        text_blocks += 1;
                    }
                    Some("image") => content = content.map(|c| c + 4800.0),
                    Some("thinking") => {
                        assistant = assistant.zip(js_len(thinking_v, marks)).map(|(a, b)| a + b);
                    }
                    Some("toolCall") => {
                        let name = js_len(name_v, marks);
                        // `None` (Pi throws) where JSON.stringify cannot go that deep.
                        let args = args_v
                            .and_then(|a| js::stringify_len_checked(a, marks))
                            .map(|n| n as f64);
                        assistant = assistant.zip(name).zip(args).map(|((a, n), g)| a + n + g);
                    }
                    _ => {}
                }
            }
            let text = text.map(|t| t + text_blocks.saturating_sub(1));
            ContentChars {
                as_content: content,
                as_assistant: assistant,
                text_len: text,
                nullish: false,
                is_string: false,
            }
        }
        // Numbers, booleans and objects are not iterable: Pi's loops throw.
        _ => ContentChars::default(),
    }
}

/// Read a usage object (`None` when not an object).
pub fn usage_of(v: V<'_, '_>, marks: Marks) -> Option<Usage> {
    let obj = v.as_object()?;
    let (mut input, mut output, mut cr, mut cw, mut cw1h, mut reasoning, mut total, mut cost) =
        (None, None, None, None, None, None, None, None);
    for (k, val) in obj.iter() {
        match k {
            "input" => input = Some(val),
            "output" => output = Some(val),
            "cacheRead" => cr = Some(val),
            "cacheWrite" => cw = Some(val),
            "cacheWrite1h" => cw1h = Some(val),
            "reasoning" => reasoning = Some(val),
            "totalTokens" => total = Some(val),
            "cost" => cost = Some(val),
            _ => {}
        }
    }
    let mut u = Usage {
        input: js::js_add_operand(input, marks),
        output: js::js_add_operand(output, marks),
        cache_read: js::js_add_operand(cr, marks),
        cache_write: js::js_add_operand(cw, marks),
        cache_write_1h: js::js_add_operand(cw1h, marks),
        reasoning: js::js_add_operand(reasoning, marks),
        total_tokens: js::js_add_operand(total, marks),
        has_cost: false,
        cost_input: f64::NAN,
        cost_output: f64::NAN,
        cost_cache_read: f64::NAN,
        cost_cache_write: f64::NAN,
        cost_total: f64::NAN,
        odd: None,
        join_throws: false,
    };
    let mut cost_total = None;
    // `usage.cost.total` throws only on `undefined` or `null`; `"".total` is just undefined.
    u.has_cost = cost.is_some_and(|c| !is_null(c));
    if let Some(c) = cost.and_then(|c| c.as_object()) {
        for (k, val) in c.iter() {
            let f = js::js_add_operand(Some(val), marks);
            match k {
                "input" => u.cost_input = f,
                "output" => u.cost_output = f,
                "cacheRead" => u.cost_cache_read = f,
                "cacheWrite" => u.cost_cache_write = f,
                "total" => {
                    u.cost_total = f;
                    cost_total = Some(val);
                }
                _ => {}
            }
        }
    }
    let summed = [input, output, cr, cw, total, cost_total];
    let not_a_number = |v: &Option<V<'_, '_>>| v.is_some_and(|v| number(v, marks).is_none());
    if summed.iter().any(not_a_number) {
        u.odd = Some(Box::new(summed.map(|v| js::JsVal::from_tape(v, marks))));
        u.join_throws = [input, output, cr, cw, cost_total]
            .iter()
            .flatten()
            .any(|v| js::nests_deeper_than(*v, js::MAX_JOIN_DEPTH));
    }
    Some(u)
}

/// Read a message object (also used for a compaction's `systemMessage`).
pub fn message_of(v: V<'_, '_>, marks: Marks) -> Message {
    let Some(obj) = v.as_object() else {
        return Message {
            not_object: true,
            is_null: is_null(v),
            ..Default::default()
        };
    };
    let mut m = Message::default();
    let (mut role, mut content, mut usage, mut command, mut output, mut summary) = (None, None, None, None, None, None);
    let (mut sections, mut tools_added, mut tools_removed, mut timestamp) = (None, None, None, None);
    for (k, val) in obj.iter() {
        match k {
            "role" => role = Some(val),
            "content" => content = Some(val),
            "usage" => usage = Some(val),
            "provider" => m.provider = Some(js::to_json(val, marks)),
            "model" => m.model = Some(js::to_json(val, marks)),
            "responseModel" => m.response_model = Some(js::to_json(val, marks)),
            "api" => m.api = as_str(val).map(Into::into),
            "stopReason" => m.stop_reason = Some(js::to_json(val, marks)),
            "thinkingLevel" => m.thinking_level = as_str(val).map(Into::into),
            "timestamp" => timestamp = Some(val),
            "command" => command = Some(val),
            "output" => output = Some(val),
            "summary" => summary = Some(val),
            "sections" => sections = Some(val),
            "toolsAdded" => tools_added = Some(val),
            "toolsRemoved" => tools_removed = Some(val),
            _ => {}
        }
    }
    m.role = match role {
        None => Role::Missing,
        Some(r) => match as_str(r) {
            Some(s) => Role::from_name(s),
            None => Role::NonString(js::js_string_of(&Some(js::to_json(r, marks))).into()),
        },
    };
    m.timestamp_ms = timestamp.and_then(|t| number(t, marks));
    m.has_content_key = content.is_some();
    m.content = content_chars(content, marks);
    if let Some(arr) = content.and_then(|c| c.as_array()) {
        for block in arr.iter() {
            if is_null(block) {
                m.null_block = true;
            } else if block.get("type").and_then(as_str) == Some("toolCall") {
                m.tool_calls += 1;
            }
        }
    }
    m.has_usage_key = usage.is_some();
    if let Some(u) = usage {
        m.usage = usage_of(u, marks);
        m.usage_not_object = m.usage.is_none();
        m.usage_truthy = truthy(u);
    }
    m.own_chars = match m.role {
        Role::BashExecution => js_len(command, marks).zip(js_len(output, marks)).map(|(a, b)| a + b),
        Role::BranchSummary | Role::CompactionSummary => js_len(summary, marks),
        _ => None,
    };
    if m.role == Role::System {
        m.system = Some(Box::new(system_info(
            &m.content,
            sections,
            tools_added,
            tools_removed,
            timestamp,
            marks,
        )));
    }
    m
}

fn system_info(
    content: &ContentChars,
    sections: Option<V<'_, '_>>,
    tools_added: Option<V<'_, '_>>,
    tools_removed: Option<V<'_, '_>>,
    timestamp: Option<V<'_, '_>>,
    marks: Marks,
) -> SystemInfo {
    let mut info = SystemInfo::default();
    // Pi normalises a null system content to "" before estimating.
    let mut chars = if content.nullish { Some(0.0) } else { content.as_content };
    if let Some(obj) = sections.and_then(|s| s.as_object()) {
        for (name, val) in obj.iter() {
            if as_str(val).is_some_and(|s| marks.cut(s).is_some()) {
                js::note_cut_read();
            }
            if is_null(val) {
                info.sections.push((name.into(), None));
            } else {
                // `if (section) chars += section.length`: falsy values add nothing.
                let len = if truthy(val) {
                    js_len(Some(val), marks)
                } else {
                    Some(0.0)
                };
                chars = chars.zip(len).map(|(a, b)| a + b);
                info.sections.push((name.into(), Some(len)));
            }
        }
    }
    if let Some(t) = tools_added.filter(|t| truthy(*t)) {
        chars = chars
            .zip(js::stringify_len_checked(t, marks))
            .map(|(c, n)| c + n as f64);
    }
    let mut ctx = LineCtx {
        marks,
        unique_base: u32::MAX / 2,
    };
    // getCurrentTools: `for (const tool of message.toolsAdded ?? [])`, keyed by `tool.name`.
    for tool in js_iter(tools_added, &mut info.tools_throw) {
        let (name, len) = match tool {
            Iterated::Value(t) => {
                // Replayed inside an array: one level more for JSON.stringify.
                info.tools_throw |= js::nests_deeper_than(t, js::MAX_STRINGIFY_DEPTH - 1);
                (key_of(t.get("name"), &mut ctx), js::stringify_len(t, marks))
            }
            Iterated::Char(c) => (Key::Undefined, js::stringify_str_len(c, marks)),
        };
        info.tools_added.push((name, len));
    }
    for tool in js_iter(tools_removed, &mut info.tools_throw) {
        info.tools_removed.push(match tool {
            Iterated::Value(t) => key_of(t.get("name"), &mut ctx),
            Iterated::Char(_) => Key::Undefined,
        });
    }
    info.timestamp = match timestamp {
        None => Presence::Absent,
        Some(t) if is_null(t) => Presence::Null,
        Some(_) => Presence::Set,
    };
    info.own_chars = chars;
    info
}

/// An item of a JavaScript `for…of` over a JSON value.
enum Iterated<'t, 'i> {
    Value(V<'t, 'i>),
    /// One code point of a string, as a one-character string.
    Char(&'i str),
}

/// `for (const x of v ?? [])`: an array's items, a string's code points, nothing for
/// `null`/absent; anything else (and a `null` item, whose `.name` Pi reads) sets `throws`.
fn js_iter<'t, 'i>(v: Option<V<'t, 'i>>, throws: &mut bool) -> Vec<Iterated<'t, 'i>> {
    let Some(v) = v else { return Vec::new() };
    match node(v) {
        Node::Static(StaticNode::Null) => Vec::new(),
        Node::String(s) => s
            .char_indices()
            .map(|(i, c)| Iterated::Char(&s[i..i + c.len_utf8()]))
            .collect(),
        Node::Array { .. } => {
            let items: Vec<_> = v.as_array().map(|a| a.iter().collect()).unwrap_or_default();
            *throws |= items.iter().any(|item| is_null(*item));
            items.into_iter().map(Iterated::Value).collect()
        }
        _ => {
            *throws = true;
            Vec::new()
        }
    }
}

/// Turn one parsed line into an entry. `v` is the line's root value (already known truthy).
pub fn entry_of(v: V<'_, '_>, line: u32, offset: u64, ctx: &mut LineCtx) -> Entry {
    let mut e = Entry {
        line,
        offset,
        ty: EntryType::NoType,
        id: Key::Undefined,
        parent: Key::Undefined,
        timestamp: None,
        body: Body::None,
    };
    let Some(obj) = v.as_object() else {
        e.ty = EntryType::NonObject(match node(v) {
            Node::String(_) => NonObject::String,
            Node::Array { .. } => NonObject::Array,
            Node::Static(StaticNode::Bool(_)) => NonObject::Boolean,
            _ => NonObject::Number,
        });
        return e;
    };
    let marks = ctx.marks;
    let mut f = Fields::default();
    for (k, val) in obj.iter() {
        match k {
            "type" => f.ty = Some(val),
            "id" => f.id = Some(val),
            "parentId" => f.parent = Some(val),
            "timestamp" => f.timestamp = Some(val),
            "message" => f.message = Some(val),
            "summary" => f.summary = Some(val),
            "firstKeptEntryId" => f.first_kept = Some(val),
            "firstKeptEntryIndex" => f.first_kept_index = Some(val),
            "tokensBefore" => f.tokens_before = Some(val),
            "usage" => f.usage = Some(val),
            "systemMessage" => f.system_message = Some(val),
            "targetId" => f.target = Some(val),
            "replacement" => f.replacement = Some(val),
            "kind" => f.kind = Some(val),
            "provider" => f.provider = Some(val),
            "model" => f.model = Some(val),
            "modelId" => f.model_id = Some(val),
            "thinkingLevel" => f.thinking_level = Some(val),
            "content" => f.content = Some(val),
            "name" => f.name = Some(val),
            "version" => f.version = Some(val),
            "cwd" => f.cwd = Some(val),
            "parentSession" => f.parent_session = Some(val),
            _ => {}
        }
    }
    e.ty = match f.ty.and_then(as_str) {
        Some(s) => EntryType::from_name(s),
        None => EntryType::NoType,
    };
    e.id = key_of(f.id, ctx);
    e.parent = key_of(f.parent, ctx);
    e.timestamp = f.timestamp.and_then(as_str).map(Into::into);
    let usage = |u: Option<V<'_, '_>>| -> (Option<Usage>, bool) {
        match u {
            Some(u) if truthy(u) => {
                let parsed = usage_of(u, marks);
                let bad = parsed.is_none();
                (parsed, bad)
            }
            _ => (None, false),
        }
    };
    e.body = match e.ty {
        EntryType::Session => Body::Header(Box::new(Header {
            id: str_box(f.id),
            version: jv(f.version, marks),
            cwd: jv(f.cwd, marks),
            parent_session: jv(f.parent_session, marks),
            timestamp: jv(f.timestamp, marks),
        })),
        EntryType::Message => match f.message {
            Some(m) => Body::Message(Box::new(message_of(m, marks))),
            None => Body::Message(Box::new(Message {
                not_object: true,
                is_null: true,
                ..Default::default()
            })),
        },
        EntryType::Compaction => {
            let (u, bad) = usage(f.usage);
            Body::Compaction(Box::new(Compaction {
                summary_chars: js_len(f.summary, marks),
                first_kept: key_of(f.first_kept, ctx),
                first_kept_index: f.first_kept_index.and_then(|v| number(v, marks)),
                tokens_before: jv(f.tokens_before, marks),
                usage: u,
                usage_not_object: bad,
                system_message: f
                    .system_message
                    .filter(|s| truthy(*s))
                    .map(|s| Box::new(message_of(s, marks))),
            }))
        }
        EntryType::BranchSummary => {
            let (u, bad) = usage(f.usage);
            Body::BranchSummary(Box::new(BranchSummary {
                has_summary: f.summary.is_some_and(truthy),
                summary_chars: js_len(f.summary, marks),
                usage: u,
                usage_not_object: bad,
            }))
        }
        EntryType::ContextEdit => Body::ContextEdit(Box::new(ContextEdit {
            target: key_of(f.target, ctx),
            replacement: match f.replacement {
                None => Replacement::Absent,
                Some(r) if is_null(r) => Replacement::Null,
                Some(r) => match r.as_object() {
                    Some(o) => {
                        let content = o.iter().filter(|(k, _)| *k == "content").map(|(_, v)| v).last();
                        Replacement::Content(content_chars(content, marks))
                    }
                    // A scalar replacement: `replacement.content` is undefined.
                    None => Replacement::Content(content_chars(None, marks)),
                },
            },
        })),
        EntryType::Usage => Body::Usage(Box::new(UsageEntry {
            kind: jv(f.kind, marks),
            provider: jv(f.provider, marks),
            model: jv(f.model, marks),
            usage: f.usage.and_then(|u| usage_of(u, marks)),
            usage_not_object: f.usage.is_none_or(|u| u.as_object().is_none()),
        })),
        EntryType::ModelChange => Body::ModelChange(Box::new(ModelChange {
            provider: jv(f.provider, marks),
            model_id: jv(f.model_id, marks),
        })),
        EntryType::ThinkingLevelChange => Body::ThinkingLevel(jv(f.thinking_level, marks)),
        EntryType::CustomMessage => Body::CustomMessage(Box::new(CustomMessage {
            // createCustomMessage(entry.content ?? [])
            content: match f.content {
                Some(c) if !is_null(c) => content_chars(Some(c), marks),
                _ => ContentChars {
                    as_content: Some(0.0),
                    as_assistant: Some(0.0),
                    text_len: Some(0),
                    nullish: false,
                    is_string: false,
                },
            },
        })),
        EntryType::SessionInfo => Body::SessionInfo(jv(f.name, marks)),
        _ => Body::None,
    };
    e
}

#[derive(Default)]
struct Fields<'t, 'i> {
    ty: Option<V<'t, 'i>>,
    id: Option<V<'t, 'i>>,
    parent: Option<V<'t, 'i>>,
    timestamp: Option<V<'t, 'i>>,
    message: Option<V<'t, 'i>>,
    summary: Option<V<'t, 'i>>,
    first_kept: Option<V<'t, 'i>>,
    first_kept_index: Option<V<'t, 'i>>,
    tokens_before: Option<V<'t, 'i>>,
    usage: Option<V<'t, 'i>>,
    system_message: Option<V<'t, 'i>>,
    target: Option<V<'t, 'i>>,
    replacement: Option<V<'t, 'i>>,
    kind: Option<V<'t, 'i>>,
    provider: Option<V<'t, 'i>>,
    model: Option<V<'t, 'i>>,
    model_id: Option<V<'t, 'i>>,
    thinking_level: Option<V<'t, 'i>>,
    content: Option<V<'t, 'i>>,
    name: Option<V<'t, 'i>>,
    version: Option<V<'t, 'i>>,
    cwd: Option<V<'t, 'i>>,
    parent_session: Option<V<'t, 'i>>,
}

/// Whether a parsed root value is one Pi drops (`null`, `0`, `false`, `""`).
pub fn is_falsy_root(v: V<'_, '_>) -> bool {
    !truthy(v)
}
