//! `pisa`: argument parsing → run → error-to-exit-code mapping.
//!
//! Exit codes: 0 when every session was read (files that are not Pi sessions are skipped as Pi
//! skips them), 2 when a session was damaged or could not be loaded or a file or folder could
//! not be read (the others are still reported), 1 on a usage error or when nothing could be
//! scanned. A demo run of the bundled sample exits 0: its damaged files are there on purpose.

mod cli;
mod demo;

use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{CommandFactory, Parser};
use cli::{BenchArgs, Cli, Command, ExportArgs, Input, InspectArgs, QueryArgs, ReportArgs, SessionsArgs, Zone};
use pisa::corpus::Keep;
use pisa::corpus::{self, Corpus};
use pisa::frame::Frames;
use pisa::report;
use pisa::report::rollup::{self, Group};

/// The cache folder of this run (`None`: `--no-cache`, or no cache folder on this system).
static CACHE_DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // A panic inside a worker is caught and reported with its file (see `corpus`); the
    // default hook would print a Rust backtrace hint to the user first. One on the main
    // thread (or passed on to it by a thread pool) is caught below.
    std::panic::set_hook(Box::new(|_| {}));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli))) {
        Ok(code) => code,
        Err(payload) => {
            say(&format!("internal error: {}; please report it", panic_text(&*payload)));
            ExitCode::from(1)
        }
    }
}

/// What a panic said.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// One line on stderr, with anything a file put in it made safe for a terminal.
fn say(line: &str) {
    eprintln!("pisa: {}", report::terminal_safe(line));
}

fn run(cli: Cli) -> ExitCode {
    let cache_dir = if cli.no_cache {
        None
    } else {
        cli.cache_dir.clone().or_else(pisa::cache::default_dir)
    };
    CACHE_DIR.set(cache_dir).expect("set once");
    if let Some(n) = cli.threads {
        // Only fails when a pool exists already, which cannot happen this early.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
    }
    let result = match cli.command {
        Command::Completions { shell } => completions(shell),
        Command::Man { out } => man(out.as_deref()),
        Command::Sessions(args) => sessions(args),
        Command::Inspect(args) => inspect(args),
        Command::Daily(a) => rollup(a, Group::Daily),
        Command::Weekly(a) => rollup(a, Group::Weekly),
        Command::Monthly(a) => rollup(a, Group::Monthly),
        Command::Session(a) => rollup(a, Group::Session),
        Command::Model(a) => rollup(a, Group::Model),
        Command::Project(a) => rollup(a, Group::Project),
        Command::Kind(a) => rollup(a, Group::Kind),
        Command::Compactions(a) => compactions(a),
        Command::Export(a) => export(a),
        Command::Query(a) => query(a),
        Command::Bench(a) => bench(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            say(&format!("{e:#}"));
            ExitCode::from(1)
        }
    }
}

/// What to scan: the given paths, else Pi's sessions folder, else the bundled sample.
struct Roots {
    paths: Vec<PathBuf>,
    /// The unpacked sample, when that is what is shown (removed on drop).
    demo: Option<tempfile::TempDir>,
}

impl Roots {
    fn of(paths: &[PathBuf], demo: bool) -> Result<Roots> {
        if demo {
            return Roots::demo("--demo");
        }
        if !paths.is_empty() {
            return Ok(Roots {
                paths: paths.to_vec(),
                demo: None,
            });
        }
        let default = pisa::scan::default_root().context("cannot find the home folder; give a path")?;
        if default.exists() {
            return Ok(Roots {
                paths: vec![default],
                demo: None,
            });
        }
        Roots::demo(&format!("there are no sessions at {}", default.display()))
    }

    /// The sample, said on stderr whatever else is silenced (`--json`, `--quiet`).
    fn demo(why: &str) -> Result<Roots> {
        let dir = demo::unpack().context("cannot unpack the bundled sample")?;
        say(&format!(
            "showing the bundled SAMPLE sessions ({} made-up files, some damaged on purpose), not yours: {why}",
            demo::files()
        ));
        Ok(Roots {
            paths: vec![dir.path().to_path_buf()],
            demo: Some(dir),
        })
    }
}

/// Scan the roots with a progress bar on a terminal for scans over 64 MB, through the cache
/// unless it is off or the roots are the sample.
fn scan_with_progress(roots: &Roots, keep: Keep, show: bool) -> Result<Corpus> {
    let found = pisa::scan::discover(&roots.paths);
    let total: u64 = found.files.iter().map(|f| f.size).sum();
    let bar = (show && std::io::stderr().is_terminal() && total > 64 << 20).then(|| {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {bytes}/{total_bytes} {bar:30} {bytes_per_sec} eta {eta}",
            )
            .expect("valid template"),
        );
        b
    });
    let tick = |n: u64| {
        if let Some(b) = &bar {
            b.inc(n);
        }
    };
    let cache = CACHE_DIR
        .get()
        .cloned()
        .flatten()
        .filter(|_| roots.demo.is_none())
        .map(|d| pisa::cache::Cache::open(&d));
    let corpus = corpus::analyze_files(&found.files, keep, Some(&tick), cache.as_ref());
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(cache) = cache {
        for w in cache.warnings() {
            say(&w);
        }
        if let Err(e) = cache.save(&roots.paths) {
            say(&e.to_string());
        }
    }
    let mut corpus = corpus?;
    corpus.issues.extend(found.issues);
    Ok(corpus)
}

/// The time zone of a report or table: `--timezone`, else the system's; and its name.
fn zone(z: &Zone) -> Result<(jiff::tz::TimeZone, String)> {
    Ok(match &z.timezone {
        Some(name) => (
            jiff::tz::TimeZone::get(name)
                .with_context(|| format!("unknown time zone `{name}` (use an IANA name such as Europe/Berlin)"))?,
            name.clone(),
        ),
        None => {
            let tz = jiff::tz::TimeZone::system();
            let name = tz.iana_name().unwrap_or("local").to_string();
            (tz, name)
        }
    })
}

fn sessions(args: SessionsArgs) -> Result<ExitCode> {
    let (tz, tz_name) = zone(&args.zone)?;
    let (roots, corpus) = scan_input(&args.input, Keep::default(), args.json)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        report::sessions_document(&mut report::C1Escaped::new(&mut out), &corpus)?;
    } else {
        report::table::sessions(&mut out, &corpus, &tz, &tz_name, std::io::stdout().is_terminal())?;
    }
    out.flush()?;
    Ok(exit_code(&corpus, &roots))
}

/// 1 when nothing could be scanned, 2 when something that may hold usage was skipped, else 0
/// (always 0 for the sample).
fn exit_code(corpus: &Corpus, roots: &Roots) -> ExitCode {
    if roots.demo.is_some() {
        return ExitCode::SUCCESS;
    }
    if corpus.sessions.is_empty() && corpus.rejected.is_empty() && !corpus.issues.is_empty() {
        return ExitCode::from(1);
    }
    if corpus.skipped_anything() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Damaged, rejected and unreadable files on stderr, one line each, and with `verbose` the
/// files that are not sessions: a reason can quote the file (the type of its first entry) and a
/// name can hold anything, so both are made safe.
fn list_skipped(corpus: &Corpus, verbose: bool, demo: Option<&Path>) {
    // The sample's files by their place in the sample, not in the temporary folder.
    let path = |p: &Path| match demo.and_then(|root| p.strip_prefix(root).ok()) {
        Some(rel) => format!("sample/{}", pisa::scan::path_text(rel)),
        None => pisa::scan::path_text(p),
    };
    for r in &corpus.rejected {
        if !r.not_session {
            say(&format!("skipped {}: {}", path(&r.path), r.reason));
        } else if verbose {
            say(&format!("not a session, skipped {}: {}", path(&r.path), r.reason));
        }
    }
    for i in &corpus.issues {
        say(&format!("cannot scan {}: {}", path(&i.path), i.reason));
    }
    for s in corpus.sessions.iter().filter(|s| s.damaged) {
        let object = match corpus.object(s) {
            Ok(object) => object,
            Err(e) => {
                say(&format!("damaged {}: ({e})", path(&s.path)));
                continue;
            }
        };
        let d = object.get("damage");
        let first = d.and_then(|d| d.get("firstDamage")).filter(|f| !f.is_null());
        say(&match first {
            Some(f) => format!(
                "damaged {}: line {} (byte {}): {}",
                path(&s.path),
                f["line"],
                f["offset"],
                f["reason"].as_str().unwrap_or("")
            ),
            None => format!("damaged {}: parent loop cut on the active path", path(&s.path)),
        });
    }
}

/// Find, read and analyse what `input` names; list what was skipped unless `--quiet`. The
/// progress bar is left out when the output is data (`quiet_output`).
fn scan_input(input: &Input, keep: Keep, quiet_output: bool) -> Result<(Roots, Corpus)> {
    let roots = Roots::of(&input.paths, input.demo)?;
    let corpus = scan_with_progress(&roots, keep, !input.no_progress && !quiet_output)?;
    if !input.quiet {
        list_skipped(&corpus, input.verbose, roots.demo.as_ref().map(tempfile::TempDir::path));
    }
    Ok((roots, corpus))
}

fn report_options(a: &ReportArgs, group: Group) -> Result<rollup::Options> {
    let (tz, tz_name) = zone(&a.zone)?;
    if let (Some(s), Some(u)) = (a.since, a.until)
        && s > u
    {
        bail!("--since {s} is after --until {u}");
    }
    Ok(rollup::Options {
        group,
        tz,
        tz_name,
        since: a.since,
        until: a.until,
        project: a.project.clone(),
        model: a.model.clone(),
        // A model report is already one row per model.
        breakdown: a.breakdown && group != Group::Model,
        order: a.order,
    })
}

fn rollup(a: ReportArgs, group: Group) -> Result<ExitCode> {
    let o = report_options(&a, group)?;
    let (roots, mut corpus) = scan_input(&a.input, Keep { rows: true }, a.json || a.csv)?;
    let frames = Frames::build(&mut corpus, &source_name(None))?;
    let r = rollup::build(&corpus, &frames, &o)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if a.json {
        serde_json::to_writer_pretty(report::C1Escaped::new(&mut out), &rollup::to_json(&r))?;
        writeln!(out)?;
    } else if a.csv {
        pisa::export::encode(&mut rollup::to_frame(&r)?, &mut out, pisa::export::Format::Csv)?;
    } else {
        rollup::table(&mut out, &r, std::io::stdout().is_terminal())?;
    }
    out.flush()?;
    Ok(exit_code(&corpus, &roots))
}

fn compactions(a: ReportArgs) -> Result<ExitCode> {
    let o = report_options(&a, Group::Session)?;
    let (roots, corpus) = scan_input(&a.input, Keep { rows: true }, a.json || a.csv)?;
    let r = report::compactions::build(&corpus, &o);
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if a.json {
        serde_json::to_writer_pretty(report::C1Escaped::new(&mut out), &report::compactions::to_json(&r))?;
        writeln!(out)?;
    } else if a.csv {
        pisa::export::encode(
            &mut report::compactions::to_frame(&r)?,
            &mut out,
            pisa::export::Format::Csv,
        )?;
    } else {
        report::compactions::table(&mut out, &r, std::io::stdout().is_terminal())?;
    }
    out.flush()?;
    Ok(exit_code(&corpus, &roots))
}

/// The `source` column: as given, else the host name.
fn source_name(given: Option<String>) -> String {
    given.unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned())
}

fn export(a: ExportArgs) -> Result<ExitCode> {
    let (roots, mut corpus) = scan_input(&a.input, Keep { rows: true }, false)?;
    let frames = Frames::build(&mut corpus, &source_name(a.source))?;
    let written = pisa::export::export(&frames, &a.out, a.format, a.partition)?;
    for (path, rows) in &written.files {
        eprintln!("pisa: wrote {} ({rows} rows)", path.display());
    }
    Ok(exit_code(&corpus, &roots))
}

fn query(a: QueryArgs) -> Result<ExitCode> {
    let (roots, mut corpus) = scan_input(&a.input, Keep { rows: true }, true)?;
    let frames = Frames::build(&mut corpus, &source_name(a.source))?;
    let mut df = pisa::frame::query(&frames, &a.sql).context("the query failed")?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if a.json {
        let rows: Vec<serde_json::Value> = (0..df.height())
            .map(|i| pisa::export::row_json(&df, i))
            .collect::<Result<_, _>>()?;
        serde_json::to_writer_pretty(report::C1Escaped::new(&mut out), &rows)?;
        writeln!(out)?;
    } else if a.csv {
        pisa::export::encode(&mut df, &mut out, pisa::export::Format::Csv)?;
    } else {
        report::frame_table(&mut out, &df, std::io::stdout().is_terminal())?;
    }
    out.flush()?;
    Ok(exit_code(&corpus, &roots))
}

fn bench(a: BenchArgs) -> Result<ExitCode> {
    let roots = Roots::of(&a.paths, a.demo)?;
    let b = pisa::bench::run(&roots.paths, a.runs);
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if a.json {
        serde_json::to_writer_pretty(&mut out, &b)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{} files, {:.1} MB, {} lines; {} threads; median of {} runs, page cache as it is",
            b.files,
            b.bytes as f64 / 1e6,
            b.lines,
            b.threads,
            a.runs.max(1)
        )?;
        writeln!(out, "{}", pisa::bench::table(&b))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn inspect(args: InspectArgs) -> Result<ExitCode> {
    let mut file = pisa::scan::source::open(&args.file)?;
    let mut scratch = pisa::parse::Scratch::default();
    let parsed = pisa::scan::source::read_steady(&args.file, &mut file, |file| {
        let (parsed, _, len) = scratch.read_file(file, None)?;
        Ok((parsed, len))
    })?;
    let rel = args.file.display().to_string();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let code = match pisa::analyze::analyze_parsed(parsed) {
        pisa::analyze::FileAnalysis::Rejected {
            stats,
            reason,
            pi_entries,
        } => {
            let not_session = !pi_entries && !pisa::scan::pi_session_name(&rel);
            if args.json {
                serde_json::to_writer_pretty(
                    report::C1Escaped::new(&mut out),
                    &report::json::rejected_json(&rel, &stats, &reason, not_session),
                )?;
                writeln!(out)?;
            } else {
                // The reason quotes the file (the first entry's type).
                let what = if not_session { "not a Pi session; " } else { "" };
                writeln!(
                    out,
                    "{}",
                    report::terminal_safe(&format!("{rel}: {what}{}", reason.message()))
                )?;
            }
            ExitCode::from(2)
        }
        pisa::analyze::FileAnalysis::Session(a) => {
            if args.json {
                serde_json::to_writer_pretty(report::C1Escaped::new(&mut out), &report::inspect::to_json(&rel, &a))?;
                writeln!(out)?;
            } else {
                report::inspect::render(&mut out, &rel, &a)?;
            }
            if a.is_damaged() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
    };
    out.flush()?;
    Ok(code)
}

/// A completion script for `shell` on stdout.
fn completions(shell: cli::Shell) -> Result<ExitCode> {
    // Into memory first: `generate` panics when it cannot write (a closed pipe).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "pisa", &mut script);
    std::io::stdout().lock().write_all(&script)?;
    Ok(ExitCode::SUCCESS)
}

/// The manual page on stdout, or a page per command (`pisa.1`, `pisa-sessions.1`, ...) in `out`.
fn man(out: Option<&Path>) -> Result<ExitCode> {
    let cmd = Cli::command();
    match out {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut page)?;
            std::io::stdout().lock().write_all(&page)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir).with_context(|| format!("cannot write into {}", dir.display()))?;
            eprintln!("pisa: wrote the manual pages into {}", dir.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
