//! `pisa`: argument parsing → run → error-to-exit-code mapping.
//!
//! Exit codes: 0 when every file was read, 2 when some were rejected, damaged or
//! unreadable, 1 on a usage error or when nothing could be scanned.

use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Parser;
use pisa::cli::{BenchArgs, Cli, Command, ExportArgs, Input, InspectArgs, QueryArgs, ReportArgs, SessionsArgs};
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

/// The roots to scan: the given paths, else the default folder, else the bundled sample.
fn roots(paths: Vec<PathBuf>) -> Result<Vec<PathBuf>> {
    if !paths.is_empty() {
        return Ok(paths);
    }
    let default = pisa::scan::default_root().context("cannot find the home folder; give a path")?;
    if default.exists() {
        return Ok(vec![default]);
    }
    let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("datasets")
        .join("sample");
    if sample.exists() {
        eprintln!(
            "pisa: no sessions at {}; showing the bundled sample {}",
            default.display(),
            sample.display()
        );
        return Ok(vec![sample]);
    }
    bail!(
        "no sessions folder at {} (set {} or give a path)",
        default.display(),
        pisa::scan::SESSION_DIR_ENV
    )
}

fn scan_with_progress(roots: &[PathBuf], keep: Keep, show: bool) -> Result<Corpus> {
    let found = pisa::scan::discover(roots);
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
    let cache = CACHE_DIR.get().cloned().flatten().map(|d| pisa::cache::Cache::open(&d));
    let corpus = corpus::analyze_files(&found.files, keep, Some(&tick), cache.as_ref());
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(cache) = cache {
        for w in cache.warnings() {
            say(&w);
        }
        if let Err(e) = cache.save(roots) {
            say(&e.to_string());
        }
    }
    let mut corpus = corpus?;
    corpus.issues.extend(found.issues);
    Ok(corpus)
}

fn sessions(args: SessionsArgs) -> Result<ExitCode> {
    let roots = roots(args.paths)?;
    let corpus = scan_with_progress(&roots, Keep::default(), !args.no_progress && !args.json)?;
    if !args.quiet {
        list_skipped(&corpus);
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        report::sessions_document(&mut report::C1Escaped::new(&mut out), &corpus)?;
    } else {
        report::table::sessions(&mut out, &corpus, std::io::stdout().is_terminal())?;
    }
    out.flush()?;
    Ok(exit_code(&corpus))
}

/// 1 when nothing could be scanned, 2 when something was skipped, else 0.
fn exit_code(corpus: &Corpus) -> ExitCode {
    if corpus.sessions.is_empty() && corpus.rejected.is_empty() && !corpus.issues.is_empty() {
        return ExitCode::from(1);
    }
    if corpus.skipped_anything() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Rejected, unreadable and damaged files on stderr, one line each: a reason can quote the
/// file (the type of its first entry) and a name can hold anything, so both are made safe.
fn list_skipped(corpus: &Corpus) {
    let path = pisa::scan::path_text;
    for r in &corpus.rejected {
        say(&format!("skipped {}: {}", path(&r.path), r.reason));
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

/// Scan for the analytics commands: every record kept, skipped files listed.
fn scan_rows(input: Input, quiet_output: bool) -> Result<Corpus> {
    let roots = roots(input.paths)?;
    let corpus = scan_with_progress(&roots, Keep { rows: true }, !input.no_progress && !quiet_output)?;
    if !input.quiet {
        list_skipped(&corpus);
    }
    Ok(corpus)
}

fn report_options(a: &ReportArgs, group: Group) -> Result<rollup::Options> {
    let (tz, tz_name) = match &a.timezone {
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
    };
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
    let mut corpus = scan_rows(a.input, a.json || a.csv)?;
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
    Ok(exit_code(&corpus))
}

fn compactions(a: ReportArgs) -> Result<ExitCode> {
    let o = report_options(&a, Group::Session)?;
    let corpus = scan_rows(a.input, a.json || a.csv)?;
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
    Ok(exit_code(&corpus))
}

/// The `source` column: as given, else the host name.
fn source_name(given: Option<String>) -> String {
    given.unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned())
}

fn export(a: ExportArgs) -> Result<ExitCode> {
    let mut corpus = scan_rows(a.input, false)?;
    let frames = Frames::build(&mut corpus, &source_name(a.source))?;
    let written = pisa::export::export(&frames, &a.out, a.format, a.partition)?;
    for (path, rows) in &written.files {
        eprintln!("pisa: wrote {} ({rows} rows)", path.display());
    }
    Ok(exit_code(&corpus))
}

fn query(a: QueryArgs) -> Result<ExitCode> {
    let mut corpus = scan_rows(a.input, true)?;
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
    Ok(exit_code(&corpus))
}

fn bench(a: BenchArgs) -> Result<ExitCode> {
    let roots = roots(a.paths)?;
    let b = pisa::bench::run(&roots, a.runs);
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
        pisa::analyze::FileAnalysis::Rejected { stats, reason } => {
            if args.json {
                serde_json::to_writer_pretty(
                    report::C1Escaped::new(&mut out),
                    &report::json::rejected_json(&rel, &stats, &reason),
                )?;
                writeln!(out)?;
            } else {
                // The reason quotes the file (the first entry's type).
                writeln!(
                    out,
                    "{}",
                    report::terminal_safe(&format!("{rel}: {}", reason.message()))
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
