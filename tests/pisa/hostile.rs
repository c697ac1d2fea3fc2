//! Damaged and hostile input (issue 6): mutants of real session files never panic or hang
//! pisa and never change the figures of the untouched sessions beside them; hostile but
//! valid content agrees with Pi's own code, and where Pi's code throws, hangs or cannot
//! print its result, pisa still reports the file with a reason and the others in full.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pisa::analyze::{FileAnalysis, analyze_bytes};
use pisa::corpus::{self, Quiet};
use pisa::parse::Scratch;
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::support::{agreement, copy_tree, pi_files, pisa_json, repo};

/// Longest a single file may take through every stage (debug build, a loaded machine).
const CASE_LIMIT: Duration = Duration::from_secs(30);

/// The sample files the mutants start from: small ones (the debug build is slow), one per
/// feature-rich project, and the first 400 lines of both fixtures Pi wrote itself (v1).
fn seeds() -> &'static Vec<(String, Vec<u8>)> {
    static SEEDS: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let mut out = Vec::new();
        for f in sample_files() {
            let bytes = std::fs::read(&f).expect("read sample");
            if bytes.len() <= 50_000 {
                out.push((f.display().to_string(), bytes));
            }
        }
        for name in ["large-session.jsonl", "before-compaction.jsonl"] {
            let path = pi_files().join(name);
            let bytes = std::fs::read(&path).expect("read fixture");
            let cut: Vec<u8> = bytes
                .split_inclusive(|&b| b == b'\n')
                .take(400)
                .flatten()
                .copied()
                .collect();
            out.push((path.display().to_string(), cut));
        }
        assert!(out.len() >= 10, "only {} seed files", out.len());
        out
    })
}

fn sample_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walk(&repo().join("datasets").join("sample"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir") {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// One change to a file, positions given as fractions of its length so that any seed fits.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replace one byte.
    Flip(f64, u8),
    /// Cut the file at a byte (possibly inside a UTF-8 sequence or a JSON string).
    Truncate(f64),
    /// Shuffle the lines (the header may move away from the top).
    Shuffle(u64),
    /// Repeat a line right after itself.
    Duplicate(f64),
    /// Give one entry the id of another.
    Collide(f64, f64),
    /// Make an entry its own parent.
    SelfParent(f64),
    /// Link `n` entries from a position into a parent loop.
    Cycle(f64, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (0.0..1.0f64, any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        (0.0..1.0f64).prop_map(Mutation::Truncate),
        any::<u64>().prop_map(Mutation::Shuffle),
        (0.0..1.0f64).prop_map(Mutation::Duplicate),
        (0.0..1.0f64, 0.0..1.0f64).prop_map(|(a, b)| Mutation::Collide(a, b)),
        (0.0..1.0f64).prop_map(Mutation::SelfParent),
        (0.0..1.0f64, 2usize..6).prop_map(|(p, n)| Mutation::Cycle(p, n)),
    ]
}

fn at(frac: f64, len: usize) -> usize {
    ((frac * len as f64) as usize).min(len.saturating_sub(1))
}

/// The span of the JSON string or `null` that follows `"key":` in a line.
fn value_span(line: &[u8], key: &str) -> Option<(usize, usize)> {
    let pat = format!("\"{key}\":");
    let start = line.windows(pat.len()).position(|w| w == pat.as_bytes())? + pat.len();
    let rest = &line[start..];
    if rest.starts_with(b"null") {
        return Some((start, start + 4));
    }
    if rest.first() != Some(&b'"') {
        return None;
    }
    let end = rest[1..].iter().position(|&b| b == b'"')? + 2;
    Some((start, start + end))
}

fn get(line: &[u8], key: &str) -> Option<Vec<u8>> {
    value_span(line, key).map(|(a, b)| line[a..b].to_vec())
}

fn set(line: &mut Vec<u8>, key: &str, value: &[u8]) {
    if let Some((a, b)) = value_span(line, key) {
        line.splice(a..b, value.iter().copied());
    }
}

/// Indices of the lines that carry an id (entries of v2/v3 files).
fn with_ids(lines: &[Vec<u8>]) -> Vec<usize> {
    (1..lines.len())
        .filter(|&i| get(&lines[i], "id").is_some_and(|v| v != b"null"))
        .collect()
}

fn apply(bytes: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    for m in mutations {
        let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        let ids = with_ids(&lines);
        match *m {
            Mutation::Flip(p, b) if !bytes.is_empty() => {
                let i = at(p, bytes.len());
                bytes[i] = b;
                continue;
            }
            Mutation::Truncate(p) => {
                bytes.truncate(at(p, bytes.len()));
                continue;
            }
            Mutation::Shuffle(seed) => {
                // A small deterministic Fisher-Yates (xorshift), so a failing case replays.
                let mut s = seed | 1;
                for i in (1..lines.len()).rev() {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    lines.swap(i, (s % (i as u64 + 1)) as usize);
                }
            }
            Mutation::Duplicate(p) if !lines.is_empty() => {
                let i = at(p, lines.len());
                let copy = lines[i].clone();
                lines.insert(i, copy);
            }
            Mutation::Collide(a, b) if ids.len() >= 2 => {
                let (i, j) = (ids[at(a, ids.len())], ids[at(b, ids.len())]);
                let id = get(&lines[j], "id").expect("has an id");
                set(&mut lines[i], "id", &id);
            }
            Mutation::SelfParent(p) if !ids.is_empty() => {
                let i = ids[at(p, ids.len())];
                let id = get(&lines[i], "id").expect("has an id");
                set(&mut lines[i], "parentId", &id);
            }
            Mutation::Cycle(p, n) if ids.len() >= n => {
                let first = at(p, ids.len() - n + 1);
                let members = &ids[first..first + n];
                for k in 0..n {
                    let next = get(&lines[members[(k + 1) % n]], "id").expect("has an id");
                    set(&mut lines[members[k]], "parentId", &next);
                }
            }
            _ => continue,
        }
        bytes = lines.join(&b'\n');
    }
    bytes
}

/// Run every stage on `bytes` in a worker thread; fail when it panics or takes too long.
fn analyze_bounded(bytes: Vec<u8>) -> Result<FileAnalysis, String> {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            let started = Instant::now();
            let a = analyze_bytes(&bytes, &mut Scratch::default());
            let _ = tx.send((a, started.elapsed()));
        })
        .expect("spawn");
    match rx.recv_timeout(CASE_LIMIT) {
        Ok((a, _)) => {
            worker.join().map_err(|_| "panicked after sending".to_string())?;
            Ok(a)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the analysis panicked".into()),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("no result after {CASE_LIMIT:?}: a hang")),
    }
}

/// The figures of a session that depend on its own file only: everything except the
/// cross-session keys (`own` counts calls an earlier session may hold, `parentInCorpus`
/// names another file) and the absolute path.
fn own_figures(mut m: Map<String, Value>) -> Map<String, Value> {
    m.remove("own");
    m.remove("parentInCorpus");
    // The absolute path differs between the two temporary folders; `file` stays.
    m.remove("path");
    m
}

/// The untouched neighbours: two sample sessions, written beside each mutant.
fn neighbours() -> &'static Vec<(String, Vec<u8>)> {
    static N: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    N.get_or_init(|| {
        let files = sample_files();
        let pick = |needle: &str| {
            let p = files
                .iter()
                .find(|p| p.to_string_lossy().contains(needle))
                .unwrap_or_else(|| panic!("sample {needle}"));
            (
                format!("good/{}", p.file_name().unwrap().to_string_lossy()),
                std::fs::read(p).expect("read"),
            )
        };
        vec![pick("019d3298-af82"), pick("4f132c16-8467")]
    })
}

/// The `sessions --json` objects of a folder, by path, through the library (no process).
fn scan_sessions(dir: &Path) -> std::collections::BTreeMap<String, Map<String, Value>> {
    let c = corpus::scan(&[dir.to_path_buf()], &Quiet, None).expect("the scan runs");
    let mut out = Vec::new();
    pisa::report::sessions_document(&mut out, &c, None).expect("render");
    let doc: Value = serde_json::from_slice(&out).expect("sessions --json is JSON");
    doc["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| {
            (
                s["path"].as_str().expect("path").to_string(),
                s.as_object().expect("object").clone(),
            )
        })
        .collect()
}

/// Each neighbour's figures when it is scanned alone.
fn neighbours_alone() -> &'static Vec<Map<String, Value>> {
    static A: OnceLock<Vec<Map<String, Value>>> = OnceLock::new();
    A.get_or_init(|| {
        neighbours()
            .iter()
            .map(|(rel, bytes)| {
                let dir = tempfile::tempdir().expect("temp dir");
                write(dir.path(), rel, bytes);
                let sessions = scan_sessions(dir.path());
                assert_eq!(sessions.len(), 1, "{rel} is a session");
                own_figures(sessions.into_values().next().expect("one session"))
            })
            .collect()
    })
}

/// Cases per property: `default`, or `$PISA_HOSTILE_CASES` for a longer run by hand or in CI.
fn cases(default: u32) -> u32 {
    std::env::var("PISA_HOSTILE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, bytes).expect("write");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(96), failure_persistence: None, ..ProptestConfig::default() })]

    /// Mutants of real files (byte flips, cuts, shuffles, duplicates, id collisions, parent
    /// loops) go through every stage without a panic, in bounded time, and with sane counts.
    #[test]
    fn mutants_of_real_files_never_panic_or_hang(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..5),
    ) {
        let (name, bytes) = &seeds()[seed.index(seeds().len())];
        let mutant = apply(bytes, &mutations);
        let a = analyze_bounded(mutant.clone()).map_err(|e| TestCaseError::fail(format!("{name} {mutations:?}: {e}")))?;
        match a {
            FileAnalysis::Session(s) => {
                prop_assert!(s.active_path_length <= s.tree.entries.len() as u64);
                prop_assert!(s.context_entry_count <= s.tree.entries.len() as u64 + 1);
                prop_assert!(s.stats.lines <= mutant.len() as u64 + 1);
            }
            FileAnalysis::Rejected { reason, .. } => prop_assert!(!reason.message().is_empty()),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(24), failure_persistence: None, ..ProptestConfig::default() })]

    /// A mutated file beside untouched sessions changes none of their own figures.
    #[test]
    fn damage_in_one_file_leaves_the_others_unchanged(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let (_, bytes) = &seeds()[seed.index(seeds().len())];
        let dir = tempfile::tempdir().expect("temp dir");
        for (rel, good) in neighbours() {
            write(dir.path(), rel, good);
        }
        write(dir.path(), "bad/mutant.jsonl", &apply(bytes, &mutations));
        let mut sessions = scan_sessions(dir.path());
        for ((rel, _), alone) in neighbours().iter().zip(neighbours_alone()) {
            let s = sessions.remove(rel);
            prop_assert!(s.is_some(), "{} vanished beside a mutant ({:?})", rel, mutations);
            prop_assert_eq!(&own_figures(s.unwrap()), alone, "{} changed beside a mutant", rel);
        }
    }
}

/// A mutant made with [`apply`] really holds what it says: a self-parented leaf is a loop.
#[test]
fn the_mutator_makes_parent_loops() {
    let (_, bytes) = neighbours()[0].clone();
    let lines = bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
    let mutant = apply(&bytes, &[Mutation::Cycle(1.0, 3)]);
    let FileAnalysis::Session(s) = analyze_bounded(mutant).expect("no hang") else {
        panic!("still a session")
    };
    assert!(
        s.cyclic_path,
        "a 3-cycle at the leaf ({lines} lines) is cut and reported"
    );
}

// ---- Hostile content -------------------------------------------------------------------

const USAGE: &str = r#"{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.01}}"#;
const TEXT: &str = r#"[{"type":"text","text":"hi"}]"#;
/// A context edit after the last answer: Pi then estimates chars/4 over every message.
const EDIT: &str = r#"{"type":"context_edit","id":"e","parentId":"a","targetId":"zz","replacement":null}"#;

fn header(n: &str) -> String {
    format!(r#"{{"type":"session","version":3,"id":"h-{n}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}}"#)
}

fn user(id: &str, parent: &str) -> String {
    format!(
        r#"{{"type":"message","id":{id},"parentId":{parent},"timestamp":"2026-01-01T00:00:00.500Z","message":{{"role":"user","content":"hello","timestamp":1767225600500}}}}"#
    )
}

fn answer(id: &str, parent: &str, content: &str, usage: &str) -> String {
    format!(
        r#"{{"type":"message","id":{id},"parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"assistant","content":{content},"provider":"p","model":"m","usage":{usage},"stopReason":"stop","timestamp":1767225601000}}}}"#
    )
}

fn usage(fields: [&str; 6]) -> String {
    let [i, o, cr, cw, total, cost] = fields;
    format!(
        r#"{{"input":{i},"output":{o},"cacheRead":{cr},"cacheWrite":{cw},"totalTokens":{total},"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":{cost}}}}}"#
    )
}

fn arrays(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

fn objects(depth: usize) -> String {
    r#"{"a":"#.repeat(depth) + "1" + &"}".repeat(depth)
}

fn session(lines: &[String]) -> Vec<u8> {
    (lines.join("\n") + "\n").into_bytes()
}

/// Hostile files on which Pi's own code runs to the end (or throws cleanly): pisa's figures
/// must equal the oracle's, file by file.
fn oracle_agrees_on() -> Vec<(&'static str, Vec<u8>)> {
    const DEEP: usize = 10_000;
    let u = || user(r#""u""#, "null");
    let plain = |parent: &str| answer(r#""a""#, parent, TEXT, USAGE);
    vec![
        // Nesting 10,000 deep wherever Pi only carries the value along.
        (
            "deep-text-block.jsonl",
            session(&[
                header("1"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    &format!(r#"[{{"type":"text","text":"x","extra":{}}}]"#, arrays(DEEP)),
                    USAGE,
                ),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "deep-tool-arguments.jsonl",
            session(&[
                header("2"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    &format!(
                        r#"[{{"type":"toolCall","id":"t","name":"bash","arguments":{{"x":{}}}}}]"#,
                        objects(DEEP)
                    ),
                    USAGE,
                ),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "deep-unknown-field.jsonl",
            session(&[
                header("3"),
                u(),
                format!(r#"{{"type":"custom","id":"c","parentId":"u","zzz":{}}}"#, arrays(DEEP)),
                plain(r#""c""#),
            ]),
        ),
        (
            "deep-ids.jsonl",
            session(&[
                header("4"),
                user(&arrays(DEEP), "null"),
                answer(r#""a""#, &objects(DEEP), TEXT, USAGE),
            ]),
        ),
        (
            "deep-tool-result.jsonl",
            session(&[
                header("5"),
                u(),
                format!(
                    r#"{{"type":"message","id":"t","parentId":"u","message":{{"role":"toolResult","toolCallId":"x","content":{},"usage":{USAGE}}}}}"#,
                    arrays(DEEP)
                ),
                plain(r#""t""#),
            ]),
        ),
        (
            "deep-header-field.jsonl",
            session(&[
                format!(
                    r#"{{"type":"session","version":3,"id":"h-6","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p","x":{}}}"#,
                    arrays(DEEP)
                ),
                u(),
                plain(r#""u""#),
            ]),
        ),
        (
            "deep-lines.jsonl",
            session(&[header("7"), arrays(DEEP), objects(DEEP), u()]),
        ),
        (
            "deep-timestamps.jsonl",
            session(&[
                header("8"),
                format!(
                    r#"{{"type":"message","id":"u","parentId":null,"timestamp":{},"message":{{"role":"user","content":"x","timestamp":{}}}}}"#,
                    arrays(DEEP),
                    arrays(DEEP)
                ),
            ]),
        ),
        (
            "deep-custom-message.jsonl",
            session(&[
                header("9"),
                u(),
                format!(
                    r#"{{"type":"custom_message","id":"cm","parentId":"u","customType":"x","content":{},"display":true,"details":{}}}"#,
                    arrays(DEEP),
                    arrays(DEEP)
                ),
                plain(r#""cm""#),
            ]),
        ),
        (
            "deep-session-name.jsonl",
            session(&[
                header("10"),
                u(),
                plain(r#""u""#),
                format!(
                    r#"{{"type":"session_info","id":"n","parentId":"a","name":{}}}"#,
                    arrays(DEEP)
                ),
            ]),
        ),
        // JSON.stringify in the chars/4 estimate: fine at 3,000 levels.
        (
            "deep-arguments-estimated.jsonl",
            session(&[
                header("11"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    &format!(
                        r#"[{{"type":"toolCall","id":"t","name":"bash","arguments":{{"x":{}}}}}]"#,
                        arrays(3000)
                    ),
                    USAGE,
                ),
                EDIT.to_string(),
            ]),
        ),
        // Numbers beyond 2^64, negative, fractional, 1e400 (Infinity), denormals, long literals.
        (
            "numbers-beyond-u64.jsonl",
            session(&[
                header("12"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    TEXT,
                    &usage([
                        "123456789012345678901234567890",
                        "18446744073709551616",
                        "18446744073709551615",
                        "9007199254740993",
                        "1e308",
                        "1e400",
                    ]),
                ),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "numbers-negative-fractional.jsonl",
            session(&[
                header("13"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    TEXT,
                    &usage(["-5", "2.5", "-0.0", "1e-320", "0", "-0.25"]),
                ),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "numbers-nan-infinity-strings.jsonl",
            session(&[
                header("14"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    TEXT,
                    &usage([
                        r#""NaN""#,
                        r#""Infinity""#,
                        r#""-Infinity""#,
                        r#""1e400""#,
                        r#""Infinity""#,
                        r#""NaN""#,
                    ]),
                ),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "numbers-1e400.jsonl",
            session(&[
                header("15"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    TEXT,
                    &usage(["1e400", "-1e400", "1E+400", "0e400", "1e400", "1e400"]),
                ),
                user(r#""u2""#, r#""a""#),
                answer(r#""b""#, r#""u2""#, TEXT, USAGE),
            ]),
        ),
        (
            "numbers-infinite-total-tokens.jsonl",
            session(&[
                header("16"),
                u(),
                answer(r#""a""#, r#""u""#, TEXT, &usage(["1", "2", "3", "4", "1e400", "0.5"])),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "numbers-negative-total-tokens.jsonl",
            session(&[
                header("17"),
                u(),
                answer(r#""a""#, r#""u""#, TEXT, &usage(["1", "2", "3", "4", "-100", "0.5"])),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "numbers-tiny.jsonl",
            session(&[
                header("18"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    TEXT,
                    &usage([
                        "4.9e-324",
                        "1e-400",
                        "-1e-400",
                        "2.2250738585072014e-308",
                        "0",
                        "5e-324",
                    ]),
                ),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        (
            "numbers-long-literals.jsonl",
            session(&[
                header("19"),
                u(),
                answer(
                    r#""a""#,
                    r#""u""#,
                    TEXT,
                    &usage([
                        &format!("1{}", "0".repeat(400)),
                        &format!("0.{}1", "0".repeat(500)),
                        &format!("1{}.5", "0".repeat(308)),
                        &"9".repeat(20),
                        "0",
                        "0.1000000000000000055511151231257827021181583404541015625",
                    ]),
                ),
                user(r#""u2""#, r#""a""#),
            ]),
        ),
        // Ids that are not strings, or empty (Map keys compare by SameValueZero).
        (
            "ids-numbers.jsonl",
            session(&[
                header("20"),
                user("1", "null"),
                answer("2", "1", TEXT, USAGE),
                user(r#""2""#, "2"),
                answer("3.0", r#""2""#, TEXT, USAGE),
                user("-0", "3"),
                answer("0", "-0", TEXT, USAGE),
            ]),
        ),
        (
            "ids-objects.jsonl",
            session(&[
                header("21"),
                user("{}", "null"),
                answer("{}", "{}", TEXT, USAGE),
                user("[1]", "{}"),
                answer(r#""x""#, "[1]", TEXT, USAGE),
            ]),
        ),
        (
            "ids-null-and-booleans.jsonl",
            session(&[
                header("22"),
                user("null", "null"),
                answer(r#""a""#, "null", TEXT, USAGE),
                user("true", r#""a""#),
                answer("false", "true", TEXT, USAGE),
                user(r#""z""#, "false"),
            ]),
        ),
        (
            "ids-missing.jsonl",
            session(&[
                header("23"),
                r#"{"type":"message","parentId":null,"message":{"role":"user","content":"x"}}"#.into(),
                r#"{"type":"message","message":{"role":"user","content":"x"}}"#.into(),
            ]),
        ),
        (
            "ids-infinite.jsonl",
            session(&[
                header("24"),
                user("1e400", "null"),
                answer(r#""a""#, "1e400", TEXT, USAGE),
                user(r#""b""#, r#""a""#),
                answer("-1e400", r#""b""#, TEXT, USAGE),
            ]),
        ),
        (
            "ids-empty-header-id.jsonl",
            session(&[
                r#"{"type":"session","version":3,"id":"","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#.into(),
                u(),
                plain(r#""u""#),
            ]),
        ),
        (
            "ids-number-header-id.jsonl",
            session(&[
                r#"{"type":"session","version":3,"id":5,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#.into(),
                u(),
            ]),
        ),
        // A leaf that is its own parent, with a falsy id: Pi's walk stops at once.
        (
            "ids-zero-self-parent.jsonl",
            session(&[header("25"), u(), answer("0", "0", TEXT, USAGE)]),
        ),
        // Many entries with the same parent, with and without distinct ids.
        (
            "same-parent.jsonl",
            session(
                &std::iter::once(header("26"))
                    .chain(std::iter::once(user(r#""r""#, "null")))
                    .chain((0..20_000).map(|i| answer(&format!(r#""c{i}""#), r#""r""#, TEXT, USAGE)))
                    .collect::<Vec<_>>(),
            ),
        ),
        (
            "same-parent-same-id.jsonl",
            session(
                &std::iter::once(header("27"))
                    .chain(std::iter::once(user(r#""r""#, "null")))
                    .chain((0..20_000).map(|_| answer(r#""c""#, r#""r""#, TEXT, USAGE)))
                    .collect::<Vec<_>>(),
            ),
        ),
    ]
}

fn write_all(files: &[(&str, Vec<u8>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, bytes) in files {
        write(dir.path(), name, bytes);
    }
    dir
}

#[test]
fn hostile_content_agrees_with_the_oracle() {
    let files = oracle_agrees_on();
    let dir = write_all(&files);
    let a = agreement(dir.path());
    assert_eq!(a.compared, files.len(), "the oracle reports every file");
    assert!(
        a.failures.is_empty(),
        "pisa disagrees with the oracle on {} file(s):\n{}",
        a.failures.len(),
        a.failures.join("\n")
    );
}

/// Hostile files the oracle cannot run to the end: Pi's walks never return on a parent
/// loop (`getBranch`) or on a loop in its children graph (`getTree`, here made of empty
/// ids), and the oracle cannot print a record holding a value nested 10,000 deep.
fn oracle_cannot_run() -> Vec<(&'static str, Vec<u8>)> {
    let u = || user(r#""u""#, "null");
    let plain = |parent: &str| answer(r#""a""#, parent, TEXT, USAGE);
    let chain = |n: usize| -> Vec<String> {
        let mut lines = vec![header("c3")];
        lines.extend((0..n).map(|i| answer(&format!(r#""l{i}""#), &format!(r#""l{}""#, (i + 1) % n), TEXT, USAGE)));
        lines
    };
    vec![
        ("cycle-self-parent.jsonl", session(&[header("c1"), u(), answer(r#""a""#, r#""a""#, TEXT, USAGE)])),
        ("cycle-of-two.jsonl", session(&[header("c2"), user(r#""u""#, r#""a""#), plain(r#""u""#)])),
        ("cycle-of-fifty.jsonl", session(&chain(50))),
        (
            "cycle-above-a-compaction.jsonl",
            session(&[
                header("c4"),
                user(r#""u""#, r#""c""#),
                plain(r#""u""#),
                r#"{"type":"compaction","id":"c","parentId":"a","summary":"s","firstKeptEntryId":"u","tokensBefore":9}"#.into(),
                user(r#""v""#, "null"),
            ]),
        ),
        (
            "tree-loop-through-empty-ids.jsonl",
            session(&[header("c5"), user(r#""""#, "null"), plain(r#""""#), user(r#""""#, r#""a""#), answer(r#""b""#, r#""""#, TEXT, USAGE)]),
        ),
        (
            "deep-model-change.jsonl",
            session(&[header("c6"), u(), format!(r#"{{"type":"model_change","id":"m","parentId":"u","provider":{},"modelId":{}}}"#, arrays(10_000), objects(10_000))]),
        ),
        (
            "deep-compaction-fields.jsonl",
            session(&[
                header("c7"),
                u(),
                plain(r#""u""#),
                format!(r#"{{"type":"compaction","id":"c","parentId":"a","summary":{},"firstKeptEntryId":"a","tokensBefore":{}}}"#, arrays(10_000), arrays(10_000)),
            ]),
        ),
    ]
}

/// Every session of the bundled sample, keyed by its path.
fn sample_sessions(doc: &Value) -> std::collections::BTreeMap<String, Value> {
    doc["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .filter(|s| !s["path"].as_str().unwrap_or("").starts_with("hostile/"))
        .map(|s| (s["path"].as_str().expect("path").to_string(), s.clone()))
        .collect()
}

/// pisa reports each such file with a reason, and the sessions beside them (the bundled
/// sample) keep every figure they have when scanned alone, cross-session ones included.
#[test]
fn files_pi_cannot_finish_are_reported_and_leave_the_others_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    copy_tree(&repo().join("datasets").join("sample"), dir.path());
    let alone = sample_sessions(&pisa_json(dir.path()));
    let mut hostile = oracle_cannot_run();
    hostile.extend(oracle_agrees_on());
    for (name, bytes) in &hostile {
        write(dir.path(), &format!("hostile/{name}"), bytes);
    }
    let doc = pisa_json(dir.path());
    assert_eq!(
        sample_sessions(&doc),
        alone,
        "a sample session changed beside hostile files"
    );
    let reported: Vec<&Value> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .chain(doc["rejected"].as_array().unwrap())
        .filter(|s| s["path"].as_str().unwrap_or("").starts_with("hostile/"))
        .collect();
    assert_eq!(reported.len(), hostile.len(), "every hostile file is reported");
    for name in [
        "cycle-self-parent",
        "cycle-of-two",
        "cycle-of-fifty",
        "cycle-above-a-compaction",
    ] {
        let s = reported
            .iter()
            .find(|s| s["path"] == format!("hostile/{name}.jsonl"))
            .expect("reported");
        let cut = s["damage"]["cyclicPath"] == true || s["compactionEffects"][0]["estimatedTokensAfter"].is_null();
        assert!(cut, "{name}: the parent loop is reported: {}", s["damage"]);
    }
    let (code, _, err) = crate::support::pisa(&["sessions", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2, "damaged files give exit code 2");
    assert!(
        err.lines()
            .any(|l| l.contains("cycle-of-two.jsonl") && l.contains("parent loop")),
        "a one-line reason on stderr: {err}"
    );
    assert!(!err.contains("panicked"), "no panic reaches the user: {err}");
}

/// Regression: a usage field holding an array nested deeper than 64 levels printed pisa's
/// placeholder for deep copies ("[nested too deeply]") into Pi's string sums, where
/// JavaScript's `0 + [[[7]]]` gives "07"; and from about 3,150 levels (`Array#join`) or
/// 4,100 (`JSON.stringify` in the estimate) Pi's code throws a RangeError, which pisa did
/// not report.
#[test]
fn deep_arrays_in_usage_and_estimate_agree_with_the_oracle() {
    let u = || user(r#""u""#, "null");
    let deep_usage = |depth: usize, leaf: &str| {
        let field = "[".repeat(depth) + leaf + &"]".repeat(depth);
        format!(r#"{{"input":{field},"output":1,"cacheRead":0,"cacheWrite":0,"cost":{{"total":1}}}}"#)
    };
    let deep_args = |depth: usize| {
        format!(
            r#"[{{"type":"toolCall","id":"t","name":"bash","arguments":{{"x":{}}}}}]"#,
            arrays(depth)
        )
    };
    let tools = |depth: usize| {
        format!(
            r#"{{"type":"message","id":"s","parentId":"u","message":{{"role":"system","content":[{{"type":"text","text":"x"}}],"toolsAdded":{}}}}}"#,
            arrays(depth)
        )
    };
    let mut files = Vec::new();
    for depth in [65, 100, 3000, 5000] {
        for (leaf, kind) in [("", "empty"), ("7", "seven"), (r#"1,null,{"a":[2]},"s",true"#, "mixed")] {
            let name: &'static str = format!("usage-{kind}-{depth}.jsonl").leak();
            files.push((
                name,
                session(&[
                    header(name),
                    u(),
                    answer(r#""a""#, r#""u""#, TEXT, &deep_usage(depth, leaf)),
                ]),
            ));
        }
    }
    for depth in [3000, 5000] {
        let name: &'static str = format!("arguments-{depth}.jsonl").leak();
        files.push((
            name,
            session(&[
                header(name),
                u(),
                answer(r#""a""#, r#""u""#, &deep_args(depth), USAGE),
                EDIT.into(),
            ]),
        ));
        let name: &'static str = format!("tools-added-{depth}.jsonl").leak();
        files.push((
            name,
            session(&[
                header(name),
                u(),
                tools(depth),
                answer(r#""a""#, r#""s""#, TEXT, USAGE),
                EDIT.into(),
            ]),
        ));
    }
    let dir = write_all(&files);
    let a = agreement(dir.path());
    assert_eq!(a.compared, files.len(), "the oracle reports every file");
    assert!(
        a.failures.is_empty(),
        "pisa disagrees with the oracle on {} file(s):\n{}",
        a.failures.len(),
        a.failures.join("\n")
    );
}

/// Peak resident memory of a running child, polled from `/proc` until it exits (Linux).
fn run_measured(cmd: &mut std::process::Command) -> (std::process::Output, Duration, Option<u64>) {
    let started = Instant::now();
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let status_file = format!("/proc/{}/status", child.id());
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).expect("read stdout"));
    let mut peak_kb = None;
    while child.try_wait().expect("wait").is_none() {
        if let Ok(status) = std::fs::read_to_string(&status_file)
            && let Some(kb) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kb = Some(peak_kb.unwrap_or(0).max(kb));
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "pisa hangs on a huge line"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = started.elapsed();
    let stdout = reader.join().expect("reader");
    let out = child.wait_with_output().expect("output");
    (
        std::process::Output {
            stdout: stdout.into_bytes(),
            ..out
        },
        elapsed,
        peak_kb.map(|kb| kb * 1024),
    )
}

/// A tool result of 110 MB on one line, counted by the chars/4 estimate: the figures equal
/// the oracle's, in bounded time and memory (measured: about 2.5 times the line).
#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "reads the peak memory from Linux's /proc")]
fn a_line_of_110_mb_agrees_with_the_oracle_in_bounded_memory() {
    let big = "x".repeat(110 << 20);
    let tool_result = format!(
        r#"{{"type":"message","id":"t","parentId":"a","message":{{"role":"toolResult","toolCallId":"t","toolName":"bash","content":[{{"type":"text","text":"{big}"}}],"isError":false}}}}"#
    );
    drop(big);
    let call = r#"[{"type":"toolCall","id":"t","name":"bash","arguments":{"c":"ls"}}]"#;
    let edit = r#"{"type":"context_edit","id":"e","parentId":"t","targetId":"zz","replacement":null}"#;
    let bytes = session(&[
        header("huge"),
        user(r#""u""#, "null"),
        answer(r#""a""#, r#""u""#, call, USAGE),
        tool_result,
        edit.into(),
    ]);
    let size = bytes.len() as u64;
    let dir = write_all(&[("huge-line.jsonl", bytes)]);
    let bin = std::env::var_os("CARGO_BIN_EXE_pisa").expect("the pisa binary");
    let (out, elapsed, peak) = run_measured(
        std::process::Command::new(bin)
            .env("PISA_NO_CACHE", "1")
            .args(["sessions", "--json", "--quiet"])
            .arg(dir.path()),
    );
    assert!(
        out.status.success(),
        "pisa failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("a {size}-byte line: {elapsed:?}, peak RSS {peak:?} bytes");
    let peak = peak.expect("the peak from /proc/PID/status");
    assert!(peak < 4 * size, "peak RSS {peak} for a {size}-byte file");
    let a = agreement(dir.path());
    assert_eq!(a.compared, 1);
    assert!(a.failures.is_empty(), "{}", a.failures.join("\n"));
}

/// Regression: the length of a text block whose `text` is an array (`contentText` joins it)
/// was given up past 32 levels, so a system message nested 40 deep made pisa report that Pi
/// throws, where Pi counts it (and throws only past `Array#join`'s stack, about 3,150 levels).
#[test]
fn system_text_arrays_deeper_than_32_agree_with_the_oracle() {
    let mut files = Vec::new();
    for depth in [10, 40, 3000, 5000] {
        let text = "[".repeat(depth) + r#""abc",1"# + &"]".repeat(depth);
        let system = format!(
            r#"{{"type":"message","id":"s","parentId":"u","message":{{"role":"system","content":[{{"type":"text","text":{text}}}],"timestamp":1}}}}"#
        );
        let name: &'static str = format!("system-text-{depth}.jsonl").leak();
        files.push((
            name,
            session(&[
                header(name),
                user(r#""u""#, "null"),
                system,
                answer(r#""a""#, r#""s""#, TEXT, USAGE),
                EDIT.into(),
            ]),
        ));
    }
    let dir = write_all(&files);
    let a = agreement(dir.path());
    assert_eq!(a.compared, files.len());
    assert!(a.failures.is_empty(), "{}", a.failures.join("\n"));
}

/// Regression: pisa copies values only 64 levels deep and put a placeholder string below;
/// a `provider`, `model` or `kind` that is an array nested deeper then gave the grouping key
/// "[nested too deeply]/[nested too deeply]" where Pi's `${provider}/${model}` gives "p/p".
/// (Values nested past 64 levels are still echoed shortened, e.g. in `model`.)
#[test]
fn grouping_keys_from_arrays_nested_past_64_levels_agree_with_the_oracle() {
    let mut files = Vec::new();
    for depth in [70, 200] {
        let arr = "[".repeat(depth) + r#""p",[1,null]"# + &"]".repeat(depth);
        let warm = format!(
            r#"{{"type":"usage","id":"w","parentId":"u","kind":{arr},"provider":{arr},"model":{arr},"usage":{{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{{"total":1}}}}}}"#
        );
        let asked = format!(
            r#"{{"type":"message","id":"a","parentId":"w","timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"assistant","content":[],"provider":{arr},"model":"m","responseModel":{arr},"usage":{USAGE},"stopReason":"stop"}}}}"#
        );
        let back = r#"{"type":"model_change","id":"m","parentId":"a","provider":"p","modelId":"m"}"#;
        let name: &'static str = format!("deep-keys-{depth}.jsonl").leak();
        files.push((
            name,
            session(&[header(name), user(r#""u""#, "null"), warm, asked, back.into()]),
        ));
    }
    let dir = write_all(&files);
    let a = agreement(dir.path());
    assert_eq!(a.compared, files.len());
    assert!(a.failures.is_empty(), "{}", a.failures.join("\n"));
}

/// Regression: a rejection reason quotes the type of the file's first entry, and it reached
/// stderr as written: a newline split the one-line reason and an escape sequence reached the
/// terminal (`{"type":"x\ny\u001b[31mRED"}`). Not a session (no entry of Pi's types): listed
/// with `--verbose`, exit code 0.
#[test]
fn rejection_reasons_quoting_the_file_stay_one_safe_line() {
    let evil = r#"{"type":"x\ny\u001b[31mRED\u001b]0;title\u0007","id":"s"}"#.to_string() + "\n";
    let dir = write_all(&[
        ("evil.jsonl", evil.into_bytes()),
        ("good.jsonl", session(&[header("g"), user(r#""u""#, "null")])),
    ]);
    let (code, _, err) = crate::support::pisa(&["sessions", "--verbose", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("evil.jsonl")).collect();
    assert_eq!(lines.len(), 1, "one line per rejected file: {err:?}");
    assert!(
        lines[0].contains("not a session") && lines[0].contains("RED"),
        "{err:?}"
    );
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{7}'),
        "no escape sequence reaches the terminal: {err:?}"
    );
    let file = dir.path().join("evil.jsonl");
    let (code, out, _) = crate::support::pisa(&["inspect", file.to_str().unwrap()]);
    assert_eq!(code, 2, "nothing to inspect");
    assert!(out.contains("not a Pi session"), "{out:?}");
    assert!(
        !out.contains('\u{1b}') && out.trim_end().lines().count() == 1,
        "inspect says it on one safe line: {out:?}"
    );
}
