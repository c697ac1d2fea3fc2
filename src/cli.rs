//! Command-line definitions (clap), part of the binary only: the library knows nothing of
//! clap. Behaviour lives in `main.rs` and the library.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Exact, fast token and cost analytics for Pi coding-agent sessions.
#[derive(Debug, Parser)]
#[command(name = "pisa", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Worker threads (default: all cores).
    #[arg(long, global = true, value_name = "N")]
    pub threads: Option<usize>,
    /// Read every file afresh: neither use nor update the cache.
    #[arg(long, global = true, env = "PISA_NO_CACHE", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_cache: bool,
    /// Where the cache lives (default: the user's cache folder, e.g. ~/.cache/pisa).
    #[arg(long, global = true, value_name = "DIR", env = "PISA_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// The config file (default: ~/.config/pisa/config.toml, if there is one): defaults for
    /// --timezone, --source and --cost, price overrides, billing plans.
    #[arg(long, global = true, value_name = "FILE", env = "PISA_CONFIG")]
    pub config: Option<PathBuf>,
    /// Price calls with the model registry of this Pi installation (a newer Pi's prices),
    /// not the embedded one of pi-ai 1.6.0.
    #[arg(long, global = true, value_name = "DIR")]
    pub pricing_from: Option<PathBuf>,
    /// How session files are read: `read` (the default, measured fastest) reads every file,
    /// `auto` memory-maps files not modified for 5 minutes and reads the others, `map` maps
    /// every file.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "MODE",
        env = "PISA_READ_MODE",
        default_value_t
    )]
    pub read_mode: pisa::scan::map::ReadMode,
}

/// Shells `pisa completions` writes for.
pub use clap_complete::Shell;

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One row per session: project, name, activity, models, tokens, cost, context, compactions.
    Sessions(SessionsArgs),
    /// One session in depth: projection by role, usage groups, compactions, damage.
    Inspect(InspectArgs),
    /// Usage by day (in --timezone), each billed call counted once.
    Daily(ReportArgs),
    /// Usage by week (weeks start on Monday).
    Weekly(ReportArgs),
    /// Usage by month.
    Monthly(ReportArgs),
    /// Usage by session (the calls each session owns; fork copies belong to the original).
    Session(ReportArgs),
    /// Usage by model (`provider/model` that answered; tool results and summaries together).
    Model(ReportArgs),
    /// Usage by project (the session's working directory).
    Project(ReportArgs),
    /// Usage by kind of record: assistant, tool, compaction, branch_summary, usage:<kind>.
    Kind(ReportArgs),
    /// The effect of every compaction, and per session and per model.
    Compactions(ReportArgs),
    /// One self-contained HTML page of figures and tables: `pisa report --html out.html`.
    Report(HtmlArgs),
    /// Write the usage, sessions, compactions and files frames (Parquet by default).
    Export(ExportArgs),
    /// Run SQL over the frames: tables usage, sessions, compactions, files.
    Query(QueryArgs),
    /// The price pisa charges for a model, and where it comes from (Pi's registry or the config).
    Pricing(PricingArgs),
    /// One line for a shell prompt or Pi's footer: the current session's cost and context, today's
    /// cost, the active 5-hour window's cost and burn rate.
    Status(StatusArgs),
    /// Usage in 5-hour billing windows (cut as ccusage cuts them), with the active window's
    /// burn rate and projection.
    Blocks(BlocksArgs),
    /// A full-screen live view (today, the active window, the current session and its
    /// compactions) that refreshes when Pi writes; `q` quits.
    Watch(WatchArgs),
    /// Throughput of each stage on a corpus: reading, line splitting, parsing, the whole
    /// pipeline, and a re-run from the cache.
    Bench(BenchArgs),
    /// Print a completion script for a shell, e.g. `pisa completions zsh > ~/.zfunc/_pisa`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print pisa's manual page (roff), or write one page per command into a folder.
    Man {
        /// Write pisa.1 and pisa-COMMAND.1 into this folder instead.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

/// Arguments of `pisa pricing`.
#[derive(Debug, clap::Args)]
pub struct PricingArgs {
    /// Only models whose `provider/model` contains this text (case-insensitive).
    pub model: Option<String>,
    /// Read the registry of this Pi installation (same as the global --pricing-from).
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Print the price table as JSON (the embedded table's format: `pisa pricing --from DIR
    /// --json` regenerates it).
    #[arg(long, short)]
    pub json: bool,
}

/// Which cost is summed and which calls count (shared by reports, sessions, export, query).
#[derive(Debug, clap::Args)]
pub struct Costing {
    /// `recorded`: the cost Pi wrote (default); `calculate`: from the price table; `auto`:
    /// recorded unless it is 0 while the call has tokens, then calculated.
    #[arg(long, value_enum, value_name = "MODE")]
    pub cost: Option<pisa::pricing::CostMode>,
}

/// Arguments of `pisa bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Session folders or files (default: as for `pisa sessions`).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Runs of each stage; the median is reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Print JSON.
    #[arg(long, short)]
    pub json: bool,
    /// Measure the bundled sample sessions instead of yours.
    #[arg(long, conflicts_with = "paths")]
    pub demo: bool,
}

/// Which sessions to read (shared by the analytics commands).
#[derive(Debug, clap::Args)]
pub struct Input {
    /// Session folders or files (default: Pi's sessions folder, found as Pi finds it; the bundled
    /// sample when there is none).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Read the bundled sample sessions instead of yours (a demo; also what pisa shows when you
    /// have no sessions folder).
    #[arg(long, conflicts_with = "paths")]
    pub demo: bool,
    /// Do not list damaged or unreadable files on stderr.
    #[arg(long, short, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also list the files that are not Pi sessions (skipped as Pi skips them).
    #[arg(long, short)]
    pub verbose: bool,
    /// Never draw a progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// Arguments of the usage reports.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub filters: Filters,
    /// Split each row by model.
    #[arg(long, short)]
    pub breakdown: bool,
    /// Row order (default: oldest first for time reports, most expensive first otherwise).
    #[arg(long, value_enum)]
    pub order: Option<Order>,
    /// Print JSON.
    #[arg(long, short, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV.
    #[arg(long)]
    pub csv: bool,
    /// Print JSON with the field names of another tool: `ccusage` (daily, weekly, monthly and
    /// session reports).
    #[arg(long, value_enum, value_name = "TOOL", conflicts_with = "csv")]
    pub json_compat: Option<Compat>,
}

/// Tools whose JSON `--json-compat` imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Compat {
    /// ccusage's `daily|weekly|monthly|session --json`.
    Ccusage,
}

/// Arguments of `pisa report`.
#[derive(Debug, clap::Args)]
pub struct HtmlArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub filters: Filters,
    /// Write the page here: one HTML file that opens anywhere without a network.
    #[arg(long, value_name = "FILE")]
    pub html: PathBuf,
}

/// Which usage a report counts, and at which cost: shared by the reports and the HTML page.
#[derive(Debug, clap::Args)]
pub struct Filters {
    /// First day to include, in --timezone (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_parser = parse_day)]
    pub since: Option<jiff::civil::Date>,
    /// Last day to include, in --timezone (YYYY-MM-DD or YYYYMMDD).
    #[arg(long, value_parser = parse_day)]
    pub until: Option<jiff::civil::Date>,
    #[command(flatten)]
    pub zone: Zone,
    /// Only projects whose path contains this text (case-insensitive).
    #[arg(long)]
    pub project: Option<String>,
    /// Only models whose `provider/model` contains this text (case-insensitive).
    #[arg(long)]
    pub model: Option<String>,
    #[command(flatten)]
    pub costing: Costing,
    /// Count the calls of `api`-billed providers, of `subscription` ones (their API-equivalent
    /// value), or `all` (default; tables split the subscription part in a column).
    #[arg(long, value_enum, default_value = "all")]
    pub billing: pisa::pricing::BillingFilter,
}

/// The time zone of days and times shown.
#[derive(Debug, clap::Args)]
pub struct Zone {
    /// IANA time zone for days, weeks, months and times shown (default: the system's).
    #[arg(long, short = 'z', env = "PISA_TIMEZONE")]
    pub timezone: Option<String>,
}

/// Arguments of `pisa export`.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub input: Input,
    /// Folder to write into (created if missing).
    #[arg(long, short)]
    pub out: PathBuf,
    /// File format.
    #[arg(long, value_enum, default_value = "parquet")]
    pub format: Format,
    /// Split usage and compactions into hive partitions.
    #[arg(long, value_enum, default_value = "none")]
    pub partition: Partition,
    /// Value of the `source` column of every frame: the machine or user the export is from
    /// (default: the host name), so that pooled exports can be told apart.
    #[arg(long, value_name = "NAME")]
    pub source: Option<String>,
    #[command(flatten)]
    pub costing: Costing,
}

/// Arguments of `pisa query`.
#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// The SQL query (Polars SQL), e.g. 'SELECT model, sum(cost) FROM usage GROUP BY 1'.
    pub sql: String,
    #[command(flatten)]
    pub input: Input,
    /// Print JSON (an array of row objects).
    #[arg(long, short, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV.
    #[arg(long)]
    pub csv: bool,
    /// Value of the `source` column (default: the host name).
    #[arg(long, value_name = "NAME")]
    pub source: Option<String>,
    #[command(flatten)]
    pub costing: Costing,
}

/// `YYYY-MM-DD` or `YYYYMMDD`.
pub fn parse_day(s: &str) -> Result<jiff::civil::Date, String> {
    let iso = if s.len() == 8 && s.bytes().all(|b| b.is_ascii_digit()) {
        format!("{}-{}-{}", &s[..4], &s[4..6], &s[6..])
    } else {
        s.to_string()
    };
    iso.parse()
        .map_err(|_| format!("`{s}` is not a date: use YYYY-MM-DD or YYYYMMDD"))
}

/// Arguments of `pisa sessions`.
#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub zone: Zone,
    /// Print JSON: {"sessions": [...], "rejected": [...], "issues": [...], "totals": {...}}.
    #[arg(long, short)]
    pub json: bool,
    #[command(flatten)]
    pub costing: Costing,
}

/// Arguments of `pisa inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The session file.
    pub file: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long, short)]
    pub json: bool,
}

/// Row order of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Order {
    Asc,
    Desc,
}

impl From<Order> for pisa::report::rollup::Order {
    fn from(o: Order) -> Self {
        match o {
            Order::Asc => Self::Asc,
            Order::Desc => Self::Desc,
        }
    }
}

/// File format of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Parquet,
    Csv,
    Ndjson,
}

impl From<Format> for pisa::export::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Parquet => Self::Parquet,
            Format::Csv => Self::Csv,
            Format::Ndjson => Self::Ndjson,
        }
    }
}

/// How the time-stamped frames (`usage`, `compactions`) are split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Partition {
    /// One file per frame.
    None,
    /// `usage/month=YYYY-MM/part-0.parquet` (UTC months; rows without a time under `month=unknown`).
    Month,
}

impl From<Partition> for pisa::export::Partition {
    fn from(p: Partition) -> Self {
        match p {
            Partition::None => Self::None,
            Partition::Month => Self::Month,
        }
    }
}

/// `--now`, hidden: the instant the live commands take for now (tests, replays of a corpus).
#[derive(Debug, clap::Args)]
pub struct Now {
    /// Take this instant (RFC 3339) for now.
    #[arg(long, hide = true, value_name = "TIME")]
    pub now: Option<jiff::Timestamp>,
}

/// Arguments of `pisa status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Session folders or files (default: Pi's sessions folder).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The current session (default: the session file written last).
    #[arg(long, value_name = "FILE")]
    pub session: Option<PathBuf>,
    /// Print JSON instead of a line.
    #[arg(long, short, conflicts_with = "format")]
    pub json: bool,
    /// The line, with placeholders such as {session_cost}, {context}, {today_cost},
    /// {block_cost}, {burn_rate}, {block_left} (see the README for all).
    #[arg(long, value_name = "TEMPLATE")]
    pub format: Option<String>,
    #[command(flatten)]
    pub zone: Zone,
    #[command(flatten)]
    pub now: Now,
}

/// Arguments of `pisa blocks`.
#[derive(Debug, clap::Args)]
pub struct BlocksArgs {
    #[command(flatten)]
    pub input: Input,
    /// Only the active window (none when no call was made in the last 5 hours).
    #[arg(long)]
    pub active: bool,
    /// Print JSON.
    #[arg(long, short)]
    pub json: bool,
    #[command(flatten)]
    pub zone: Zone,
    #[command(flatten)]
    pub now: Now,
}

/// Arguments of `pisa watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Session folders or files (default: Pi's sessions folder).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The current session (default: the session file written last).
    #[arg(long, value_name = "FILE")]
    pub session: Option<PathBuf>,
    /// Seconds between checks when file notifications are not available.
    #[arg(long, default_value_t = 2.0, value_name = "SECONDS")]
    pub interval: f64,
    #[command(flatten)]
    pub zone: Zone,
}
