//! `--json-compat ccusage`: the daily, weekly, monthly and session reports with ccusage's
//! JSON field names (its documented `daily|weekly|monthly|session --json` output), so that a
//! dashboard reading ccusage can read pisa. Figures are pisa's (each call counted once);
//! `cacheCreationTokens` is Pi's `cacheWrite`, model names are the model part of pisa's
//! `provider/model` key.

use serde_json::{Map, Value, json};

use super::rollup::{Figures, Group, Report, Row};
use crate::js::num_json;

/// Whether ccusage has this report.
pub fn supports(g: Group) -> bool {
    matches!(g, Group::Daily | Group::Weekly | Group::Monthly | Group::Session)
}

/// ccusage's model name: the model without pisa's provider prefix.
fn model_name(key: &str) -> &str {
    key.split_once('/').map_or(key, |(_, m)| m)
}

/// The token and cost fields ccusage gives a row and its totals.
fn figures(f: &Figures) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("inputTokens".into(), num_json(f.input));
    m.insert("outputTokens".into(), num_json(f.output));
    m.insert("cacheCreationTokens".into(), num_json(f.cache_write));
    m.insert("cacheReadTokens".into(), num_json(f.cache_read));
    m.insert("totalTokens".into(), num_json(f.tokens()));
    m.insert("totalCost".into(), num_json(f.cost));
    m
}

fn row(group: Group, r: &Row) -> Value {
    let mut m = Map::new();
    let key = match group {
        Group::Daily => "date",
        Group::Weekly => "week",
        Group::Monthly => "month",
        _ => "sessionId",
    };
    let session_id = r.session.as_ref().and_then(|s| s.session_id.clone());
    m.insert(key.into(), json!(session_id.unwrap_or_else(|| r.key.clone())));
    m.extend(figures(&r.figures));
    if let Some(s) = &r.session {
        m.insert("lastActivity".into(), json!(s.last_activity));
        m.insert("projectPath".into(), json!(s.project));
    }
    let mut used: Vec<&str> = r.models.iter().map(|(k, _)| model_name(k)).collect();
    used.sort_unstable();
    used.dedup();
    m.insert("modelsUsed".into(), json!(used));
    let breakdowns: Vec<Value> = r
        .models
        .iter()
        .map(|(k, f)| {
            json!({
                "modelName": model_name(k),
                "inputTokens": num_json(f.input),
                "outputTokens": num_json(f.output),
                "cacheCreationTokens": num_json(f.cache_write),
                "cacheReadTokens": num_json(f.cache_read),
                "cost": num_json(f.cost),
            })
        })
        .collect();
    m.insert("modelBreakdowns".into(), Value::Array(breakdowns));
    Value::Object(m)
}

/// The report in ccusage's shape: `{"daily"|"weekly"|"monthly"|"sessions": [...], "totals": {...}}`.
pub fn ccusage(r: &Report) -> Value {
    let list = match r.group {
        Group::Daily => "daily",
        Group::Weekly => "weekly",
        Group::Monthly => "monthly",
        _ => "sessions",
    };
    let rows: Vec<Value> = r.rows.iter().map(|x| row(r.group, x)).collect();
    let mut doc = Map::new();
    doc.insert(list.into(), Value::Array(rows));
    doc.insert("totals".into(), Value::Object(figures(&r.totals)));
    Value::Object(doc)
}
