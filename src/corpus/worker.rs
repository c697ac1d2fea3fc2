//! One file on one core: read and analysed into plain data, its bulk written to the spill.

use serde_json::Value;

use super::cache::Cache;
use super::spill::{self, Span, Spill};
use super::{Calls, ChildCall, CompactionRow, RejectedFile, Row, SessionSummary, Transcript};
use crate::analyze::{FileAnalysis, FileRecord, FileStatus, SessionAnalysis, SessionFacts, analyze_parsed};
use crate::js;
use crate::parse::entry::{Body, Entry, TranscriptRecord};
use crate::parse::{ParsedFile, Prefix, ResumePoint, Scratch};
use crate::scan::source::Attempt;
use crate::scan::{self, FoundFile};
use crate::usage::{Totals, UsageRecord};

/// What every file of a scan is analysed with.
pub(super) struct Work<'a> {
    pub cache: Option<&'a Cache>,
    pub spill: &'a Spill,
    /// Which forms of each call are spilled (see [`super::Keep`]).
    pub forms: Forms,
    /// Which forms of each call the command reads back: those it is refused otherwise, and
    /// those a cached bulk is checked for.
    pub reads: Forms,
}

/// What a worker makes of a file.
pub(super) enum Outcome {
    Session(Box<Finished>),
    /// A file that is not a session pisa could read; with the billed calls of a subagent
    /// transcript (encoded as a session's).
    Rejected(Box<RejectedFile>, Option<Encoded>),
}

/// A file's billed calls in the spill's encoding.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Encoded {
    /// The identity of each call ([`spill::encode_identities`]).
    #[serde(with = "super::cache::raw_bytes")]
    pub identities: Vec<u8>,
    /// The totals of each call ([`spill::encode_totals`]).
    #[serde(with = "super::cache::raw_bytes")]
    pub totals: Vec<u8>,
    /// What reports need of each call ([`super::billed::encode`]).
    #[serde(with = "super::cache::raw_bytes")]
    pub billed: Vec<u8>,
    /// The calls themselves ([`spill::encode_records`]): what frames read.
    #[serde(with = "super::cache::raw_bytes")]
    pub records: Vec<u8>,
}

/// A session as its worker left it, before its bulk goes to the spill. The facts and billed
/// calls are already in the spill's encoding, so the cache stores and restores them as bytes.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Finished {
    pub summary: SessionSummary,
    /// Its [`SessionFacts`] (postcard).
    #[serde(with = "super::cache::raw_bytes")]
    pub facts: Vec<u8>,
    /// Its billed calls.
    pub calls: Encoded,
}

/// What stays in memory of an outcome once its bulk is in the spill. The cache keeps it
/// (the spans, filled in from the cache's [`super::cache::Bulk`], excepted).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) enum Settled {
    Session(Box<SessionSummary>),
    Rejected(Box<RejectedFile>),
}

impl Settled {
    /// The file's path relative to the scanned folder.
    pub fn rel(&self) -> &str {
        match self {
            Settled::Session(s) => &s.rel,
            Settled::Rejected(r) => r.rel(),
        }
    }
}

/// A session's bulk as written to the spill: where, the bytes of each part, and the bytes (for
/// the cache's hash; without a cache they are only dropped).
pub(super) struct Written {
    pub span: Span,
    pub parts: [u64; spill::PARTS],
    pub bytes: Vec<u8>,
}

impl Outcome {
    /// Move the file's bulk to the spill: a session's facts, then its calls' identities,
    /// totals, billed calls and records, one after the other (a transcript's calls without facts).
    pub fn settle(self, spill: &Spill) -> (Settled, Option<Written>) {
        let (facts, calls, settled) = match self {
            Outcome::Rejected(r, None) => return (Settled::Rejected(r), None),
            Outcome::Rejected(r, Some(calls)) => (Vec::new(), calls, Settled::Rejected(r)),
            Outcome::Session(f) => {
                let Finished { summary, facts, calls } = *f;
                (facts, calls, Settled::Session(Box::new(summary)))
            }
        };
        let all = [&facts, &calls.identities, &calls.totals, &calls.billed, &calls.records];
        let parts = all.map(|p| p.len() as u64);
        let bytes = all.map(Vec::as_slice).concat();
        let span = spill.put(&bytes);
        (settled.with_bulk(span, parts), Some(Written { span, parts, bytes }))
    }
}

impl Settled {
    /// The file pointing at its bulk, written at `span` in `parts`.
    pub(super) fn with_bulk(self, span: Span, parts: [u64; spill::PARTS]) -> Settled {
        let [facts, identities, totals, billed, records] = parts;
        let part = |at: u64, len: u64| span.part(at, len).unwrap_or_default();
        let point = |calls: &mut super::Calls| {
            calls.identities = part(facts, identities);
            calls.totals = part(facts + identities, totals);
            calls.billed = part(facts + identities + totals, billed);
            calls.records = part(facts + identities + totals + billed, records);
            calls.count = identities / spill::IDENTITY_BYTES as u64;
        };
        match self {
            Settled::Session(mut s) => {
                s.facts = part(0, facts);
                point(&mut s.calls);
                Settled::Session(s)
            }
            Settled::Rejected(mut r) => {
                if let Some(t) = &mut r.transcript {
                    point(&mut t.calls);
                }
                Settled::Rejected(r)
            }
        }
    }
}

impl Work<'_> {
    /// The outcome of a parsed file.
    pub fn outcome(&self, f: &FoundFile, parsed: ParsedFile) -> Outcome {
        match analyze_parsed(parsed) {
            FileAnalysis::Rejected {
                stats,
                reason,
                pi_entries,
                transcript,
            } => {
                let not_session = crate::analyze::not_a_session(&f.rel, pi_entries);
                let record = FileRecord::rejected(&f.rel, &stats, &reason, not_session, transcript.is_some());
                match transcript {
                    None => Outcome::Rejected(
                        Box::new(RejectedFile {
                            path: f.path.clone(),
                            record,
                            transcript: None,
                        }),
                        None,
                    ),
                    Some(records) => transcript_outcome(f, record, &records, self.forms),
                }
            }
            FileAnalysis::Session(mut a) => {
                let out = Outcome::Session(Box::new(finished(f, &a, self.forms)));
                crate::parse::entry::recycle(std::mem::take(&mut a.tree.entries).into_vec());
                out
            }
        }
    }
}

/// Which forms of a file's calls [`encode_calls`] writes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Forms {
    /// Each call's full record.
    pub records: bool,
    /// Each call's report row ([`super::billed`]).
    pub billed: bool,
}

/// A subagent transcript: its answers as billed calls.
fn transcript_outcome(f: &FoundFile, record: FileRecord, records: &[TranscriptRecord], keep: Forms) -> Outcome {
    let calls = crate::usage::transcript_records(records);
    let (encoded, _) = encode_calls(&calls, keep);
    let first = records.iter().find(|r| r.run_id.is_some());
    let transcript = Transcript {
        calls: Calls::default(),
        run_id: first.and_then(|r| r.run_id.as_deref()).map(str::to_string),
        child_index: first.and_then(|r| r.child_index),
        spawned_by: None,
    };
    let file = RejectedFile {
        path: f.path.clone(),
        record,
        transcript: Some(transcript),
    };
    Outcome::Rejected(Box::new(file), Some(encoded))
}

/// An accepted session: its summary, facts and billed calls.
fn finished(f: &FoundFile, a: &SessionAnalysis, keep: Forms) -> Finished {
    let facts = SessionFacts::of(&f.rel, a);
    let records = &a.accounting.records;
    let (calls, totals) = encode_calls(records, keep);
    let parent = &a.tree.header.parent_session;
    let session_id = a.tree.header.id.as_deref();
    let summary = SessionSummary {
        rel: f.rel.clone(),
        path: f.path.clone(),
        session_id: session_id.map(str::to_string),
        parent_session: js::js_truthy(parent).then(|| js::js_string_of(parent).into_owned()),
        child_calls: child_calls(records),
        runs: subagent_runs(&a.tree.entries),
        repeats: repeats(records),
        compactions: compaction_rows(a),
        started_ms: a.started_ms,
        damaged: a.is_damaged(),
        row: Row {
            project: facts.project.clone(),
            name: a.name.clone(),
            started: facts.started_at.clone(),
            last_activity: facts.last_activity_at.clone(),
            models: facts.models.clone(),
            messages: a.accounting.stats.total_messages,
            totals,
            own: Totals::default(),
            context_tokens: a.context_tokens(),
            compactions: a.compactions.total,
        },
        ..Default::default()
    };
    Finished {
        summary,
        facts: postcard::to_stdvec(&facts).expect("facts encode"),
        calls,
    }
}

/// A file parsed: its entries, where to go on from next time, and its length as read.
pub(super) type FileRead = (ParsedFile, ResumePoint, u64);

/// Open and parse a file (going on from `prefix`): the parsed file, where to go on from
/// next time, and the file's length as read.
pub(super) fn read(f: &FoundFile, prefix: Option<Prefix>, scratch: &mut Scratch) -> Result<FileRead, crate::Error> {
    let mut file = scan::source::open(&f.path)?;
    read_open(f, &mut file, prefix, scratch)
}

/// Parse an open file, going on from `prefix`; a file that changes meanwhile is read again
/// from its start (see [`scan::source::read_steady`]). Files are read, or mapped as
/// `--read-mode` says (see [`scan::map`]).
pub(super) fn read_open(
    f: &FoundFile,
    file: &mut std::fs::File,
    mut prefix: Option<Prefix>,
    scratch: &mut Scratch,
) -> Result<FileRead, crate::Error> {
    let mode = scan::map::mode();
    // Cleared when a parse from a map panicked: the next attempt reads the file.
    let mut map = true;
    scan::source::read_steady_by(&f.path, file, |file, stamp, attempt| {
        if map
            && scan::map::wanted(mode, stamp.modified, std::time::SystemTime::now(), attempt)
            && let Some(mapped) = parse_mapped(f, file, stamp.len, &mut prefix, scratch)
        {
            return Ok(mapped.unwrap_or_else(|what| {
                map = false;
                Attempt::Changed(format!("its bytes changed under a map while they were parsed ({what})"))
            }));
        }
        let read = scratch.read_file(file, stamp.len, prefix.take())?;
        let len = read.2;
        Ok(Attempt::Read((read, len)))
    })
}

/// Map the first `len` bytes of a file (from `prefix`'s end, when given) and parse them; `None`
/// when the file cannot be mapped (it is read then), an error (what the panic said) when the
/// parse panicked.
///
/// The parser is written for bytes that hold still, and a map's do not when someone writes the
/// file meanwhile: a piece cut at a newline can end in another byte by the time it is parsed
/// (seen in CI: Pi-like rewrites under `--read-mode map`). Such a parse is thrown away by the
/// file's stamp anyway, but it may also panic on the way; that panic is caught here, and the
/// next attempt reads the file instead of mapping it. A bug that panics on any bytes panics in
/// that read too, and is reported as one.
fn parse_mapped(
    f: &FoundFile,
    file: &std::fs::File,
    len: u64,
    prefix: &mut Option<Prefix>,
    scratch: &mut Scratch,
) -> Option<Result<Attempt<FileRead>, String>> {
    let from = prefix.as_ref().map_or(0, |p| p.offset);
    if from > len {
        // Shorter than what was parsed before: not the file that was, parsed whole.
        *prefix = None;
    }
    let from = prefix.as_ref().map_or(0, |p| p.offset);
    let map = scan::map::Mapped::new(file, from, len - from).ok()??;
    let parse = std::panic::AssertUnwindSafe(|| {
        scan::map::debug_panic_mapped(&f.path);
        scratch.parse_bytes(map.bytes(), prefix.take(), |done| map.release(done))
    });
    let (parsed, resume) = match std::panic::catch_unwind(parse) {
        Ok(parsed) => parsed,
        Err(payload) => {
            // The buffers may hold anything now: start them afresh.
            *scratch = Scratch::default();
            return Some(Err(crate::error::panic_text(&*payload)));
        }
    };
    if map.truncated() {
        let now = file.metadata().map_or(0, |m| m.len());
        return Some(Ok(Attempt::Changed(format!(
            "cut short to {now} bytes under a map of {len} bytes"
        ))));
    }
    Some(Ok(Attempt::Read(((parsed, resume, len), len))))
}

/// A file that could not be read.
pub(super) fn unreadable(f: &FoundFile, e: crate::Error) -> Outcome {
    use crate::Error;
    let status = match &e {
        Error::Gone { .. } => FileStatus::Gone,
        Error::Changed { .. } => FileStatus::Changed,
        Error::Read { .. } | Error::NotAFile { .. } | Error::Spill { .. } => FileStatus::Unreadable,
    };
    Outcome::Rejected(Box::new(record(f, status, e.to_string())), None)
}

/// A file with no session pisa could read, and why.
pub(super) fn record(f: &FoundFile, status: FileStatus, reason: String) -> RejectedFile {
    RejectedFile {
        path: f.path.clone(),
        record: FileRecord {
            path: f.rel.clone(),
            status,
            reason,
        },
        transcript: None,
    }
}

/// One [`CompactionRow`] per compaction entry of a session.
fn compaction_rows(a: &SessionAnalysis) -> Vec<CompactionRow> {
    use crate::usage::Source;
    let t = &a.tree;
    let records = &a.accounting.records;
    a.compactions()
        .map(|(eff, e, c)| {
            let own = records
                .iter()
                .find(|r| r.source == Source::Compaction && r.entry == eff.entry);
            let answer = records
                .iter()
                .rev()
                .find(|r| r.source == Source::Assistant && r.entry < eff.entry);
            let tokens_before = c.tokens_before.as_ref().and_then(Value::as_f64);
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            std::hash::Hash::hash(&(e.timestamp.as_deref(), tokens_before.map(f64::to_bits)), &mut h);
            std::hash::Hash::hash(&c.summary_chars.map(f64::to_bits), &mut h);
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
                retains_none: crate::project::retains_none(e),
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
                identity: h.digest128(),
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

fn record_totals(r: &UsageRecord) -> Totals {
    let mut t = Totals::default();
    t.add_record(r);
    t
}

/// Billed calls in the spill's encoding (the forms `keep` asks for), and their sum (in file
/// order).
fn encode_calls(records: &[UsageRecord], keep: Forms) -> (Encoded, Totals) {
    let mut e = Encoded::default();
    spill::encode_identities(records.iter().map(|r| r.identity), &mut e.identities);
    let mut totals = Totals::default();
    spill::encode_totals(
        records.iter().map(record_totals).inspect(|t| totals.merge(t)),
        &mut e.totals,
    );
    if keep.billed {
        super::billed::encode(records, &mut e.billed);
    }
    if keep.records {
        spill::encode_records(records, &mut e.records);
    }
    (e, totals)
}

/// The calls that repeat an earlier entry of the file: the same entry id and the same call.
/// Pi counts such a line twice in its own figures; it is one call.
fn repeats(records: &[UsageRecord]) -> Vec<u32> {
    let mut seen: hashbrown::HashSet<(&str, u128)> = hashbrown::HashSet::new();
    let mut out = Vec::new();
    for (k, r) in records.iter().enumerate() {
        if let Some(id) = r.entry_id.as_deref()
            && !seen.insert((id, r.identity))
        {
            out.push(k as u32);
        }
    }
    out
}

/// The subagent runs a session's tool results name, each once, in file order.
fn subagent_runs(entries: &[Entry]) -> Vec<String> {
    let mut runs: Vec<String> = Vec::new();
    for e in entries {
        if let Body::Message(m) = &e.body {
            for run in &m.subagent_runs {
                if !runs.iter().any(|r| **r == **run) {
                    runs.push(run.to_string());
                }
            }
        }
    }
    runs
}

/// The children of a session's subagent tool results, by the call that stands for each.
fn child_calls(records: &[UsageRecord]) -> Vec<ChildCall> {
    let child = |(call, r): (usize, &UsageRecord)| {
        let c = r.child.as_deref()?;
        Some(ChildCall {
            call: call as u32,
            run_id: c.run_id.as_deref().map(str::to_string),
            index: c.index,
            session_file: c.session_file.as_deref().map(str::to_string),
        })
    };
    records.iter().enumerate().filter_map(child).collect()
}
