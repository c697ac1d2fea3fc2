//! Subagent layouts (docs/subagents.md): every API call counted once across a parent, its
//! child sessions, a fork child, transcripts and the parent's subagent tool results, with the
//! naive per-file sum beside it; Pi's own per-file figures unchanged.

use std::path::Path;

use serde_json::{Value, json};

use crate::support::{assert_agreement, pisa, pisa_json};

const HOME: &str = "/home/u/.pi/agent/sessions";
const PARENT: &str = "--p--/2026-05-01T10-00-00-000Z_P.jsonl";
const CHILD: &str = "--p--/2026-05-01T10-00-00-000Z_P/R1/run-0/session.jsonl";
const FORK: &str = "--p--/2026-05-01T10-00-00-000Z_P/forks/2026-05-01T10-05-00-000Z_F.jsonl";
const T1: &str = "--p--/subagent-artifacts/R1_worker_0_transcript.jsonl";
const T2: &str = "--p--/subagent-artifacts/R2_worker_0_transcript.jsonl";

fn header(id: &str, minute: u32, parent: Option<&str>) -> Value {
    let mut h = json!({"type": "session", "version": 3, "id": id,
        "timestamp": format!("2026-05-01T10:{minute:02}:00.000Z"), "cwd": "/p"});
    if let Some(p) = parent {
        h["parentSession"] = json!(p);
    }
    h
}

fn usage(input: u64, output: u64, cost: f64) -> Value {
    json!({"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input + output,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}})
}

/// An assistant message (the `message` object) made at `ms`.
fn answer(ms: u64, input: u64, output: u64, cost: f64, content: Value) -> Value {
    json!({"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
        "model": "claude-sonnet-4-5", "responseId": format!("msg_{ms}"), "usage": usage(input, output, cost),
        "stopReason": "stop", "timestamp": ms})
}

fn entry(id: &str, parent: Option<&str>, second: u32, message: Value) -> Value {
    json!({"type": "message", "id": id, "parentId": parent,
        "timestamp": format!("2026-05-01T10:00:{second:02}.000Z"), "message": message})
}

fn user(id: &str, parent: Option<&str>, second: u32) -> Value {
    entry(
        id,
        parent,
        second,
        json!({"role": "user", "content": "go", "timestamp": 1}),
    )
}

/// A subagent tool result: one child with its usage, the tool result's usage their sum.
fn subagent_result(id: &str, parent: &str, second: u32, run: &str, child: (u64, u64, f64)) -> Value {
    let (input, output, cost) = child;
    let file = format!("{HOME}/--p--/2026-05-01T10-00-00-000Z_P/{run}/run-0/session.jsonl");
    entry(
        id,
        Some(parent),
        second,
        json!({"role": "toolResult", "toolCallId": format!("call_{run}"),
        "toolName": "subagent", "content": [{"type": "text", "text": "done"}],
        "details": {"mode": "single", "runId": run, "results": [{"index": 0, "agent": "worker", "exitCode": 0,
            "usage": {"input": input, "output": output, "cacheRead": 0, "cacheWrite": 0, "cost": cost, "turns": 2},
            "sessionFile": file}]},
        "usage": usage(input, output, cost), "isError": false, "timestamp": 2}),
    )
}

fn transcript(run: &str, answers: &[Value]) -> Vec<Value> {
    let base = |record: Value| {
        let mut r = json!({"version": 1, "recordType": "message", "source": "foreground", "runId": run,
            "agent": "worker", "childIndex": 0, "cwd": "/p", "ts": 5, "timestamp": "2026-05-01T10:00:30.000Z"});
        r.as_object_mut().unwrap().extend(record.as_object().unwrap().clone());
        r
    };
    let mut lines = vec![base(json!({"sourceEventType": "initial_prompt", "role": "user",
        "text": "[prompt redacted]", "message": {"role": "user", "content": [{"type": "text", "text": "Task"}]}}))];
    for a in answers {
        lines.push(base(
            json!({"sourceEventType": "message_end", "role": "assistant", "model": a["model"],
            "usage": {"input": a["usage"]["input"], "output": a["usage"]["output"], "cacheRead": 0, "cacheWrite": 0,
                "cost": a["usage"]["cost"]["total"]}, "message": a}),
        ));
    }
    lines
}

fn write(root: &Path, rel: &str, lines: &[Value]) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The parent ran three subagents: R1 (its session and transcript written), R2 (only its
/// transcript left), R3 (nothing left but the tool result's usage); and a fork child.
fn layout(root: &Path) {
    let call = |run: &str| {
        json!([{"type": "toolCall", "id": format!("call_{run}"), "name": "subagent",
        "arguments": {"agent": "worker", "task": "t"}}])
    };
    let a1 = answer(1000, 100, 10, 0.01, call("R1"));
    write(
        root,
        PARENT,
        &[
            header("P", 0, None),
            user("u1", None, 1),
            entry("a1", Some("u1"), 2, a1.clone()),
            subagent_result("t1", "a1", 3, "R1", (50, 5, 0.005)),
            entry("a2", Some("t1"), 4, answer(1300, 10, 1, 0.001, call("R2"))),
            subagent_result("t2", "a2", 5, "R2", (30, 3, 0.003)),
            subagent_result("t3", "t2", 6, "R3", (20, 2, 0.002)),
        ],
    );
    let c1a = answer(1100, 20, 2, 0.002, json!([]));
    let c1b = answer(1200, 30, 3, 0.003, json!([]));
    write(
        root,
        CHILD,
        &[
            header("C1", 1, None),
            user("v1", None, 10),
            entry("b1", Some("v1"), 11, c1a.clone()),
            entry("b2", Some("b1"), 12, c1b.clone()),
        ],
    );
    write(root, T1, &transcript("R1", &[c1a, c1b]));
    let x1 = answer(2100, 10, 1, 0.001, json!([]));
    let x2 = answer(2200, 20, 2, 0.002, json!([]));
    write(root, T2, &transcript("R2", &[x1, x2]));
    write(
        root,
        FORK,
        &[
            header("F", 5, Some(&format!("{HOME}/{PARENT}"))),
            user("u1", None, 1),
            entry("a1", Some("u1"), 2, a1),
            entry("f1", Some("a1"), 20, answer(3000, 7, 1, 0.0007, json!([]))),
        ],
    );
}

fn close(a: &Value, b: f64) -> bool {
    let a = a.as_f64().unwrap();
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[test]
fn each_call_counts_once_across_parent_children_fork_transcripts_and_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    layout(dir.path());
    let doc = pisa_json(dir.path());
    let t = &doc["totals"];
    // a1, a2, the R3 part; the child's two answers; the R2 transcript's two; the fork's own.
    assert_eq!(
        t["billedCalls"].as_u64().unwrap() - t["inheritedCalls"].as_u64().unwrap(),
        8,
        "{t}"
    );
    assert_eq!(
        (t["input"].as_u64(), t["output"].as_u64()),
        (Some(217), Some(22)),
        "{t}"
    );
    assert!(close(&t["cost"], 0.0217), "{t}");
    // What summing Pi's per-file figures says: the tool results and the fork's copy again.
    assert_eq!(t["naiveTotal"].as_u64(), Some(210 + 21 + 55 + 118), "{t}");
    assert_eq!(t["sessions"], 3);
    assert_eq!(t["notSessionFiles"], 2);

    let session = |rel: &str| {
        doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["path"] == rel)
            .unwrap()
            .clone()
    };
    let parent = session(PARENT);
    assert_eq!(parent["spawnedBy"], Value::Null);
    assert_eq!(parent["children"], json!([CHILD, FORK]));
    // Own: a1, a2 and the R3 part; subagents: the child, the fork's own answer, the R2 transcript,
    // the R3 part.
    assert_eq!(parent["own"]["total"], 110 + 11 + 22);
    assert_eq!(parent["subagentTokens"], 55 + 8 + 33 + 22);
    assert!(
        close(&parent["subagentCost"], 0.005 + 0.0007 + 0.003 + 0.002),
        "{parent}"
    );
    assert_eq!(session(CHILD)["spawnedBy"], PARENT);
    assert_eq!(session(FORK)["spawnedBy"], PARENT);
    assert_eq!(
        session(FORK)["own"]["total"],
        8,
        "the fork's copy of a1 is the parent's"
    );

    let rejected = |rel: &str| {
        doc["rejected"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["path"] == rel)
            .unwrap()
            .clone()
    };
    let (t1, t2) = (rejected(T1), rejected(T2));
    assert_eq!(
        (t1["artifact"].as_str(), t1["notSession"].as_bool()),
        (Some("transcript"), Some(true))
    );
    assert_eq!(t1["own"]["total"], 0, "the child's session holds these: {t1}");
    assert_eq!(t1["own"]["inheritedCalls"], 2);
    assert_eq!(t2["own"]["total"], 33, "no session holds these: {t2}");
    assert_eq!(t2["spawnedBy"], PARENT);
}

#[test]
fn the_usage_frame_says_why_each_copy_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    layout(dir.path());
    let d = dir.path().to_str().unwrap();
    let (code, out, err) = pisa(&[
        "query",
        "--csv",
        "SELECT file, origin, inherited, inherited_reason, spawned_by, CAST(input AS BIGINT) AS input FROM usage \
         ORDER BY file, entry_index",
        d,
    ]);
    assert_eq!(code, 0, "{err}");
    let expected = [
        "file,origin,inherited,inherited_reason,spawned_by,input",
        &format!("{PARENT},assistant,false,,,100"),
        &format!("{PARENT},subagent,true,child,,50"),
        &format!("{PARENT},assistant,false,,,10"),
        &format!("{PARENT},subagent,true,transcript,,30"),
        &format!("{PARENT},subagent,false,,,20"),
        &format!("{CHILD},assistant,false,,{PARENT},20"),
        &format!("{CHILD},assistant,false,,{PARENT},30"),
        &format!("{FORK},assistant,true,copy,{PARENT},100"),
        &format!("{FORK},assistant,false,,{PARENT},7"),
        &format!("{T1},transcript,true,session,{PARENT},20"),
        &format!("{T1},transcript,true,session,{PARENT},30"),
        &format!("{T2},transcript,false,,{PARENT},10"),
        &format!("{T2},transcript,false,,{PARENT},20"),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{out}");
    let (code, out, _) = pisa(&[
        "query",
        "--csv",
        "SELECT file, status, spawned_by FROM files ORDER BY file",
        d,
    ]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("{T2},artifact,")), "{out}");
    let (code, out, _) = pisa(&[
        "query",
        "--csv",
        "SELECT children, subagent_tokens FROM sessions WHERE file = 'x'",
        d,
    ]);
    assert_eq!((code, out.as_str()), (0, "children,subagent_tokens\n"));
}

/// Pi's per-file figures do not move: the oracle agrees on every file of the layout.
#[test]
fn pis_own_figures_stay_as_pi_computes_them() {
    let dir = tempfile::tempdir().unwrap();
    layout(dir.path());
    assert_agreement(dir.path(), 5);
}

/// A folder of only extension files is read without complaint: exit 0, listed with --verbose.
#[test]
fn a_folder_of_extension_files_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    layout(dir.path());
    let only = tempfile::tempdir().unwrap();
    for rel in [T1, T2] {
        let to = only.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(dir.path().join(rel), to).unwrap();
    }
    let d = only.path().to_str().unwrap();
    let (code, out, err) = pisa(&["sessions", d]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    assert!(out.contains("2 subagent transcripts"), "{out}");
    let (code, _, err) = pisa(&["sessions", "--verbose", d]);
    assert_eq!(code, 0);
    assert_eq!(err.matches("not a session, skipped").count(), 2, "{err}");
}

/// `pisa inspect` on a parent lists the sessions it ran and what each spent itself.
#[test]
fn inspect_shows_a_parents_subagents() {
    let dir = tempfile::tempdir().unwrap();
    layout(dir.path());
    let parent = dir.path().join(PARENT);
    let (code, out, err) = pisa(&["inspect", parent.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Subagent session"), "{out}");
    assert!(
        out.contains("R1/run-0/session.jsonl") && out.contains("this session"),
        "{out}"
    );
    assert!(out.contains("subagents: 2 sessions, 63 tokens"), "{out}");
    let (_, out, _) = pisa(&["inspect", "--json", parent.to_str().unwrap()]);
    let j: Value = serde_json::from_str(&out).unwrap();
    let subagents = j["subagents"].as_array().unwrap();
    assert_eq!(subagents.len(), 2);
    assert!(
        subagents.iter().any(|s| s["tokens"].as_f64() == Some(8.0)),
        "the fork's own call only: {j}"
    );
}

/// The generator knows every distinct call it wrote (`truth` in the manifest): pisa's totals
/// equal it, token for token, on corpora where summing Pi's per-file figures does not; and every
/// child session and transcript it wrote is linked to the session that ran it.
#[test]
fn totals_equal_the_generators_truth_where_the_naive_sum_does_not() {
    for seed in ["33", "34"] {
        let dir = crate::support::generated(seed, 40);
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("manifest.json")).unwrap()).unwrap();
        let truth = &manifest["truth"];
        let doc = pisa_json(dir.path());
        let t = &doc["totals"];
        for key in ["input", "output", "cacheRead", "cacheWrite"] {
            assert_eq!(
                t[key].as_f64(),
                truth[key].as_f64(),
                "seed {seed} {key}: {t} vs {truth}"
            );
        }
        let cost = truth["cost"].as_f64().unwrap();
        assert!(
            (t["cost"].as_f64().unwrap() - cost).abs() <= 1e-9 * cost,
            "seed {seed}: {t} vs {truth}"
        );
        let exact = ["input", "output", "cacheRead", "cacheWrite"]
            .iter()
            .map(|k| truth[k].as_f64().unwrap())
            .sum::<f64>();
        assert!(
            t["naiveTotal"].as_f64().unwrap() > exact * 1.05,
            "seed {seed}: the naive sum should overcount subagents and forks: {t}"
        );
        // Each report counts the same.
        let (code, out, err) = pisa(&["daily", "--json", "-q", "-z", "UTC", dir.path().to_str().unwrap()]);
        assert_eq!(code, crate::support::expected_exit_code(&doc), "{err}");
        let daily: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            daily["totals"]["totalTokens"].as_f64(),
            Some(exact),
            "seed {seed} daily"
        );

        // Links: children to the session that ran them, transcripts to the session whose run wrote them.
        let spawned_by = |rel: &str| {
            let find = |list: &str| {
                doc[list]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["path"] == rel)
                    .map(|s| s["spawnedBy"].clone())
            };
            find("sessions")
                .or_else(|| find("rejected"))
                .unwrap_or_else(|| panic!("seed {seed}: {rel} not scanned"))
        };
        let (mut children, mut transcripts) = (0, 0);
        for (parent, p) in manifest["subagentTruth"]["parents"].as_object().unwrap() {
            for child in p["runs"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r["children"].as_array().unwrap())
            {
                if child["sessionWritten"] == true {
                    children += 1;
                    assert_eq!(
                        spawned_by(child["sessionFile"].as_str().unwrap()),
                        *parent,
                        "seed {seed}"
                    );
                }
                if child["transcriptWritten"] == true {
                    transcripts += 1;
                    assert_eq!(
                        spawned_by(child["transcript"].as_str().unwrap()),
                        *parent,
                        "seed {seed}"
                    );
                }
            }
        }
        assert!(
            children >= 5 && transcripts >= 5,
            "seed {seed}: {children} children, {transcripts} transcripts"
        );
        assert_eq!(t["transcriptFiles"].as_u64(), Some(transcripts), "seed {seed}");
    }
}
