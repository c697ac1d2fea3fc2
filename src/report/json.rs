//! The `sessions --json` schema: one object per session.
//!
//! Keys that the oracle also prints carry the oracle's names and meaning, so a differential
//! test can compare them one by one; pisa's own figures (project, activity, damage, own
//! totals after fork deduplication) sit beside them.

use serde_json::{Map, Value, json};

use crate::analyze::{SessionAnalysis, tally};
use crate::js::JsVal;
use crate::js::{self, Jv, num_json};
use crate::parse::entry::{Body, EntryType};
use crate::parse::{LineStats, RejectReason};
use crate::project::Estimate;
use crate::tree::Tree;
use crate::usage::PiTotals;

fn num(f: f64) -> Value {
    num_json(f)
}

fn jv(v: &Jv) -> Value {
    v.clone().unwrap_or(Value::Null)
}

fn tally_json(t: &[(String, u64)]) -> Value {
    Value::Object(t.iter().map(|(k, n)| (k.clone(), json!(n))).collect())
}

fn totals_json(t: &PiTotals) -> Value {
    json!({"input": t.input.to_json(), "output": t.output.to_json(), "cacheRead": t.cache_read.to_json(), "cacheWrite": t.cache_write.to_json(), "cost": t.cost.to_json()})
}

fn estimate_json(e: &Estimate) -> Value {
    if e.unknown {
        return json!({"tokens": null, "usageTokens": null, "trailingTokens": null, "lastUsageIndex": null});
    }
    json!({
        "tokens": e.tokens.to_json(),
        "usageTokens": e.usage_tokens.to_json(),
        "trailingTokens": num(e.trailing_tokens),
        "lastUsageIndex": e.last_usage_index,
    })
}

/// ISO 8601 (UTC, milliseconds) for Unix milliseconds.
pub fn iso_ms(ms: f64) -> Option<String> {
    let t = jiff::Timestamp::from_millisecond(ms as i64).ok()?;
    Some(format!("{t:.3}"))
}

/// Line diagnostics shared by accepted and rejected files.
pub fn damage_json(s: &LineStats) -> Value {
    json!({
        "malformedLines": s.malformed_lines,
        "firstDamage": s.first_damage.as_ref().map(|d| json!({"line": d.line, "offset": d.offset, "reason": d.reason})),
        "pendingTailBytes": s.pending_tail_bytes,
        "droppedValues": s.dropped_values,
        "blankLines": s.blank_lines,
        "invalidUtf8Lines": s.invalid_utf8_lines,
        "loneSurrogateLines": s.lone_surrogate_lines,
        "outOfRangeNumberLines": s.out_of_range_number_lines,
        "bom": s.bom,
    })
}

/// The record of a rejected file, in the oracle's shape plus pisa's reason text and whether the
/// file is a session at all.
pub fn rejected_json(rel: &str, stats: &LineStats, reason: &RejectReason, not_session: bool) -> Value {
    json!({
        "path": rel,
        "status": "rejected",
        "bytes": stats.bytes,
        "lines": stats.lines,
        "rejectReason": reason.code(),
        "reason": reason.message(),
        "notSession": not_session,
        "raw": {"blankLines": stats.raw_blank_lines, "endsWithNewline": stats.ends_with_newline},
    })
}

fn entry_id(tree: &Tree, i: Option<u32>) -> Value {
    i.map_or(Value::Null, |i| tree.id_json(i))
}

/// The figures of a session that need its path or a formatting choice, computed once for
/// both the JSON object and the table row.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Overview {
    pub project: String,
    pub started: Option<String>,
    pub last_activity: Option<String>,
    pub models: Vec<String>,
}

/// The [`Overview`] of a session found at `rel`.
pub fn overview(rel: &str, a: &SessionAnalysis) -> Overview {
    Overview {
        project: project_of(&a.tree, rel),
        started: a.started_ms.and_then(iso_ms),
        last_activity: a.last_activity_ms.and_then(iso_ms),
        models: models(a),
    }
}

/// The object for one session (without the corpus-level keys, which the caller adds).
pub fn session_json(rel: &str, a: &SessionAnalysis, ov: &Overview) -> Map<String, Value> {
    let t = &a.tree;
    let s = &a.stats;
    let acc = &a.accounting;
    let entry_counts = tally(t.entries.iter().map(|e| e.ty.name()));
    let message_counts = tally(t.entries.iter().filter_map(|e| match &e.body {
        Body::Message(m) if e.ty == EntryType::Message => Some(m.role.name()),
        _ => None,
    }));
    let stats = if acc.pi_error.is_some() {
        Value::Null
    } else {
        let st = &acc.stats;
        json!({
            "userMessages": st.user_messages,
            "assistantMessages": st.assistant_messages,
            "toolCalls": st.tool_calls,
            "toolResults": st.tool_results,
            "totalMessages": st.total_messages,
            "tokens": {
                "input": st.totals.input.to_json(),
                "output": st.totals.output.to_json(),
                "cacheRead": st.totals.cache_read.to_json(),
                "cacheWrite": st.totals.cache_write.to_json(),
                "total": st.totals.tokens().to_json(),
            },
            "cost": st.totals.cost.to_json(),
        })
    };
    let latest = a.compactions.latest.map(|i| (i, &t.entries[i as usize]));
    let latest_c = latest.and_then(|(_, e)| match &e.body {
        Body::Compaction(c) => Some(c),
        _ => None,
    });
    let effects: Vec<Value> = a
        .effects
        .iter()
        .map(|eff| {
            let e = &t.entries[eff.entry as usize];
            let Body::Compaction(c) = &e.body else { unreachable!("effects are compactions") };
            let mut u = PiTotals::default();
            if let Some(usage) = &c.usage {
                let _ = u.add(usage);
            }
            json!({
                "id": t.id_json(eff.entry),
                "onActivePath": eff.on_active_path,
                "tokensBefore": jv(&c.tokens_before),
                "firstKeptEntryId": t.ref_json(&c.first_kept),
                "retainsNone": e.id.truthy() && c.first_kept == e.id,
                "hasSystemMessage": c.system_message.is_some(),
                "usageTokens": u.tokens().to_json(),
                "usageCost": u.cost.to_json(),
                "pathLengthAtCompaction": eff.path_length,
                "contextEntriesAfter": eff.context_entries_after,
                "projectedMessagesAfter": eff.projected_messages_after,
                "estimatedTokensAfter": eff.estimated_tokens_after.as_ref().map(|x| if x.unknown { Value::Null } else { x.tokens.to_json() }),
                "entriesSummarized": eff.entries_summarized,
                "entriesKept": eff.entries_kept,
                "timestamp": e.timestamp.as_deref(),
            })
        })
        .collect();
    let h = &t.header;
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(k.to_string(), v);
    };
    put("path", rel.into());
    put("status", "ok".into());
    put("bytes", s.bytes.into());
    put("lines", s.lines.into());
    put("sessionId", h.id.as_deref().into());
    // Pi's migration rewrites the header's version in memory.
    put(
        "version",
        if t.migrated_from.is_some() {
            3.into()
        } else {
            jv(&h.version)
        },
    );
    put("migratedFrom", t.migrated_from.clone().unwrap_or(Value::Null));
    put(
        "cwd",
        h.cwd.as_ref().filter(|c| c.is_string()).cloned().unwrap_or(Value::Null),
    );
    put("parentSession", jv(&h.parent_session));
    put("headerTimestamp", jv(&h.timestamp));
    put("name", a.name.as_deref().into());
    put("entryCount", t.entries.len().into());
    put("entryCounts", tally_json(&entry_counts));
    put("extraHeaderLines", t.extra_header_lines.into());
    put(
        "raw",
        json!({
            "parsedLines": s.parsed_lines,
            "blankLines": s.raw_blank_lines,
            "unparsableLines": s.lines - s.raw_blank_lines - s.parsed_lines,
            "endsWithNewline": s.ends_with_newline,
            "piAppendsNewline": !s.ends_with_newline,
        }),
    );
    put("messageCounts", tally_json(&message_counts));
    put("stats", stats);
    put(
        "usageBreakdown",
        acc.breakdown
            .iter()
            .map(|r| json!({"key": r.key, "cost": r.cost.to_json(), "tokens": r.tokens.to_json()}))
            .collect(),
    );
    put(
        "usageByKind",
        Value::Object({
            let mut kinds = acc.by_kind.clone();
            kinds.sort_by(|a, b| js::cmp_utf16(&a.0, &b.0));
            kinds
                .iter()
                .map(|(k, n, tot)| {
                    let mut o = totals_json(tot);
                    o.as_object_mut()
                        .expect("object")
                        .shift_insert(0, "count".into(), json!(n));
                    (k.clone(), o)
                })
                .collect()
        }),
    );
    let bs = &acc.by_source;
    put(
        "usageBySource",
        json!({
            "assistant": totals_json(&bs.assistant),
            "toolResult": totals_json(&bs.tool_result),
            "usageEntry": totals_json(&bs.usage_entry),
            "compaction": totals_json(&bs.compaction),
            "branchSummary": totals_json(&bs.branch_summary),
        }),
    );
    put("leafId", entry_id(t, a.leaf));
    put("leafIndex", a.leaf.into());
    put("leafType", a.leaf.map(|i| t.entries[i as usize].ty.name()).into());
    put("activePathLength", a.active_path_length.into());
    put("offPathEntries", (t.entries.len() as u64 - a.active_path_length).into());
    put("treeRoots", a.tree_roots.into());
    put("contextEntryCount", a.context_entry_count.into());
    put("contextEntryTypes", tally_json(&a.context_entry_types));
    put("projectedMessageCount", a.projected_message_count.into());
    put("projectedRoles", tally_json(&a.projected_roles));
    put(
        "model",
        a.model
            .as_ref()
            .map_or(Value::Null, |(p, mo)| json!({"provider": jv(p), "modelId": jv(mo)})),
    );
    put("thinkingLevel", jv(&a.thinking_level));
    let ed = &a.edits;
    put(
        "contextEdits",
        json!({"total": ed.total, "onPath": ed.on_path, "inContext": ed.in_context, "applied": ed.applied, "omitted": ed.omitted, "replaced": ed.replaced}),
    );
    put(
        "compactions",
        json!({
            "total": a.compactions.total,
            "onPath": a.compactions.on_path,
            "latestId": entry_id(t, a.compactions.latest),
            "latestTokensBefore": latest_c.map_or(Value::Null, |c| jv(&c.tokens_before)),
            "latestFirstKeptEntryId": latest_c.map_or(Value::Null, |c| t.ref_json(&c.first_kept)),
            "latestRetainsNone": latest.map(|(_, e)| matches!(&e.body, Body::Compaction(c) if c.first_kept == e.id)),
            "latestFirstKeptOnPath": latest.map(|_| a.compactions.latest_first_kept_on_path),
            "latestHasSystemMessage": latest_c.map(|c| c.system_message.is_some()),
        }),
    );
    put("estimate", estimate_json(&a.estimate));
    put(
        "contextUsageTokens",
        if a.estimate.unknown {
            Value::Null
        } else {
            a.context_usage_tokens.as_ref().map_or(Value::Null, JsVal::to_json)
        },
    );
    put("compactionEffects", Value::Array(effects));
    // pisa's own keys.
    put("project", ov.project.as_str().into());
    put("startedAt", ov.started.as_deref().into());
    put("lastActivityAt", ov.last_activity.as_deref().into());
    put("models", ov.models.clone().into());
    put("damage", {
        let mut d = damage_json(s);
        d.as_object_mut()
            .expect("object")
            .insert("cyclicPath".into(), a.cyclic_path.into());
        d
    });
    put("piError", a.pi_error.into());
    put("usageRecords", acc.records.len().into());
    m
}

/// The models that answered, most expensive first (`provider/model`, virtual models resolved).
pub fn models(a: &SessionAnalysis) -> Vec<String> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for r in &a.accounting.records {
        if r.source != crate::usage::Source::Assistant {
            continue;
        }
        let name = r
            .response_model
            .as_deref()
            .or(r.model.as_deref())
            .unwrap_or("?")
            .to_string();
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += r.cost_total,
            None => out.push((name, r.cost_total)),
        }
    }
    out.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
    out.into_iter().map(|(n, _)| n).collect()
}

/// The project of a session: its header `cwd`, else the decoded folder name.
pub fn project_of(t: &Tree, rel: &str) -> String {
    if let Some(cwd) = t.cwd().filter(|c| !c.is_empty()) {
        return cwd.to_string();
    }
    let folder = rel
        .rsplit_once('/')
        .map_or("", |(dir, _)| dir.rsplit('/').next().unwrap_or(dir));
    folder
        .strip_prefix("--")
        .and_then(|f| f.strip_suffix("--"))
        .map_or_else(|| folder.to_string(), |f| format!("/{f}"))
}
