//! Records → Polars DataFrames. The four schemas are defined here, once: the builders,
//! the exports, `pisa query` and the README's tables (checked by a test) all come from them.
//!
//! Token counts are `Float64`: they are JavaScript numbers in the file, Pi sums them as
//! such, and a hand-edited file can hold fractions or numbers beyond `i64`. Every count Pi
//! writes is an integer, exact in a `Float64` up to 2^53.

use polars::prelude::*;
use serde_json::{Map, Value};

use crate::analyze::parse_iso_ms;
use crate::corpus::{Corpus, SessionSummary};
use crate::usage::UsageRecord;

mod schema;
pub use schema::{COMPACTIONS, Col, FILES, SESSIONS, SOURCE, Ty, USAGE, markdown};

/// The four frames of a corpus.
#[derive(Debug, Clone)]
pub struct Frames {
    pub usage: DataFrame,
    pub sessions: DataFrame,
    pub compactions: DataFrame,
    pub files: DataFrame,
}

impl Frames {
    /// Build every frame, `source` in the first column of each. The corpus must have been
    /// scanned with [`crate::corpus::Keep::rows`]; its usage chunks move into the usage frame.
    pub fn build(corpus: &mut Corpus, source: &str) -> PolarsResult<Frames> {
        let with_source = |mut df: DataFrame| -> PolarsResult<DataFrame> {
            let height = df.height();
            let name = PlSmallStr::from_static(SOURCE);
            df.insert_column(
                0,
                Column::new_scalar(name, Scalar::from(PlSmallStr::from(source)), height),
            )?;
            Ok(df)
        };
        Ok(Frames {
            usage: with_source(usage(corpus)?)?,
            sessions: with_source(sessions(corpus)?)?,
            compactions: with_source(compactions(corpus)?)?,
            files: with_source(files(corpus)?)?,
        })
    }

    /// `(name, frame)` pairs, in the order the README lists them.
    pub fn named(&self) -> [(&'static str, &DataFrame); 4] {
        [
            ("usage", &self.usage),
            ("sessions", &self.sessions),
            ("compactions", &self.compactions),
            ("files", &self.files),
        ]
    }
}

/// One value of a row, typed like its column.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    Str(Option<&'a str>),
    Bool(bool),
    U32(u32),
    U64(Option<u64>),
    I64(Option<i64>),
    F64(Option<f64>),
    /// Unix milliseconds, UTC.
    Time(Option<i64>),
}

enum Data {
    /// Strings go straight into Arrow buffers: no `String` per cell.
    Str(Box<StringChunkedBuilder>),
    Bool(Vec<bool>),
    U32(Vec<u32>),
    U64(Vec<Option<u64>>),
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Time(Vec<Option<i64>>),
}

/// Builds a frame row by row against a schema; every row names its cells, and a name or
/// type out of schema order is a bug caught on the first row.
struct Table {
    schema: &'static [Col],
    data: Vec<Data>,
}

impl Table {
    /// A builder for the columns of `schema` after `source` (which [`Frames::build`] adds).
    fn new(schema: &'static [Col]) -> Table {
        let (first, schema) = schema.split_first().expect("a schema has columns");
        assert_eq!(first.name, SOURCE, "every schema starts with `{SOURCE}`");
        let data = schema
            .iter()
            .map(|c| match c.ty {
                Ty::Str => Data::Str(Box::new(StringChunkedBuilder::new(PlSmallStr::from_static(c.name), 0))),
                Ty::Bool => Data::Bool(Vec::new()),
                Ty::U32 => Data::U32(Vec::new()),
                Ty::U64 => Data::U64(Vec::new()),
                Ty::I64 => Data::I64(Vec::new()),
                Ty::F64 => Data::F64(Vec::new()),
                Ty::Time => Data::Time(Vec::new()),
            })
            .collect();
        Table { schema, data }
    }

    fn row(&mut self, cells: &[(&str, Cell<'_>)]) {
        assert_eq!(
            cells.len(),
            self.schema.len(),
            "a row of {} cells for {} columns",
            cells.len(),
            self.schema.len()
        );
        for ((col, data), (name, cell)) in self.schema.iter().zip(&mut self.data).zip(cells) {
            assert_eq!(col.name, *name, "cells out of schema order");
            match (data, *cell) {
                (Data::Str(v), Cell::Str(x)) => v.append_option(x),
                (Data::Bool(v), Cell::Bool(x)) => v.push(x),
                (Data::U32(v), Cell::U32(x)) => v.push(x),
                (Data::U64(v), Cell::U64(x)) => v.push(x),
                (Data::I64(v), Cell::I64(x)) => v.push(x),
                (Data::F64(v), Cell::F64(x)) => v.push(x),
                (Data::Time(v), Cell::Time(x)) => v.push(x),
                (_, cell) => panic!("column {name}: {cell:?} does not match {:?}", col.ty),
            }
        }
    }

    fn finish(self) -> PolarsResult<DataFrame> {
        let columns = self
            .schema
            .iter()
            .zip(self.data)
            .map(|(col, data)| {
                let name = PlSmallStr::from_static(col.name);
                let series = match data {
                    Data::Str(v) => v.finish().into_series(),
                    Data::Bool(v) => Series::new(name, v),
                    Data::U32(v) => Series::new(name, v),
                    Data::U64(v) => Series::new(name, v),
                    Data::I64(v) => Series::new(name, v),
                    Data::F64(v) => Series::new(name, v),
                    Data::Time(v) => Int64Chunked::new(name, v)
                        .into_datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
                        .into_series(),
                };
                Column::from(series)
            })
            .collect();
        DataFrame::new_infer_height(columns)
    }
}

/// Unix ms of an ISO timestamp (entry timestamps), else of a message's ms timestamp.
fn time_of(iso: Option<&str>, ms: Option<f64>) -> Option<i64> {
    iso.and_then(parse_iso_ms)
        .or(ms)
        .filter(|t| t.is_finite() && t.abs() < 8.64e15)
        .map(|t| t as i64)
}

/// A finite number, else none (Pi's sums can be `NaN` or a string).
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn session_id(s: &SessionSummary) -> Option<&str> {
    s.session_id.as_deref()
}

/// One session's rows of the usage frame (built in the worker that read the file, so the
/// records themselves need not outlive it). `inherited` is false until [`Frames::build`].
pub fn usage_chunk(
    session_id: Option<&str>,
    file: &str,
    project: &str,
    records: &[UsageRecord],
) -> PolarsResult<DataFrame> {
    let mut t = Table::new(USAGE);
    for r in records {
        usage_row(&mut t, session_id, file, project, r);
    }
    t.finish()
}

/// The sessions' usage chunks in corpus order, with `inherited` from the fork deduplication.
/// The chunks are moved out of the corpus and freed once copied into the frame.
fn usage(corpus: &mut Corpus) -> PolarsResult<DataFrame> {
    let inherited: Vec<bool> = corpus
        .sessions
        .iter()
        .filter(|s| s.usage.is_some())
        .flat_map(SessionSummary::inherited_flags)
        .collect();
    let mut frame = Table::new(USAGE).finish()?;
    for s in &mut corpus.sessions {
        if let Some(chunk) = s.usage.take() {
            frame.vstack_mut_owned(chunk)?;
        }
    }
    frame.rechunk_mut();
    frame.replace("inherited", Column::new("inherited".into(), inherited))?;
    Ok(frame)
}

fn usage_row(t: &mut Table, session_id: Option<&str>, file: &str, project: &str, r: &UsageRecord) {
    use Cell::*;
    t.row(&[
        ("session_id", Str(session_id)),
        ("file", Str(Some(file))),
        ("project", Str(Some(project))),
        ("entry_id", Str(r.entry_id.as_deref())),
        ("entry_index", U32(r.entry)),
        ("timestamp", Time(time_of(r.timestamp.as_deref(), r.message_timestamp))),
        ("origin", Str(Some(r.source.name()))),
        ("kind", Str(r.kind.as_deref())),
        ("provider", Str(r.provider.as_deref())),
        ("model", Str(r.model.as_deref())),
        ("response_model", Str(r.response_model.as_deref())),
        ("api", Str(r.api.as_deref())),
        ("stop_reason", Str(r.stop_reason.as_deref())),
        ("thinking_level", Str(r.thinking_level.as_deref())),
        ("on_active_path", Bool(r.on_active_path)),
        ("inherited", Bool(false)),
        ("input", F64(Some(r.input))),
        ("output", F64(Some(r.output))),
        ("cache_read", F64(Some(r.cache_read))),
        ("cache_write", F64(Some(r.cache_write))),
        ("cache_write_1h", F64(r.cache_write_1h)),
        ("reasoning", F64(r.reasoning)),
        ("total_tokens", F64(Some(r.total_tokens))),
        ("cost_input", F64(Some(r.cost_input))),
        ("cost_output", F64(Some(r.cost_output))),
        ("cost_cache_read", F64(Some(r.cost_cache_read))),
        ("cost_cache_write", F64(Some(r.cost_cache_write))),
        ("cost", F64(Some(r.cost_total))),
        ("incomplete", Bool(r.missing != 0)),
    ]);
}

/// A value at a path of keys in a JSON object.
fn at<'a>(m: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(m.get(*first)?, |v, k| v.get(k))
}

fn text<'a>(m: &'a Map<String, Value>, path: &[&str]) -> Option<&'a str> {
    at(m, path).and_then(Value::as_str)
}

fn count(m: &Map<String, Value>, path: &[&str]) -> Option<u64> {
    at(m, path).and_then(Value::as_u64)
}

fn number(m: &Map<String, Value>, path: &[&str]) -> Option<f64> {
    at(m, path).and_then(Value::as_f64).and_then(finite)
}

fn sessions(corpus: &Corpus) -> PolarsResult<DataFrame> {
    use Cell::*;
    let mut t = Table::new(SESSIONS);
    for s in &corpus.sessions {
        let m = &corpus.object(s)?;
        let path = crate::scan::path_text(&s.path);
        let ov = &s.row.overview;
        let own = &s.row.own;
        t.row(&[
            ("session_id", Str(session_id(s))),
            ("file", Str(Some(&s.rel))),
            ("path", Str(Some(&path))),
            ("project", Str(Some(&ov.project))),
            ("name", Str(s.row.name.as_deref())),
            ("parent_session", Str(text(m, &["parentSession"]))),
            ("parent_in_corpus", Str(text(m, &["parentInCorpus"]))),
            ("version", I64(at(m, &["version"]).and_then(Value::as_i64))),
            ("migrated_from", I64(at(m, &["migratedFrom"]).and_then(Value::as_i64))),
            ("started_at", Time(time_of(ov.started.as_deref(), None))),
            ("last_activity_at", Time(time_of(ov.last_activity.as_deref(), None))),
            ("bytes", U64(count(m, &["bytes"]))),
            ("lines", U64(count(m, &["lines"]))),
            ("entries", U64(count(m, &["entryCount"]))),
            ("messages", U64(Some(s.row.messages))),
            ("user_messages", U64(count(m, &["stats", "userMessages"]))),
            ("assistant_messages", U64(count(m, &["stats", "assistantMessages"]))),
            ("tool_results", U64(count(m, &["stats", "toolResults"]))),
            ("billed_calls", U64(Some(s.calls))),
            ("inherited_calls", U64(Some(s.inherited_calls()))),
            ("input", F64(number(m, &["stats", "tokens", "input"]))),
            ("output", F64(number(m, &["stats", "tokens", "output"]))),
            ("cache_read", F64(number(m, &["stats", "tokens", "cacheRead"]))),
            ("cache_write", F64(number(m, &["stats", "tokens", "cacheWrite"]))),
            ("total_tokens", F64(number(m, &["stats", "tokens", "total"]))),
            ("cost", F64(number(m, &["stats", "cost"]))),
            ("own_input", F64(Some(own.input))),
            ("own_output", F64(Some(own.output))),
            ("own_cache_read", F64(Some(own.cache_read))),
            ("own_cache_write", F64(Some(own.cache_write))),
            ("own_total_tokens", F64(Some(own.tokens()))),
            ("own_cost", F64(Some(own.cost))),
            ("context_tokens", F64(s.row.context_tokens.and_then(finite))),
            ("projected_messages", U64(count(m, &["projectedMessageCount"]))),
            ("active_path_entries", U64(count(m, &["activePathLength"]))),
            ("off_path_entries", U64(count(m, &["offPathEntries"]))),
            ("tree_roots", U64(count(m, &["treeRoots"]))),
            ("provider", Str(text(m, &["model", "provider"]))),
            ("model", Str(text(m, &["model", "modelId"]))),
            ("thinking_level", Str(text(m, &["thinkingLevel"]))),
            ("compactions", U64(Some(s.row.compactions))),
            ("context_edits", U64(count(m, &["contextEdits", "total"]))),
            ("damaged", Bool(s.damaged)),
            ("malformed_lines", U64(count(m, &["damage", "malformedLines"]))),
            ("blank_lines", U64(count(m, &["damage", "blankLines"]))),
            ("invalid_utf8_lines", U64(count(m, &["damage", "invalidUtf8Lines"]))),
            ("pending_tail_bytes", U64(count(m, &["damage", "pendingTailBytes"]))),
            (
                "first_damage_offset",
                U64(count(m, &["damage", "firstDamage", "offset"])),
            ),
            ("pi_error", Str(text(m, &["piError"]))),
        ]);
    }
    t.finish()
}

fn compactions(corpus: &Corpus) -> PolarsResult<DataFrame> {
    use Cell::*;
    let mut t = Table::new(COMPACTIONS);
    for s in &corpus.sessions {
        for c in &s.compactions {
            let reduction = c.tokens_before.zip(c.estimated_tokens_after).map(|(b, a)| b - a);
            t.row(&[
                ("session_id", Str(session_id(s))),
                ("file", Str(Some(&s.rel))),
                ("project", Str(Some(&s.row.overview.project))),
                ("entry_id", Str(c.entry_id.as_deref())),
                ("entry_index", U32(c.entry_index)),
                ("timestamp", Time(time_of(c.timestamp.as_deref(), None))),
                ("provider", Str(c.provider.as_deref())),
                ("model", Str(c.model.as_deref())),
                ("on_active_path", Bool(c.on_active_path)),
                ("inherited", Bool(c.inherited)),
                ("tokens_before", F64(c.tokens_before)),
                ("estimated_tokens_after", F64(c.estimated_tokens_after)),
                ("reduction", F64(reduction)),
                ("entries_summarized", U64(c.entries_summarized)),
                ("entries_kept", U64(c.entries_kept)),
                ("path_length", U64(c.path_length)),
                ("retains_none", Bool(c.retains_none)),
                ("has_system_message", Bool(c.has_system_message)),
                ("first_kept_entry_id", Str(c.first_kept_entry_id.as_deref())),
                ("usage_tokens", F64(c.usage_tokens)),
                ("cost", F64(c.usage_cost)),
            ]);
        }
    }
    t.finish()
}

fn files(corpus: &Corpus) -> PolarsResult<DataFrame> {
    use Cell::*;
    let mut t = Table::new(FILES);
    for s in &corpus.sessions {
        let m = &corpus.object(s)?;
        let path = crate::scan::path_text(&s.path);
        t.row(&[
            ("file", Str(Some(&s.rel))),
            ("path", Str(Some(&path))),
            ("status", Str(Some("ok"))),
            ("reason", Str(None)),
            ("bytes", U64(count(m, &["bytes"]))),
            ("lines", U64(count(m, &["lines"]))),
            ("session_id", Str(session_id(s))),
            ("damaged", Bool(s.damaged)),
            ("malformed_lines", U64(count(m, &["damage", "malformedLines"]))),
            ("first_damage_line", U64(count(m, &["damage", "firstDamage", "line"]))),
            (
                "first_damage_offset",
                U64(count(m, &["damage", "firstDamage", "offset"])),
            ),
        ]);
    }
    for r in &corpus.rejected {
        let path = crate::scan::path_text(&r.path);
        let j = r.json.as_object();
        let get = |k: &str| j.and_then(|m| count(m, &[k]));
        t.row(&[
            ("file", Str(Some(&r.rel))),
            ("path", Str(Some(&path))),
            (
                "status",
                Str(if r.not_session {
                    Some("not_session")
                } else {
                    j.and_then(|m| text(m, &["status"]))
                }),
            ),
            ("reason", Str(Some(&r.reason))),
            ("bytes", U64(get("bytes"))),
            ("lines", U64(get("lines"))),
            ("session_id", Str(None)),
            ("damaged", Bool(false)),
            ("malformed_lines", U64(None)),
            ("first_damage_line", U64(None)),
            ("first_damage_offset", U64(None)),
        ]);
    }
    for i in &corpus.issues {
        let path = crate::scan::path_text(&i.path);
        t.row(&[
            ("file", Str(Some(&path))),
            ("path", Str(Some(&path))),
            ("status", Str(Some("unreadable"))),
            ("reason", Str(Some(&i.reason))),
            ("bytes", U64(None)),
            ("lines", U64(None)),
            ("session_id", Str(None)),
            ("damaged", Bool(false)),
            ("malformed_lines", U64(None)),
            ("first_damage_line", U64(None)),
            ("first_damage_offset", U64(None)),
        ]);
    }
    t.finish()
}

/// Run a SQL query (Polars SQL) over the four frames, registered under their names.
pub fn query(frames: &Frames, sql: &str) -> PolarsResult<DataFrame> {
    let mut ctx = polars::sql::SQLContext::new();
    for (name, df) in frames.named() {
        ctx.register(name, df.clone().lazy());
    }
    ctx.execute(sql)?.collect()
}
