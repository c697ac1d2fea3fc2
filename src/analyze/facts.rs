//! What pisa reports of one file, as typed data: [`SessionFacts`] for a session, [`FileRecord`]
//! for a file that is not one or could not be read.
//!
//! `SessionFacts` serialized as JSON is a session object of `pisa sessions --json` (the corpus
//! adds `own` and `parentInCorpus`), field for field in the documented order. Keys that the
//! oracle also prints carry the oracle's names and meaning, so a differential test can compare
//! them one by one; pisa's own figures (project, activity, damage) follow. The same type, in
//! pisa's binary encoding, is what a worker leaves for the corpus step and what the cache keeps;
//! frames, tables and reports read its fields.

use serde::{Deserialize, Serialize};

use super::SessionAnalysis;
use crate::js::{self, JsVal, Json, Num};
use crate::parse::entry::{Body, EntryType};
use crate::parse::{LineStats, RejectReason};
use crate::project::Estimate;
use crate::tree::Tree;
use crate::usage::PiTotals;

/// The facts of one session file, in the order of the `sessions --json` object.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFacts {
    pub path: String,
    pub status: SessionStatus,
    pub bytes: u64,
    pub lines: u64,
    /// Header `id`, when it is a string.
    pub session_id: Option<String>,
    /// After Pi's in-memory migration: 3 for a v1 or v2 file.
    pub version: Json,
    pub migrated_from: Json,
    /// Header `cwd`, when it is a string.
    pub cwd: Json,
    pub parent_session: Json,
    pub header_timestamp: Json,
    /// Latest `session_info` name (an empty one clears it).
    pub name: Option<String>,
    pub entry_count: u64,
    pub entry_counts: Tally,
    pub extra_header_lines: u64,
    pub raw: Raw,
    pub message_counts: Tally,
    /// Pi's `getSessionStats`; `None` where Pi's code throws.
    pub stats: Option<Stats>,
    pub usage_breakdown: Vec<BreakdownRow>,
    pub usage_by_kind: Kinds,
    pub usage_by_source: BySource,
    pub leaf_id: Json,
    pub leaf_index: Option<u32>,
    pub leaf_type: Option<String>,
    pub active_path_length: u64,
    pub off_path_entries: u64,
    pub tree_roots: u64,
    pub context_entry_count: u64,
    pub context_entry_types: Tally,
    pub projected_message_count: u64,
    pub projected_roles: Tally,
    pub model: Option<ModelRef>,
    pub thinking_level: Json,
    pub context_edits: ContextEdits,
    pub compactions: Compactions,
    pub estimate: EstimateFacts,
    /// The context size Pi shows; `null` when unknown after a compaction.
    pub context_usage_tokens: JsVal,
    pub compaction_effects: Vec<Effect>,
    /// Header `cwd`, else the folder name decoded.
    pub project: String,
    /// The header timestamp, ISO 8601 UTC.
    pub started_at: Option<String>,
    /// Pi's own "modified" time in its session list.
    pub last_activity_at: Option<String>,
    /// Models that answered, most expensive first.
    pub models: Vec<String>,
    pub damage: Damage,
    /// Why Pi's own code would throw on this file.
    pub pi_error: Option<String>,
    /// Billed usage records in the file.
    pub usage_records: u64,
}

/// The `status` of a session: always `ok`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Ok,
}

/// Counts by name, in JavaScript's key order (a JSON object).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally(pub Vec<(String, u64)>);

impl Serialize for Tally {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, n)| (k, n)))
    }
}

impl<'de> Deserialize<'de> for Tally {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Tally, D::Error> {
        d.deserialize_map(PairsVisitor::default()).map(Tally)
    }
}

/// Reads a map into its pairs, in order.
struct PairsVisitor<V>(std::marker::PhantomData<V>);

impl<V> Default for PairsVisitor<V> {
    fn default() -> Self {
        PairsVisitor(std::marker::PhantomData)
    }
}

impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for PairsVisitor<V> {
    type Value = Vec<(String, V)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a map")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(pair) = map.next_entry()? {
            out.push(pair);
        }
        Ok(out)
    }
}

/// Line diagnostics (the oracle's `raw`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Raw {
    pub parsed_lines: u64,
    pub blank_lines: u64,
    pub unparsable_lines: u64,
    pub ends_with_newline: bool,
    pub pi_appends_newline: bool,
}

impl Raw {
    fn of(s: &LineStats) -> Raw {
        Raw {
            parsed_lines: s.parsed_lines,
            blank_lines: s.raw_blank_lines,
            unparsable_lines: s.lines - s.raw_blank_lines - s.parsed_lines,
            ends_with_newline: s.ends_with_newline,
            pi_appends_newline: !s.ends_with_newline,
        }
    }
}

/// `getSessionStats()` without the file and context fields.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub total_messages: u64,
    pub tokens: Tokens,
    pub cost: JsVal,
}

/// Pi's token sums (JavaScript `+=`: `NaN`, or a string, where the file holds such values).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    pub input: JsVal,
    pub output: JsVal,
    pub cache_read: JsVal,
    pub cache_write: JsVal,
    pub total: JsVal,
}

/// One group of `getUsageCostBreakdown`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BreakdownRow {
    pub key: String,
    pub cost: JsVal,
    pub tokens: JsVal,
}

/// Sums of one source or kind of usage.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sums {
    pub input: JsVal,
    pub output: JsVal,
    pub cache_read: JsVal,
    pub cache_write: JsVal,
    pub cost: JsVal,
}

impl From<&PiTotals> for Sums {
    fn from(t: &PiTotals) -> Sums {
        Sums {
            input: t.input.clone(),
            output: t.output.clone(),
            cache_read: t.cache_read.clone(),
            cache_write: t.cache_write.clone(),
            cost: t.cost.clone(),
        }
    }
}

/// The usage entries of one kind: how many, and their sums.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KindSums {
    pub count: u64,
    #[serde(flatten)]
    pub sums: Sums,
}

/// `usageByKind`: sums by `String(kind)`, in JavaScript's key order (a JSON object).
#[derive(Debug, Clone, Default)]
pub struct Kinds(pub Vec<(String, KindSums)>);

impl Serialize for Kinds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
        } else {
            // `flatten` needs a self-describing format: the binary form is a list.
            s.collect_seq(self.0.iter().map(|(k, v)| (k, v.count, &v.sums)))
        }
    }
}

impl<'de> Deserialize<'de> for Kinds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kinds, D::Error> {
        if d.is_human_readable() {
            return d.deserialize_map(PairsVisitor::default()).map(Kinds);
        }
        let list = Vec::<(String, u64, Sums)>::deserialize(d)?;
        Ok(Kinds(
            list.into_iter()
                .map(|(k, count, sums)| (k, KindSums { count, sums }))
                .collect(),
        ))
    }
}

/// `usageBySource`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BySource {
    pub assistant: Sums,
    pub tool_result: Sums,
    pub usage_entry: Sums,
    pub compaction: Sums,
    pub branch_summary: Sums,
}

impl From<&crate::usage::BySource> for BySource {
    fn from(b: &crate::usage::BySource) -> BySource {
        BySource {
            assistant: (&b.assistant).into(),
            tool_result: (&b.tool_result).into(),
            usage_entry: (&b.usage_entry).into(),
            compaction: (&b.compaction).into(),
            branch_summary: (&b.branch_summary).into(),
        }
    }
}

/// The projection's model.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRef {
    pub provider: Json,
    pub model_id: Json,
}

/// Counts of `context_edit` entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextEdits {
    pub total: u64,
    pub on_path: u64,
    pub in_context: u64,
    pub applied: u64,
    pub omitted: u64,
    pub replaced: u64,
}

/// The compactions of the session, and the latest on its active path.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compactions {
    pub total: u64,
    pub on_path: u64,
    pub latest_id: Json,
    pub latest_tokens_before: Json,
    pub latest_first_kept_entry_id: Json,
    /// The oracle's test, `firstKeptEntryId === id` (without [`Effect::retains_none`]'s
    /// check that there is an id).
    pub latest_retains_none: Option<bool>,
    pub latest_first_kept_on_path: Option<bool>,
    pub latest_has_system_message: Option<bool>,
}

/// Pi's `estimateProjectedContextTokens`: all `null` where Pi's code throws.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EstimateFacts {
    pub tokens: JsVal,
    pub usage_tokens: JsVal,
    pub trailing_tokens: Option<Num>,
    pub last_usage_index: Option<u64>,
}

impl From<&Estimate> for EstimateFacts {
    fn from(e: &Estimate) -> EstimateFacts {
        if e.unknown {
            return EstimateFacts {
                tokens: JsVal::Null,
                usage_tokens: JsVal::Null,
                trailing_tokens: None,
                last_usage_index: None,
            };
        }
        EstimateFacts {
            tokens: e.tokens.clone(),
            usage_tokens: e.usage_tokens.clone(),
            trailing_tokens: Some(Num(e.trailing_tokens)),
            last_usage_index: e.last_usage_index.map(|i| i as u64),
        }
    }
}

/// What one compaction did: the session as if its leaf were that compaction.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Effect {
    pub id: Json,
    pub on_active_path: bool,
    pub tokens_before: Json,
    pub first_kept_entry_id: Json,
    /// It keeps nothing: `firstKeptEntryId` is its own (truthy) id.
    pub retains_none: bool,
    pub has_system_message: bool,
    pub usage_tokens: JsVal,
    pub usage_cost: JsVal,
    pub path_length_at_compaction: Option<u64>,
    pub context_entries_after: Option<u64>,
    pub projected_messages_after: Option<u64>,
    /// `None` where the id cannot serve as a leaf; `Some(null)` where Pi's estimate throws.
    pub estimated_tokens_after: Option<JsVal>,
    pub entries_summarized: Option<u64>,
    pub entries_kept: Option<u64>,
    pub timestamp: Option<String>,
}

/// Line damage and a cut parent loop.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Damage {
    pub malformed_lines: u64,
    pub first_damage: Option<crate::parse::Damage>,
    pub pending_tail_bytes: u64,
    pub dropped_values: u64,
    pub blank_lines: u64,
    pub invalid_utf8_lines: u64,
    pub lone_surrogate_lines: u64,
    pub out_of_range_number_lines: u64,
    pub bom: bool,
    pub cyclic_path: bool,
}

impl Damage {
    /// Lines were skipped or a parent loop was cut.
    pub fn any(&self) -> bool {
        self.malformed_lines > 0 || self.cyclic_path
    }
}

impl SessionFacts {
    /// The facts of a session found at `rel`.
    pub fn of(rel: &str, a: &SessionAnalysis) -> SessionFacts {
        let t = &a.tree;
        let s = &a.stats;
        let acc = &a.accounting;
        let entries = t.entries.len() as u64;
        SessionFacts {
            path: rel.to_string(),
            status: SessionStatus::Ok,
            bytes: s.bytes,
            lines: s.lines,
            session_id: t.header.id.as_deref().map(str::to_string),
            // Pi's migration rewrites the header's version in memory.
            version: if t.migrated_from.is_some() {
                Json(3.into())
            } else {
                Json::of(&t.header.version)
            },
            migrated_from: Json(t.migrated_from.clone().unwrap_or_default()),
            cwd: Json(
                t.header
                    .cwd
                    .clone()
                    .filter(serde_json::Value::is_string)
                    .unwrap_or_default(),
            ),
            parent_session: Json::of(&t.header.parent_session),
            header_timestamp: Json::of(&t.header.timestamp),
            name: a.name.clone(),
            entry_count: entries,
            entry_counts: Tally(super::tally(t.entries.iter().map(|e| e.ty.name()))),
            extra_header_lines: t.extra_header_lines,
            raw: Raw::of(s),
            message_counts: Tally(super::tally(t.entries.iter().filter_map(|e| match &e.body {
                Body::Message(m) if e.ty == EntryType::Message => Some(m.role.name()),
                _ => None,
            }))),
            stats: acc.pi_error.is_none().then(|| stats(a)),
            usage_breakdown: acc
                .breakdown
                .iter()
                .map(|r| BreakdownRow {
                    key: r.key.clone(),
                    cost: r.cost.clone(),
                    tokens: r.tokens.clone(),
                })
                .collect(),
            usage_by_kind: kinds(a),
            usage_by_source: (&acc.by_source).into(),
            leaf_id: entry_id(t, a.leaf),
            leaf_index: a.leaf,
            leaf_type: a.leaf.map(|i| t.entries[i as usize].ty.name().to_string()),
            active_path_length: a.active_path_length,
            off_path_entries: entries - a.active_path_length,
            tree_roots: a.tree_roots,
            context_entry_count: a.context_entry_count,
            context_entry_types: Tally(a.context_entry_types.clone()),
            projected_message_count: a.projected_message_count,
            projected_roles: Tally(a.projected_roles.clone()),
            model: a.model.as_ref().map(|(p, m)| ModelRef {
                provider: Json::of(p),
                model_id: Json::of(m),
            }),
            thinking_level: Json::of(&a.thinking_level),
            context_edits: a.edits,
            compactions: compactions(a),
            estimate: (&a.estimate).into(),
            context_usage_tokens: match (&a.context_usage_tokens, a.estimate.unknown) {
                (Some(tokens), false) => tokens.clone(),
                _ => JsVal::Null,
            },
            compaction_effects: effects(a),
            project: super::project_of(t, rel),
            started_at: a.started_ms.and_then(iso_ms),
            last_activity_at: a.last_activity_ms.and_then(iso_ms),
            models: a.models(),
            damage: damage(s, a.cyclic_path),
            pi_error: a.pi_error.map(str::to_string),
            usage_records: acc.records.len() as u64,
        }
    }
}

fn stats(a: &SessionAnalysis) -> Stats {
    let st = &a.accounting.stats;
    Stats {
        user_messages: st.user_messages,
        assistant_messages: st.assistant_messages,
        tool_calls: st.tool_calls,
        tool_results: st.tool_results,
        total_messages: st.total_messages,
        tokens: Tokens {
            input: st.totals.input.clone(),
            output: st.totals.output.clone(),
            cache_read: st.totals.cache_read.clone(),
            cache_write: st.totals.cache_write.clone(),
            total: st.totals.tokens(),
        },
        cost: st.totals.cost.clone(),
    }
}

fn kinds(a: &SessionAnalysis) -> Kinds {
    let mut kinds: Vec<(String, KindSums)> = a
        .accounting
        .by_kind
        .iter()
        .map(|(k, n, t)| {
            (
                k.clone(),
                KindSums {
                    count: *n,
                    sums: t.into(),
                },
            )
        })
        .collect();
    kinds.sort_by(|a, b| js::cmp_utf16(&a.0, &b.0));
    Kinds(kinds)
}

fn entry_id(tree: &Tree, i: Option<u32>) -> Json {
    Json(i.map_or(serde_json::Value::Null, |i| tree.id_json(i)))
}

fn compactions(a: &SessionAnalysis) -> Compactions {
    let t = &a.tree;
    let latest = a.compactions.latest.map(|i| &t.entries[i as usize]);
    let latest_c = latest.and_then(|e| match &e.body {
        Body::Compaction(c) => Some(c),
        _ => None,
    });
    Compactions {
        total: a.compactions.total,
        on_path: a.compactions.on_path,
        latest_id: entry_id(t, a.compactions.latest),
        latest_tokens_before: Json(latest_c.and_then(|c| c.tokens_before.clone()).unwrap_or_default()),
        latest_first_kept_entry_id: Json(latest_c.map_or(serde_json::Value::Null, |c| t.ref_json(&c.first_kept))),
        latest_retains_none: latest.map(|e| matches!(&e.body, Body::Compaction(c) if c.first_kept == e.id)),
        latest_first_kept_on_path: latest.map(|_| a.compactions.latest_first_kept_on_path),
        latest_has_system_message: latest_c.map(|c| c.system_message.is_some()),
    }
}

fn effects(a: &SessionAnalysis) -> Vec<Effect> {
    let t = &a.tree;
    a.compactions()
        .map(|(eff, e, c)| {
            let mut u = PiTotals::default();
            if let Some(usage) = &c.usage {
                let _ = u.add(usage);
            }
            Effect {
                id: Json(t.id_json(eff.entry)),
                on_active_path: eff.on_active_path,
                tokens_before: Json::of(&c.tokens_before),
                first_kept_entry_id: Json(t.ref_json(&c.first_kept)),
                retains_none: crate::project::retains_none(e),
                has_system_message: c.system_message.is_some(),
                usage_tokens: u.tokens(),
                usage_cost: u.cost,
                path_length_at_compaction: eff.path_length,
                context_entries_after: eff.context_entries_after,
                projected_messages_after: eff.projected_messages_after,
                estimated_tokens_after: eff.estimated_tokens_after.as_ref().map(|x| match x.unknown {
                    true => JsVal::Null,
                    false => x.tokens.clone(),
                }),
                entries_summarized: eff.entries_summarized,
                entries_kept: eff.entries_kept,
                timestamp: e.timestamp.as_deref().map(str::to_string),
            }
        })
        .collect()
}

fn damage(s: &LineStats, cyclic_path: bool) -> Damage {
    Damage {
        malformed_lines: s.malformed_lines,
        first_damage: s.first_damage.clone(),
        pending_tail_bytes: s.pending_tail_bytes,
        dropped_values: s.dropped_values,
        blank_lines: s.blank_lines,
        invalid_utf8_lines: s.invalid_utf8_lines,
        lone_surrogate_lines: s.lone_surrogate_lines,
        out_of_range_number_lines: s.out_of_range_number_lines,
        bom: s.bom,
        cyclic_path,
    }
}

/// ISO 8601 (UTC, milliseconds) for Unix milliseconds.
pub fn iso_ms(ms: f64) -> Option<String> {
    let t = jiff::Timestamp::from_millisecond(ms as i64).ok()?;
    Some(format!("{t:.3}"))
}

/// A file that is not a session pisa could read: Pi refuses it, or it could not be read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileRecord {
    /// Relative to the scanned folder, `/`-separated.
    pub path: String,
    pub status: FileStatus,
    /// Why, in a line for people.
    pub reason: String,
}

/// Why a file holds no session pisa could read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum FileStatus {
    /// Pi's loader returns nothing for it.
    Rejected(Rejection),
    /// An I/O error, or a FIFO or device in the file's place.
    Unreadable,
    /// Removed between discovery and open.
    Gone,
    /// Written to while it was read, twice.
    Changed,
    /// An error in pisa, which only costs this file.
    Failed,
}

impl FileStatus {
    /// The `status` in `--json`.
    pub fn name(&self) -> &'static str {
        match self {
            FileStatus::Rejected(_) => "rejected",
            FileStatus::Unreadable => "unreadable",
            FileStatus::Gone => "gone",
            FileStatus::Changed => "changed",
            FileStatus::Failed => "failed",
        }
    }
}

/// What pisa learnt of a file Pi refuses.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rejection {
    pub bytes: u64,
    pub lines: u64,
    /// The oracle's `rejectReason` code.
    pub code: String,
    pub raw_blank_lines: u64,
    pub ends_with_newline: bool,
    /// Nothing in it says it is a session (see `analyze::not_a_session`): skipped as Pi
    /// skips it, not a cause of exit code 2.
    pub not_session: bool,
    /// A subagent transcript artifact (its first record is `{"version":…,"recordType":…}`):
    /// read for the calls no session holds.
    pub transcript: bool,
}

impl FileRecord {
    /// A file Pi refuses (a subagent transcript with `transcript`).
    pub fn rejected(
        rel: &str,
        stats: &LineStats,
        reason: &RejectReason,
        not_session: bool,
        transcript: bool,
    ) -> FileRecord {
        FileRecord {
            path: rel.to_string(),
            status: FileStatus::Rejected(Rejection {
                bytes: stats.bytes,
                lines: stats.lines,
                code: reason.code().to_string(),
                raw_blank_lines: stats.raw_blank_lines,
                ends_with_newline: stats.ends_with_newline,
                not_session,
                transcript,
            }),
            reason: reason.message(),
        }
    }

    /// The file is not a session at all.
    pub fn not_session(&self) -> bool {
        matches!(&self.status, FileStatus::Rejected(r) if r.not_session)
    }

    /// The record as `sessions --json` lists it.
    pub fn document(&self) -> FileDocument<'_> {
        let r = match &self.status {
            FileStatus::Rejected(r) => Some(r),
            _ => None,
        };
        FileDocument {
            path: &self.path,
            status: self.status.name(),
            bytes: r.map(|r| r.bytes),
            lines: r.map(|r| r.lines),
            reject_reason: r.map(|r| r.code.as_str()),
            reason: &self.reason,
            not_session: r.map(|r| r.not_session),
            artifact: r.filter(|r| r.transcript).map(|_| "transcript"),
            raw: r.map(|r| RawOfRejected {
                blank_lines: r.raw_blank_lines,
                ends_with_newline: r.ends_with_newline,
            }),
        }
    }
}

/// A [`FileRecord`] in `sessions --json`: the oracle's keys for a rejected file, and only
/// `path`, `status` and `reason` for the others.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileDocument<'a> {
    pub path: &'a str,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reject_reason: Option<&'a str>,
    pub reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_session: Option<bool>,
    /// `transcript` for a subagent transcript artifact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawOfRejected>,
}

/// `raw` of a rejected file.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RawOfRejected {
    pub blank_lines: u64,
    pub ends_with_newline: bool,
}

#[cfg(test)]
mod tests {
    /// The binary form the spill and the cache keep gives back the very JSON document.
    #[test]
    fn facts_round_trip_through_the_binary_form() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut n = 0;
        for dir in [
            "datasets/sample",
            "tests/data/edge",
            "tests/data/hostile",
            "tests/data/pi-errors",
        ] {
            for e in walkdir::WalkDir::new(root.join(dir)) {
                let e = e.unwrap();
                if e.path().extension().is_none_or(|x| x != "jsonl") {
                    continue;
                }
                let bytes = std::fs::read(e.path()).unwrap();
                let rel = e.path().strip_prefix(root).unwrap().to_str().unwrap();
                let mut scratch = crate::parse::Scratch::default();
                if let crate::analyze::FileAnalysis::Session(a) = crate::analyze::analyze_bytes(&bytes, &mut scratch) {
                    let facts = super::SessionFacts::of(rel, &a);
                    let json = serde_json::to_string(&facts).unwrap();
                    let back: super::SessionFacts =
                        postcard::from_bytes(&postcard::to_stdvec(&facts).unwrap()).unwrap();
                    assert_eq!(serde_json::to_string(&back).unwrap(), json, "{rel}");
                    n += 1;
                }
            }
        }
        assert!(n > 100, "{n} sessions");
    }
}
