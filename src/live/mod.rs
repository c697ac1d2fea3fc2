//! `pisa watch`: a full-screen live view of today, the active 5-hour window, the current
//! session and its compactions, drawn with ratatui and redrawn when Pi writes.
//!
//! - [`render`] draws a [`View`] (plain data) into any ratatui frame, so tests draw into
//!   ratatui's `TestBackend`;
//! - [`changes`] says when a session file changed: file notifications (`notify`), or polling
//!   where those are not available;
//! - [`run`] owns the terminal: raw mode and the alternate screen, restored on exit and on a
//!   panic (ratatui's `init` chains a hook that restores the terminal before the old one runs).

pub mod changes;

use std::path::PathBuf;
use std::time::Duration;

use jiff::tz::TimeZone;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};

use crate::report::status::{Status, minutes, short_tokens};
use crate::report::{terminal_safe, usd};

/// Why the live view stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// What one frame shows.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The latest status, if one was computed.
    pub status: Option<&'a Status>,
    /// Why the latest refresh failed.
    pub error: Option<&'a str>,
    pub tz: &'a TimeZone,
    pub tz_name: &'a str,
    /// How changes are noticed ("file notifications", "polling every 2 s").
    pub mode: &'a str,
}

fn local(ms: i64, tz: &TimeZone, format: &str) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map_or_else(|_| "?".into(), |t| t.to_zoned(tz.clone()).strftime(format).to_string())
}

fn bold(s: impl Into<String>) -> Span<'static> {
    Span::styled(s.into(), Style::default().add_modifier(Modifier::BOLD))
}

/// Today's and the active window's lines.
fn spend_lines(s: &Status, tz: &TimeZone) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(vec![
        Span::raw(format!("Today {}  ", s.today)),
        bold(usd(s.today_cost)),
        Span::raw(format!(
            "  {} tokens  {} calls",
            short_tokens(s.today_tokens),
            s.today_calls
        )),
    ])];
    lines.push(match &s.block {
        None => Line::from("Window  none active (no call in the last 5 hours)"),
        Some(b) => {
            let mut spans = vec![
                Span::raw(format!(
                    "Window {}–{}  ",
                    local(b.start_ms, tz, "%H:%M"),
                    local(b.end_ms, tz, "%H:%M")
                )),
                bold(usd(b.cost)),
                Span::raw(format!("  {} calls", b.calls)),
            ];
            if let Some(r) = b.burn() {
                spans.push(Span::raw(format!("  {}/h", usd(r.cost_per_hour))));
            }
            if let Some(p) = b.projection(s.now_ms) {
                spans.push(Span::raw(format!("  projected {}", usd(p.cost))));
            }
            spans.push(Span::raw(format!(
                "  {} left",
                minutes((b.end_ms - s.now_ms).max(0) / 60_000)
            )));
            Line::from(spans)
        }
    });
    lines
}

/// The current session's lines.
fn session_lines(s: &Status) -> Vec<Line<'static>> {
    let Some(x) = &s.session else {
        return vec![Line::from("no session")];
    };
    let name = x
        .name
        .clone()
        .or_else(|| x.session_id.clone())
        .unwrap_or_else(|| x.rel.clone());
    vec![
        Line::from(vec![
            bold(terminal_safe(&name)),
            Span::raw(format!("  {}", terminal_safe(&x.project))),
        ]),
        Line::from(format!("Model {}", terminal_safe(x.model.as_deref().unwrap_or("?")))),
        Line::from(vec![
            Span::raw("Cost "),
            bold(usd(x.cost)),
            Span::raw(format!(
                "  {} tokens  context {}",
                short_tokens(x.tokens),
                x.context_tokens.map_or_else(|| "?".into(), short_tokens)
            )),
        ]),
    ]
}

/// The current session's compactions, latest first.
fn compaction_rows<'a>(s: &Status, tz: &TimeZone) -> Vec<Row<'a>> {
    let Some(x) = &s.session else { return Vec::new() };
    x.compactions
        .iter()
        .rev()
        .map(|c| {
            let at = c
                .timestamp
                .as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map_or_else(|| "?".into(), |t| local(t.as_millisecond(), tz, "%Y-%m-%d %H:%M"));
            let n = |x: Option<f64>| x.map_or_else(|| "?".into(), short_tokens);
            Row::new(vec![at, n(c.tokens_before), n(c.tokens_after)])
        })
        .collect()
}

/// Draw one frame of the live view.
pub fn render(frame: &mut Frame<'_>, v: &View<'_>) {
    let [top, session, compactions, foot] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Length(5),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let now = v
        .status
        .map_or_else(String::new, |s| local(s.now_ms, v.tz, "%Y-%m-%d %H:%M:%S"));
    let titled = |t: String| Block::default().borders(Borders::ALL).title(t);
    match v.status {
        Some(s) => {
            frame.render_widget(
                Paragraph::new(spend_lines(s, v.tz)).block(titled(format!(" pisa watch · {now} {} ", v.tz_name))),
                top,
            );
            frame.render_widget(
                Paragraph::new(session_lines(s)).block(titled(" Current session ".into())),
                session,
            );
            let count = s.session.as_ref().map_or(0, |x| x.compactions.len());
            let table = Table::new(
                compaction_rows(s, v.tz),
                [Constraint::Length(17), Constraint::Length(10), Constraint::Length(10)],
            )
            .header(Row::new(["When", "Before", "After"]).style(Style::default().add_modifier(Modifier::BOLD)))
            .block(titled(format!(" Compactions ({count}) ")));
            frame.render_widget(table, compactions);
        }
        None => frame.render_widget(
            Paragraph::new("reading the sessions…").block(titled(" pisa watch ".into())),
            top,
        ),
    }
    let foot_text = match v.error {
        Some(e) => format!("q quits · refresh failed: {}", terminal_safe(e)),
        None => format!("q quits · {}", v.mode),
    };
    frame.render_widget(Paragraph::new(foot_text), foot);
}

/// Run the live view until `q` (or Esc, or Ctrl-C): `compute` gives the status, run again
/// whenever a file under `roots` changes.
pub fn run<F>(mut compute: F, roots: &[PathBuf], interval: Duration, tz: &TimeZone, tz_name: &str) -> Result<(), Error>
where
    F: FnMut() -> Result<Status, String>,
{
    let changes = changes::Changes::watch(roots, interval);
    let mut terminal = ratatui::init();
    let result = (|| -> Result<(), Error> {
        let (mut status, mut error) = (None, None);
        let mut dirty = true;
        loop {
            if dirty {
                match compute() {
                    Ok(s) => (status, error) = (Some(s), None),
                    Err(e) => error = Some(e),
                }
            }
            let view = View {
                status: status.as_ref(),
                error: error.as_deref(),
                tz,
                tz_name,
                mode: changes.mode(),
            };
            terminal.draw(|f| render(f, &view))?;
            if quit_pressed(Duration::from_millis(200))? {
                return Ok(());
            }
            // Also once a minute: "now" moves, and with it today and the window.
            dirty = changes.changed()
                || view
                    .status
                    .is_some_and(|s| jiff::Timestamp::now().as_millisecond() - s.now_ms > 60_000);
        }
    })();
    ratatui::restore();
    result
}

/// Wait up to `wait` for a key; whether it asks to quit.
fn quit_pressed(wait: Duration) -> std::io::Result<bool> {
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    if !event::poll(wait)? {
        return Ok(false);
    }
    Ok(match event::read()? {
        Event::Key(k) if k.kind == KeyEventKind::Press => {
            matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL))
        }
        _ => false,
    })
}
