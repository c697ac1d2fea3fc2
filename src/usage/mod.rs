//! What was billed: usage records from every source, Pi's session totals, and the
//! fork-aware identity that lets a corpus count each billed call once.
//!
//! Pi's totals (`getSessionStats`, `getUsageCostBreakdown`) are JavaScript sums in file
//! order: a missing field turns a sum into `NaN`, and pisa reproduces that bit for bit.
//! The records themselves read a missing number as 0 and say which fields were missing.

use std::borrow::Cow;
use std::hash::Hash;

use compact_str::CompactString;
use hashbrown::HashMap;

use crate::js::JsVal;
use crate::js::{self, Jv, StrJv};
use crate::parse::entry::{Body, ChildUsage, Entry, Message, ResponseId, Role, TranscriptRecord, Usage, field};
use crate::tree::Tree;

/// Where a billed usage was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `message.usage` of an assistant message.
    Assistant,
    /// `usage` of a `usage` entry.
    Usage,
    /// `message.usage` of a toolResult message.
    Tool,
    /// `usage` of a compaction entry.
    Compaction,
    /// `usage` of a branch_summary entry.
    BranchSummary,
    /// One child's part of a subagent tool result's usage (`details.results[i].usage`).
    Subagent,
    /// An answer read from a subagent transcript artifact (counted only where no session
    /// holds the same call).
    Transcript,
}

impl Source {
    /// The name used in reports and exports.
    pub fn name(self) -> &'static str {
        match self {
            Source::Assistant => "assistant",
            Source::Usage => "usage",
            Source::Tool => "tool",
            Source::Compaction => "compaction",
            Source::BranchSummary => "branch_summary",
            Source::Subagent => "subagent",
            Source::Transcript => "transcript",
        }
    }
}

/// Bits of [`UsageRecord::missing`]: which token or cost fields the file did not have.
pub mod missing {
    pub const INPUT: u16 = 1;
    pub const OUTPUT: u16 = 2;
    pub const CACHE_READ: u16 = 4;
    pub const CACHE_WRITE: u16 = 8;
    pub const TOTAL_TOKENS: u16 = 16;
    pub const COST: u16 = 32;
    pub const COST_TOTAL: u16 = 64;
}

/// One billed usage (one row of the usage frame), its texts owned.
pub type UsageRecord = Record<CompactString>;

/// A [`UsageRecord`] as the frames read it back from the spill: its texts borrowed from the
/// spilled bytes. Read back as records, each text was made a `CompactString` again (one
/// allocated in the heap when longer than 24 bytes, as model names often are) only for the
/// frame to copy it into a column.
pub type RecordView<'a> = Record<&'a str>;

/// One billed usage, its texts of type `S`: owned ([`UsageRecord`]) or borrowed
/// ([`RecordView`]). postcard writes and reads both alike.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record<S> {
    /// Index of the entry in `getEntries()`.
    pub entry: u32,
    /// The entry's id (`#<n>` for migrated v1 files), when it has one.
    pub entry_id: Option<S>,
    pub source: Source,
    /// `kind` of a usage entry.
    pub kind: Option<S>,
    pub provider: Option<S>,
    pub model: Option<S>,
    pub response_model: Option<S>,
    pub api: Option<S>,
    pub stop_reason: Option<S>,
    pub thinking_level: Option<S>,
    /// The entry's ISO timestamp.
    pub timestamp: Option<S>,
    /// The message's Unix-ms timestamp.
    pub message_timestamp: Option<f64>,
    /// The child whose usage a [`Source::Subagent`] record is.
    #[serde(skip)]
    pub child: Option<Box<ChildUsage>>,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// Part of `cache_write` (never added again).
    pub cache_write_1h: Option<f64>,
    /// Part of `output` (never added again).
    pub reasoning: Option<f64>,
    pub total_tokens: f64,
    pub cost_input: f64,
    pub cost_output: f64,
    pub cost_cache_read: f64,
    pub cost_cache_write: f64,
    pub cost_total: f64,
    /// `cost.totalFromProvider` was `true`: the provider reported the cost, Pi's price table did
    /// not make it (so a recalculation may differ).
    pub cost_from_provider: bool,
    /// [`missing`] bits.
    pub missing: u16,
    pub on_active_path: bool,
    /// Identity of the billed call across files: the same call copied into a fork has the same.
    #[serde(skip)]
    pub identity: u128,
    /// Another session, earlier in the corpus, holds the same billed call.
    pub inherited: bool,
}

impl<S> Record<S> {
    /// `input + output + cacheRead + cacheWrite`.
    pub fn tokens(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// Sums of billed usage in pisa's own terms: missing numbers read as 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub cost: f64,
}

/// Sums exactly as `createUsageTotals`/`addUsageToTotals` keep them: JavaScript `+=` over
/// whatever the file holds, so a missing field makes `NaN` and a string concatenates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PiTotals {
    pub input: JsVal,
    pub output: JsVal,
    pub cache_read: JsVal,
    pub cache_write: JsVal,
    pub cost: JsVal,
}

impl PiTotals {
    /// `addUsageToTotals`; `Err` where Pi's `usage.cost.total` throws.
    pub fn add(&mut self, u: &Usage) -> Result<(), &'static str> {
        if !u.has_cost {
            return Err("usage without a cost object (usage.cost.total throws)");
        }
        if u.join_throws {
            return Err("a usage field is an array nested too deeply for JavaScript (RangeError)");
        }
        self.input.add_assign(&u.operand(field::INPUT));
        self.output.add_assign(&u.operand(field::OUTPUT));
        self.cache_read.add_assign(&u.operand(field::CACHE_READ));
        self.cache_write.add_assign(&u.operand(field::CACHE_WRITE));
        self.cost.add_assign(&u.operand(field::COST_TOTAL));
        Ok(())
    }

    /// `input + output + cacheRead + cacheWrite`, evaluated left to right as JavaScript does.
    pub fn tokens(&self) -> JsVal {
        self.input
            .plus(&self.output)
            .plus(&self.cache_read)
            .plus(&self.cache_write)
    }
}

impl Totals {
    /// Add a record (missing numbers as 0).
    pub fn add_record(&mut self, r: &UsageRecord) {
        self.input += r.input;
        self.output += r.output;
        self.cache_read += r.cache_read;
        self.cache_write += r.cache_write;
        self.cost += r.cost_total;
    }

    /// `input + output + cacheRead + cacheWrite`.
    pub fn tokens(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    /// Associative merge of two sums.
    pub fn merge(&mut self, o: &Totals) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.cost += o.cost;
    }
}

/// `getSessionStats()` without the file and context fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub total_messages: u64,
    pub totals: PiTotals,
}

/// Per-source sums, as the oracle's `usageBySource` prints them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BySource {
    pub assistant: PiTotals,
    pub tool_result: PiTotals,
    pub usage_entry: PiTotals,
    pub compaction: PiTotals,
    pub branch_summary: PiTotals,
}

/// One group of `getUsageCostBreakdown`.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakdownRow {
    pub key: String,
    pub cost: JsVal,
    pub tokens: JsVal,
}

/// Everything accounting computes for one session.
#[derive(Debug, Clone, Default)]
pub struct Accounting {
    pub stats: Stats,
    pub breakdown: Vec<BreakdownRow>,
    /// `String(kind)` → (count, totals), in first-seen order.
    pub by_kind: Vec<(String, u64, PiTotals)>,
    pub by_source: BySource,
    pub records: Vec<UsageRecord>,
    /// Why Pi's code would throw computing these totals.
    pub pi_error: Option<&'static str>,
}

/// The usage a `Tools/summaries` or model group is keyed by.
const TOOLS_KEY: &str = "Tools/summaries";

/// Account every entry of a session. `on_path[i]` says whether entry `i` is on the active path.
pub fn account(tree: &Tree, on_path: &[bool]) -> Accounting {
    let mut a = Accountant::default();
    // Room for the records at once (at most one per usage, one more per subagent child):
    // growing the list copied each record again.
    let records: usize = tree
        .entries
        .iter()
        .map(|e| match &e.body {
            Body::Message(m) => usize::from(m.usage.is_some()) + m.children.len(),
            Body::Usage(_) | Body::BranchSummary(_) | Body::Compaction(_) => 1,
            _ => 0,
        })
        .sum();
    a.acc.records.reserve(records);
    for (i, e) in tree.entries.iter().enumerate() {
        let active = on_path.get(i).copied().unwrap_or(false);
        a.entry(e, i as u32, active);
    }
    a.finish()
}

/// The breakdown group of a billed usage.
enum Group<'a> {
    /// Tool-result usage and summaries: [`TOOLS_KEY`].
    Tools,
    /// `provider/model`: `String(provider)` and `String(model)`.
    Model(Cow<'a, str>, Cow<'a, str>),
}

/// What [`account`] builds while it walks a session's entries in file order.
#[derive(Default)]
struct Accountant {
    acc: Accounting,
    /// `getUsageCostBreakdown`'s groups in first-seen order, and where each key is.
    groups: Vec<(String, PiTotals)>,
    group_index: HashMap<String, usize>,
    /// Where each usage kind is in `acc.by_kind`.
    kinds: HashMap<String, usize>,
    /// The group key being built (reused).
    key: String,
    /// Where the group of the last usage is in `groups`.
    last_group: usize,
}

impl Accountant {
    /// Pi's code would throw here (the first reason counts).
    fn fail(&mut self, why: &'static str) {
        self.acc.pi_error.get_or_insert(why);
    }

    /// Add `u` to `t`, noting where Pi's code would throw.
    fn add(t: &mut PiTotals, u: &Usage, err: &mut Option<&'static str>) {
        if let Err(e) = t.add(u) {
            err.get_or_insert(e);
        }
    }

    /// One billed usage: into Pi's totals, its source's sums and its breakdown group, and a
    /// record of it.
    fn bill<'m>(
        &mut self,
        (e, i, active): (&Entry, u32, bool),
        source: Source,
        u: &Usage,
        group: Group<'_>,
        fill: impl FnOnce(&mut UsageRecord) -> Option<&'m str>,
    ) {
        self.sum(source, u, group);
        self.acc.records.push(record(e, i, source, u, active, fill));
    }

    /// A usage into Pi's totals, its source's sums and its breakdown group.
    fn sum(&mut self, source: Source, u: &Usage, group: Group<'_>) {
        let acc = &mut self.acc;
        Self::add(&mut acc.stats.totals, u, &mut acc.pi_error);
        let sums = match source {
            Source::Assistant | Source::Transcript => &mut acc.by_source.assistant,
            Source::Usage => &mut acc.by_source.usage_entry,
            Source::Tool | Source::Subagent => &mut acc.by_source.tool_result,
            Source::Compaction => &mut acc.by_source.compaction,
            Source::BranchSummary => &mut acc.by_source.branch_summary,
        };
        Self::add(sums, u, &mut acc.pi_error);
        let key = match group {
            Group::Tools => TOOLS_KEY,
            Group::Model(provider, model) => {
                group_key(&mut self.key, &provider, &model);
                &self.key
            }
        };
        // The group of the usage before, most often; otherwise looked up by reference: a key
        // is allocated only the first time it is met.
        let at = match self.groups.get(self.last_group) {
            Some((last, _)) if last == key => self.last_group,
            _ => match self.group_index.get(key) {
                Some(&at) => at,
                None => {
                    self.groups.push((key.to_string(), PiTotals::default()));
                    self.group_index.insert(key.to_string(), self.groups.len() - 1);
                    self.groups.len() - 1
                }
            },
        };
        self.last_group = at;
        // Errors were already recorded by the sums above over the same usage.
        let _ = self.groups[at].1.add(u);
    }

    /// One entry of the session.
    fn entry(&mut self, e: &Entry, i: u32, active: bool) {
        let at = (e, i, active);
        match &e.body {
            Body::Usage(ue) => match &ue.usage {
                Some(u) if !ue.usage_not_object => {
                    self.kind(&ue.kind, u);
                    let group = Group::Model(js::js_string_of(&ue.provider), js::js_string_of(&ue.model));
                    self.bill(at, Source::Usage, u, group, |r| {
                        r.kind = ue
                            .kind
                            .as_ref()
                            .map(|k| CompactString::from(js::js_string_of_value(k).as_ref()));
                        r.provider = opt_string(&ue.provider);
                        r.model = opt_string(&ue.model);
                        None
                    });
                }
                _ => self.fail("usage entry without a usage object"),
            },
            Body::BranchSummary(bs) => {
                if bs.usage_not_object {
                    self.fail("branch_summary usage is not an object");
                }
                if let Some(u) = &bs.usage {
                    self.bill(at, Source::BranchSummary, u, Group::Tools, |_| None);
                }
            }
            Body::Compaction(c) => {
                if c.usage_not_object {
                    self.fail("compaction usage is not an object");
                }
                if let Some(u) = &c.usage {
                    self.bill(at, Source::Compaction, u, Group::Tools, |_| None);
                }
            }
            Body::Message(m) => self.message(at, m),
            _ => {}
        }
    }

    /// A usage entry's kind, counted with its sums.
    fn kind(&mut self, kind: &Jv, u: &Usage) {
        let k = js::js_string_of(kind).into_owned();
        let by_kind = &mut self.acc.by_kind;
        let at = *self.kinds.entry(k.clone()).or_insert_with(|| {
            by_kind.push((k, 0, PiTotals::default()));
            by_kind.len() - 1
        });
        by_kind[at].1 += 1;
        let _ = by_kind[at].2.add(u);
    }

    /// A message entry: Pi's message counts, and the usage of a tool result or an answer.
    fn message(&mut self, at: (&Entry, u32, bool), m: &Message) {
        let stats = &mut self.acc.stats;
        stats.total_messages += 1;
        if m.not_object && m.is_null {
            return self.fail("message entry without a message object");
        }
        match m.role {
            Role::User => stats.user_messages += 1,
            Role::ToolResult => {
                stats.tool_results += 1;
                match (&m.usage, m.usage_truthy) {
                    (_, false) => {}
                    (Some(u), true) => {
                        self.sum(Source::Tool, u, Group::Tools);
                        let (e, i, active) = at;
                        let whole = record(e, i, Source::Tool, u, active, |r| message_fields(r, m));
                        self.acc.records.extend(split_children(whole, &m.children));
                    }
                    (None, true) => self.fail("toolResult usage is not an object"),
                }
            }
            Role::Assistant => {
                stats.assistant_messages += 1;
                stats.tool_calls += u64::from(m.tool_calls);
                if m.null_block {
                    self.fail("assistant content holds a null block");
                }
                let model = match m.response_model.is_nullish() {
                    false => &m.response_model,
                    true => &m.model,
                };
                let group = Group::Model(m.provider.js_string(), model.js_string());
                match &m.usage {
                    Some(u) => self.bill(at, Source::Assistant, u, group, |r| message_fields(r, m)),
                    None => self.fail("assistant message without a usage object"),
                }
            }
            _ => {}
        }
    }

    /// The accounting, with the breakdown sorted as Pi sorts it.
    fn finish(self) -> Accounting {
        let mut acc = self.acc;
        let mut breakdown: Vec<BreakdownRow> = self
            .groups
            .into_iter()
            .map(|(key, t)| BreakdownRow {
                key,
                tokens: t.tokens(),
                cost: t.cost,
            })
            .filter(|r| r.cost.to_number() > 0.0 || r.tokens.to_number() > 0.0)
            .collect();
        // Array#sort is stable; `b.cost - a.cost` compares numbers, NaN as equal.
        breakdown.sort_by(|a, b| {
            b.cost
                .to_number()
                .partial_cmp(&a.cost.to_number())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        acc.breakdown = breakdown;
        acc
    }
}

/// Pi's grouping key `${provider}/${model}`, written into `key`.
fn group_key(key: &mut String, provider: &str, model: &str) {
    key.clear();
    key.push_str(provider);
    key.push('/');
    key.push_str(model);
}

fn opt_string(v: &Jv) -> Option<CompactString> {
    match v {
        None | Some(serde_json::Value::Null) => None,
        Some(_) => Some(CompactString::from(js::js_string_of(v).as_ref())),
    }
}

/// [`opt_string`] of a [`StrJv`]: a string is copied as it is (inline up to 24 bytes).
fn opt_str(v: &StrJv) -> Option<CompactString> {
    match v {
        StrJv::Str(s) => Some(s.clone()),
        _ if v.is_nullish() => None,
        _ => Some(CompactString::from(v.js_string().as_ref())),
    }
}

/// An answer's fields into its record; its `responseId`, which the record's [`identity`] hashes
/// and nothing else reads (it is not copied into the record: ids are longer than a
/// `CompactString` holds inline, and a copy was an allocation for each answer).
fn message_fields<'m>(r: &mut UsageRecord, m: &'m Message) -> Option<&'m str> {
    r.provider = opt_str(&m.provider);
    r.model = opt_str(&m.model);
    r.response_model = opt_str(&m.response_model);
    r.api = m.api.clone();
    r.stop_reason = opt_str(&m.stop_reason);
    r.thinking_level = m.thinking_level.clone();
    r.message_timestamp = m.timestamp_ms;
    m.response_id.as_ref().map(ResponseId::as_str)
}

/// A tool result's record, split where a subagent extension summed its children's usage into
/// it: one [`Source::Subagent`] record per child (its own calls are in its session file, when
/// that was scanned), and the rest of the tool result's usage, if any, as a tool record.
fn split_children(whole: UsageRecord, children: &[ChildUsage]) -> Vec<UsageRecord> {
    if children.is_empty() {
        return vec![whole];
    }
    let mut rest = whole.clone();
    let mut out = Vec::with_capacity(children.len() + 1);
    for c in children {
        let mut r = whole.clone();
        r.source = Source::Subagent;
        r.provider = None;
        r.model = c.model.as_deref().map(CompactString::from);
        r.response_model = None;
        (r.input, r.output, r.cache_read, r.cache_write) = (c.input, c.output, c.cache_read, c.cache_write);
        r.total_tokens = c.input + c.output + c.cache_read + c.cache_write;
        (r.cost_input, r.cost_output, r.cost_cache_read, r.cost_cache_write) = (0.0, 0.0, 0.0, 0.0);
        r.cost_total = c.cost;
        (r.cache_write_1h, r.reasoning, r.missing) = (None, None, 0);
        r.child = Some(Box::new(c.clone()));
        r.identity = identity(&r, None);
        rest.input -= r.input;
        rest.output -= r.output;
        rest.cache_read -= r.cache_read;
        rest.cache_write -= r.cache_write;
        rest.total_tokens -= r.total_tokens;
        rest.cost_total -= r.cost_total;
        out.push(r);
    }
    // What the children's usage does not account for (a tool's own calls, an old extension).
    let scale = whole.tokens().abs().max(1.0);
    let left = [rest.input, rest.output, rest.cache_read, rest.cache_write];
    if left.iter().any(|v| v.abs() > 1e-9 * scale) || rest.cost_total.abs() > 1e-12 {
        rest.identity = identity(&rest, None);
        out.push(rest);
    }
    out
}

/// The answers of a subagent transcript as billed records (their `entry` is the record's
/// place in the file). They are copies of the answers in the child's session, and have their
/// identity: a corpus counts them only where no session holds the same call.
pub fn transcript_records(records: &[TranscriptRecord]) -> Vec<UsageRecord> {
    let mut out = Vec::new();
    for (i, rec) in records.iter().enumerate() {
        let Some(m) = rec.answer.as_deref() else { continue };
        let Some(u) = &m.usage else { continue };
        let entry = Entry {
            line: i as u32,
            offset: 0,
            ty: crate::parse::entry::EntryType::NoType,
            id: crate::js::Key::Undefined,
            parent: crate::js::Key::Undefined,
            timestamp: None,
            body: Body::None,
        };
        out.push(record(&entry, i as u32, Source::Transcript, u, false, |r| {
            message_fields(r, m)
        }));
    }
    out
}

fn record<'m>(
    e: &Entry,
    i: u32,
    source: Source,
    u: &Usage,
    active: bool,
    fill: impl FnOnce(&mut UsageRecord) -> Option<&'m str>,
) -> UsageRecord {
    let mut miss = 0u16;
    let mut z = |v: f64, bit: u16| {
        if v.is_nan() {
            miss |= bit;
            0.0
        } else {
            v
        }
    };
    let mut r = UsageRecord {
        entry: i,
        entry_id: match &e.id {
            crate::js::Key::Undefined | crate::js::Key::Null => None,
            k => Some(CompactString::from(k.js_string().as_ref())),
        },
        source,
        kind: None,
        provider: None,
        model: None,
        response_model: None,
        api: None,
        stop_reason: None,
        thinking_level: None,
        timestamp: e.timestamp.clone(),
        message_timestamp: None,
        child: None,
        input: z(u.input, missing::INPUT),
        output: z(u.output, missing::OUTPUT),
        cache_read: z(u.cache_read, missing::CACHE_READ),
        cache_write: z(u.cache_write, missing::CACHE_WRITE),
        cache_write_1h: (!u.cache_write_1h.is_nan()).then_some(u.cache_write_1h),
        reasoning: (!u.reasoning.is_nan()).then_some(u.reasoning),
        total_tokens: z(u.total_tokens, missing::TOTAL_TOKENS),
        cost_input: if u.cost_input.is_nan() { 0.0 } else { u.cost_input },
        cost_output: if u.cost_output.is_nan() { 0.0 } else { u.cost_output },
        cost_cache_read: if u.cost_cache_read.is_nan() {
            0.0
        } else {
            u.cost_cache_read
        },
        cost_cache_write: if u.cost_cache_write.is_nan() {
            0.0
        } else {
            u.cost_cache_write
        },
        cost_total: z(
            u.cost_total,
            if u.has_cost { missing::COST_TOTAL } else { missing::COST },
        ),
        cost_from_provider: u.cost_from_provider,
        missing: 0,
        on_active_path: active,
        identity: 0,
        inherited: false,
    };
    r.missing = miss;
    let response_id = fill(&mut r);
    r.identity = identity(&r, response_id);
    r
}

/// The identity of a billed call across files, hashed to 128 bits, with its tokens and cost:
/// - an answer with a message timestamp: `(message timestamp, provider, model, responseId)`,
///   the same in the session that made the call, in a fork's copy of it, and in a subagent
///   transcript's copy (which has no entry timestamp);
/// - a child's part of a subagent tool result: the child (run, index, session file);
/// - anything else: `(source, entry timestamp, message timestamp, provider, model)`.
///
/// The entry id is left out on purpose: a fork of a v1 file copies lines without ids, which the
/// source only gets by migration.
fn identity(r: &UsageRecord, response_id: Option<&str>) -> u128 {
    thread_local! {
        static BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BYTES.with_borrow_mut(|bytes| {
        bytes.clear();
        feed(r, response_id, &mut Bytes(bytes));
        xxhash_rust::xxh3::xxh3_128(bytes)
    })
}

/// A `Hasher` that keeps the bytes it is fed, hashed at once by [`identity`]: xxh3's streaming
/// state cost a hundred instructions for each of the dozen small writes of a call.
struct Bytes<'a>(&'a mut Vec<u8>);

impl std::hash::Hasher for Bytes<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    fn finish(&self) -> u64 {
        unreachable!("identity hashes the bytes itself")
    }
}

/// What [`identity`] hashes of a call.
fn feed(r: &UsageRecord, response_id: Option<&str>, h: &mut impl std::hash::Hasher) {
    match (r.source, r.message_timestamp, &r.child) {
        (Source::Assistant | Source::Transcript, Some(ts), _) => {
            "answer".hash(h);
            ts.to_bits().hash(h);
            r.provider.hash(h);
            r.model.hash(h);
            response_id.hash(h);
        }
        (Source::Subagent, _, Some(c)) => {
            "child".hash(h);
            (&c.run_id, c.index, &c.session_file).hash(h);
        }
        _ => {
            r.source.hash(h);
            r.timestamp.hash(h);
            r.message_timestamp.map(f64::to_bits).hash(h);
            r.provider.hash(h);
            r.model.hash(h);
        }
    }
    for v in [r.input, r.output, r.cache_read, r.cache_write, r.cost_total] {
        v.to_bits().hash(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account_of(lines: &[&str]) -> Accounting {
        let tree = crate::tree::tree_of(lines);
        let on_path = vec![true; tree.entries.len()];
        account(&tree, &on_path)
    }

    const COST: &str = r#""cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.30000000000000004}"#;

    #[test]
    fn every_source_is_billed_and_grouped_like_pi() {
        let a = account_of(&[
            &format!(
                r#"{{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"assistant","content":[{{"type":"toolCall","name":"x","arguments":{{}}}}],"provider":"openrouter","model":"auto","responseModel":"gpt-5","usage":{{"input":10,"output":5,"cacheRead":1,"cacheWrite":2,"cacheWrite1h":1,"reasoning":3,"totalTokens":18,{COST}}},"stopReason":"toolUse","timestamp":5}}}}"#
            ),
            &format!(
                r#"{{"type":"message","id":"t","parentId":"a","message":{{"role":"toolResult","content":[],"usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,{COST}}}}}}}"#
            ),
            &format!(
                r#"{{"type":"usage","id":"w","parentId":"t","kind":"cache_warm","provider":"anthropic","model":"m","usage":{{"input":0,"output":0,"cacheRead":7,"cacheWrite":0,{COST}}}}}"#
            ),
            &format!(
                r#"{{"type":"compaction","id":"c","parentId":"w","summary":"s","firstKeptEntryId":"c","usage":{{"input":3,"output":1,"cacheRead":0,"cacheWrite":0,{COST}}}}}"#
            ),
            &format!(
                r#"{{"type":"branch_summary","id":"b","parentId":"c","summary":"s","usage":{{"input":2,"output":0,"cacheRead":0,"cacheWrite":0,{COST}}}}}"#
            ),
        ]);
        let sources: Vec<_> = a.records.iter().map(|r| r.source).collect();
        assert_eq!(
            sources,
            [
                Source::Assistant,
                Source::Tool,
                Source::Usage,
                Source::Compaction,
                Source::BranchSummary
            ]
        );
        assert_eq!(a.stats.tool_calls, 1);
        assert_eq!(a.stats.totals.input, JsVal::Num(16.0));
        let keys: Vec<_> = a.breakdown.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["Tools/summaries", "openrouter/gpt-5", "anthropic/m"]);
        let r = &a.records[0];
        assert_eq!(
            (r.cache_write_1h, r.reasoning, r.response_model.as_deref()),
            (Some(1.0), Some(3.0), Some("gpt-5"))
        );
        assert_eq!(a.by_kind[0].0, "cache_warm");
        assert!(a.pi_error.is_none());
    }

    #[test]
    fn a_missing_field_is_nan_for_pi_and_zero_for_the_record() {
        let a = account_of(&[&format!(
            r#"{{"type":"message","id":"a","parentId":null,"message":{{"role":"assistant","content":[],"usage":{{"input":10,"output":5,{COST}}}}}}}"#
        )]);
        assert!(a.stats.totals.cache_read.to_number().is_nan());
        let r = &a.records[0];
        assert_eq!(r.cache_read, 0.0);
        assert_eq!(r.missing & missing::CACHE_READ, missing::CACHE_READ);
        assert_eq!(r.tokens(), 15.0);
    }

    /// The identity is the one xxh3's streaming hasher gave for the same writes, and the one
    /// earlier versions computed (cached identities stay valid): one-shot xxh3 of the bytes
    /// equals streaming them, and a `responseId` hashed from the message is hashed as the copy
    /// in the record was.
    #[test]
    fn identity_is_the_streamed_hash_of_the_same_bytes() {
        let line = |provider: &str, rest: &str| {
            format!(
                r#"{{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"assistant","content":[],"provider":"{provider}","model":"m","usage":{{"input":3,"output":1,"cacheRead":0,"cacheWrite":0,{COST}}}{rest}}}}}"#
            )
        };
        let long = "p".repeat(300);
        let a = account_of(&[
            &line("p", r#","timestamp":7"#),
            &line(&long, r#","timestamp":7,"responseId":"r""#),
            &line("p", ""),
        ]);
        assert_eq!(a.records.len(), 3);
        let response_ids = [None, Some("r"), None];
        for (r, id) in a.records.iter().zip(response_ids) {
            let mut streamed = xxhash_rust::xxh3::Xxh3::new();
            feed(r, id, &mut streamed);
            assert_eq!(r.identity, streamed.digest128());
        }
        // What earlier versions computed, the response id copied into the record as a
        // `CompactString`.
        let before = [
            0x637f8fa1097bf4754cb89ac403a87c49u128,
            0x8bb0920e34b9e656e4faa27d52eaeecf,
            0xa9e2efef1cc19bf613a7f162d54bb306,
        ];
        assert_eq!(a.records.iter().map(|r| r.identity).collect::<Vec<_>>(), before);
    }

    #[test]
    fn identity_ignores_entry_ids_but_not_tokens() {
        let line = |id: &str, input: u32| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{{"role":"assistant","content":[],"provider":"p","model":"m","usage":{{"input":{input},"output":1,"cacheRead":0,"cacheWrite":0,{COST}}},"timestamp":7}}}}"#
            )
        };
        let a = account_of(&[&line("x", 1), &line("y", 1), &line("z", 2)]);
        assert_eq!(a.records[0].identity, a.records[1].identity);
        assert_ne!(a.records[0].identity, a.records[2].identity);
    }
}
