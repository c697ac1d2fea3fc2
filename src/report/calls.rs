//! The billed calls with their time, for the reports that cut time into windows
//! (`pisa blocks`, `pisa status`, `pisa watch`): a [`Rows`] sink lighter than the usage frame,
//! and the calls a corpus counts, by the rule every report follows (a call another record
//! holds, `inherited` in the usage frame, is left out), so that their sums agree with
//! `pisa daily`.

use crate::corpus::{Calls, Corpus, Rows, SessionRef};
use crate::usage::UsageRecord;

/// One billed call: when, what it cost, and the model key of the reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Unix ms, as the usage frame's `timestamp` (the entry's time, else the message's).
    pub ms: Option<i64>,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub cost: f64,
    /// [`super::rollup::model_key`].
    pub model: String,
}

impl Call {
    /// `input + output + cacheRead + cacheWrite`.
    pub fn tokens(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// The [`Rows`] sink of [`Call`]s.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallRows;

impl Rows for CallRows {
    type Part = Vec<Call>;
    const WANTED: bool = true;

    fn add(&self, part: &mut Vec<Call>, _: &SessionRef<'_>, calls: &[UsageRecord]) -> std::ops::Range<u32> {
        let start = part.len() as u32;
        part.extend(calls.iter().map(|r| Call {
            ms: crate::frame::time_of(r.timestamp.as_deref(), r.message_timestamp),
            input: r.input,
            output: r.output,
            cache_read: r.cache_read,
            cache_write: r.cache_write,
            cost: r.cost_total,
            model: super::rollup::model_key(
                r.source.name(),
                r.provider.as_deref(),
                r.model.as_deref(),
                r.response_model.as_deref(),
            ),
        }));
        start..part.len() as u32
    }
}

/// The calls of one file (a session or a transcript) that it counts: its rows in `parts`,
/// without those `reasons` says another record holds. `reasons` is the file's own
/// [`Calls`], or that of the same file in a larger scan when this scan saw only a few files.
pub fn counted_of<'a>(rows: &'a Calls, reasons: &'a Calls, parts: &'a [Vec<Call>]) -> impl Iterator<Item = &'a Call> {
    let span = rows.rows;
    let part = parts.get(span.part as usize).map_or(&[][..], Vec::as_slice);
    let own = part
        .get(span.start as usize..(span.start + span.len) as usize)
        .unwrap_or_default();
    own.iter()
        .zip(reasons.reasons())
        .filter_map(|(c, why)| why.is_none().then_some(c))
}

/// Every call the corpus counts, sessions then transcripts, in the usage frame's order.
pub fn counted(corpus: &Corpus, parts: &[Vec<Call>]) -> Vec<Call> {
    corpus
        .sessions
        .iter()
        .map(|s| &s.calls)
        .chain(
            corpus
                .transcripts()
                .filter_map(|r| r.transcript.as_ref())
                .map(|t| &t.calls),
        )
        .flat_map(|c| counted_of(c, c, parts))
        .cloned()
        .collect()
}
