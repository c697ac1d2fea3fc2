//! A whole directory: every file through [`analyze`](crate::analyze) in parallel, then the
//! cross-session figures (fork deduplication, parents found in the corpus, totals).
//!
//! - `worker`: one file on one core, into plain data: a session's [`SessionFacts`], its
//!   billed calls and a [`SessionSummary`], or a [`FileRecord`].
//! - `cached`: the same through the [`cache`], which keeps what was learnt of each file.
//! - [`spill`]: where a session's facts and calls wait for the cross-session step, so memory
//!   does not grow with the corpus.
//! - `dedup`: each billed call counted once across sessions (forks copy their parent's).
//!
//! Each worker keeps its own [`Scratch`]; a file's bytes are read, analysed and dropped before
//! the next file. Its billed calls wait in the spill, read back one file at a time by whatever
//! needs them ([`Corpus::each_billed`], [`Corpus::each_file`]), so no frame holds them all
//! unless one is asked for. Nothing here renders: reports read the corpus afterwards.

pub mod billed;
pub mod cache;
mod cached;
mod dedup;
pub mod lock;
pub mod spill;
mod subagents;
mod worker;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::analyze::{FileRecord, FileStatus, SessionFacts};
use crate::error::ScanIssue;
use crate::parse::Scratch;
use crate::scan::{self, FoundFile};
use crate::usage::Totals;
use cache::Cache;
use spill::{Span, Spill};

/// The file (a session, or a subagent transcript) that billed calls come from.
#[derive(Debug, Clone, Copy)]
pub struct SessionRef<'a> {
    /// Relative to the scanned folder.
    pub rel: &'a str,
    pub session_id: Option<&'a str>,
    pub project: &'a str,
}

/// Told how a scan goes (a progress bar).
pub trait Progress: Sync {
    /// The files were found.
    fn started(&self, _files: usize, _bytes: u64) {}
    /// A file of `bytes` bytes is done.
    fn done(&self, _bytes: u64) {}
}

/// No progress shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {}

/// One compaction entry's effect, with what the frames need to place it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
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

/// Why a billed call is left out of a corpus's totals: another record holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inherited {
    /// A session earlier in the corpus holds the same call (a fork copied it).
    Copy,
    /// A subagent tool result's part for a child whose own session is in the corpus.
    Child,
    /// The same, for a child whose transcript is in the corpus (and its session is not).
    Transcript,
    /// A transcript's copy of an answer that a session in the corpus holds.
    Session,
    /// The same entry (id and call) earlier in the same file: a line written twice.
    Repeat,
}

impl Inherited {
    /// The name in frames and reports.
    pub fn name(self) -> &'static str {
        match self {
            Inherited::Copy => "copy",
            Inherited::Child => "child",
            Inherited::Transcript => "transcript",
            Inherited::Session => "session",
            Inherited::Repeat => "repeat",
        }
    }
}

/// The billed calls of a file, waiting in the spill, and what the corpus step decided of them.
#[derive(Debug, Clone, Default)]
pub struct Calls {
    /// The identity of each call, in file order.
    pub identities: Span,
    /// The totals of each call.
    pub totals: Span,
    /// What reports need of each call ([`Corpus::billed`]).
    pub billed: Span,
    /// The calls themselves ([`Corpus::records`]).
    pub records: Span,
    pub count: u64,
    /// The calls another record holds: their indices (ascending) and why.
    pub inherited: Vec<(u32, Inherited)>,
    /// The sum over the calls the file owns.
    pub own: Totals,
}

impl Calls {
    /// Why each call is left out, in file order (`None`: counted).
    pub fn reasons(&self) -> impl Iterator<Item = Option<Inherited>> + '_ {
        let mut inherited = self.inherited.iter().peekable();
        (0..self.count as u32).map(move |k| inherited.next_if(|(i, _)| *i == k).map(|(_, why)| *why))
    }
}

/// A subagent tool result's part for one child (a [`crate::usage::Source::Subagent`] call).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ChildCall {
    /// The call's index among the session's calls.
    pub call: u32,
    pub run_id: Option<String>,
    pub index: u32,
    /// The child's session file, as the machine that wrote it named it.
    pub session_file: Option<String>,
}

/// What stays in memory of one accepted session after its worker is done. The cache keeps
/// it as its worker left it (the spans excepted).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct SessionSummary {
    pub rel: String,
    pub path: PathBuf,
    /// Its [`SessionFacts`] in the corpus's spill ([`Corpus::facts`]).
    #[serde(skip)]
    pub facts: Span,
    /// Its billed calls.
    #[serde(skip)]
    pub calls: Calls,
    /// Its subagent tool results' parts, one per child.
    pub child_calls: Vec<ChildCall>,
    /// The subagent runs its tool results name (with or without usage), each once.
    pub runs: Vec<String>,
    /// Its calls that repeat an earlier entry of the file, id and call alike (a line written
    /// twice: one call), ascending.
    pub repeats: Vec<u32>,
    /// The session that spawned it as a subagent (set by the corpus step).
    #[serde(skip)]
    pub spawned_by: Option<String>,
    /// The sessions it spawned (set by the corpus step).
    #[serde(skip)]
    pub children: Vec<String>,
    /// What its subagents cost: the calls its children (and theirs) own, the transcripts of
    /// children whose session is missing, and its tool results' parts for children found
    /// nowhere else (set by the corpus step).
    #[serde(skip)]
    pub subagent: Totals,
    /// Header `id`.
    pub session_id: Option<String>,
    /// `parentSession` as a string, when it is truthy.
    pub parent_session: Option<String>,
    /// The scanned file that `parentSession` names (set by the corpus step).
    pub parent_in_corpus: Option<String>,
    /// One row per compaction entry, in file order.
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
    /// Header `cwd`, else the folder name decoded.
    pub project: String,
    pub name: Option<String>,
    /// ISO 8601 UTC, as in the facts.
    pub started: Option<String>,
    pub last_activity: Option<String>,
    pub models: Vec<String>,
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
    /// Where it is.
    pub path: PathBuf,
    pub record: FileRecord,
    /// A subagent transcript's answers.
    pub transcript: Option<Transcript>,
}

/// The answers a subagent transcript artifact holds: copies of its child's calls, counted only
/// where no session holds them.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Transcript {
    #[serde(skip)]
    pub calls: Calls,
    /// `runId` and `childIndex` of its records.
    pub run_id: Option<String>,
    pub child_index: Option<u32>,
    /// The session whose subagent run it records (set by the corpus step).
    #[serde(skip)]
    pub spawned_by: Option<String>,
}

impl RejectedFile {
    /// Relative to the scanned folder.
    pub fn rel(&self) -> &str {
        &self.record.path
    }
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
    /// Where the sessions' facts and calls wait (see [`spill`]).
    pub spill: Arc<Spill>,
    /// The scan kept no full records ([`Keep::Reports`], [`Keep::Totals`]) to read back: none
    /// spilled, or, through the cache, none checked against their hash.
    pub records_dropped: bool,
    /// The scan kept no report rows ([`Keep::Records`], [`Keep::Totals`]) to read back (as
    /// `records_dropped` says of the records).
    pub billed_dropped: bool,
}

/// What a scan keeps of each billed call for after the scan, besides its identity and totals.
/// A scan through the cache keeps both forms whatever it is asked, so that a later command
/// finds what it reads there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Keep {
    /// The full records and the rows reports read.
    #[default]
    All,
    /// Only the full records: `export` and `query`, which read nothing else of a call.
    Records,
    /// Only what reports read ([`billed`]'s fixed-width rows): the reports, and `sessions` when
    /// it prices calls anew. Encoding and spilling full records was 3 % of a scan's
    /// instructions and most of the spill's bytes.
    Reports,
    /// Neither: `sessions` with Pi's own figures reads only each call's identity and totals.
    /// The report rows were two thirds of what it spilled (20 of 32 MB on the benchmark
    /// corpus) and 2 % of its time.
    Totals,
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
        self.rejected.iter().any(|r| !r.record.not_session()) || !self.issues.is_empty() || self.damaged() > 0
    }

    /// Files Pi refuses that are not sessions at all (see [`FileRecord::not_session`]).
    pub fn not_sessions(&self) -> impl Iterator<Item = &RejectedFile> {
        self.rejected.iter().filter(|r| r.record.not_session())
    }

    /// Its subagent transcripts (also among [`Corpus::not_sessions`]).
    pub fn transcripts(&self) -> impl Iterator<Item = &RejectedFile> {
        self.rejected.iter().filter(|r| r.transcript.is_some())
    }

    /// The facts of one of its sessions, read back from the spill.
    pub fn facts(&self, s: &SessionSummary) -> std::io::Result<SessionFacts> {
        let bytes = self.spill.get(s.facts)?;
        postcard::from_bytes(&bytes).map_err(std::io::Error::other)
    }
}

/// A file that may hold billed calls ([`Corpus::call_files`]), its calls not read yet.
#[derive(Debug)]
pub struct CallFile<'a> {
    rel: &'a str,
    session_id: Option<&'a str>,
    /// A transcript's is made of its path.
    project: std::borrow::Cow<'a, str>,
    /// The session that spawned it as a subagent.
    pub spawned_by: Option<&'a str>,
    pub calls: &'a Calls,
}

impl CallFile<'_> {
    /// The file the calls come from.
    pub fn file(&self) -> SessionRef<'_> {
        SessionRef {
            rel: self.rel,
            session_id: self.session_id,
            project: &self.project,
        }
    }
}

/// The billed calls of one file, as [`Corpus::each_file`] and [`Corpus::each_billed`] hand
/// them out.
#[derive(Debug)]
pub struct FileCalls<'a, T> {
    pub file: SessionRef<'a>,
    /// The session that spawned it as a subagent.
    pub spawned_by: Option<&'a str>,
    /// What the corpus step decided of them.
    pub calls: &'a Calls,
    /// The calls, in file order: full records, or what reports need of them.
    pub read: T,
}

/// An error when a file's calls are asked for in a form the scan did not keep (`dropped`): a
/// command read what it said it would not ([`Keep`]), a bug; never an empty list instead.
fn refuse_dropped(dropped: bool, calls: &Calls, form: &str) -> std::io::Result<()> {
    if dropped && calls.count > 0 {
        return Err(std::io::Error::other(format!(
            "pisa kept no {form} of the billed calls (a bug in pisa: please report it)"
        )));
    }
    Ok(())
}

/// Files whose calls are read back at once (in parallel), at most.
const WINDOW: usize = 64;
/// Bytes of spilled calls read back at once, at most (unless one file holds more).
const WINDOW_BYTES: u64 = 2 << 20;

impl Corpus {
    /// The billed calls of a file, read back from the spill.
    pub fn records(&self, calls: &Calls) -> std::io::Result<spill::Records> {
        refuse_dropped(self.records_dropped, calls, "full records")?;
        if calls.records.is_empty() {
            return Ok(spill::Records::default());
        }
        Ok(spill::Records::new(self.spill.get(calls.records)?))
    }

    /// What reports need of the billed calls of a file, read back from the spill.
    pub fn billed(&self, calls: &Calls) -> std::io::Result<billed::BilledCalls> {
        refuse_dropped(self.billed_dropped, calls, "report rows")?;
        billed::BilledCalls::new(self.spill.get(calls.billed)?)
    }

    /// Visit every file's billed calls ([`Corpus::records`]) in the usage frame's order: the
    /// sessions by path, then the transcripts by path, each file's calls in file order. A
    /// window of files is read back in parallel, then visited one after the other, so sums
    /// come out the same on every run and memory holds a window, not the corpus.
    pub fn each_file<E: From<std::io::Error>>(
        &self,
        visit: impl FnMut(FileCalls<'_, spill::Records>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.each_read(|c| c.records.len(), |c| self.records(c), visit)
    }

    /// [`Corpus::each_file`] with what reports need of each call ([`Corpus::billed`]).
    pub fn each_billed<E: From<std::io::Error>>(
        &self,
        visit: impl FnMut(FileCalls<'_, billed::BilledCalls>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.each_read(|c| c.billed.len(), |c| self.billed(c), visit)
    }

    /// [`Corpus::each_billed`], with `then` made of each file's calls on the thread pool as the
    /// file is read back (what needs no call before it), and visited beside them.
    pub fn each_billed_then<U: Send, E: From<std::io::Error>>(
        &self,
        then: impl Fn(&billed::BilledCalls) -> U + Sync,
        visit: impl FnMut(FileCalls<'_, (billed::BilledCalls, U)>) -> Result<(), E>,
    ) -> Result<(), E> {
        let read = |c: &Calls| {
            let calls = self.billed(c)?;
            let made = then(&calls);
            Ok((calls, made))
        };
        self.each_read(|c| c.billed.len(), read, visit)
    }

    /// The files that may hold billed calls, unread, in the usage frame's order: the sessions
    /// by path, then the transcripts by path.
    pub fn call_files(&self) -> Vec<CallFile<'_>> {
        let sessions = self.sessions.iter().map(|s| CallFile {
            rel: &s.rel,
            session_id: s.session_id.as_deref(),
            project: std::borrow::Cow::Borrowed(&s.row.project),
            spawned_by: s.spawned_by.as_deref(),
            calls: &s.calls,
        });
        let transcripts = self.rejected.iter().filter_map(|r| {
            let t = r.transcript.as_ref()?;
            Some(CallFile {
                rel: r.rel(),
                session_id: None,
                project: std::borrow::Cow::Owned(crate::analyze::project_of_path(r.rel())),
                spawned_by: t.spawned_by.as_deref(),
                calls: &t.calls,
            })
        });
        sessions.chain(transcripts).collect()
    }

    /// Visit the files one by one, read in windows of at most [`WINDOW`] files and
    /// [`WINDOW_BYTES`] bytes (as `bytes` counts a file's), each window's files `read` in
    /// parallel before any of them is visited. The next window is read while this one is
    /// visited: the visits run on the calling thread, one after the other, and the thread pool
    /// would otherwise wait for them.
    fn each_read<T: Send, E: From<std::io::Error>>(
        &self,
        bytes: impl Fn(&Calls) -> u64,
        read: impl Fn(&Calls) -> std::io::Result<T> + Sync,
        mut visit: impl FnMut(FileCalls<'_, T>) -> Result<(), E>,
    ) -> Result<(), E> {
        let files = self.call_files();
        let mut windows = Vec::new();
        let mut rest = &files[..];
        while !rest.is_empty() {
            let mut total = 0;
            let n = rest
                .iter()
                .take(WINDOW)
                .take_while(|f| {
                    total += bytes(f.calls);
                    total <= WINDOW_BYTES
                })
                .count()
                .max(1);
            let (window, next) = rest.split_at(n);
            windows.push(window);
            rest = next;
        }
        let read_window = |window: &[CallFile<'_>]| {
            window
                .par_iter()
                .map(|f| read(f.calls))
                .collect::<std::io::Result<Vec<T>>>()
        };
        let mut ahead = windows.first().map(|w| read_window(w));
        for (i, window) in windows.iter().enumerate() {
            let read = ahead.take().expect("each window is read before it is visited")?;
            let mut next = None;
            // The calling thread visits; the pool reads the next window meanwhile. A failed
            // visit returns once that read is done (the scope waits for it).
            rayon::in_place_scope(|scope| {
                if let Some(w) = windows.get(i + 1) {
                    scope.spawn(|_| next = Some(read_window(w)));
                }
                for (f, read) in window.iter().zip(read) {
                    visit(FileCalls {
                        file: f.file(),
                        spawned_by: f.spawned_by,
                        calls: f.calls,
                        read,
                    })?;
                }
                Ok::<_, E>(())
            })?;
            ahead = next;
        }
        Ok(())
    }
}

impl SessionSummary {
    /// Calls another record holds (after the corpus step).
    pub fn inherited_calls(&self) -> u64 {
        self.calls.inherited.len() as u64
    }
}

/// Find the session files under `roots` and analyse them, through `cache` when given (the
/// result is the same without it).
pub fn scan(roots: &[PathBuf], progress: &dyn Progress, cache: Option<&Cache>) -> Result<Corpus, crate::Error> {
    scan_keeping(roots, progress, cache, Keep::All)
}

/// [`scan`], keeping `keep` of each billed call.
pub fn scan_keeping(
    roots: &[PathBuf],
    progress: &dyn Progress,
    cache: Option<&Cache>,
    keep: Keep,
) -> Result<Corpus, crate::Error> {
    let found = scan::discover(roots);
    progress.started(found.files.len(), found.files.iter().map(|f| f.size).sum());
    let mut corpus = analyze_files(&found.files, progress, cache, keep)?;
    corpus.issues.extend(found.issues);
    Ok(corpus)
}

/// Analyse the given files (largest first is best) in parallel, keeping `keep` of each call.
pub fn analyze_files(
    files: &[FoundFile],
    progress: &dyn Progress,
    cache: Option<&Cache>,
    keep: Keep,
) -> Result<Corpus, crate::Error> {
    let bytes = AtomicU64::new(0);
    let spill = Arc::new(cache.map_or_else(Spill::new, Cache::spill));
    let slots: Vec<Mutex<Scratch>> = (0..rayon::current_num_threads()).map(|_| Mutex::default()).collect();
    let reads = worker::Forms {
        records: matches!(keep, Keep::All | Keep::Records),
        billed: matches!(keep, Keep::All | Keep::Reports),
    };
    let forms = worker::Forms {
        records: reads.records || cache.is_some(),
        billed: reads.billed || cache.is_some(),
    };
    let work = worker::Work {
        cache,
        spill: &spill,
        forms,
        reads,
    };
    let mut outcomes: Vec<worker::Settled> = files
        .par_iter()
        // One file per task: an idle core can take any file not yet begun. With runs of files
        // that one core works through alone, the other waited up to a fifth of a scan at its end.
        .with_max_len(1)
        .map(|f| {
            let out = with_scratch(&slots, |scratch| analyze_one(&work, f, scratch));
            bytes.fetch_add(f.size, Ordering::Relaxed);
            progress.done(f.size);
            out
        })
        .collect();
    rayon::broadcast(|_| crate::parse::entry::free_spare());
    // In the corpus's order (by path, see [`Corpus::finish`]) while they are boxes: sorted
    // there, each session (752 bytes) was moved about a dozen times (1-2 ms of the main
    // thread alone on the 1.5 GB corpus). The sort there then finds them in order.
    outcomes.sort_by(|a, b| crate::js::cmp_utf16(a.rel(), b.rel()));
    let mut corpus = Corpus {
        bytes: bytes.into_inner(),
        spill,
        records_dropped: !reads.records,
        billed_dropped: !reads.billed,
        ..Default::default()
    };
    // Exactly as many as there are: the sessions are most of what a scan keeps in memory.
    let sessions = outcomes
        .iter()
        .filter(|o| matches!(o, worker::Settled::Session(_)))
        .count();
    corpus.sessions.reserve_exact(sessions);
    corpus.rejected.reserve_exact(outcomes.len() - sessions);
    for o in outcomes {
        match o {
            worker::Settled::Session(s) => corpus.sessions.push(*s),
            worker::Settled::Rejected(r) => corpus.rejected.push(*r),
        }
    }
    corpus.finish().map_err(|cause| crate::Error::Spill { cause })?;
    Ok(corpus)
}

/// Analyse one file. A panic (a bug in pisa) costs only this file, which is reported.
fn analyze_one(work: &worker::Work<'_>, f: &FoundFile, scratch: &mut Scratch) -> worker::Settled {
    let run = || match work.cache {
        Some(c) => cached::analyze(work, f, scratch, c),
        None => match worker::read(f, None, scratch) {
            Ok((parsed, _, _)) => work.outcome(f, parsed).settle(work.spill).0,
            Err(e) => worker::unreadable(f, e).settle(work.spill).0,
        },
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(settled) => settled,
        Err(payload) => {
            // The scratch buffers may hold anything now: start them afresh.
            *scratch = Scratch::default();
            let what = crate::error::panic_text(&*payload);
            let reason = format!("internal error in pisa while reading this file ({what}); please report it");
            worker::Settled::Rejected(Box::new(worker::record(f, FileStatus::Failed, reason)))
        }
    }
}

/// Run `f` with this core's buffers, or, when they are in use (this core took up a file while
/// waiting for help with another, see `FileParser::lines_parallel`), with fresh ones.
fn with_scratch<T>(slots: &[Mutex<Scratch>], f: impl FnOnce(&mut Scratch) -> T) -> T {
    let own = rayon::current_thread_index().and_then(|i| slots.get(i)?.try_lock().ok());
    match own {
        Some(mut scratch) => f(&mut scratch),
        None => f(&mut Scratch::default()),
    }
}
