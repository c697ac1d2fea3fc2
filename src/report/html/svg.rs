//! Inline SVG charts drawn by hand: columns over time, horizontal bars, a line. Each chart
//! names itself for screen readers (`<title>`, `<desc>`, `aria-labelledby`), labels its axes
//! with units, and carries a tooltip (`<title>`) per column, bar or point. Colours come from
//! CSS classes (`s0`…`s8`), so the page's light and dark palettes apply.

use std::fmt::Write;

use super::esc;

/// Width and height of the drawing space (the SVG scales to the page width).
const W: f64 = 960.0;
/// Margins: left (tick labels and the y-axis title), right, top, bottom (tick labels and the
/// x-axis title).
const ML: f64 = 84.0;
const MR: f64 = 16.0;
const MT: f64 = 14.0;
const MB: f64 = 56.0;

/// The palette slot of "everything else" (grey in both modes).
pub const OTHER: usize = 8;

/// What the numbers of a chart are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Usd,
    Tokens,
    /// A share from 0 to 1, shown as a percentage.
    Share,
}

impl Unit {
    /// A value in full, for tooltips and tables.
    pub fn full(self, v: f64) -> String {
        match self {
            Unit::Usd => crate::report::usd(v),
            Unit::Tokens => crate::report::tokens(v),
            Unit::Share => format!("{:.1}%", v * 100.0),
        }
    }

    /// A short value for axis ticks (`$1.5k`, `12M`, `40%`).
    pub fn tick(self, v: f64) -> String {
        match self {
            Unit::Share => format!("{:.0}%", v * 100.0),
            Unit::Usd if v < 1000.0 => {
                let digits = if v != 0.0 && v < 0.1 {
                    3
                } else if v < 10.0 && v.fract() != 0.0 {
                    2
                } else {
                    0
                };
                format!("${v:.digits$}")
            }
            Unit::Usd => format!("${}", si(v)),
            Unit::Tokens => si(v),
        }
    }
}

/// `1234567` as `1.23M`.
fn si(v: f64) -> String {
    let (d, s) = match v.abs() {
        a if a >= 1e12 => (1e12, "T"),
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => return format!("{v:.0}"),
    };
    let x = v / d;
    let text = format!("{x:.2}");
    format!("{}{s}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// A number fit for geometry: infinities and NaN (a hostile file can sum to them) count 0.
fn finite(v: f64) -> f64 {
    if v.is_finite() { v.max(0.0) } else { 0.0 }
}

/// The top of the value axis and its step: a round number at or above `max`.
fn scale(max: f64) -> (f64, f64) {
    if max <= 0.0 {
        return (1.0, 0.25);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// What every chart says about itself.
#[derive(Debug, Clone, Copy)]
pub struct Chart<'a> {
    /// Unique in the page; prefixes the ids of its title and description.
    pub id: &'a str,
    pub title: &'a str,
    /// A sentence or two for screen readers: what the chart shows and its largest values.
    pub desc: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub unit: Unit,
}

/// One series of a chart: its name and palette slot.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub color: usize,
}

/// Columns along a category axis (days, compactions), stacked or drawn over each other.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    pub categories: Vec<String>,
    pub series: Vec<Series>,
    /// `values[category][series]`.
    pub values: Vec<Vec<f64>>,
    /// One tooltip per category.
    pub tips: Vec<String>,
    /// Draw the series over each other (later ones narrower) instead of stacking them.
    pub overlaid: bool,
}

fn open(out: &mut String, c: &Chart<'_>, height: f64) {
    let _ = write!(
        out,
        r#"<svg class="chart" id="{id}" role="img" aria-labelledby="{id}-t {id}-d" viewBox="0 0 {W} {height}" preserveAspectRatio="xMidYMid meet"><title id="{id}-t">{t}</title><desc id="{id}-d">{d}</desc>"#,
        id = c.id,
        t = esc(c.title),
        d = esc(c.desc),
    );
}

/// The value axis (left, vertical), its grid lines and title; returns the scale's top.
fn y_axis(out: &mut String, c: &Chart<'_>, max: f64, plot_h: f64) -> f64 {
    let (top, step) = scale(max);
    let mut v = 0.0;
    out.push_str(r#"<g class="axis">"#);
    while v <= top + step / 2.0 {
        let y = MT + plot_h - v / top * plot_h;
        let _ = write!(
            out,
            r#"<line class="grid" x1="{ML}" x2="{x2}" y1="{y:.1}" y2="{y:.1}"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"#,
            x2 = W - MR,
            tx = ML - 6.0,
            ty = y + 4.0,
            l = esc(&c.unit.tick(v)),
        );
        v += step;
    }
    let _ = write!(
        out,
        r#"<text class="label" transform="translate(16 {cy:.1}) rotate(-90)" text-anchor="middle">{l}</text></g>"#,
        cy = MT + plot_h / 2.0,
        l = esc(c.y_label),
    );
    top
}

/// The title of the category axis, under the tick labels.
fn x_title(out: &mut String, c: &Chart<'_>, height: f64) {
    let _ = write!(
        out,
        r#"<text class="label" x="{x:.1}" y="{y:.1}" text-anchor="middle">{l}</text>"#,
        x = ML + (W - ML - MR) / 2.0,
        y = height - 8.0,
        l = esc(c.x_label),
    );
}

/// Category labels under the plot, thinned to about a dozen.
fn x_ticks(out: &mut String, categories: &[String], band: f64, base: f64) {
    let every = categories.len().div_ceil(12).max(1);
    out.push_str(r#"<g class="axis">"#);
    for (i, cat) in categories.iter().enumerate().filter(|(i, _)| i % every == 0) {
        let x = ML + band * (i as f64 + 0.5);
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="middle">{l}</text>"#,
            y = base + 18.0,
            l = esc(cat)
        );
    }
    let _ = write!(
        out,
        r#"<line class="base" x1="{ML}" x2="{x2}" y1="{base:.1}" y2="{base:.1}"/></g>"#,
        x2 = W - MR
    );
}

/// A column chart.
pub fn columns(out: &mut String, c: &Chart<'_>, d: &Columns) {
    let height = 340.0;
    let plot_h = height - MT - MB;
    let total = |row: &Vec<f64>| -> f64 {
        match d.overlaid {
            true => row.iter().copied().map(finite).fold(0.0, f64::max),
            false => row.iter().copied().map(finite).sum(),
        }
    };
    let max = d.values.iter().map(total).fold(0.0, f64::max);
    open(out, c, height);
    let top = y_axis(out, c, max, plot_h);
    let band = (W - ML - MR) / d.categories.len().max(1) as f64;
    let base = MT + plot_h;
    for (i, row) in d.values.iter().enumerate() {
        let x0 = ML + band * i as f64;
        let _ = write!(
            out,
            r#"<g class="col"><title>{t}</title><rect class="hit" x="{x0:.1}" y="{MT}" width="{band:.2}" height="{plot_h:.1}"/>"#,
            t = esc(d.tips.get(i).map_or("", String::as_str)),
        );
        let mut y = base;
        for (s, &v) in row.iter().enumerate() {
            let h = finite(v) / top * plot_h;
            if h <= 0.0 {
                continue;
            }
            let shrink = if d.overlaid { 0.8 - 0.35 * s as f64 } else { 0.8 };
            let w = (band * shrink).max(0.6);
            let x = x0 + (band - w) / 2.0;
            let y_top = if d.overlaid { base - h } else { y - h };
            let color = d.series.get(s).map_or(OTHER, |s| s.color);
            let _ = write!(
                out,
                r#"<rect class="s{color}" x="{x:.2}" y="{y_top:.2}" width="{w:.2}" height="{h:.2}"/>"#
            );
            y = y_top;
        }
        out.push_str("</g>");
    }
    x_ticks(out, &d.categories, band, base);
    x_title(out, c, height);
    out.push_str("</svg>");
}

/// Horizontal bars, one per labelled item, stacked by series, with the total at the end.
#[derive(Debug, Clone, Default)]
pub struct Bars {
    pub labels: Vec<String>,
    pub tips: Vec<String>,
    pub series: Vec<Series>,
    /// `values[item][series]`.
    pub values: Vec<Vec<f64>>,
}

/// Room for the item labels left of the bars.
const LABEL_W: f64 = 250.0;
const ROW_H: f64 = 26.0;

/// A horizontal bar chart.
pub fn bars(out: &mut String, c: &Chart<'_>, d: &Bars) {
    let n = d.labels.len().max(1) as f64;
    let height = MT + n * ROW_H + 48.0;
    let (left, right) = (LABEL_W, W - MR - 70.0);
    let max = d
        .values
        .iter()
        .map(|r| r.iter().copied().map(finite).sum::<f64>())
        .fold(0.0, f64::max);
    let (top, step) = scale(max);
    let x_of = |v: f64| left + v / top * (right - left);
    open(out, c, height);
    let base = MT + n * ROW_H;
    out.push_str(r#"<g class="axis">"#);
    let mut v = 0.0;
    while v <= top + step / 2.0 {
        let x = x_of(v);
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{base:.1}"/><text x="{x:.1}" y="{ty:.1}" text-anchor="middle">{l}</text>"#,
            ty = base + 16.0,
            l = esc(&c.unit.tick(v)),
        );
        v += step;
    }
    let _ = write!(
        out,
        r#"<text class="label" x="{cx:.1}" y="{y:.1}" text-anchor="middle">{l}</text></g>"#,
        cx = (left + right) / 2.0,
        y = height - 8.0,
        l = esc(c.x_label)
    );
    for (i, row) in d.values.iter().enumerate() {
        bar_row(out, c, d, i, row, (left, MT + ROW_H * i as f64), &x_of);
    }
    out.push_str("</svg>");
}

/// One bar: its label, its segments, its total, under one tooltip.
fn bar_row(
    out: &mut String,
    c: &Chart<'_>,
    d: &Bars,
    i: usize,
    row: &[f64],
    at: (f64, f64),
    x_of: &dyn Fn(f64) -> f64,
) {
    let (left, y) = at;
    let label = d.labels.get(i).map_or("", String::as_str);
    let short: String = match label.chars().count() > 38 {
        true => label.chars().take(37).chain(std::iter::once('…')).collect(),
        false => label.to_string(),
    };
    let _ = write!(
        out,
        r#"<g class="bar"><title>{t}</title><rect class="hit" x="0" y="{y:.1}" width="{W}" height="{ROW_H}"/><text class="item" x="{lx:.1}" y="{ty:.1}" text-anchor="end">{l}</text>"#,
        t = esc(d.tips.get(i).map_or("", String::as_str)),
        lx = left - 8.0,
        ty = y + ROW_H / 2.0 + 4.0,
        l = esc(&short),
    );
    let mut sum = 0.0;
    for (s, &v) in row.iter().enumerate() {
        let v = finite(v);
        let (x0, x1) = (x_of(sum), x_of(sum + v));
        sum += v;
        if x1 - x0 <= 0.0 {
            continue;
        }
        let color = d.series.get(s).map_or(OTHER, |s| s.color);
        let _ = write!(
            out,
            r#"<rect class="s{color}" x="{x0:.2}" y="{by:.1}" width="{w:.2}" height="{h:.1}"/>"#,
            by = y + 4.0,
            w = x1 - x0,
            h = ROW_H - 8.0,
        );
    }
    let _ = write!(
        out,
        r#"<text class="value" x="{x:.1}" y="{ty:.1}">{v}</text></g>"#,
        x = x_of(sum) + 6.0,
        ty = y + ROW_H / 2.0 + 4.0,
        v = esc(&c.unit.full(sum)),
    );
}

/// A line over categories, with a point (and tooltip) per known value.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pub categories: Vec<String>,
    pub values: Vec<Option<f64>>,
    pub tips: Vec<String>,
    /// The value axis ends at 1 (a share).
    pub share: bool,
}

/// A line chart.
pub fn line(out: &mut String, c: &Chart<'_>, d: &Line) {
    let height = 300.0;
    let plot_h = height - MT - MB;
    let max = match d.share {
        true => 1.0,
        false => d.values.iter().flatten().copied().map(finite).fold(0.0, f64::max),
    };
    open(out, c, height);
    let top = y_axis(out, c, max, plot_h);
    let band = (W - ML - MR) / d.categories.len().max(1) as f64;
    let base = MT + plot_h;
    let point = |i: usize, v: f64| (ML + band * (i as f64 + 0.5), base - finite(v) / top * plot_h);
    // Steps without a value have no point; the line joins the points on both sides of them
    // (the axis keeps every step, so the gap shows as a longer segment).
    let mut path = String::new();
    for (i, v) in d.values.iter().enumerate() {
        if let Some(v) = v {
            let (x, y) = point(i, *v);
            let _ = write!(path, "{}{x:.1} {y:.1}", if path.is_empty() { "M" } else { " L" });
        }
    }
    if !path.is_empty() {
        let _ = write!(out, r#"<path class="line s0" d="{}"/>"#, path.trim_start());
    }
    let r = if d.values.iter().flatten().count() > 120 {
        2.0
    } else {
        3.5
    };
    for (i, v) in d.values.iter().enumerate() {
        if let Some(v) = v {
            let (x, y) = point(i, *v);
            let _ = write!(
                out,
                r#"<circle class="dot s0" cx="{x:.1}" cy="{y:.1}" r="{r:.1}"><title>{t}</title></circle>"#,
                t = esc(d.tips.get(i).map_or("", String::as_str)),
            );
        }
    }
    x_ticks(out, &d.categories, band, base);
    x_title(out, c, height);
    out.push_str("</svg>");
}

/// A legend for the series of a chart (HTML, so that it wraps).
pub fn legend(out: &mut String, series: &[Series]) {
    out.push_str(r#"<ul class="legend">"#);
    for s in series {
        let _ = write!(
            out,
            r#"<li><svg width="12" height="12" aria-hidden="true"><rect class="s{c}" width="12" height="12"/></svg>{n}</li>"#,
            c = s.color,
            n = esc(&s.name)
        );
    }
    out.push_str("</ul>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_round_and_cover_the_maximum() {
        assert_eq!(scale(0.0), (1.0, 0.25));
        assert_eq!(scale(7.3), (8.0, 2.0));
        assert_eq!(scale(1234.0), (1250.0, 250.0));
        assert_eq!(scale(0.9), (1.0, 0.2));
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(Unit::Tokens.tick(1_500_000.0), "1.5M");
        assert_eq!(Unit::Tokens.tick(12_000.0), "12k");
        assert_eq!(Unit::Usd.tick(2500.0), "$2.5k");
        assert_eq!(Unit::Usd.tick(2.5), "$2.50");
        assert_eq!(Unit::Share.tick(0.4), "40%");
    }

    #[test]
    fn hostile_numbers_draw_nothing_rather_than_nan() {
        let mut out = String::new();
        let chart = Chart {
            id: "x",
            title: "t",
            desc: "d",
            x_label: "x",
            y_label: "y",
            unit: Unit::Tokens,
        };
        let d = Columns {
            categories: vec!["a".into(), "b".into()],
            series: vec![Series {
                name: "m".into(),
                color: 0,
            }],
            values: vec![vec![f64::INFINITY], vec![f64::NAN]],
            tips: vec!["<a>".into(), "b".into()],
            overlaid: false,
        };
        columns(&mut out, &chart, &d);
        assert!(!out.contains("NaN") && !out.contains("inf"), "{out}");
        assert!(out.contains("&lt;a&gt;"));
    }
}
