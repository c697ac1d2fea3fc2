//! `pisa sessions` as a terminal table with a corpus footer.

use std::io::Write;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use super::{terminal_safe, tokens, usd};
use crate::corpus::Corpus;

/// Write the sessions table, oldest activity first (the newest ends up next to the prompt),
/// times to the minute in `tz` (named `tz_name` in the header). On a terminal the table fits
/// its width; into a pipe or a file no cell is wrapped.
pub fn sessions(
    out: &mut impl Write,
    corpus: &Corpus,
    tz: &jiff::tz::TimeZone,
    tz_name: &str,
    terminal: bool,
    pricing: Option<&crate::frame::Repricing>,
) -> std::io::Result<()> {
    let mut table = Table::new();
    table
        .load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(if terminal {
            ContentArrangement::Dynamic
        } else {
            ContentArrangement::Disabled
        });
    let zone = terminal_safe(tz_name);
    table.set_header(vec![
        "Project".to_string(),
        "Name".into(),
        format!("Started ({zone})"),
        format!("Last activity ({zone})"),
        "Models".into(),
        "Msgs".into(),
        "Tokens".into(),
        "Cost".into(),
        "Context now".into(),
        "Compactions".into(),
    ]);
    let mut order: Vec<&crate::corpus::SessionSummary> = corpus.sessions.iter().collect();
    order.sort_by(|a, b| {
        a.row
            .last_activity
            .cmp(&b.row.last_activity)
            .then_with(|| a.rel.cmp(&b.rel))
    });
    for s in order {
        let r = &s.row;
        let (total, own) = match pricing {
            Some(p) => {
                let f = p.files.get(&s.rel).copied().unwrap_or_default();
                (f.cost, f.own_cost)
            }
            None => (r.totals.cost, r.own.cost),
        };
        let cost = if (total - own).abs() > 1e-12 {
            format!("{} ({} own)", usd(total), usd(own))
        } else {
            usd(total)
        };
        table.add_row(vec![
            Cell::new(terminal_safe(&r.project)),
            Cell::new(terminal_safe(r.name.as_deref().unwrap_or(""))),
            Cell::new(minute(r.started.as_deref(), tz)),
            Cell::new(minute(r.last_activity.as_deref(), tz)),
            Cell::new(terminal_safe(&r.models.join(", "))),
            Cell::new(r.messages).set_alignment(CellAlignment::Right),
            Cell::new(tokens(r.totals.tokens())).set_alignment(CellAlignment::Right),
            Cell::new(cost).set_alignment(CellAlignment::Right),
            Cell::new(r.context_tokens.map_or_else(|| "unknown".into(), tokens)).set_alignment(CellAlignment::Right),
            Cell::new(r.compactions).set_alignment(CellAlignment::Right),
        ]);
    }
    writeln!(out, "{table}")?;
    footer(out, corpus)?;
    if let Some(p) = pricing {
        writeln!(
            out,
            "cost {}: {} (each call once), {} calls priced from {}, {} with tokens and no known price counted as $0",
            p.mode.name(),
            usd(p.total.cost),
            p.total.repriced,
            p.price_table,
            p.total.unpriced
        )?;
    }
    Ok(())
}

/// `2026-05-01T10:00:00.000Z` → `2026-05-01 12:00` in Europe/Berlin.
fn minute(iso: Option<&str>, tz: &jiff::tz::TimeZone) -> String {
    iso.and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map_or_else(String::new, |t| {
            t.to_zoned(tz.clone()).strftime("%Y-%m-%d %H:%M").to_string()
        })
}

/// The corpus totals and the count of skipped files.
pub fn footer(out: &mut impl Write, c: &Corpus) -> std::io::Result<()> {
    let t = &c.totals;
    writeln!(
        out,
        "{} sessions, {:.1} MB · tokens {} (input {}, output {}, cache read {}, cache write {}) · cost {}",
        c.sessions.len(),
        c.bytes as f64 / 1e6,
        tokens(t.tokens()),
        tokens(t.input),
        tokens(t.output),
        tokens(t.cache_read),
        tokens(t.cache_write),
        usd(t.cost),
    )?;
    if c.inherited_calls > 0 {
        writeln!(
            out,
            "{} billed calls copied by forks counted once (summing files would say {} and {})",
            c.inherited_calls,
            tokens(c.naive_totals.tokens()),
            usd(c.naive_totals.cost),
        )?;
    }
    // Files Pi would not load, apart from those pisa could not read (or that changed or went
    // away while it did), which count with the folders and links it could not scan.
    let count = |s: &str| c.rejected.iter().filter(|r| r.record.status.name() == s).count();
    let (changed, gone) = (count("changed"), count("gone"));
    let not_sessions = c.not_sessions().count();
    write!(
        out,
        "{} rejected, {} damaged, {} unreadable",
        count("rejected") - not_sessions,
        c.damaged(),
        c.issues.len() + c.rejected.len() - count("rejected") - changed - gone,
    )?;
    if changed > 0 {
        write!(out, ", {changed} changed while read")?;
    }
    if gone > 0 {
        write!(out, ", {gone} gone")?;
    }
    let transcripts = c.transcripts().count();
    if not_sessions > transcripts {
        write!(
            out,
            "; {} not Pi sessions (skipped, as Pi skips them)",
            not_sessions - transcripts
        )?;
    }
    if transcripts > 0 {
        write!(
            out,
            "; {transcripts} subagent transcripts (their calls counted where no session holds them)"
        )?;
    }
    writeln!(out)
}
