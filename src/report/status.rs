//! `pisa status`: one line for a shell prompt or Pi's footer — the current session (the most
//! recently written file, or the one asked for), its cost and context now, today's cost, and
//! the active 5-hour window's cost and burn rate (see [`super::blocks`]).
//!
//! It has to be quick on a large corpus, so it reads the calls of recent files only:
//! 1. the whole corpus without rows, through the cache (unchanged files are not read);
//! 2. the billed calls of the files written since a threshold `T` (no earlier than the start
//!    of today, nor later than 10 hours ago), each counted or not as the whole corpus decided
//!    in step 1 (a fork's copies stay left out);
//! 3. the active window is exact once a gap of more than 5 hours between two calls after `T`
//!    is found (the later call opens a window whatever came before), or when no call is less
//!    than 5 hours old; otherwise `T` moves back (2 days, a week, a month, everything).
//!
//! A file counts as written since `T` when its modification time is, and its last message is
//! less than a day older than `T`: Pi writes each entry as it happens, and the second test
//! keeps copied folders (where every file looks new) fast.

use std::path::{Path, PathBuf};

use jiff::tz::TimeZone;
use serde_json::{Value, json};

use super::blocks::{self, Block};
use super::calls::{Call, counted_of};
use super::{tokens, usd};
use crate::corpus::cache::Cache;
use crate::corpus::{self, Corpus, Quiet, SessionSummary};
use crate::js::{JsVal, num_json};

const HOUR_MS: i64 = 3600 * 1000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// What to compute the status of.
#[derive(Debug, Clone)]
pub struct Options {
    /// The session folders (and files).
    pub roots: Vec<PathBuf>,
    /// The cache folder (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// The current session, instead of the most recently written file.
    pub session: Option<PathBuf>,
    /// Unix ms of "now".
    pub now_ms: i64,
    /// The zone of "today".
    pub tz: TimeZone,
}

/// The status: what `pisa status` prints and `pisa watch` shows.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub now_ms: i64,
    pub session: Option<SessionNow>,
    /// Today in the zone, and what the calls made today cost.
    pub today: String,
    pub today_cost: f64,
    pub today_tokens: f64,
    pub today_calls: u64,
    /// The active window.
    pub block: Option<Block>,
    pub sessions: usize,
    /// The cache was in use by another run: it was read, not written.
    pub cache_read_only: bool,
    /// Problems met with the cache (none changes a figure).
    pub warnings: Vec<String>,
}

/// The current session.
#[derive(Debug, Clone, Default)]
pub struct SessionNow {
    pub path: PathBuf,
    pub rel: String,
    pub session_id: Option<String>,
    pub name: Option<String>,
    pub project: String,
    /// `provider/model` now in use.
    pub model: Option<String>,
    pub last_activity: Option<String>,
    /// Pi's totals (its copied history included, as Pi shows them).
    pub cost: f64,
    pub tokens: f64,
    /// What the calls it owns cost.
    pub own_cost: f64,
    /// Pi's estimate of the context now.
    pub context_tokens: Option<f64>,
    pub compactions: Vec<Compaction>,
}

/// One compaction of the current session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compaction {
    pub timestamp: Option<String>,
    pub tokens_before: Option<f64>,
    pub tokens_after: Option<f64>,
}

/// The status of the sessions under `o.roots`.
pub fn compute(o: &Options) -> Result<Status, crate::Error> {
    let roots = with_session(&o.roots, o.session.as_deref());
    let cache = o.cache_dir.as_deref().map(Cache::open);
    let scanned = corpus::scan(&roots, &Quiet, cache.as_ref());
    let mut status = Status {
        now_ms: o.now_ms,
        ..Status::default()
    };
    if let Some(cache) = cache {
        status.cache_read_only = cache.read_only();
        status.warnings = cache.warnings();
        if let Err(e) = cache.save(&roots) {
            status.warnings.push(e);
        }
    }
    let corpus = scanned?;
    status.sessions = corpus.sessions.len();
    let day = today(o.now_ms, &o.tz);
    status.today = day.0;
    let (calls, block) = recent(&corpus, o, day.1)?;
    for c in calls
        .iter()
        .filter(|c| c.ms.is_some_and(|ms| ms >= day.1 && ms < day.1 + day.2))
    {
        status.today_cost += c.cost;
        status.today_tokens += c.tokens();
        status.today_calls += 1;
    }
    status.block = block;
    status.session = current(&corpus, o.session.as_deref()).map(|s| session_now(&corpus, s));
    Ok(status)
}

/// The roots, and the asked-for session file when no root holds it.
fn with_session(roots: &[PathBuf], session: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = roots.to_vec();
    if let Some(file) = session {
        let abs = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let file_abs = abs(file);
        if !roots.iter().any(|r| file_abs.starts_with(abs(r))) {
            roots.push(file.to_path_buf());
        }
    }
    roots
}

/// Today's date in `tz`, its first instant and its length (Unix ms).
fn today(now_ms: i64, tz: &TimeZone) -> (String, i64, i64) {
    let now = jiff::Timestamp::from_millisecond(now_ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let date = now.to_zoned(tz.clone()).date();
    let start = |d: jiff::civil::Date| {
        d.to_zoned(tz.clone())
            .map_or(now_ms, |z| z.timestamp().as_millisecond())
    };
    let next = date.tomorrow().map_or(now_ms + DAY_MS, start);
    (date.to_string(), start(date), next - start(date))
}

/// The counted calls of the files written since a threshold no later than `day_start`, and
/// the active window, moving the threshold back until the window is certain.
fn recent(corpus: &Corpus, o: &Options, day_start: i64) -> Result<(Vec<Call>, Option<Block>), crate::Error> {
    let first = day_start.min(o.now_ms - 10 * HOUR_MS);
    let thresholds = [
        Some(first),
        Some(first - 2 * DAY_MS),
        Some(first - 7 * DAY_MS),
        Some(first - 30 * DAY_MS),
        None,
    ];
    for since in thresholds {
        let calls = calls_since(corpus, since)?;
        let mut times: Vec<i64> = calls
            .iter()
            .filter_map(|c| c.ms)
            .filter(|&ms| since.is_none_or(|t| ms >= t))
            .collect();
        times.sort_unstable();
        let Some(from) = certain_from(&times, o.now_ms, since.is_none()) else {
            continue;
        };
        let block = from.and_then(|from| {
            let after: Vec<Call> = calls
                .iter()
                .filter(|c| c.ms.is_some_and(|ms| ms >= from))
                .cloned()
                .collect();
            blocks::windows(&after, o.now_ms).into_iter().find(|b| b.active)
        });
        return Ok((calls, block));
    }
    unreachable!("the last threshold reads every file")
}

/// Where the windows are known to start afresh, given the sorted times of every call since a
/// threshold: `Some(None)` when no window can be active, `Some(Some(t))` when the windows from
/// `t` on are exact, `None` when an earlier threshold is needed.
fn certain_from(times: &[i64], now_ms: i64, everything: bool) -> Option<Option<i64>> {
    if !times.iter().any(|&t| now_ms - t < blocks::WINDOW_MS) {
        return Some(None);
    }
    if everything {
        return Some(times.first().copied());
    }
    // A gap before now: calls after now (a replay with `--now`) cannot tell where now's window starts.
    let past = &times[..times.partition_point(|&t| t <= now_ms)];
    let gap = past.windows(2).rposition(|w| w[1] - w[0] > blocks::WINDOW_MS)?;
    Some(Some(past[gap + 1]))
}

/// The counted calls of the sessions and transcripts written since `since` (all with `None`).
fn calls_since(corpus: &Corpus, since: Option<i64>) -> Result<Vec<Call>, crate::Error> {
    let recent = |path: &Path, last: Option<&str>| -> bool {
        let Some(t) = since else { return true };
        let mtime = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.duration_since(std::time::UNIX_EPOCH).ok());
        let Some(mtime) = mtime else { return false };
        let last = last.and_then(crate::analyze::parse_iso_ms).map(|ms| ms as i64);
        mtime.as_millis() as i64 >= t && last.is_none_or(|l| l >= t - DAY_MS)
    };
    let sessions = corpus
        .sessions
        .iter()
        .filter(|s| recent(&s.path, s.row.last_activity.as_deref()))
        .map(|s| &s.calls);
    let transcripts = corpus
        .transcripts()
        .filter(|r| recent(&r.path, None))
        .filter_map(|r| Some(&r.transcript.as_ref()?.calls));
    let mut calls = Vec::new();
    for c in sessions.chain(transcripts) {
        calls.extend(counted_of(corpus, c).map_err(|cause| crate::Error::Spill { cause })?);
    }
    Ok(calls)
}

/// The current session: the asked-for file, else the most recently written one.
fn current<'a>(corpus: &'a Corpus, session: Option<&Path>) -> Option<&'a SessionSummary> {
    if let Some(file) = session {
        let want = std::fs::canonicalize(file).ok()?;
        // The same name first: resolving every session's path costs a few syscalls each.
        let named = |s: &&SessionSummary| s.path == file || s.path == want;
        return corpus.sessions.iter().find(named).or_else(|| {
            corpus
                .sessions
                .iter()
                .find(|s| std::fs::canonicalize(&s.path).is_ok_and(|p| p == want))
        });
    }
    let written = |s: &SessionSummary| std::fs::metadata(&s.path).and_then(|m| m.modified()).ok();
    corpus
        .sessions
        .iter()
        .filter_map(|s| Some((written(s)?, s)))
        .max_by_key(|(t, _)| *t)
        .map(|(_, s)| s)
}

fn session_now(corpus: &Corpus, s: &SessionSummary) -> SessionNow {
    let facts = corpus.facts(s).ok();
    let number = |v: &JsVal| match v {
        JsVal::Num(f) if f.is_finite() => Some(*f),
        _ => None,
    };
    let compactions = facts.iter().flat_map(|f| &f.compaction_effects).map(|e| Compaction {
        timestamp: e.timestamp.clone(),
        tokens_before: e.tokens_before.0.as_f64(),
        tokens_after: e.estimated_tokens_after.as_ref().and_then(number),
    });
    let model = facts.as_ref().and_then(|f| f.model.as_ref()).map(|m| {
        let text = |j: &serde_json::Value| j.as_str().map_or_else(|| "?".to_string(), str::to_string);
        format!("{}/{}", text(&m.provider.0), text(&m.model_id.0))
    });
    SessionNow {
        path: s.path.clone(),
        rel: s.rel.clone(),
        session_id: s.session_id.clone(),
        name: s.row.name.clone(),
        project: s.row.project.clone(),
        model,
        last_activity: s.row.last_activity.clone(),
        cost: s.row.totals.cost,
        tokens: s.row.totals.tokens(),
        own_cost: s.row.own.cost,
        context_tokens: s.row.context_tokens,
        compactions: compactions.collect(),
    }
}

/// The placeholders of `--format`, each with what it stands for.
pub const PLACEHOLDERS: [(&str, &str); 12] = [
    ("session", "the current session's name, else the start of its id"),
    ("model", "the model the current session uses now"),
    ("session_cost", "what the current session cost (Pi's figure)"),
    (
        "context",
        "the current session's context now, in tokens (Pi's estimate)",
    ),
    ("today_cost", "what today's calls cost"),
    ("today_tokens", "today's tokens"),
    ("block_cost", "what the active 5-hour window cost so far"),
    ("burn_rate", "the active window's cost per hour"),
    ("projected_cost", "the active window's cost at its end at that rate"),
    ("block_left", "time left in the active window"),
    ("block_end", "when the active window ends (HH:MM in the zone)"),
    ("compactions", "compactions in the current session"),
];

/// The line printed when no `--format` is given.
pub const DEFAULT_FORMAT: &str = "{session} · {session_cost} · ctx {context} · today {today_cost} · block {block_cost} ({burn_rate}/h, {block_left} left)";

/// Why a `--format` template is refused.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("unknown placeholder {{{0}}} in --format (known: {1})")]
    Unknown(String, String),
    #[error("unclosed {{ in --format")]
    Unclosed,
}

/// Check a template: every `{name}` is a known placeholder (`{{` and `}}` are braces).
pub fn check_format(template: &str) -> Result<(), FormatError> {
    render_with(template, |_| Some(String::new())).map(|_| ())
}

/// The status as one line, per `template` (see [`PLACEHOLDERS`]); `-` where a figure is
/// unknown (no session, no active window).
pub fn line(s: &Status, template: &str, tz: &TimeZone) -> Result<String, FormatError> {
    render_with(template, |name| value(s, name, tz))
}

fn render_with(template: &str, mut value: impl FnMut(&str) -> Option<String>) -> Result<String, FormatError> {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(at) = rest.find(['{', '}']) {
        out.push_str(&rest[..at]);
        let (brace, after) = rest[at..].split_at(1);
        if after.starts_with(brace) {
            out.push_str(brace);
            rest = &after[1..];
            continue;
        }
        if brace == "}" {
            out.push('}');
            rest = after;
            continue;
        }
        let end = after.find('}').ok_or(FormatError::Unclosed)?;
        let name = &after[..end];
        if !PLACEHOLDERS.iter().any(|(p, _)| *p == name) {
            let known = PLACEHOLDERS.iter().map(|(p, _)| *p).collect::<Vec<_>>().join(", ");
            return Err(FormatError::Unknown(name.to_string(), known));
        }
        out.push_str(&value(name).unwrap_or_else(|| "-".into()));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn value(s: &Status, name: &str, tz: &TimeZone) -> Option<String> {
    let session = s.session.as_ref();
    let block = s.block.as_ref();
    Some(match name {
        "session" => {
            let s = session?;
            let id = s.session_id.as_deref().map(|id| id.chars().take(8).collect());
            super::terminal_safe(&s.name.clone().or(id).unwrap_or_else(|| s.rel.clone()))
        }
        "model" => super::terminal_safe(session?.model.as_deref()?),
        "session_cost" => usd(session?.cost),
        "context" => short_tokens(session?.context_tokens?),
        "compactions" => session?.compactions.len().to_string(),
        "today_cost" => usd(s.today_cost),
        "today_tokens" => short_tokens(s.today_tokens),
        "block_cost" => usd(block?.cost),
        "burn_rate" => usd(block?.burn()?.cost_per_hour),
        "projected_cost" => usd(block?.projection(s.now_ms)?.cost),
        "block_left" => minutes((block?.end_ms - s.now_ms).max(0) / 60_000),
        "block_end" => jiff::Timestamp::from_millisecond(block?.end_ms)
            .ok()?
            .to_zoned(tz.clone())
            .strftime("%H:%M")
            .to_string(),
        _ => return None,
    })
}

/// `950`, `45.2k`, `1.3M`.
pub fn short_tokens(n: f64) -> String {
    match n.abs() {
        x if x >= 1e6 => format!("{:.1}M", n / 1e6),
        x if x >= 1e3 => format!("{:.1}k", n / 1e3),
        _ => tokens(n),
    }
}

/// `2h13m`, `45m`.
pub fn minutes(m: i64) -> String {
    match m {
        m if m >= 60 => format!("{}h{:02}m", m / 60, m % 60),
        m => format!("{m}m"),
    }
}

/// The status as one JSON document.
pub fn to_json(s: &Status, tz_name: &str) -> Value {
    let session = s.session.as_ref().map(|x| {
        json!({
            "path": crate::paths::path_text(&x.path),
            "file": x.rel,
            "sessionId": x.session_id,
            "name": x.name,
            "project": x.project,
            "model": x.model,
            "lastActivityAt": x.last_activity,
            "cost": num_json(x.cost),
            "totalTokens": num_json(x.tokens),
            "ownCost": num_json(x.own_cost),
            "contextTokens": x.context_tokens.map(num_json),
            "compactions": x.compactions.iter().map(|c| json!({
                "timestamp": c.timestamp,
                "tokensBefore": c.tokens_before.map(num_json),
                "estimatedTokensAfter": c.tokens_after.map(num_json),
            })).collect::<Vec<_>>(),
        })
    });
    json!({
        "now": blocks::iso(s.now_ms),
        "timezone": tz_name,
        "session": session,
        "today": {
            "date": s.today,
            "cost": num_json(s.today_cost),
            "totalTokens": num_json(s.today_tokens),
            "calls": s.today_calls,
        },
        "block": s.block.as_ref().map(|b| blocks::block_json(b, s.now_ms)),
        "sessions": s.sessions,
        "cacheReadOnly": s.cache_read_only,
    })
}
