//! `pisa blocks`: usage in 5-hour billing windows, cut as ccusage cuts them
//! (`identifySessionBlocks` in ccusage's `src/_session-blocks.ts`):
//!
//! - the calls are taken in time order; the first opens a window at its time floored to the
//!   UTC hour, and the window ends 5 hours after its start;
//! - a call more than 5 hours after the window's start, or more than 5 hours after the call
//!   before it, closes the window and opens the next one, again at its own time floored to the
//!   hour (a call exactly 5 hours after the start still belongs to the window);
//! - a window is active when its last call is less than 5 hours ago and its end is still to come
//!   (pisa adds: and its start has come, which matters only for `--now` in the past);
//! - its burn rate is ccusage's: input and output tokens per minute and cost per hour over the
//!   time between its first and last call (none when that is zero), and the projection adds
//!   that rate over the minutes left until the window's end.
//!
//! ccusage also lists the idle time between windows as "gap" blocks; pisa leaves them out.

use std::io::Write;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use jiff::tz::TimeZone;
use serde_json::{Value, json};

use super::calls::Call;
use super::{terminal_safe, tokens, usd};
use crate::js::num_json;

/// The length of a window.
pub const WINDOW_MS: i64 = 5 * 3600 * 1000;
const HOUR_MS: i64 = 3600 * 1000;

/// One window and the calls in it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Block {
    /// Unix ms: its start (a UTC hour) and end (start + 5 hours).
    pub start_ms: i64,
    pub end_ms: i64,
    /// Its first and last call.
    pub first_ms: i64,
    pub last_ms: i64,
    pub calls: u64,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub cost: f64,
    /// Model keys, in the order they first answered.
    pub models: Vec<String>,
    pub active: bool,
}

/// How fast a window spends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burn {
    /// Input and output tokens per minute (ccusage leaves the cache out of the rate).
    pub tokens_per_minute: f64,
    pub cost_per_hour: f64,
}

/// Where an active window ends up at its burn rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    /// Input and output tokens, and cost, at the window's end.
    pub tokens: f64,
    pub cost: f64,
    pub remaining_minutes: f64,
}

impl Block {
    /// All four token counts.
    pub fn tokens(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    /// ccusage's `calculateBurnRate`: `None` when its calls span no time.
    pub fn burn(&self) -> Option<Burn> {
        let minutes = (self.last_ms - self.first_ms) as f64 / 60_000.0;
        (minutes > 0.0).then(|| Burn {
            tokens_per_minute: (self.input + self.output) / minutes,
            cost_per_hour: self.cost / minutes * 60.0,
        })
    }

    /// ccusage's `projectBlockUsage` at `now_ms` (unrounded): active windows only.
    pub fn projection(&self, now_ms: i64) -> Option<Projection> {
        let burn = self.burn().filter(|_| self.active)?;
        let remaining_minutes = ((self.end_ms - now_ms) as f64 / 60_000.0).max(0.0);
        Some(Projection {
            tokens: self.input + self.output + burn.tokens_per_minute * remaining_minutes,
            cost: self.cost + burn.cost_per_hour / 60.0 * remaining_minutes,
            remaining_minutes,
        })
    }

    fn open(start: &Call, ms: i64) -> Block {
        let start_ms = ms.div_euclid(HOUR_MS) * HOUR_MS;
        let mut b = Block {
            start_ms,
            end_ms: start_ms + WINDOW_MS,
            first_ms: ms,
            ..Block::default()
        };
        b.add(start, ms);
        b
    }

    fn add(&mut self, c: &Call, ms: i64) {
        self.last_ms = ms;
        self.calls += 1;
        self.input += c.input;
        self.output += c.output;
        self.cache_read += c.cache_read;
        self.cache_write += c.cache_write;
        self.cost += c.cost;
        if !self.models.contains(&c.model) {
            self.models.push(c.model.clone());
        }
    }
}

/// The windows of `calls` (those without a time are left out), oldest first, with the active
/// one marked as of `now_ms`.
pub fn windows(calls: &[Call], now_ms: i64) -> Vec<Block> {
    let mut timed: Vec<(i64, &Call)> = calls.iter().filter_map(|c| Some((c.ms?, c))).collect();
    // Stable, as ccusage's sort: calls at the same time keep the frame's order.
    timed.sort_by_key(|&(ms, _)| ms);
    let mut blocks: Vec<Block> = Vec::new();
    for (ms, c) in timed {
        match blocks.last_mut() {
            Some(b) if ms - b.start_ms <= WINDOW_MS && ms - b.last_ms <= WINDOW_MS => b.add(c, ms),
            _ => blocks.push(Block::open(c, ms)),
        }
    }
    for b in &mut blocks {
        // The start test only matters when `now` is before later calls (a replay).
        b.active = now_ms - b.last_ms < WINDOW_MS && now_ms < b.end_ms && b.start_ms <= now_ms;
    }
    blocks
}

/// A finished `pisa blocks` report.
#[derive(Debug, Clone)]
pub struct Report {
    pub tz_name: String,
    pub now_ms: i64,
    pub blocks: Vec<Block>,
    /// Counted calls without a time, in no window.
    pub untimed: u64,
}

/// An instant as ISO 8601 UTC with milliseconds, as ccusage's ids.
pub fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| format!("{t:.3}"))
}

fn local(ms: i64, tz: &TimeZone) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(
        |_| ms.to_string(),
        |t| t.to_zoned(tz.clone()).strftime("%Y-%m-%d %H:%M").to_string(),
    )
}

/// One window as JSON.
pub fn block_json(b: &Block, now_ms: i64) -> Value {
    json!({
        "start": iso(b.start_ms),
        "end": iso(b.end_ms),
        "firstCall": iso(b.first_ms),
        "lastCall": iso(b.last_ms),
        "active": b.active,
        "calls": b.calls,
        "input": num_json(b.input),
        "output": num_json(b.output),
        "cacheWrite": num_json(b.cache_write),
        "cacheRead": num_json(b.cache_read),
        "totalTokens": num_json(b.tokens()),
        "cost": num_json(b.cost),
        "models": b.models,
        "burnRate": b.burn().map(|r| json!({
            "tokensPerMinute": num_json(r.tokens_per_minute),
            "costPerHour": num_json(r.cost_per_hour),
        })),
        "projection": b.projection(now_ms).map(|p| json!({
            "tokens": num_json(p.tokens),
            "cost": num_json(p.cost),
            "remainingMinutes": num_json(p.remaining_minutes),
        })),
    })
}

/// The report as one JSON document.
pub fn to_json(r: &Report) -> Value {
    json!({
        "report": "blocks",
        "timezone": r.tz_name,
        "now": iso(r.now_ms),
        "windowHours": WINDOW_MS / HOUR_MS,
        "blocks": r.blocks.iter().map(|b| block_json(b, r.now_ms)).collect::<Vec<_>>(),
        "untimedCalls": r.untimed,
    })
}

/// The report as a terminal table, and a line on the active window.
pub fn table(out: &mut impl Write, r: &Report, tz: &TimeZone, terminal: bool) -> std::io::Result<()> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(if terminal {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    });
    t.set_header(vec![
        "Start",
        "End",
        "Calls",
        "Models",
        "Input",
        "Output",
        "Cache write",
        "Cache read",
        "Total tokens",
        "Cost",
    ]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    for b in &r.blocks {
        let start = local(b.start_ms, tz) + if b.active { " (active)" } else { "" };
        t.add_row(vec![
            Cell::new(start),
            Cell::new(local(b.end_ms, tz)),
            right(b.calls.to_string()),
            Cell::new(terminal_safe(&b.models.join(", "))),
            right(tokens(b.input)),
            right(tokens(b.output)),
            right(tokens(b.cache_write)),
            right(tokens(b.cache_read)),
            right(tokens(b.tokens())),
            right(usd(b.cost)),
        ]);
    }
    writeln!(out, "{t}")?;
    if let Some(b) = r.blocks.iter().find(|b| b.active) {
        writeln!(out, "{}", active_line(b, r.now_ms))?;
    }
    writeln!(
        out,
        "5-hour windows as ccusage cuts them (starts floored to the UTC hour), times in {}; each billed call counted once{}.",
        r.tz_name,
        match r.untimed {
            0 => String::new(),
            n => format!("; {n} calls without a time left out"),
        }
    )
}

/// `active window: $1.20 so far, $0.80/h, projected $3.10 by 15:00 (95 min left)`.
pub fn active_line(b: &Block, now_ms: i64) -> String {
    let mut line = format!("active window: {} so far", usd(b.cost));
    if let Some(burn) = b.burn() {
        line += &format!(", {}/h", usd(burn.cost_per_hour));
    }
    if let Some(p) = b.projection(now_ms) {
        line += &format!(", projected {} at its end", usd(p.cost));
    }
    line + &format!(" ({} min left)", ((b.end_ms - now_ms).max(0) / 60_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(iso: &str, cost: f64) -> Call {
        Call {
            ms: Some(iso.parse::<jiff::Timestamp>().expect("time").as_millisecond()),
            input: 10.0,
            output: 5.0,
            cache_read: 0.0,
            cache_write: 0.0,
            cost,
            model: "p/m".into(),
        }
    }

    #[test]
    fn a_window_starts_at_the_hour_and_the_next_after_five_hours_or_a_five_hour_gap() {
        let calls = [
            call("2024-01-01T10:55:30Z", 1.0),
            call("2024-01-01T15:00:00Z", 1.0), // exactly 5 h after the start: same window
            call("2024-01-01T15:00:01Z", 1.0), // past the end: a new window at 15:00
            call("2024-01-02T09:30:00Z", 1.0), // after a gap
        ];
        let b = windows(&calls, 0);
        let starts: Vec<String> = b.iter().map(|b| iso(b.start_ms)).collect();
        assert_eq!(
            starts,
            [
                "2024-01-01T10:00:00.000Z",
                "2024-01-01T15:00:00.000Z",
                "2024-01-02T09:00:00.000Z"
            ]
        );
        assert_eq!(b.iter().map(|b| b.calls).collect::<Vec<_>>(), [2, 1, 1]);
    }

    #[test]
    fn the_active_window_projects_its_burn_rate_to_its_end() {
        let calls = [call("2024-01-01T10:00:00Z", 1.0), call("2024-01-01T11:00:00Z", 1.0)];
        let now = "2024-01-01T12:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_millisecond();
        let b = &windows(&calls, now)[0];
        assert!(b.active);
        let burn = b.burn().unwrap();
        assert_eq!(burn.cost_per_hour, 2.0);
        assert_eq!(burn.tokens_per_minute, 0.5);
        let p = b.projection(now).unwrap();
        assert_eq!(p.remaining_minutes, 180.0);
        assert_eq!(p.cost, 2.0 + 6.0);
        assert!(!windows(&calls, now + WINDOW_MS)[0].active);
    }
}
