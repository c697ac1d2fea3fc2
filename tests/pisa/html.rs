//! `pisa report --html` (issue 22), checked in a real browser: headless Chromium (installed by
//! `scripts/test-env`) opens the page through `browser.py` (the DevTools protocol). Every chart
//! is drawn, the totals shown are `pisa monthly --json`'s, the console stays clean, nothing is
//! fetched, and a hostile session name shows as text. Screenshots are kept in
//! `target/test-artifacts/html`.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{artifacts, pisa, repo, test_env};

/// The keys of the totals the page shows, as `pisa monthly --json` names them.
const TOTALS: [&str; 8] = [
    "cost",
    "totalTokens",
    "input",
    "output",
    "cacheWrite",
    "cacheRead",
    "requests",
    "compactions",
];

/// The charts every page draws.
const CHARTS: [&str; 6] = [
    "chart-daily",
    "chart-projects",
    "chart-kinds",
    "chart-cache",
    "chart-sessions",
    "chart-compactions",
];

/// `pisa report --html PAGE ARGS...`; its stderr. The exit code is 0, or 2 when files were
/// damaged (the page is written all the same).
fn report(page: &Path, args: &[&str]) -> String {
    let mut all = vec![
        "report",
        "--html",
        page.to_str().expect("utf-8 path"),
        "--timezone",
        "UTC",
    ];
    all.extend(args);
    let (code, _, err) = pisa(&all);
    assert!(code == 0 || code == 2, "pisa report exited {code}: {err}");
    assert!(err.contains("wrote"), "{err}");
    err
}

/// What the browser saw of `page`; screenshots `NAME.png`, `NAME-dark.png` (and with `clip`
/// `NAME-top.png`, that many pixels high) in the artifacts folder.
fn open(page: &Path, name: &str, clip: Option<u32>) -> Value {
    let env = test_env();
    let mut cmd = env.python();
    cmd.arg(repo().join("tests").join("pisa").join("browser.py"))
        .arg(env.chromium())
        .arg(page)
        .arg(artifacts("html"))
        .arg(name);
    if let Some(h) = clip {
        cmd.args(["--clip", &h.to_string()]);
    }
    let out = cmd.output().expect("run browser.py");
    assert!(
        out.status.success(),
        "browser.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("browser.py prints JSON")
}

/// `pisa monthly --json ARGS...`'s totals.
fn monthly_totals(args: &[&str]) -> Value {
    let mut all = vec!["monthly", "--json", "--timezone", "UTC"];
    all.extend(args);
    let (_, out, err) = pisa(&all);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("monthly --json: {e}: {err}"));
    doc["totals"].clone()
}

/// Every chart drawn with a box and shapes, text alternatives in place, both colour schemes,
/// sorting, and a clean console with no request but the page itself.
fn assert_rendered(seen: &Value, page: &Path) {
    let charts = seen["charts"].as_array().expect("charts");
    let ids: Vec<&str> = charts.iter().map(|c| c["id"].as_str().unwrap_or_default()).collect();
    assert_eq!(ids, CHARTS, "charts drawn");
    for c in charts {
        assert!(
            c["width"].as_f64() > Some(100.0) && c["height"].as_f64() > Some(100.0),
            "{c}"
        );
        assert!(c["shapes"].as_u64() > Some(0), "nothing drawn: {c}");
        assert!(c["texts"].as_u64() > Some(3), "no axis labels: {c}");
        assert!(c["tips"].as_u64() > Some(0), "no tooltips: {c}");
        assert!(
            !c["title"].as_str().unwrap_or_default().is_empty() && !c["desc"].as_str().unwrap_or_default().is_empty()
        );
    }
    assert_eq!(seen["figures"], 6);
    assert_eq!(seen["captions"], 6);
    assert_eq!(seen["scripts"], 1, "only the page's own script");
    assert_eq!(seen["images"], 0);
    assert_eq!(seen["pwned"], Value::Null);
    assert_eq!(seen["console"], json!([]), "console errors");
    assert_eq!(seen["exceptions"], json!([]), "uncaught exceptions");
    let own = format!("file://{}", std::fs::canonicalize(page).expect("page").display());
    let requests = seen["requests"].as_array().expect("requests");
    assert!(
        requests.iter().all(|r| r.as_str() == Some(own.as_str())),
        "the page fetched {requests:?}"
    );
    assert_ne!(seen["background"], seen["dark_background"], "no dark mode");
    let sorted = &seen["sorted"];
    assert_eq!(
        (sorted["ascending"].as_bool(), sorted["descending"].as_bool()),
        (Some(true), Some(true)),
        "{sorted}"
    );
}

/// The page's totals are `pisa monthly --json`'s, number for number.
fn assert_totals(shown: &Value, monthly: &Value) {
    for key in TOTALS {
        assert_eq!(
            shown[key].as_f64(),
            monthly[key].as_f64(),
            "{key}: page {shown} vs monthly {monthly}"
        );
    }
}

/// The totals a page holds (`data-total` cells, or with `naive` the naive per-file sums,
/// `data-naive`), read from its text without a browser.
fn page_totals(html: &str, naive: bool) -> Value {
    let mut out = serde_json::Map::new();
    let attr = if naive { "data-naive=\"" } else { "data-total=\"" };
    for part in html.split(attr).skip(1) {
        let key = &part[..part.find('"').expect("key")];
        let v = part.split("data-v=\"").nth(1).expect("data-v");
        let v: f64 = v[..v.find('"').expect("value")].parse().expect("number");
        out.insert(key.to_string(), json!(v));
    }
    Value::Object(out)
}

#[test]
fn the_sample_page_renders_in_a_browser_with_the_monthly_totals() {
    let dir = artifacts("html");
    let page = dir.join("sample.html");
    report(&page, &["--demo", "--quiet"]);
    let size = std::fs::metadata(&page).expect("page").len();
    assert!(size < 2 << 20, "{size} bytes");
    let seen = open(&page, "sample", Some(1400));
    assert_rendered(&seen, &page);
    assert_totals(&seen["totals"], &monthly_totals(&["--demo"]));
    let text = seen["text"].as_str().expect("text");
    assert!(text.contains("Naive per-file sum") && text.contains("/Users/mira/code/pisa"));
    // The naive per-file sum beside them is the one `pisa sessions --json` gives.
    let naive = page_totals(&std::fs::read_to_string(&page).expect("page"), true);
    let (_, out, _) = pisa(&["sessions", "--json", "--demo"]);
    let sessions: Value = serde_json::from_str(&out).expect("sessions --json");
    assert_eq!(naive["totalTokens"].as_f64(), sessions["totals"]["naiveTotal"].as_f64());
    assert_eq!(naive["cost"].as_f64(), sessions["totals"]["naiveCost"].as_f64());
    // The README's figure: `PISA_UPDATE_DOCS=1 cargo test --test pisa html` renews it.
    if std::env::var_os("PISA_UPDATE_DOCS").is_some() {
        std::fs::copy(dir.join("sample-top.png"), repo().join("docs").join("report-html.png")).expect("copy");
    }
}

#[test]
fn filters_apply_to_the_totals_as_they_do_to_monthly() {
    let page = tempfile::tempdir().expect("temp dir");
    let page = page.path().join("filtered.html");
    for filters in [
        &["--since", "2026-01-01", "--until", "20260430"][..],
        &["--model", "claude"],
        &["--project", "API-GATEWAY"],
    ] {
        let mut args = vec!["--demo", "--quiet"];
        args.extend(filters);
        report(&page, &args);
        let html = std::fs::read_to_string(&page).expect("page");
        assert_totals(&page_totals(&html, false), &monthly_totals(&args));
    }
}

/// A session whose every name is markup that would run script if it reached the page as such.
fn hostile_session(dir: &Path) {
    let run = |n: u32| format!("window.__pwned={n}");
    let header = json!({"type": "session", "version": 3, "id": "hostile-names", "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": format!("/p/</title><script>{}</script>", run(1))});
    let usage = json!({"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.5}});
    let lines = [
        header,
        json!({"type": "message", "id": "u", "parentId": null, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "hi"}}),
        json!({"type": "message", "id": "a", "parentId": "u", "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                "provider": format!("<svg onload=\"{}\">", run(2)), "model": format!("'><img src=x onerror={}>", run(3)),
                "usage": usage, "stopReason": "stop"}}),
        json!({"type": "usage", "id": "k", "parentId": "a", "timestamp": "2026-01-01T00:00:03.000Z",
            "kind": format!("<script>{}</script>", run(4)), "provider": "p", "model": "m", "usage": usage}),
        json!({"type": "session_info", "id": "i", "parentId": "k", "timestamp": "2026-01-01T00:00:04.000Z",
            "name": format!("\"><script>{}</script>\u{202e}", run(5))}),
        json!({"type": "compaction", "id": "c", "parentId": "i", "timestamp": "2026-01-01T00:00:05.000Z",
            "summary": "s", "firstKeptEntryId": "a", "tokensBefore": 100}),
    ];
    let folder = dir.join("--p-hostile--");
    std::fs::create_dir_all(&folder).expect("folder");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(folder.join("2026-01-01T00-00-00-000Z_hostile-names.jsonl"), text).expect("write");
}

#[test]
fn hostile_session_names_show_as_text_not_script() {
    let tmp = tempfile::tempdir().expect("temp dir");
    hostile_session(tmp.path());
    let page = artifacts("html").join("hostile.html");
    let hostile = repo().join("tests").join("data").join("hostile");
    let paths = [
        tmp.path().to_str().expect("utf-8"),
        hostile.to_str().expect("utf-8"),
        "--quiet",
    ];
    report(&page, &paths);
    let html = std::fs::read_to_string(&page).expect("page");
    for raw in ["<script>window", "<img", "<svg onload", "\u{202e}"] {
        assert!(!html.contains(raw), "{raw:?} reached the page as markup");
    }
    let seen = open(&page, "hostile", None);
    assert_rendered(&seen, &page);
    let text = seen["text"].as_str().expect("text");
    for shown in [
        "/p/</title><script>window.__pwned=1</script>",
        "<svg onload=\"window.__pwned=2\">",
        "'><img src=x onerror=window.__pwned=3>",
        "usage entry: <script>window.__pwned=4</script>",
        "\"><script>window.__pwned=5</script>",
    ] {
        assert!(text.contains(shown), "{shown:?} is not shown as text");
    }
    assert_totals(&seen["totals"], &monthly_totals(&paths));
}

/// A page of a big corpus (`PISA_HTML_CORPUS=DIR`, e.g. 1 GB from `datasets/generate.py`): the
/// same checks, and under 2 MB. Prints pisa's line with the size and the time taken.
#[test]
#[ignore = "needs PISA_HTML_CORPUS"]
fn a_big_corpus_page_renders_and_stays_small() {
    let corpus = std::env::var("PISA_HTML_CORPUS").expect("PISA_HTML_CORPUS=DIR");
    let page = artifacts("html").join("big.html");
    let err = report(&page, &[&corpus, "--quiet"]);
    eprintln!("{err}");
    let size = std::fs::metadata(&page).expect("page").len();
    assert!(size < 2_000_000, "{size} bytes");
    let seen = open(&page, "big", None);
    assert_rendered(&seen, &page);
    assert_totals(&seen["totals"], &monthly_totals(&[&corpus]));
}
