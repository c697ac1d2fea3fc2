//! A whole directory: every file through [`analyze_bytes`] in parallel, then the
//! cross-session figures (fork deduplication, parents found in the corpus, totals).
//!
//! Each worker keeps its own [`Scratch`]; a file's bytes are read, analysed and dropped
//! before the next file. Of each session only a small summary stays in memory; its
//! document and its billed calls wait in a [`Spill`] file for the cross-session step, so
//! memory does not grow with the corpus.

pub mod spill;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
use spill::{Span, Spill};

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
/// as its worker left it (the rows and the spans excepted).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SessionSummary {
    pub rel: String,
    pub path: PathBuf,
    /// The `sessions --json` object as its worker made it, as compact JSON text, in the
    /// corpus's spill; [`Corpus::object`] reads it and adds the corpus keys.
    #[serde(skip)]
    pub doc: Span,
    /// The identities of its billed calls, in file order, in the spill.
    #[serde(skip)]
    pub identities: Span,
    /// The totals of each billed call, in the spill.
    #[serde(skip)]
    pub call_totals: Span,
    /// Billed calls.
    #[serde(skip)]
    pub calls: u64,
    /// Indices of the calls an earlier session holds too (set by [`Corpus::finish`]).
    #[serde(skip)]
    pub inherited: Vec<u32>,
    /// Header `id`.
    pub session_id: Option<String>,
    /// `parentSession` as a string, when it is truthy.
    pub parent_session: Option<String>,
    /// The scanned file that `parentSession` names (set by [`Corpus::finish`]).
    pub parent_in_corpus: Option<String>,
    /// This session's rows of the usage frame, in the order of its calls (only with
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
    /// Pi refuses it and nothing in it says it is a session: no entry of Pi's types and not a
    /// name Pi gives session files (extensions' transcripts, logs, empty files of other
    /// tools). Such files are skipped as Pi skips them, and do not make the exit code 2.
    pub not_session: bool,
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
    /// Where the sessions' documents and calls wait (see [`spill`]).
    pub spill: Arc<Spill>,
}

impl Corpus {
    /// Files with skipped lines or parent loops.
    pub fn damaged(&self) -> usize {
        self.sessions.iter().filter(|s| s.damaged).count()
    }

    /// Whether anything that may hold billed usage was skipped: a damaged session, a session
    /// Pi cannot load, a file or folder that could not be read (exit code 2). Files that are
    /// not sessions do not count.
    pub fn skipped_anything(&self) -> bool {
        self.rejected.iter().any(|r| !r.not_session) || !self.issues.is_empty() || self.damaged() > 0
    }

    /// Files Pi refuses that are not sessions at all (see [`RejectedFile::not_session`]).
    pub fn not_sessions(&self) -> impl Iterator<Item = &RejectedFile> {
        self.rejected.iter().filter(|r| r.not_session)
    }
}

/// Progress callback: called with the bytes of each finished file.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// Scan roots and analyse every session file.
pub fn scan(roots: &[PathBuf], keep: Keep, progress: Option<Progress<'_>>) -> Result<Corpus, crate::Error> {
    let found = scan::discover(roots);
    let mut corpus = analyze_files(&found.files, keep, progress, None)?;
    corpus.issues.extend(found.issues);
    Ok(corpus)
}

/// What a worker makes of a file (and what the cache keeps of it).
#[derive(serde::Serialize, serde::Deserialize)]
enum Outcome {
    Session(Box<Finished>),
    Rejected(RejectedFile),
}

/// A session as its worker left it, before its bulk goes to the spill. The billed calls are
/// already in the spill's encoding, so the cache stores and restores them as plain bytes.
#[derive(serde::Serialize, serde::Deserialize)]
struct Finished {
    summary: SessionSummary,
    /// The `sessions --json` object without the corpus keys, as compact JSON text.
    doc: Box<str>,
    /// The identity of each billed call ([`spill::encode_identities`]).
    #[serde(with = "crate::cache::raw_bytes")]
    identities: Vec<u8>,
    /// The totals of each billed call ([`spill::encode_totals`]).
    #[serde(with = "crate::cache::raw_bytes")]
    call_totals: Vec<u8>,
}

/// What stays in memory of an outcome once its bulk is in the spill. The cache keeps it
/// (the spans, filled in from the cache's [`cache::Bulk`], excepted).
#[derive(serde::Serialize, serde::Deserialize)]
enum Settled {
    Session(Box<SessionSummary>),
    Rejected(Box<RejectedFile>),
}

/// A session's bulk as written to the spill: where, the bytes of each part, and the bytes (for
/// the cache's hash; without a cache they are only dropped).
struct Written {
    span: Span,
    parts: [u64; 3],
    bytes: Vec<u8>,
}

impl Outcome {
    /// Move the session's bulk to the spill: its document, identities and totals, one after
    /// the other.
    fn settle(self, spill: &Spill) -> (Settled, Option<Written>) {
        match self {
            Outcome::Rejected(r) => (Settled::Rejected(Box::new(r)), None),
            Outcome::Session(f) => {
                let Finished {
                    summary,
                    doc,
                    identities,
                    call_totals,
                } = *f;
                let parts = [doc.len() as u64, identities.len() as u64, call_totals.len() as u64];
                let mut bytes = Vec::with_capacity(parts.iter().sum::<u64>() as usize);
                bytes.extend_from_slice(doc.as_bytes());
                bytes.extend_from_slice(&identities);
                bytes.extend_from_slice(&call_totals);
                let span = spill.put(&bytes);
                (
                    Settled::Session(Box::new(with_bulk(summary, span, parts))),
                    Some(Written { span, parts, bytes }),
                )
            }
        }
    }
}

/// A session's summary pointing at its bulk, written at `span` in `parts`.
fn with_bulk(mut summary: SessionSummary, span: Span, parts: [u64; 3]) -> SessionSummary {
    let [doc, identities, totals] = parts;
    let part = |at: u64, len: u64| span.part(at, len).unwrap_or_default();
    summary.doc = part(0, doc);
    summary.identities = part(doc, identities);
    summary.call_totals = part(doc + identities, totals);
    summary.calls = identities / spill::IDENTITY_BYTES as u64;
    summary
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
pub fn analyze_files(
    files: &[FoundFile],
    keep: Keep,
    progress: Option<Progress<'_>>,
    cache: Option<&Cache>,
) -> Result<Corpus, crate::Error> {
    let bytes = AtomicU64::new(0);
    let spill = Arc::new(cache.map_or_else(Spill::new, Cache::spill));
    // Each core's buffers, kept from file to file. A core that takes up a file while waiting
    // for help with another (see `FileParser::lines_parallel`) finds its own in use and works
    // with fresh ones.
    let scratches: Vec<Mutex<Scratch>> = (0..rayon::current_num_threads()).map(|_| Mutex::default()).collect();
    let outcomes: Vec<Settled> = files
        .par_iter()
        // One file per task: an idle core can take any file not yet begun. With runs of files
        // that one core works through alone, the other waited up to a fifth of a scan at its end.
        .with_max_len(1)
        .map(|f| {
            let mut own = rayon::current_thread_index()
                .and_then(|i| scratches.get(i))
                .and_then(|m| m.try_lock().ok());
            let mut fresh = None;
            let scratch = match own.as_deref_mut() {
                Some(s) => s,
                None => fresh.insert(Scratch::default()),
            };
            let out = analyze_one(f, keep, scratch, cache, &spill);
            bytes.fetch_add(f.size, Ordering::Relaxed);
            if let Some(p) = progress {
                p(f.size);
            }
            out
        })
        .collect();
    let mut corpus = Corpus {
        bytes: bytes.into_inner(),
        spill,
        ..Default::default()
    };
    for o in outcomes {
        match o {
            Settled::Session(s) => corpus.sessions.push(*s),
            Settled::Rejected(r) => corpus.rejected.push(*r),
        }
    }
    corpus.finish().map_err(|cause| crate::Error::Spill { cause })?;
    Ok(corpus)
}

/// Analyse one file; a panic (a bug in pisa) costs only this file, which is reported.
fn analyze_one(f: &FoundFile, keep: Keep, scratch: &mut Scratch, cache: Option<&Cache>, spill: &Spill) -> Settled {
    let run = || match cache {
        Some(c) => analyze_cached(f, keep, scratch, c, spill),
        None => match read(f, None, scratch) {
            Ok((parsed, _, _)) => outcome_of(f, parsed, keep).settle(spill).0,
            Err(e) => unreadable(f, e).settle(spill).0,
        },
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(settled) => settled,
        Err(payload) => {
            // The scratch buffers may hold anything now: start them afresh.
            *scratch = Scratch::default();
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            let reason = format!("internal error in pisa while reading this file ({what}); please report it");
            Settled::Rejected(Box::new(RejectedFile {
                rel: f.rel.clone(),
                path: f.path.clone(),
                json: json!({"path": f.rel, "status": "failed", "reason": reason}),
                reason,
                not_session: false,
            }))
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
        not_session: false,
    })
}

/// One file through the cache: its summary (and its bulk where an earlier run's spill holds
/// it) when the file did not change and no rows are wanted, its cached entries and a parse of
/// what was appended when it grew, else a parse.
fn analyze_cached(f: &FoundFile, keep: Keep, scratch: &mut Scratch, cache: &Cache, spill: &Spill) -> Settled {
    let key = cache::key(&f.path);
    let record = cache.get(&key);
    let mut file = match scan::source::open(&f.path) {
        Ok(file) => file,
        Err(e) => return unreadable(f, e).settle(spill).0,
    };
    // The open file's, not the path's: the path may name another file by now.
    let meta = file.metadata().map(|m| cache::Meta::of(&m));
    if let (Some(r), Ok(meta)) = (record, &meta)
        && !keep.rows
        && r.rel == f.rel
        && r.stamp.same_meta(*meta)
        && r.stamp.same_ends(&file).unwrap_or(false)
        && let Some(settled) = from_cache(&key, r, cache, spill)
    {
        return settled;
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
        Err(e) => return unreadable(f, e).settle(spill).0,
    };
    let mut blob = match (reused, record.and_then(|r| r.entries)) {
        (Some(offset), Some(old)) if offset == resume.offset => cache::Blob::Keep(old),
        _ => cache::Blob::New(cache::encode_part(&resume.prefix_of(&parsed.entries))),
    };
    let (settled, written) = outcome_of(f, parsed, keep).settle(spill);
    let Ok(meta) = meta else { return settled };
    let bulk = match (&settled, written) {
        (Settled::Rejected(_), _) => {
            blob = cache::Blob::None;
            None
        }
        (Settled::Session(_), Some(w)) => match cache.bulk(w.span, w.parts, cache::hash(&w.bytes)) {
            Some(b) => Some(b),
            // No spill in the cache folder: nothing of this session can be cached.
            None => return settled,
        },
        (Settled::Session(_), None) => return settled,
    };
    let same_entries = match (&blob, record.and_then(|r| r.entries)) {
        (cache::Blob::Keep(new), Some(old)) => *new == old,
        (cache::Blob::None, None) => true,
        _ => false,
    };
    let old_bulk_holds = record.is_some_and(|r| r.bulk.is_none() || matches!(cache.kept_bulk(r), Some((_, false))));
    if change == Some(cache::Change::Same) && same_entries && old_bulk_holds {
        // The same bytes, nothing new parsed (rows were wanted): the old record still holds.
        cache.keep(key);
        return settled;
    }
    // A file that changed while it was read (and was read again) is not cached: the next
    // run reads it again.
    if len == meta.size
        && file.metadata().is_ok_and(|m| cache::Meta::of(&m) == meta)
        && let Ok(stamp) = cache::Stamp::of(meta, &file)
        && let Some(summary) = cache::encode_part(&settled)
    {
        cache.put(key, &f.rel, stamp, summary, bulk, blob);
    }
    settled
}

/// A file unchanged since the cache's record of it: its summary, with its bulk where an
/// earlier run's spill holds it (checked against its hash; copied into this run's spill when
/// that spill is retired). `None` when the record cannot be used.
fn from_cache(key: &str, r: &cache::Record, cache: &Cache, spill: &Spill) -> Option<Settled> {
    let settled = cache.decode_summary::<Settled>(key, &r.summary)?;
    let summary = match settled {
        Settled::Rejected(_) => {
            cache.keep(key.to_string());
            return Some(settled);
        }
        Settled::Session(s) => s,
    };
    let b = r.bulk?;
    let (span, retired) = cache.kept_bulk(r)?;
    let bytes = spill.get(span).ok().filter(|bytes| cache::hash(bytes) == b.hash);
    let Some(bytes) = bytes else {
        cache.warn(format!(
            "cached bulk of {key} does not match its index; reading it again"
        ));
        return None;
    };
    if !retired {
        cache.keep(key.to_string());
        return Some(Settled::Session(Box::new(with_bulk(*summary, span, b.parts))));
    }
    let span = spill.put(&bytes);
    let moved = cache.bulk(span, b.parts, b.hash);
    let blob = r.entries.map_or(cache::Blob::None, cache::Blob::Keep);
    match moved {
        Some(bulk) => cache.put(key.to_string(), &r.rel, r.stamp, r.summary.clone(), Some(bulk), blob),
        // This run's spill is not in the cache folder: the old record still holds.
        None => cache.keep(key.to_string()),
    }
    Some(Settled::Session(Box::new(with_bulk(*summary, span, b.parts))))
}

/// The outcome of a parsed file.
fn outcome_of(f: &FoundFile, parsed: ParsedFile, keep: Keep) -> Outcome {
    match analyze_parsed(parsed) {
        FileAnalysis::Rejected {
            stats,
            reason,
            pi_entries,
        } => {
            let not_session = !pi_entries && !scan::pi_session_name(&f.rel);
            Outcome::Rejected(RejectedFile {
                rel: f.rel.clone(),
                path: f.path.clone(),
                json: rjson::rejected_json(&f.rel, &stats, &reason, not_session),
                reason: reason.message(),
                not_session,
            })
        }
        FileAnalysis::Session(a) => {
            let ov = rjson::overview(&f.rel, &a);
            let json = rjson::session_json(&f.rel, &a, &ov);
            let parent = &a.tree.header.parent_session;
            let parent_session = js::js_truthy(parent).then(|| js::js_string_of(parent).into_owned());
            let records = &a.accounting.records;
            let mut identities = Vec::new();
            spill::encode_identities(records.iter().map(|r| r.identity), &mut identities);
            // The session's totals, summed in file order while each call's are encoded.
            let mut totals = Totals::default();
            let mut encoded_totals = Vec::new();
            spill::encode_totals(
                records.iter().map(record_totals).inspect(|t| totals.merge(t)),
                &mut encoded_totals,
            );
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
            let summary = SessionSummary {
                rel: f.rel.clone(),
                path: f.path.clone(),
                doc: Span::default(),
                identities: Span::default(),
                call_totals: Span::default(),
                calls: 0,
                inherited: Vec::new(),
                session_id: a.tree.header.id.as_deref().map(str::to_string),
                parent_session,
                parent_in_corpus: None,
                usage,
                compactions,
                started_ms: a.started_ms,
                damaged: a.is_damaged(),
                row,
            };
            Outcome::Session(Box::new(Finished {
                summary,
                doc: serde_json::to_string(&json).expect("a JSON object serializes").into(),
                identities,
                call_totals: encoded_totals,
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
                timestamp: e.timestamp.as_deref().map(Into::into),
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
                    .and_then(|r| r.provider.as_deref())
                    .or_else(|| answer.and_then(|r| r.provider.as_deref()))
                    .map(str::to_string),
                model: own
                    .and_then(|r| r.model.as_deref())
                    .or_else(|| answer.and_then(|r| r.response_model.as_deref().or(r.model.as_deref())))
                    .map(str::to_string),
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

/// Identities looked at in one pass of the fork deduplication: a set of this many fits a
/// 65,536-bucket table (1.1 MB), whatever the size of the corpus.
const PASS_CALLS: u64 = 50_000;

impl Corpus {
    /// Cross-session figures: sort, mark inherited calls, own totals, parents in the corpus.
    fn finish(&mut self) -> std::io::Result<()> {
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
        self.mark_inherited(&order, PASS_CALLS)?;
        let mut seen_compactions: HashSet<u128> = HashSet::new();
        let mut buf = Vec::new();
        for &i in &order {
            let s = &mut self.sessions[i];
            let own = if s.inherited.is_empty() {
                // The same sums in the same order as the session's own totals.
                s.row.totals
            } else {
                self.spill.get_into(s.call_totals, &mut buf)?;
                let mut own = Totals::default();
                let mut inherited = s.inherited.iter().peekable();
                for (k, t) in spill::totals(&buf).enumerate() {
                    if inherited.next_if_eq(&&(k as u32)).is_none() {
                        own.merge(&t);
                    }
                }
                own
            };
            for c in &mut s.compactions {
                c.inherited = seen_compactions.contains(&c.identity);
            }
            seen_compactions.extend(s.compactions.iter().map(|c| c.identity));
            s.row.own = own;
            self.totals.merge(&own);
            self.naive_totals.merge(&s.row.totals);
            self.inherited_calls += s.inherited.len() as u64;
            self.calls += s.calls;
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
        Ok(())
    }

    /// A call is inherited when a session earlier in `order` holds the same identity. The
    /// identities are read back from the spill in passes, each over the identities whose
    /// high bits fall in one part, so the set of those seen stays small however many
    /// calls the corpus has.
    fn mark_inherited(&mut self, order: &[usize], pass_calls: u64) -> std::io::Result<()> {
        let calls: u64 = self.sessions.iter().map(|s| s.calls).sum();
        let passes = calls.div_ceil(pass_calls).max(1);
        let mut seen: HashSet<u128> = HashSet::with_capacity(calls.min(pass_calls * 8 / 7) as usize);
        let mut fresh: Vec<u128> = Vec::new();
        let mut buf = Vec::new();
        for pass in 0..passes {
            seen.clear();
            for &i in order {
                let s = &mut self.sessions[i];
                if s.calls == 0 {
                    continue;
                }
                self.spill.get_into(s.identities, &mut buf)?;
                fresh.clear();
                for (k, id) in spill::identities(&buf).enumerate() {
                    if ((id >> 64) as u64) % passes != pass {
                        continue;
                    }
                    if seen.contains(&id) {
                        s.inherited.push(k as u32);
                    } else {
                        fresh.push(id);
                    }
                }
                seen.extend(fresh.drain(..));
            }
        }
        if passes > 1 {
            for s in &mut self.sessions {
                s.inherited.sort_unstable();
            }
        }
        Ok(())
    }

    /// The whole `sessions --json` object of one of its sessions.
    pub fn object(&self, s: &SessionSummary) -> std::io::Result<Map<String, Value>> {
        let doc = self.spill.get(s.doc)?;
        let mut m: Map<String, Value> = serde_json::from_slice(&doc).map_err(std::io::Error::other)?;
        for (k, v) in s.corpus_keys() {
            m.insert(k.into(), v);
        }
        Ok(m)
    }

    /// Write [`Corpus::object`] as compact JSON, without building it.
    pub fn write_object(&self, s: &SessionSummary, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let doc = self.spill.get(s.doc)?;
        let body = doc
            .strip_suffix(b"}")
            .ok_or_else(|| std::io::Error::other("a JSON object"))?;
        out.write_all(body)?;
        let mut first = body == b"{";
        for (k, v) in s.corpus_keys() {
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

impl SessionSummary {
    /// Calls copied from an earlier session (after [`Corpus::finish`]).
    pub fn inherited_calls(&self) -> u64 {
        self.inherited.len() as u64
    }

    /// Whether each call is copied from an earlier session, in file order.
    pub fn inherited_flags(&self) -> impl Iterator<Item = bool> + '_ {
        let mut inherited = self.inherited.iter().peekable();
        (0..self.calls as u32).map(move |k| inherited.next_if_eq(&&k).is_some())
    }

    /// The corpus keys that follow the worker's keys in the `sessions --json` object.
    fn corpus_keys(&self) -> [(&'static str, Value); 2] {
        [
            ("own", own_json(&self.row.own, self.calls, self.inherited_calls())),
            (
                "parentInCorpus",
                self.parent_in_corpus.clone().map_or(Value::Null, Value::String),
            ),
        ]
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions holding the given identities (some shared), in a corpus with a spill.
    fn corpus_of(lists: &[Vec<u128>], spill: Spill) -> Corpus {
        let mut buf = Vec::new();
        let sessions = lists
            .iter()
            .enumerate()
            .map(|(i, ids)| {
                spill::encode_identities(ids.iter().copied(), &mut buf);
                SessionSummary {
                    rel: format!("s{i:03}.jsonl"),
                    identities: spill.put(&buf),
                    calls: ids.len() as u64,
                    started_ms: Some((i % 7) as f64),
                    ..Default::default()
                }
            })
            .collect();
        Corpus {
            sessions,
            spill: Arc::new(spill),
            ..Default::default()
        }
    }

    /// The rule itself, with one set: inherited when an earlier session holds the identity.
    fn naive(lists: &[Vec<u128>], order: &[usize]) -> Vec<Vec<u32>> {
        let mut seen = HashSet::new();
        let mut out = vec![Vec::new(); lists.len()];
        for &i in order {
            for (k, id) in lists[i].iter().enumerate() {
                if seen.contains(id) {
                    out[i].push(k as u32);
                }
            }
            seen.extend(lists[i].iter().copied());
        }
        out
    }

    #[test]
    fn inherited_calls_are_the_same_in_one_pass_or_many_and_in_memory() {
        // Forks: each session copies a prefix of an earlier one, then adds calls of its own,
        // some twice (a call repeated within one session is not inherited).
        let mut next = 0u128;
        let mut fresh = || {
            next += 1;
            xxhash_rust::xxh3::xxh3_128(&next.to_le_bytes())
        };
        let mut lists: Vec<Vec<u128>> = Vec::new();
        for i in 0..60usize {
            let mut ids: Vec<u128> = match i % 3 {
                0 if i > 0 => lists[i / 2][..lists[i / 2].len() / 2].to_vec(),
                _ => Vec::new(),
            };
            for j in 0..(i % 11 + 1) {
                let id = fresh();
                ids.push(id);
                if j % 4 == 0 {
                    ids.push(id);
                }
            }
            lists.push(ids);
        }
        let total: usize = lists.iter().map(Vec::len).sum();
        for (spill, pass_calls) in [
            (Spill::new(), 1_000_000),
            (Spill::new(), 7),
            (Spill::new(), 1),
            (Spill::in_memory(), 5),
        ] {
            let mut c = corpus_of(&lists, spill);
            let mut order: Vec<usize> = (0..lists.len()).collect();
            order.sort_by_key(|&i| (i % 7, i));
            c.mark_inherited(&order, pass_calls).unwrap();
            let got: Vec<Vec<u32>> = c.sessions.iter().map(|s| s.inherited.clone()).collect();
            let want = naive(&lists, &order);
            assert!(
                want.iter().map(Vec::len).sum::<usize>() > total / 10,
                "the test has forks"
            );
            assert_eq!(got, want, "passes of {pass_calls} calls");
        }
    }
}
