//! One file through every stage: parse → tree → project → usage, into a [`FileAnalysis`],
//! and what is reported of it ([`facts`]).
//!
//! This is the unit of parallel work: it takes bytes and a worker's scratch buffers and
//! returns plain data, so the corpus stage can run it on any thread in any order.

pub mod facts;

pub use facts::{FileRecord, FileStatus, SessionFacts};

use crate::js::{self, Jv};
use crate::parse::entry::{Body, EntryType, Role};
use crate::parse::{LineStats, ParsedFile, RejectReason, Scratch, parse_file};
use crate::project::{self, CompactionEffect, EditKind, Estimate};
use crate::tree::Tree;
use crate::usage::{self, Accounting};

/// The result for one file: a session, or a rejection.
#[derive(Debug, Clone)]
pub enum FileAnalysis {
    Session(Box<SessionAnalysis>),
    Rejected {
        stats: LineStats,
        reason: RejectReason,
        /// The file holds entries of Pi's types (see [`ParsedFile::pi_entries`]).
        pi_entries: bool,
        /// The records of a subagent transcript (see [`ParsedFile::transcript`]).
        transcript: Option<Vec<crate::parse::entry::TranscriptRecord>>,
    },
}

/// The latest compaction on the active path (the oracle's `compactions`).
#[derive(Debug, Clone, Default)]
pub struct CompactionSummary {
    pub total: u64,
    pub on_path: u64,
    /// Entry index of the latest compaction on the active path.
    pub latest: Option<u32>,
    pub latest_first_kept_on_path: bool,
}

/// Everything pisa computes for one accepted session file.
#[derive(Debug, Clone)]
pub struct SessionAnalysis {
    pub stats: LineStats,
    pub tree: Tree,
    pub accounting: Accounting,
    pub name: Option<String>,
    /// Index of `getLeafEntry()` in the entries.
    pub leaf: Option<u32>,
    pub active_path_length: u64,
    pub tree_roots: u64,
    /// A parent loop was cut on the active path.
    pub cyclic_path: bool,
    /// Type tallies of the context entries.
    pub context_entry_types: Vec<(String, u64)>,
    pub context_entry_count: u64,
    /// Role tallies of the projected messages.
    pub projected_roles: Vec<(String, u64)>,
    /// Per role, in order of first appearance: messages and estimated tokens (chars/4).
    pub role_tokens: Vec<(String, u64, f64)>,
    pub projected_message_count: u64,
    pub model: Option<(Jv, Jv)>,
    pub thinking_level: Jv,
    pub edits: facts::ContextEdits,
    pub compactions: CompactionSummary,
    pub estimate: Estimate,
    /// `getContextUsage()` would report these tokens; `None` = unknown after a compaction.
    pub context_usage_tokens: Option<crate::js::JsVal>,
    pub effects: Vec<CompactionEffect>,
    /// Why Pi's own code would throw on this file, if it would.
    pub pi_error: Option<&'static str>,
    /// When the session file was created: the header timestamp (Unix ms).
    pub started_ms: Option<f64>,
    /// Pi's "modified" time in its session list: the latest user or assistant message
    /// (its Unix-ms timestamp, else the entry's), else the header timestamp.
    pub last_activity_ms: Option<f64>,
}

impl SessionAnalysis {
    /// The damage counters say lines were skipped.
    pub fn is_damaged(&self) -> bool {
        self.stats.malformed_lines > 0 || self.cyclic_path
    }

    /// Each compaction's effect with its entry and the compaction it holds, in file order.
    pub fn compactions(
        &self,
    ) -> impl Iterator<
        Item = (
            &CompactionEffect,
            &crate::parse::entry::Entry,
            &crate::parse::entry::Compaction,
        ),
    > {
        self.effects.iter().map(|eff| {
            let e = &self.tree.entries[eff.entry as usize];
            let Body::Compaction(c) = &e.body else {
                unreachable!("effects are compactions")
            };
            (eff, e, &**c)
        })
    }

    /// The models that answered, most expensive first (`provider/model`, virtual models
    /// resolved).
    pub fn models(&self) -> Vec<String> {
        // Borrowed names: one string is made per model, not one per call.
        let mut out: Vec<(&str, f64)> = Vec::new();
        for r in &self.accounting.records {
            if r.source != crate::usage::Source::Assistant {
                continue;
            }
            let name = r.response_model.as_deref().or(r.model.as_deref()).unwrap_or("?");
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => *c += r.cost_total,
                None => out.push((name, r.cost_total)),
            }
        }
        out.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal));
        out.into_iter().map(|(n, _)| n.to_string()).collect()
    }

    /// The context size Pi shows now, `None` when unknown.
    pub fn context_tokens(&self) -> Option<f64> {
        match self.estimate.unknown {
            true => None,
            false => self.context_usage_tokens.as_ref().map(crate::js::JsVal::to_number),
        }
    }
}

/// The project of a session found at `rel`: its header `cwd`, else the decoded folder name.
pub fn project_of(t: &Tree, rel: &str) -> String {
    match t.cwd().filter(|c| !c.is_empty()) {
        Some(cwd) => cwd.to_string(),
        None => project_of_path(rel),
    }
}

/// The project a file's folder names (`--Users-me-proj--` → `/Users-me-proj`), the folder name
/// as it is when it is not one Pi encoded.
/// Unix ms of an ISO timestamp (entry timestamps), else of a message's ms timestamp.
pub fn time_of(iso: Option<&str>, ms: Option<f64>) -> Option<i64> {
    iso.and_then(parse_iso_ms)
        .or(ms)
        .filter(|t| t.is_finite() && t.abs() < 8.64e15)
        .map(|t| t as i64)
}

pub fn project_of_path(rel: &str) -> String {
    let folder = rel
        .rsplit_once('/')
        .map_or("", |(dir, _)| dir.rsplit('/').next().unwrap_or(dir));
    folder
        .strip_prefix("--")
        .and_then(|f| f.strip_suffix("--"))
        .map_or_else(|| folder.to_string(), |f| format!("/{f}"))
}

/// Whether a file Pi refuses is not a session at all: no entry of a type Pi writes in it, and
/// not a name Pi gives session files. Extensions' transcripts, other tools' logs and stray
/// empty files are such files; an empty file with a session's name, or entries behind a lost
/// header, are sessions that were damaged.
pub fn not_a_session(rel: &str, pi_entries: bool) -> bool {
    !pi_entries && !crate::paths::pi_session_name(rel)
}

/// Tally names into a list sorted the way JavaScript sorts object keys here (UTF-16 order).
pub fn tally<'a>(names: impl Iterator<Item = &'a str>) -> Vec<(String, u64)> {
    // Entry types and roles are a handful of names: looked up in a short list, in order, they
    // cost a compare or two each where hashing each name was 2 % of a scan. Names past the
    // first `FEW` distinct ones (a file of odd types) are counted in a map.
    const FEW: usize = 16;
    let mut few: Vec<(&str, u64)> = Vec::with_capacity(FEW);
    let mut map: hashbrown::HashMap<&str, u64> = hashbrown::HashMap::new();
    for n in names {
        if let Some((_, count)) = few.iter_mut().find(|(k, _)| std::ptr::eq(*k, n) || *k == n) {
            *count += 1;
        } else if few.len() < FEW {
            few.push((n, 1));
        } else {
            *map.entry(n).or_default() += 1;
        }
    }
    let mut v: Vec<(String, u64)> = few.into_iter().chain(map).map(|(k, n)| (k.to_string(), n)).collect();
    v.sort_by(|a, b| js::cmp_utf16(&a.0, &b.0));
    v
}

/// Run every stage on the bytes of one file.
pub fn analyze_bytes(bytes: &[u8], scratch: &mut Scratch) -> FileAnalysis {
    analyze_parsed(parse_file(bytes, scratch))
}

/// Run the stages after parsing on a parsed file.
pub fn analyze_parsed(parsed: ParsedFile) -> FileAnalysis {
    if let Some(reason) = parsed.reject.clone() {
        return FileAnalysis::Rejected {
            stats: parsed.stats,
            reason,
            pi_entries: parsed.pi_entries,
            transcript: parsed.transcript,
        };
    }
    let stats = parsed.stats.clone();
    let tree = Tree::build(parsed).expect("accepted files have a header");
    FileAnalysis::Session(Box::new(analyze_tree(stats, tree)))
}

fn analyze_tree(stats: LineStats, tree: Tree) -> SessionAnalysis {
    let branch = tree.active_branch();
    // From a leaf id that names an entry, `buildSessionPath` walks up as `getBranch` does.
    let path = match tree.leaf() {
        Some(_) => branch.clone(),
        None => tree.active_session_path(),
    };
    let on_path = tree.marked(&branch.entries);
    let accounting = usage::account(&tree, &on_path);
    let (name, name_err) = match tree.name() {
        Ok(n) => (n, None),
        Err(e) => (None, Some(e)),
    };
    let proj = project::project(&tree, &path);
    let estimate = project::estimate(&tree, &proj, &branch);
    let context_usage_tokens = project::context_usage_known(&tree, &proj, &branch).then(|| estimate.tokens.clone());
    let effects = project::compaction_effects(&tree, &on_path);
    let started_ms = tree
        .header
        .timestamp
        .as_ref()
        .and_then(|t| t.as_str())
        .and_then(parse_iso_ms);
    let pi_error = tree
        .pi_error
        .or(accounting.pi_error)
        .or(name_err)
        .or(proj.pi_error)
        .or(estimate
            .unknown
            .then_some("the context estimate reads a missing field or JSON nested too deeply (throws or NaN)"))
        .or(effects.iter().find_map(|e| e.pi_error))
        .or(effects
            .iter()
            .any(|e| e.estimated_tokens_after.as_ref().is_some_and(|x| x.unknown))
            .then_some("a compaction's context estimate reads a missing field"));
    SessionAnalysis {
        leaf: tree.leaf(),
        active_path_length: branch.entries.len() as u64,
        tree_roots: tree.root_count(),
        cyclic_path: branch.cyclic || path.cyclic,
        context_entry_count: proj.context.len() as u64,
        context_entry_types: tally(proj.context.iter().map(|&i| tree.entries[i as usize].ty.name())),
        projected_message_count: proj.messages.len() as u64,
        projected_roles: tally(proj.messages.iter().map(|m| m.role.name())),
        role_tokens: role_tokens(&proj),
        model: proj.model.clone(),
        thinking_level: proj.thinking_level.clone(),
        edits: edit_counts(&tree, &on_path, &proj),
        compactions: compaction_summary(&tree, &branch),
        estimate,
        context_usage_tokens,
        effects,
        pi_error,
        started_ms,
        last_activity_ms: last_activity(&tree).or(started_ms),
        name,
        accounting,
        stats,
        tree,
    }
}

/// The oracle's `contextEdits`: in the file, on the active path, among the context entries,
/// and applied to the projection.
fn edit_counts(tree: &Tree, on_path: &[bool], proj: &project::Projection) -> facts::ContextEdits {
    let mut edits = facts::ContextEdits::default();
    for (i, e) in tree.entries.iter().enumerate() {
        if e.ty == EntryType::ContextEdit {
            edits.total += 1;
            edits.on_path += u64::from(on_path[i]);
        }
    }
    edits.in_context = proj
        .context
        .iter()
        .filter(|&&i| tree.entries[i as usize].ty == EntryType::ContextEdit)
        .count() as u64;
    for pe in &proj.entries {
        match pe.edit {
            Some(EditKind::Omitted) => edits.omitted += 1,
            Some(EditKind::Replaced) => edits.replaced += 1,
            None => {}
        }
    }
    edits.applied = edits.omitted + edits.replaced;
    edits
}

/// The compactions of the file and of the active path, and the latest on it.
fn compaction_summary(tree: &Tree, branch: &crate::tree::Path) -> CompactionSummary {
    let is_compaction = |&&b: &&u32| tree.entries[b as usize].ty == EntryType::Compaction;
    let latest = branch.entries.iter().rposition(|b| is_compaction(&b));
    CompactionSummary {
        total: tree.entries.iter().filter(|e| e.ty == EntryType::Compaction).count() as u64,
        on_path: branch.entries.iter().filter(is_compaction).count() as u64,
        latest: latest.map(|p| branch.entries[p]),
        latest_first_kept_on_path: latest.is_some_and(|p| {
            let Body::Compaction(c) = &tree.entries[branch.entries[p] as usize].body else {
                return false;
            };
            branch.entries[..p]
                .iter()
                .any(|&b| tree.entries[b as usize].id == c.first_kept)
        }),
    }
}

/// Per role of the projected messages, in order of first appearance: messages and estimated
/// tokens (chars/4).
fn role_tokens(proj: &project::Projection) -> Vec<(String, u64, f64)> {
    let mut role_tokens: Vec<(String, u64, f64)> = Vec::new();
    for m in &proj.messages {
        let tokens = m.tokens.unwrap_or(f64::NAN);
        match role_tokens.iter_mut().find(|r| r.0 == m.role.name()) {
            Some(r) => {
                r.1 += 1;
                r.2 += tokens;
            }
            None => role_tokens.push((m.role.name().to_string(), 1, tokens)),
        }
    }
    role_tokens
}

/// `buildSessionInfo`'s activity time: the latest user or assistant message that has a
/// string role and a `content` key, by `message.timestamp` when it is a number, else by the
/// entry's timestamp. A non-positive maximum counts as none.
fn last_activity(tree: &Tree) -> Option<f64> {
    let mut last: Option<f64> = None;
    for e in &tree.entries {
        let Body::Message(m) = &e.body else { continue };
        if !m.has_content_key || !matches!(m.role, Role::User | Role::Assistant) {
            continue;
        }
        let t = m.timestamp_ms.or_else(|| e.timestamp.as_deref().and_then(parse_iso_ms));
        if let Some(t) = t {
            last = Some(last.unwrap_or(0.0).max(t));
        }
    }
    last.filter(|&t| t > 0.0)
}

/// Milliseconds since the epoch of an ISO 8601 timestamp, as jiff parses it.
pub fn parse_iso_ms(s: &str) -> Option<f64> {
    pi_iso_ms(s.as_bytes())
        .or_else(|| s.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond()))
        .map(|ms| ms as f64)
}

/// The shape Pi writes every timestamp in (JavaScript's `toISOString()`,
/// `2026-05-10T19:29:53.855Z`): its fields are read at their places, and jiff makes and checks
/// the instant of them. jiff's parser took 160 ns a timestamp (4 % of an export after the
/// scan); any other shape, and a field jiff's civil time refuses (a 60th second, which its
/// parser accepts), is left to the parser, so a value is the parser's in every case.
fn pi_iso_ms(s: &[u8]) -> Option<i64> {
    let s: &[u8; 24] = s.try_into().ok()?;
    let shape = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ];
    if shape.iter().any(|&(at, c)| s[at] != c) {
        return None;
    }
    let number = |from: usize, to: usize| {
        s[from..to]
            .iter()
            .try_fold(0i32, |n, &d| d.is_ascii_digit().then(|| n * 10 + i32::from(d - b'0')))
    };
    let field = |from, to| number(from, to).and_then(|n| i8::try_from(n).ok());
    let year = i16::try_from(number(0, 4)?).ok()?;
    let at = jiff::civil::DateTime::new(
        year,
        field(5, 7)?,
        field(8, 10)?,
        field(11, 13)?,
        field(14, 16)?,
        field(17, 19)?,
        number(20, 23)? * 1_000_000,
    )
    .ok()?;
    jiff::tz::Offset::UTC.to_timestamp(at).ok().map(|t| t.as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pi's timestamps, and strings one field or one character away from them, read as
    /// jiff's parser reads them.
    fn timestamp() -> impl Strategy<Value = String> {
        let digits = |n: usize| prop::collection::vec(prop::sample::select(b"0123456789".to_vec()), n);
        (
            prop::sample::select(vec!["1970", "2000", "2024", "2026", "0000", "9999", "1600", "2100"]),
            prop::sample::select(vec!["01", "02", "04", "12", "00", "13", "99"]),
            prop::sample::select(vec!["01", "28", "29", "30", "31", "00", "32"]),
            prop::sample::select(vec!["00", "09", "23", "24"]),
            prop::sample::select(vec!["00", "59", "60"]),
            prop::sample::select(vec!["00", "30", "59", "60", "61"]),
            digits(3),
            (any::<u8>(), 0usize..26, any::<bool>()),
        )
            .prop_map(|(y, mo, d, h, mi, s, ms, (c, at, spoil))| {
                let mut t = format!("{y}-{mo}-{d}T{h}:{mi}:{s}.{}Z", String::from_utf8(ms).expect("digits"));
                if spoil && at < t.len() {
                    // One byte changed (ASCII, so the string stays a string), or one added.
                    let mut bytes = t.into_bytes();
                    if at == 25 {
                        bytes.push(c & 0x7f);
                    } else {
                        bytes[at] = c & 0x7f;
                    }
                    t = String::from_utf8(bytes).expect("ASCII");
                }
                t
            })
    }

    proptest! {
        /// Every timestamp has the parser's value: the instant, or none.
        #[test]
        fn timestamps_are_read_as_jiff_reads_them(t in timestamp()) {
            let jiff = t.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond() as f64);
            prop_assert_eq!(parse_iso_ms(&t), jiff, "{}", t);
        }
    }

    /// Pi's own timestamps take the short way (the test above would pass without it).
    #[test]
    fn pi_timestamps_are_read_at_their_places() {
        assert_eq!(pi_iso_ms(b"2026-05-10T19:29:53.855Z"), Some(1_778_441_393_855));
        assert_eq!(pi_iso_ms(b"1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(pi_iso_ms(b"2024-02-29T23:59:59.999Z"), Some(1_709_251_199_999));
        // Left to the parser: a leap second, a day February does not have, another shape.
        assert_eq!(pi_iso_ms(b"2016-12-31T23:59:60.000Z"), None);
        assert_eq!(pi_iso_ms(b"2025-02-29T00:00:00.000Z"), None);
        assert_eq!(pi_iso_ms(b"2026-05-10T19:29:53.855+00:00"), None);
        assert_eq!(parse_iso_ms("2016-12-31T23:59:60.000Z"), Some(1_483_228_799_000.0));
    }

    /// A tally counts every name once, in UTF-16 order, whether the name is among the first
    /// sixteen distinct ones (the short list) or later (the map): sequences of 1 to 40 distinct
    /// names, compared with a count in a `BTreeMap`.
    #[test]
    fn tally_counts_each_name_in_utf16_order() {
        let mut next = crate::parse::xorshift(0x7A11_7A11_7A11_7A11);
        let names: Vec<String> = (0..40).map(|i| format!("type{i}\u{e9}{}", "x".repeat(i % 3))).collect();
        for distinct in 1..=40 {
            let seq: Vec<&str> = (0..300).map(|_| names[(next() % distinct) as usize].as_str()).collect();
            let mut want = std::collections::BTreeMap::<&str, u64>::new();
            for n in &seq {
                *want.entry(n).or_default() += 1;
            }
            let mut want: Vec<(String, u64)> = want.into_iter().map(|(k, n)| (k.to_string(), n)).collect();
            want.sort_by(|a, b| js::cmp_utf16(&a.0, &b.0));
            assert_eq!(tally(seq.iter().copied()), want, "{distinct} distinct names");
        }
    }
}
