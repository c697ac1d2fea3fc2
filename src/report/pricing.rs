//! `pisa pricing`: what pisa charges per model, and where the price comes from.

use std::io::Write;

use comfy_table::presets::UTF8_FULL_CONDENSED;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

use super::terminal_safe;
use crate::pricing::{Price, Pricing};

/// One model's line: `provider/model` (or an override's key), its price and source.
#[derive(Debug)]
pub struct Line<'a> {
    pub key: String,
    pub price: &'a Price,
    pub source: &'a str,
    pub billing: &'static str,
}

/// The config's overrides, then the registry's models, that `keep(provider, model)` accepts
/// (an override keyed by a bare model is matched with provider `*`).
pub fn rows<'a>(p: &'a Pricing, keep: impl Fn(&str, &str) -> bool) -> Vec<Line<'a>> {
    let overrides = p.overrides.iter().filter_map(|(k, price)| {
        let (provider, model) = k.split_once('/').unwrap_or(("*", k));
        keep(provider, model).then(|| Line {
            key: k.clone(),
            price,
            source: "config",
            billing: p.billing(provider).name(),
        })
    });
    let registry = p
        .registry
        .models()
        .iter()
        .filter(|m| keep(&m.provider, &m.id))
        .map(|m| Line {
            key: format!("{}/{}", m.provider, m.id),
            price: &m.cost,
            source: &p.registry.label,
            billing: p.billing(&m.provider).name(),
        });
    overrides.chain(registry).collect()
}

/// USD per million tokens, as short as exact.
fn rate(x: f64) -> String {
    format!("${}", crate::js::number_to_string(x))
}

/// The lines as a table, with a footer naming the registry and the config.
pub fn table(out: &mut impl Write, p: &Pricing, rows: &[Line<'_>], terminal: bool) -> std::io::Result<()> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(if terminal {
        ContentArrangement::Dynamic
    } else {
        ContentArrangement::Disabled
    });
    t.set_header([
        "Model",
        "Input",
        "Output",
        "Cache read",
        "Cache write",
        "Tiers",
        "Billing",
        "Source",
    ]);
    for l in rows {
        let r = &l.price.rates;
        let tiers = l
            .price
            .tiers
            .iter()
            .map(|t| {
                format!(
                    "above {}: {}/{}",
                    crate::js::number_to_string(t.input_tokens_above),
                    rate(t.rates.input),
                    rate(t.rates.output)
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            Cell::new(terminal_safe(&l.key)),
            right(rate(r.input)),
            right(rate(r.output)),
            right(rate(r.cache_read)),
            right(rate(r.cache_write)),
            Cell::new(tiers),
            Cell::new(l.billing),
            Cell::new(terminal_safe(l.source)),
        ]);
    }
    writeln!(out, "{t}")?;
    let config = match p.overrides.len() {
        0 => String::new(),
        n => format!(", {n} overrides from the config"),
    };
    writeln!(
        out,
        "USD per million tokens; {} ({}){config}. A call costs rate / 1e6 × tokens per kind (the highest tier its prompt exceeds; 1-hour cache writes at twice the input rate), as Pi computes it.",
        p.registry.label,
        terminal_safe(&p.registry.origin)
    )
}
