//! What the model saw: context entries, the projection, and Pi's token estimate.
//!
//! Mirrors `buildContextEntries`, `buildSessionProjection` (`session-manager.js`) and
//! `estimateContextTokens` / `estimateProjectedContextTokens` (`compaction/compaction.js`),
//! working on the character counts the parser kept instead of on message objects.

use hashbrown::{HashMap, HashSet};

use crate::js::{JsVal, Jv, Key};
use crate::parse::entry::{Body, ContentChars, EntryType, Message, Presence, Replacement, Role};
use crate::tree::{Path, Tree};

/// Where a projected system message's data lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SysRef {
    /// The message of a `message` entry.
    Entry(u32),
    /// The `systemMessage` of a compaction entry.
    Compaction(u32),
}

impl SysRef {
    /// The entry holding the message.
    fn entry(self) -> u32 {
        match self {
            SysRef::Entry(i) | SysRef::Compaction(i) => i,
        }
    }
}

/// One message of the projection.
#[derive(Debug, Clone)]
pub struct ProjectedMessage {
    pub role: Role,
    /// `estimateTokens(message)` as the JavaScript number Pi gets (`NaN` possible);
    /// `None` where Pi's code throws.
    pub tokens: Option<f64>,
    /// `calculateContextTokens(usage)` for an assistant message whose usage Pi trusts.
    pub usage_tokens: Option<JsVal>,
    pub system: Option<SysRef>,
}

/// One context entry and the messages it projects to.
#[derive(Debug, Clone)]
pub struct ProjectedEntry {
    pub entry: u32,
    pub messages: std::ops::Range<usize>,
    /// The entry's latest in-context edit was applied.
    pub edit: Option<EditKind>,
}

/// How an applied edit changed its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditKind {
    Omitted,
    Replaced,
}

/// `buildSessionProjection` for one leaf.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    /// The context entries (`buildContextEntries`), as entry indices.
    pub context: Vec<u32>,
    pub entries: Vec<ProjectedEntry>,
    pub messages: Vec<ProjectedMessage>,
    pub thinking_level: Jv,
    pub model: Option<(Jv, Jv)>,
    /// Why Pi's code would throw while projecting, if it would.
    pub pi_error: Option<&'static str>,
}

/// `estimateProjectedContextTokens`. `tokens` and `usage_tokens` are JavaScript values: a
/// usage field written as a string makes them strings in Pi, and pisa follows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    pub tokens: JsVal,
    pub usage_tokens: JsVal,
    pub trailing_tokens: f64,
    /// Index of the message whose usage was used; `None` when Pi fell back to chars/4.
    pub last_usage_index: Option<usize>,
    /// Pi's code would throw computing this (a `NaN` is not unknown: it is Pi's figure).
    pub unknown: bool,
}

/// `buildContextEntries` over a path.
pub fn context_entries(tree: &Tree, path: &Path) -> Vec<u32> {
    let p = &path.entries;
    let Some(comp_pos) = p
        .iter()
        .rposition(|&i| tree.entries[i as usize].ty == EntryType::Compaction)
    else {
        return p.clone();
    };
    let comp = &tree.entries[p[comp_pos] as usize];
    let Some(comp_idx) = p.iter().position(|&i| tree.entries[i as usize].id == comp.id) else {
        return p.clone();
    };
    let first_kept = match &comp.body {
        Body::Compaction(c) => &c.first_kept,
        _ => &Key::Undefined,
    };
    let mut out = Vec::with_capacity(p.len() - comp_idx + 8);
    out.push(p[comp_pos]);
    let mut found = false;
    for &i in &p[..comp_idx] {
        let e = &tree.entries[i as usize];
        if e.id == *first_kept {
            found = true;
        }
        let is_system = matches!(&e.body, Body::Message(m) if m.role == Role::System);
        if found && !is_system {
            out.push(i);
        }
    }
    out.extend_from_slice(&p[comp_idx + 1..]);
    out
}

/// `Math.ceil(chars / 4)`.
fn quarter(chars: Option<f64>) -> Option<f64> {
    chars.map(|c| (c / 4.0).ceil())
}

/// `estimateTokens` for a message of `role` whose content is `content`.
fn content_tokens(role: &Role, content: &ContentChars, normalize_null: bool) -> Option<f64> {
    let nullish_zero = normalize_null && content.nullish;
    match role {
        Role::User | Role::ToolResult => {
            if nullish_zero {
                Some(0.0)
            } else {
                quarter(content.as_content)
            }
        }
        Role::Custom => quarter(if content.nullish { None } else { content.as_content }),
        Role::Assistant => {
            if nullish_zero {
                Some(0.0)
            } else {
                quarter(content.as_assistant)
            }
        }
        _ => Some(0.0),
    }
}

/// The projected message of a `message` entry (or compaction `systemMessage`) with an
/// optional replacement content.
fn project_message(m: &Message, repl: Option<&ContentChars>, sys: SysRef, from_entry: bool) -> ProjectedMessage {
    if m.not_object {
        return ProjectedMessage {
            role: Role::Missing,
            tokens: Some(0.0),
            usage_tokens: None,
            system: None,
        };
    }
    let role = m.role.clone();
    let tokens = match (&role, repl) {
        (Role::User | Role::Assistant | Role::ToolResult | Role::Custom, Some(c)) => {
            if c.nullish {
                None
            } else if matches!(role, Role::Assistant) {
                quarter(if c.is_string { c.as_content } else { c.as_assistant })
            } else {
                quarter(c.as_content)
            }
        }
        (Role::System, _) => quarter(m.system.as_ref().and_then(|s| s.own_chars)),
        (Role::User | Role::Assistant | Role::ToolResult | Role::Custom, None) => {
            content_tokens(&role, &m.content, from_entry)
        }
        (Role::BashExecution | Role::BranchSummary | Role::CompactionSummary, _) => quarter(m.own_chars),
        _ => Some(0.0),
    };
    let usage_tokens = (role == Role::Assistant && m.has_usage_key)
        .then(|| {
            let stop = m.stop_reason.as_str();
            if stop == Some("aborted") || stop == Some("error") {
                return None;
            }
            let u = m.usage.as_ref()?;
            let t = u.context_tokens();
            (t.to_number() > 0.0).then_some(t)
        })
        .flatten();
    let system = (role == Role::System).then_some(sys);
    ProjectedMessage {
        role,
        tokens,
        usage_tokens,
        system,
    }
}

/// `buildSessionProjection(entries, leafId, byId)`: `path` is `buildSessionPath` for that leaf.
pub fn project(tree: &Tree, path: &Path) -> Projection {
    let (thinking_level, model) = tree.settings(path);
    let context = context_entries(tree, path);
    let mut edits: HashMap<&Key, u32> = HashMap::new();
    for &i in &context {
        if let Body::ContextEdit(ce) = &tree.entries[i as usize].body {
            edits.insert(&ce.target, i);
        }
    }
    let mut proj = Projection {
        thinking_level,
        model,
        ..Default::default()
    };
    // An entry each, and a message for most (growing them was most of a projection's copies).
    proj.entries.reserve_exact(context.len());
    proj.messages.reserve(context.len());
    for (k, &i) in context.iter().enumerate() {
        let e = &tree.entries[i as usize];
        let start = proj.messages.len();
        let mut edit_kind = None;
        let older_compaction = e.ty == EntryType::Compaction && k > 0;
        if !older_compaction {
            let edit = edits.get(&e.id).map(|&ei| match &tree.entries[ei as usize].body {
                Body::ContextEdit(ce) => &ce.replacement,
                _ => unreachable!("edits holds context_edit entries"),
            });
            let repl = match edit {
                None => None,
                Some(Replacement::Null) => {
                    edit_kind = Some(EditKind::Omitted);
                    proj.entries.push(ProjectedEntry {
                        entry: i,
                        messages: start..start,
                        edit: edit_kind,
                    });
                    continue;
                }
                Some(Replacement::Absent) => {
                    // `replacement.content` is read only for messages whose content an edit
                    // replaces; a compaction's or branch summary's messages pass untouched.
                    edit_kind = Some(EditKind::Replaced);
                    None
                }
                Some(Replacement::Content(c)) => {
                    edit_kind = Some(EditKind::Replaced);
                    Some(c)
                }
            };
            push_entry_messages(tree, i, repl, &mut proj);
            let editable =
                |m: &ProjectedMessage| matches!(m.role, Role::User | Role::Assistant | Role::ToolResult | Role::Custom);
            if matches!(edit, Some(Replacement::Absent)) && proj.messages[start..].iter().any(editable) {
                proj.pi_error
                    .get_or_insert("context_edit without replacement (replacement.content throws)");
            }
        }
        let end = proj.messages.len();
        proj.entries.push(ProjectedEntry {
            entry: i,
            messages: start..end,
            edit: edit_kind,
        });
    }
    proj.context = context;
    proj
}

fn push_entry_messages(tree: &Tree, i: u32, repl: Option<&ContentChars>, proj: &mut Projection) {
    let e = &tree.entries[i as usize];
    match &e.body {
        Body::Message(m) => {
            if m.not_object && m.is_null {
                proj.pi_error.get_or_insert("message entry without a message object");
            }
            proj.messages.push(project_message(m, repl, SysRef::Entry(i), true));
        }
        Body::CustomMessage(cm) => {
            let content = repl.unwrap_or(&cm.content);
            let tokens = if content.nullish {
                None
            } else {
                quarter(content.as_content)
            };
            proj.messages.push(ProjectedMessage {
                role: Role::Custom,
                tokens,
                usage_tokens: None,
                system: None,
            });
        }
        Body::BranchSummary(bs) if bs.has_summary => {
            proj.messages.push(ProjectedMessage {
                role: Role::BranchSummary,
                tokens: quarter(bs.summary_chars),
                usage_tokens: None,
                system: None,
            });
        }
        Body::Compaction(c) => {
            if let Some(sm) = &c.system_message {
                proj.messages
                    .push(project_message(sm, None, SysRef::Compaction(i), false));
            }
            proj.messages.push(ProjectedMessage {
                role: Role::CompactionSummary,
                tokens: quarter(c.summary_chars),
                usage_tokens: None,
                system: None,
            });
        }
        _ => {}
    }
}

/// The message a projected system message comes from.
fn system_message(tree: &Tree, r: SysRef) -> Option<&Message> {
    match (r, &tree.entries[r.entry() as usize].body) {
        (SysRef::Entry(_), Body::Message(m)) => Some(m),
        (SysRef::Compaction(_), Body::Compaction(c)) => c.system_message.as_deref(),
        _ => None,
    }
}

/// `estimateTokens(getCurrentSystemMessage(messages))`, or 0 when there is none.
fn replayed_system_tokens(tree: &Tree, proj: &Projection) -> Option<f64> {
    let mut content_parts = 0u64;
    let mut content_len = 0u64;
    let mut sections: HashMap<&str, Option<f64>> = HashMap::new();
    let mut tools: HashMap<&Key, u64> = HashMap::new();
    // `timestamp ??= message.timestamp`: the first non-nullish one sticks.
    let mut timestamp = Presence::Absent;
    let mut any = false;
    for m in &proj.messages {
        let Some(r) = m.system else { continue };
        any = true;
        let msg = system_message(tree, r)?;
        let info = msg.system.as_deref()?;
        if info.tools_throw {
            return None;
        }
        if timestamp != Presence::Set {
            timestamp = info.timestamp;
        }
        // A message entry's null system content was normalised to ""; a compaction's
        // `systemMessage` was not (contentText then throws).
        let text = match r {
            SysRef::Entry(_) if msg.content.nullish => Some(0),
            _ => msg.content.text_len,
        }?;
        if text > 0 {
            content_parts += 1;
            content_len += text;
        }
        for (name, len) in &info.sections {
            match len {
                None => {
                    sections.remove(&**name);
                }
                Some(l) => {
                    sections.insert(name, *l);
                }
            }
        }
        for name in &info.tools_removed {
            tools.remove(name);
        }
        for (name, len) in &info.tools_added {
            tools.insert(name, *len);
        }
    }
    if !any || (timestamp == Presence::Absent && tools.is_empty()) {
        return Some(0.0);
    }
    let mut chars = (content_len + 2 * content_parts.saturating_sub(1)) as f64;
    chars += sections.values().copied().sum::<Option<f64>>()?;
    if !tools.is_empty() {
        chars += (2 + tools.values().sum::<u64>() + (tools.len() as u64 - 1)) as f64;
    }
    quarter(Some(chars))
}

/// `estimateProjectedContextTokens(projection, branchEntries)`.
pub fn estimate(tree: &Tree, proj: &Projection, branch: &Path) -> Estimate {
    let msgs = &proj.messages;
    let last_usage = msgs.iter().rposition(|m| m.usage_tokens.is_some());
    if let Some(idx) = last_usage {
        // estimateContextTokens with usage: the usage plus chars/4 of what follows.
        let usage_tokens = msgs[idx].usage_tokens.clone().unwrap_or_default();
        let trailing: Option<f64> = msgs[idx + 1..].iter().map(|m| m.tokens).sum();
        let usage_entry = proj.entries.iter().find(|pe| idx < pe.messages.end).map(|pe| pe.entry);
        let usage_id = usage_entry.map(|i| &tree.entries[i as usize].id).filter(|k| k.truthy());
        let usage_pos = usage_id.and_then(|id| branch.entries.iter().position(|&b| tree.entries[b as usize].id == *id));
        let invalidating = branch.entries.iter().rposition(|&b| {
            matches!(
                tree.entries[b as usize].ty,
                EntryType::ContextEdit | EntryType::Compaction
            )
        });
        let usage_after = match (usage_pos, invalidating) {
            (Some(u), Some(inv)) => u > inv,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if usage_after {
            return match trailing {
                Some(t) => Estimate {
                    tokens: usage_tokens.plus(&JsVal::Num(t)),
                    usage_tokens,
                    trailing_tokens: t,
                    last_usage_index: Some(idx),
                    unknown: false,
                },
                None => Estimate {
                    unknown: true,
                    last_usage_index: Some(idx),
                    usage_tokens,
                    ..Default::default()
                },
            };
        }
        // Pi computed the usage-based estimate before deciding to discard it; a throw
        // there still happens.
        if trailing.is_none() {
            return Estimate {
                unknown: true,
                ..Default::default()
            };
        }
    } else if msgs.iter().any(|m| m.tokens.is_none()) {
        return Estimate {
            unknown: true,
            ..Default::default()
        };
    }
    let mut tokens = replayed_system_tokens(tree, proj);
    for m in msgs {
        if m.role != Role::System {
            tokens = tokens.zip(m.tokens).map(|(a, b)| a + b);
        }
    }
    match tokens {
        Some(t) => Estimate {
            tokens: JsVal::Num(t),
            usage_tokens: JsVal::Num(0.0),
            trailing_tokens: t,
            last_usage_index: None,
            unknown: false,
        },
        None => Estimate {
            unknown: true,
            ..Default::default()
        },
    }
}

/// `getContextUsage`'s compaction gate: with a compaction on the branch, the estimate is
/// only trusted when a projected assistant answer with usage follows the latest one.
pub fn context_usage_known(tree: &Tree, proj: &Projection, branch: &Path) -> bool {
    let Some(comp_pos) = branch
        .entries
        .iter()
        .rposition(|&b| tree.entries[b as usize].ty == EntryType::Compaction)
    else {
        return true;
    };
    let comp_id = &tree.entries[branch.entries[comp_pos] as usize].id;
    let assistants: HashSet<&Key> = proj
        .entries
        .iter()
        .filter(|pe| {
            proj.messages[pe.messages.clone()]
                .iter()
                .any(|m| m.usage_tokens.is_some())
        })
        .map(|pe| &tree.entries[pe.entry as usize].id)
        .collect();
    let ci = branch
        .entries
        .iter()
        .position(|&b| tree.entries[b as usize].id == *comp_id);
    let from = ci.map_or(0, |c| c + 1);
    branch.entries[from..]
        .iter()
        .any(|&b| assistants.contains(&tree.entries[b as usize].id))
}

/// What one compaction did, computed as if it were the leaf.
#[derive(Debug, Clone, Default)]
pub struct CompactionEffect {
    pub entry: u32,
    pub on_active_path: bool,
    /// `getBranch(id).length`, `None` when the id cannot serve as a leaf.
    pub path_length: Option<u64>,
    pub context_entries_after: Option<u64>,
    pub projected_messages_after: Option<u64>,
    pub estimated_tokens_after: Option<Estimate>,
    /// Entries before the compaction on its path that the summary replaced.
    pub entries_summarized: Option<u64>,
    /// Entries before the compaction on its path that were kept.
    pub entries_kept: Option<u64>,
    /// Why Pi's code would throw projecting with this compaction as the leaf.
    pub pi_error: Option<&'static str>,
}

/// A compaction that keeps nothing: its `firstKeptEntryId` is its own (truthy) id, what Pi
/// writes when nothing is kept (the oracle's `retainsNone`).
pub fn retains_none(e: &crate::parse::entry::Entry) -> bool {
    matches!(&e.body, Body::Compaction(c) if e.id.truthy() && c.first_kept == e.id)
}

/// The effect of every compaction entry, in file order. `on_path[i]` says whether entry `i` is
/// on the active path.
pub fn compaction_effects(tree: &Tree, on_path: &[bool]) -> Vec<CompactionEffect> {
    tree.entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.ty == EntryType::Compaction)
        .map(|(i, e)| {
            let i = i as u32;
            let mut eff = CompactionEffect {
                entry: i,
                on_active_path: on_path[i as usize],
                ..Default::default()
            };
            // `getBranch(id)`, `buildSessionPath(.., id, ..)` and the walk that looks for a loop
            // above it all start at the entry the id names: one walk serves the three.
            let Some(leaf) = tree.by_id.get(&e.id).copied().filter(|_| e.id.truthy()) else {
                return eff;
            };
            let path = tree.branch_from(leaf);
            if path.cyclic {
                return eff;
            }
            let proj = project(tree, &path);
            eff.path_length = Some(path.entries.len() as u64);
            eff.context_entries_after = Some(proj.context.len() as u64);
            eff.projected_messages_after = Some(proj.messages.len() as u64);
            eff.estimated_tokens_after = Some(estimate(tree, &proj, &path));
            eff.pi_error = proj.pi_error;
            // Entries before the compaction on its own path, split into kept and summarized.
            if let Some(pos) = path.entries.iter().position(|&p| p == i) {
                let before = pos as u64;
                let earlier = tree.marked(&path.entries[..pos]);
                let kept = proj.context.iter().skip(1).filter(|&&c| earlier[c as usize]).count() as u64;
                eff.entries_kept = Some(kept);
                eff.entries_summarized = Some(before - kept);
            }
            eff
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::tree_of as tree;

    const U1: &str = r#"{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"12345678"}}"#;
    const A1: &str = r#"{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"abcd"}],"usage":{"input":90,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":100,"cost":{"total":0.1}},"stopReason":"stop"}}"#;
    const U2: &str = r#"{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"😀😀😀"}}"#;

    #[test]
    fn estimate_is_last_usage_plus_trailing_quarters() {
        let t = tree(&[U1, A1, U2]);
        let path = t.active_session_path();
        let proj = project(&t, &path);
        let e = estimate(&t, &proj, &t.active_branch());
        // 100 from usage + ceil(6 UTF-16 units / 4) = 2 for the emoji message.
        assert_eq!(
            (e.tokens, e.usage_tokens, e.trailing_tokens, e.last_usage_index),
            (JsVal::Num(102.0), JsVal::Num(100.0), 2.0, Some(1))
        );
    }

    #[test]
    fn an_edit_after_the_usage_falls_back_to_chars_over_four() {
        let edit = r#"{"type":"context_edit","id":"e1","parentId":"u2","targetId":"u1","replacement":{"content":"x"}}"#;
        let t = tree(&[U1, A1, U2, edit]);
        let proj = project(&t, &t.active_session_path());
        let e = estimate(&t, &proj, &t.active_branch());
        // user "x" → 1, assistant "abcd" → 1, user emoji → 2.
        assert_eq!((e.tokens, e.last_usage_index), (JsVal::Num(4.0), None));
        assert_eq!(
            proj.entries
                .iter()
                .filter(|p| p.edit == Some(EditKind::Replaced))
                .count(),
            1
        );
    }

    #[test]
    fn latest_compaction_keeps_from_first_kept_and_drops_system_messages() {
        let sys = r#"{"type":"message","id":"s1","parentId":"a1","message":{"role":"system","content":"rules","timestamp":1}}"#;
        let comp = r#"{"type":"compaction","id":"c1","parentId":"u2","summary":"sum","firstKeptEntryId":"a1","tokensBefore":5}"#;
        let u2 = U2.replace(r#""parentId":"a1""#, r#""parentId":"s1""#);
        let t = tree(&[U1, A1, sys, &u2, comp]);
        let ctx = context_entries(&t, &t.active_session_path());
        let ids: Vec<_> = ctx
            .iter()
            .map(|&i| t.entries[i as usize].id.js_string().into_owned())
            .collect();
        assert_eq!(ids, ["c1", "a1", "u2"]);
        assert!(!context_usage_known(
            &t,
            &project(&t, &t.active_session_path()),
            &t.active_branch()
        ));
    }

    #[test]
    fn retain_none_compaction_keeps_nothing_before_it() {
        let comp = r#"{"type":"compaction","id":"c1","parentId":"u2","summary":"sum","firstKeptEntryId":"c1","tokensBefore":5}"#;
        let t = tree(&[U1, A1, U2, comp]);
        let effects = compaction_effects(&t, &t.marked(&t.active_branch().entries));
        assert_eq!(effects.len(), 1);
        assert_eq!(effects[0].context_entries_after, Some(1));
        assert_eq!(
            (effects[0].entries_summarized, effects[0].entries_kept),
            (Some(3), Some(0))
        );
        // compactionSummary "sum" → ceil(3/4) = 1.
        assert_eq!(
            effects[0].estimated_tokens_after.clone().unwrap().tokens,
            JsVal::Num(1.0)
        );
    }
}
