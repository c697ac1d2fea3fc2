//! A whole directory: every file through [`analyze_bytes`] in parallel, then the
//! cross-session figures (fork deduplication, parents found in the corpus, totals).
//!
//! Each worker keeps its own [`Scratch`]; a file's bytes are loaded, analysed and dropped
//! before the next file, and only a compact summary of each session outlives its worker.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use hashbrown::{HashMap, HashSet};
use rayon::prelude::*;
use serde_json::{Map, Value, json};

use crate::analyze::{FileAnalysis, analyze_parsed};
use crate::cache::{self, Cache};
use crate::error::ScanIssue;
use crate::js;
use crate::parse::{ParsedFile, Prefix, ResumePoint, Scratch};
use crate::report::json as rjson;
use crate::scan::{self, FoundFile};
use crate::usage::Totals;

/// One billed call, reduced to what cross-session figures need.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct BilledCall {
    pub identity: u128,
    pub totals: Totals,
    /// An earlier session holds the same call (set by [`Corpus::finish`]).
    pub inherited: bool,
}

/// What to keep of each session beyond its summary and billed-call identities.
#[derive(Debug, Clone, Copy, Default)]
pub struct Keep {
    /// Every usage record and one row per compaction, for the frames.
    pub rows: bool,
}

/// One compaction entry: SPEC §5's effect, with what the frames need to place it.
#[derive(Debug, Clone)]
pub struct CompactionRow {
    pub entry_index: u32,
    pub entry_id: Option<String>,
    pub timestamp: Option<Box<str>>,
    pub on_active_path: bool,
    pub tokens_before: Option<f64>,
    pub estimated_tokens_after: Option<f64>,
    pub entries_summarized: Option<u64>,
    pub entries_kept: Option<u64>,
    pub path_length: Option<u64>,
    pub retains_none: bool,
    pub has_system_message: bool,
    pub first_kept_entry_id: Option<String>,
    /// `input + output + cacheRead + cacheWrite` of its own usage, when it has one.
    pub usage_tokens: Option<f64>,
    pub usage_cost: Option<f64>,
    /// The model of the latest assistant answer before it in the file: the model that
    /// wrote the summary when the compaction carries no usage of its own.
    pub provider: Option<String>,
    pub model: Option<String>,
    pub identity: u128,
    /// An earlier session holds the same compaction (a fork's copy).
    pub inherited: bool,
}

/// What survives of one accepted session after its worker is done. The cache keeps it
/// as its worker left it (the rows excepted).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SessionSummary {
    pub rel: String,
    pub path: PathBuf,
    /// The `sessions --json` object as its worker made it, as compact JSON text (a parsed
    /// object costs several times more memory); [`SessionSummary::object`] adds the corpus keys.
    pub doc: Box<str>,
    /// Header `id`.
    pub session_id: Option<String>,
    /// `parentSession` as a string, when it is truthy.
    pub parent_session: Option<String>,
    /// The scanned file that `parentSession` names (set by [`Corpus::finish`]).
    pub parent_in_corpus: Option<String>,
    pub calls: Vec<BilledCall>,
    /// This session's rows of the usage frame, in the order of `calls` (only with
    /// [`Keep::rows`]); `inherited` is filled in when the frames are built.
    #[serde(skip)]
    pub usage: Option<polars::prelude::DataFrame>,
    /// One row per compaction entry, in file order (only with [`Keep::rows`]).
    #[serde(skip)]
    pub compactions: Vec<CompactionRow>,
    /// Header timestamp (Unix ms), for choosing the owner of copied history.
    pub started_ms: Option<f64>,
    pub damaged: bool,
    /// For the table.
    pub row: Row,
}

/// The figures a terminal table row shows.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Row {
    /// Project, times and models, as in the JSON object.
    pub overview: rjson::Overview,
    pub name: Option<String>,
    pub messages: u64,
    /// Pi's totals (copied fork history included).
    pub totals: Totals,
    /// Billed calls this session owns (not copied from an earlier session).
    pub own: Totals,
    pub context_tokens: Option<f64>,
    pub compactions: u64,
}

/// A file Pi refuses, or that could not be read.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RejectedFile {
    pub rel: String,
    pub path: PathBuf,
    #[serde(with = "json_as_text")]
    pub json: Value,
    pub reason: String,
}

/// The result of scanning a corpus.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    /// Accepted sessions, sorted by relative path (UTF-16 order, like the oracle).
    pub sessions: Vec<SessionSummary>,
    pub rejected: Vec<RejectedFile>,
    pub issues: Vec<ScanIssue>,
    pub bytes: u64,
    /// Sum over every billed call counted once.
    pub totals: Totals,
    /// Sum of Pi's per-session totals (copied fork history counted again).
    pub naive_totals: Totals,
    pub inherited_calls: u64,
    pub calls: u64,
}

impl Corpus {
    /// Files with skipped lines or parent loops.
    pub fn damaged(&self) -> usize {
        self.sessions.iter().filter(|s| s.damaged).count()
    }

    /// Whether anything was skipped (exit code 2).
    pub fn skipped_anything(&self) -> bool {
        !self.rejected.is_empty() || !self.issues.is_empty() || self.damaged() > 0
    }
}

/// Progress callback: called with the bytes of each finished file.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// Scan roots and analyse every session file.
pub fn scan(roots: &[PathBuf], keep: Keep, progress: Option<Progress<'_>>) -> Corpus {
    let found = scan::discover(roots);
    let mut corpus = analyze_files(&found.files, keep, progress, None);
    corpus.issues.extend(found.issues);
    corpus
}

#[derive(serde::Serialize, serde::Deserialize)]
enum Outcome {
    Session(Box<SessionSummary>),
    Rejected(RejectedFile),
}

/// JSON values as JSON text in the cache (postcard does not describe itself).
mod json_as_text {
    use serde::{Deserialize, Deserializer, Serialize, Serializer, de::DeserializeOwned};

    pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        serde_json::to_string(v)
            .map_err(serde::ser::Error::custom)?
            .serialize(s)
    }

    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        serde_json::from_str(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// Analyse the given files (largest first is best) in parallel, through the cache if one
/// is given. The result is the same with and without it.
pub fn analyze_files(files: &[FoundFile], keep: Keep, progress: Option<Progress<'_>>, cache: Option<&Cache>) -> Corpus {
    let bytes = AtomicU64::new(0);
    let outcomes: Vec<Outcome> = files
        .par_iter()
        .map_init(Scratch::default, |scratch, f| {
            let out = analyze_one(f, keep, scratch, cache);
            bytes.fetch_add(f.size, Ordering::Relaxed);
            if let Some(p) = progress {
                p(f.size);
            }
            out
        })
        .collect();
    let mut corpus = Corpus {
        bytes: bytes.into_inner(),
        ..Default::default()
    };
    for o in outcomes {
        match o {
            Outcome::Session(s) => corpus.sessions.push(*s),
            Outcome::Rejected(r) => corpus.rejected.push(r),
        }
    }
    corpus.finish();
    corpus
}

/// Analyse one file; a panic (a bug in pisa) costs only this file, which is reported.
fn analyze_one(f: &FoundFile, keep: Keep, scratch: &mut Scratch, cache: Option<&Cache>) -> Outcome {
    let run = || match cache {
        Some(c) => analyze_cached(f, keep, scratch, c),
        None => match read(f, None, scratch) {
            Ok((parsed, _, _)) => outcome_of(f, parsed, keep),
            Err(e) => unreadable(f, e),
        },
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(outcome) => outcome,
        Err(payload) => {
            // The scratch buffers may hold anything now: start them afresh.
            *scratch = Scratch::default();
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let reason = format!("internal error in pisa while reading this file ({what}); please report it");
            Outcome::Rejected(RejectedFile {
                rel: f.rel.clone(),
                path: f.path.clone(),
                json: json!({"path": f.rel, "status": "failed", "reason": reason}),
                reason,
            })
        }
    }
}

/// Open and parse a file (going on from `prefix`): the parsed file, where to go on from
/// next time, and the file's length as read.
fn read(
    f: &FoundFile,
    prefix: Option<Prefix>,
    scratch: &mut Scratch,
) -> Result<(ParsedFile, ResumePoint, u64), crate::Error> {
    let mut file = scan::source::open(&f.path)?;
    read_open(f, &mut file, prefix, scratch)
}

/// Parse an open file, going on from `prefix`; a file that changes meanwhile is read again
/// from its start (see [`scan::source::read_steady`]).
fn read_open(
    f: &FoundFile,
    file: &mut std::fs::File,
    mut prefix: Option<Prefix>,
    scratch: &mut Scratch,
) -> Result<(ParsedFile, ResumePoint, u64), crate::Error> {
    scan::source::read_steady(&f.path, file, |file| {
        let read = scratch.read_file(file, prefix.take())?;
        let len = read.2;
        Ok((read, len))
    })
}

fn unreadable(f: &FoundFile, e: crate::Error) -> Outcome {
    let reason = e.to_string();
    Outcome::Rejected(RejectedFile {
        rel: f.rel.clone(),
        path: f.path.clone(),
        json: json!({"path": f.rel, "status": e.status(), "reason": reason}),
        reason,
    })
}

/// One file through the cache: its summary when the file did not change (and no rows are
/// wanted), its cached entries and a parse of what was appended when it grew, else a parse.
fn analyze_cached(f: &FoundFile, keep: Keep, scratch: &mut Scratch, cache: &Cache) -> Outcome {
    let key = cache::key(&f.path);
    let record = cache.get(&key);
    let mut file = match scan::source::open(&f.path) {
        Ok(file) => file,
        Err(e) => return unreadable(f, e),
    };
    // The open file's, not the path's: the path may name another file by now.
    let meta = file.metadata().map(|m| cache::Meta::of(&m));
    if let (Some(r), Ok(meta)) = (record, &meta)
        && !keep.rows
        && r.rel == f.rel
        && r.stamp.same_meta(*meta)
        && r.stamp.same_ends(&file).unwrap_or(false)
        && let Some(outcome) = cache.decode_summary::<Outcome>(&key, &r.summary)
    {
        cache.keep(key);
        return outcome;
    }
    let change = match (record, &meta) {
        (Some(r), Ok(meta)) => Some(r.stamp.compare(*meta, &file)),
        _ => None,
    };
    let prefix = match (record, change) {
        (Some(r), Some(cache::Change::Same | cache::Change::Grown)) => cache.entries(&key, r),
        _ => None,
    };
    let reused = prefix.as_ref().map(|p| p.offset);
    let (parsed, resume, len) = match read_open(f, &mut file, prefix, scratch) {
        Ok(read) => read,
        Err(e) => return unreadable(f, e),
    };
    let mut blob = match (reused, record.and_then(|r| r.entries)) {
        (Some(offset), Some(old)) if offset == resume.offset => cache::Blob::Keep(old),
        _ => cache::Blob::New(cache::encode_part(&resume.prefix_of(&parsed.entries))),
    };
    let outcome = outcome_of(f, parsed, keep);
    let Ok(meta) = meta else { return outcome };
    if matches!(outcome, Outcome::Rejected(_)) {
        blob = cache::Blob::None;
    }
    let same_entries = match (&blob, record.and_then(|r| r.entries)) {
        (cache::Blob::Keep(new), Some(old)) => *new == old,
        (cache::Blob::None, None) => true,
        _ => false,
    };
    if change == Some(cache::Change::Same) && same_entries {
        // The same bytes, nothing new parsed: the old record still holds.
        cache.keep(key);
        return outcome;
    }
    // A file that changed while it was read (and was read again) is not cached: the next
    // run reads it again.
    if len == meta.size
        && file.metadata().is_ok_and(|m| cache::Meta::of(&m) == meta)
        && let Ok(stamp) = cache::Stamp::of(meta, &file)
        && let Some(summary) = cache::encode_part(&outcome)
    {
        cache.put(key, &f.rel, stamp, summary, blob);
    }
    outcome
}

/// The outcome of a parsed file.
fn outcome_of(f: &FoundFile, parsed: ParsedFile, keep: Keep) -> Outcome {
    match analyze_parsed(parsed) {
        FileAnalysis::Rejected { stats, reason } => Outcome::Rejected(RejectedFile {
            rel: f.rel.clone(),
            path: f.path.clone(),
            json: rjson::rejected_json(&f.rel, &stats, &reason),
            reason: reason.message(),
        }),
        FileAnalysis::Session(a) => {
            let ov = rjson::overview(&f.rel, &a);
            let json = rjson::session_json(&f.rel, &a, &ov);
            let parent = &a.tree.header.parent_session;
            let parent_session = js::js_truthy(parent).then(|| js::js_string_of(parent).into_owned());
            let calls: Vec<BilledCall> = a
                .accounting
                .records
                .iter()
                .map(|r| BilledCall {
                    identity: r.identity,
                    totals: record_totals(r),
                    inherited: false,
                })
                .collect();
            let mut totals = Totals::default();
            for c in &calls {
                totals.merge(&c.totals);
            }
            let row = Row {
                overview: ov,
                name: a.name.clone(),
                messages: a.accounting.stats.total_messages,
                totals,
                own: Totals::default(),
                context_tokens: if a.estimate.unknown {
                    None
                } else {
                    a.context_usage_tokens.as_ref().map(crate::js::JsVal::to_number)
                },
                compactions: a.compactions.total,
            };
            let (usage, compactions) = if keep.rows {
                let id = a.tree.header.id.as_deref();
                let usage = crate::frame::usage_chunk(id, &f.rel, &row.overview.project, &a.accounting.records)
                    .expect("a usage chunk follows its schema");
                (Some(usage), compaction_rows(&a))
            } else {
                (None, Vec::new())
            };
            Outcome::Session(Box::new(SessionSummary {
                rel: f.rel.clone(),
                path: f.path.clone(),
                doc: serde_json::to_string(&json).expect("a JSON object serializes").into(),
                session_id: a.tree.header.id.as_deref().map(str::to_string),
                parent_session,
                parent_in_corpus: None,
                calls,
                usage,
                compactions,
                started_ms: a.started_ms,
                damaged: a.is_damaged(),
                row,
            }))
        }
    }
}

/// One [`CompactionRow`] per compaction entry of a session.
fn compaction_rows(a: &crate::analyze::SessionAnalysis) -> Vec<CompactionRow> {
    use crate::parse::entry::Body;
    use crate::usage::Source;
    let t = &a.tree;
    let records = &a.accounting.records;
    a.effects
        .iter()
        .map(|eff| {
            let e = &t.entries[eff.entry as usize];
            let Body::Compaction(c) = &e.body else {
                unreachable!("effects are compactions")
            };
            let own = records
                .iter()
                .find(|r| r.source == Source::Compaction && r.entry == eff.entry);
            let answer = records
                .iter()
                .rev()
                .find(|r| r.source == Source::Assistant && r.entry < eff.entry);
            let tokens_before = c.tokens_before.as_ref().and_then(serde_json::Value::as_f64);
            let summary_chars = c.summary_chars;
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            std::hash::Hash::hash(&(e.timestamp.as_deref(), tokens_before.map(f64::to_bits)), &mut h);
            std::hash::Hash::hash(&summary_chars.map(f64::to_bits), &mut h);
            let identity = h.digest128();
            CompactionRow {
                entry_index: eff.entry,
                entry_id: json_text(&t.id_json(eff.entry)),
                timestamp: e.timestamp.clone(),
                on_active_path: eff.on_active_path,
                tokens_before,
                estimated_tokens_after: eff
                    .estimated_tokens_after
                    .as_ref()
                    .filter(|x| !x.unknown)
                    .map(|x| x.tokens.to_number())
                    .filter(|x| x.is_finite()),
                entries_summarized: eff.entries_summarized,
                entries_kept: eff.entries_kept,
                path_length: eff.path_length,
                retains_none: e.id.truthy() && c.first_kept == e.id,
                has_system_message: c.system_message.is_some(),
                first_kept_entry_id: json_text(&t.ref_json(&c.first_kept)),
                usage_tokens: own.map(crate::usage::UsageRecord::tokens),
                usage_cost: own.map(|r| r.cost_total),
                provider: own
                    .and_then(|r| r.provider.clone())
                    .or_else(|| answer.and_then(|r| r.provider.clone())),
                model: own
                    .and_then(|r| r.model.clone())
                    .or_else(|| answer.and_then(|r| r.response_model.clone().or_else(|| r.model.clone()))),
                identity,
                inherited: false,
            }
        })
        .collect()
}

/// A JSON id as text: strings as they are, `null` as none, anything else as JSON.
fn json_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn record_totals(r: &crate::usage::UsageRecord) -> Totals {
    let mut t = Totals::default();
    t.add_record(r);
    t
}

impl Corpus {
    /// Cross-session figures: sort, mark inherited calls, own totals, parents in the corpus.
    fn finish(&mut self) {
        self.sessions.sort_by(|a, b| js::cmp_utf16(&a.rel, &b.rel));
        self.rejected.sort_by(|a, b| js::cmp_utf16(&a.rel, &b.rel));
        // Owner of a billed call = the earliest session holding it (header time, then path).
        let mut order: Vec<usize> = (0..self.sessions.len()).collect();
        order.sort_by(|&a, &b| {
            let (sa, sb) = (&self.sessions[a], &self.sessions[b]);
            let ta = sa.started_ms.unwrap_or(f64::INFINITY);
            let tb = sb.started_ms.unwrap_or(f64::INFINITY);
            ta.total_cmp(&tb).then_with(|| js::cmp_utf16(&sa.rel, &sb.rel))
        });
        let mut seen: HashSet<u128> = HashSet::new();
        let mut seen_compactions: HashSet<u128> = HashSet::new();
        for &i in &order {
            let s = &mut self.sessions[i];
            let mut own = Totals::default();
            let mut inherited = 0u64;
            for c in &mut s.calls {
                c.inherited = seen.contains(&c.identity);
                if c.inherited {
                    inherited += 1;
                } else {
                    own.merge(&c.totals);
                }
            }
            seen.extend(s.calls.iter().map(|c| c.identity));
            for c in &mut s.compactions {
                c.inherited = seen_compactions.contains(&c.identity);
            }
            seen_compactions.extend(s.compactions.iter().map(|c| c.identity));
            s.row.own = own;
            self.totals.merge(&own);
            self.naive_totals.merge(&s.row.totals);
            self.inherited_calls += inherited;
            self.calls += s.calls.len() as u64;
        }
        // parentInCorpus: a scanned file whose name equals that of parentSession (last wins).
        let mut by_name: HashMap<String, String> = HashMap::new();
        let mut names: Vec<&str> = self
            .sessions
            .iter()
            .map(|s| s.rel.as_str())
            .chain(self.rejected.iter().map(|r| r.rel.as_str()))
            .collect();
        names.sort_by(|a, b| js::cmp_utf16(a, b));
        for rel in names {
            by_name.insert(base_name(rel).to_string(), rel.to_string());
        }
        for s in &mut self.sessions {
            s.parent_in_corpus = s
                .parent_session
                .as_deref()
                .and_then(|p| by_name.get(base_name(p)))
                .cloned();
        }
    }
}

impl SessionSummary {
    /// Calls copied from an earlier session (after [`Corpus::finish`]).
    pub fn inherited_calls(&self) -> u64 {
        self.calls.iter().filter(|c| c.inherited).count() as u64
    }

    /// The corpus keys that follow the worker's keys in the `sessions --json` object.
    fn corpus_keys(&self) -> [(&'static str, Value); 2] {
        [
            (
                "own",
                own_json(&self.row.own, self.calls.len() as u64, self.inherited_calls()),
            ),
            (
                "parentInCorpus",
                self.parent_in_corpus.clone().map_or(Value::Null, Value::String),
            ),
        ]
    }

    /// The whole `sessions --json` object.
    pub fn object(&self) -> Map<String, Value> {
        let mut m: Map<String, Value> = serde_json::from_str(&self.doc).expect("the worker wrote a JSON object");
        for (k, v) in self.corpus_keys() {
            m.insert(k.into(), v);
        }
        m
    }

    /// Write [`SessionSummary::object`] as compact JSON, without building it.
    pub fn write_object(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let body = self.doc.strip_suffix('}').expect("a JSON object");
        out.write_all(body.as_bytes())?;
        let mut first = body == "{";
        for (k, v) in self.corpus_keys() {
            if !first {
                out.write_all(b",")?;
            }
            first = false;
            serde_json::to_writer(&mut *out, k)?;
            out.write_all(b":")?;
            serde_json::to_writer(&mut *out, &v)?;
        }
        out.write_all(b"}")
    }
}

fn own_json(t: &Totals, calls: u64, inherited: u64) -> Value {
    json!({
        "input": js::num_json(t.input),
        "output": js::num_json(t.output),
        "cacheRead": js::num_json(t.cache_read),
        "cacheWrite": js::num_json(t.cache_write),
        "total": js::num_json(t.tokens()),
        "cost": js::num_json(t.cost),
        "billedCalls": calls,
        "inheritedCalls": inherited,
    })
}

fn base_name(p: &str) -> &str {
    p.rsplit(['/', '\\']).next().unwrap_or(p)
}
