//! One file on one core: read and analysed into plain data, its bulk written to the spill.

use serde_json::Value;

use super::cache::Cache;
use super::spill::{self, Span, Spill};
use super::{CompactionRow, RejectedFile, Row, RowSpan, Rows, SessionRef, SessionSummary};
use crate::analyze::{FileAnalysis, FileRecord, FileStatus, SessionAnalysis, SessionFacts, analyze_parsed};
use crate::js;
use crate::parse::{ParsedFile, Prefix, ResumePoint, Scratch};
use crate::scan::{self, FoundFile};
use crate::usage::Totals;

/// What every file of a scan is analysed with.
pub(super) struct Work<'a, R> {
    pub rows: &'a R,
    pub cache: Option<&'a Cache>,
    pub spill: &'a Spill,
}

/// What a worker makes of a file (and what the cache keeps of it).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) enum Outcome {
    Session(Box<Finished>),
    Rejected(RejectedFile),
}

/// A session as its worker left it, before its bulk goes to the spill. The facts and billed
/// calls are already in the spill's encoding, so the cache stores and restores them as bytes.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Finished {
    pub summary: SessionSummary,
    /// Its [`SessionFacts`] (postcard).
    #[serde(with = "super::cache::raw_bytes")]
    pub facts: Vec<u8>,
    /// The identity of each billed call ([`spill::encode_identities`]).
    #[serde(with = "super::cache::raw_bytes")]
    pub identities: Vec<u8>,
    /// The totals of each billed call ([`spill::encode_totals`]).
    #[serde(with = "super::cache::raw_bytes")]
    pub call_totals: Vec<u8>,
}

/// What stays in memory of an outcome once its bulk is in the spill. The cache keeps it
/// (the spans, filled in from the cache's [`super::cache::Bulk`], excepted).
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) enum Settled {
    Session(Box<SessionSummary>),
    Rejected(Box<RejectedFile>),
}

/// A session's bulk as written to the spill: where, the bytes of each part, and the bytes (for
/// the cache's hash; without a cache they are only dropped).
pub(super) struct Written {
    pub span: Span,
    pub parts: [u64; 3],
    pub bytes: Vec<u8>,
}

impl Outcome {
    /// Move the session's bulk to the spill: its facts, identities and totals, one after the
    /// other.
    pub fn settle(self, spill: &Spill) -> (Settled, Option<Written>) {
        match self {
            Outcome::Rejected(r) => (Settled::Rejected(Box::new(r)), None),
            Outcome::Session(f) => {
                let Finished {
                    summary,
                    facts,
                    identities,
                    call_totals,
                } = *f;
                let parts = [facts.len() as u64, identities.len() as u64, call_totals.len() as u64];
                let mut bytes = Vec::with_capacity(parts.iter().sum::<u64>() as usize);
                bytes.extend_from_slice(&facts);
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
pub(super) fn with_bulk(mut summary: SessionSummary, span: Span, parts: [u64; 3]) -> SessionSummary {
    let [facts, identities, totals] = parts;
    let part = |at: u64, len: u64| span.part(at, len).unwrap_or_default();
    summary.facts = part(0, facts);
    summary.identities = part(facts, identities);
    summary.call_totals = part(facts + identities, totals);
    summary.calls = identities / spill::IDENTITY_BYTES as u64;
    summary
}

impl<R: Rows> Work<'_, R> {
    /// The outcome of a parsed file.
    pub fn outcome(&self, f: &FoundFile, parsed: ParsedFile, part: &mut R::Part) -> Outcome {
        match analyze_parsed(parsed) {
            FileAnalysis::Rejected {
                stats,
                reason,
                pi_entries,
            } => {
                let not_session = crate::analyze::not_a_session(&f.rel, pi_entries);
                Outcome::Rejected(RejectedFile {
                    path: f.path.clone(),
                    record: FileRecord::rejected(&f.rel, &stats, &reason, not_session),
                })
            }
            FileAnalysis::Session(a) => Outcome::Session(Box::new(self.finished(f, &a, part))),
        }
    }

    /// An accepted session: its summary, facts and billed calls, its rows added to `part`.
    fn finished(&self, f: &FoundFile, a: &SessionAnalysis, part: &mut R::Part) -> Finished {
        let facts = SessionFacts::of(&f.rel, a);
        let records = &a.accounting.records;
        let mut identities = Vec::new();
        spill::encode_identities(records.iter().map(|r| r.identity), &mut identities);
        // The session's totals, summed in file order while each call's are encoded.
        let mut totals = Totals::default();
        let mut call_totals = Vec::new();
        spill::encode_totals(
            records.iter().map(record_totals).inspect(|t| totals.merge(t)),
            &mut call_totals,
        );
        let parent = &a.tree.header.parent_session;
        let session_id = a.tree.header.id.as_deref();
        let session = SessionRef {
            rel: &f.rel,
            session_id,
            project: &facts.project,
        };
        let rows = self.rows.add(part, &session, a);
        let summary = SessionSummary {
            rel: f.rel.clone(),
            path: f.path.clone(),
            session_id: session_id.map(str::to_string),
            parent_session: js::js_truthy(parent).then(|| js::js_string_of(parent).into_owned()),
            rows: RowSpan {
                part: 0,
                start: rows.start,
                len: rows.end - rows.start,
            },
            compactions: if R::WANTED { compaction_rows(a) } else { Vec::new() },
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
            identities,
            call_totals,
        }
    }
}

/// Open and parse a file (going on from `prefix`): the parsed file, where to go on from
/// next time, and the file's length as read.
pub(super) fn read(
    f: &FoundFile,
    prefix: Option<Prefix>,
    scratch: &mut Scratch,
) -> Result<(ParsedFile, ResumePoint, u64), crate::Error> {
    let mut file = scan::source::open(&f.path)?;
    read_open(f, &mut file, prefix, scratch)
}

/// Parse an open file, going on from `prefix`; a file that changes meanwhile is read again
/// from its start (see [`scan::source::read_steady`]).
pub(super) fn read_open(
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

/// A file that could not be read.
pub(super) fn unreadable(f: &FoundFile, e: crate::Error) -> Outcome {
    use crate::Error;
    let status = match &e {
        Error::Gone { .. } => FileStatus::Gone,
        Error::Changed { .. } => FileStatus::Changed,
        Error::Read { .. } | Error::NotAFile { .. } | Error::Spill { .. } => FileStatus::Unreadable,
    };
    Outcome::Rejected(record(f, status, e.to_string()))
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
    }
}

/// One [`CompactionRow`] per compaction entry of a session.
fn compaction_rows(a: &SessionAnalysis) -> Vec<CompactionRow> {
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

fn record_totals(r: &crate::usage::UsageRecord) -> Totals {
    let mut t = Totals::default();
    t.add_record(r);
    t
}
