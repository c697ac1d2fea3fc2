//! The billed calls with their time, for the reports that cut time into windows
//! (`pisa blocks`, `pisa status`, `pisa watch`): the calls a corpus counts, by the rule every
//! report follows (a call another record holds, `inherited` in the usage frame, is left out),
//! so that their sums agree with `pisa daily`.

use crate::corpus::billed::{Billed, BilledCalls};
use crate::corpus::{Calls, Corpus};

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

impl Call {
    /// The call of a billed call.
    pub fn of(r: &Billed<'_>) -> Call {
        Call {
            ms: r.ms,
            input: r.input,
            output: r.output,
            cache_read: r.cache_read,
            cache_write: r.cache_write,
            cost: r.cost,
            model: super::rollup::model_key(r.source.name(), r.provider, r.model, r.response_model),
        }
    }
}

/// The calls of `billed` that `reasons` counts (in file order).
fn counted_calls<'a>(billed: &'a BilledCalls, reasons: &'a Calls) -> impl Iterator<Item = Call> + 'a {
    billed
        .iter()
        .zip(reasons.reasons())
        .filter(|(_, why)| why.is_none())
        .map(|(r, _)| Call::of(&r))
}

/// The calls of one file (a session or a transcript) of `corpus` that it counts.
pub fn counted_of(corpus: &Corpus, calls: &Calls) -> std::io::Result<Vec<Call>> {
    Ok(counted_calls(&corpus.billed(calls)?, calls).collect())
}

/// Every call the corpus counts, sessions then transcripts, in the usage frame's order.
pub fn counted(corpus: &Corpus) -> std::io::Result<Vec<Call>> {
    let mut out = Vec::new();
    corpus.each_billed(|f| {
        out.extend(counted_calls(&f.read, f.calls));
        Ok::<_, std::io::Error>(())
    })?;
    Ok(out)
}
