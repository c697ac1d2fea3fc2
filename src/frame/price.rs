//! The usage frame's pricing columns: `cost_calculated`, `price_source`, `billing` and
//! `cost_effective`, filled when the frame is built (not by the workers, so that the cache
//! holds what the files say and a new price table or config needs no re-scan).

use hashbrown::HashMap;
use polars::prelude::*;

use crate::pricing::{self, CostMode, Pricing, Tokens};

/// Fill the pricing columns of the usage frame `u` from `pricing`, the cost under `mode`.
pub fn price(u: &mut DataFrame, pricing: &Pricing, mode: CostMode) -> PolarsResult<()> {
    for column in columns(u, pricing, mode)? {
        u.replace(&column.name().clone(), column)?;
    }
    Ok(())
}

/// A model's price and its source's name, if it has one.
type Found<'a> = Option<(&'a pricing::Price, &'a str)>;

/// The four columns, computed row by row.
fn columns(u: &DataFrame, pricing: &Pricing, mode: CostMode) -> PolarsResult<[Column; 4]> {
    let text = |name: &str| -> PolarsResult<Vec<Option<&str>>> { Ok(u.column(name)?.str()?.iter().collect()) };
    let number = |name: &str| -> PolarsResult<Vec<Option<f64>>> { Ok(u.column(name)?.f64()?.iter().collect()) };
    let (provider, model) = (text("provider")?, text("model")?);
    let (input, output, cache_read) = (number("input")?, number("output")?, number("cache_read")?);
    let (cache_write, cache_write_1h, cost) = (number("cache_write")?, number("cache_write_1h")?, number("cost")?);
    let n = u.height();
    let mut calculated: Vec<Option<f64>> = Vec::with_capacity(n);
    let mut source: Vec<Option<&str>> = Vec::with_capacity(n);
    let mut billing: Vec<&str> = Vec::with_capacity(n);
    let mut effective: Vec<f64> = Vec::with_capacity(n);
    // One lookup per provider and model, not per row.
    let mut prices: HashMap<(Option<&str>, Option<&str>), Found<'_>> = HashMap::new();
    for i in 0..n {
        // A subagent's part names its model `provider/model` (pi-subagents), without a provider.
        let key = match (provider[i], model[i]) {
            (Some(p), Some(m)) => Some((p, m)),
            (None, Some(m)) => m.split_once('/'),
            _ => None,
        };
        let found = *prices.entry((provider[i], model[i])).or_insert_with(|| {
            let (p, m) = key?;
            pricing
                .price(p, m)
                .map(|(price, from)| (price, pricing.source_name(from)))
        });
        let tokens = Tokens {
            input: input[i].unwrap_or(0.0),
            output: output[i].unwrap_or(0.0),
            cache_read: cache_read[i].unwrap_or(0.0),
            cache_write: cache_write[i].unwrap_or(0.0),
            cache_write_1h: cache_write_1h[i],
        };
        let c = found.map(|(price, _)| pricing::calculate(price, &tokens).total);
        calculated.push(c);
        source.push(found.map(|(_, from)| from));
        billing.push(pricing.billing(key.map_or("", |(p, _)| p)).name());
        effective.push(mode.choose(cost[i].unwrap_or(0.0), tokens.total(), c).cost);
    }
    Ok([
        Column::new("cost_calculated".into(), calculated),
        Column::new("price_source".into(), source),
        Column::new("billing".into(), billing),
        Column::new("cost_effective".into(), effective),
    ])
}

/// Per file, what its calls cost under a [`CostMode`] (for `pisa sessions --cost`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileCost {
    /// Every call in the file (what Pi sums, fork copies included).
    pub cost: f64,
    /// The calls it owns (copies of other files' calls left out).
    pub own_cost: f64,
    pub repriced: u64,
    pub unpriced: u64,
}

/// The costs of every file under `mode`, by relative path, and the corpus's (each call once).
#[derive(Debug, Clone)]
pub struct Repricing {
    pub mode: CostMode,
    pub price_table: String,
    pub files: hashbrown::HashMap<String, FileCost>,
    pub total: FileCost,
}

impl Repricing {
    /// Sum the priced usage frame `u` (built with [`price`] under `mode`) by file.
    pub fn of(u: &DataFrame, mode: CostMode, price_table: &str) -> PolarsResult<Repricing> {
        let file: Vec<Option<&str>> = u.column("file")?.str()?.iter().collect();
        let number = |name: &str| -> PolarsResult<Vec<f64>> {
            Ok(u.column(name)?.f64()?.iter().map(|x| x.unwrap_or(0.0)).collect())
        };
        let cost = number("cost")?;
        let parts = [
            number("input")?,
            number("output")?,
            number("cache_read")?,
            number("cache_write")?,
        ];
        let calculated: Vec<Option<f64>> = u.column("cost_calculated")?.f64()?.iter().collect();
        let inherited: Vec<bool> = u.column("inherited")?.bool()?.iter().map(|b| b == Some(true)).collect();
        let mut files: hashbrown::HashMap<String, FileCost> = hashbrown::HashMap::new();
        let mut total = FileCost::default();
        for i in 0..u.height() {
            let t = parts[0][i] + parts[1][i] + parts[2][i] + parts[3][i];
            let c = mode.choose(cost[i], t, calculated[i]);
            let f = files.entry_ref(file[i].unwrap_or_default()).or_default();
            f.cost += c.cost;
            f.repriced += u64::from(c.repriced);
            f.unpriced += u64::from(c.unpriced);
            if !inherited[i] {
                f.own_cost += c.cost;
                total.cost += c.cost;
                total.own_cost += c.cost;
                total.repriced += u64::from(c.repriced);
                total.unpriced += u64::from(c.unpriced);
            }
        }
        Ok(Repricing {
            mode,
            price_table: price_table.to_string(),
            files,
            total,
        })
    }
}
