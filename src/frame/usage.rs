//! The usage frame's rows, read back from the corpus a few files at a time: each billed call as
//! reports see it ([`CallRow`], [`each_call`]: the lean rows only), which they sum without a
//! frame, and with its full record ([`UsageRow`], [`each_row`]) for [`UsageColumns`], which
//! fills typed columns (as polars' NDJSON reader fills builders) for the frame, checked against
//! [`USAGE`] once.

use polars::prelude::*;

use super::price::{Priced, Pricer};
use super::schema::{SOURCE, USAGE};
use crate::corpus::billed::Billed;
use crate::corpus::{CallFile, Corpus, Inherited, SessionRef};
use crate::pricing::{CostMode, Pricing};
use crate::usage::RecordView;

/// One billed call as reports see it: its file, what the corpus decided of it, and its price.
#[derive(Debug)]
pub struct CallRow<'a> {
    pub file: &'a SessionRef<'a>,
    /// The session that spawned the file as a subagent.
    pub spawned_by: Option<&'a str>,
    pub call: Billed<'a>,
    /// Why another record holds the call (`None`: the corpus counts it here).
    pub reason: Option<Inherited>,
    pub priced: Priced<'a>,
}

impl CallRow<'_> {
    /// Whether another record holds the call.
    pub fn inherited(&self) -> bool {
        self.reason.is_some()
    }
}

/// One billed call as a row of the usage frame, without the frame: what reports see of it,
/// and its full record.
#[derive(Debug)]
pub struct UsageRow<'a> {
    pub row: CallRow<'a>,
    pub record: &'a RecordView<'a>,
}

/// Visit every billed call of `corpus` as reports see it, in the usage frame's order (sessions
/// by path, then transcripts, each file's calls in file order), priced under `mode`. Only the
/// lean rows of [`crate::corpus::billed`] are read.
pub fn each_call(
    corpus: &Corpus,
    pricing: &Pricing,
    mode: CostMode,
    mut visit: impl FnMut(&CallRow<'_>),
) -> std::io::Result<()> {
    each_call_with(corpus, pricing, mode, |_| (), |row, ()| visit(row))
}

/// [`each_call`], with `prepare` made of each call beside its price on the thread pool, as its
/// file is read back, and handed to `visit` with the call's row: what a visitor needs of a call
/// alone (its day, say). The visits still come one after the other, in order, on the calling
/// thread, so what they sum is the same bit for bit on every run.
pub fn each_call_with<U: Send>(
    corpus: &Corpus,
    pricing: &Pricing,
    mode: CostMode,
    prepare: impl Fn(&Billed<'_>) -> U + Sync,
    mut visit: impl FnMut(&CallRow<'_>, U),
) -> std::io::Result<()> {
    let made = |calls: &crate::corpus::billed::BilledCalls| {
        // One per file: a file's calls come in runs of a model or two.
        let mut pricer = Pricer::new(pricing, mode);
        calls
            .iter()
            .map(|call| (pricer.price(&call), prepare(&call)))
            .collect::<Vec<_>>()
    };
    corpus.each_billed_then(made, |f| {
        let (read, made) = f.read;
        debug_assert_eq!(read.len() as u64, f.calls.count, "one row per call");
        for ((call, reason), (priced, made)) in read.iter().zip(f.calls.reasons()).zip(made) {
            let row = CallRow {
                file: &f.file,
                spawned_by: f.spawned_by,
                call,
                reason,
                priced,
            };
            visit(&row, made);
        }
        Ok::<_, std::io::Error>(())
    })
}

/// Visit every billed call of `corpus` with its full record, in [`each_call`]'s order.
pub fn each_row(
    corpus: &Corpus,
    pricing: &Pricing,
    mode: CostMode,
    mut visit: impl FnMut(&UsageRow<'_>),
) -> std::io::Result<()> {
    try_each_row(corpus, pricing, mode, |row| {
        visit(row);
        Ok::<_, std::io::Error>(())
    })
}

/// [`each_row`] with a visitor that can fail, which stops the visit.
pub fn try_each_row<E: From<std::io::Error>>(
    corpus: &Corpus,
    pricing: &Pricing,
    mode: CostMode,
    mut visit: impl FnMut(&UsageRow<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let mut pricer = Pricer::new(pricing, mode);
    corpus.each_file(|f| {
        let records = f.read.views()?;
        debug_assert_eq!(records.len() as u64, f.calls.count, "one record per call");
        for (record, reason) in records.iter().zip(f.calls.reasons()) {
            visit(&row_of(&f.file, f.spawned_by, record, reason, &mut pricer))?;
        }
        Ok(())
    })
}

/// The row of `record`, one of `file`'s calls, with what the corpus decided of it (`reason`),
/// priced by `pricer`.
fn row_of<'a, 'p: 'a>(
    file: &'a SessionRef<'a>,
    spawned_by: Option<&'a str>,
    record: &'a RecordView<'a>,
    reason: Option<Inherited>,
    pricer: &mut Pricer<'p>,
) -> UsageRow<'a> {
    let call = Billed::of(record);
    let priced = pricer.price(&call);
    UsageRow {
        row: CallRow {
            file,
            spawned_by,
            call,
            reason,
            priced,
        },
        record,
    }
}

/// Fewest rows of a piece (a quarter of a batch when batches are smaller): fewer are built
/// faster on one core than split.
const PIECE_ROWS: usize = 2_048;

/// Calls `skip..skip + take` of the `file`th file (in [`Corpus::call_files`]' order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Segment {
    pub file: usize,
    pub skip: usize,
    pub take: usize,
}

/// The rows of files holding `counts` calls (in order) cut into batches of `rows` rows (the
/// last one smaller), and each batch into at most `parts` pieces of about equal rows (none
/// smaller than [`PIECE_ROWS`] unless the batch is): the parts of files each piece holds, in
/// order. A piece is built on one core, whatever its files; files without calls are in none.
pub(super) fn plan(counts: &[usize], rows: usize, parts: usize) -> Vec<Vec<Vec<Segment>>> {
    let total: usize = counts.iter().sum();
    let rows = rows.max(1);
    let least = PIECE_ROWS.min(rows / 4).max(1);
    // The row after each file's last (never decreasing), and the files' rows `from..to` as
    // segments.
    let ends: Vec<usize> = counts
        .iter()
        .scan(0, |at, &n| {
            *at += n;
            Some(*at)
        })
        .collect();
    let segments = |from: usize, to: usize| {
        let first = ends.partition_point(|&end| end <= from);
        (first..counts.len())
            .map(|f| (f, ends[f] - counts[f], ends[f]))
            .take_while(|&(_, start, _)| start < to)
            .map(|(file, start, end)| Segment {
                file,
                skip: from.saturating_sub(start),
                take: end.min(to).saturating_sub(start.max(from)),
            })
            .filter(|s| s.take > 0)
            .collect::<Vec<_>>()
    };
    (0..total)
        .step_by(rows)
        .map(|from| {
            let n = rows.min(total - from);
            let pieces = parts.min(n / least).max(1);
            (0..pieces)
                .map(|i| segments(from + n * i / pieces, from + n * (i + 1) / pieces))
                .collect()
        })
        .collect()
}

/// The rows of one piece of a batch ([`plan`]) as columns, priced under `mode`: each file's
/// calls read back from the spill and decoded one at a time.
pub(super) fn piece(
    corpus: &Corpus,
    files: &[CallFile<'_>],
    segments: &[Segment],
    pricing: &Pricing,
    mode: CostMode,
) -> PolarsResult<DataFrame> {
    let mut pricer = Pricer::new(pricing, mode);
    let rows = segments.iter().map(|s| s.take).sum();
    let mut columns = UsageColumns::with_capacity(rows);
    for s in segments {
        let f = &files[s.file];
        debug_assert!(s.skip + s.take <= f.calls.count as usize, "a reason for every call");
        let file = f.file();
        let mut reasons = f.calls.reasons().skip(s.skip);
        let records = corpus.records(f.calls).map_err(super::io_error)?;
        records
            .visit(s.skip, s.take, |record| {
                let reason = reasons.next().flatten();
                columns.push(&row_of(&file, f.spawned_by, record, reason, &mut pricer));
            })
            .map_err(super::io_error)?;
    }
    debug_assert_eq!(columns.len(), rows);
    columns.finish()
}

/// Rows of the usage frame, a typed column each (`source` is added when the frame is built).
pub struct UsageColumns {
    len: u32,
    strings: [Repeating; STRINGS.len()],
    entry_index: Vec<u32>,
    timestamp: Vec<Option<i64>>,
    on_active_path: Vec<bool>,
    /// input, output, cache_read, cache_write, then after the two optional ones
    /// total_tokens and the five costs.
    numbers: [Vec<f64>; 10],
    cache_write_1h: Vec<Option<f64>>,
    reasoning: Vec<Option<f64>>,
    cost_from_provider: Vec<bool>,
    inherited: Vec<bool>,
    calculated: Vec<Option<f64>>,
    effective: Vec<f64>,
    incomplete: Vec<bool>,
}

impl std::fmt::Debug for UsageColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsageColumns")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// The string columns (in [`USAGE`] order, then those [`UsageColumns::finish`] places).
const STRINGS: [&str; 16] = [
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
    "inherited_reason",
    "spawned_by",
    "price_source",
    "billing",
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

/// A string column that stores a long value (one not held inside its view) repeated from an
/// earlier row once: the repeat is a second view of the same bytes. Most long values of a
/// batch (session id, file, project, model, api) repeat row after row, so the column holds a
/// fraction of their text, and copies it once.
struct Repeating {
    values: polars_arrow::array::MutableBinaryViewArray<str>,
    /// The view of the last long value stored.
    last: Option<polars_arrow::array::View>,
}

impl Repeating {
    fn with_capacity(rows: usize) -> Repeating {
        Repeating {
            values: polars_arrow::array::MutableBinaryViewArray::with_capacity(rows),
            last: None,
        }
    }

    fn push(&mut self, value: Option<&str>) {
        let Some(text) = value else {
            return self.values.push_null();
        };
        if text.len() <= polars_arrow::array::View::MAX_INLINE_SIZE as usize {
            return self.values.push_value(text);
        }
        let repeat = self.last.filter(|view| {
            // SAFETY: `last` is a view this array made, whose bytes stay in its buffers.
            unsafe { self.values.value_from_view_unchecked(view) == text }
        });
        match repeat {
            Some(view) => {
                // SAFETY: the view is one this array made for these bytes, which stay in its
                // buffers; the views' byte total grows by the bytes the new view reads.
                unsafe {
                    self.values.views_mut().push(view);
                    self.values
                        .set_total_bytes_len(self.values.total_bytes_len() + text.len());
                }
                if let Some(validity) = self.values.validity() {
                    validity.push(true);
                }
            }
            None => {
                self.values.push_value(text);
                self.last = self.values.views().last().copied();
            }
        }
    }

    fn finish(self, name: &'static str) -> Series {
        StringChunked::with_chunk(PlSmallStr::from_static(name), self.values.freeze()).into_series()
    }
}

impl Default for UsageColumns {
    fn default() -> Self {
        UsageColumns::with_capacity(0)
    }
}

impl UsageColumns {
    /// Room for `rows` rows in each column.
    pub fn with_capacity(rows: usize) -> UsageColumns {
        UsageColumns {
            len: 0,
            strings: STRINGS.map(|_| Repeating::with_capacity(rows)),
            entry_index: Vec::with_capacity(rows),
            timestamp: Vec::with_capacity(rows),
            on_active_path: Vec::with_capacity(rows),
            numbers: std::array::from_fn(|_| Vec::with_capacity(rows)),
            cache_write_1h: Vec::with_capacity(rows),
            reasoning: Vec::with_capacity(rows),
            cost_from_provider: Vec::with_capacity(rows),
            inherited: Vec::with_capacity(rows),
            calculated: Vec::with_capacity(rows),
            effective: Vec::with_capacity(rows),
            incomplete: Vec::with_capacity(rows),
        }
    }
}

impl UsageColumns {
    /// Rows so far.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append one row (every value is computed before the first column grows, so a row is
    /// added whole).
    pub fn push(&mut self, u: &UsageRow<'_>) {
        let (row, r) = (&u.row, u.record);
        let (s, p) = (row.file, &row.priced);
        let strings = [
            s.session_id,
            Some(s.rel),
            Some(s.project),
            r.entry_id,
            Some(r.source.name()),
            r.kind,
            r.provider,
            r.model,
            r.response_model,
            r.api,
            r.stop_reason,
            r.thinking_level,
            row.reason.map(Inherited::name),
            row.spawned_by,
            p.source,
            Some(p.billing.name()),
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
        for (column, value) in self.strings.iter_mut().zip(strings) {
            column.push(value);
        }
        for (column, value) in self.numbers.iter_mut().zip(numbers) {
            column.push(value);
        }
        self.entry_index.push(r.entry);
        self.timestamp.push(row.call.ms);
        self.on_active_path.push(r.on_active_path);
        self.cache_write_1h.push(r.cache_write_1h);
        self.reasoning.push(r.reasoning);
        self.cost_from_provider.push(r.cost_from_provider);
        self.inherited.push(row.inherited());
        self.calculated.push(p.calculated);
        self.effective.push(p.chosen.cost);
        self.incomplete.push(r.missing != 0);
        self.len += 1;
    }

    /// The rows as a DataFrame with every column of [`USAGE`] but `source`; its schema
    /// checked against [`USAGE`].
    pub fn finish(self) -> PolarsResult<DataFrame> {
        let UsageColumns {
            len: _,
            strings,
            entry_index,
            timestamp,
            on_active_path,
            numbers,
            cache_write_1h,
            reasoning,
            cost_from_provider,
            inherited,
            calculated,
            effective,
            incomplete,
        } = self;
        let mut columns: Vec<(&str, Series)> = Vec::with_capacity(USAGE.len());
        for (name, builder) in STRINGS.into_iter().zip(strings) {
            columns.push((name, builder.finish(name)));
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
        columns.push(s("inherited", Series::new("".into(), inherited)));
        columns.push(s("cache_write_1h", Series::new("".into(), cache_write_1h)));
        columns.push(s("reasoning", Series::new("".into(), reasoning)));
        for (name, values) in NUMBERS.into_iter().zip(numbers) {
            columns.push(s(name, Series::new("".into(), values)));
        }
        columns.push(s("cost_from_provider", Series::new("".into(), cost_from_provider)));
        columns.push(s("cost_calculated", Series::new("".into(), calculated)));
        columns.push(s("cost_effective", Series::new("".into(), effective)));
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Values drawn from a few short, long and missing ones, so rows repeat.
    fn value() -> impl Strategy<Value = Option<&'static str>> {
        prop::sample::select(vec![
            None,
            Some(""),
            Some("anthropic"),
            Some("twelve bytes"),
            Some("thirteen byte"),
            Some("019a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8"),
            Some("019a2b3c-4d5e-6f70-8192-a3b4c5d6e7f9"),
            Some("--home-user-projects-pisa--/2026-12-04T20-57-06-000Z_019a2b3c.jsonl"),
        ])
    }

    proptest! {
        /// A plan holds every call once, in order: batches of `rows` rows (the last one
        /// smaller), each in at most `parts` pieces, none smaller than the least piece unless
        /// its batch is, differing by a row at most; every segment a non-empty run of one
        /// file's calls.
        #[test]
        fn a_plan_holds_every_call_once_in_order(
            counts in prop::collection::vec(prop_oneof![Just(0usize), 0usize..40, 0usize..3_000], 0..40),
            rows in 1usize..6_000,
            parts in 1usize..6,
        ) {
            let plan = plan(&counts, rows, parts);
            let total: usize = counts.iter().sum();
            prop_assert_eq!(plan.len(), total.div_ceil(rows), "batches");
            let least = PIECE_ROWS.min(rows / 4).max(1);
            // The calls in the plan's order, as (file, call).
            let mut calls = Vec::new();
            for (b, batch) in plan.iter().enumerate() {
                let n = rows.min(total - b * rows);
                prop_assert!(!batch.is_empty() && batch.len() <= parts, "batch {}: {} pieces", b, batch.len());
                let sizes: Vec<usize> = batch.iter().map(|p| p.iter().map(|s| s.take).sum()).collect();
                prop_assert_eq!(sizes.iter().sum::<usize>(), n, "batch {} holds its rows", b);
                let (small, large) = (sizes.iter().min().copied(), sizes.iter().max().copied());
                prop_assert!(large.zip(small).is_some_and(|(l, s)| l - s <= 1), "batch {}: pieces of {:?}", b, sizes);
                prop_assert!(batch.len() == 1 || sizes.iter().all(|&s| s >= least), "batch {}: pieces of {:?}", b, sizes);
                for segment in batch.iter().flatten() {
                    prop_assert!(segment.take > 0, "an empty segment");
                    prop_assert!(segment.skip + segment.take <= counts[segment.file], "{:?} past its file", segment);
                    calls.extend((segment.skip..segment.skip + segment.take).map(|k| (segment.file, k)));
                }
            }
            let expected: Vec<(usize, usize)> = counts.iter().enumerate().flat_map(|(f, &n)| (0..n).map(move |k| (f, k))).collect();
            prop_assert_eq!(calls, expected);
        }

        /// A repeating column reads back as the values pushed, and holds a long value's
        /// bytes once for each run of it.
        #[test]
        fn a_repeating_column_is_its_values(values in prop::collection::vec(value(), 0..200)) {
            let mut column = Repeating::with_capacity(4);
            for v in &values {
                column.push(*v);
            }
            let long = |v: &Option<&'static str>| v.filter(|s| s.len() > 12);
            let mut stored = 0;
            let mut last = None;
            for v in values.iter().filter_map(long) {
                if last != Some(v) {
                    stored += v.len();
                }
                last = Some(v);
            }
            prop_assert_eq!(column.values.total_buffer_len(), stored);
            let series = column.finish("column");
            let expected = StringChunked::new("column".into(), &values).into_series();
            prop_assert!(series.equals_missing(&expected), "{:?} against {:?}", series, expected);
            let ca = series.str().expect("strings");
            let bytes: usize = values.iter().flatten().map(|s| s.len()).sum();
            prop_assert_eq!(ca.downcast_iter().map(|a| a.total_bytes_len()).sum::<usize>(), bytes);
        }
    }
}
