//! The config file: defaults for flags, price overrides and billing plans.
//!
//! Found at `--config`, else `$PISA_CONFIG`, else `$XDG_CONFIG_HOME/pisa/config.toml` (or
//! `~/.config/pisa/config.toml`); a missing default file is no config, a missing named one an
//! error. Unknown keys are errors, so a typo is never silently ignored.
//!
//! ```toml
//! timezone = "Europe/Berlin"     # default of --timezone
//! source = "laptop"              # default of --source
//! cost = "auto"                  # default of --cost
//! pricing_from = "/usr/lib/node_modules/@earendil-works/pi-coding-agent"  # a newer Pi's prices
//!
//! [billing]                      # per provider: "api" or "subscription"
//! anthropic = "subscription"
//!
//! [prices."ollama/qwen2.5-coder:32b"]   # USD per million tokens; "provider/model" or "model"
//! input = 0.2
//! output = 0.6
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::pricing::{Billing, CostMode, Price, Pricing, Registry, RegistryError};

/// The parsed file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub timezone: Option<String>,
    pub source: Option<String>,
    pub cost: Option<CostMode>,
    /// A Pi installation whose model registry replaces the embedded one.
    pub pricing_from: Option<PathBuf>,
    #[serde(default)]
    pub billing: BTreeMap<String, Billing>,
    #[serde(default)]
    pub prices: BTreeMap<String, PriceOverride>,
    /// Where it was read from (`None`: no file).
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

/// A price in the config: the four rates (missing ones are 0) and optional tiers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceOverride {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default)]
    pub cache_read: f64,
    #[serde(default)]
    pub cache_write: f64,
}

/// A config file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {}: {cause}", path.display())]
    Read { path: PathBuf, cause: std::io::Error },
    /// toml's message names the line, the column and the key.
    #[error("bad config file {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    /// `origin`: `--pricing-from`, or the config file's `pricing_from`.
    #[error("{origin}: {cause}")]
    Registry { origin: String, cause: RegistryError },
}

/// The default place: `$XDG_CONFIG_HOME/pisa/config.toml`, else `~/.config/pisa/config.toml`.
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".config")))?;
    Some(base.join("pisa").join("config.toml"))
}

impl Config {
    /// Read `given` (it must exist), else the default file if there is one.
    pub fn load(given: Option<&Path>) -> Result<Config, ConfigError> {
        let path = match given {
            Some(p) => p.to_path_buf(),
            None => match default_path() {
                Some(p) if p.is_file() => p,
                _ => return Ok(Config::default()),
            },
        };
        let text = std::fs::read_to_string(&path).map_err(|cause| ConfigError::Read {
            path: path.clone(),
            cause,
        })?;
        let mut c = Config::parse(&text).map_err(|message| ConfigError::Parse {
            path: path.clone(),
            message,
        })?;
        c.path = Some(path);
        Ok(c)
    }

    /// Parse the text of a config file; the error names line, column and key.
    pub fn parse(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string().trim_end().to_string())
    }

    /// The pricing this config asks for: the embedded registry or `pricing_from`'s (`from`
    /// overrides both), its overrides and billing plans.
    pub fn pricing(&self, from: Option<&Path>) -> Result<Pricing, ConfigError> {
        let origin = |cause| ConfigError::Registry {
            origin: match (from, &self.path) {
                (None, Some(path)) => format!("pricing_from in {}", path.display()),
                _ => "--pricing-from".into(),
            },
            cause,
        };
        let registry = match from.or(self.pricing_from.as_deref()) {
            Some(dir) => Registry::from_pi(dir).map_err(origin)?,
            None => Registry::embedded(),
        };
        let overrides = self
            .prices
            .iter()
            .map(|(k, p)| {
                let rates = crate::pricing::Rates {
                    input: p.input,
                    output: p.output,
                    cache_read: p.cache_read,
                    cache_write: p.cache_write,
                };
                (
                    k.clone(),
                    Price {
                        rates,
                        tiers: Vec::new(),
                    },
                )
            })
            .collect();
        Ok(Pricing {
            registry,
            overrides,
            billing: self.billing.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_config_parses() {
        let c = Config::parse(
            "timezone = \"Europe/Berlin\"\ncost = \"auto\"\n[billing]\nanthropic = \"subscription\"\n\
             [prices.\"ollama/qwen\"]\ninput = 0.5\noutput = 1\n",
        )
        .unwrap();
        assert_eq!(c.timezone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(c.cost, Some(CostMode::Auto));
        assert_eq!(c.billing["anthropic"], Billing::Subscription);
        assert_eq!(c.prices["ollama/qwen"].output, 1.0);
    }

    #[test]
    fn a_bad_key_is_named_with_its_line() {
        let e = Config::parse("timezone = \"UTC\"\n\n[prices.\"m\"]\ninptu = 1\n").unwrap_err();
        assert!(e.contains("line 4") && e.contains("inptu"), "{e}");
        let e = Config::parse("[billing]\nopenai = \"monthly\"\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("monthly"), "{e}");
    }
}
