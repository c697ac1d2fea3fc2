//! The usage frame's rows, filled by the workers while they read the files: each worker
//! appends its sessions' billed records to typed columns of its own ([`UsageColumns`], as
//! polars' NDJSON reader fills builders per chunk), and each worker's columns become one
//! DataFrame, checked against [`USAGE`] once. [`super::Frames::build`] puts the sessions' rows
//! in corpus order.

use polars::prelude::*;

use super::schema::{SOURCE, USAGE};
use crate::corpus::{Rows, SessionRef};
use crate::usage::UsageRecord;

/// The [`Rows`] sink of the usage frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct UsageRows;

impl Rows for UsageRows {
    type Part = UsageColumns;
    const WANTED: bool = true;

    fn add(&self, part: &mut UsageColumns, s: &SessionRef<'_>, calls: &[UsageRecord]) -> std::ops::Range<u32> {
        let start = part.len;
        for r in calls {
            part.push(s, r);
        }
        start..part.len
    }
}

/// One worker's rows of the usage frame, a typed column each (`source`, `spawned_by` and
/// `inherited` with its reason are set when the frame is built).
pub struct UsageColumns {
    len: u32,
    strings: [StringChunkedBuilder; 12],
    entry_index: Vec<u32>,
    timestamp: Vec<Option<i64>>,
    on_active_path: Vec<bool>,
    /// input, output, cache_read, cache_write, then after the two optional ones
    /// total_tokens and the five costs.
    numbers: [Vec<f64>; 10],
    cache_write_1h: Vec<Option<f64>>,
    reasoning: Vec<Option<f64>>,
    cost_from_provider: Vec<bool>,
    incomplete: Vec<bool>,
}

impl std::fmt::Debug for UsageColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsageColumns")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// The string columns, in [`USAGE`] order.
const STRINGS: [&str; 12] = [
    "session_id",
    "file",
    "project",
    "entry_id",
    "origin",
    "kind",
    "provider",
    "model",
    "response_model",
    "api",
    "stop_reason",
    "thinking_level",
];

/// The number columns without nulls, in [`USAGE`] order.
const NUMBERS: [&str; 10] = [
    "input",
    "output",
    "cache_read",
    "cache_write",
    "total_tokens",
    "cost_input",
    "cost_output",
    "cost_cache_read",
    "cost_cache_write",
    "cost",
];

impl Default for UsageColumns {
    fn default() -> Self {
        UsageColumns {
            len: 0,
            strings: STRINGS.map(|name| StringChunkedBuilder::new(PlSmallStr::from_static(name), 0)),
            entry_index: Vec::new(),
            timestamp: Vec::new(),
            on_active_path: Vec::new(),
            numbers: Default::default(),
            cache_write_1h: Vec::new(),
            reasoning: Vec::new(),
            cost_from_provider: Vec::new(),
            incomplete: Vec::new(),
        }
    }
}

impl UsageColumns {
    /// Append one record's row (every value is computed before the first column grows, so a
    /// row is added whole).
    fn push(&mut self, s: &SessionRef<'_>, r: &UsageRecord) {
        let strings = [
            s.session_id,
            Some(s.rel),
            Some(s.project),
            r.entry_id.as_deref(),
            Some(r.source.name()),
            r.kind.as_deref(),
            r.provider.as_deref(),
            r.model.as_deref(),
            r.response_model.as_deref(),
            r.api.as_deref(),
            r.stop_reason.as_deref(),
            r.thinking_level.as_deref(),
        ];
        let numbers = [
            r.input,
            r.output,
            r.cache_read,
            r.cache_write,
            r.total_tokens,
            r.cost_input,
            r.cost_output,
            r.cost_cache_read,
            r.cost_cache_write,
            r.cost_total,
        ];
        let timestamp = super::time_of(r.timestamp.as_deref(), r.message_timestamp);
        for (column, value) in self.strings.iter_mut().zip(strings) {
            column.append_option(value);
        }
        for (column, value) in self.numbers.iter_mut().zip(numbers) {
            column.push(value);
        }
        self.entry_index.push(r.entry);
        self.timestamp.push(timestamp);
        self.on_active_path.push(r.on_active_path);
        self.cache_write_1h.push(r.cache_write_1h);
        self.reasoning.push(r.reasoning);
        self.cost_from_provider.push(r.cost_from_provider);
        self.incomplete.push(r.missing != 0);
        self.len += 1;
    }

    /// The rows as a DataFrame with every column of [`USAGE`] but `source`, `inherited`
    /// false; its schema checked against [`USAGE`].
    pub fn finish(self) -> PolarsResult<DataFrame> {
        let UsageColumns {
            len,
            strings,
            entry_index,
            timestamp,
            on_active_path,
            numbers,
            cache_write_1h,
            reasoning,
            cost_from_provider,
            incomplete,
        } = self;
        let mut columns: Vec<(&str, Series)> = Vec::with_capacity(USAGE.len());
        for (name, builder) in STRINGS.into_iter().zip(strings) {
            columns.push((name, builder.finish().into_series()));
        }
        let s = |name: &'static str, series: Series| (name, series.with_name(PlSmallStr::from_static(name)));
        columns.push(s("entry_index", Series::new("".into(), entry_index)));
        columns.push(s(
            "timestamp",
            Int64Chunked::new("".into(), timestamp)
                .into_datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC))
                .into_series(),
        ));
        columns.push(s("on_active_path", Series::new("".into(), on_active_path)));
        columns.push(s("inherited", Series::new("".into(), vec![false; len as usize])));
        let none: Vec<Option<&str>> = vec![None; len as usize];
        columns.push(s("inherited_reason", Series::new("".into(), &none)));
        columns.push(s("spawned_by", Series::new("".into(), &none)));
        columns.push(s("cache_write_1h", Series::new("".into(), cache_write_1h)));
        columns.push(s("reasoning", Series::new("".into(), reasoning)));
        for (name, values) in NUMBERS.into_iter().zip(numbers) {
            columns.push(s(name, Series::new("".into(), values)));
        }
        columns.push(s("cost_from_provider", Series::new("".into(), cost_from_provider)));
        // Priced when the frame is built (see `crate::frame::price`).
        let no_number: Vec<Option<f64>> = vec![None; len as usize];
        columns.push(s("cost_calculated", Series::new("".into(), &no_number)));
        columns.push(s("price_source", Series::new("".into(), &none)));
        columns.push(s("billing", Series::new("".into(), &none)));
        columns.push(s("cost_effective", Series::new("".into(), &no_number)));
        columns.push(s("incomplete", Series::new("".into(), incomplete)));
        // In the schema's order.
        let ordered = USAGE
            .iter()
            .filter(|c| c.name != SOURCE)
            .map(|c| {
                let at = columns.iter().position(|(n, _)| *n == c.name);
                let (_, series) = columns.swap_remove(at.unwrap_or_else(|| panic!("no column {}", c.name)));
                assert_eq!(series.dtype(), &super::dtype(c.ty), "column {}", c.name);
                Column::from(series)
            })
            .collect();
        assert!(columns.is_empty(), "columns outside the schema");
        DataFrame::new_infer_height(ordered)
    }
}
