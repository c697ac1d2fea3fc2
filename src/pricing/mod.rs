//! Prices and what a call costs: Pi's model registry, overrides, and Pi's cost function.
//!
//! Pi prices a call with the `cost` of the model that answered it, as its registry
//! (`@earendil-works/pi-ai`, `dist/providers/data/<provider>.json`) has it, and writes the
//! result into the call's `usage.cost` ([`calculate`] is that function, operation for
//! operation). pisa embeds the registry of the pi-ai version Pi 1.6.0 ships ([`Registry::embedded`]),
//! can read a newer Pi installation's ([`Registry::from_pi`]), and lets a config file override
//! a model's price ([`Pricing`]). Which providers bill by subscription rather than by the call
//! is [`Billing`]; the cost a report sums is chosen by [`CostMode`].

mod registry;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use registry::{Registry, RegistryError};

/// USD per million tokens, as Pi's registry writes a model's `cost`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    #[serde(alias = "cache_read")]
    pub cache_read: f64,
    #[serde(alias = "cache_write")]
    pub cache_write: f64,
}

/// Rates that apply when a call's prompt (input + cache read + cache write) is above a size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tier {
    #[serde(alias = "input_tokens_above")]
    pub input_tokens_above: f64,
    #[serde(flatten)]
    pub rates: Rates,
}

/// A model's price: base rates and the tiers above them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Price {
    #[serde(flatten)]
    pub rates: Rates,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<Tier>,
}

/// The tokens of one call, as its `usage` has them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// `cacheWrite1h`, the part of `cache_write` written for an hour (Anthropic).
    pub cache_write_1h: Option<f64>,
}

impl Tokens {
    /// All four kinds together.
    pub fn total(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write
    }
}

/// A call's cost by component, in USD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

/// pi-ai's `calculateCost(model, usage)` (`dist/models.js`), operation for operation, so the
/// result is the same double: the highest tier whose `inputTokensAbove` the prompt exceeds,
/// then `rate / 1e6 * tokens` per kind, a one-hour cache write at twice the input rate.
pub fn calculate(price: &Price, t: &Tokens) -> Cost {
    let prompt = t.input + t.cache_read + t.cache_write;
    let mut rates = &price.rates;
    let mut matched = -1.0;
    for tier in &price.tiers {
        if prompt > tier.input_tokens_above && tier.input_tokens_above > matched {
            rates = &tier.rates;
            matched = tier.input_tokens_above;
        }
    }
    let long = t.cache_write_1h.unwrap_or(0.0);
    let short = t.cache_write - long;
    let input = (rates.input / 1000000.0) * t.input;
    let output = (rates.output / 1000000.0) * t.output;
    let cache_read = (rates.cache_read / 1000000.0) * t.cache_read;
    let cache_write = (rates.cache_write * short + rates.input * 2.0 * long) / 1000000.0;
    Cost {
        input,
        output,
        cache_read,
        cache_write,
        total: input + output + cache_read + cache_write,
    }
}

/// Which cost a report sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum CostMode {
    /// The `cost.total` Pi wrote (pisa's figures equal Pi's).
    #[default]
    Recorded,
    /// Always from the price table (0, and counted as unpriced, when the model has no price).
    Calculate,
    /// Recorded, unless it is 0 or missing while the call has tokens: then calculated.
    Auto,
}

impl CostMode {
    pub fn name(self) -> &'static str {
        match self {
            CostMode::Recorded => "recorded",
            CostMode::Calculate => "calculate",
            CostMode::Auto => "auto",
        }
    }

    /// The cost of a call under this mode, and how it was found.
    pub fn choose(self, recorded: f64, tokens: f64, calculated: Option<f64>) -> Chosen {
        let zero = recorded == 0.0 && tokens > 0.0;
        match (self, calculated) {
            (CostMode::Recorded, _) => Chosen {
                cost: recorded,
                repriced: false,
                unpriced: zero,
            },
            (CostMode::Calculate, Some(c)) => Chosen {
                cost: c,
                repriced: true,
                unpriced: false,
            },
            (CostMode::Calculate, None) => Chosen {
                cost: 0.0,
                repriced: false,
                unpriced: tokens > 0.0,
            },
            (CostMode::Auto, Some(c)) if zero => Chosen {
                cost: c,
                repriced: true,
                unpriced: false,
            },
            (CostMode::Auto, _) => Chosen {
                cost: recorded,
                repriced: false,
                unpriced: zero,
            },
        }
    }
}

/// A call's cost under a [`CostMode`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chosen {
    pub cost: f64,
    /// The cost comes from the price table.
    pub repriced: bool,
    /// The call has tokens but the cost is 0: no price was recorded or known.
    pub unpriced: bool,
}

/// How a provider is paid for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Billing {
    /// Per call, at the price: the cost is money spent.
    #[default]
    Api,
    /// A flat plan: the cost is what the calls would have cost through the API.
    Subscription,
}

impl Billing {
    pub fn name(self) -> &'static str {
        match self {
            Billing::Api => "api",
            Billing::Subscription => "subscription",
        }
    }
}

/// Which calls a report counts, by billing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum BillingFilter {
    /// Both; tables show the subscription part in its own column.
    #[default]
    All,
    Api,
    Subscription,
}

impl BillingFilter {
    /// Whether a call billed as `b` is counted.
    pub fn keeps(self, b: Billing) -> bool {
        match self {
            BillingFilter::All => true,
            BillingFilter::Api => b == Billing::Api,
            BillingFilter::Subscription => b == Billing::Subscription,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            BillingFilter::All => "all",
            BillingFilter::Api => "api",
            BillingFilter::Subscription => "subscription",
        }
    }
}

/// Providers that Pi only reaches through a subscription, billed as such unless the config
/// says otherwise. From pi-ai 1.6.0: `openai-codex` is the ChatGPT Plus/Pro sign-in (its
/// provider declares `oauth.isSubscription`, and `env-api-keys.js` has no API key for it),
/// `github-copilot` a Copilot plan (OAuth with `isSubscription`, its only token a GitHub one),
/// and `kimi-coding` "is subscription-backed despite using API-key authentication" (Pi's
/// `footer.js`). Providers reached either way (`anthropic`, `openai`, `xai`, `meta` sign in with
/// a subscription or take an API key) are `api` by default: a session file does not say which
/// was used.
pub const SUBSCRIPTION_PROVIDERS: &[&str] = &["openai-codex", "github-copilot", "kimi-coding"];

/// Where a price came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceSource {
    /// Pi's registry.
    Registry,
    /// The config file's `[prices]`.
    Config,
}

/// The registry, the config's overrides and billing plans: everything that prices a call.
#[derive(Debug, Clone)]
pub struct Pricing {
    pub registry: Registry,
    /// `provider/model` or `model` → price, from the config.
    pub overrides: BTreeMap<String, Price>,
    /// Provider → billing, from the config (over [`SUBSCRIPTION_PROVIDERS`]).
    pub billing: BTreeMap<String, Billing>,
}

impl Default for Pricing {
    fn default() -> Self {
        Pricing {
            registry: Registry::embedded(),
            overrides: BTreeMap::new(),
            billing: BTreeMap::new(),
        }
    }
}

impl Pricing {
    /// The price of `provider`'s `model`: an override (`provider/model`, then `model`), else the
    /// registry's.
    pub fn price(&self, provider: &str, model: &str) -> Option<(&Price, PriceSource)> {
        let key = format!("{provider}/{model}");
        if let Some(p) = self.overrides.get(&key).or_else(|| self.overrides.get(model)) {
            return Some((p, PriceSource::Config));
        }
        self.registry.get(provider, model).map(|p| (p, PriceSource::Registry))
    }

    /// The `price_source` text of a price: the registry's package and version, or `config`.
    pub fn source_name(&self, s: PriceSource) -> &str {
        match s {
            PriceSource::Registry => &self.registry.label,
            PriceSource::Config => "config",
        }
    }

    /// How `provider` bills.
    pub fn billing(&self, provider: &str) -> Billing {
        match self.billing.get(provider) {
            Some(b) => *b,
            None if SUBSCRIPTION_PROVIDERS.contains(&provider) => Billing::Subscription,
            None => Billing::Api,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(r: [f64; 4]) -> Price {
        Price {
            rates: Rates {
                input: r[0],
                output: r[1],
                cache_read: r[2],
                cache_write: r[3],
            },
            tiers: Vec::new(),
        }
    }

    #[test]
    fn cost_is_pis_formula_per_component() {
        let p = price([3.0, 15.0, 0.3, 3.75]);
        let t = Tokens {
            input: 1000.0,
            output: 200.0,
            cache_read: 5000.0,
            cache_write: 400.0,
            cache_write_1h: Some(100.0),
        };
        let c = calculate(&p, &t);
        assert_eq!(c.input, 3.0 / 1e6 * 1000.0);
        assert_eq!(c.output, 15.0 / 1e6 * 200.0);
        assert_eq!(c.cache_read, 0.3 / 1e6 * 5000.0);
        // 300 short writes at the cache-write rate, 100 one-hour writes at twice the input rate
        assert_eq!(c.cache_write, (3.75 * 300.0 + 3.0 * 2.0 * 100.0) / 1e6);
        assert_eq!(c.total, c.input + c.output + c.cache_read + c.cache_write);
    }

    #[test]
    fn the_highest_tier_the_prompt_exceeds_applies() {
        let mut p = price([1.0, 2.0, 0.1, 0.0]);
        let tier = |above, input| Tier {
            input_tokens_above: above,
            rates: Rates {
                input,
                output: 9.0,
                cache_read: 0.0,
                cache_write: 0.0,
            },
        };
        p.tiers = vec![tier(200.0, 5.0), tier(100.0, 4.0)];
        let t = |input| Tokens {
            input,
            ..Tokens::default()
        };
        assert_eq!(calculate(&p, &t(100.0)).input, 1.0 / 1e6 * 100.0);
        assert_eq!(calculate(&p, &t(150.0)).input, 4.0 / 1e6 * 150.0);
        assert_eq!(calculate(&p, &t(201.0)).input, 5.0 / 1e6 * 201.0);
    }

    #[test]
    fn auto_reprices_exactly_the_zero_cost_calls_with_tokens() {
        let auto = CostMode::Auto;
        assert_eq!(auto.choose(0.5, 10.0, Some(0.7)).cost, 0.5);
        let z = auto.choose(0.0, 10.0, Some(0.7));
        assert!(z.repriced && z.cost == 0.7);
        let none = auto.choose(0.0, 0.0, Some(0.0));
        assert!(!none.repriced && !none.unpriced);
        let unknown = auto.choose(0.0, 10.0, None);
        assert!(unknown.unpriced && unknown.cost == 0.0);
        assert!(CostMode::Recorded.choose(0.0, 10.0, Some(1.0)).unpriced);
        assert!(CostMode::Calculate.choose(0.5, 10.0, None).unpriced);
    }

    #[test]
    fn overrides_win_and_billing_has_pis_subscription_defaults() {
        let mut p = Pricing::default();
        assert_eq!(p.billing("openai-codex"), Billing::Subscription);
        assert_eq!(p.billing("anthropic"), Billing::Api);
        p.billing.insert("anthropic".into(), Billing::Subscription);
        assert_eq!(p.billing("anthropic"), Billing::Subscription);
        p.overrides
            .insert("qwen2.5-coder:32b".into(), price([0.1, 0.2, 0.0, 0.0]));
        p.overrides
            .insert("anthropic/claude-sonnet-4-5".into(), price([1.0, 1.0, 1.0, 1.0]));
        assert_eq!(p.price("ollama", "qwen2.5-coder:32b").unwrap().1, PriceSource::Config);
        assert_eq!(p.price("anthropic", "claude-sonnet-4-5").unwrap().0.rates.input, 1.0);
        let (sonnet, from) = p.price("anthropic", "claude-opus-4-5").expect("in the registry");
        assert_eq!((sonnet.rates.input, from), (5.0, PriceSource::Registry));
    }
}
