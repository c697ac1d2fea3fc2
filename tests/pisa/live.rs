//! `pisa blocks`, `pisa status` and `pisa watch`: the windows against an independent cut of a
//! generated corpus, the status after Pi appends, the cache shared by runs at once, and the
//! live view's frames.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{export, generated, pisa, repo};

/// A session file Pi could have written: a header and one answer per cost, a minute apart from
/// `start` (Unix ms).
fn session_lines(id: &str, start: i64, costs: &[f64]) -> String {
    let iso = |ms: i64| format!("{:.3}", jiff::Timestamp::from_millisecond(ms).expect("time"));
    let mut out = format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{}","cwd":"/work/app"}}"#,
        iso(start - 60_000)
    ) + "\n";
    let mut parent = "null".to_string();
    for (i, cost) in costs.iter().enumerate() {
        out += &answer(&format!("{id}-{i}"), &parent, start + i as i64 * 60_000, *cost);
        parent = format!("\"{id}-{i}\"");
    }
    out
}

/// One assistant answer that cost `cost`.
fn answer(id: &str, parent: &str, ms: i64, cost: f64) -> String {
    let iso = format!("{:.3}", jiff::Timestamp::from_millisecond(ms).expect("time"));
    format!(
        r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"{iso}","message":{{"role":"assistant","content":[{{"type":"text","text":"done"}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{{"input":100,"output":20,"cacheRead":1000,"cacheWrite":0,"totalTokens":1120,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{cost}}}}},"stopReason":"stop","timestamp":{ms}}}}}"#
    ) + "\n"
}

const NOW: &str = "2026-03-10T12:00:00Z";

fn now_ms() -> i64 {
    NOW.parse::<jiff::Timestamp>().expect("time").as_millisecond()
}

/// A folder with one session of answers at 11:00, 11:01, ... on the day of [`NOW`].
fn live_folder(costs: &[f64]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = dir.path().join("--work-app--");
    std::fs::create_dir_all(&folder).expect("mkdir");
    let file = folder.join("2026-03-10T10-59-00-000Z_s1.jsonl");
    std::fs::write(&file, session_lines("s1", now_ms() - 3_600_000, costs)).expect("write");
    (dir, file)
}

fn append(file: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(file).expect("open");
    f.write_all(line.as_bytes()).expect("append");
}

/// `pisa --cache-dir CACHE status --json DIR --now NOW -z UTC`, parsed.
fn status_json(dir: &Path, cache: &Path) -> Value {
    let out = assert_cmd::Command::cargo_bin("pisa")
        .expect("pisa")
        .args([
            "--cache-dir",
            cache.to_str().unwrap(),
            "status",
            "--json",
            "-z",
            "UTC",
            "--now",
            NOW,
        ])
        .arg(dir)
        .output()
        .expect("run pisa");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn blocks_match_an_independent_cut_of_a_generated_corpus() {
    let corpus = generated("21", 40);
    let out = export(corpus.path(), &[]);
    let (code, json, err) = pisa(&[
        "blocks",
        "--json",
        "--quiet",
        "--now",
        NOW,
        corpus.path().to_str().unwrap(),
    ]);
    assert!(code == 0 || code == 2, "{err}");
    let doc: Value = serde_json::from_str(&json).expect("JSON");
    assert!(doc["blocks"].as_array().is_some_and(|b| b.len() > 3), "{doc}");
    let blocks_file = out.path().join("blocks.json");
    std::fs::write(&blocks_file, &json).expect("write");
    let run = crate::support::test_env()
        .python()
        .arg(repo().join("tests").join("pisa").join("blocks_check.py"))
        .args([out.path(), &blocks_file, &corpus.path().join("manifest.json")])
        .output()
        .expect("run python");
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{said}{}", String::from_utf8_lossy(&run.stderr));
    assert!(said.contains("blocks: ok"), "{said}");
}

#[test]
fn status_after_an_append_reflects_the_appended_call() {
    let (dir, file) = live_folder(&[0.5, 0.25]);
    let cache = tempfile::tempdir().expect("temp dir");
    let before = status_json(dir.path(), cache.path());
    assert!(close(&before["today"]["cost"], 0.75), "{before}");
    assert!(close(&before["session"]["cost"], 0.75), "{before}");
    assert!(close(&before["block"]["cost"], 0.75), "{before}");
    assert_eq!(before["block"]["start"], "2026-03-10T11:00:00.000Z");
    // Warm, then Pi appends an answer.
    assert_eq!(status_json(dir.path(), cache.path()), before);
    append(&file, &answer("s1-9", "\"s1-1\"", now_ms() - 60_000, 2.0));
    let after = status_json(dir.path(), cache.path());
    assert!(close(&after["today"]["cost"], 2.75), "{after}");
    assert!(close(&after["session"]["cost"], 2.75), "{after}");
    assert!(close(&after["block"]["cost"], 2.75), "{after}");
    assert_eq!(after["block"]["calls"], 3);
    assert_eq!(after["cacheReadOnly"], false);
}

#[test]
fn status_agrees_with_blocks_and_daily_on_a_generated_corpus() {
    let corpus = generated("22", 30);
    let dir = corpus.path().to_str().unwrap();
    let (_, json, _) = pisa(&["blocks", "--json", "--quiet", "--now", NOW, dir]);
    let blocks: Value = serde_json::from_str(&json).expect("JSON");
    // "Now" one hour after the busiest window's last call: that window is active then.
    let busiest = blocks["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|b| b["calls"].as_u64())
        .unwrap();
    let last: jiff::Timestamp = busiest["lastCall"].as_str().unwrap().parse().unwrap();
    let now = (last + jiff::SignedDuration::from_mins(1)).to_string();
    let (_, json, _) = pisa(&["blocks", "--json", "--active", "--quiet", "--now", &now, dir]);
    let active: Value = serde_json::from_str(&json).expect("JSON");
    let cache = tempfile::tempdir().expect("temp dir");
    let (_, json, err) = pisa(&[
        "--cache-dir",
        cache.path().to_str().unwrap(),
        "status",
        "--json",
        "-z",
        "UTC",
        "--now",
        &now,
        dir,
    ]);
    let status: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert!(status["block"].is_object(), "{status}");
    assert_eq!(
        status["block"], active["blocks"][0],
        "status and blocks --active differ"
    );
    let day = &now[..10];
    let (_, json, _) = pisa(&[
        "daily", "--json", "--quiet", "-z", "UTC", "--since", day, "--until", day, dir,
    ]);
    let daily: Value = serde_json::from_str(&json).expect("JSON");
    let want = daily["rows"][0]["cost"].as_f64().unwrap_or(0.0);
    assert!(
        close(&status["today"]["cost"], want),
        "status {} daily {want}",
        status["today"]
    );
}

#[test]
fn status_does_not_wait_for_a_run_that_holds_the_cache() {
    let (dir, _) = live_folder(&[0.5]);
    let cache = tempfile::tempdir().expect("temp dir");
    status_json(dir.path(), cache.path());
    let index = std::fs::read(cache.path().join("index.bin")).expect("index");
    let held = pisa::corpus::lock::try_write(cache.path()).expect("lock");
    assert!(matches!(held, pisa::corpus::lock::Attempt::Held(_)));
    let (_, file) = (
        0,
        dir.path()
            .join("--work-app--")
            .join("2026-03-10T10-59-00-000Z_s1.jsonl"),
    );
    append(&file, &answer("s1-9", "\"s1-0\"", now_ms() - 60_000, 1.0));
    let start = Instant::now();
    let doc = status_json(dir.path(), cache.path());
    assert!(start.elapsed() < Duration::from_secs(20));
    assert_eq!(doc["cacheReadOnly"], true);
    assert!(close(&doc["today"]["cost"], 1.5), "{doc}");
    assert_eq!(
        std::fs::read(cache.path().join("index.bin")).expect("index"),
        index,
        "a read-only run wrote the index"
    );
    drop(held);
    assert_eq!(status_json(dir.path(), cache.path())["cacheReadOnly"], false);
}

/// Runs at once over one cache while Pi appends: each says what a run without a cache says,
/// none warns about the cache, and the cache they leave is sound.
#[test]
fn runs_at_once_never_corrupt_the_cache() {
    let corpus = generated("23", 30);
    let cache = tempfile::tempdir().expect("temp dir");
    let (cache_arg, dir) = (cache.path().to_str().unwrap(), corpus.path().to_str().unwrap());
    let spawn = |args: &[&str]| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("pisa"))
            .args(["--cache-dir", cache_arg])
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn pisa")
    };
    for round in 0..3 {
        let children: Vec<_> = (0..4)
            .map(|i| match i % 2 {
                0 => spawn(&["sessions", "--json", "--quiet", dir]),
                _ => spawn(&["status", "--json", "--now", NOW, dir]),
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().expect("wait");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("cache"), "round {round}: {err}");
            assert!(matches!(out.status.code(), Some(0 | 2)), "round {round}: {err}");
        }
    }
    let (_, fresh, _) = pisa(&["sessions", "--json", "--quiet", dir]);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("pisa"))
        .args(["--cache-dir", cache_arg, "sessions", "--json", "--quiet", dir])
        .output()
        .expect("run");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("cache"));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        fresh,
        "the cache changed a result"
    );
}

#[test]
fn status_line_follows_the_template_and_the_asked_for_session() {
    let (dir, first) = live_folder(&[0.5, 0.25]);
    let other = first.with_file_name("2026-03-10T11-30-00-000Z_s2.jsonl");
    std::fs::write(&other, session_lines("s2", now_ms() - 1_800_000, &[4.0])).expect("write");
    let d = dir.path().to_str().unwrap();
    let line = |extra: &[&str]| {
        let mut args = vec![
            "status",
            "-z",
            "UTC",
            "--now",
            NOW,
            d,
            "--format",
            "{session}|{session_cost}|{today_cost}|{block_cost}|{{x}}",
        ];
        args.extend(extra);
        pisa(&args)
    };
    // s2 was written last.
    assert_eq!(line(&[]).1, "s2|$4.00|$4.75|$4.75|{x}\n");
    let first = first.to_str().unwrap();
    assert_eq!(line(&["--session", first]).1, "s1|$0.75|$4.75|$4.75|{x}\n");
    let (code, _, err) = pisa(&["status", "--format", "{nope}", d]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown placeholder {nope}"), "{err}");
}

mod watch {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use pisa::live::{View, changes::Changes, render};
    use pisa::report::status::{self, Status};

    fn draw(s: Option<&Status>) -> String {
        let mut t = Terminal::new(TestBackend::new(90, 18)).expect("terminal");
        let tz = jiff::tz::TimeZone::UTC;
        let view = View {
            status: s,
            error: None,
            tz: &tz,
            tz_name: "UTC",
            mode: "refreshes on file notifications",
        };
        t.draw(|f| render(f, &view)).expect("draw");
        t.backend().to_string()
    }

    fn compute(dir: &Path) -> Status {
        status::compute(&status::Options {
            roots: vec![dir.to_path_buf()],
            cache_dir: None,
            session: None,
            now_ms: now_ms(),
            tz: jiff::tz::TimeZone::UTC,
        })
        .expect("status")
    }

    #[test]
    fn frames() {
        let (dir, _) = live_folder(&[0.5, 0.25, 1.0]);
        let mut s = compute(dir.path());
        // The session's folder is a temporary one.
        s.session.as_mut().unwrap().path = PathBuf::from("/sessions/s1.jsonl");
        s.session.as_mut().unwrap().compactions = vec![status::Compaction {
            timestamp: Some("2026-03-10T11:30:00Z".into()),
            tokens_before: Some(180_000.0),
            tokens_after: Some(12_500.0),
        }];
        insta::assert_snapshot!("watch_active_window", draw(Some(&s)));
        insta::assert_snapshot!("watch_starting", draw(None));
        let quiet = Status {
            block: None,
            session: None,
            ..s
        };
        insta::assert_snapshot!("watch_no_window_no_session", draw(Some(&quiet)));
    }

    #[test]
    fn an_append_changes_the_view() {
        let (dir, file) = live_folder(&[0.5]);
        let changes = Changes::watch(&[dir.path().to_path_buf()], Duration::from_millis(200));
        let before = draw(Some(&compute(dir.path())));
        assert!(before.contains("$0.50"), "{before}");
        while changes.changed() {}
        append(&file, &answer("s1-9", "\"s1-0\"", now_ms() - 60_000, 3.0));
        assert!(
            changes.wait(Duration::from_secs(10)),
            "no change noticed ({})",
            changes.mode()
        );
        let after = draw(Some(&compute(dir.path())));
        assert_ne!(before, after);
        assert!(after.contains("$3.50"), "{after}");
    }
}
