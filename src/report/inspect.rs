//! `pisa inspect FILE`: one session in depth.

use std::io::Write;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, Table};
use serde_json::Value;

use super::{terminal_safe, tokens, usd};
use crate::analyze::facts::Effect;
use crate::analyze::{SessionAnalysis, SessionFacts};
use crate::js::JsVal;

/// A subagent session of the inspected one and what it spent (its own calls).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildSpend {
    /// Relative to the inspected session's folder.
    pub path: String,
    /// The session that ran it (the inspected one, or another child).
    pub spawned_by: Option<String>,
    pub billed_calls: u64,
    pub tokens: f64,
    pub cost: f64,
}

impl ChildSpend {
    /// The sessions of a corpus scanned from a session's stem folder: its subagents.
    pub fn of(corpus: &crate::corpus::Corpus) -> Vec<ChildSpend> {
        corpus
            .sessions
            .iter()
            .map(|s| ChildSpend {
                path: s.rel.clone(),
                spawned_by: s.spawned_by.clone(),
                billed_calls: s.calls.count,
                tokens: s.calls.own.tokens(),
                cost: s.calls.own.cost,
            })
            .collect()
    }
}

/// The inspect report as JSON: the session's facts, the projection by role and its subagents.
pub fn to_json(rel: &str, a: &SessionAnalysis, children: &[ChildSpend]) -> impl serde::Serialize {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Inspect<'a> {
        #[serde(flatten)]
        facts: SessionFacts,
        projection_by_role: Vec<RoleTokens>,
        subagents: &'a [ChildSpend],
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct RoleTokens {
        role: String,
        messages: u64,
        estimated_tokens: f64,
    }
    Inspect {
        facts: SessionFacts::of(rel, a),
        projection_by_role: a
            .role_tokens
            .iter()
            .map(|(role, messages, t)| RoleTokens {
                role: role.clone(),
                messages: *messages,
                estimated_tokens: *t,
            })
            .collect(),
        subagents: children,
    }
}

/// A value of the facts as a cell shows it: text as it is (made safe), `null` as `-`.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => terminal_safe(s),
        Value::Null => "-".into(),
        other => terminal_safe(&other.to_string()),
    }
}

fn shown_text(v: Option<&str>) -> String {
    v.map_or_else(|| "-".into(), terminal_safe)
}

/// The inspect report for a terminal.
pub fn render(out: &mut impl Write, path: &str, a: &SessionAnalysis, children: &[ChildSpend]) -> std::io::Result<()> {
    let facts = SessionFacts::of(path, a);
    overview(out, path, a, &facts)?;
    roles_table(out, a)?;
    usage_table(out, a)?;
    if !facts.compaction_effects.is_empty() {
        effects_table(out, &facts.compaction_effects)?;
    }
    if !children.is_empty() {
        children_table(out, children)?;
    }
    damage_line(out, a)
}

/// The sessions it ran as subagents (found in its stem folder), with what each spent itself.
fn children_table(out: &mut impl Write, children: &[ChildSpend]) -> std::io::Result<()> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_header(vec!["Subagent session", "Run by", "Calls", "Tokens", "Cost"]);
    let (mut total_tokens, mut total_cost) = (0.0, 0.0);
    for c in children {
        total_tokens += c.tokens;
        total_cost += c.cost;
        t.add_row(vec![
            Cell::new(terminal_safe(&c.path)),
            Cell::new(
                c.spawned_by
                    .as_deref()
                    .map_or_else(|| "this session".into(), terminal_safe),
            ),
            Cell::new(c.billed_calls).set_alignment(CellAlignment::Right),
            Cell::new(tokens(c.tokens)).set_alignment(CellAlignment::Right),
            Cell::new(usd(c.cost)).set_alignment(CellAlignment::Right),
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "subagents: {} sessions, {} tokens, {} (each call counted once)",
        children.len(),
        tokens(total_tokens),
        usd(total_cost)
    )
}

/// What the session is, what it cost, what the model sees.
fn overview(out: &mut impl Write, path: &str, a: &SessionAnalysis, f: &SessionFacts) -> std::io::Result<()> {
    writeln!(out, "{}", terminal_safe(path))?;
    writeln!(
        out,
        "  session   {}  (version {}, migrated from {})",
        shown_text(f.session_id.as_deref()),
        shown(&f.version.0),
        shown(&f.migrated_from.0)
    )?;
    writeln!(out, "  project   {}", terminal_safe(&f.project))?;
    writeln!(out, "  name      {}", shown_text(f.name.as_deref()))?;
    writeln!(out, "  parent    {}", shown(&f.parent_session.0))?;
    writeln!(
        out,
        "  activity  {} → {}",
        shown_text(f.started_at.as_deref()),
        shown_text(f.last_activity_at.as_deref())
    )?;
    writeln!(out, "  models    {}", terminal_safe(&f.models.join(", ")))?;
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
        shown(&f.thinking_level.0)
    )?;
    writeln!(out)
}

fn roles_table(out: &mut impl Write, a: &SessionAnalysis) -> std::io::Result<()> {
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
    writeln!(out, "{t}")
}

fn usage_table(out: &mut impl Write, a: &SessionAnalysis) -> std::io::Result<()> {
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
    writeln!(out, "{t}")
}

fn effects_table(out: &mut impl Write, effects: &[Effect]) -> std::io::Result<()> {
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
    let count = |n: Option<u64>| n.map_or_else(|| "-".into(), |n| n.to_string());
    for e in effects {
        let after = e.estimated_tokens_after.as_ref().map_or(Value::Null, JsVal::to_json);
        let cost = match e.usage_cost {
            JsVal::Num(c) if c.is_finite() => usd(c),
            _ => "-".into(),
        };
        t.add_row(vec![
            Cell::new(shown(&e.id.0)),
            Cell::new(e.on_active_path),
            Cell::new(shown(&e.tokens_before.0)).set_alignment(CellAlignment::Right),
            Cell::new(shown(&after)).set_alignment(CellAlignment::Right),
            Cell::new(count(e.entries_summarized)).set_alignment(CellAlignment::Right),
            Cell::new(count(e.entries_kept)).set_alignment(CellAlignment::Right),
            Cell::new(cost).set_alignment(CellAlignment::Right),
        ]);
    }
    writeln!(out, "{t}")
}

fn damage_line(out: &mut impl Write, a: &SessionAnalysis) -> std::io::Result<()> {
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
