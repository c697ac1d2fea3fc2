//! `pisa status`, `pisa blocks` and `pisa watch`: their arguments to the library's live
//! reports (`pisa::report::status`, `pisa::report::blocks`, `pisa::live`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use pisa::report::blocks;
use pisa::report::calls;
use pisa::report::status;

use super::cli::{BlocksArgs, Now, StatusArgs, WatchArgs};
use super::{Ctx, exit_code, pretty_json, say, scan, terminal, to_stdout, zone};

/// Unix ms of now, or of `--now`.
fn now_ms(now: &Now) -> i64 {
    now.now.unwrap_or_else(jiff::Timestamp::now).as_millisecond()
}

/// The folders to read: as given, else Pi's sessions folder, else none when a session file
/// is given (never the sample: a prompt must not show made-up figures).
fn roots(paths: &[PathBuf], session: Option<&Path>) -> Result<Vec<PathBuf>> {
    if !paths.is_empty() {
        return Ok(paths.to_vec());
    }
    let root = pisa::scan::default_root().context("cannot find the home folder; give a path")?;
    if !root.exists() && session.is_some() {
        return Ok(Vec::new());
    }
    anyhow::ensure!(
        root.exists(),
        "there are no sessions at {}; give a path",
        root.display()
    );
    Ok(vec![root])
}

pub fn status(ctx: &Ctx, a: StatusArgs) -> Result<ExitCode> {
    let (tz, tz_name) = zone(ctx, &a.zone)?;
    let template = a.format.as_deref().unwrap_or(status::DEFAULT_FORMAT);
    status::check_format(template)?;
    let o = status::Options {
        roots: roots(&a.paths, a.session.as_deref())?,
        cache_dir: ctx.cache_dir.clone(),
        session: a.session,
        now_ms: now_ms(&a.now),
        tz: tz.clone(),
    };
    let s = status::compute(&o)?;
    for w in &s.warnings {
        say(w);
    }
    to_stdout(|out| {
        match a.json {
            true => pretty_json(out, &status::to_json(&s, &tz_name))?,
            false => writeln!(out, "{}", status::line(&s, template, &tz)?)?,
        }
        Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

pub fn blocks(ctx: &Ctx, a: BlocksArgs) -> Result<ExitCode> {
    let (tz, tz_name) = zone(ctx, &a.zone)?;
    let s = scan(ctx, &a.input, a.json, pisa::corpus::Keep::Reports)?;
    let counted = calls::counted(&s.corpus)?;
    let now = now_ms(&a.now);
    let mut windows = blocks::windows(&counted, now);
    if a.active {
        windows.retain(|b| b.active);
    }
    let r = blocks::Report {
        tz_name,
        now_ms: now,
        blocks: windows,
        untimed: counted.iter().filter(|c| c.ms.is_none()).count() as u64,
    };
    to_stdout(|out| {
        match a.json {
            true => pretty_json(out, &blocks::to_json(&r))?,
            false => blocks::table(out, &r, &tz, terminal())?,
        }
        Ok(())
    })?;
    Ok(exit_code(&s))
}

pub fn watch(ctx: &Ctx, a: WatchArgs) -> Result<ExitCode> {
    let (tz, tz_name) = zone(ctx, &a.zone)?;
    let roots = roots(&a.paths, a.session.as_deref())?;
    let mut o = status::Options {
        roots: roots.clone(),
        cache_dir: ctx.cache_dir.clone(),
        session: a.session,
        now_ms: 0,
        tz: tz.clone(),
    };
    let compute = move || {
        o.now_ms = jiff::Timestamp::now().as_millisecond();
        status::compute(&o).map_err(|e| e.to_string())
    };
    let interval = std::time::Duration::from_secs_f64(a.interval.max(0.1));
    pisa::live::run(compute, &roots, interval, &tz, &tz_name)?;
    Ok(ExitCode::SUCCESS)
}
