//! Command-line definitions (clap). Behaviour lives in `main.rs` and the library.

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
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One row per session: project, name, activity, models, tokens, cost, context, compactions.
    Sessions(SessionsArgs),
    /// One session in depth: projection by role, usage groups, compactions, damage.
    Inspect(InspectArgs),
}

/// Arguments of `pisa sessions`.
#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    /// Session folders or files (default: $PI_CODING_AGENT_SESSION_DIR, else ~/.pi/agent/sessions).
    pub paths: Vec<PathBuf>,
    /// Print JSON: {"sessions": [...], "rejected": [...], "issues": [...], "totals": {...}}.
    #[arg(long)]
    pub json: bool,
    /// Do not list rejected or unreadable files on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Never draw a progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// Arguments of `pisa inspect`.
#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The session file.
    pub file: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}
