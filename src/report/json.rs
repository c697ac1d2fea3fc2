//! The `sessions --json` document: every session's [`SessionFacts`] with the corpus's figures
//! for it, the files that are not sessions pisa could read, what could not be scanned, and the
//! corpus totals. Streamed session by session: the facts are read back from the spill one at
//! a time, never all in memory.

use serde::Serialize;

use crate::analyze::SessionFacts;
use crate::corpus::{Calls, Corpus, SessionSummary};
use crate::frame::{FileCost, Repricing};
use crate::js::Num;
use crate::usage::Totals;

/// One session object: its facts, then what the corpus adds.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionDocument<'a> {
    #[serde(flatten)]
    facts: &'a SessionFacts,
    own: Own,
    parent_in_corpus: Option<&'a str>,
    spawned_by: Option<&'a str>,
    children: &'a [String],
    subagent_tokens: Num,
    subagent_cost: Num,
    /// With `--cost calculate|auto`: the file's cost under that mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pricing: Option<FileCost>,
}

/// A file that is not a session pisa could read; for a subagent transcript, what the corpus
/// made of its calls.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RejectedDocument<'a> {
    #[serde(flatten)]
    record: crate::analyze::facts::FileDocument<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    own: Option<Own>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spawned_by: Option<Option<&'a str>>,
}

/// The calls a session owns (not copied from an earlier session), and how many it has.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Own {
    input: Num,
    output: Num,
    cache_read: Num,
    cache_write: Num,
    total: Num,
    cost: Num,
    billed_calls: u64,
    inherited_calls: u64,
}

impl Own {
    fn of(calls: &Calls) -> Own {
        let t = &calls.own;
        Own {
            input: Num(t.input),
            output: Num(t.output),
            cache_read: Num(t.cache_read),
            cache_write: Num(t.cache_write),
            total: Num(t.tokens()),
            cost: Num(t.cost),
            billed_calls: calls.count,
            inherited_calls: calls.inherited.len() as u64,
        }
    }
}

/// The corpus totals.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CorpusTotals {
    sessions: usize,
    rejected_files: usize,
    not_session_files: usize,
    transcript_files: usize,
    damaged_files: usize,
    bytes: u64,
    input: Num,
    output: Num,
    cache_read: Num,
    cache_write: Num,
    total: Num,
    cost: Num,
    billed_calls: u64,
    inherited_calls: u64,
    naive_total: Num,
    naive_cost: Num,
}

impl CorpusTotals {
    fn of(c: &Corpus) -> CorpusTotals {
        let t: &Totals = &c.totals;
        CorpusTotals {
            sessions: c.sessions.len(),
            rejected_files: c.rejected.len(),
            not_session_files: c.not_sessions().count(),
            transcript_files: c.transcripts().count(),
            damaged_files: c.damaged(),
            bytes: c.bytes,
            input: Num(t.input),
            output: Num(t.output),
            cache_read: Num(t.cache_read),
            cache_write: Num(t.cache_write),
            total: Num(t.tokens()),
            cost: Num(t.cost),
            billed_calls: c.calls,
            inherited_calls: c.inherited_calls,
            naive_total: Num(c.naive_totals.tokens()),
            naive_cost: Num(c.naive_totals.cost),
        }
    }
}

/// Write the document: `{"sessions": [...], "rejected": [...], "issues": [...], "totals": {...}}`.
/// With `pricing` (`--cost calculate|auto`), each session and the document carry a `pricing`
/// object: the cost under that mode.
pub fn sessions_document(
    out: &mut impl std::io::Write,
    c: &Corpus,
    pricing: Option<&Repricing>,
) -> std::io::Result<()> {
    write!(
        out,
        "{{\"schemaVersion\":{},\"sessions\":[",
        super::rollup::SCHEMA_VERSION
    )?;
    // The documents of a window of sessions are read back and written out by every core, then
    // printed in order: one core did it all after the scan, a tenth of the run.
    use rayon::prelude::*;
    const WINDOW: usize = 256;
    for (w, window) in c.sessions.chunks(WINDOW).enumerate() {
        let docs: Vec<std::io::Result<Vec<u8>>> = window
            .par_iter()
            .map(|s| {
                let facts = c.facts(s)?;
                let mut doc = session_document(s, &facts);
                doc.pricing = pricing.map(|p| p.files.get(&s.rel).copied().unwrap_or_default());
                Ok(serde_json::to_vec(&doc)?)
            })
            .collect();
        for (i, doc) in docs.into_iter().enumerate() {
            if w > 0 || i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(&doc?)?;
        }
    }
    out.write_all(b"],\"rejected\":")?;
    list(
        out,
        c.rejected.iter().map(|r| RejectedDocument {
            record: r.record.document(),
            own: r.transcript.as_ref().map(|t| Own::of(&t.calls)),
            spawned_by: r.transcript.as_ref().map(|t| t.spawned_by.as_deref()),
        }),
    )?;
    out.write_all(b",\"issues\":")?;
    list(out, c.issues.iter())?;
    out.write_all(b",\"totals\":")?;
    serde_json::to_writer(&mut *out, &CorpusTotals::of(c))?;
    if let Some(p) = pricing {
        out.write_all(b",\"pricing\":")?;
        let doc = serde_json::json!({
            "cost": p.mode.name(),
            "priceTable": p.price_table,
            "total": crate::js::num_json(p.total.cost),
            "repriced": p.total.repriced,
            "unpriced": p.total.unpriced,
        });
        serde_json::to_writer(&mut *out, &doc)?;
    }
    out.write_all(b"}\n")
}

fn session_document<'a>(s: &'a SessionSummary, facts: &'a SessionFacts) -> SessionDocument<'a> {
    SessionDocument {
        facts,
        own: Own::of(&s.calls),
        parent_in_corpus: s.parent_in_corpus.as_deref(),
        spawned_by: s.spawned_by.as_deref(),
        children: &s.children,
        subagent_tokens: Num(s.subagent.tokens()),
        subagent_cost: Num(s.subagent.cost),
        pricing: None,
    }
}

/// A JSON array, item by item.
fn list<T: Serialize>(out: &mut impl std::io::Write, items: impl Iterator<Item = T>) -> std::io::Result<()> {
    out.write_all(b"[")?;
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &item)?;
    }
    out.write_all(b"]")
}
