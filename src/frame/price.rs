//! The usage frame's pricing columns: `cost_calculated`, `price_source`, `billing` and
//! `cost_effective`, computed when the rows are read back (not by the workers, so that the
//! cache holds what the files say and a new price table or config needs no re-scan).

use hashbrown::HashMap;

use crate::corpus::Corpus;
use crate::corpus::billed::Billed;
use crate::pricing::{self, Billing, Chosen, CostMode, Pricing, Tokens};

/// The pricing columns of one call.
#[derive(Debug, Clone, Copy)]
pub struct Priced<'p> {
    /// Its cost at the price table's price, when the model has one.
    pub calculated: Option<f64>,
    /// The name of that price's source.
    pub source: Option<&'p str>,
    pub billing: Billing,
    /// The cost under the mode (`cost_effective`), and how it was found.
    pub chosen: Chosen,
}

/// A model's price and its source's name, if it has one.
type Found<'a> = Option<(&'a pricing::Price, &'a str)>;

/// Prices calls under a [`CostMode`], one lookup of price and billing per provider and model.
#[derive(Debug)]
pub struct Pricer<'p> {
    pricing: &'p Pricing,
    mode: CostMode,
    /// The price and the billing of each `provider \0 model` (`\u{1}` for a missing one).
    found: HashMap<String, (Found<'p>, Billing)>,
    /// The last call's key, and what it found: calls of one model come in runs, and a run's
    /// next call is priced without making its key and hashing it.
    key: String,
    last: (Found<'p>, Billing),
}

impl<'p> Pricer<'p> {
    pub fn new(pricing: &'p Pricing, mode: CostMode) -> Pricer<'p> {
        Pricer {
            pricing,
            mode,
            found: HashMap::new(),
            // Matches no call's key (each ends in `\0`).
            key: String::new(),
            last: (None, Billing::Api),
        }
    }

    /// The pricing columns of `r`.
    pub fn price(&mut self, r: &Billed<'_>) -> Priced<'p> {
        let (provider, model) = (r.provider, r.model);
        // A subagent's part names its model `provider/model` (pi-subagents), without a provider.
        let key = match (provider, model) {
            (Some(p), Some(m)) => Some((p, m)),
            (None, Some(m)) => m.split_once('/'),
            _ => None,
        };
        let parts = [provider, model].map(|part| part.unwrap_or("\u{1}"));
        if !is_key(&self.key, parts) {
            self.key.clear();
            for part in parts {
                self.key.push_str(part);
                self.key.push('\0');
            }
            self.last = match self.found.get(self.key.as_str()) {
                Some(known) => *known,
                None => {
                    let pricing = self.pricing;
                    let found = key.and_then(|(p, m)| {
                        pricing
                            .price(p, m)
                            .map(|(price, from)| (price, pricing.source_name(from)))
                    });
                    let billing = pricing.billing(key.map_or("", |(p, _)| p));
                    self.found.insert(self.key.clone(), (found, billing));
                    (found, billing)
                }
            };
        }
        let (found, billing) = self.last;
        let tokens = Tokens {
            input: r.input,
            output: r.output,
            cache_read: r.cache_read,
            cache_write: r.cache_write,
            cache_write_1h: r.cache_write_1h,
        };
        let calculated = found.map(|(price, _)| pricing::calculate(price, &tokens).total);
        Priced {
            calculated,
            source: found.map(|(_, from)| from),
            billing,
            chosen: self.mode.choose(r.cost, tokens.total(), calculated),
        }
    }
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
    /// Sum the corpus's calls priced under `mode` by file.
    pub fn of(corpus: &Corpus, pricing: &Pricing, mode: CostMode) -> std::io::Result<Repricing> {
        let mut files: hashbrown::HashMap<String, FileCost> = hashbrown::HashMap::new();
        let mut total = FileCost::default();
        super::each_call(corpus, pricing, mode, |row| {
            let c = row.priced.chosen;
            let f = files.entry_ref(row.file.rel).or_default();
            f.cost += c.cost;
            f.repriced += u64::from(c.repriced);
            f.unpriced += u64::from(c.unpriced);
            if !row.inherited() {
                f.own_cost += c.cost;
                total.cost += c.cost;
                total.own_cost += c.cost;
                total.repriced += u64::from(c.repriced);
                total.unpriced += u64::from(c.unpriced);
            }
        })?;
        Ok(Repricing {
            mode,
            price_table: pricing.registry.label.clone(),
            files,
            total,
        })
    }
}

/// Whether `key` is the key of `parts`: each part followed by `\0`.
fn is_key(key: &str, parts: [&str; 2]) -> bool {
    let mut rest = key.as_bytes();
    for part in parts {
        match rest.strip_prefix(part.as_bytes()) {
            Some([0, after @ ..]) => rest = after,
            _ => return false,
        }
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key_of(parts: [&str; 2]) -> String {
        parts.iter().map(|p| format!("{p}\0")).collect()
    }

    /// Parts from a few that share prefixes, hold `\0` or are empty.
    fn part() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "",
            "a",
            "ab",
            "a\0",
            "\0",
            "\u{1}",
            "b\0c",
            "anthropic",
            "claude-opus-4-5",
        ])
    }

    proptest! {
        /// A key is recognised exactly when it is the one its parts make.
        #[test]
        fn a_key_is_recognised_only_for_its_parts(a in part(), b in part(), c in part(), d in part()) {
            prop_assert_eq!(is_key(&key_of([a, b]), [c, d]), key_of([a, b]) == key_of([c, d]));
        }
    }
}
