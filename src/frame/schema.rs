//! The column lists of the four frames: name, type and meaning. The README's schema
//! section is [`markdown`] of these (a test keeps them equal). Every frame starts with
//! `source`, one value for the whole export, so exports of several machines or users can be
//! pooled and queried as one table.

/// A column type, as Polars, Parquet and DuckDB see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Str,
    Bool,
    U32,
    U64,
    I64,
    F64,
    /// Milliseconds since the epoch, time zone UTC (Parquet `TIMESTAMP(MILLIS, adjusted to UTC)`).
    Time,
}

impl Ty {
    /// The Polars type name.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Str => "String",
            Ty::Bool => "Boolean",
            Ty::U32 => "UInt32",
            Ty::U64 => "UInt64",
            Ty::I64 => "Int64",
            Ty::F64 => "Float64",
            Ty::Time => "Datetime(ms, UTC)",
        }
    }
}

/// One column of a frame.
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub name: &'static str,
    pub ty: Ty,
    pub doc: &'static str,
}

const fn c(name: &'static str, ty: Ty, doc: &'static str) -> Col {
    Col { name, ty, doc }
}

use Ty::*;

/// The name of every frame's first column.
pub const SOURCE: &str = "source";

/// One row per billed usage record (every source Pi sums in `getSessionStats`), fork copies
/// included and flagged.
pub const USAGE: &[Col] = &[
    c(
        "source",
        Str,
        "who or where the export comes from: `pisa export --source`, default the host name",
    ),
    c(
        "session_id",
        Str,
        "header `id` of the session file (none for a subagent transcript)",
    ),
    c("file", Str, "path of the file relative to the scanned folder"),
    c("project", Str, "the header's `cwd` (else the folder name decoded)"),
    c(
        "spawned_by",
        Str,
        "the session that ran this file's session (or transcript) as a subagent (relative path)",
    ),
    c("entry_id", Str, "`id` of the entry (`#<n>` in a migrated v1 file)"),
    c(
        "entry_index",
        U32,
        "index of the entry in the file's entries (header excluded)",
    ),
    c("timestamp", Time, "the entry's timestamp, else the message's"),
    c(
        "origin",
        Str,
        "`assistant`, `usage`, `tool`, `compaction`, `branch_summary`; `subagent` (one child's part of a subagent tool result's usage) or `transcript` (an answer read from a subagent transcript)",
    ),
    c(
        "kind",
        Str,
        "`kind` of a `usage` entry (`cache_warm`, `title_generation`, …)",
    ),
    c("provider", Str, "provider of the call"),
    c("model", Str, "model asked for"),
    c(
        "response_model",
        Str,
        "model that answered, when the provider says (virtual models, OpenRouter)",
    ),
    c("api", Str, "API of the call"),
    c("stop_reason", Str, "`stop`, `toolUse`, `length`, `aborted`, `error`, …"),
    c("thinking_level", Str, "thinking level of an assistant message"),
    c(
        "on_active_path",
        Bool,
        "the entry is on the session's active path (not an abandoned branch)",
    ),
    c(
        "inherited",
        Bool,
        "a call another record holds (see `inherited_reason`); leave out to count each call once",
    ),
    c(
        "inherited_reason",
        Str,
        "`copy` (an earlier session holds the same call: fork history), `child` (a subagent part whose child session is in the scan), `transcript` (the same, with the child's transcript), `session` (a transcript's copy of a session's answer), `repeat` (the same entry, id and call, earlier in the file: a line written twice)",
    ),
    c("input", F64, "input tokens"),
    c("output", F64, "output tokens (reasoning included)"),
    c("cache_read", F64, "cache-read tokens"),
    c("cache_write", F64, "cache-write tokens (1-hour writes included)"),
    c(
        "cache_write_1h",
        F64,
        "of `cache_write`, written with a 1-hour lifetime",
    ),
    c("reasoning", F64, "of `output`, reasoning tokens"),
    c("total_tokens", F64, "`totalTokens` as the provider reported it"),
    c("cost_input", F64, "USD"),
    c("cost_output", F64, "USD"),
    c("cost_cache_read", F64, "USD"),
    c("cost_cache_write", F64, "USD"),
    c(
        "cost",
        F64,
        "USD, `cost.total` as Pi recorded it (provider-reported totals kept as they are)",
    ),
    c(
        "cost_from_provider",
        Bool,
        "`cost.totalFromProvider`: the provider reported the cost (OpenRouter), Pi's price table did not make it",
    ),
    c(
        "cost_calculated",
        F64,
        "USD from the price table, as Pi's `calculateCost` computes it (null: no known price)",
    ),
    c(
        "price_source",
        Str,
        "where that price is from: the registry (`pi-ai@1.6.0`, or a newer Pi's with `--pricing-from`) or `config` (an override)",
    ),
    c(
        "billing",
        Str,
        "`api` (money spent) or `subscription` (the API-equivalent value of a flat plan), by provider",
    ),
    c(
        "cost_effective",
        F64,
        "USD under `--cost` (`recorded` by default: equal to `cost`): what the reports sum",
    ),
    c("incomplete", Bool, "the file lacked a token or cost field, read as 0"),
];

/// One row per accepted session file.
pub const SESSIONS: &[Col] = &[
    c(
        "source",
        Str,
        "who or where the export comes from: `pisa export --source`, default the host name",
    ),
    c("session_id", Str, "header `id`"),
    c("file", Str, "path relative to the scanned folder"),
    c("path", Str, "absolute path"),
    c("project", Str, "the header's `cwd` (else the folder name decoded)"),
    c("name", Str, "latest `session_info` name"),
    c(
        "parent_session",
        Str,
        "header `parentSession` (the file it was forked from)",
    ),
    c(
        "parent_in_corpus",
        Str,
        "that parent, when it was scanned too (relative path)",
    ),
    c(
        "spawned_by",
        Str,
        "the session that ran this one as a subagent (relative path)",
    ),
    c("children", U64, "sessions this one ran as subagents"),
    c(
        "subagent_tokens",
        F64,
        "tokens of the calls its subagents own (children, theirs, and their transcripts or parts where their sessions are missing)",
    ),
    c("subagent_cost", F64, "USD of the same"),
    c("version", I64, "format version after Pi's migration (3)"),
    c("migrated_from", I64, "the version on disk when Pi migrates it (1 or 2)"),
    c("started_at", Time, "header timestamp"),
    c(
        "last_activity_at",
        Time,
        "latest user or assistant message (Pi's session list `modified`)",
    ),
    c("bytes", U64, "file size"),
    c("lines", U64, "physical lines"),
    c("entries", U64, "entries after the header"),
    c("messages", U64, "messages Pi counts"),
    c(
        "user_messages",
        U64,
        "Pi's `getSessionStats` counts (null when Pi's code throws on the file)",
    ),
    c("assistant_messages", U64, ""),
    c("tool_results", U64, ""),
    c("billed_calls", U64, "usage records in the file"),
    c(
        "inherited_calls",
        U64,
        "of those, copies of calls an earlier session owns",
    ),
    c(
        "input",
        F64,
        "Pi's totals over the whole file (fork copies included; null when not a finite number)",
    ),
    c("output", F64, ""),
    c("cache_read", F64, ""),
    c("cache_write", F64, ""),
    c("total_tokens", F64, "input + output + cache_read + cache_write"),
    c("cost", F64, "USD"),
    c(
        "own_input",
        F64,
        "totals over the calls this session owns (each call counted once in a corpus)",
    ),
    c("own_output", F64, ""),
    c("own_cache_read", F64, ""),
    c("own_cache_write", F64, ""),
    c("own_total_tokens", F64, ""),
    c("own_cost", F64, "USD"),
    c(
        "context_tokens",
        F64,
        "estimated context now (Pi's `getContextUsage`; null when unknown after a compaction)",
    ),
    c("projected_messages", U64, "messages the model would see now"),
    c("active_path_entries", U64, "entries on the active path"),
    c("off_path_entries", U64, "entries on abandoned branches"),
    c("tree_roots", U64, "entries without a parent"),
    c(
        "provider",
        Str,
        "provider now (latest model change or answer on the path)",
    ),
    c("model", Str, "model now"),
    c("thinking_level", Str, "thinking level now"),
    c("compactions", U64, "compaction entries"),
    c("context_edits", U64, "context_edit entries"),
    c("damaged", Bool, "lines were skipped or a parent loop was cut"),
    c("malformed_lines", U64, "lines Pi skips"),
    c("blank_lines", U64, "blank lines"),
    c(
        "invalid_utf8_lines",
        U64,
        "lines with bytes that are not UTF-8 (read as U+FFFD, like Pi)",
    ),
    c("pending_tail_bytes", U64, "bytes of an unfinished last line"),
    c("first_damage_offset", U64, "byte offset of the first skipped line"),
    c("pi_error", Str, "why Pi's own code throws on this file, if it does"),
];

/// One row per compaction entry, with what it did to the context.
pub const COMPACTIONS: &[Col] = &[
    c(
        "source",
        Str,
        "who or where the export comes from: `pisa export --source`, default the host name",
    ),
    c("session_id", Str, "header `id`"),
    c("file", Str, "path relative to the scanned folder"),
    c("project", Str, "the header's `cwd`"),
    c("entry_id", Str, "`id` of the compaction entry"),
    c("entry_index", U32, "index among the file's entries"),
    c("timestamp", Time, "when it was written"),
    c(
        "provider",
        Str,
        "provider of its usage, else of the latest answer before it",
    ),
    c("model", Str, "model of its usage, else of the latest answer before it"),
    c("on_active_path", Bool, "on the session's active path"),
    c(
        "inherited",
        Bool,
        "a fork's copy of a compaction an earlier session owns",
    ),
    c("tokens_before", F64, "`tokensBefore`: the context when it was cut"),
    c(
        "estimated_tokens_after",
        F64,
        "Pi's estimate of the context right after it",
    ),
    c("reduction", F64, "tokens_before − estimated_tokens_after"),
    c(
        "entries_summarized",
        U64,
        "entries on its path that the summary replaced",
    ),
    c("entries_kept", U64, "entries on its path that were kept"),
    c("path_length", U64, "entries from the root to it"),
    c("retains_none", Bool, "`firstKeptEntryId` is its own id"),
    c("has_system_message", Bool, "it carries the replayed system prompt"),
    c("first_kept_entry_id", Str, "`firstKeptEntryId`"),
    c(
        "usage_tokens",
        F64,
        "tokens billed to write the summary (null when it has no usage)",
    ),
    c("cost", F64, "USD billed to write the summary"),
];

/// One row per file seen: accepted, rejected or unreadable.
pub const FILES: &[Col] = &[
    c(
        "source",
        Str,
        "who or where the export comes from: `pisa export --source`, default the host name",
    ),
    c("file", Str, "path relative to the scanned folder"),
    c("path", Str, "absolute path"),
    c(
        "status",
        Str,
        "`ok`, `not_session` (not a Pi session: Pi skips it, and so does pisa, with exit code 0), `artifact` (a subagent transcript: read for the calls no session holds, exit code 0), `rejected` (a session Pi would not load), `unreadable`, `gone` (removed after the scan found it), `changed` (written to during two reads) or `failed` (an error in pisa)",
    ),
    c("reason", Str, "why it was rejected or unreadable"),
    c("bytes", U64, "file size"),
    c("lines", U64, "physical lines"),
    c("session_id", Str, "header `id` of an accepted file"),
    c(
        "spawned_by",
        Str,
        "the session that ran it as a subagent (a session or a subagent transcript; relative path)",
    ),
    c("damaged", Bool, "accepted, but lines were skipped"),
    c("malformed_lines", U64, "lines Pi skips"),
    c("first_damage_line", U64, "first skipped line (0-based)"),
    c("first_damage_offset", U64, "its byte offset"),
];

/// The README's description of a schema: a Markdown table.
pub fn markdown(cols: &[Col]) -> String {
    let mut s = String::from("| column | type | meaning |\n|---|---|---|\n");
    for col in cols {
        s.push_str(&format!("| `{}` | {} | {} |\n", col.name, col.ty.name(), col.doc));
    }
    s
}
