//! The command line: exit codes, stderr listings, JSON shape, inspect.

use std::fs;

use crate::support::{pi_files, pisa};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s-1","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/home/u/proj"}"#;
const USER: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-05-01T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1777629601000}}"#;
const ASSISTANT: &str = r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-05-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":100,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":120,"cost":{"input":0.0003,"output":0.0003,"cacheRead":0,"cacheWrite":0,"total":0.0006}},"stopReason":"stop","timestamp":1777629602000}}"#;

/// The session object of a `sessions --json` document that matches `pred`.
fn session_where(doc: &serde_json::Value, pred: impl Fn(&serde_json::Value) -> bool) -> &serde_json::Value {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| pred(s))
        .expect("a matching session")
}

fn session_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("--home-u-proj--");
    fs::create_dir(&sub).unwrap();
    fs::write(
        sub.join("2026-05-01T10-00-00-000Z_s-1.jsonl"),
        format!("{HEADER}\n{USER}\n{ASSISTANT}\n"),
    )
    .unwrap();
    dir
}

#[test]
fn clean_directory_exits_zero_and_prints_a_table_with_totals() {
    let dir = session_dir();
    let (code, out, err) = pisa(&["sessions", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("/home/u/proj"), "{out}");
    assert!(out.contains("claude-sonnet-4-5"), "{out}");
    assert!(out.contains("1 sessions"), "{out}");
    assert!(out.contains("tokens 120"), "{out}");
    assert!(out.contains("0 rejected, 0 damaged"), "{out}");
}

#[test]
fn damaged_sessions_and_sessions_pi_cannot_load_are_listed_with_reason_and_exit_two() {
    let dir = session_dir();
    let sub = dir.path().join("--home-u-proj--");
    fs::write(sub.join("damaged.jsonl"), format!("{HEADER}\n{{oops\n{USER}\n")).unwrap();
    // A BOM before the header: Pi cannot parse it and loads nothing, but the file is a session.
    fs::write(
        sub.join("2026-05-03T10-00-00-000Z_s-3.jsonl"),
        format!("\u{feff}{HEADER}\n{USER}\n"),
    )
    .unwrap();
    // Pi's own name for a session file, emptied.
    fs::write(sub.join("2026-05-04T10-00-00-000Z_s-4.jsonl"), "").unwrap();
    let (code, out, err) = pisa(&["sessions", "--json", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("damaged.jsonl: line 2 (byte"), "{err}");
    assert!(
        err.contains("s-3.jsonl: Pi does not load it: the first entry (byte"),
        "{err}"
    );
    assert!(err.contains("s-4.jsonl: empty file"), "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["totals"]["rejectedFiles"], 2);
    assert_eq!(doc["totals"]["damagedFiles"], 1);
    for r in doc["rejected"].as_array().unwrap() {
        assert_eq!(r["notSession"], false, "{r}");
    }
    // The damage did not cost the good file its figures.
    let good = session_where(&doc, |s| s["path"].as_str().unwrap().ends_with("s-1.jsonl"));
    assert_eq!(good["stats"]["tokens"]["total"], 120);
    let (code, out, err) = pisa(&["sessions", "--quiet", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("2 rejected, 1 damaged, 0 unreadable\n"), "{out}");
}

/// Files that are not Pi sessions (extensions' transcripts, other tools' logs, empty files
/// not named as Pi names sessions) are skipped as Pi skips them: exit 0, listed only with
/// `--verbose`, counted apart in the table and marked `not_session` in the files frame.
#[test]
fn files_that_are_not_sessions_exit_zero_and_are_listed_with_verbose() {
    let dir = session_dir();
    let sub = dir.path().join("--home-u-proj--");
    let run = sub.join("2026-05-01T10-00-00-000Z_s-1").join("subagent-artifacts");
    fs::create_dir_all(&run).unwrap();
    fs::write(
        run.join("a1b2_worker_0_transcript.jsonl"),
        "{\"version\":1,\"recordType\":\"message\",\"message\":{\"role\":\"user\"}}\n",
    )
    .unwrap();
    fs::write(sub.join("todo-log.jsonl"), "{\"task\":\"x\"}\n[1,2]\n").unwrap();
    fs::write(sub.join("empty.jsonl"), "").unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, out, err) = pisa(&["sessions", d]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    assert!(
        out.contains(
            "0 rejected, 0 damaged, 0 unreadable; 2 not Pi sessions (skipped, as Pi skips them); \
             1 subagent transcripts (their calls counted where no session holds them)\n"
        ),
        "{out}"
    );
    let (code, _, err) = pisa(&["sessions", "--verbose", d]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("not a session, skipped ").count(), 3, "{err}");
    for name in ["a1b2_worker_0_transcript.jsonl", "todo-log.jsonl", "empty.jsonl"] {
        assert!(err.contains(name), "{name}: {err}");
    }
    let (code, out, _) = pisa(&["sessions", "-j", d]);
    assert_eq!(code, 0);
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rejected = doc["rejected"].as_array().unwrap();
    assert_eq!(rejected.len(), 3);
    assert_eq!(doc["totals"]["notSessionFiles"], 3);
    assert!(
        rejected
            .iter()
            .all(|r| r["status"] == "rejected" && r["notSession"] == true)
    );
    let (code, out, err) = pisa(&[
        "query",
        "--csv",
        "SELECT status, count(*) AS n FROM files GROUP BY 1 ORDER BY 1",
        d,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "status,n\nartifact,1\nnot_session,2\nok,1\n");
}

#[test]
fn usage_errors_exit_one() {
    let (code, _, err) = pisa(&["sessions", "--no-such-flag"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = pisa(&["sessions", "/definitely/not/here"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/definitely/not/here"), "{err}");
    let (code, out, _) = pisa(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("sessions"));
}

#[test]
fn forked_history_is_counted_once_across_sessions() {
    let dir = session_dir();
    let sub = dir.path().join("--home-u-proj--");
    let fork_header = r#"{"type":"session","version":3,"id":"s-2","timestamp":"2026-05-02T10:00:00.000Z","cwd":"/home/u/proj","parentSession":"/x/2026-05-01T10-00-00-000Z_s-1.jsonl"}"#;
    fs::write(
        sub.join("2026-05-02T10-00-00-000Z_s-2.jsonl"),
        format!("{fork_header}\n{USER}\n{ASSISTANT}\n"),
    )
    .unwrap();
    let (code, out, err) = pisa(&["sessions", "--json", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["totals"]["total"], 120);
    assert_eq!(doc["totals"]["naiveTotal"], 240);
    assert_eq!(doc["totals"]["inheritedCalls"], 1);
    let fork = session_where(&doc, |s| s["sessionId"] == "s-2");
    assert_eq!(
        fork["stats"]["tokens"]["total"], 120,
        "Pi's per-session totals keep the copy"
    );
    assert_eq!(fork["own"]["total"], 0);
    assert_eq!(
        fork["parentInCorpus"],
        "--home-u-proj--/2026-05-01T10-00-00-000Z_s-1.jsonl"
    );
}

#[test]
fn session_dir_env_var_is_the_default_root() {
    let dir = session_dir();
    let out = assert_cmd::Command::cargo_bin("pisa")
        .unwrap()
        .args(["sessions", "--json"])
        .env("PI_CODING_AGENT_SESSION_DIR", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["totals"]["sessions"], 1);
}

#[test]
fn inspect_shows_projection_compactions_and_damage() {
    let file = pi_files().join("before-compaction.jsonl");
    let (code, out, err) = pisa(&["inspect", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Projected role"), "{out}");
    assert!(out.contains("compactionSummary"), "{out}");
    assert!(out.contains("Tokens before"), "{out}");
    assert!(out.contains("damage: 0 malformed lines"), "{out}");
    let (code, out, _) = pisa(&["inspect", "--json", file.to_str().unwrap()]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["compactions"]["total"], 2);
    assert!(j["projectionByRole"].as_array().unwrap().len() >= 3);
}

#[test]
fn results_are_identical_with_one_thread_and_many() {
    let dir = pi_files();
    let one = pisa(&["--threads", "1", "sessions", "--json", dir.to_str().unwrap()]).1;
    let many = pisa(&["--threads", "4", "sessions", "--json", dir.to_str().unwrap()]).1;
    assert_eq!(one, many);
}

/// Without a sessions folder pisa shows the sample compiled into the binary, from a binary
/// moved away from the source tree, and says so on stderr, with `--json` and `--quiet` too.
#[test]
fn without_a_sessions_folder_the_bundled_sample_is_shown() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let bin = elsewhere.path().join("pisa");
    // A hard link where the folders share a file system: a debug binary is over 300 MB, and a
    // copy of it once filled a CI machine's disk.
    let built = assert_cmd::cargo::cargo_bin("pisa");
    if fs::hard_link(&built, &bin).is_err() {
        fs::copy(&built, &bin).unwrap();
    }
    let sample = crate::support::repo().join("datasets").join("sample");
    let (_, expected, _) = pisa(&["sessions", "--json", "--quiet", sample.to_str().unwrap()]);
    let expected: serde_json::Value = serde_json::from_str(&expected).unwrap();
    for (args, json) in [
        (&["sessions", "--quiet"][..], false),
        (&["sessions", "--json", "--quiet"], true),
        (&["sessions", "--demo", "-j"], true),
    ] {
        let out = std::process::Command::new(&bin)
            .args(args)
            .env("HOME", home.path())
            .env("PISA_NO_CACHE", "1")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("PI_CODING_AGENT_DIR")
            .current_dir(elsewhere.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "a demo exits 0: {err}");
        assert!(
            err.starts_with(
                "pisa: showing the bundled SAMPLE sessions (51 made-up files, some damaged on purpose), not yours"
            ),
            "{args:?}: {err}"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        if json {
            let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(doc["totals"], expected["totals"], "the demo is the sample");
        } else {
            assert!(text.contains("45 sessions"), "{text}");
        }
    }
}

#[test]
fn sessions_table_on_the_sample_is_stable() {
    let sample = crate::support::repo().join("datasets").join("sample");
    let (code, out, _) = pisa(&["sessions", "--quiet", "-z", "UTC", sample.to_str().unwrap()]);
    assert_eq!(
        code, 2,
        "the sample holds damaged files and sessions Pi cannot load on purpose"
    );
    insta::assert_snapshot!("sessions_table_sample", out);
}

/// The table's times are in the chosen zone, named in the header.
#[test]
fn sessions_table_times_are_in_the_chosen_time_zone() {
    let dir = session_dir();
    let d = dir.path().to_str().unwrap();
    let (code, out, err) = pisa(&["sessions", "--timezone", "Asia/Tokyo", d]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Started (Asia/Tokyo)"), "{out}");
    // Header 10:00:00Z, last message 10:00:02Z: 19:00 in Tokyo.
    assert_eq!(out.matches("2026-05-01 19:00").count(), 2, "{out}");
    let (code, out, _) = pisa(&["sessions", "-z", "UTC", d]);
    assert_eq!(code, 0);
    assert_eq!(out.matches("2026-05-01 10:00").count(), 2, "{out}");
    let (code, _, err) = pisa(&["sessions", "-z", "Mars/Olympus", d]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown time zone `Mars/Olympus`"), "{err}");
}

/// Shell completions and the manual page come from the same definitions as the parser.
#[test]
fn completions_and_manual_pages_are_generated() {
    for (shell, marker) in [
        ("bash", "_pisa()"),
        ("zsh", "#compdef pisa"),
        ("fish", "complete -c pisa"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let (code, out, err) = pisa(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}: {out}");
        assert!(out.contains("sessions") && out.contains("--timezone"), "{shell}");
    }
    let (code, _, err) = pisa(&["completions", "tcsh"]);
    assert_eq!(code, 1, "{err}");
    let (code, out, err) = pisa(&["man"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(".ie") && out.contains(".TH pisa 1"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = pisa(&["man", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    for page in ["pisa.1", "pisa-sessions.1", "pisa-daily.1", "pisa-export.1"] {
        let text = fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page}");
    }
}

#[test]
fn inspect_of_a_fixture_is_stable() {
    let file = pi_files().join("before-compaction.jsonl");
    let (code, out, err) = pisa(&["inspect", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"(?m)^\S*before-compaction\.jsonl$", "[FIXTURE]");
    settings.bind(|| insta::assert_snapshot!("inspect_before_compaction", out));
}

#[test]
fn the_sessions_folder_is_found_the_way_pi_finds_it() {
    let sessions = session_dir();
    let home = tempfile::tempdir().unwrap();
    let run = |envs: &[(&str, &std::path::Path)]| {
        let mut cmd = assert_cmd::Command::cargo_bin("pisa").unwrap();
        cmd.args(["sessions", "--json"])
            .env("HOME", home.path())
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("PI_CODING_AGENT_DIR");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        (
            doc["totals"]["sessions"].as_u64(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // ~/.pi/agent/sessions
    let default = home.path().join(".pi/agent/sessions");
    fs::create_dir_all(default.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(sessions.path(), &default).unwrap();
    assert_eq!(run(&[]).0, Some(1));
    // PI_CODING_AGENT_DIR/sessions
    let agent = tempfile::tempdir().unwrap();
    let (_, err) = run(&[("PI_CODING_AGENT_DIR", agent.path())]);
    assert!(err.contains("bundled SAMPLE"), "no sessions folder there yet: {err}");
    std::os::unix::fs::symlink(sessions.path(), agent.path().join("sessions")).unwrap();
    assert_eq!(run(&[("PI_CODING_AGENT_DIR", agent.path())]).0, Some(1));
    // the sessionDir setting of the agent folder
    let elsewhere = tempfile::tempdir().unwrap();
    fs::remove_file(agent.path().join("sessions")).unwrap();
    fs::write(
        agent.path().join("settings.json"),
        format!(r#"{{"sessionDir":"{}"}}"#, sessions.path().display()),
    )
    .unwrap();
    assert_eq!(run(&[("PI_CODING_AGENT_DIR", agent.path())]).0, Some(1));
    // PI_CODING_AGENT_SESSION_DIR wins over everything
    assert_eq!(
        run(&[
            ("PI_CODING_AGENT_DIR", agent.path()),
            ("PI_CODING_AGENT_SESSION_DIR", elsewhere.path())
        ])
        .0,
        Some(0)
    );
}
