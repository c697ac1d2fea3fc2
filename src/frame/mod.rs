//! Records → Polars DataFrames. The four schemas are defined here, once: the builders,
//! the exports, `pisa query` and the README's tables (checked by a test) all come from them.
//!
//! Token counts are `Float64`: they are JavaScript numbers in the file, Pi sums them as
//! such, and a hand-edited file can hold fractions or numbers beyond `i64`. Every count Pi
//! writes is an integer, exact in a `Float64` up to 2^53.

use polars::prelude::*;

use crate::analyze::{FileStatus, SessionFacts};
use crate::corpus::{Corpus, SessionSummary};
use crate::js::JsVal;
use crate::pricing::{CostMode, Pricing};

mod price;
mod schema;
mod usage;
pub use price::{FileCost, Priced, Pricer, Repricing};
pub use schema::{COMPACTIONS, Col, FILES, SESSIONS, SOURCE, Ty, USAGE, markdown};
pub use usage::{CallRow, UsageColumns, UsageRow, each_call, each_call_with, each_row, try_each_row};

/// The four frames of a corpus.
#[derive(Debug, Clone)]
pub struct Frames {
    pub usage: DataFrame,
    pub sessions: DataFrame,
    pub compactions: DataFrame,
    pub files: DataFrame,
}

impl Frames {
    /// Build every frame, `source` in the first column of each, costs under `mode`.
    pub fn build(corpus: &Corpus, source: &str, pricing: &Pricing, mode: CostMode) -> PolarsResult<Frames> {
        let [sessions, compactions, files] = others(corpus, source)?;
        Ok(Frames {
            usage: with_source(usage(corpus, pricing, mode)?, source)?,
            sessions,
            compactions,
            files,
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
    /// Room is taken for `rows` rows up front: a frame grown by doubling can hold twice its
    /// size, and the export's peak is where these frames are built.
    fn new(schema: &'static [Col], rows: usize) -> Table {
        let (first, schema) = schema.split_first().expect("a schema has columns");
        assert_eq!(first.name, SOURCE, "every schema starts with `{SOURCE}`");
        let data = schema
            .iter()
            .map(|c| match c.ty {
                Ty::Str => Data::Str(Box::new(StringChunkedBuilder::new(
                    PlSmallStr::from_static(c.name),
                    rows,
                ))),
                Ty::Bool => Data::Bool(Vec::with_capacity(rows)),
                Ty::U32 => Data::U32(Vec::with_capacity(rows)),
                Ty::U64 => Data::U64(Vec::with_capacity(rows)),
                Ty::I64 => Data::I64(Vec::with_capacity(rows)),
                Ty::F64 => Data::F64(Vec::with_capacity(rows)),
                Ty::Time => Data::Time(Vec::with_capacity(rows)),
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

/// The Polars type of a column type.
fn dtype(ty: Ty) -> DataType {
    match ty {
        Ty::Str => DataType::String,
        Ty::Bool => DataType::Boolean,
        Ty::U32 => DataType::UInt32,
        Ty::U64 => DataType::UInt64,
        Ty::I64 => DataType::Int64,
        Ty::F64 => DataType::Float64,
        Ty::Time => DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC)),
    }
}

pub use crate::analyze::time_of;

/// A finite number, else none (Pi's sums can be `NaN` or a string).
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn session_id(s: &SessionSummary) -> Option<&str> {
    s.session_id.as_deref()
}

/// `df` with `source` in its first column.
fn with_source(mut df: DataFrame, source: &str) -> PolarsResult<DataFrame> {
    let height = df.height();
    let name = PlSmallStr::from_static(SOURCE);
    df.insert_column(
        0,
        Column::new_scalar(name, Scalar::from(PlSmallStr::from(source)), height),
    )?;
    Ok(df)
}

/// The sessions, compactions and files frames, `source` in the first column of each: a row
/// per file or compaction, small beside the usage frame.
pub fn others(corpus: &Corpus, source: &str) -> PolarsResult<[DataFrame; 3]> {
    let (sessions, files) = sessions_and_files(corpus, source)?;
    Ok([sessions, compactions(corpus, source)?, files])
}

/// The usage frame: every billed call, in [`each_row`]'s order.
fn usage(corpus: &Corpus, pricing: &Pricing, mode: CostMode) -> PolarsResult<DataFrame> {
    let mut columns = UsageColumns::default();
    each_row(corpus, pricing, mode, |row| columns.push(row)).map_err(io_error)?;
    columns.finish()
}

/// The usage frame in batches of `rows` rows (the last one smaller; one empty batch when there
/// are no rows), `source` in the first column of each: what an export writes without holding
/// the whole frame.
pub fn usage_batches(
    corpus: &Corpus,
    source: &str,
    pricing: &Pricing,
    mode: CostMode,
    rows: usize,
    mut each: impl FnMut(DataFrame) -> PolarsResult<()>,
) -> PolarsResult<()> {
    use rayon::prelude::*;
    let files = corpus.call_files();
    let counts: Vec<usize> = files.iter().map(|f| f.calls.count as usize).collect();
    // Pieces of a batch are built in parallel, two for each core, so that one that takes
    // longer (a file's calls are long or short) keeps no core waiting long.
    let batches = usage::plan(&counts, rows, 2 * rayon::current_num_threads());
    let build = |pieces: &[Vec<usage::Segment>]| {
        let built = pieces
            .par_iter()
            .with_max_len(1)
            .map(|segments| usage::piece(corpus, &files, segments, pricing, mode))
            .collect::<PolarsResult<Vec<_>>>()?;
        with_source(joined(built)?, source)
    };
    // An empty frame when there are no rows (its columns still say what it holds).
    if batches.is_empty() {
        return each(with_source(UsageColumns::default().finish()?, source)?);
    }
    // A batch at a time: its pieces made in parallel, then its columns encoded in parallel.
    // (Making the next batch while one was encoded held two batches: the export of a 15 GB
    // corpus then peaked at up to 127.5 MiB of its 128 MB.)
    for pieces in &batches {
        each(build(pieces)?)?;
    }
    Ok(())
}

/// Frames with the same columns, one after the other: each column's pieces as its chunks.
fn joined(frames: Vec<DataFrame>) -> PolarsResult<DataFrame> {
    let mut frames = frames.into_iter();
    let mut df = frames.next().expect("a piece at least");
    for next in frames {
        df.vstack_mut_owned(next)?;
    }
    Ok(df)
}

/// An I/O error (reading the spill back) as Polars'.
pub fn io_error(e: std::io::Error) -> PolarsError {
    PolarsError::IO {
        error: std::sync::Arc::new(e),
        msg: None,
    }
}

/// A number of Pi's sums, when it is a finite number.
fn pi_number(v: &JsVal) -> Option<f64> {
    match v {
        JsVal::Num(f) if f.is_finite() => Some(*f),
        _ => None,
    }
}

/// The sessions and files frames, `source` in the first column of each: every session's facts
/// read back once for both.
pub fn sessions_and_files(corpus: &Corpus, source: &str) -> PolarsResult<(DataFrame, DataFrame)> {
    let mut sessions = Table::new(SESSIONS, corpus.sessions.len());
    let mut files = Table::new(FILES, corpus.sessions.len() + corpus.rejected.len());
    for s in &corpus.sessions {
        let facts = corpus.facts(s)?;
        session_row(&mut sessions, s, &facts);
        file_row(&mut files, s, &facts);
    }
    rejected_rows(&mut files, corpus);
    Ok((
        with_source(sessions.finish()?, source)?,
        with_source(files.finish()?, source)?,
    ))
}

fn session_row(t: &mut Table, s: &SessionSummary, m: &SessionFacts) {
    use Cell::*;
    let path = crate::paths::path_text(&s.path);
    let own = &s.row.own;
    let stats = m.stats.as_ref();
    let tokens = stats.map(|st| &st.tokens);
    let first_damage = m.damage.first_damage.as_ref();
    t.row(&[
        ("session_id", Str(session_id(s))),
        ("file", Str(Some(&s.rel))),
        ("path", Str(Some(&path))),
        ("project", Str(Some(&s.row.project))),
        ("name", Str(s.row.name.as_deref())),
        ("parent_session", Str(m.parent_session.0.as_str())),
        ("parent_in_corpus", Str(s.parent_in_corpus.as_deref())),
        ("spawned_by", Str(s.spawned_by.as_deref())),
        ("children", U64(Some(s.children.len() as u64))),
        ("subagent_tokens", F64(Some(s.subagent.tokens()))),
        ("subagent_cost", F64(Some(s.subagent.cost))),
        ("version", I64(m.version.0.as_i64())),
        ("migrated_from", I64(m.migrated_from.0.as_i64())),
        ("started_at", Time(time_of(s.row.started.as_deref(), None))),
        ("last_activity_at", Time(time_of(s.row.last_activity.as_deref(), None))),
        ("bytes", U64(Some(m.bytes))),
        ("lines", U64(Some(m.lines))),
        ("entries", U64(Some(m.entry_count))),
        ("messages", U64(Some(s.row.messages))),
        ("user_messages", U64(stats.map(|st| st.user_messages))),
        ("assistant_messages", U64(stats.map(|st| st.assistant_messages))),
        ("tool_results", U64(stats.map(|st| st.tool_results))),
        ("billed_calls", U64(Some(s.calls.count))),
        ("inherited_calls", U64(Some(s.inherited_calls()))),
        ("input", F64(tokens.and_then(|t| pi_number(&t.input)))),
        ("output", F64(tokens.and_then(|t| pi_number(&t.output)))),
        ("cache_read", F64(tokens.and_then(|t| pi_number(&t.cache_read)))),
        ("cache_write", F64(tokens.and_then(|t| pi_number(&t.cache_write)))),
        ("total_tokens", F64(tokens.and_then(|t| pi_number(&t.total)))),
        ("cost", F64(stats.and_then(|st| pi_number(&st.cost)))),
        ("own_input", F64(Some(own.input))),
        ("own_output", F64(Some(own.output))),
        ("own_cache_read", F64(Some(own.cache_read))),
        ("own_cache_write", F64(Some(own.cache_write))),
        ("own_total_tokens", F64(Some(own.tokens()))),
        ("own_cost", F64(Some(own.cost))),
        ("context_tokens", F64(s.row.context_tokens.and_then(finite))),
        ("projected_messages", U64(Some(m.projected_message_count))),
        ("active_path_entries", U64(Some(m.active_path_length))),
        ("off_path_entries", U64(Some(m.off_path_entries))),
        ("tree_roots", U64(Some(m.tree_roots))),
        ("provider", Str(m.model.as_ref().and_then(|x| x.provider.0.as_str()))),
        ("model", Str(m.model.as_ref().and_then(|x| x.model_id.0.as_str()))),
        ("thinking_level", Str(m.thinking_level.0.as_str())),
        ("compactions", U64(Some(s.row.compactions))),
        ("context_edits", U64(Some(m.context_edits.total))),
        ("damaged", Bool(s.damaged)),
        ("malformed_lines", U64(Some(m.damage.malformed_lines))),
        ("blank_lines", U64(Some(m.damage.blank_lines))),
        ("invalid_utf8_lines", U64(Some(m.damage.invalid_utf8_lines))),
        ("pending_tail_bytes", U64(Some(m.damage.pending_tail_bytes))),
        ("first_damage_offset", U64(first_damage.map(|d| d.offset))),
        ("pi_error", Str(m.pi_error.as_deref())),
    ]);
}

/// The compactions frame, `source` in its first column.
pub fn compactions(corpus: &Corpus, source: &str) -> PolarsResult<DataFrame> {
    use Cell::*;
    let rows = corpus.sessions.iter().map(|s| s.compactions.len()).sum();
    let mut t = Table::new(COMPACTIONS, rows);
    for s in &corpus.sessions {
        for c in &s.compactions {
            let reduction = c.tokens_before.zip(c.estimated_tokens_after).map(|(b, a)| b - a);
            t.row(&[
                ("session_id", Str(session_id(s))),
                ("file", Str(Some(&s.rel))),
                ("project", Str(Some(&s.row.project))),
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
    with_source(t.finish()?, source)
}

/// The files frame's row of a session.
fn file_row(t: &mut Table, s: &SessionSummary, m: &SessionFacts) {
    use Cell::*;
    let path = crate::paths::path_text(&s.path);
    let first_damage = m.damage.first_damage.as_ref();
    t.row(&[
        ("file", Str(Some(&s.rel))),
        ("path", Str(Some(&path))),
        ("status", Str(Some("ok"))),
        ("reason", Str(None)),
        ("bytes", U64(Some(m.bytes))),
        ("lines", U64(Some(m.lines))),
        ("session_id", Str(session_id(s))),
        ("spawned_by", Str(s.spawned_by.as_deref())),
        ("damaged", Bool(s.damaged)),
        ("malformed_lines", U64(Some(m.damage.malformed_lines))),
        ("first_damage_line", U64(first_damage.map(|d| d.line))),
        ("first_damage_offset", U64(first_damage.map(|d| d.offset))),
    ]);
}

/// The files frame's rows of files that are not sessions pisa could read, and of what could
/// not be scanned.
fn rejected_rows(t: &mut Table, corpus: &Corpus) {
    use Cell::*;
    for r in &corpus.rejected {
        let path = crate::paths::path_text(&r.path);
        let rejection = match &r.record.status {
            FileStatus::Rejected(x) => Some(x),
            _ => None,
        };
        let status = match rejection {
            Some(x) if x.transcript => "artifact",
            Some(x) if x.not_session => "not_session",
            _ => r.record.status.name(),
        };
        t.row(&[
            ("file", Str(Some(r.rel()))),
            ("path", Str(Some(&path))),
            ("status", Str(Some(status))),
            ("reason", Str(Some(&r.record.reason))),
            ("bytes", U64(rejection.map(|x| x.bytes))),
            ("lines", U64(rejection.map(|x| x.lines))),
            ("session_id", Str(None)),
            (
                "spawned_by",
                Str(r.transcript.as_ref().and_then(|t| t.spawned_by.as_deref())),
            ),
            ("damaged", Bool(false)),
            ("malformed_lines", U64(None)),
            ("first_damage_line", U64(None)),
            ("first_damage_offset", U64(None)),
        ]);
    }
    for i in &corpus.issues {
        let path = crate::paths::path_text(&i.path);
        t.row(&[
            ("file", Str(Some(&path))),
            ("path", Str(Some(&path))),
            ("status", Str(Some("unreadable"))),
            ("reason", Str(Some(&i.reason))),
            ("bytes", U64(None)),
            ("lines", U64(None)),
            ("session_id", Str(None)),
            ("spawned_by", Str(None)),
            ("damaged", Bool(false)),
            ("malformed_lines", U64(None)),
            ("first_damage_line", U64(None)),
            ("first_damage_offset", U64(None)),
        ]);
    }
}

/// Run a SQL query (Polars SQL) over the four frames, registered under their names.
pub fn query(frames: &Frames, sql: &str) -> PolarsResult<DataFrame> {
    let mut ctx = polars::sql::SQLContext::new();
    for (name, df) in frames.named() {
        ctx.register(name, df.clone().lazy());
    }
    ctx.execute(sql)?.collect()
}
