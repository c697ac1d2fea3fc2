//! `pisa daily|weekly|monthly|session|model|project|kind`: the usage frame grouped by
//! one key, each billed call counted once (inherited fork copies are left out).
//!
//! Keys that depend on the time zone are computed here with jiff. The calls are read back from
//! the corpus one file at a time and summed as they come ([`crate::frame::each_call`]): no
//! frame is built, so memory does not grow with the corpus.

use std::io::Write;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use polars::prelude::*;
use serde_json::{Value, json};

use super::{terminal_safe, tokens, usd};
use crate::analyze::parse_iso_ms;
use crate::corpus::billed::Billed;
use crate::corpus::{Corpus, SessionSummary};
use crate::frame::{CallRow, each_call_with};
use crate::js::num_json;
use crate::pricing::{Billing, BillingFilter, CostMode, Pricing};

/// What the rows of a report are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Daily,
    Weekly,
    Monthly,
    Session,
    Model,
    Project,
    Kind,
}

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Daily => "daily",
            Group::Weekly => "weekly",
            Group::Monthly => "monthly",
            Group::Session => "session",
            Group::Model => "model",
            Group::Project => "project",
            Group::Kind => "kind",
        }
    }

    fn is_time(self) -> bool {
        matches!(self, Group::Daily | Group::Weekly | Group::Monthly)
    }

    fn column(self) -> &'static str {
        match self {
            Group::Daily => "Date",
            Group::Weekly => "Week from",
            Group::Monthly => "Month",
            Group::Session => "Session",
            Group::Model => "Model",
            Group::Project => "Project",
            Group::Kind => "Kind",
        }
    }
}

/// Sort order of the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Asc,
    Desc,
}

/// Which records count, and how rows are keyed.
#[derive(Debug, Clone)]
pub struct Options {
    pub group: Group,
    pub tz: TimeZone,
    /// The zone's name as the user gave it (or the system's).
    pub tz_name: String,
    /// First and last day (inclusive) in `tz`.
    pub since: Option<Date>,
    pub until: Option<Date>,
    /// Case-insensitive substring of the project (the session's cwd).
    pub project: Option<String>,
    /// Case-insensitive substring of the model key (`provider/model`).
    pub model: Option<String>,
    /// Per model within each row.
    pub breakdown: bool,
    /// Default: time keys ascending, other keys by cost descending.
    pub order: Option<Order>,
    /// Which cost is summed.
    pub cost: CostMode,
    /// Which calls count, by how their provider bills.
    pub billing: BillingFilter,
    /// The price table's name (`pi-ai@1.6.0`), for the footer.
    pub price_table: String,
}

/// The sums of one row.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Figures {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub cost: f64,
    pub requests: u64,
    pub compactions: u64,
    /// Cost of compaction and branch summaries.
    pub summary_cost: f64,
    /// Cost billed inside tool results.
    pub tool_cost: f64,
    /// Of `cost`, what calls to api-billed providers cost.
    pub api_cost: f64,
    /// Of `cost`, what calls to subscription-billed providers would have cost through the API.
    pub subscription_cost: f64,
    /// Calls whose cost comes from the price table (`--cost calculate` or `auto`).
    pub repriced: u64,
    /// Calls with tokens and a cost of 0: no price recorded, or none known.
    pub unpriced: u64,
}

impl Figures {
    pub fn tokens(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    /// Share of prompt tokens read from the cache.
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        let prompt = self.input + self.cache_read + self.cache_write;
        (prompt > 0.0).then(|| self.cache_read / prompt)
    }

    fn share(&self, part: f64) -> Option<f64> {
        (self.cost > 0.0).then(|| part / self.cost)
    }

    fn add(&mut self, o: &Figures) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.cost += o.cost;
        self.requests += o.requests;
        self.compactions += o.compactions;
        self.summary_cost += o.summary_cost;
        self.tool_cost += o.tool_cost;
        self.api_cost += o.api_cost;
        self.subscription_cost += o.subscription_cost;
        self.repriced += o.repriced;
        self.unpriced += o.unpriced;
    }

    fn json(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("input".into(), num_json(self.input));
        m.insert("output".into(), num_json(self.output));
        m.insert("cacheWrite".into(), num_json(self.cache_write));
        m.insert("cacheRead".into(), num_json(self.cache_read));
        m.insert("totalTokens".into(), num_json(self.tokens()));
        m.insert("cost".into(), num_json(self.cost));
        m.insert("apiCost".into(), num_json(self.api_cost));
        m.insert("subscriptionCost".into(), num_json(self.subscription_cost));
        m.insert("requests".into(), json!(self.requests));
        m.insert("compactions".into(), json!(self.compactions));
        m.insert("cacheHitRatio".into(), json!(self.cache_hit_ratio()));
        m.insert("summaryCostShare".into(), json!(self.share(self.summary_cost)));
        m.insert("toolCostShare".into(), json!(self.share(self.tool_cost)));
        m
    }
}

/// One row: its key, a label for the table, and the sums (per model when asked).
#[derive(Debug, Clone)]
pub struct Row {
    pub key: String,
    /// Session rows: session id, project and name.
    pub session: Option<SessionLabel>,
    pub figures: Figures,
    pub models: Vec<(String, Figures)>,
}

/// What a session row shows besides its file.
#[derive(Debug, Clone, Default)]
pub struct SessionLabel {
    pub session_id: Option<String>,
    pub project: String,
    pub name: Option<String>,
    pub last_activity: Option<String>,
    /// The session that ran it as a subagent.
    pub spawned_by: Option<String>,
    /// Sessions it ran as subagents.
    pub children: usize,
    /// What its subagents cost (see `SessionSummary::subagent`), whatever the filters.
    pub subagent: crate::usage::Totals,
}

/// A finished report.
#[derive(Debug, Clone)]
pub struct Report {
    pub group: Group,
    pub tz_name: String,
    pub since: Option<Date>,
    pub until: Option<Date>,
    pub rows: Vec<Row>,
    pub totals: Figures,
    pub cost: CostMode,
    pub billing: BillingFilter,
    pub price_table: String,
}

/// Pi's grouping key of a billed call (`provider/(responseModel ?? model)`; tool results
/// and summaries together, as Pi's own breakdown has them).
pub fn model_key(source: &str, provider: Option<&str>, model: Option<&str>, response_model: Option<&str>) -> String {
    let mut key = String::new();
    model_key_into(&mut key, source, provider, model, response_model);
    key
}

/// [`model_key`] into `key` (cleared first).
fn model_key_into(
    key: &mut String,
    source: &str,
    provider: Option<&str>,
    model: Option<&str>,
    response_model: Option<&str>,
) {
    key.clear();
    let model = match source {
        "assistant" => response_model.or(model),
        "usage" => model,
        _ => {
            key.push_str("Tools/summaries");
            return;
        }
    };
    key.push_str(provider.unwrap_or("?"));
    key.push('/');
    key.push_str(model.unwrap_or("?"));
}

/// The `kind` key: the source, and a usage entry's own kind.
pub fn kind_key(source: &str, kind: Option<&str>) -> String {
    match (source, kind) {
        ("usage", Some(k)) => format!("usage:{k}"),
        (s, _) => s.to_string(),
    }
}

/// The version of the reports' JSON documents (`schemaVersion`); raised when a key changes
/// meaning or goes away (new keys do not raise it). Their JSON Schemas are in `schemas/`.
pub const SCHEMA_VERSION: u32 = 1;

/// A key used when a row has no time or no value.
const NONE_KEY: &str = "(none)";

struct Keyer<'a> {
    o: &'a Options,
}

impl Keyer<'_> {
    fn day(&self, ms: Option<f64>) -> Option<Date> {
        let ts = jiff::Timestamp::from_millisecond(ms? as i64).ok()?;
        Some(self.o.tz.to_datetime(ts).date())
    }

    fn time_key(&self, day: Option<Date>) -> String {
        let Some(d) = day else { return NONE_KEY.into() };
        match self.o.group {
            Group::Weekly => {
                let back = i64::from(d.weekday().to_monday_zero_offset());
                d.checked_sub(jiff::Span::new().days(back)).unwrap_or(d).to_string()
            }
            Group::Monthly => format!("{:04}-{:02}", d.year(), d.month()),
            _ => d.to_string(),
        }
    }

    /// Whether a record at `day` in `project` with `model` passes the filters.
    fn keep(&self, day: Option<Date>, project: &str, model: &str) -> bool {
        if self.o.since.is_some() || self.o.until.is_some() {
            let Some(d) = day else { return false };
            if self.o.since.is_some_and(|s| d < s) || self.o.until.is_some_and(|u| d > u) {
                return false;
            }
        }
        contains(project, self.o.project.as_deref()) && contains(model, self.o.model.as_deref())
    }
}

/// Whether a record at `ms` (Unix ms) in `project` with `model` passes the filters of `o`.
pub fn passes(o: &Options, ms: Option<f64>, project: &str, model: &str) -> bool {
    let k = Keyer { o };
    k.keep(k.day(ms), project, model)
}

fn contains(hay: &str, needle: Option<&str>) -> bool {
    needle.is_none_or(|n| hay.to_lowercase().contains(&n.to_lowercase()))
}

/// Build a report from the corpus's billed calls (and its compactions), priced by `pricing`.
///
/// The sums run over the calls in the usage frame's row order (sessions by path, records in
/// file order), one after the other, so a report is the same bit for bit on every run; a
/// parallel group-by would add costs in an order that changes from run to run.
pub fn build(corpus: &Corpus, pricing: &Pricing, o: &Options) -> std::io::Result<Report> {
    let k = Keyer { o };
    let mut rows = Rows {
        rows: Vec::new(),
        index: hashbrown::HashMap::new(),
        days: hashbrown::HashMap::new(),
        breakdown: o.breakdown,
    };
    let mut model = String::new();
    // Each call's day is found on the thread pool; the sums stay in order on this thread.
    let day = |call: &Billed<'_>| k.day(call.ms.map(|t| t as f64));
    each_call_with(corpus, pricing, o.cost, day, |row, day| {
        add_usage(&mut rows, row, day, &k, &mut model)
    })?;
    add_compactions(&mut rows, corpus, &k);
    let mut rows = rows.rows;
    if o.group == Group::Session {
        label_sessions(&mut rows, corpus);
    }
    let mut totals = Figures::default();
    for r in &mut rows {
        totals.add(&r.figures);
        r.models
            .sort_by(|a, b| b.1.cost.total_cmp(&a.1.cost).then_with(|| a.0.cmp(&b.0)));
    }
    sort_rows(&mut rows, o);
    Ok(Report {
        group: o.group,
        tz_name: o.tz_name.clone(),
        since: o.since,
        until: o.until,
        rows,
        totals,
        cost: o.cost,
        billing: o.billing,
        price_table: o.price_table.clone(),
    })
}

/// The rows of a report being built, by key.
struct Rows {
    rows: Vec<Row>,
    index: hashbrown::HashMap<String, usize>,
    /// The row of each day seen, in a time group: a day's key is made once, not per call.
    days: hashbrown::HashMap<Option<Date>, usize>,
    /// Keep sums per model too.
    breakdown: bool,
}

impl Rows {
    fn add(&mut self, key: &str, model: &str, f: &Figures) {
        let r = self.row(key);
        add_to(&mut self.rows[r], self.breakdown.then_some(model), f);
    }

    /// [`Rows::add`] to the row of `day` in a time group.
    fn add_on(&mut self, day: Option<Date>, k: &Keyer<'_>, model: &str, f: &Figures) {
        let r = match self.days.get(&day) {
            Some(&r) => r,
            None => {
                let r = self.row(&k.time_key(day));
                self.days.insert(day, r);
                r
            }
        };
        add_to(&mut self.rows[r], self.breakdown.then_some(model), f);
    }

    /// The index of the row of `key`, made if new.
    fn row(&mut self, key: &str) -> usize {
        let rows = &mut self.rows;
        *self.index.entry_ref(key).or_insert_with(|| {
            rows.push(Row {
                key: key.to_string(),
                session: None,
                figures: Figures::default(),
                models: Vec::new(),
            });
            rows.len() - 1
        })
    }
}

/// A billed call on `day` (in the report's zone), unless another record holds it (see
/// `inherited_reason`) or the options leave it out. `model` is a buffer for its model key.
fn add_usage(rows: &mut Rows, row: &CallRow<'_>, day: Option<Date>, k: &Keyer<'_>, model: &mut String) {
    if row.inherited() {
        return;
    }
    let r = &row.call;
    let subscription = row.priced.billing == Billing::Subscription;
    if !k.o.billing.keeps(row.priced.billing) {
        return;
    }
    let source = r.source.name();
    model_key_into(model, source, r.provider, r.model, r.response_model);
    let project = row.file.project;
    if !k.keep(day, project, model) {
        return;
    }
    let summary = matches!(source, "compaction" | "branch_summary");
    let chosen = row.priced.chosen;
    let c = chosen.cost;
    let f = Figures {
        input: r.input,
        output: r.output,
        cache_read: r.cache_read,
        cache_write: r.cache_write,
        cost: c,
        requests: 1,
        compactions: 0,
        summary_cost: if summary { c } else { 0.0 },
        tool_cost: if source == "tool" { c } else { 0.0 },
        api_cost: if subscription { 0.0 } else { c },
        subscription_cost: if subscription { c } else { 0.0 },
        repriced: chosen.repriced.into(),
        unpriced: chosen.unpriced.into(),
    };
    match k.o.group {
        g if g.is_time() => rows.add_on(day, k, model, &f),
        Group::Session => rows.add(row.file.rel, model, &f),
        Group::Model => rows.add(model, model, &f),
        Group::Project => rows.add(project, model, &f),
        _ => rows.add(&kind_key(source, r.kind), model, &f),
    }
}

/// Every compaction, keyed as the calls are (a fork's copies left out).
fn add_compactions(rows: &mut Rows, corpus: &Corpus, k: &Keyer<'_>) {
    for s in &corpus.sessions {
        let project = &s.row.project;
        for c in s.compactions.iter().filter(|c| !c.inherited) {
            let day = k.day(c.timestamp.as_deref().and_then(parse_iso_ms));
            let model = format!(
                "{}/{}",
                c.provider.as_deref().unwrap_or("?"),
                c.model.as_deref().unwrap_or("?")
            );
            if !k.keep(day, project, &model) {
                continue;
            }
            let f = Figures {
                compactions: 1,
                ..Figures::default()
            };
            match k.o.group {
                g if g.is_time() => rows.add_on(day, k, &model, &f),
                Group::Session => rows.add(&s.rel, &model, &f),
                Group::Model => rows.add(&model, &model, &f),
                Group::Project => rows.add(project, &model, &f),
                _ => rows.add("compaction", &model, &f),
            }
        }
    }
}

/// Each session row's label: its id, project, name and last activity.
fn label_sessions(rows: &mut [Row], corpus: &Corpus) {
    let by_rel: hashbrown::HashMap<&str, &SessionSummary> =
        corpus.sessions.iter().map(|s| (s.rel.as_str(), s)).collect();
    for r in rows {
        if let Some(s) = by_rel.get(r.key.as_str()) {
            r.session = Some(SessionLabel {
                session_id: s.session_id.clone(),
                project: s.row.project.clone(),
                name: s.row.name.clone(),
                last_activity: s.row.last_activity.clone(),
                spawned_by: s.spawned_by.clone(),
                children: s.children.len(),
                subagent: s.subagent,
            });
        }
    }
}

/// Time rows by time, the others by cost; oldest or most expensive first unless asked.
fn sort_rows(rows: &mut [Row], o: &Options) {
    let order = o
        .order
        .unwrap_or(if o.group.is_time() { Order::Asc } else { Order::Desc });
    if o.group.is_time() {
        rows.sort_by(|a, b| a.key.cmp(&b.key));
    } else {
        rows.sort_by(|a, b| {
            a.figures
                .cost
                .total_cmp(&b.figures.cost)
                .then_with(|| b.key.cmp(&a.key))
        });
    }
    if order == Order::Desc {
        rows.reverse();
    }
}

fn add_to(row: &mut Row, model: Option<&str>, f: &Figures) {
    row.figures.add(f);
    if let Some(m) = model {
        match row.models.iter_mut().find(|(k, _)| k == m) {
            Some((_, g)) => g.add(f),
            None => row.models.push((m.to_string(), *f)),
        }
    }
}

fn percent(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |x| format!("{:.1}%", x * 100.0))
}

fn figure_cells(f: &Figures, split: bool) -> Vec<Cell> {
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    let mut cells = vec![
        right(tokens(f.input)),
        right(tokens(f.output)),
        right(tokens(f.cache_write)),
        right(tokens(f.cache_read)),
        right(tokens(f.tokens())),
        right(usd(f.cost)),
    ];
    if split {
        cells.push(right(usd(f.subscription_cost)));
    }
    cells.extend([
        right(f.requests.to_string()),
        right(f.compactions.to_string()),
        right(percent(f.cache_hit_ratio())),
        right(percent(f.share(f.summary_cost))),
        right(percent(f.share(f.tool_cost))),
    ]);
    cells
}

/// The report as a terminal table with a totals row.
pub fn table(out: &mut impl Write, r: &Report, terminal: bool) -> std::io::Result<()> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(if terminal {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    });
    let mut header = vec![r.group.column().to_string()];
    if r.group == Group::Session {
        header.extend([
            "Project".into(),
            "Name".into(),
            "Last activity".into(),
            "Subagents".into(),
        ]);
    }
    // The subscription column when there is subscription value to split from API spend.
    let split = r.totals.subscription_cost != 0.0 || r.billing == BillingFilter::Subscription;
    header.extend(["Input", "Output", "Cache write", "Cache read", "Total tokens", "Cost"].map(String::from));
    if split {
        header.push("of which subscription".into());
    }
    header.extend(["Requests", "Compactions", "Cache hit", "Summaries", "Tools"].map(String::from));
    t.set_header(header);
    let pad = if r.group == Group::Session { 4 } else { 0 };
    for row in &r.rows {
        let mut cells = vec![Cell::new(terminal_safe(&row.key))];
        if let Some(s) = &row.session {
            cells.extend(session_cells(s));
        } else if pad > 0 {
            cells.extend((0..pad).map(|_| Cell::new("")));
        }
        cells.extend(figure_cells(&row.figures, split));
        t.add_row(cells);
        for (m, f) in &row.models {
            let mut cells = vec![Cell::new(format!("  └ {}", terminal_safe(m)))];
            cells.extend((0..pad).map(|_| Cell::new("")));
            cells.extend(figure_cells(f, split));
            t.add_row(cells);
        }
    }
    let mut cells = vec![Cell::new("Total")];
    cells.extend((0..pad).map(|_| Cell::new("")));
    cells.extend(figure_cells(&r.totals, split));
    t.add_row(cells);
    writeln!(out, "{t}")?;
    footer(out, r)
}

/// A session row's own columns: project, name, last activity and what its subagents cost.
fn session_cells(s: &SessionLabel) -> [Cell; 4] {
    let last = s
        .last_activity
        .as_deref()
        .map_or_else(String::new, |t| t.get(..16).unwrap_or(t).replacen('T', " ", 1));
    let subagents = match (s.children, s.subagent.tokens() > 0.0) {
        (0, false) => String::new(),
        (n, _) => format!("{} ({n} sessions)", usd(s.subagent.cost)),
    };
    [
        Cell::new(terminal_safe(&s.project)),
        Cell::new(terminal_safe(s.name.as_deref().unwrap_or(""))),
        Cell::new(last),
        Cell::new(subagents).set_alignment(CellAlignment::Right),
    ]
}

/// The line under the table: the report, its zone and range, and what it leaves out.
fn footer(out: &mut impl Write, r: &Report) -> std::io::Result<()> {
    let range = match (r.since, r.until) {
        (None, None) => String::new(),
        (s, u) => format!(
            ", {} to {}",
            s.map_or_else(|| "the start".into(), |d| d.to_string()),
            u.map_or_else(|| "today".into(), |d| d.to_string())
        ),
    };
    writeln!(
        out,
        "{} report, time zone {}{range}; each billed call counted once (copies in forks, repeated lines, subagent tool results and transcripts left out).",
        r.group.name(),
        r.tz_name
    )?;
    match pricing_note(r) {
        Some(note) => writeln!(out, "{note}"),
        None => Ok(()),
    }
}

/// What the footer says about cost: the mode and billing when not the defaults, how many
/// calls were repriced, and how many have tokens but no price (never a silent $0).
pub fn pricing_note(r: &Report) -> Option<String> {
    let t = &r.totals;
    let mut parts = Vec::new();
    if r.cost != CostMode::Recorded {
        parts.push(format!(
            "cost {}: {} calls priced from {}",
            r.cost.name(),
            t.repriced,
            r.price_table
        ));
    }
    if r.billing != BillingFilter::All {
        parts.push(format!("only {}-billed providers", r.billing.name()));
    }
    if t.unpriced > 0 {
        parts.push(match r.cost {
            CostMode::Recorded => format!(
                "{} calls have tokens but no recorded cost, counted as $0 (--cost auto prices those with a known price)",
                t.unpriced
            ),
            _ => format!(
                "{} calls have tokens but no known price, counted as $0 (add one under [prices] in the config)",
                t.unpriced
            ),
        });
    }
    (!parts.is_empty()).then(|| format!("{}.", parts.join("; ")))
}

/// The report as one JSON document.
pub fn to_json(r: &Report) -> Value {
    let row_json = |row: &Row| {
        let mut m = serde_json::Map::new();
        m.insert("key".into(), json!(row.key));
        if let Some(s) = &row.session {
            m.insert("sessionId".into(), json!(s.session_id));
            m.insert("project".into(), json!(s.project));
            m.insert("name".into(), json!(s.name));
            m.insert("lastActivityAt".into(), json!(s.last_activity));
            m.insert("spawnedBy".into(), json!(s.spawned_by));
            m.insert("children".into(), json!(s.children));
            m.insert("subagentTokens".into(), num_json(s.subagent.tokens()));
            m.insert("subagentCost".into(), num_json(s.subagent.cost));
        }
        m.extend(row.figures.json());
        if !row.models.is_empty() {
            m.insert(
                "models".into(),
                row.models
                    .iter()
                    .map(|(k, f)| {
                        let mut o = serde_json::Map::new();
                        o.insert("model".into(), json!(k));
                        o.extend(f.json());
                        Value::Object(o)
                    })
                    .collect(),
            );
        }
        Value::Object(m)
    };
    json!({
        "schemaVersion": SCHEMA_VERSION,
        "report": r.group.name(),
        "timezone": r.tz_name,
        "since": r.since.map(|d| d.to_string()),
        "until": r.until.map(|d| d.to_string()),
        "rows": r.rows.iter().map(row_json).collect::<Vec<_>>(),
        "totals": Value::Object(r.totals.json()),
        "pricing": {
            "cost": r.cost.name(),
            "billing": r.billing.name(),
            "priceTable": r.price_table,
            "repriced": r.totals.repriced,
            "unpriced": r.totals.unpriced,
        },
    })
}

/// The report as a frame (one row per key, or per key and model with a breakdown), for CSV.
pub fn to_frame(r: &Report) -> PolarsResult<DataFrame> {
    let mut key = Vec::new();
    let mut model: Vec<Option<String>> = Vec::new();
    let mut figs = Vec::new();
    for row in &r.rows {
        if row.models.is_empty() {
            key.push(row.key.clone());
            model.push(None);
            figs.push(row.figures);
        }
        for (m, f) in &row.models {
            key.push(row.key.clone());
            model.push(Some(m.clone()));
            figs.push(*f);
        }
    }
    // Token sums are whole numbers for any file Pi wrote: print them as integers then.
    let whole = figs.iter().all(|f| {
        [f.input, f.output, f.cache_read, f.cache_write]
            .iter()
            .all(|x| x.fract() == 0.0 && x.abs() < 9e15)
    });
    let col_t = |name: &str, f: fn(&Figures) -> f64| {
        let v: Vec<f64> = figs.iter().map(f).collect();
        if whole {
            Column::new(name.into(), v.iter().map(|&x| x as i64).collect::<Vec<_>>())
        } else {
            Column::new(name.into(), v)
        }
    };
    let col_f = |name: &str, f: fn(&Figures) -> f64| Column::new(name.into(), figs.iter().map(f).collect::<Vec<_>>());
    let col_o =
        |name: &str, f: fn(&Figures) -> Option<f64>| Column::new(name.into(), figs.iter().map(f).collect::<Vec<_>>());
    let mut cols = vec![Column::new(r.group.name().into(), key)];
    if r.rows.iter().any(|row| !row.models.is_empty()) {
        cols.push(Column::new("model".into(), model));
    }
    cols.extend([
        col_t("input", |f| f.input),
        col_t("output", |f| f.output),
        col_t("cache_write", |f| f.cache_write),
        col_t("cache_read", |f| f.cache_read),
        col_t("total_tokens", Figures::tokens),
        col_f("cost", |f| f.cost),
        col_f("api_cost", |f| f.api_cost),
        col_f("subscription_cost", |f| f.subscription_cost),
        Column::new("requests".into(), figs.iter().map(|f| f.requests).collect::<Vec<_>>()),
        Column::new(
            "compactions".into(),
            figs.iter().map(|f| f.compactions).collect::<Vec<_>>(),
        ),
        col_o("cache_hit_ratio", Figures::cache_hit_ratio),
        col_o("summary_cost_share", |f| f.share(f.summary_cost)),
        col_o("tool_cost_share", |f| f.share(f.tool_cost)),
    ]);
    DataFrame::new_infer_height(cols)
}
