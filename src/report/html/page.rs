//! The page: head (style, policy), the totals, one section per figure with its data table,
//! and the sorting script. Sections are written into one `String`, then out in one write.

use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};

use super::data::{MAX_ROWS, Page, SessionSpend, TOP_PROJECTS};
use super::esc;
use super::svg::{self, Bars, Chart, Columns, Line, OTHER, Series, Unit};
use crate::js::number_to_string;
use crate::report::rollup::Figures;
use crate::report::{tokens, usd};

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("sort.js");

/// Write the page.
pub fn write(out: &mut impl std::io::Write, page: &Page, generated: &str) -> std::io::Result<()> {
    let nonce = nonce();
    let mut s = String::with_capacity(256 << 10);
    head(&mut s, page, generated, &nonce);
    totals(&mut s, page);
    daily(&mut s, page);
    projects(&mut s, page);
    kinds(&mut s, page);
    cache(&mut s, page);
    sessions(&mut s, page);
    compactions(&mut s, page);
    let _ = writeln!(
        s,
        "<footer><p>Written by pisa {v}. Each billed call is counted once: copies in forks, repeated lines, subagent tool results and transcripts whose calls a session holds are left out. Nothing in this file is fetched from anywhere.</p></footer></main><script nonce=\"{nonce}\">{SCRIPT}</script></body></html>",
        v = env!("CARGO_PKG_VERSION"),
    );
    out.write_all(s.as_bytes())
}

/// A fresh value for the Content-Security-Policy nonce: only the page's own script and style
/// run, whatever a session file put in the page.
fn nonce() -> String {
    let a = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{a:016x}{:016x}", h.finish())
}

fn head(s: &mut String, p: &Page, generated: &str, nonce: &str) {
    let o = &p.options;
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'\"><meta name=\"color-scheme\" content=\"light dark\"><title>Pi spend report</title><style nonce=\"{nonce}\">{STYLE}</style></head><body><main><header><h1>Pi spend report</h1><p class=\"meta\">"
    );
    let range = match (o.since, o.until) {
        (None, None) => "all days".to_string(),
        (a, b) => format!(
            "{} to {}",
            a.map_or_else(|| "the start".into(), |d| d.to_string()),
            b.map_or_else(|| "the end".into(), |d| d.to_string())
        ),
    };
    let _ = write!(
        s,
        "{} sessions in {} files ({:.1} MB) · {} · time zone {}",
        p.scope.sessions,
        p.scope.files,
        p.scope.bytes as f64 / 1e6,
        esc(&range),
        esc(&o.tz_name)
    );
    if let Some(f) = &o.project {
        let _ = write!(s, " · projects containing “{}”", esc(f));
    }
    if let Some(f) = &o.model {
        let _ = write!(s, " · models containing “{}”", esc(f));
    }
    let _ = write!(s, " · written {}", esc(generated));
    if p.scope.damaged + p.scope.skipped > 0 {
        let _ = write!(
            s,
            "</p><p class=\"warn\">{} damaged files read in part and {} files skipped: their lost lines are not counted (run <code>pisa sessions</code> for the list).",
            p.scope.damaged, p.scope.skipped
        );
    }
    s.push_str("</p></header>");
}

/// A cell: its text and, for numbers, the value the sort uses.
struct Cell {
    text: String,
    value: Option<f64>,
}

fn text(t: impl Into<String>) -> Cell {
    Cell {
        text: t.into(),
        value: None,
    }
}

fn num(t: String, v: f64) -> Cell {
    Cell {
        text: t,
        value: Some(v),
    }
}

fn count(n: u64) -> Cell {
    num(n.to_string(), n as f64)
}

fn share(x: Option<f64>) -> Cell {
    match x {
        Some(v) => num(format!("{:.1}%", v * 100.0), v),
        None => text("–"),
    }
}

/// A number as short as sorting needs: whole numbers as they are, others to six digits.
fn sort_key(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.5e}")
    }
}

/// A sortable table; `foot` rows (totals) stay at the bottom.
fn table(s: &mut String, caption: &str, head: &[&str], rows: &[Vec<Cell>], foot: &[Vec<Cell>]) {
    let _ = write!(
        s,
        "<table class=\"sortable\"><caption>{}</caption><thead><tr>",
        esc(caption)
    );
    for h in head {
        let _ = write!(s, "<th scope=\"col\"><button type=\"button\">{}</button></th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    let cells = |s: &mut String, row: &[Cell]| {
        s.push_str("<tr>");
        for c in row {
            match c.value {
                Some(v) if v.is_finite() => {
                    let _ = write!(s, "<td class=\"n\" data-v=\"{}\">{}</td>", sort_key(v), esc(&c.text));
                }
                Some(_) => {
                    let _ = write!(s, "<td class=\"n\">{}</td>", esc(&c.text));
                }
                None => {
                    let _ = write!(s, "<td>{}</td>", esc(&c.text));
                }
            }
        }
        s.push_str("</tr>");
    };
    for row in rows {
        cells(s, row);
    }
    s.push_str("</tbody>");
    if !foot.is_empty() {
        s.push_str("<tfoot>");
        for row in foot {
            cells(s, row);
        }
        s.push_str("</tfoot>");
    }
    s.push_str("</table>");
}

/// A section: heading, figure (chart, legend, caption), then the data table (collapsed).
fn section(s: &mut String, id: &str, heading: &str, figure: &str, caption: &str, data: &str) {
    let _ = write!(
        s,
        "<section id=\"{id}\" aria-labelledby=\"{id}-h\"><h2 id=\"{id}-h\">{h}</h2><figure>{figure}<figcaption>{c}</figcaption></figure><details><summary>Data table</summary>{data}</details></section>",
        h = esc(heading),
        c = esc(caption),
    );
}

/// The token and cost figures of a row, as cells.
fn figure_cells(f: &Figures) -> Vec<Cell> {
    vec![
        num(usd(f.cost), f.cost),
        num(tokens(f.tokens()), f.tokens()),
        num(tokens(f.input), f.input),
        num(tokens(f.output), f.output),
        num(tokens(f.cache_write), f.cache_write),
        num(tokens(f.cache_read), f.cache_read),
        count(f.requests),
        share(f.cache_hit_ratio()),
    ]
}

const FIGURE_HEAD: [&str; 8] = [
    "Cost",
    "Tokens",
    "Input",
    "Output",
    "Cache write",
    "Cache read",
    "Calls",
    "Cache hit",
];

/// A row of the totals table: its key, label, the two figures and how to show them.
type TotalRow<'a> = (&'a str, &'a str, f64, f64, fn(f64) -> String);

/// The totals beside the naive per-file sum; each value cell carries its exact number
/// (`data-total`, `data-v`) for whoever checks the page against `pisa monthly --json`.
fn totals(s: &mut String, p: &Page) {
    let (t, n) = (&p.totals, &p.naive);
    let rows: [TotalRow<'_>; 8] = [
        ("cost", "Cost (USD)", t.cost, n.cost, usd),
        ("totalTokens", "Tokens", t.tokens(), n.tokens(), tokens),
        ("input", "Input tokens", t.input, n.input, tokens),
        ("output", "Output tokens", t.output, n.output, tokens),
        ("cacheWrite", "Cache-write tokens", t.cache_write, n.cache_write, tokens),
        ("cacheRead", "Cache-read tokens", t.cache_read, n.cache_read, tokens),
        ("requests", "Billed calls", t.requests as f64, n.requests as f64, tokens),
        (
            "compactions",
            "Compactions",
            t.compactions as f64,
            n.compactions as f64,
            tokens,
        ),
    ];
    s.push_str(
        "<section id=\"totals\" aria-labelledby=\"totals-h\"><h2 id=\"totals-h\">Totals</h2><div class=\"cards\">",
    );
    let _ = write!(
        s,
        "<div class=\"card\"><span>Cost</span><strong>{}</strong></div><div class=\"card\"><span>Tokens</span><strong>{}</strong></div><div class=\"card\"><span>Billed calls</span><strong>{}</strong></div><div class=\"card\"><span>Cache hit</span><strong>{}</strong></div>",
        usd(t.cost),
        tokens(t.tokens()),
        t.requests,
        t.cache_hit_ratio()
            .map_or_else(|| "–".into(), |r| format!("{:.1}%", r * 100.0)),
    );
    s.push_str("</div><table class=\"totals\"><caption>Each billed call counted once, beside the naive sum of every file's own totals (what summing Pi's per-session figures gives: history a fork copied is counted again)</caption><thead><tr><th scope=\"col\"></th><th scope=\"col\">Each call once</th><th scope=\"col\">Naive per-file sum</th><th scope=\"col\">Counted twice</th></tr></thead><tbody>");
    for (key, label, once, naive, fmt) in rows {
        let _ = write!(
            s,
            "<tr><th scope=\"row\">{label}</th><td class=\"n\" data-total=\"{key}\" data-v=\"{v}\">{a}</td><td class=\"n\" data-naive=\"{key}\" data-v=\"{nv}\">{b}</td><td class=\"n\">{c}</td></tr>",
            v = number_to_string(once),
            nv = number_to_string(naive),
            a = fmt(once),
            b = fmt(naive),
            c = fmt(naive - once),
        );
    }
    s.push_str("</tbody></table></section>");
}

/// The series of the models of the time chart (the last one grey when it is "other models").
fn model_series(models: &[String], other: bool) -> Vec<Series> {
    models
        .iter()
        .enumerate()
        .map(|(i, m)| Series {
            name: m.clone(),
            color: if other && i + 1 == models.len() {
                OTHER
            } else {
                i % OTHER
            },
        })
        .collect()
}

fn daily(s: &mut String, p: &Page) {
    let t = &p.time;
    let step = if t.weekly { "Week from" } else { "Day" };
    let series = model_series(&t.models, t.models.last().is_some_and(|m| m == "other models"));
    let tips = t
        .keys
        .iter()
        .zip(&t.cost)
        .map(|(k, row)| {
            let mut tip = format!("{k}: {}", usd(row.iter().sum()));
            for (m, c) in t.models.iter().zip(row).filter(|(_, c)| **c != 0.0) {
                let _ = write!(tip, "\n{m}: {}", usd(*c));
            }
            tip
        })
        .collect();
    let peak = t
        .keys
        .iter()
        .zip(&t.figures)
        .max_by(|a, b| a.1.cost.total_cmp(&b.1.cost));
    let desc = match peak {
        Some((k, f)) => format!(
            "Cost in USD per {} from {} to {}, stacked by model ({} drawn). The costliest was {k} with {}.",
            step.to_lowercase(),
            t.keys.first().map_or("", String::as_str),
            t.keys.last().map_or("", String::as_str),
            t.models.len(),
            usd(f.cost)
        ),
        None => "No billed calls with a time.".into(),
    };
    let title = if t.weekly {
        "Weekly cost by model"
    } else {
        "Daily cost by model"
    };
    let chart = Chart {
        id: "chart-daily",
        title,
        desc: &desc,
        x_label: if t.weekly { "Week (starting Monday)" } else { "Day" },
        y_label: "Cost (USD)",
        unit: Unit::Usd,
    };
    let mut fig = String::new();
    svg::columns(
        &mut fig,
        &chart,
        &Columns {
            categories: t.keys.clone(),
            series: series.clone(),
            values: t.cost.clone(),
            tips,
            overlaid: false,
        },
    );
    svg::legend(&mut fig, &series);
    let mut caption = desc.clone();
    if t.undated.requests > 0 {
        let _ = write!(
            caption,
            " {} calls without a time ({}) are not drawn.",
            t.undated.requests,
            usd(t.undated.cost)
        );
    }
    let data = daily_table(t, step);
    section(s, "daily", title, &fig, &caption, &data);
}

/// The cost of each step with calls, per model.
fn daily_table(t: &super::TimeSeries, step: &str) -> String {
    let mut head = vec![step];
    head.extend(t.models.iter().map(String::as_str));
    head.push("Total");
    let rows: Vec<Vec<Cell>> = t
        .keys
        .iter()
        .zip(&t.cost)
        .zip(&t.figures)
        .filter(|(_, f)| f.requests > 0)
        .map(|((k, row), _)| {
            let mut cells = vec![text(k.clone())];
            cells.extend(row.iter().map(|&c| num(usd(c), c)));
            let sum: f64 = row.iter().sum();
            cells.push(num(usd(sum), sum));
            cells
        })
        .collect();
    let mut data = String::new();
    let caption = format!("Cost in USD per {} and model", step.to_lowercase());
    table(&mut data, &caption, &head, &rows, &[]);
    data
}

/// Rows of a keyed table, the rows past [`MAX_ROWS`] summed into one.
fn keyed_rows(items: &[(String, Figures)], rest_label: &str) -> Vec<Vec<Cell>> {
    let mut rows: Vec<Vec<Cell>> = Vec::new();
    for (k, f) in items.iter().take(MAX_ROWS) {
        let mut cells = vec![text(k.clone())];
        cells.extend(figure_cells(f));
        rows.push(cells);
    }
    if items.len() > MAX_ROWS {
        let mut rest = Figures::default();
        for (_, f) in &items[MAX_ROWS..] {
            rest.input += f.input;
            rest.output += f.output;
            rest.cache_read += f.cache_read;
            rest.cache_write += f.cache_write;
            rest.cost += f.cost;
            rest.requests += f.requests;
        }
        let mut cells = vec![text(format!("{} more {rest_label}", items.len() - MAX_ROWS))];
        cells.extend(figure_cells(&rest));
        rows.push(cells);
    }
    rows
}

fn projects(s: &mut String, p: &Page) {
    let shown = &p.projects[..p.projects.len().min(TOP_PROJECTS)];
    let rest: f64 = p.projects[shown.len()..].iter().map(|(_, f)| f.cost).sum();
    let mut labels: Vec<String> = shown.iter().map(|(k, _)| k.clone()).collect();
    let mut values: Vec<Vec<f64>> = shown.iter().map(|(_, f)| vec![f.cost]).collect();
    let mut tips: Vec<String> = shown
        .iter()
        .map(|(k, f)| {
            format!(
                "{k}: {} in {} calls, {} tokens",
                usd(f.cost),
                f.requests,
                tokens(f.tokens())
            )
        })
        .collect();
    if p.projects.len() > shown.len() {
        let n = p.projects.len() - shown.len();
        labels.push(format!("{n} other projects"));
        values.push(vec![rest]);
        tips.push(format!("{n} other projects: {}", usd(rest)));
    }
    let desc = match shown.first() {
        Some((k, f)) => format!(
            "Cost in USD of each of {} projects (the session's working folder), costliest first; the costliest is {k} with {}.",
            p.projects.len(),
            usd(f.cost)
        ),
        None => "No project has billed calls.".into(),
    };
    let chart = Chart {
        id: "chart-projects",
        title: "Cost by project",
        desc: &desc,
        x_label: "Cost (USD)",
        y_label: "",
        unit: Unit::Usd,
    };
    let mut fig = String::new();
    let series = vec![Series {
        name: "cost".into(),
        color: 0,
    }];
    svg::bars(
        &mut fig,
        &chart,
        &Bars {
            labels,
            tips,
            series,
            values,
        },
    );
    let mut head = vec!["Project"];
    head.extend(FIGURE_HEAD);
    let mut data = String::new();
    table(
        &mut data,
        "Usage by project",
        &head,
        &keyed_rows(&p.projects, "projects"),
        &[],
    );
    section(s, "projects", "Cost by project", &fig, &desc, &data);
}

/// What a kind key means, for the reader.
fn kind_label(k: &str) -> String {
    match k {
        "assistant" => "assistant answers".into(),
        "tool" => "tool usage (billed inside tool results)".into(),
        "compaction" => "compaction summaries".into(),
        "branch_summary" => "branch summaries".into(),
        "subagent" => "subagent parts of tool results".into(),
        "transcript" => "subagent transcripts".into(),
        k => match k.strip_prefix("usage:") {
            Some(kind) => format!("usage entry: {kind}"),
            None => k.to_string(),
        },
    }
}

fn kinds(s: &mut String, p: &Page) {
    let series: Vec<Series> = ["input", "output", "cache write", "cache read"]
        .iter()
        .enumerate()
        .map(|(i, n)| Series {
            name: (*n).into(),
            color: i,
        })
        .collect();
    let mut items = p.kinds.clone();
    items.sort_by(|a, b| b.1.tokens().total_cmp(&a.1.tokens()).then_with(|| a.0.cmp(&b.0)));
    let bars = Bars {
        labels: items.iter().map(|(k, _)| kind_label(k)).collect(),
        tips: items
            .iter()
            .map(|(k, f)| {
                format!(
                    "{}: {} tokens ({} input, {} output, {} cache write, {} cache read), {} in {} calls",
                    kind_label(k),
                    tokens(f.tokens()),
                    tokens(f.input),
                    tokens(f.output),
                    tokens(f.cache_write),
                    tokens(f.cache_read),
                    usd(f.cost),
                    f.requests
                )
            })
            .collect(),
        series: series.clone(),
        values: items
            .iter()
            .map(|(_, f)| vec![f.input, f.output, f.cache_write, f.cache_read])
            .collect(),
    };
    let desc = format!(
        "Tokens of each kind of billed record, split into input, output, cache write and cache read: assistant answers, and what most tools miss, usage entries, compaction and branch summaries and tool usage. {} kinds.",
        items.len()
    );
    let chart = Chart {
        id: "chart-kinds",
        title: "Tokens by kind and source",
        desc: &desc,
        x_label: "Tokens",
        y_label: "",
        unit: Unit::Tokens,
    };
    let mut fig = String::new();
    svg::bars(&mut fig, &chart, &bars);
    svg::legend(&mut fig, &series);
    let mut head = vec!["Kind"];
    head.extend(FIGURE_HEAD);
    let labelled: Vec<(String, Figures)> = items.iter().map(|(k, f)| (kind_label(k), *f)).collect();
    let mut data = String::new();
    table(
        &mut data,
        "Usage by kind of record",
        &head,
        &keyed_rows(&labelled, "kinds"),
        &[],
    );
    section(s, "kinds", "Tokens by kind and source", &fig, &desc, &data);
}

fn cache(s: &mut String, p: &Page) {
    let t = &p.time;
    let values: Vec<Option<f64>> = t.figures.iter().map(Figures::cache_hit_ratio).collect();
    let tips = t
        .keys
        .iter()
        .zip(&t.figures)
        .map(|(k, f)| {
            format!(
                "{k}: {} of {} prompt tokens read from the cache",
                f.cache_hit_ratio()
                    .map_or_else(|| "–".into(), |r| format!("{:.1}%", r * 100.0)),
                tokens(f.input + f.cache_read + f.cache_write)
            )
        })
        .collect();
    let desc = format!(
        "Share of prompt tokens (input, cache write and cache read) read from the cache, per {}; {} over the whole range. Days or weeks without calls have no point.",
        if t.weekly { "week" } else { "day" },
        p.totals
            .cache_hit_ratio()
            .map_or_else(|| "–".into(), |r| format!("{:.1}%", r * 100.0)),
    );
    let chart = Chart {
        id: "chart-cache",
        title: "Cache-hit ratio over time",
        desc: &desc,
        x_label: if t.weekly { "Week (starting Monday)" } else { "Day" },
        y_label: "Cache hit (% of prompt tokens)",
        unit: Unit::Share,
    };
    let mut fig = String::new();
    svg::line(
        &mut fig,
        &chart,
        &Line {
            categories: t.keys.clone(),
            values,
            tips,
            share: true,
        },
    );
    let rows: Vec<Vec<Cell>> = t
        .keys
        .iter()
        .zip(&t.figures)
        .filter(|(_, f)| f.requests > 0)
        .map(|(k, f)| {
            vec![
                text(k.clone()),
                share(f.cache_hit_ratio()),
                num(tokens(f.cache_read), f.cache_read),
                num(
                    tokens(f.input + f.cache_read + f.cache_write),
                    f.input + f.cache_read + f.cache_write,
                ),
            ]
        })
        .collect();
    let mut data = String::new();
    let step = if t.weekly { "Week from" } else { "Day" };
    table(
        &mut data,
        "Cache hits per step",
        &[step, "Cache hit", "Cache read", "Prompt tokens"],
        &rows,
        &[],
    );
    section(s, "cache", "Cache-hit ratio over time", &fig, &desc, &data);
}

/// A session as the reader knows it: its name, else its file.
fn session_label(x: &SessionSpend) -> String {
    match &x.name {
        Some(n) if !n.trim().is_empty() => n.clone(),
        _ => x.file.rsplit('/').next().unwrap_or(&x.file).to_string(),
    }
}

fn sessions(s: &mut String, p: &Page) {
    let series = vec![
        Series {
            name: "own calls".into(),
            color: 0,
        },
        Series {
            name: "its subagents".into(),
            color: 1,
        },
        Series {
            name: "copied from the session it forked (not billed again)".into(),
            color: OTHER,
        },
    ];
    let tip = |x: &SessionSpend| {
        format!(
            "{}\n{}\nproject {}\nown {} ({} calls), subagents {}, fork copies {}{}",
            session_label(x),
            x.file,
            x.project,
            usd(x.own.cost),
            x.own.requests,
            usd(x.subagent_cost),
            usd(x.copied_cost),
            x.spawned_by
                .as_deref()
                .map_or_else(String::new, |b| format!("\nrun as a subagent by {b}")),
        )
    };
    let bars = Bars {
        labels: p.sessions.iter().map(session_label).collect(),
        tips: p.sessions.iter().map(tip).collect(),
        series: series.clone(),
        values: p
            .sessions
            .iter()
            .map(|x| vec![x.own.cost, x.subagent_cost, x.copied_cost])
            .collect(),
    };
    let desc = format!(
        "The {} costliest of {} sessions by their own spend and their subagents', in USD. Own calls are billed to the session; its subagents' spend is what the sessions it ran cost (they have their own rows too); fork copies are calls it holds that the session it was forked from made, not billed again.",
        p.sessions.len(),
        p.session_count
    );
    let chart = Chart {
        id: "chart-sessions",
        title: "Costliest sessions: own and inherited spend",
        desc: &desc,
        x_label: "Cost (USD)",
        y_label: "",
        unit: Unit::Usd,
    };
    let mut fig = String::new();
    svg::bars(&mut fig, &chart, &bars);
    svg::legend(&mut fig, &series);
    let data = sessions_table(&p.sessions);
    section(s, "sessions", "Costliest sessions", &fig, &desc, &data);
}

/// The sessions' table.
fn sessions_table(sessions: &[SessionSpend]) -> String {
    let rows: Vec<Vec<Cell>> = sessions
        .iter()
        .map(|x| {
            vec![
                text(session_label(x)),
                text(x.project.clone()),
                text(x.file.clone()),
                num(usd(x.own.cost), x.own.cost),
                num(usd(x.subagent_cost), x.subagent_cost),
                num(usd(x.copied_cost), x.copied_cost),
                num(tokens(x.own.tokens()), x.own.tokens()),
                count(x.own.requests),
            ]
        })
        .collect();
    let head = [
        "Session",
        "Project",
        "File",
        "Own cost",
        "Subagents",
        "Fork copies",
        "Own tokens",
        "Own calls",
    ];
    let mut data = String::new();
    table(&mut data, "The costliest sessions", &head, &rows, &[]);
    data
}

/// Every compaction (or day), then the sums per model.
fn compaction_tables(c: &super::Compactions) -> String {
    let mut data = String::new();
    let rows: Vec<Vec<Cell>> = c
        .marks
        .iter()
        .map(|m| {
            let opt = |x: Option<f64>| x.map_or_else(|| text("unknown"), |v| num(tokens(v), v));
            let ratio = m
                .before
                .zip(m.after)
                .filter(|(b, _)| *b > 0.0)
                .map(|(b, a)| (b - a) / b);
            vec![
                text(m.when.clone()),
                text(m.model.clone()),
                text(m.session.clone()),
                count(m.count),
                opt(m.before),
                opt(m.after),
                share(ratio),
            ]
        })
        .collect();
    let head = [
        "When (UTC)",
        "Model",
        "Session",
        "Compactions",
        "Tokens before",
        "Estimated after",
        "Reduction",
    ];
    table(&mut data, "Every compaction", &head, &rows, &[]);
    let rows: Vec<Vec<Cell>> = c
        .by_model
        .iter()
        .map(|m| {
            vec![
                text(m.key.clone()),
                count(m.count),
                num(tokens(m.tokens_before), m.tokens_before),
                num(tokens(m.tokens_after), m.tokens_after),
                share(m.reduction_ratio()),
                num(usd(m.cost), m.cost),
            ]
        })
        .collect();
    let head = [
        "Model",
        "Compactions",
        "Tokens before",
        "Estimated after",
        "Reduction",
        "Summary cost",
    ];
    table(&mut data, "Compactions by model", &head, &rows, &[]);
    data
}

fn compactions(s: &mut String, p: &Page) {
    let c = &p.compactions;
    let series = vec![
        Series {
            name: "tokens before".into(),
            color: 4,
        },
        Series {
            name: "estimated tokens after".into(),
            color: 0,
        },
    ];
    let what = if c.per_day { "day" } else { "compaction" };
    let tips = c
        .marks
        .iter()
        .map(|m| {
            let mut t = match c.per_day {
                true => format!("{}: {} compactions", m.when, m.count),
                false => format!("{} · {}\n{}", m.when, m.model, m.session),
            };
            let _ = write!(
                t,
                "\nbefore {} → after {}",
                m.before.map_or_else(|| "unknown".into(), tokens),
                m.after.map_or_else(|| "unknown".into(), tokens)
            );
            t
        })
        .collect();
    let columns = Columns {
        categories: c
            .marks
            .iter()
            .map(|m| m.when.get(..10).unwrap_or(&m.when).to_string())
            .collect(),
        series: series.clone(),
        values: c
            .marks
            .iter()
            .map(|m| vec![m.before.unwrap_or(0.0), m.after.unwrap_or(0.0)])
            .collect(),
        tips,
        overlaid: true,
    };
    let desc = format!(
        "Context tokens before each {what} and Pi's estimate right after it, in time order: {} compactions ({} with a known effect) took {} tokens down to {} ({} removed).",
        c.totals.count,
        c.totals.measured,
        tokens(c.totals.tokens_before),
        tokens(c.totals.tokens_after),
        c.totals
            .reduction_ratio()
            .map_or_else(|| "–".into(), |r| format!("{:.1}%", r * 100.0)),
    );
    let chart = Chart {
        id: "chart-compactions",
        title: "What each compaction did to the context",
        desc: &desc,
        x_label: if c.per_day {
            "Day (compactions summed)"
        } else {
            "Compaction, in time order (day, UTC)"
        },
        y_label: "Context (tokens)",
        unit: Unit::Tokens,
    };
    let mut fig = String::new();
    svg::columns(&mut fig, &chart, &columns);
    svg::legend(&mut fig, &series);
    let data = compaction_tables(c);
    section(s, "compactions", "Compactions", &fig, &desc, &data);
}

#[cfg(test)]
mod tests {
    use super::super::data::{CompactionMark, Compactions, MAX_MARKS, Scope, TOP_MODELS, TOP_SESSIONS, TimeSeries};
    use super::*;
    use crate::report::rollup::{Group, Options};

    fn busy() -> Figures {
        Figures {
            input: 123_456_789.0,
            output: 12_345_678.0,
            cache_read: 987_654_321.0,
            cache_write: 23_456_789.0,
            cost: 1_234.567_891_234,
            requests: 123_456,
            compactions: 12,
            summary_cost: 12.345_678,
            tool_cost: 1.234_567,
            api_cost: 1_000.0,
            subscription_cost: 234.567_891_234,
            repriced: 0,
            unpriced: 0,
        }
    }

    /// The largest page the limits allow: a year of days, every model slot, the most rows a
    /// table lists, the most compactions drawn one by one, long names everywhere.
    fn largest_page() -> Page {
        let day = |i: usize| {
            jiff::civil::date(2026, 1, 1)
                .checked_add(jiff::Span::new().days(i as i64))
                .unwrap()
        };
        let name =
            |what: &str, i: usize| format!("/Users/someone/work/{what}-with-a-long-name-{i:04}/and/a/deeper/folder");
        let days: Vec<String> = (0..366).map(|i| day(i).to_string()).collect();
        let models: Vec<String> = (0..=TOP_MODELS)
            .map(|i| format!("openrouter/anthropic/claude-opus-4-{i}-long"))
            .collect();
        let keyed = |what: &str, n: usize| (0..n).map(|i| (name(what, i), busy())).collect::<Vec<_>>();
        Page {
            options: Options {
                group: Group::Daily,
                tz: jiff::tz::TimeZone::UTC,
                tz_name: "UTC".into(),
                since: None,
                until: None,
                project: None,
                model: None,
                breakdown: false,
                order: None,
                cost: crate::pricing::CostMode::Recorded,
                billing: crate::pricing::BillingFilter::All,
                price_table: "pi-ai@1.6.0".into(),
            },
            scope: Scope::default(),
            totals: busy(),
            naive: busy(),
            time: TimeSeries {
                weekly: false,
                cost: vec![vec![123.456_789_012; models.len()]; days.len()],
                figures: vec![busy(); days.len()],
                keys: days.clone(),
                models,
                undated: Figures::default(),
            },
            projects: keyed("project", MAX_ROWS + 10),
            kinds: keyed("usage:kind", 40),
            sessions: (0..TOP_SESSIONS)
                .map(|i| SessionSpend {
                    file: format!(
                        "{}/2026-01-01T00-00-00-000Z_019d40d3-682a-7e2d-a1c8-efdd5e1e862d.jsonl",
                        name("s", i)
                    ),
                    name: Some(name("session", i)),
                    project: name("project", i),
                    own: busy(),
                    subagent_cost: 12.3,
                    copied_cost: 4.56,
                    spawned_by: Some(name("parent", i)),
                })
                .collect(),
            session_count: 10_000,
            compactions: Compactions {
                marks: (0..MAX_MARKS)
                    .map(|i| CompactionMark {
                        when: format!("{} 12:34", days[i % days.len()]),
                        session: format!("{}/2026-01-01T00-00-00-000Z_019d40d3.jsonl", name("s", i)),
                        model: "anthropic/claude-sonnet-4-5-20250929".into(),
                        count: 1,
                        before: Some(187_654.0),
                        after: Some(23_456.0),
                    })
                    .collect(),
                ..Compactions::default()
            },
        }
    }

    #[test]
    fn the_largest_page_the_limits_allow_stays_under_two_megabytes() {
        let mut out = Vec::new();
        write(&mut out, &largest_page(), "2026-12-31 23:59 UTC").unwrap();
        assert!(out.len() < 2_000_000, "{} bytes", out.len());
    }
}
