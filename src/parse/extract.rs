//! Tape → typed entry: pull the fields pisa needs out of one parsed line.
//!
//! Each object is walked once; for a key that occurs twice the later value wins, as with
//! `JSON.parse`. Content is reduced to the character counts of `estimateTokens`.

use simd_json::StaticNode;
use simd_json::tape::Node;

use super::entry::*;
use super::tape::{self, Marks, Val};
use crate::js::{self, Jv, Key, StrJv, utf16_len};

/// Per-line context the extraction needs.
#[derive(Debug, Clone, Copy)]
pub struct LineCtx<'c> {
    /// What the reader changed in the line (see `parse::repair` and `parse::cut`).
    pub marks: Marks<'c>,
    /// Counter for keys that are objects or arrays (each one unique in its file).
    pub unique_base: u32,
}

type V<'t, 'i> = Val<'t, 'i>;

/// A `Map` key as Pi uses the value: an object or array is a key of its own, equal to no
/// other (numbered by the file's counter).
fn key_of(v: Option<V<'_, '_>>, ctx: &mut LineCtx<'_>) -> Key {
    let Some(v) = v else { return Key::Undefined };
    match v.node() {
        Node::String(s) => Key::Str(s.into()),
        Node::Static(StaticNode::Null) => Key::Null,
        Node::Static(StaticNode::Bool(b)) => Key::Bool(b),
        n @ Node::Static(_) => Key::num(ctx.marks.node_num(&n).unwrap_or(f64::NAN)),
        Node::Array { .. } | Node::Object { .. } => {
            ctx.unique_base = ctx.unique_base.wrapping_add(1);
            Key::Unique(ctx.unique_base, js::Opaque(Box::new(tape::to_json(v, ctx.marks))))
        }
    }
}

fn jv(v: Option<V<'_, '_>>, marks: Marks<'_>) -> Jv {
    v.map(|v| tape::to_json(v, marks))
}

fn str_box(v: Option<V<'_, '_>>) -> Option<Box<str>> {
    v.and_then(Val::as_str).map(Into::into)
}

/// `x.length` where Pi reads it unguarded: UTF-16 units of a string, elements of an array,
/// `NaN` for other values (`(5).length` is `undefined`), `None` (throws) for `undefined`
/// and `null`.
fn js_len(v: Option<V<'_, '_>>, marks: Marks<'_>) -> Chars {
    match v?.node() {
        Node::String(s) => Some(tape::str_len(s, marks) as f64),
        Node::Array { len, .. } => Some(len as f64),
        Node::Static(StaticNode::Null) => None,
        _ => Some(f64::NAN),
    }
}

/// Length of `String(x)` as `Array#join` writes an element: `null` as "", numbers and
/// booleans as JavaScript prints them, objects as `[object Object]`, arrays joined by `,` at
/// any depth. `None` where V8's recursive join throws (see [`tape::array_to_string`]).
fn js_join_len(v: V<'_, '_>, marks: Marks<'_>) -> Option<u64> {
    let n = v.node();
    match n {
        Node::String(s) => Some(tape::str_len(s, marks)),
        Node::Static(StaticNode::Null) => Some(0),
        Node::Static(StaticNode::Bool(b)) => Some(if b { 4 } else { 5 }),
        Node::Static(_) => marks.node_num(&n).map(|f| js::number_to_string(f).len() as u64),
        Node::Object { .. } => Some(15),
        Node::Array { .. } => tape::array_to_string(v, marks).map(|s| utf16_len(&s)),
    }
}

fn add(a: Chars, b: Chars) -> Chars {
    a.zip(b).map(|(a, b)| a + b)
}

/// Reduce message content to the counts of `estimateTokens` and `contentText`.
pub fn content_chars(v: Option<V<'_, '_>>, marks: Marks<'_>) -> ContentChars {
    let Some(v) = v else {
        return ContentChars {
            nullish: true,
            ..Default::default()
        };
    };
    match v.node() {
        Node::String(s) => {
            let n = tape::str_len(s, marks);
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
        Node::Array { .. } => block_chars(v, marks),
        // Numbers, booleans and objects are not iterable: Pi's loops throw.
        _ => ContentChars::default(),
    }
}

/// The counts of an array of content blocks.
fn block_chars(blocks: V<'_, '_>, marks: Marks<'_>) -> ContentChars {
    let mut content: Chars = Some(0.0);
    let mut assistant: Chars = Some(0.0);
    let mut text = Some(0u64);
    let mut text_blocks = 0u64;
    for block in blocks.items().into_iter().flatten() {
        let Some(pairs) = block.pairs() else {
            if block.is_null() {
                // `block.type` on null throws in every counting loop.
                (content, assistant, text) = (None, None, None);
            }
            continue;
        };
        let (mut ty, mut text_v, mut thinking_v, mut name_v, mut args_v) = (None, None, None, None, None);
        for (k, val) in pairs {
            match k {
                "type" => ty = Some(val),
                "text" => text_v = Some(val),
                "thinking" => thinking_v = Some(val),
                "name" => name_v = Some(val),
                "arguments" => args_v = Some(val),
                _ => {}
            }
        }
        match ty.and_then(Val::as_str) {
            Some("text") => {
                // A string text (nearly always) is measured once for all three counts.
                let (len, joined) = match text_v.map(Val::node) {
                    Some(Node::String(s)) => {
                        let n = tape::str_len(s, marks);
                        (Some(n as f64), Some(n))
                    }
                    _ => (
                        js_len(text_v, marks),
                        text_v.map_or(Some(0), |tv| js_join_len(tv, marks)),
                    ),
                };
                // estimateTextAndImageContentChars: `block.text &&` guards the length.
                if text_v.is_some_and(Val::truthy) {
                    content = add(content, len);
                }
                assistant = add(assistant, len);
                // contentText joins `block.text` (undefined/null print as "").
                text = text.zip(joined).map(|(a, b)| a + b);
                text_blocks += 1;
            }
            Some("image") => content = content.map(|c| c + 4800.0),
            Some("thinking") => assistant = add(assistant, js_len(thinking_v, marks)),
            Some("toolCall") => {
                // `None` (Pi throws) where JSON.stringify cannot go that deep.
                let args = args_v
                    .and_then(|a| tape::stringify_len_checked(a, marks))
                    .map(|n| n as f64);
                assistant = add(add(assistant, js_len(name_v, marks)), args);
            }
            _ => {}
        }
    }
    ContentChars {
        as_content: content,
        as_assistant: assistant,
        text_len: text.map(|t| t + text_blocks.saturating_sub(1)),
        nullish: false,
        is_string: false,
    }
}

/// Read a usage object (`None` when not an object).
pub fn usage_of(v: V<'_, '_>, marks: Marks<'_>) -> Option<Usage> {
    let (mut input, mut output, mut cr, mut cw, mut cw1h, mut reasoning, mut total, mut cost) =
        (None, None, None, None, None, None, None, None);
    for (k, val) in v.pairs()? {
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
    let num = |v| tape::add_operand(v, marks);
    let mut u = Usage {
        input: num(input),
        output: num(output),
        cache_read: num(cr),
        cache_write: num(cw),
        cache_write_1h: num(cw1h),
        reasoning: num(reasoning),
        total_tokens: num(total),
        // `usage.cost.total` throws only on `undefined` or `null`; `"".total` is just undefined.
        has_cost: cost.is_some_and(|c| !c.is_null()),
        cost_input: f64::NAN,
        cost_output: f64::NAN,
        cost_cache_read: f64::NAN,
        cost_cache_write: f64::NAN,
        cost_total: f64::NAN,
        cost_from_provider: false,
        odd: None,
        join_throws: false,
    };
    let mut cost_total = None;
    for (k, val) in cost.and_then(Val::pairs).into_iter().flatten() {
        let f = num(Some(val));
        match k {
            "input" => u.cost_input = f,
            "output" => u.cost_output = f,
            "cacheRead" => u.cost_cache_read = f,
            "cacheWrite" => u.cost_cache_write = f,
            "total" => {
                u.cost_total = f;
                cost_total = Some(val);
            }
            "totalFromProvider" => u.cost_from_provider = matches!(val.node(), Node::Static(StaticNode::Bool(true))),
            _ => {}
        }
    }
    let summed = [input, output, cr, cw, total, cost_total];
    let not_a_number = |v: &Option<V<'_, '_>>| v.is_some_and(|v| v.number(marks).is_none());
    if summed.iter().any(not_a_number) {
        u.odd = Some(Box::new(summed.map(|v| tape::operand(v, marks))));
        u.join_throws = [input, output, cr, cw, cost_total]
            .iter()
            .flatten()
            .any(|v| tape::nests_deeper_than(*v, tape::MAX_JOIN_DEPTH));
    }
    Some(u)
}

/// The fields of a message object pisa reads (the later of a repeated key).
#[derive(Default)]
struct MessageFields<'t, 'i> {
    role: Option<V<'t, 'i>>,
    content: Option<V<'t, 'i>>,
    usage: Option<V<'t, 'i>>,
    command: Option<V<'t, 'i>>,
    output: Option<V<'t, 'i>>,
    summary: Option<V<'t, 'i>>,
    sections: Option<V<'t, 'i>>,
    tools_added: Option<V<'t, 'i>>,
    tools_removed: Option<V<'t, 'i>>,
    timestamp: Option<V<'t, 'i>>,
    details: Option<V<'t, 'i>>,
}

/// Read a message object (also used for a compaction's `systemMessage`).
pub fn message_of(v: V<'_, '_>, ctx: &mut LineCtx<'_>) -> Message {
    let marks = ctx.marks;
    let Some(pairs) = v.pairs() else {
        return Message {
            not_object: true,
            is_null: v.is_null(),
            ..Default::default()
        };
    };
    let mut m = Message::default();
    let mut f = MessageFields::default();
    for (k, val) in pairs {
        match k {
            "role" => f.role = Some(val),
            "content" => f.content = Some(val),
            "usage" => f.usage = Some(val),
            "provider" => m.provider = StrJv::of(Some(tape::to_json(val, marks))),
            "model" => m.model = StrJv::of(Some(tape::to_json(val, marks))),
            "responseModel" => m.response_model = StrJv::of(Some(tape::to_json(val, marks))),
            "api" => m.api = val.as_str().map(Into::into),
            "stopReason" => m.stop_reason = StrJv::of(Some(tape::to_json(val, marks))),
            "thinkingLevel" => m.thinking_level = val.as_str().map(Into::into),
            "timestamp" => f.timestamp = Some(val),
            "command" => f.command = Some(val),
            "output" => f.output = Some(val),
            "summary" => f.summary = Some(val),
            "sections" => f.sections = Some(val),
            "toolsAdded" => f.tools_added = Some(val),
            "toolsRemoved" => f.tools_removed = Some(val),
            "responseId" => m.response_id = val.as_str().map(ResponseId::new),
            "details" => f.details = Some(val),
            _ => {}
        }
    }
    m.role = match f.role {
        None => Role::Missing,
        Some(r) => match r.as_str() {
            Some(s) => Role::from_name(s),
            None => Role::NonString(js::js_string_of_value(&tape::to_json(r, marks)).into()),
        },
    };
    m.timestamp_ms = f.timestamp.and_then(|t| t.number(marks));
    m.has_content_key = f.content.is_some();
    m.content = content_chars(f.content, marks);
    for block in f.content.and_then(Val::items).into_iter().flatten() {
        if block.is_null() {
            m.null_block = true;
        } else if block.get("type").and_then(Val::as_str) == Some("toolCall") {
            m.tool_calls += 1;
        }
    }
    m.has_usage_key = f.usage.is_some();
    if let Some(u) = f.usage {
        m.usage = usage_of(u, marks);
        m.usage_not_object = m.usage.is_none();
        m.usage_truthy = u.truthy();
    }
    m.own_chars = match m.role {
        Role::BashExecution => add(js_len(f.command, marks), js_len(f.output, marks)),
        Role::BranchSummary | Role::CompactionSummary => js_len(f.summary, marks),
        _ => None,
    };
    if m.role == Role::System {
        m.system = Some(Box::new(system_info(&m.content, &f, ctx)));
    }
    if m.role == Role::ToolResult
        && let Some(details) = f.details
    {
        (m.children, m.subagent_runs) = children(details, marks);
    }
    m
}

/// The children's usage a subagent tool result carries in its `details`: `results[i].usage`
/// (`{input, output, cacheRead, cacheWrite, cost, turns}`), and the same in each of
/// `completions[].results[]` (`bg_wait`). Results without a usage object are left out; the
/// run ids are kept either way.
fn children(details: V<'_, '_>, marks: Marks<'_>) -> (Vec<ChildUsage>, Vec<Box<str>>) {
    let mut out = Vec::new();
    let mut runs = Vec::new();
    let mut add = |holder: V<'_, '_>| {
        let run_id: Option<Box<str>> = holder.get("runId").and_then(Val::as_str).map(Into::into);
        runs.extend(run_id.clone());
        for (i, r) in holder
            .get("results")
            .and_then(Val::items)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let Some(u) = r.get("usage").filter(|u| u.pairs().is_some()) else {
                continue;
            };
            let num = |k: &str| u.get(k).and_then(|v| v.number(marks)).unwrap_or(0.0);
            out.push(ChildUsage {
                run_id: run_id.clone(),
                index: r
                    .get("index")
                    .and_then(|v| v.number(marks))
                    .filter(|n| n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(n))
                    .map_or(i as u32, |n| n as u32),
                session_file: r.get("sessionFile").and_then(Val::as_str).map(Into::into),
                model: r.get("model").and_then(Val::as_str).map(Into::into),
                input: num("input"),
                output: num("output"),
                cache_read: num("cacheRead"),
                cache_write: num("cacheWrite"),
                cost: num("cost"),
            });
        }
    };
    add(details);
    for c in details.get("completions").and_then(Val::items).into_iter().flatten() {
        add(c);
    }
    (out, runs)
}

/// What a system message adds to the estimate and to the replayed prompt: its sections and
/// its tools, named as `getCurrentTools` keys them (`tool.name`, objects each a key of their
/// own within the file, like every other object-valued key).
fn system_info(content: &ContentChars, f: &MessageFields<'_, '_>, ctx: &mut LineCtx<'_>) -> SystemInfo {
    let marks = ctx.marks;
    let mut info = SystemInfo::default();
    // Pi normalises a null system content to "" before estimating.
    let mut chars = if content.nullish { Some(0.0) } else { content.as_content };
    for (name, val) in f.sections.and_then(Val::pairs).into_iter().flatten() {
        if let Some(s) = val.as_str() {
            marks.need_content(s);
        }
        if val.is_null() {
            info.sections.push((name.into(), None));
        } else {
            // `if (section) chars += section.length`: falsy values add nothing.
            let len = if val.truthy() {
                js_len(Some(val), marks)
            } else {
                Some(0.0)
            };
            chars = add(chars, len);
            info.sections.push((name.into(), Some(len)));
        }
    }
    if let Some(t) = f.tools_added.filter(|t| t.truthy()) {
        chars = chars
            .zip(tape::stringify_len_checked(t, marks))
            .map(|(c, n)| c + n as f64);
    }
    // getCurrentTools: `for (const tool of message.toolsAdded ?? [])`, keyed by `tool.name`.
    for tool in js_iter(f.tools_added, &mut info.tools_throw) {
        let (name, len) = match tool {
            Iterated::Value(t) => {
                // Replayed inside an array: one level more for JSON.stringify.
                info.tools_throw |= tape::nests_deeper_than(t, tape::MAX_STRINGIFY_DEPTH - 1);
                (key_of(t.get("name"), ctx), tape::stringify_len(t, marks))
            }
            Iterated::Char(c) => (Key::Undefined, tape::stringify_str_len(c, marks)),
        };
        info.tools_added.push((name, len));
    }
    for tool in js_iter(f.tools_removed, &mut info.tools_throw) {
        info.tools_removed.push(match tool {
            Iterated::Value(t) => key_of(t.get("name"), ctx),
            Iterated::Char(_) => Key::Undefined,
        });
    }
    info.timestamp = match f.timestamp {
        None => Presence::Absent,
        Some(t) if t.is_null() => Presence::Null,
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
    match v.node() {
        Node::Static(StaticNode::Null) => Vec::new(),
        Node::String(s) => s
            .char_indices()
            .map(|(i, c)| Iterated::Char(&s[i..i + c.len_utf8()]))
            .collect(),
        Node::Array { .. } => {
            let items: Vec<_> = v.items().into_iter().flatten().collect();
            *throws |= items.iter().any(|item| item.is_null());
            items.into_iter().map(Iterated::Value).collect()
        }
        _ => {
            *throws = true;
            Vec::new()
        }
    }
}

/// The fields of an entry pisa reads (the later of a repeated key).
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
    record_type: Option<V<'t, 'i>>,
    run_id: Option<V<'t, 'i>>,
    child_index: Option<V<'t, 'i>>,
    role: Option<V<'t, 'i>>,
}

impl<'t, 'i> Fields<'t, 'i> {
    fn of(pairs: impl Iterator<Item = (&'i str, V<'t, 'i>)>) -> Fields<'t, 'i> {
        let mut f = Fields::default();
        for (k, val) in pairs {
            let slot = match k {
                "type" => &mut f.ty,
                "id" => &mut f.id,
                "parentId" => &mut f.parent,
                "timestamp" => &mut f.timestamp,
                "message" => &mut f.message,
                "summary" => &mut f.summary,
                "firstKeptEntryId" => &mut f.first_kept,
                "firstKeptEntryIndex" => &mut f.first_kept_index,
                "tokensBefore" => &mut f.tokens_before,
                "usage" => &mut f.usage,
                "systemMessage" => &mut f.system_message,
                "targetId" => &mut f.target,
                "replacement" => &mut f.replacement,
                "kind" => &mut f.kind,
                "provider" => &mut f.provider,
                "model" => &mut f.model,
                "modelId" => &mut f.model_id,
                "thinkingLevel" => &mut f.thinking_level,
                "content" => &mut f.content,
                "name" => &mut f.name,
                "version" => &mut f.version,
                "cwd" => &mut f.cwd,
                "parentSession" => &mut f.parent_session,
                "recordType" => &mut f.record_type,
                "runId" => &mut f.run_id,
                "childIndex" => &mut f.child_index,
                "role" => &mut f.role,
                _ => continue,
            };
            *slot = Some(val);
        }
        f
    }
}

/// Turn one parsed line into an entry. `v` is the line's root value (already known truthy).
pub fn entry_of(v: V<'_, '_>, line: u32, offset: u64, ctx: &mut LineCtx<'_>) -> Entry {
    let mut e = Entry {
        line,
        offset,
        ty: EntryType::NoType,
        id: Key::Undefined,
        parent: Key::Undefined,
        timestamp: None,
        body: Body::None,
    };
    let Some(pairs) = v.pairs() else {
        e.ty = EntryType::NonObject(match v.node() {
            Node::String(_) => NonObject::String,
            Node::Array { .. } => NonObject::Array,
            Node::Static(StaticNode::Bool(_)) => NonObject::Boolean,
            _ => NonObject::Number,
        });
        return e;
    };
    let f = Fields::of(pairs);
    e.ty = match f.ty.and_then(Val::as_str) {
        Some(s) => EntryType::from_name(s),
        None => EntryType::NoType,
    };
    e.id = key_of(f.id, ctx);
    e.parent = key_of(f.parent, ctx);
    e.timestamp = f.timestamp.and_then(Val::as_str).map(Into::into);
    e.body = body_of(&e.ty, &f, ctx);
    e
}

/// The type-specific part of an entry of type `ty`.
fn body_of(ty: &EntryType, f: &Fields<'_, '_>, ctx: &mut LineCtx<'_>) -> Body {
    let marks = ctx.marks;
    match ty {
        EntryType::Session => Body::Header(Box::new(Header {
            id: str_box(f.id),
            version: jv(f.version, marks),
            cwd: jv(f.cwd, marks),
            parent_session: jv(f.parent_session, marks),
            timestamp: jv(f.timestamp, marks),
        })),
        EntryType::Message => Body::Message(Box::new(match f.message {
            Some(m) => message_of(m, ctx),
            None => Message {
                not_object: true,
                is_null: true,
                ..Default::default()
            },
        })),
        EntryType::Compaction => Body::Compaction(Box::new(compaction_of(f, ctx))),
        EntryType::BranchSummary => {
            let (usage, usage_not_object) = summary_usage(f.usage, marks);
            Body::BranchSummary(Box::new(BranchSummary {
                has_summary: f.summary.is_some_and(Val::truthy),
                summary_chars: js_len(f.summary, marks),
                usage,
                usage_not_object,
            }))
        }
        EntryType::ContextEdit => Body::ContextEdit(Box::new(ContextEdit {
            target: key_of(f.target, ctx),
            replacement: match f.replacement {
                None => Replacement::Absent,
                Some(r) if r.is_null() => Replacement::Null,
                // A scalar replacement: `replacement.content` is undefined.
                Some(r) => Replacement::Content(content_chars(r.get("content"), marks)),
            },
        })),
        EntryType::Usage => Body::Usage(Box::new(UsageEntry {
            kind: jv(f.kind, marks),
            provider: jv(f.provider, marks),
            model: jv(f.model, marks),
            usage: f.usage.and_then(|u| usage_of(u, marks)),
            usage_not_object: f.usage.is_none_or(|u| u.pairs().is_none()),
        })),
        EntryType::ModelChange => Body::ModelChange(Box::new(ModelChange {
            provider: jv(f.provider, marks),
            model_id: jv(f.model_id, marks),
        })),
        EntryType::ThinkingLevelChange => Body::ThinkingLevel(jv(f.thinking_level, marks)),
        EntryType::CustomMessage => Body::CustomMessage(Box::new(CustomMessage {
            // createCustomMessage(entry.content ?? [])
            content: match f.content {
                Some(c) if !c.is_null() => content_chars(Some(c), marks),
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
        EntryType::NoType if f.record_type.is_some_and(|r| r.as_str().is_some()) => {
            Body::Transcript(Box::new(transcript_record(f, ctx)))
        }
        _ => Body::None,
    }
}

/// A record of a subagent transcript (see docs/subagents.md §2.6).
fn transcript_record(f: &Fields<'_, '_>, ctx: &mut LineCtx<'_>) -> TranscriptRecord {
    let marks = ctx.marks;
    let answer =
        f.record_type.and_then(Val::as_str) == Some("message") && f.role.and_then(Val::as_str) == Some("assistant");
    TranscriptRecord {
        run_id: str_box(f.run_id),
        child_index: f
            .child_index
            .and_then(|v| v.number(marks))
            .filter(|n| n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(n))
            .map(|n| n as u32),
        answer: f
            .message
            .filter(|m| answer && m.pairs().is_some())
            .map(|m| Box::new(message_of(m, ctx))),
    }
}

fn compaction_of(f: &Fields<'_, '_>, ctx: &mut LineCtx<'_>) -> Compaction {
    let marks = ctx.marks;
    let (usage, usage_not_object) = summary_usage(f.usage, marks);
    Compaction {
        summary_chars: js_len(f.summary, marks),
        first_kept: key_of(f.first_kept, ctx),
        first_kept_index: f.first_kept_index.and_then(|v| v.number(marks)),
        tokens_before: jv(f.tokens_before, marks),
        usage,
        usage_not_object,
        system_message: f
            .system_message
            .filter(|s| s.truthy())
            .map(|s| Box::new(message_of(s, ctx))),
    }
}

/// The usage of a compaction or branch summary, which Pi reads only when it is truthy, and
/// whether it was there but not an object.
fn summary_usage(u: Option<V<'_, '_>>, marks: Marks<'_>) -> (Option<Usage>, bool) {
    match u {
        Some(u) if u.truthy() => {
            let parsed = usage_of(u, marks);
            let bad = parsed.is_none();
            (parsed, bad)
        }
        _ => (None, false),
    }
}
