//! Pi's model registry: which price each `provider`/`model` has.
//!
//! pi-ai keeps its catalogue as JSON, one file per provider (`dist/providers/data/<p>.json`:
//! `{api: {"<type>:<id>": model}}`), and flattens each file's chat models into one map by id,
//! a later model of the same id replacing an earlier one (`flattenChatModelCatalog` in
//! `dist/model-catalog.js`). pisa keeps `provider`, `id` and `cost` of every chat model, in a
//! compact table of its own ([`Registry::to_json`]); the one of pi-ai 1.6.0 is embedded.

use std::path::{Path, PathBuf};

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use super::Price;

/// The table of pi-ai 1.6.0 (regenerate: `pisa pricing --from <pi-ai package> --json`).
const EMBEDDED: &str = include_str!("pi-ai.json");

/// What could not be read from a Pi installation.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("no pi-ai model registry (node_modules/@earendil-works/pi-ai/dist/providers/data) under {}", .0.display())]
    NotFound(PathBuf),
    #[error("cannot read {}: {cause}", path.display())]
    Read { path: PathBuf, cause: std::io::Error },
    #[error("{}: not a pi-ai model catalogue: {cause}", path.display())]
    Json { path: PathBuf, cause: serde_json::Error },
}

/// Prices by `(provider, model id)`.
#[derive(Debug, Clone)]
pub struct Registry {
    /// The npm package the prices come from.
    pub package: String,
    pub version: String,
    /// How `price_source` names it, e.g. `pi-ai@1.6.0`.
    pub label: String,
    /// Where it was read (`embedded`, or the folder).
    pub origin: String,
    models: Vec<Model>,
    index: HashMap<(String, String), usize>,
}

/// One chat model's price, as the compact table holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub provider: String,
    pub id: String,
    pub cost: Price,
}

/// The compact table.
#[derive(Serialize, Deserialize)]
struct Table {
    package: String,
    version: String,
    models: Vec<Model>,
}

/// A model entry of pi-ai's catalogue: only what pricing needs.
#[derive(Deserialize)]
struct CatalogueModel {
    #[serde(rename = "type")]
    kind: Option<String>,
    provider: Option<String>,
    id: Option<String>,
    cost: Option<Price>,
}

impl Registry {
    /// The registry of pi-ai 1.6.0, the version Pi 1.6.0 depends on.
    pub fn embedded() -> Registry {
        let t: Table = serde_json::from_str(EMBEDDED).expect("the embedded price table is valid");
        Registry::new(t, "embedded".into())
    }

    fn new(t: Table, origin: String) -> Registry {
        let index = t
            .models
            .iter()
            .enumerate()
            .map(|(i, m)| ((m.provider.clone(), m.id.clone()), i))
            .collect();
        let short = t.package.rsplit('/').next().unwrap_or(&t.package).to_string();
        Registry {
            label: format!("{short}@{}", t.version),
            package: t.package,
            version: t.version,
            origin,
            models: t.models,
            index,
        }
    }

    /// Read the registry of a Pi installation: `dir` is pi-ai's package, a package or folder
    /// with `node_modules/@earendil-works/pi-ai` (Pi's own package, a project), or an npm prefix
    /// (`lib/node_modules/...`), searched a few levels deep.
    pub fn from_pi(dir: &Path) -> Result<Registry, RegistryError> {
        let package = find_package(dir).ok_or_else(|| RegistryError::NotFound(dir.to_path_buf()))?;
        let data = package.join("dist/providers/data");
        let read = |path: &Path| {
            std::fs::read(path).map_err(|cause| RegistryError::Read {
                path: path.to_path_buf(),
                cause,
            })
        };
        let json_err = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| RegistryError::Json { path, cause }
        };
        let manifest_path = package.join("package.json");
        let manifest: serde_json::Value =
            serde_json::from_slice(&read(&manifest_path)?).map_err(json_err(&manifest_path))?;
        let mut files: Vec<PathBuf> = std::fs::read_dir(&data)
            .map_err(|cause| RegistryError::Read {
                path: data.clone(),
                cause,
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut models = Vec::new();
        for path in &files {
            let groups: indexmap_like::Groups = serde_json::from_slice(&read(path)?).map_err(json_err(path))?;
            models.extend(flatten(groups));
        }
        let text = |k: &str| manifest.get(k).and_then(|v| v.as_str()).unwrap_or("?").to_string();
        let table = Table {
            package: text("name"),
            version: text("version"),
            models,
        };
        Ok(Registry::new(table, package.display().to_string()))
    }

    /// The price of `provider`'s `model`.
    pub fn get(&self, provider: &str, model: &str) -> Option<&Price> {
        let i = self.index.get(&(provider.to_string(), model.to_string()))?;
        Some(&self.models[*i].cost)
    }

    /// Every model, in the registry's order.
    pub fn models(&self) -> &[Model] {
        &self.models
    }

    /// The models `keep(provider, id)` accepts, as a registry of their own.
    pub fn filtered(&self, keep: impl Fn(&str, &str) -> bool) -> Registry {
        let t = Table {
            package: self.package.clone(),
            version: self.version.clone(),
            models: self
                .models
                .iter()
                .filter(|m| keep(&m.provider, &m.id))
                .cloned()
                .collect(),
        };
        Registry::new(t, self.origin.clone())
    }

    /// The compact table (the embedded one is this of pi-ai 1.6.0).
    pub fn to_json(&self) -> String {
        let t = Table {
            package: self.package.clone(),
            version: self.version.clone(),
            models: self.models.clone(),
        };
        let mut s = serde_json::to_string(&t).expect("a table serialises");
        s.push('\n');
        s
    }
}

/// Object order matters (a later model of one id wins), so the catalogue is read as ordered
/// pairs (serde_json's `preserve_order` keeps objects in file order).
mod indexmap_like {
    pub type Groups = serde_json::Map<String, serde_json::Value>;
}

/// One provider file's chat models by `(provider, id)`, the last of an id kept at the place
/// of its first (as `Object.fromEntries` does).
fn flatten(groups: indexmap_like::Groups) -> Vec<Model> {
    let mut out: Vec<Model> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    let models = groups
        .into_iter()
        .filter_map(|(_, g)| match g {
            serde_json::Value::Object(m) => Some(m),
            _ => None,
        })
        .flat_map(|m| m.into_iter().map(|(_, v)| v));
    for v in models {
        let Ok(m) = serde_json::from_value::<CatalogueModel>(v) else {
            continue;
        };
        let (Some("chat"), Some(provider), Some(id), Some(cost)) = (m.kind.as_deref(), m.provider, m.id, m.cost) else {
            continue;
        };
        let model = Model { provider, id, cost };
        match at.get(&(model.provider.clone(), model.id.clone())) {
            Some(&i) => out[i] = model,
            None => {
                at.insert((model.provider.clone(), model.id.clone()), out.len());
                out.push(model);
            }
        }
    }
    out
}

/// pi-ai's package folder under `dir`.
fn find_package(dir: &Path) -> Option<PathBuf> {
    let is_package = |p: &Path| p.join("dist/providers/data").is_dir() && p.join("package.json").is_file();
    if is_package(dir) {
        return Some(dir.to_path_buf());
    }
    // As Node resolves `@earendil-works/pi-ai` from a package: its own node_modules, then
    // every parent's (npm hoists dependencies next to the package).
    let resolved = dir
        .ancestors()
        .map(|a| a.join("node_modules").join("@earendil-works").join("pi-ai"))
        .find(|p| is_package(p));
    if resolved.is_some() {
        return resolved;
    }
    walkdir::WalkDir::new(dir)
        .max_depth(8)
        .follow_links(true)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_dir() && e.file_name() == "pi-ai")
        .map(|e| e.into_path())
        .find(|p| is_package(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_is_pi_ai_1_6_0() {
        let r = Registry::embedded();
        assert_eq!(
            (r.package.as_str(), r.version.as_str()),
            ("@earendil-works/pi-ai", "1.6.0")
        );
        assert_eq!(r.label, "pi-ai@1.6.0");
        let sonnet = r.get("anthropic", "claude-sonnet-4-5").expect("sonnet 4.5");
        assert_eq!(
            [
                sonnet.rates.input,
                sonnet.rates.output,
                sonnet.rates.cache_read,
                sonnet.rates.cache_write
            ],
            [3.0, 15.0, 0.3, 3.75]
        );
        let pro = r.get("google", "gemini-2.5-pro").expect("gemini 2.5 pro");
        assert_eq!(pro.tiers[0].input_tokens_above, 200000.0);
        assert!(r.get("anthropic", "no-such-model").is_none());
    }

    #[test]
    fn a_later_model_of_the_same_id_replaces_the_earlier() {
        let json = r#"{"a":{"chat:m":{"type":"chat","provider":"p","id":"m","cost":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0}},
            "image:m":{"type":"image","provider":"p","id":"m","cost":{"input":9,"output":9,"cacheRead":0,"cacheWrite":0}}},
            "b":{"chat:m":{"type":"chat","provider":"p","id":"m","cost":{"input":2,"output":2,"cacheRead":0,"cacheWrite":0}},
            "chat:n":{"type":"chat","provider":"p","id":"n","cost":{"input":3,"output":3,"cacheRead":0,"cacheWrite":0}}}}"#;
        let models = flatten(serde_json::from_str(json).unwrap());
        let got: Vec<(&str, f64)> = models.iter().map(|m| (m.id.as_str(), m.cost.rates.input)).collect();
        assert_eq!(got, [("m", 2.0), ("n", 3.0)]);
    }
}
