//! What the page shows, gathered from the corpus and its frames: a handful of aggregates
//! (days × models, projects, kinds, the costliest sessions, compactions), never the rows
//! themselves, so the page stays small whatever the corpus. Every usage sum comes from
//! [`rollup::build`], so the page's totals are `pisa monthly --json`'s.

use hashbrown::HashMap;
use jiff::civil::Date;

use crate::corpus::{Corpus, Inherited};
use crate::frame::each_call;
use crate::pricing::Pricing;
use crate::report::compactions;
use crate::report::rollup::{self, Figures, Group, Options};

/// Models drawn on their own in the daily chart; the rest are summed as "other models".
pub const TOP_MODELS: usize = 7;
/// Projects drawn in the chart (the table lists every project up to [`MAX_ROWS`]).
pub const TOP_PROJECTS: usize = 15;
/// Sessions shown, costliest first.
pub const TOP_SESSIONS: usize = 20;
/// Rows a table lists at most (the rest are summed in one row).
pub const MAX_ROWS: usize = 500;
/// Compactions drawn one by one; above this they are summed per day.
pub const MAX_MARKS: usize = 500;
/// A time axis longer than this many days is drawn by week.
const MAX_DAYS: i64 = 400;

/// Everything the page shows.
#[derive(Debug, Clone)]
pub struct Page {
    pub options: Options,
    /// The scan: sessions, files seen, bytes read, damaged files, skipped files.
    pub scope: Scope,
    /// Each billed call once (the monthly report's totals).
    pub totals: Figures,
    /// The naive per-file sum over the same records: every call each file holds.
    pub naive: Figures,
    pub time: TimeSeries,
    pub projects: Vec<(String, Figures)>,
    pub kinds: Vec<(String, Figures)>,
    pub sessions: Vec<SessionSpend>,
    /// Sessions with spend in the report (shown or not).
    pub session_count: usize,
    pub compactions: Compactions,
}

/// What was read.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope {
    pub sessions: usize,
    pub files: usize,
    pub bytes: u64,
    pub damaged: usize,
    pub skipped: usize,
}

/// Cost by model along the time axis, and the figures of each step.
#[derive(Debug, Clone, Default)]
pub struct TimeSeries {
    /// By week (a long range) rather than by day.
    pub weekly: bool,
    /// Every day (or week) from the first to the last with usage, empty ones included.
    pub keys: Vec<String>,
    /// The models drawn, costliest first; the last may be "other models".
    pub models: Vec<String>,
    /// `cost[step][model]`.
    pub cost: Vec<Vec<f64>>,
    pub figures: Vec<Figures>,
    /// Calls without a time (not on the axis).
    pub undated: Figures,
}

/// A session's spend: its own calls, its subagents' and the fork copies it holds.
#[derive(Debug, Clone, Default)]
pub struct SessionSpend {
    pub file: String,
    pub name: Option<String>,
    pub project: String,
    pub own: Figures,
    /// What the sessions it ran as subagents own (whatever the filters).
    pub subagent_cost: f64,
    /// Calls it holds that an earlier session owns (copied when it was forked): not billed again.
    pub copied_cost: f64,
    pub spawned_by: Option<String>,
}

/// The compactions: one mark each, or summed per day when there are many.
#[derive(Debug, Clone, Default)]
pub struct Compactions {
    pub marks: Vec<CompactionMark>,
    pub per_day: bool,
    pub totals: compactions::Summary,
    pub by_model: Vec<compactions::Summary>,
}

/// One compaction (or a day's).
#[derive(Debug, Clone, Default)]
pub struct CompactionMark {
    /// The time (`YYYY-MM-DD HH:MM`, UTC) or the day.
    pub when: String,
    pub session: String,
    pub model: String,
    pub count: u64,
    pub before: Option<f64>,
    pub after: Option<f64>,
}

/// Gather the page from a corpus, its calls priced by `pricing`.
pub fn gather(corpus: &Corpus, pricing: &Pricing, o: &Options) -> std::io::Result<Page> {
    let report = |group: Group, breakdown: bool| {
        rollup::build(
            corpus,
            pricing,
            &Options {
                group,
                breakdown,
                order: None,
                ..o.clone()
            },
        )
    };
    let monthly = report(Group::Monthly, false)?;
    let extras = extras(corpus, pricing, o)?;
    let sessions = report(Group::Session, false)?;
    let session_count = sessions.rows.len();
    Ok(Page {
        options: o.clone(),
        scope: Scope {
            sessions: corpus.sessions.len(),
            files: corpus.sessions.len() + corpus.rejected.len() + corpus.issues.len(),
            bytes: corpus.bytes,
            damaged: corpus.damaged(),
            skipped: corpus.rejected.iter().filter(|r| !r.record.not_session()).count() + corpus.issues.len(),
        },
        totals: monthly.totals,
        naive: naive(corpus, o, &extras, monthly.totals.compactions),
        time: time_series(corpus, pricing, o)?,
        projects: pairs(report(Group::Project, false)?),
        kinds: pairs(report(Group::Kind, false)?),
        sessions: costliest(sessions, &extras),
        session_count,
        compactions: compaction_marks(corpus, o),
    })
}

/// The naive per-file sum. Unfiltered, Pi's per-file totals summed as the corpus has them
/// (`pisa sessions --json`'s `naiveTotal`, to the last bit); filtered, every record of a
/// session file that passes the filters (the same sum, added in another order).
fn naive(corpus: &Corpus, o: &Options, x: &Extras, compactions: u64) -> Figures {
    let mut f = Figures {
        compactions: compactions + x.copied_compactions(corpus, o),
        ..x.naive
    };
    if o.since.is_none() && o.until.is_none() && o.project.is_none() && o.model.is_none() {
        let t = &corpus.naive_totals;
        (f.input, f.output, f.cache_read, f.cache_write, f.cost) =
            (t.input, t.output, t.cache_read, t.cache_write, t.cost);
    }
    f
}

fn pairs(r: rollup::Report) -> Vec<(String, Figures)> {
    r.rows.into_iter().map(|row| (row.key, row.figures)).collect()
}

/// Sums over the usage frame that the rollup leaves out: every record each file holds (the
/// naive per-file sum) and, per file, the cost of the fork copies it holds.
#[derive(Debug, Default)]
struct Extras {
    naive: Figures,
    copied: HashMap<String, f64>,
}

impl Extras {
    /// Compactions a fork copied: counted again by a per-file sum.
    fn copied_compactions(&self, corpus: &Corpus, o: &Options) -> u64 {
        let mut n = 0;
        for s in &corpus.sessions {
            for c in s.compactions.iter().filter(|c| c.inherited) {
                let model = format!(
                    "{}/{}",
                    c.provider.as_deref().unwrap_or("?"),
                    c.model.as_deref().unwrap_or("?")
                );
                let ms = c.timestamp.as_deref().and_then(crate::analyze::parse_iso_ms);
                n += u64::from(rollup::passes(o, ms, &s.row.project, &model));
            }
        }
        n
    }
}

/// One pass over the usage frame for [`Extras`], with the report's filters. Transcripts are
/// not session files (Pi's per-file totals never see them), so the naive sum leaves them out.
fn extras(corpus: &Corpus, pricing: &Pricing, o: &Options) -> std::io::Result<Extras> {
    let mut x = Extras::default();
    each_call(corpus, pricing, o.cost, |row| {
        let r = &row.call;
        let origin = r.source.name();
        let model = rollup::model_key(origin, r.provider, r.model, r.response_model);
        if origin == "transcript" || !rollup::passes(o, r.ms.map(|t| t as f64), row.file.project, &model) {
            return;
        }
        let n = &mut x.naive;
        n.input += r.input;
        n.output += r.output;
        n.cache_read += r.cache_read;
        n.cache_write += r.cache_write;
        n.cost += r.cost;
        n.requests += 1;
        if row.reason == Some(Inherited::Copy) {
            *x.copied.entry_ref(row.file.rel).or_default() += r.cost;
        }
    })?;
    Ok(x)
}

/// Cost by model over days (weeks when the range is long), empty steps included.
fn time_series(corpus: &Corpus, pricing: &Pricing, o: &Options) -> std::io::Result<TimeSeries> {
    let build = |group| {
        let o = Options {
            group,
            breakdown: true,
            order: None,
            ..o.clone()
        };
        rollup::build(corpus, pricing, &o)
    };
    let mut r = build(Group::Daily)?;
    let dates = |r: &rollup::Report| -> Vec<Date> { r.rows.iter().filter_map(|row| row.key.parse().ok()).collect() };
    let span = match (dates(&r).first(), dates(&r).last()) {
        (Some(a), Some(b)) => a.until(*b).map_or(0, |s| s.get_days()),
        _ => 0,
    };
    let weekly = i64::from(span) > MAX_DAYS;
    if weekly {
        r = build(Group::Weekly)?;
    }
    let mut by_model: HashMap<&str, f64> = HashMap::new();
    for row in &r.rows {
        for (m, f) in &row.models {
            *by_model.entry(m.as_str()).or_default() += f.cost;
        }
    }
    let mut models: Vec<(&str, f64)> = by_model.into_iter().collect();
    models.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let mut names: Vec<String> = models.iter().take(TOP_MODELS).map(|m| m.0.to_string()).collect();
    if models.len() > TOP_MODELS {
        names.push("other models".into());
    }
    let mut t = TimeSeries {
        weekly,
        models: names,
        ..TimeSeries::default()
    };
    fill_steps(&mut t, &r, &dates(&r));
    Ok(t)
}

/// One step per day (or week) from the first to the last date, empty steps included.
fn fill_steps(t: &mut TimeSeries, r: &rollup::Report, dates: &[Date]) {
    let by_key: HashMap<&str, &rollup::Row> = r.rows.iter().map(|row| (row.key.as_str(), row)).collect();
    if let Some(row) = by_key.get("(none)") {
        t.undated = row.figures;
    }
    let (Some(&first), Some(&last)) = (dates.first(), dates.last()) else {
        return;
    };
    let step = jiff::Span::new().days(if t.weekly { 7 } else { 1 });
    let mut d = first;
    while d <= last {
        let key = d.to_string();
        let mut cost = vec![0.0; t.models.len()];
        let mut figures = Figures::default();
        if let Some(row) = by_key.get(key.as_str()) {
            figures = row.figures;
            for (m, f) in &row.models {
                let slot = t.models.iter().position(|n| n == m).unwrap_or(t.models.len() - 1);
                cost[slot] += f.cost;
            }
        }
        t.keys.push(key);
        t.cost.push(cost);
        t.figures.push(figures);
        match d.checked_add(step) {
            Ok(next) => d = next,
            Err(_) => break,
        }
    }
}

/// The costliest sessions (own and subagent spend), with the copies they hold.
fn costliest(r: rollup::Report, x: &Extras) -> Vec<SessionSpend> {
    let mut out: Vec<SessionSpend> = r
        .rows
        .into_iter()
        .map(|row| {
            let label = row.session.unwrap_or_default();
            SessionSpend {
                copied_cost: x.copied.get(&row.key).copied().unwrap_or(0.0),
                file: row.key,
                name: label.name,
                project: label.project,
                own: row.figures,
                subagent_cost: label.subagent.cost,
                spawned_by: label.spawned_by,
            }
        })
        .collect();
    let spend = |s: &SessionSpend| s.own.cost + s.subagent_cost;
    out.sort_by(|a, b| spend(b).total_cmp(&spend(a)).then_with(|| a.file.cmp(&b.file)));
    out.truncate(TOP_SESSIONS);
    out
}

/// Every compaction the filters keep, in time order; summed per day when there are many.
fn compaction_marks(corpus: &Corpus, o: &Options) -> Compactions {
    let r = compactions::build(corpus, o);
    let per_day = r.lines.len() > MAX_MARKS;
    let mut marks: Vec<CompactionMark> = Vec::new();
    for l in &r.lines {
        let time = l.c.timestamp.as_deref().unwrap_or("");
        let when = match per_day {
            true => time.get(..10).unwrap_or(time).to_string(),
            false => time.get(..16).unwrap_or(time).replacen('T', " ", 1),
        };
        let known = l.c.tokens_before.zip(l.c.estimated_tokens_after);
        match marks.last_mut() {
            Some(m) if per_day && m.when == when => {
                m.count += 1;
                if let Some((b, a)) = known {
                    m.before = Some(m.before.unwrap_or(0.0) + b);
                    m.after = Some(m.after.unwrap_or(0.0) + a);
                }
            }
            _ => marks.push(CompactionMark {
                when,
                session: if per_day { String::new() } else { l.session.rel.clone() },
                model: if per_day { String::new() } else { l.model.clone() },
                count: 1,
                before: known.map(|k| k.0).or(l.c.tokens_before),
                after: known.map(|k| k.1),
            }),
        }
    }
    Compactions {
        marks,
        per_day,
        totals: r.totals,
        by_model: r.by_model,
    }
}
