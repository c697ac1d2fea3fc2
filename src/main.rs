//! `pisa`: argument parsing → run → error-to-exit-code mapping.
//!
//! Exit codes: 0 when every file was read, 2 when some were rejected, damaged or
//! unreadable, 1 on a usage error or when nothing could be scanned.

use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Parser;
use pisa::cli::{Cli, Command, InspectArgs, SessionsArgs};
use pisa::corpus::{self, Corpus};
use pisa::report;

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
    // default hook would print a Rust backtrace hint to the user first.
    std::panic::set_hook(Box::new(|info| {
        if std::thread::current().name() == Some("main") {
            eprintln!("pisa: internal error: {info} (please report it)");
        }
    }));
    if let Some(n) = cli.threads {
        // Only fails when a pool exists already, which cannot happen this early.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
    }
    let result = match cli.command {
        Command::Sessions(args) => sessions(args),
        Command::Inspect(args) => inspect(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("pisa: {e:#}");
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

fn scan_with_progress(roots: &[PathBuf], show: bool) -> Corpus {
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
    let mut corpus = corpus::analyze_files(&found.files, Some(&tick));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    corpus.issues.extend(found.issues);
    corpus
}

fn sessions(args: SessionsArgs) -> Result<ExitCode> {
    let roots = roots(args.paths)?;
    let corpus = scan_with_progress(&roots, !args.no_progress && !args.json);
    if !args.quiet {
        for r in &corpus.rejected {
            eprintln!("pisa: skipped {}: {}", r.path.display(), r.reason);
        }
        for i in &corpus.issues {
            eprintln!("pisa: cannot scan {}: {}", i.path.display(), i.reason);
        }
        for s in corpus.sessions.iter().filter(|s| s.damaged) {
            let d = s.json.get("damage");
            let first = d.and_then(|d| d.get("firstDamage")).filter(|f| !f.is_null());
            match first {
                Some(f) => eprintln!(
                    "pisa: damaged {}: line {} (byte {}): {}",
                    s.path.display(),
                    f["line"],
                    f["offset"],
                    f["reason"].as_str().unwrap_or("")
                ),
                None => eprintln!("pisa: damaged {}: parent loop cut on the active path", s.path.display()),
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if args.json {
        report::sessions_document(&mut out, &corpus)?;
    } else {
        report::table::sessions(&mut out, &corpus, std::io::stdout().is_terminal())?;
    }
    out.flush()?;
    if corpus.sessions.is_empty() && corpus.rejected.is_empty() && !corpus.issues.is_empty() {
        return Ok(ExitCode::from(1));
    }
    Ok(if corpus.skipped_anything() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn inspect(args: InspectArgs) -> Result<ExitCode> {
    let bytes = pisa::scan::source::load(&args.file)?;
    let mut scratch = pisa::parse::Scratch::default();
    let rel = args.file.display().to_string();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let code = match pisa::analyze::analyze_bytes(&bytes, &mut scratch) {
        pisa::analyze::FileAnalysis::Rejected { stats, reason } => {
            if args.json {
                serde_json::to_writer_pretty(&mut out, &report::json::rejected_json(&rel, &stats, &reason))?;
                writeln!(out)?;
            } else {
                writeln!(out, "{}: {}", report::terminal_safe(&rel), reason.message())?;
            }
            ExitCode::from(2)
        }
        pisa::analyze::FileAnalysis::Session(a) => {
            if args.json {
                serde_json::to_writer_pretty(&mut out, &report::inspect::to_json(&rel, &a))?;
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
