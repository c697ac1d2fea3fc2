//! `pisa inspect FILE`: one session in depth.

use std::io::Write;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};
use serde_json::{Value, json};

use super::{terminal_safe, tokens, usd};
use crate::analyze::SessionAnalysis;

/// The inspect report as JSON: the session object plus the projection by role.
pub fn to_json(rel: &str, a: &SessionAnalysis) -> Value {
    let mut m = super::json::session_json(rel, a, &super::json::overview(rel, a));
    let roles: Vec<Value> = a
        .role_tokens
        .iter()
        .map(|(r, n, t)| json!({"role": r, "messages": n, "estimatedTokens": t}))
        .collect();
    m.insert("projectionByRole".into(), roles.into());
    Value::Object(m)
}

/// The inspect report for a terminal.
pub fn render(out: &mut impl Write, path: &str, a: &SessionAnalysis) -> std::io::Result<()> {
    let ov = super::json::overview(path, a);
    let j = super::json::session_json(path, a, &ov);
    let s = |k: &str| {
        j.get(k).map_or_else(String::new, |v| match v {
            Value::String(s) => terminal_safe(s),
            Value::Null => "-".into(),
            other => terminal_safe(&other.to_string()),
        })
    };
    writeln!(out, "{}", terminal_safe(path))?;
    writeln!(
        out,
        "  session   {}  (version {}, migrated from {})",
        s("sessionId"),
        s("version"),
        s("migratedFrom")
    )?;
    writeln!(out, "  project   {}", s("project"))?;
    writeln!(out, "  name      {}", s("name"))?;
    writeln!(out, "  parent    {}", s("parentSession"))?;
    writeln!(out, "  activity  {} → {}", s("startedAt"), s("lastActivityAt"))?;
    writeln!(out, "  models    {}", terminal_safe(&ov.models.join(", ")))?;
    writeln!(
        out,
        "  entries   {} ({} on the active path, {} off it, {} roots)",
        a.tree.entries.len(),
        a.active_path_length,
        a.tree.entries.len() as u64 - a.active_path_length,
        a.tree_roots
    )?;
    let st = &a.accounting.stats;
    writeln!(
        out,
        "  billed    {} tokens, {} over {} usage records ({} messages, {} tool calls)",
        tokens(st.totals.tokens().to_number()),
        usd(st.totals.cost.to_number()),
        a.accounting.records.len(),
        st.total_messages,
        st.tool_calls
    )?;
    let ctx = if a.estimate.unknown {
        "unknown".to_string()
    } else {
        match &a.context_usage_tokens {
            Some(t) => format!("{} tokens", tokens(t.to_number())),
            None => format!(
                "unknown after the latest compaction (estimate {})",
                tokens(a.estimate.tokens.to_number())
            ),
        }
    };
    writeln!(
        out,
        "  context   {ctx}, {} messages projected, thinking {}",
        a.projected_message_count,
        s("thinkingLevel")
    )?;
    writeln!(out)?;

    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(vec!["Projected role", "Messages", "Est. tokens"]);
    for (role, n, tok) in a.role_tokens.iter().cloned() {
        t.add_row(vec![
            Cell::new(terminal_safe(&role)),
            Cell::new(n).set_alignment(CellAlignment::Right),
            Cell::new(tokens(tok)).set_alignment(CellAlignment::Right),
        ]);
    }
    writeln!(out, "{t}")?;

    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(vec!["Usage group", "Tokens", "Cost"]);
    for r in &a.accounting.breakdown {
        t.add_row(vec![
            Cell::new(terminal_safe(&r.key)),
            Cell::new(tokens(r.tokens.to_number())).set_alignment(CellAlignment::Right),
            Cell::new(usd(r.cost.to_number())).set_alignment(CellAlignment::Right),
        ]);
    }
    writeln!(out, "{t}")?;

    if !a.effects.is_empty() {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED).set_header(vec![
            "Compaction",
            "Active",
            "Tokens before",
            "Est. after",
            "Summarized",
            "Kept",
            "Summary cost",
        ]);
        let effects = j
            .get("compactionEffects")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for e in effects {
            let f = |k: &str| match e.get(k) {
                None | Some(Value::Null) => "-".to_string(),
                Some(Value::String(s)) => terminal_safe(s),
                Some(v) => terminal_safe(&v.to_string()),
            };
            t.add_row(vec![
                Cell::new(f("id")),
                Cell::new(f("onActivePath")),
                Cell::new(f("tokensBefore")).set_alignment(CellAlignment::Right),
                Cell::new(f("estimatedTokensAfter")).set_alignment(CellAlignment::Right),
                Cell::new(f("entriesSummarized")).set_alignment(CellAlignment::Right),
                Cell::new(f("entriesKept")).set_alignment(CellAlignment::Right),
                Cell::new(
                    e.get("usageCost")
                        .and_then(Value::as_f64)
                        .map_or_else(|| "-".into(), usd),
                )
                .set_alignment(CellAlignment::Right),
            ]);
        }
        writeln!(out, "{t}")?;
    }

    let d = &a.stats;
    writeln!(
        out,
        "damage: {} malformed lines{}, {} dropped values, {} pending tail bytes, {} invalid UTF-8 lines, {} lone-surrogate lines{}{}",
        d.malformed_lines,
        d.first_damage.as_ref().map_or_else(String::new, |x| format!(
            " (first at line {}, byte {}: {})",
            x.line,
            x.offset,
            terminal_safe(&x.reason)
        )),
        d.dropped_values,
        d.pending_tail_bytes,
        d.invalid_utf8_lines,
        d.lone_surrogate_lines,
        if a.cyclic_path {
            ", parent loop cut on the active path"
        } else {
            ""
        },
        a.pi_error
            .map_or_else(String::new, |e| format!("; Pi's own code would fail on this file: {e}")),
    )
}
