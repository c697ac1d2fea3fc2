//! Prices: Pi's registry embedded and read from Pi's package, recalculation against what Pi
//! recorded, the cost modes, billing plans and overrides from the config, and the JSON Schemas
//! of the reports.

use std::path::Path;

use polars::prelude::*;
use serde_json::Value;

use crate::support::{frames, generated, pi_files, pisa, repo, test_env};

/// The priced usage frame of a folder, costs under `mode`.
fn usage(dir: &Path, pricing: &pisa::pricing::Pricing, mode: pisa::pricing::CostMode) -> DataFrame {
    frames(dir, pricing, mode).1.usage
}

fn f64s(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    df.column(name).unwrap().f64().unwrap().iter().collect()
}

fn strs<'a>(df: &'a DataFrame, name: &str) -> Vec<Option<&'a str>> {
    df.column(name).unwrap().str().unwrap().iter().collect()
}

/// How the calls Pi priced compare with pisa's recalculation.
#[derive(Debug, Default)]
struct Recalc {
    /// Calls Pi priced from its table (`cost.total` > 0, not provider-reported, model known).
    priced: usize,
    /// Of those, recalculated to the same double.
    equal: usize,
    /// Of those, equal to the cache-write formula of Pis before `cacheWrite1h` (the cache-write
    /// part as `rate / 1e6 * tokens`), which can differ from today's in the last bit.
    older_formula: usize,
    failures: Vec<String>,
}

fn recalc(dir: &Path) -> Recalc {
    let pricing = pisa::pricing::Pricing::default();
    let u = usage(dir, &pricing, pisa::pricing::CostMode::Calculate);
    let (origin, provider, model) = (strs(&u, "origin"), strs(&u, "provider"), strs(&u, "model"));
    let (cost, calculated) = (f64s(&u, "cost"), f64s(&u, "cost_calculated"));
    let tokens = ["input", "output", "cache_read", "cache_write"].map(|c| f64s(&u, c));
    let from_provider: Vec<bool> = u
        .column("cost_from_provider")
        .unwrap()
        .bool()
        .unwrap()
        .iter()
        .map(|b| b == Some(true))
        .collect();
    let mut r = Recalc::default();
    for i in 0..u.height() {
        // Calls Pi itself priced: answers and usage entries (a subagent's part is a sum the
        // extension made, a summary's usage names no model).
        let own_call = matches!(origin[i], Some("assistant" | "usage"));
        let (Some(recorded), Some(calc)) = (cost[i], calculated[i]) else {
            continue;
        };
        if !own_call || recorded <= 0.0 || from_provider[i] {
            continue;
        }
        r.priced += 1;
        if calc == recorded {
            r.equal += 1;
            continue;
        }
        let (price, _) = pricing.price(provider[i].unwrap(), model[i].unwrap()).unwrap();
        let t = tokens.each_ref().map(|c| c[i].unwrap_or(0.0));
        let rt = &price.rates;
        let older = (rt.input / 1e6) * t[0]
            + (rt.output / 1e6) * t[1]
            + (rt.cache_read / 1e6) * t[2]
            + (rt.cache_write / 1e6) * t[3];
        if older == recorded && price.tiers.is_empty() {
            r.older_formula += 1;
        } else {
            r.failures.push(format!(
                "{:?}/{:?} {t:?}: recorded {recorded}, calculated {calc}",
                provider[i], model[i]
            ));
        }
    }
    r
}

#[test]
fn recalculated_cost_equals_what_pi_recorded_on_every_call_it_priced() {
    // Generated corpora: priced by pi-ai 1.6.0's calculateCost, as the generator writes them.
    let mut generated_priced = 0;
    for seed in ["3", "19"] {
        let d = generated(seed, 60);
        let r = recalc(d.path());
        assert!(r.failures.is_empty(), "seed {seed}: {:#?}", r.failures);
        assert_eq!((r.equal, r.older_formula), (r.priced, 0), "seed {seed}");
        generated_priced += r.priced;
    }
    assert!(generated_priced > 1000, "only {generated_priced} priced calls");
    // Pi's own files, written by an older Pi: every call is one of the two formulas.
    let r = recalc(&pi_files());
    assert!(r.failures.is_empty(), "{:#?}", r.failures);
    assert!(r.priced > 800 && r.equal + r.older_formula == r.priced, "{r:?}");
    eprintln!("generated: {generated_priced} calls equal; Pi's files: {r:?}");
}

#[test]
fn auto_reprices_exactly_the_zero_cost_calls_with_tokens() {
    let d = generated("5", 40);
    let u = usage(
        d.path(),
        &pisa::pricing::Pricing::default(),
        pisa::pricing::CostMode::Auto,
    );
    let (cost, calculated, effective) = (
        f64s(&u, "cost"),
        f64s(&u, "cost_calculated"),
        f64s(&u, "cost_effective"),
    );
    let tokens = ["input", "output", "cache_read", "cache_write"].map(|c| f64s(&u, c));
    let mut repriced = 0;
    for i in 0..u.height() {
        let t: f64 = tokens.iter().map(|c| c[i].unwrap_or(0.0)).sum();
        let recorded = cost[i].unwrap_or(0.0);
        let expected = match calculated[i] {
            Some(c) if recorded == 0.0 && t > 0.0 => {
                repriced += 1;
                c
            }
            _ => recorded,
        };
        assert_eq!(effective[i], Some(expected), "row {i}");
    }
    // The generator writes $0 for the local model and for openrouter/auto (priced 0 in the registry).
    assert!(repriced > 10, "{repriced}");
}

#[test]
fn the_embedded_registry_is_pi_ai_1_6_0_as_read_from_its_package() {
    let package = test_env().node_modules().join("@earendil-works").join("pi-ai");
    let (code, from_package, err) = pisa(&["pricing", "--json", "--from", package.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let embedded = std::fs::read_to_string(repo().join("src/pricing/pi-ai.json")).unwrap();
    let (a, b): (Value, Value) = (
        serde_json::from_str(&from_package).unwrap(),
        serde_json::from_str(&embedded).unwrap(),
    );
    assert!(
        a == b,
        "src/pricing/pi-ai.json is not pi-ai 1.6.0's registry: regenerate it with pisa pricing --from"
    );
    assert!(a["models"].as_array().unwrap().len() > 1000);
    // The whole Pi package (pi-ai inside its node_modules) is found too.
    let pi = test_env()
        .node_modules()
        .join("@earendil-works")
        .join("pi-coding-agent");
    let (code, text, err) = pisa(&["pricing", "claude-sonnet-4-5", "--from", pi.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("anthropic/claude-sonnet-4-5") && text.contains("pi-ai@1.6.0"),
        "{text}"
    );
}

#[test]
fn pricing_names_the_price_and_its_source() {
    let (code, text, _) = pisa(&["pricing", "anthropic/claude-opus-4-5"]);
    assert_eq!(code, 0);
    let line = text
        .lines()
        .find(|l| l.contains("anthropic/claude-opus-4-5 "))
        .expect(&text);
    for want in ["$5", "$25", "$0.5", "$6.25", "api", "pi-ai@1.6.0"] {
        assert!(line.contains(want), "{want} in {line}");
    }
    let (code, _, err) = pisa(&["pricing", "no-such-model-anywhere"]);
    assert_eq!(code, 1);
    assert!(err.contains("no price for a model matching"), "{err}");
}

/// One assistant answer, as Pi 1.6.0 writes it.
fn answer(id: &str, ts: &str, provider: &str, model: &str, t: [u64; 4], cost: f64) -> String {
    let [i, o, cr, cw] = t;
    format!(
        r#"{{"type":"message","id":"{id}","parentId":null,"timestamp":"{ts}","message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],"api":"openai-completions","provider":"{provider}","model":"{model}","usage":{{"input":{i},"output":{o},"cacheRead":{cr},"cacheWrite":{cw},"totalTokens":{},"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{cost}}}}},"stopReason":"stop","timestamp":1778407200000}}}}"#,
        i + o + cr + cw
    )
}

/// A session with four calls in May 2026: an API model, a local model Pi priced at $0, a
/// subscription provider, and an unknown local model; and a config pricing the local model.
fn billing_corpus() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("sessions").join("--work--");
    std::fs::create_dir_all(&dir).unwrap();
    let lines = [
        r#"{"type":"session","version":3,"id":"0195e0a0-0000-7000-8000-000000000001","timestamp":"2026-05-10T10:00:00.000Z","cwd":"/work"}"#.to_string(),
        // 1000 × $3 + 500 × $15 + 2000 × $0.3 + 100 × $3.75 per million
        answer("a", "2026-05-10T10:01:00.000Z", "anthropic", "claude-sonnet-4-5", [1000, 500, 2000, 100], 0.011475),
        // $0 recorded; the config's price: 4000 × $0.5 + 1000 × $1.5 per million = $0.0035
        answer("b", "2026-05-11T10:01:00.000Z", "ollama", "qwen2.5-coder:32b", [4000, 1000, 0, 0], 0.0),
        // a Copilot plan: 2000 × $3 + 1000 × $15 per million, the API-equivalent value
        answer("c", "2026-05-12T10:01:00.000Z", "github-copilot", "claude-sonnet-4.6", [2000, 1000, 0, 0], 0.021),
        // no price anywhere
        answer("d", "2026-05-13T10:01:00.000Z", "lmstudio", "my-model", [10, 10, 0, 0], 0.0),
    ];
    std::fs::write(
        dir.join("2026-05-10T10-00-00-000Z_0195e0a0-0000-7000-8000-000000000001.jsonl"),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let config = d.path().join("config.toml");
    std::fs::write(
        &config,
        "timezone = \"Pacific/Auckland\"\n\n[prices.\"ollama/qwen2.5-coder:32b\"]\ninput = 0.5\noutput = 1.5\n",
    )
    .unwrap();
    (d, config)
}

fn monthly(d: &Path, config: &Path, extra: &[&str]) -> Value {
    let sessions = d.join("sessions");
    let mut args = vec![
        "monthly",
        "--json",
        "--config",
        config.to_str().unwrap(),
        sessions.to_str().unwrap(),
    ];
    args.extend(extra);
    let (code, out, err) = pisa(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn assert_close(got: &Value, want: f64, what: &str) {
    let g = got.as_f64().unwrap_or_else(|| panic!("{what}: {got}"));
    assert!((g - want).abs() < 1e-12, "{what}: {g} != {want}");
}

#[test]
fn monthly_splits_api_spend_from_subscription_value_with_overrides_and_local_models() {
    let (d, config) = billing_corpus();
    let (api, local, copilot) = (0.011475, 0.0035, 0.021);
    // (extra arguments, cost, api cost, subscription cost, requests, repriced, unpriced)
    type Case<'a> = (&'a [&'a str], f64, f64, f64, u64, u64, u64);
    let cases: [Case<'_>; 6] = [
        (&[], api + copilot, api, copilot, 4, 0, 2),
        (
            &["--cost", "auto"],
            api + local + copilot,
            api + local,
            copilot,
            4,
            1,
            1,
        ),
        (
            &["--cost", "calculate"],
            api + local + copilot,
            api + local,
            copilot,
            4,
            3,
            1,
        ),
        (
            &["--cost", "auto", "--billing", "api"],
            api + local,
            api + local,
            0.0,
            3,
            1,
            1,
        ),
        (
            &["--cost", "auto", "--billing", "subscription"],
            copilot,
            0.0,
            copilot,
            1,
            0,
            0,
        ),
        (&["--billing", "subscription"], copilot, 0.0, copilot, 1, 0, 0),
    ];
    for (extra, cost, api_cost, sub_cost, requests, repriced, unpriced) in cases {
        let doc = monthly(d.path(), &config, extra);
        assert_eq!(doc["timezone"], "Pacific/Auckland", "the config's time zone");
        let t = &doc["totals"];
        assert_close(&t["cost"], cost, &format!("{extra:?} cost"));
        assert_close(&t["apiCost"], api_cost, &format!("{extra:?} apiCost"));
        assert_close(&t["subscriptionCost"], sub_cost, &format!("{extra:?} subscriptionCost"));
        assert_eq!(t["requests"], requests, "{extra:?}");
        assert_eq!(doc["pricing"]["repriced"], repriced, "{extra:?}");
        assert_eq!(doc["pricing"]["unpriced"], unpriced, "{extra:?}");
    }
    // A provider declared subscription-billed in the config.
    let with_plan = d.path().join("plan.toml");
    std::fs::write(&with_plan, "[billing]\nanthropic = \"subscription\"\n").unwrap();
    let doc = monthly(d.path(), &with_plan, &[]);
    assert_close(&doc["totals"]["subscriptionCost"], api + copilot, "anthropic on a plan");
    // The table says what was repriced and what has no price.
    let sessions = d.path().join("sessions");
    let c = config.to_str().unwrap();
    let (_, text, _) = pisa(&["monthly", "--cost", "auto", "--config", c, sessions.to_str().unwrap()]);
    assert!(text.contains("of which subscription"), "{text}");
    assert!(text.contains("cost auto: 1 calls priced from pi-ai@1.6.0"), "{text}");
    assert!(text.contains("1 calls have tokens but no known price"), "{text}");
    // sessions --cost prices the same calls.
    let (_, out, _) = pisa(&[
        "sessions",
        "--json",
        "--cost",
        "auto",
        "--config",
        c,
        sessions.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_close(
        &doc["sessions"][0]["pricing"]["cost"],
        api + local + copilot,
        "sessions --cost auto",
    );
    assert_close(&doc["pricing"]["total"], api + local + copilot, "sessions total");
    // Export carries both costs and where the price came from.
    let out = tempfile::tempdir().unwrap();
    let (code, _, err) = pisa(&[
        "export",
        "--cost",
        "auto",
        "--format",
        "ndjson",
        "--config",
        c,
        "--out",
        out.path().to_str().unwrap(),
        sessions.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = std::fs::read_to_string(out.path().join("usage.ndjson"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sources: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["model"].as_str().unwrap(),
                r["price_source"].as_str().unwrap_or("-"),
                r["billing"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [
            ("claude-sonnet-4-5", "pi-ai@1.6.0", "api"),
            ("qwen2.5-coder:32b", "config", "api"),
            ("claude-sonnet-4.6", "pi-ai@1.6.0", "subscription"),
            ("my-model", "-", "api"),
        ]
    );
    assert_close(&rows[1]["cost_effective"], local, "the local model's effective cost");
    assert_eq!(rows[1]["cost"], 0.0);
}

#[test]
fn a_bad_config_is_one_error_naming_file_line_and_key() {
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("config.toml");
    std::fs::write(&config, "timezone = \"UTC\"\n\n[prices.\"ollama/x\"]\ninptu = 1\n").unwrap();
    let (code, out, err) = pisa(&["monthly", "--demo", "--config", config.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(
        err.contains(config.to_str().unwrap()) && err.contains("line 4") && err.contains("inptu"),
        "{err}"
    );
    let (code, _, err) = pisa(&[
        "monthly",
        "--demo",
        "--config",
        d.path().join("missing.toml").to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read the config file"), "{err}");
}

fn validator(name: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("schemas").join(name)).unwrap();
    jsonschema::validator_for(&serde_json::from_str(&text).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

#[test]
fn every_reports_json_holds_to_its_schema() {
    let report = validator("report.schema.json");
    let ccusage = validator("ccusage.schema.json");
    let compactions = validator("compactions.schema.json");
    let sample = repo().join("datasets").join("sample");
    let sample = sample.to_str().unwrap();
    for group in ["daily", "weekly", "monthly", "session", "model", "project", "kind"] {
        for extra in [&[][..], &["--breakdown"], &["--cost", "auto", "--billing", "api"]] {
            let mut args = vec![group, "--json", "--quiet", sample];
            args.extend(extra);
            let (_, out, err) = pisa(&args);
            let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e} {err}"));
            assert_eq!(doc["schemaVersion"], 1);
            assert_valid(&report, &doc, &format!("{args:?}"));
            assert!(!doc["rows"].as_array().unwrap().is_empty(), "{args:?}");
        }
        let (code, out, err) = pisa(&[group, "--json-compat", "ccusage", "--quiet", sample]);
        if matches!(group, "model" | "project" | "kind") {
            assert_eq!(code, 1, "{group} has no ccusage form");
            assert!(err.contains("--json-compat ccusage is for"), "{err}");
            continue;
        }
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_valid(&ccusage, &doc, group);
        // The same figures as pisa's own JSON.
        let (_, own, _) = pisa(&[group, "--json", "--quiet", sample]);
        let own: Value = serde_json::from_str(&own).unwrap();
        assert_eq!(doc["totals"]["totalCost"], own["totals"]["cost"], "{group}");
        assert_eq!(
            doc["totals"]["cacheCreationTokens"], own["totals"]["cacheWrite"],
            "{group}"
        );
    }
    let (_, out, _) = pisa(&["compactions", "--json", "--quiet", sample]);
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_valid(&compactions, &doc, "compactions");
    // A document that breaks the schema is caught (the schemas are not vacuous).
    let mut bad = serde_json::from_str::<Value>(&pisa(&["daily", "--json", "--quiet", sample]).1).unwrap();
    bad["rows"][0]["cost"] = Value::from("1.0");
    assert!(!report.is_valid(&bad));
    bad["rows"][0]["cost"] = Value::from(1.0);
    bad["rows"][0]["surprise"] = Value::from(1);
    assert!(!report.is_valid(&bad));
}
