//! Typed entries: what pisa keeps of each parsed line.
//!
//! Only the fields that the tree, the projection, the estimate and the accounting need are
//! kept; message content is reduced to character counts at parse time, so a session in
//! memory is a small fraction of its file.

use crate::js::{JsVal, Jv, Key, StrJv};

/// The `type` of an entry, as Pi dispatches on it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq, Eq)]
pub enum EntryType {
    Session,
    Message,
    Compaction,
    BranchSummary,
    ContextEdit,
    Usage,
    ModelChange,
    ThinkingLevelChange,
    Custom,
    CustomMessage,
    Label,
    SessionInfo,
    /// Any other string type: kept and counted, otherwise ignored.
    Other(Box<str>),
    /// An object without a string `type`.
    NoType,
    /// A JSON value that is not an object (`42`, `[1]`, `"s"`, `true`): Pi keeps it as an entry.
    NonObject(NonObject),
}

/// The kind of a non-object entry, named as the oracle tallies it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Copy, PartialEq, Eq)]
pub enum NonObject {
    Number,
    String,
    Array,
    Boolean,
}

impl EntryType {
    /// From the `type` string.
    pub fn from_name(s: &str) -> EntryType {
        match s {
            "session" => EntryType::Session,
            "message" => EntryType::Message,
            "compaction" => EntryType::Compaction,
            "branch_summary" => EntryType::BranchSummary,
            "context_edit" => EntryType::ContextEdit,
            "usage" => EntryType::Usage,
            "model_change" => EntryType::ModelChange,
            "thinking_level_change" => EntryType::ThinkingLevelChange,
            "custom" => EntryType::Custom,
            "custom_message" => EntryType::CustomMessage,
            "label" => EntryType::Label,
            "session_info" => EntryType::SessionInfo,
            other => EntryType::Other(other.into()),
        }
    }

    /// One of the entry types Pi writes (the header included).
    pub fn is_pi(&self) -> bool {
        !matches!(self, EntryType::Other(_) | EntryType::NoType | EntryType::NonObject(_))
    }

    /// The name used in tallies: the type string, `(no type)`, or `(number)` etc.
    pub fn name(&self) -> &str {
        match self {
            EntryType::Session => "session",
            EntryType::Message => "message",
            EntryType::Compaction => "compaction",
            EntryType::BranchSummary => "branch_summary",
            EntryType::ContextEdit => "context_edit",
            EntryType::Usage => "usage",
            EntryType::ModelChange => "model_change",
            EntryType::ThinkingLevelChange => "thinking_level_change",
            EntryType::Custom => "custom",
            EntryType::CustomMessage => "custom_message",
            EntryType::Label => "label",
            EntryType::SessionInfo => "session_info",
            EntryType::Other(s) => s,
            EntryType::NoType => "(no type)",
            EntryType::NonObject(NonObject::Number) => "(number)",
            EntryType::NonObject(NonObject::String) => "(string)",
            EntryType::NonObject(NonObject::Array) => "(array)",
            EntryType::NonObject(NonObject::Boolean) => "(boolean)",
        }
    }
}

/// One parsed line that Pi keeps (header included).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Physical line number, 0-based.
    pub line: u32,
    /// Byte offset of the line in the file.
    pub offset: u64,
    pub ty: EntryType,
    pub id: Key,
    pub parent: Key,
    /// The entry's ISO timestamp, when it is a string.
    pub timestamp: Option<compact_str::CompactString>,
    pub body: Body,
}

impl Entry {
    /// Add `by` to the number of every object- or array-valued key of the entry (see
    /// `FileParser::absorb`).
    pub fn shift_unique(&mut self, by: u32) {
        let shift = |k: &mut Key| {
            if let Key::Unique(n, _) = k {
                *n = n.wrapping_add(by);
            }
        };
        shift(&mut self.id);
        shift(&mut self.parent);
        // A system message's tool names are keys too (`getCurrentTools`).
        let tools = |m: &mut Message| {
            for (name, _) in m.system.iter_mut().flat_map(|s| s.tools_added.iter_mut()) {
                shift(name);
            }
            for name in m.system.iter_mut().flat_map(|s| s.tools_removed.iter_mut()) {
                shift(name);
            }
        };
        match &mut self.body {
            Body::Compaction(c) => {
                shift(&mut c.first_kept);
                if let Some(m) = &mut c.system_message {
                    tools(m);
                }
            }
            Body::ContextEdit(e) => shift(&mut e.target),
            Body::Message(m) => tools(m),
            _ => {}
        }
    }
}

/// The type-specific part of an entry.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub enum Body {
    #[default]
    None,
    Header(Box<Header>),
    Message(Box<Message>),
    Compaction(Box<Compaction>),
    BranchSummary(Box<BranchSummary>),
    ContextEdit(Box<ContextEdit>),
    Usage(Box<UsageEntry>),
    ModelChange(Box<ModelChange>),
    ThinkingLevel(#[serde(with = "crate::js::jv_text")] Jv),
    CustomMessage(Box<CustomMessage>),
    SessionInfo(#[serde(with = "crate::js::jv_text")] Jv),
    /// A record of a subagent transcript (`{"version":1,"recordType":...}`, no `type`): not
    /// an entry Pi knows, read only where pisa reads the file as a transcript.
    Transcript(Box<TranscriptRecord>),
}

/// A record of a pi-subagents transcript artifact (see docs/subagents.md): the run and child it
/// belongs to, and for an assistant message record the child's message as it was.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct TranscriptRecord {
    pub run_id: Option<Box<str>>,
    pub child_index: Option<u32>,
    /// `recordType` is `message`, `role` is `assistant` and `message` is an object: the child's
    /// answer, with its usage.
    pub answer: Option<Box<Message>>,
}

/// One child's part of a subagent tool result's usage (pi-subagents >= 0.59 sums its children's
/// usage into the tool result's `usage`, and keeps each child's in `details.results[i]`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default, PartialEq)]
pub struct ChildUsage {
    /// `details.runId` (of the tool result, or of the completion it is in).
    pub run_id: Option<Box<str>>,
    /// `results[i].index`, else its place in `results`.
    pub index: u32,
    /// `results[i].sessionFile`: the child's session file, an absolute path of the machine
    /// that wrote it.
    pub session_file: Option<Box<str>>,
    /// `results[i].model`.
    pub model: Option<Box<str>>,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// `results[i].usage.cost` (a number: the total).
    pub cost: f64,
}

/// The header line (`type == "session"`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct Header {
    /// `id` when it is a string (Pi requires it for the first line).
    pub id: Option<Box<str>>,
    #[serde(with = "crate::js::jv_text")]
    pub version: Jv,
    #[serde(with = "crate::js::jv_text")]
    pub cwd: Jv,
    #[serde(with = "crate::js::jv_text")]
    pub parent_session: Jv,
    #[serde(with = "crate::js::jv_text")]
    pub timestamp: Jv,
}

/// Characters as `estimateTokens` counts them, as the JavaScript number Pi gets: `NaN` where
/// Pi reads `.length` of a value that has none (`(5).length`), and `None` where Pi's code
/// throws (`undefined.length`, iterating a number); pisa flags those sessions.
pub type Chars = Option<f64>;

/// Content reduced to the character counts the estimate needs.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Copy, Default, PartialEq)]
pub struct ContentChars {
    /// `estimateTextAndImageContentChars(content)` (user, toolResult, custom, system).
    pub as_content: Chars,
    /// The assistant loop over blocks (text, thinking, toolCall).
    pub as_assistant: Chars,
    /// `contentText(content).length` (system replay); `None` where it throws.
    pub text_len: Option<u64>,
    /// The content is `null` or absent (Pi normalises it for some roles).
    pub nullish: bool,
    /// The content is a string (a string replacement becomes one text block).
    pub is_string: bool,
}

/// The message of a `message` entry (or a compaction's `systemMessage`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct Message {
    /// `message` was not an object (`null` makes Pi's code throw).
    pub not_object: bool,
    pub is_null: bool,
    /// The role, when it is a string.
    pub role: Role,
    /// `"content" in message`.
    pub has_content_key: bool,
    pub content: ContentChars,
    /// Tool calls in an array content.
    pub tool_calls: u32,
    /// A `null` block in an array content (Pi's `c.type` throws on it).
    pub null_block: bool,
    /// `"usage" in message`.
    pub has_usage_key: bool,
    pub usage: Option<Usage>,
    /// `usage` present but not an object (or `null`).
    pub usage_not_object: bool,
    /// `usage` is truthy (`if (message.usage)`).
    pub usage_truthy: bool,
    pub provider: StrJv,
    pub model: StrJv,
    pub response_model: StrJv,
    pub api: Option<compact_str::CompactString>,
    pub stop_reason: StrJv,
    pub thinking_level: Option<compact_str::CompactString>,
    /// `message.timestamp` (Unix ms) when a number.
    pub timestamp_ms: Option<f64>,
    /// `responseId` of an assistant message, when a string.
    pub response_id: Option<ResponseId>,
    /// A tool result's `details.results[].usage` (and `details.completions[].results[]`),
    /// where a subagent extension put its children's usage.
    pub children: Vec<ChildUsage>,
    /// The subagent runs a tool result names (`details.runId`, `details.completions[].runId`),
    /// with or without their children's usage: what links a run's transcripts to its session.
    pub subagent_runs: Vec<Box<str>>,
    /// Characters for roles with their own rule (bashExecution, branchSummary, compactionSummary).
    pub own_chars: Chars,
    /// System-message data for the replay.
    pub system: Option<Box<SystemInfo>>,
}

impl Message {
    /// `Box::new(Message::default())`, in the box of a message of a file already done when this
    /// thread has one (see [`recycle`]).
    pub fn boxed() -> Box<Message> {
        SPARE.with_borrow_mut(Vec::pop).unwrap_or_default()
    }
}

/// An answer's `responseId`, inline up to 64 bytes. Ids are 28 (Anthropic's `msg_…`) to about
/// 55 bytes (OpenAI's `resp_…`), past the 24 a `CompactString` holds inline: nearly half the
/// answers of a realistic corpus allocated one, and freed it with the message (2-3 % of a scan).
/// Written and read as a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseId {
    Inline(arrayvec::ArrayString<64>),
    Long(Box<str>),
}

impl ResponseId {
    pub fn new(s: &str) -> ResponseId {
        arrayvec::ArrayString::from(s).map_or_else(|_| ResponseId::Long(s.into()), ResponseId::Inline)
    }

    pub fn as_str(&self) -> &str {
        match self {
            ResponseId::Inline(s) => s,
            ResponseId::Long(s) => s,
        }
    }
}

impl serde::Serialize for ResponseId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ResponseId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ResponseId::new(&String::deserialize(d)?))
    }
}

/// The most emptied message boxes a thread keeps for [`Message::boxed`] (about 2 MB): as many
/// as nearly every file has messages.
const SPARE_MAX: usize = 4096;

thread_local! {
    /// Emptied boxes of messages, for the next file's.
    #[allow(clippy::vec_box, reason = "the boxes are what is kept")]
    static SPARE: std::cell::RefCell<Vec<Box<Message>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Free this thread's spare message boxes: a scan's last file is done, and the memory is
/// wanted for what comes after it (an export's frames).
pub fn free_spare() {
    SPARE.with_borrow_mut(|spare| *spare = Vec::new());
}

/// Drop `entries`, keeping the boxes of their messages (emptied) for this thread's next
/// messages. A box per message line (half a kilobyte, hundreds of thousands of them in a scan)
/// was most of a scan's calls to the allocator, and freed a file at a time they went through
/// glibc's slow paths (its per-thread cache holds seven of a size); taken from here they cost
/// a pop.
pub fn recycle(entries: Vec<Entry>) {
    SPARE.with_borrow_mut(|spare| {
        for e in entries {
            if let Body::Message(mut m) = e.body
                && spare.len() < SPARE_MAX
            {
                *m = Message::default();
                spare.push(m);
            }
        }
    });
}

/// A message role.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    ToolResult,
    Custom,
    BashExecution,
    BranchSummary,
    CompactionSummary,
    HookMessage,
    /// Another string role.
    Other(Box<str>),
    /// Not a string: `String(role)` as JavaScript prints it.
    NonString(Box<str>),
    /// Absent.
    #[default]
    Missing,
}

impl Role {
    /// From the role string.
    pub fn from_name(s: &str) -> Role {
        match s {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "custom" => Role::Custom,
            "bashExecution" => Role::BashExecution,
            "branchSummary" => Role::BranchSummary,
            "compactionSummary" => Role::CompactionSummary,
            "hookMessage" => Role::HookMessage,
            other => Role::Other(other.into()),
        }
    }

    /// `String(role)`.
    pub fn name(&self) -> &str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::ToolResult => "toolResult",
            Role::Custom => "custom",
            Role::BashExecution => "bashExecution",
            Role::BranchSummary => "branchSummary",
            Role::CompactionSummary => "compactionSummary",
            Role::HookMessage => "hookMessage",
            Role::Other(s) | Role::NonString(s) => s,
            Role::Missing => "undefined",
        }
    }
}

/// What a system message contributes to the replayed system message.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct SystemInfo {
    /// Own estimate characters: content + truthy sections + `JSON.stringify(toolsAdded)`.
    pub own_chars: Chars,
    /// `sections` in `Object.entries` order: name and what it adds to the estimate
    /// (`None` = `null`, which removes the section in a replay).
    pub sections: Vec<(Box<str>, Option<Chars>)>,
    /// `toolsAdded`: tool name and `JSON.stringify(tool).length`.
    pub tools_added: Vec<(Key, u64)>,
    /// `toolsRemoved`: tool names.
    pub tools_removed: Vec<Key>,
    /// Replaying the tools would throw (`toolsAdded` not iterable, a `null` tool, or a tool
    /// nested too deeply for `JSON.stringify`).
    pub tools_throw: bool,
    /// The message's `timestamp` field: absent, `null`, or a value.
    pub timestamp: Presence,
}

/// Whether a field is absent, `null`, or set.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Copy, Default, PartialEq, Eq)]
pub enum Presence {
    #[default]
    Absent,
    Null,
    Set,
}

/// Billed usage as written, in JavaScript numbers: `NaN` stands for a field that is absent
/// (or not a number), which is what `total += usage.field` gives in Pi.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Usage {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub cache_write_1h: f64,
    pub reasoning: f64,
    pub total_tokens: f64,
    /// `cost` is present and not `null` (else Pi's `usage.cost.total` throws).
    pub has_cost: bool,
    pub cost_input: f64,
    pub cost_output: f64,
    pub cost_cache_read: f64,
    pub cost_cache_write: f64,
    pub cost_total: f64,
    /// `cost.totalFromProvider` is `true`: the provider reported the cost (OpenRouter), Pi did
    /// not compute it from its price table.
    pub cost_from_provider: bool,
    /// The fields Pi adds up (`input, output, cacheRead, cacheWrite, totalTokens, cost.total`)
    /// as written, when one of them is present but not a number: Pi's sums then follow
    /// JavaScript's `+` (a string concatenates). `None` in the normal case.
    pub odd: Option<Box<[JsVal; 6]>>,
    /// A field Pi adds up is an array nested deeper than V8's `Array#join` can go: Pi's
    /// `total += usage.field` throws a `RangeError`.
    pub join_throws: bool,
}

/// Indexes into [`Usage::operand`].
pub mod field {
    pub const INPUT: usize = 0;
    pub const OUTPUT: usize = 1;
    pub const CACHE_READ: usize = 2;
    pub const CACHE_WRITE: usize = 3;
    pub const TOTAL_TOKENS: usize = 4;
    pub const COST_TOTAL: usize = 5;
}

impl Usage {
    /// A field as the JavaScript value Pi adds.
    pub fn operand(&self, f: usize) -> JsVal {
        if let Some(odd) = &self.odd {
            return odd[f].clone();
        }
        JsVal::from_f64(match f {
            field::INPUT => self.input,
            field::OUTPUT => self.output,
            field::CACHE_READ => self.cache_read,
            field::CACHE_WRITE => self.cache_write,
            field::TOTAL_TOKENS => self.total_tokens,
            _ => self.cost_total,
        })
    }

    /// `calculateContextTokens`: `totalTokens || input + output + cacheRead + cacheWrite`.
    pub fn context_tokens(&self) -> JsVal {
        if self.odd.is_none() {
            let t = self.total_tokens;
            return JsVal::Num(if t != 0.0 && !t.is_nan() {
                t
            } else {
                self.input + self.output + self.cache_read + self.cache_write
            });
        }
        let total = self.operand(field::TOTAL_TOKENS);
        if total.truthy() {
            return total;
        }
        self.operand(field::INPUT)
            .plus(&self.operand(field::OUTPUT))
            .plus(&self.operand(field::CACHE_READ))
            .plus(&self.operand(field::CACHE_WRITE))
    }
}

/// A `compaction` entry.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct Compaction {
    /// `summary.length`, `None` when not a string (Pi throws on `undefined.length`).
    pub summary_chars: Chars,
    pub first_kept: Key,
    /// v1: `firstKeptEntryIndex` when it is a number.
    pub first_kept_index: Option<f64>,
    #[serde(with = "crate::js::jv_text")]
    pub tokens_before: Jv,
    pub usage: Option<Usage>,
    /// `usage` is truthy but not an object.
    pub usage_not_object: bool,
    /// A truthy `systemMessage`.
    pub system_message: Option<Box<Message>>,
}

/// A `branch_summary` entry.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct BranchSummary {
    /// `summary` is truthy.
    pub has_summary: bool,
    pub summary_chars: Chars,
    pub usage: Option<Usage>,
    pub usage_not_object: bool,
}

/// A `context_edit` entry.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct ContextEdit {
    pub target: Key,
    pub replacement: Replacement,
}

/// The `replacement` of a context edit.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub enum Replacement {
    /// Absent: Pi's `replacement.content` throws when the edit is applied.
    #[default]
    Absent,
    /// `null`: the target's messages are removed.
    Null,
    /// New content for the target's messages.
    Content(ContentChars),
}

/// A `usage` entry.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct UsageEntry {
    #[serde(with = "crate::js::jv_text")]
    pub kind: Jv,
    #[serde(with = "crate::js::jv_text")]
    pub provider: Jv,
    #[serde(with = "crate::js::jv_text")]
    pub model: Jv,
    pub usage: Option<Usage>,
    pub usage_not_object: bool,
}

/// A `model_change` entry.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct ModelChange {
    #[serde(with = "crate::js::jv_text")]
    pub provider: Jv,
    #[serde(with = "crate::js::jv_text")]
    pub model_id: Jv,
}

/// A `custom_message` entry.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct CustomMessage {
    /// `content ?? []`, counted as custom message content.
    pub content: ContentChars,
}

#[cfg(test)]
mod tests {
    use super::ResponseId;

    /// Ids up to 64 bytes stay inline, longer ones on the heap; either way the id reads back
    /// as it was and is written as the string itself (what a cache of an older build holds).
    #[test]
    fn response_ids_are_kept_whole_and_written_as_strings() {
        let anthropic = "msg_01XFDUDYJgAACzvnptvVoYEL";
        let long = "resp_".repeat(13) + "é";
        for (id, inline) in [("", true), (anthropic, true), (&"x".repeat(64), true), (&long, false)] {
            let r = ResponseId::new(id);
            assert_eq!(r.as_str(), id);
            assert_eq!(matches!(r, ResponseId::Inline(_)), inline, "{id}");
            let bytes = postcard::to_stdvec(&r).unwrap();
            assert_eq!(bytes, postcard::to_stdvec(id).unwrap());
            assert_eq!(postcard::from_bytes::<ResponseId>(&bytes).unwrap(), r);
        }
    }
}
