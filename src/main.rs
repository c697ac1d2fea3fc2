//! `pisa`: argument parsing → run → error-to-exit-code mapping.
//!
//! Exit codes: 0 when every session was read (files that are not Pi sessions are skipped as Pi
//! skips them), 2 when a session was damaged or could not be loaded or a file or folder could
//! not be read (the others are still reported), 1 on a usage error or when nothing could be
//! scanned. A demo run of the bundled sample exits 0: its damaged files are there on purpose.

mod bench;
mod cli;
mod demo;
mod live_commands;

use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{CommandFactory, Parser};
use cli::{
    BenchArgs, Cli, Command, Compat, Costing, ExportArgs, Filters, HtmlArgs, Input, InspectArgs, PricingArgs,
    QueryArgs, ReportArgs, SessionsArgs, Zone,
};
use pisa::config::Config;
use pisa::corpus::cache::Cache;
use pisa::corpus::{self, Corpus, Keep};
use pisa::frame::Frames;
use pisa::pricing::{CostMode, Pricing};
use pisa::report;
use pisa::report::rollup::{self, Group};

fn main() -> ExitCode {
    few_malloc_arenas();
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
            let what = pisa::error::panic_text(&*payload);
            say(&format!("internal error: {what}; please report it"));
            ExitCode::from(1)
        }
    }
}

/// One line on stderr, with anything a file put in it made safe for a terminal.
fn say(line: &str) {
    eprintln!("pisa: {}", report::terminal_safe(line));
}

/// What every command runs with.
struct Ctx {
    /// The cache folder (`None`: `--no-cache`, or no cache folder on this system).
    cache_dir: Option<PathBuf>,
    /// The config file's settings (defaults when there is none).
    config: Config,
    /// `--pricing-from`.
    pricing_from: Option<PathBuf>,
    /// The prices, read once per run (a registry folder is a megabyte of JSON).
    pricing: std::sync::OnceLock<Pricing>,
}

impl Ctx {
    /// The prices: the registry (embedded, or `--pricing-from`'s, or the config's
    /// `pricing_from`), the config's overrides and billing plans.
    fn pricing(&self) -> Result<&Pricing> {
        if let Some(p) = self.pricing.get() {
            return Ok(p);
        }
        let p = self.config.pricing(self.pricing_from.as_deref())?;
        Ok(self.pricing.get_or_init(|| p))
    }

    /// `--cost`, else the config's `cost`, else `recorded`.
    fn cost_mode(&self, c: &Costing) -> CostMode {
        c.cost.or(self.config.cost).unwrap_or_default()
    }
}

fn run(cli: Cli) -> ExitCode {
    let config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            say(&e.to_string());
            return ExitCode::from(1);
        }
    };
    let ctx = Ctx {
        cache_dir: match cli.no_cache {
            true => None,
            false => cli.cache_dir.clone().or_else(pisa::corpus::cache::default_dir),
        },
        config,
        pricing_from: cli.pricing_from.clone(),
        pricing: std::sync::OnceLock::new(),
    };
    pisa::scan::map::set_mode(cli.read_mode);
    if let Some(n) = cli.threads {
        // Only fails when a pool exists already, which cannot happen this early.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build_global();
    }
    let result = match cli.command {
        Command::Completions { shell } => completions(shell),
        Command::Man { out } => man(out.as_deref()),
        Command::Sessions(args) => sessions(&ctx, args),
        Command::Inspect(args) => inspect(args),
        Command::Daily(a) => rollup(&ctx, a, Group::Daily),
        Command::Weekly(a) => rollup(&ctx, a, Group::Weekly),
        Command::Monthly(a) => rollup(&ctx, a, Group::Monthly),
        Command::Session(a) => rollup(&ctx, a, Group::Session),
        Command::Model(a) => rollup(&ctx, a, Group::Model),
        Command::Project(a) => rollup(&ctx, a, Group::Project),
        Command::Kind(a) => rollup(&ctx, a, Group::Kind),
        Command::Compactions(a) => compactions(&ctx, a),
        Command::Report(a) => html_report(&ctx, a),
        Command::Export(a) => export(&ctx, a),
        Command::Query(a) => query(&ctx, a),
        Command::Pricing(a) => pricing(&ctx, a),
        Command::Bench(a) => bench(a),
        Command::Status(a) => live_commands::status(&ctx, a),
        Command::Blocks(a) => live_commands::blocks(&ctx, a),
        Command::Watch(a) => live_commands::watch(&ctx, a),
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

/// A progress bar on stderr, for scans over 64 MB when stderr is a terminal.
struct Bar {
    show: bool,
    bar: std::sync::OnceLock<indicatif::ProgressBar>,
}

impl corpus::Progress for Bar {
    fn started(&self, _files: usize, bytes: u64) {
        if self.show && std::io::stderr().is_terminal() && bytes > 64 << 20 {
            let b = indicatif::ProgressBar::new(bytes);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} {bytes}/{total_bytes} {bar:30} {bytes_per_sec} eta {eta}",
                )
                .expect("valid template"),
            );
            let _ = self.bar.set(b);
        }
    }

    fn done(&self, bytes: u64) {
        if let Some(b) = self.bar.get() {
            b.inc(bytes);
        }
    }
}

/// One glibc malloc arena per core and one for the main thread, no more. By default every thread
/// that allocates may get one of its own (up to 8 per core), and each keeps what its thread
/// freed: workers, polars' pool and the Parquet encoder made `pisa export` peak at 74 MB on a
/// 1.5 GB corpus where its heap never held more than 31 MB. With fewer arenas than workers, two
/// workers could be given the same one and wait on its lock for every allocation: on 2 cores
/// with 2 arenas, one scan in two of a 15 GB corpus took twice as long, a fifth of it in futex
/// calls.
fn few_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let arenas = libc::c_int::try_from(cores + 1).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only sets an option of glibc's allocator; it is called before any
        // other thread exists, and a value it refuses leaves the default.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// A scan of what `input` names: the corpus, and whether it is the sample.
struct Scanned {
    roots: Roots,
    /// Never freed: the process ends soon after its command is done with it, and the system
    /// takes its memory back at once. Freed, its allocations took the main thread 5-7 ms at
    /// the end of a scan of the 1.5 GB corpus, the other core idle (the sample's folder, in
    /// `roots`, is still removed).
    corpus: std::mem::ManuallyDrop<Corpus>,
}

/// Find, read and analyse what `input` names, through the cache unless it is off or the
/// roots are the sample, keeping `keep` of each billed call; list what was skipped unless
/// `--quiet`. The progress bar is left out when the output is data (`quiet_output`).
fn scan(ctx: &Ctx, input: &Input, quiet_output: bool, keep: Keep) -> Result<Scanned> {
    let roots = Roots::of(&input.paths, input.demo)?;
    let bar = Bar {
        show: !input.no_progress && !quiet_output,
        bar: std::sync::OnceLock::new(),
    };
    let cache = ctx
        .cache_dir
        .as_deref()
        .filter(|_| roots.demo.is_none())
        .map(Cache::open);
    let scanned = corpus::scan_keeping(&roots.paths, &bar, cache.as_ref(), keep);
    if let Some(b) = bar.bar.get() {
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
    let corpus = scanned?;
    if !input.quiet {
        list_skipped(&corpus, input.verbose, roots.demo.as_ref().map(tempfile::TempDir::path))?;
    }
    Ok(Scanned {
        roots,
        corpus: std::mem::ManuallyDrop::new(corpus),
    })
}

/// Damaged, rejected and unreadable files on stderr, one line each, and with `verbose` the
/// files that are not sessions: a reason can quote the file (the type of its first entry) and a
/// name can hold anything, so both are made safe.
fn list_skipped(corpus: &Corpus, verbose: bool, demo: Option<&Path>) -> std::io::Result<()> {
    // The sample's files by their place in the sample, not in the temporary folder.
    let path = |p: &Path| match demo.and_then(|root| p.strip_prefix(root).ok()) {
        Some(rel) => format!("sample/{}", pisa::paths::path_text(rel)),
        None => pisa::paths::path_text(p),
    };
    for r in &corpus.rejected {
        if !r.record.not_session() {
            say(&format!("skipped {}: {}", path(&r.path), r.record.reason));
        } else if verbose {
            say(&format!(
                "not a session, skipped {}: {}",
                path(&r.path),
                r.record.reason
            ));
        }
    }
    for i in &corpus.issues {
        say(&format!("cannot scan {}: {}", path(&i.path), i.reason));
    }
    for s in corpus.sessions.iter().filter(|s| s.damaged) {
        say(&match corpus.facts(s)?.damage.first_damage {
            Some(d) => format!(
                "damaged {}: line {} (byte {}): {}",
                path(&s.path),
                d.line,
                d.offset,
                d.reason
            ),
            None => format!("damaged {}: parent loop cut on the active path", path(&s.path)),
        });
    }
    Ok(())
}

/// 1 when nothing could be scanned, 2 when something that may hold usage was skipped, else 0
/// (always 0 for the sample).
fn exit_code(s: &Scanned) -> ExitCode {
    let corpus = &s.corpus;
    if s.roots.demo.is_some() {
        ExitCode::SUCCESS
    } else if corpus.sessions.is_empty() && corpus.rejected.is_empty() && !corpus.issues.is_empty() {
        ExitCode::from(1)
    } else if corpus.skipped_anything() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// The time zone of a report or table: `--timezone`, else the system's; and its name.
fn zone(ctx: &Ctx, z: &Zone) -> Result<(jiff::tz::TimeZone, String)> {
    Ok(match z.timezone.as_ref().or(ctx.config.timezone.as_ref()) {
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

/// Write to stdout through a buffer (and make sure it is flushed).
fn to_stdout(write: impl FnOnce(&mut BufWriter<std::io::StdoutLock<'static>>) -> Result<()>) -> Result<()> {
    let mut out = BufWriter::new(std::io::stdout().lock());
    write(&mut out)?;
    out.flush()?;
    Ok(())
}

/// A document as pretty JSON, C1 controls escaped.
fn pretty_json(out: &mut impl Write, doc: &impl serde::Serialize) -> Result<()> {
    serde_json::to_writer_pretty(report::C1Escaped::new(&mut *out), doc)?;
    writeln!(out)?;
    Ok(())
}

fn terminal() -> bool {
    std::io::stdout().is_terminal()
}

fn sessions(ctx: &Ctx, args: SessionsArgs) -> Result<ExitCode> {
    let (tz, tz_name) = zone(ctx, &args.zone)?;
    // Pi's own figures are the files' (each call's identity and totals are all the scan keeps);
    // another cost mode prices every call from its report row.
    let mode = ctx.cost_mode(&args.costing);
    let reprices = mode != CostMode::Recorded;
    let keep = if reprices { Keep::Reports } else { Keep::Totals };
    let s = scan(ctx, &args.input, args.json, keep)?;
    let repricing = match reprices {
        true => Some(pisa::frame::Repricing::of(&s.corpus, ctx.pricing()?, mode)?),
        false => None,
    };
    to_stdout(|out| {
        let p = repricing.as_ref();
        match args.json {
            true => report::sessions_document(&mut report::C1Escaped::new(&mut *out), &s.corpus, p)?,
            false => report::table::sessions(out, &s.corpus, &tz, &tz_name, terminal(), p)?,
        }
        Ok(())
    })?;
    Ok(exit_code(&s))
}

fn report_options(ctx: &Ctx, a: &ReportArgs, group: Group) -> Result<rollup::Options> {
    let mut o = options(ctx, &a.filters, group)?;
    // A model report is already one row per model; ccusage's JSON always has the models.
    o.breakdown = (a.breakdown || a.json_compat.is_some()) && group != Group::Model;
    o.order = a.order.map(Into::into);
    Ok(o)
}

/// The options of a report grouped by `group` under the filters `f` (no breakdown, default order).
fn options(ctx: &Ctx, f: &Filters, group: Group) -> Result<rollup::Options> {
    let (tz, tz_name) = zone(ctx, &f.zone)?;
    if let (Some(s), Some(u)) = (f.since, f.until)
        && s > u
    {
        bail!("--since {s} is after --until {u}");
    }
    Ok(rollup::Options {
        group,
        tz,
        tz_name,
        since: f.since,
        until: f.until,
        project: f.project.clone(),
        model: f.model.clone(),
        breakdown: false,
        order: None,
        cost: ctx.cost_mode(&f.costing),
        billing: f.billing,
        price_table: ctx.pricing()?.registry.label.clone(),
    })
}

fn rollup(ctx: &Ctx, a: ReportArgs, group: Group) -> Result<ExitCode> {
    let o = report_options(ctx, &a, group)?;
    if a.json_compat.is_some() && !report::compat::supports(group) {
        bail!("--json-compat ccusage is for the daily, weekly, monthly and session reports");
    }
    let data = a.json || a.csv || a.json_compat.is_some();
    let s = scan(ctx, &a.input, data, Keep::Reports)?;
    let r = rollup::build(&s.corpus, ctx.pricing()?, &o)?;
    to_stdout(|out| {
        if let Some(Compat::Ccusage) = a.json_compat {
            pretty_json(out, &report::compat::ccusage(&r))?;
        } else if a.json {
            pretty_json(out, &rollup::to_json(&r))?;
        } else if a.csv {
            pisa::export::encode(&mut rollup::to_frame(&r)?, out, pisa::export::Format::Csv)?;
        } else {
            rollup::table(out, &r, terminal())?;
        }
        Ok(())
    })?;
    Ok(exit_code(&s))
}

fn compactions(ctx: &Ctx, a: ReportArgs) -> Result<ExitCode> {
    let o = report_options(ctx, &a, Group::Session)?;
    let s = scan(ctx, &a.input, a.json || a.csv, Keep::Reports)?;
    let r = report::compactions::build(&s.corpus, &o);
    to_stdout(|out| {
        if a.json {
            pretty_json(out, &report::compactions::to_json(&r))?;
        } else if a.csv {
            let mut frame = report::compactions::to_frame(&r)?;
            pisa::export::encode(&mut frame, out, pisa::export::Format::Csv)?;
        } else {
            report::compactions::table(out, &r, terminal())?;
        }
        Ok(())
    })?;
    Ok(exit_code(&s))
}

/// The `source` column: as given, else the config's, else the host name.
fn source_name(ctx: &Ctx, given: Option<String>) -> String {
    given
        .or_else(|| ctx.config.source.clone())
        .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned())
}

/// `pisa report --html FILE`: the page, written to a temporary file beside FILE and renamed,
/// so that a reader never sees half a page; its size and the time taken on stderr.
fn html_report(ctx: &Ctx, a: HtmlArgs) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let o = options(ctx, &a.filters, Group::Daily)?;
    let s = scan(ctx, &a.input, false, Keep::Reports)?;
    let page = report::html::gather(&s.corpus, ctx.pricing()?, &o)?;
    let summed = started.elapsed();
    let generated = jiff::Zoned::now()
        .with_time_zone(o.tz.clone())
        .strftime("%Y-%m-%d %H:%M %Z")
        .to_string();
    let dir = match a.html.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).with_context(|| format!("cannot write into {}", dir.display()))?;
    {
        let mut out = BufWriter::new(tmp.as_file_mut());
        report::html::write(&mut out, &page, &generated)?;
        out.flush()?;
    }
    let bytes = tmp.as_file().metadata()?.len();
    // A page to share: readable by others like any file the user writes (a temporary file is 0600).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(&a.html)
        .with_context(|| format!("cannot write {}", a.html.display()))?;
    say(&format!(
        "wrote {} ({:.1} kB) in {:.2} s (scan and sums {:.2} s)",
        a.html.display(),
        bytes as f64 / 1e3,
        started.elapsed().as_secs_f64(),
        summed.as_secs_f64()
    ));
    Ok(exit_code(&s))
}

/// Scan `input` and build the frames of what it holds, costs under `mode`.
fn frames(
    ctx: &Ctx,
    input: &Input,
    source: Option<String>,
    quiet_output: bool,
    mode: CostMode,
) -> Result<(Scanned, Frames)> {
    let pricing = ctx.pricing()?;
    let s = scan(ctx, input, quiet_output, Keep::Records)?;
    let frames = Frames::build(&s.corpus, &source_name(ctx, source), pricing, mode)?;
    Ok((s, frames))
}

fn export(ctx: &Ctx, a: ExportArgs) -> Result<ExitCode> {
    let s = scan(ctx, &a.input, false, Keep::Records)?;
    let what = pisa::export::Exported {
        corpus: &s.corpus,
        source: &source_name(ctx, a.source),
        pricing: ctx.pricing()?,
        mode: ctx.cost_mode(&a.costing),
        batch_rows: pisa::export::BATCH_ROWS,
        last_use: true,
    };
    let written = pisa::export::export(&what, &a.out, a.format.into(), a.partition.into())?;
    for (path, rows) in &written.files {
        eprintln!("pisa: wrote {} ({rows} rows)", path.display());
    }
    Ok(exit_code(&s))
}

fn query(ctx: &Ctx, a: QueryArgs) -> Result<ExitCode> {
    let (s, frames) = frames(ctx, &a.input, a.source, true, ctx.cost_mode(&a.costing))?;
    let mut df = pisa::frame::query(&frames, &a.sql).context("the query failed")?;
    to_stdout(|out| {
        if a.json {
            let rows: Vec<serde_json::Value> = (0..df.height())
                .map(|i| pisa::export::row_json(&df, i))
                .collect::<Result<_, _>>()?;
            pretty_json(out, &rows)?;
        } else if a.csv {
            pisa::export::encode(&mut df, out, pisa::export::Format::Csv)?;
        } else {
            report::frame_table(out, &df, terminal())?;
        }
        Ok(())
    })?;
    Ok(exit_code(&s))
}

fn bench(a: BenchArgs) -> Result<ExitCode> {
    let roots = Roots::of(&a.paths, a.demo)?;
    let b = bench::run(&roots.paths, a.runs);
    to_stdout(|out| {
        if a.json {
            serde_json::to_writer_pretty(&mut *out, &b)?;
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
            writeln!(out, "{}", bench::table(&b))?;
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn inspect(args: InspectArgs) -> Result<ExitCode> {
    use pisa::analyze::{FileAnalysis, FileRecord};
    let mut file = pisa::scan::source::open(&args.file)?;
    let mut scratch = pisa::parse::Scratch::default();
    let parsed = pisa::scan::source::read_steady(&args.file, &mut file, |file| {
        let size = file.metadata()?.len();
        let (parsed, _, len) = scratch.read_file(file, size, None)?;
        Ok((parsed, len))
    })?;
    let rel = args.file.display().to_string();
    let mut code = ExitCode::SUCCESS;
    to_stdout(|out| match pisa::analyze::analyze_parsed(parsed) {
        FileAnalysis::Rejected {
            stats,
            reason,
            pi_entries,
            transcript,
        } => {
            code = ExitCode::from(2);
            let not_session = pisa::analyze::not_a_session(&rel, pi_entries);
            let record = FileRecord::rejected(&rel, &stats, &reason, not_session, transcript.is_some());
            if args.json {
                return pretty_json(out, &record.document());
            }
            // The reason quotes the file (the first entry's type).
            let what = match &transcript {
                Some(records) => {
                    let answers = pisa::usage::transcript_records(records).len();
                    format!("a subagent transcript ({answers} billed answers, copies of its child's); ")
                }
                None if not_session => "not a Pi session; ".into(),
                None => String::new(),
            };
            let line = format!("{rel}: {what}{}", record.reason);
            writeln!(out, "{}", report::terminal_safe(&line))?;
            Ok(())
        }
        FileAnalysis::Session(a) => {
            if a.is_damaged() {
                code = ExitCode::from(2);
            }
            let children = subagents_of(&args.file)?;
            if args.json {
                return pretty_json(out, &report::inspect::to_json(&rel, &a, &children));
            }
            report::inspect::render(out, &rel, &a, &children)?;
            Ok(())
        }
    })?;
    Ok(code)
}

/// The subagent sessions a session ran: those in its stem folder (`<file without .jsonl>/`,
/// where pi-subagents keeps them), each call counted once (read with the session, so that a
/// fork's copy of its history is the session's); none when there is no such folder.
fn subagents_of(file: &Path) -> Result<Vec<report::inspect::ChildSpend>> {
    let stem = file.with_extension("");
    if !stem.is_dir() {
        return Ok(Vec::new());
    }
    let corpus = corpus::scan(&[file.to_path_buf(), stem], &corpus::Quiet, None)?;
    let mut children = report::inspect::ChildSpend::of(&corpus);
    let own = pisa::paths::path_text(file);
    let me = corpus
        .sessions
        .iter()
        .find(|s| pisa::paths::path_text(&s.path) == own)
        .map(|s| s.rel.clone());
    children.retain(|c| Some(&c.path) != me.as_ref());
    for c in &mut children {
        if c.spawned_by == me {
            c.spawned_by = None;
        }
    }
    Ok(children)
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

/// `pisa pricing`: the prices pisa charges, from the registry and the config.
fn pricing(ctx: &Ctx, a: PricingArgs) -> Result<ExitCode> {
    // `--from` is this command's own registry, not the run's.
    let own;
    let p = match a.from.as_deref() {
        Some(dir) => {
            own = ctx.config.pricing(Some(dir))?;
            &own
        }
        None => ctx.pricing()?,
    };
    let wanted = |provider: &str, model: &str| match &a.model {
        Some(m) => format!("{provider}/{model}").to_lowercase().contains(&m.to_lowercase()),
        None => true,
    };
    if a.json {
        let text = p.registry.filtered(wanted).to_json();
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows = report::pricing::rows(p, wanted);
    if rows.is_empty() {
        bail!(
            "no price for a model matching `{}` in {} or the config",
            a.model.as_deref().unwrap_or(""),
            p.registry.label
        );
    }
    to_stdout(|out| {
        report::pricing::table(out, p, &rows, terminal())?;
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
