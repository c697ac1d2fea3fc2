//! `pisa compactions`: what each compaction did to the context, then the same
//! summed per session and per model. A fork's copy of a compaction is left out.

use std::io::Write;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use polars::prelude::*;
use serde_json::{Value, json};

use super::rollup::Options;
use super::{terminal_safe, tokens, usd};
use crate::analyze::parse_iso_ms;
use crate::corpus::{CompactionRow, Corpus, SessionSummary};
use crate::js::num_json;

/// One compaction, as the report shows it.
#[derive(Debug, Clone)]
pub struct Line<'a> {
    pub session: &'a SessionSummary,
    pub c: &'a CompactionRow,
    pub model: String,
}

impl Line<'_> {
    fn ratio(&self) -> Option<f64> {
        let (b, a) = (self.c.tokens_before?, self.c.estimated_tokens_after?);
        (b > 0.0).then(|| (b - a) / b)
    }
}

/// Sums over a group of compactions.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub key: String,
    pub count: u64,
    /// Compactions whose tokens before and estimate after are both known.
    pub measured: u64,
    pub tokens_before: f64,
    pub tokens_after: f64,
    pub entries_summarized: u64,
    pub cost: f64,
}

impl Summary {
    fn add(&mut self, l: &Line<'_>) {
        self.count += 1;
        if let (Some(b), Some(a)) = (l.c.tokens_before, l.c.estimated_tokens_after) {
            self.measured += 1;
            self.tokens_before += b;
            self.tokens_after += a;
        }
        self.entries_summarized += l.c.entries_summarized.unwrap_or(0);
        self.cost += l.c.usage_cost.unwrap_or(0.0);
    }

    /// Share of the context removed, over the measured compactions.
    pub fn reduction_ratio(&self) -> Option<f64> {
        (self.tokens_before > 0.0).then(|| (self.tokens_before - self.tokens_after) / self.tokens_before)
    }

    fn json(&self) -> Value {
        json!({
            "key": self.key,
            "compactions": self.count,
            "measured": self.measured,
            "tokensBefore": num_json(self.tokens_before),
            "estimatedTokensAfter": num_json(self.tokens_after),
            "reduction": num_json(self.tokens_before - self.tokens_after),
            "reductionRatio": self.reduction_ratio(),
            "entriesSummarized": self.entries_summarized,
            "cost": num_json(self.cost),
        })
    }
}

/// The report: compactions in time order, then the sums.
#[derive(Debug, Clone)]
pub struct Report<'a> {
    pub lines: Vec<Line<'a>>,
    pub by_session: Vec<Summary>,
    pub by_model: Vec<Summary>,
    pub totals: Summary,
}

/// Select and group the compactions of a corpus.
pub fn build<'a>(corpus: &'a Corpus, o: &Options) -> Report<'a> {
    let mut lines = Vec::new();
    for s in &corpus.sessions {
        let project = &s.row.project;
        for c in s.compactions.iter().filter(|c| !c.inherited) {
            let model = format!(
                "{}/{}",
                c.provider.as_deref().unwrap_or("?"),
                c.model.as_deref().unwrap_or("?")
            );
            let ms = c.timestamp.as_deref().and_then(parse_iso_ms);
            if !super::rollup::passes(o, ms, project, &model) {
                continue;
            }
            lines.push(Line { session: s, c, model });
        }
    }
    lines.sort_by(|a, b| {
        a.c.timestamp
            .cmp(&b.c.timestamp)
            .then_with(|| a.session.rel.cmp(&b.session.rel))
    });
    let group = |key: &dyn Fn(&Line<'_>) -> String| {
        let mut out: Vec<Summary> = Vec::new();
        for l in &lines {
            let k = key(l);
            match out.iter_mut().find(|s| s.key == k) {
                Some(s) => s.add(l),
                None => {
                    let mut s = Summary {
                        key: k,
                        ..Summary::default()
                    };
                    s.add(l);
                    out.push(s);
                }
            }
        }
        out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        out
    };
    let by_session = group(&|l| l.session.rel.clone());
    let by_model = group(&|l| l.model.clone());
    let mut totals = Summary {
        key: "Total".into(),
        ..Summary::default()
    };
    for l in &lines {
        totals.add(l);
    }
    Report {
        lines,
        by_session,
        by_model,
        totals,
    }
}

fn opt_tokens(x: Option<f64>) -> String {
    x.map_or_else(|| "unknown".into(), tokens)
}

fn percent(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{:.1}%", x * 100.0))
}

fn new_table(terminal: bool) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(if terminal {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    });
    t
}

fn right(s: String) -> Cell {
    Cell::new(s).set_alignment(CellAlignment::Right)
}

fn summary_table(title: &str, rows: &[Summary], totals: &Summary, terminal: bool) -> Table {
    let mut t = new_table(terminal);
    t.set_header(vec![
        title,
        "Compactions",
        "Tokens before",
        "Estimated after",
        "Reduction",
        "Entries summarized",
        "Summary cost",
    ]);
    for s in rows.iter().chain(std::iter::once(totals)) {
        t.add_row(vec![
            Cell::new(terminal_safe(&s.key)),
            right(s.count.to_string()),
            right(tokens(s.tokens_before)),
            right(tokens(s.tokens_after)),
            right(percent(s.reduction_ratio())),
            right(s.entries_summarized.to_string()),
            right(usd(s.cost)),
        ]);
    }
    t
}

/// Terminal tables: every compaction, then per session and per model.
pub fn table(out: &mut impl Write, r: &Report<'_>, terminal: bool) -> std::io::Result<()> {
    let mut t = new_table(terminal);
    t.set_header(vec![
        "Time (UTC)",
        "Session",
        "Model",
        "Tokens before",
        "Estimated after",
        "Reduction",
        "Summarized",
        "Kept",
        "Cost",
        "On path",
    ]);
    for l in &r.lines {
        t.add_row(vec![
            Cell::new(
                l.c.timestamp
                    .as_deref()
                    .map_or_else(String::new, |t| t.get(..16).unwrap_or(t).replacen('T', " ", 1)),
            ),
            Cell::new(terminal_safe(&l.session.rel)),
            Cell::new(terminal_safe(&l.model)),
            right(opt_tokens(l.c.tokens_before)),
            right(opt_tokens(l.c.estimated_tokens_after)),
            right(percent(l.ratio())),
            right(l.c.entries_summarized.map_or_else(|| "-".into(), |n| n.to_string())),
            right(l.c.entries_kept.map_or_else(|| "-".into(), |n| n.to_string())),
            right(l.c.usage_cost.map_or_else(|| "-".into(), usd)),
            Cell::new(if l.c.on_active_path { "yes" } else { "no" }),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{}", summary_table("Session", &r.by_session, &r.totals, terminal))?;
    writeln!(out, "{}", summary_table("Model", &r.by_model, &r.totals, terminal))?;
    writeln!(
        out,
        "{} compactions ({} with a known effect); fork copies left out.",
        r.totals.count, r.totals.measured
    )
}

/// One JSON document.
pub fn to_json(r: &Report<'_>) -> Value {
    json!({
        "schemaVersion": super::rollup::SCHEMA_VERSION,
        "compactions": r.lines.iter().map(|l| json!({
            "file": l.session.rel,
            "sessionId": l.session.session_id,
            "project": l.session.row.project,
            "entryId": l.c.entry_id,
            "timestamp": l.c.timestamp.as_deref(),
            "model": l.model,
            "onActivePath": l.c.on_active_path,
            "tokensBefore": l.c.tokens_before,
            "estimatedTokensAfter": l.c.estimated_tokens_after,
            "reduction": l.c.tokens_before.zip(l.c.estimated_tokens_after).map(|(b, a)| b - a),
            "reductionRatio": l.ratio(),
            "entriesSummarized": l.c.entries_summarized,
            "entriesKept": l.c.entries_kept,
            "usageTokens": l.c.usage_tokens,
            "cost": l.c.usage_cost,
        })).collect::<Vec<_>>(),
        "bySession": r.by_session.iter().map(Summary::json).collect::<Vec<_>>(),
        "byModel": r.by_model.iter().map(Summary::json).collect::<Vec<_>>(),
        "totals": r.totals.json(),
    })
}

/// The compactions as a frame, for CSV.
pub fn to_frame(r: &Report<'_>) -> PolarsResult<DataFrame> {
    let l = &r.lines;
    DataFrame::new_infer_height(vec![
        Column::new(
            "file".into(),
            l.iter().map(|l| l.session.rel.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "entry_id".into(),
            l.iter().map(|l| l.c.entry_id.as_deref()).collect::<Vec<_>>(),
        ),
        Column::new(
            "timestamp".into(),
            l.iter().map(|l| l.c.timestamp.as_deref()).collect::<Vec<_>>(),
        ),
        Column::new("model".into(), l.iter().map(|l| l.model.as_str()).collect::<Vec<_>>()),
        Column::new(
            "on_active_path".into(),
            l.iter().map(|l| l.c.on_active_path).collect::<Vec<_>>(),
        ),
        Column::new(
            "tokens_before".into(),
            l.iter().map(|l| l.c.tokens_before).collect::<Vec<_>>(),
        ),
        Column::new(
            "estimated_tokens_after".into(),
            l.iter().map(|l| l.c.estimated_tokens_after).collect::<Vec<_>>(),
        ),
        Column::new("reduction_ratio".into(), l.iter().map(Line::ratio).collect::<Vec<_>>()),
        Column::new(
            "entries_summarized".into(),
            l.iter().map(|l| l.c.entries_summarized).collect::<Vec<_>>(),
        ),
        Column::new(
            "entries_kept".into(),
            l.iter().map(|l| l.c.entries_kept).collect::<Vec<_>>(),
        ),
        Column::new(
            "usage_tokens".into(),
            l.iter().map(|l| l.c.usage_tokens).collect::<Vec<_>>(),
        ),
        Column::new("cost".into(), l.iter().map(|l| l.c.usage_cost).collect::<Vec<_>>()),
    ])
}
