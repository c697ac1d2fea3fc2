//! Robustness of the scan: files that change while pisa reads them, things in the tree that
//! are not session files (FIFOs, devices, loops, broken links, names that are not UTF-8,
//! files that cannot be read), escape sequences in file-derived text, and panics that never
//! reach the user as Rust panic text.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{copy_tree, repo};

/// What a pisa run left behind.
struct Run {
    code: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

impl Run {
    fn out(&self) -> &str {
        std::str::from_utf8(&self.stdout).expect("stdout is UTF-8")
    }

    fn err(&self) -> &str {
        std::str::from_utf8(&self.stderr).expect("stderr is UTF-8")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "pisa printed invalid JSON ({e}), exit {}: {}\nstderr: {}",
                self.code,
                String::from_utf8_lossy(&self.stdout),
                String::from_utf8_lossy(&self.stderr)
            )
        })
    }

    /// No Rust panic text reached the user.
    fn assert_no_panic_text(&self) {
        let err = String::from_utf8_lossy(&self.stderr);
        for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
            assert!(!err.contains(bad), "panic text on stderr: {err}");
        }
        assert_ne!(self.code, 101, "pisa died of a panic: {err}");
    }
}

/// Run pisa (cache off unless `env` sets a cache folder) and kill it when it takes longer than
/// `limit`: a hang fails the test instead of blocking the suite.
fn pisa_within(args: &[&OsStr], env: &[(&str, &OsStr)], limit: Duration) -> Run {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("pisa"));
    if !env.iter().any(|(k, _)| *k == "PISA_CACHE_DIR") {
        cmd.env("PISA_NO_CACHE", "1");
    }
    cmd.env_remove("PISA_DEBUG_PANIC_ON");
    cmd.env_remove("PISA_DEBUG_TRUNCATE_MAPPED");
    cmd.env_remove("PISA_DEBUG_PANIC_MAPPED");
    cmd.env_remove("PISA_READ_MODE");
    cmd.envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run pisa");
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            r.read_to_end(&mut bytes).map(|_| bytes)
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for pisa") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("pisa {args:?} hung: killed after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().expect("stdout reader").expect("read stdout"),
        stderr: stderr.join().expect("stderr reader").expect("read stderr"),
    }
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

fn mkfifo(path: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in the path");
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o644) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A small, deterministic pseudo-random sequence (xorshift64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Every object of a `sessions --json` document's `sessions` and `rejected`, by path.
fn by_path(doc: &Value) -> std::collections::BTreeMap<String, Value> {
    let mut out = std::collections::BTreeMap::new();
    for item in doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .chain(doc["rejected"].as_array().unwrap())
    {
        let path = item["path"].as_str().expect("a path").to_string();
        let dup = out.insert(path.clone(), item.clone());
        assert!(dup.is_none(), "{path} reported twice");
    }
    out
}

/// A session object without the keys that depend on the other files of the scan.
fn own_part(session: &Value) -> Value {
    let mut s = session.clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("own");
        m.remove("parentInCorpus");
    }
    s
}

/// The file the writer works on, with what it knows of its existence.
struct Churned {
    path: PathBuf,
    rel: String,
    original: Vec<u8>,
    /// Counted up before each removal: a file whose count and presence did not change over a
    /// run existed for all of it.
    removals: AtomicU64,
    present: AtomicBool,
}

/// What the writer did.
#[derive(Debug, Default)]
struct Writes {
    appends: u64,
    truncations: u64,
    rewrites: u64,
    renames: u64,
    removals: u64,
    fifo_swaps: u64,
    restores: u64,
    hot_appends: u64,
}

/// Change files under `churn` and append to `hot` until `stop`: appends of whole lines,
/// truncations (mid-line too), rewrites in place with another session's bytes (a migration),
/// atomic replacements by rename, removals, FIFOs renamed into a file's place, restores.
fn writer(churn: &[Churned], hot: &Path, hot_reset: u64, stop: &AtomicBool) -> Writes {
    use std::io::Write;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut w = Writes::default();
    let hot_line: Vec<u8> = {
        let bytes = std::fs::read(hot).expect("read the hot file");
        let second = bytes.split(|&b| b == b'\n').nth(1).expect("a second line").to_vec();
        [second.as_slice(), b"\n"].concat()
    };
    let mut hot_file = std::fs::OpenOptions::new()
        .append(true)
        .open(hot)
        .expect("open the hot file");
    while !stop.load(Ordering::Relaxed) {
        // The hot file is appended to all the time, as a live session is, and cut back to its
        // first size now and then so the test stays quick.
        hot_file.write_all(&hot_line).expect("append to the hot file");
        w.hot_appends += 1;
        if hot_file.metadata().is_ok_and(|m| m.len() > 2 * hot_reset) {
            hot_file.set_len(hot_reset).expect("cut the hot file back");
        }
        let c = &churn[rng.below(churn.len() as u64) as usize];
        let other = &churn[rng.below(churn.len() as u64) as usize].original;
        let present = c.present.load(Ordering::SeqCst);
        match (rng.below(8), present) {
            (0 | 1, true) => {
                let lines: Vec<&[u8]> = c.original.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
                if let Some(line) = lines.get(rng.below(lines.len() as u64) as usize) {
                    let mut f = std::fs::OpenOptions::new().append(true).open(&c.path).expect("append");
                    f.write_all(&[line, &b"\n"[..]].concat()).expect("append a line");
                    w.appends += 1;
                }
            }
            (2, true) => {
                let len = std::fs::metadata(&c.path).map_or(0, |m| m.len());
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&c.path)
                    .expect("open to truncate");
                f.set_len(rng.below(len + 1)).expect("truncate");
                w.truncations += 1;
            }
            (3, true) => {
                std::fs::write(&c.path, other).expect("rewrite in place");
                w.rewrites += 1;
            }
            (4, true) => {
                let tmp = c.path.with_extension("tmp");
                std::fs::write(&tmp, other).expect("write the replacement");
                std::fs::rename(&tmp, &c.path).expect("rename over");
                w.renames += 1;
            }
            (5, true) => {
                c.removals.fetch_add(1, Ordering::SeqCst);
                c.present.store(false, Ordering::SeqCst);
                std::fs::remove_file(&c.path).expect("remove");
                w.removals += 1;
            }
            (6, true) => {
                // A FIFO takes the file's place between discovery and open; then the file is back.
                let fifo = c.path.with_extension("fifo");
                mkfifo(&fifo).expect("mkfifo");
                c.removals.fetch_add(1, Ordering::SeqCst);
                c.present.store(false, Ordering::SeqCst);
                std::fs::rename(&fifo, &c.path).expect("rename the FIFO over");
                std::thread::sleep(Duration::from_millis(2));
                std::fs::write(c.path.with_extension("tmp"), &c.original).expect("write the original");
                std::fs::rename(c.path.with_extension("tmp"), &c.path).expect("put the file back");
                c.present.store(true, Ordering::SeqCst);
                w.fifo_swaps += 1;
            }
            (_, false) => {
                std::fs::write(&c.path, &c.original).expect("restore");
                c.present.store(true, Ordering::SeqCst);
                w.restores += 1;
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_micros(300));
    }
    w
}

/// While a writer appends to, truncates, rewrites, replaces, removes and swaps FIFOs into the
/// files of a directory, `pisa sessions --json` over it (with and without the cache) never
/// crashes or hangs, prints valid JSON, reports each file once, reports a file that existed
/// for the whole run (read, changed or unreadable, with a reason on stderr), and the files the
/// writer never touches keep their figures exactly.
///
/// `PISA_ROBUST_ITERATIONS` (default 40) and `PISA_ROBUST_SECONDS` (default 20) bound the
/// runs; whichever ends first ends the test.
#[test]
fn files_changing_under_the_scan_are_read_reread_reported_or_gone() {
    let iterations = env_number("PISA_ROBUST_ITERATIONS", 40);
    let budget = Duration::from_secs(env_number("PISA_ROBUST_SECONDS", 20));
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    copy_tree(&repo().join("datasets").join("sample"), &root);

    // A big session that is appended to all the time: a read of it takes long enough to see
    // the writes (about 7 MB: the largest sample file's entries, again and again).
    let files = jsonl_files(&root);
    let big = crate::support::session_of_at_least(&files, 7 << 20);
    let hot = root.join("--hot--").join("live.jsonl");
    std::fs::create_dir_all(hot.parent().unwrap()).unwrap();
    std::fs::write(&hot, &big).unwrap();
    let hot_rel = "--hot--/live.jsonl";

    let rel = |p: &Path| p.strip_prefix(&root).unwrap().to_str().unwrap().to_string();
    // Every other sample file is churned; the rest are never touched.
    let churn: Vec<Churned> = files
        .iter()
        .step_by(2)
        .map(|p| Churned {
            path: p.clone(),
            rel: rel(p),
            original: std::fs::read(p).unwrap(),
            removals: AtomicU64::new(0),
            present: AtomicBool::new(true),
        })
        .collect();
    let still: Vec<String> = files.iter().skip(1).step_by(2).map(|p| rel(p)).collect();

    let limit = Duration::from_secs(120);
    let args = [os("sessions"), os("--json"), os("--verbose"), root.as_os_str()];
    let baseline = pisa_within(&args, &[], limit);
    baseline.assert_no_panic_text();
    let baseline = by_path(&baseline.json());

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let mut statuses: std::collections::BTreeMap<String, u64> = Default::default();
    let mut runs = 0u64;
    let writes = std::thread::scope(|scope| {
        let w = scope.spawn(|| writer(&churn, &hot, big.len() as u64, &stop));
        let check = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            while runs < iterations && started.elapsed() < budget {
                // Odd runs go through a cache that earlier runs filled: the resume paths too.
                let mut env: Vec<(&str, &OsStr)> = if runs % 2 == 1 {
                    vec![("PISA_CACHE_DIR", cache.path().as_os_str())]
                } else {
                    vec![]
                };
                // Every other pair of runs maps every file, which the writer cuts short under
                // the maps: the SIGBUS guard's path.
                if runs % 4 >= 2 {
                    env.push(("PISA_READ_MODE", os("map")));
                }
                let before: Vec<(bool, u64)> = churn
                    .iter()
                    .map(|c| (c.present.load(Ordering::SeqCst), c.removals.load(Ordering::SeqCst)))
                    .collect();
                let run = pisa_within(&args, &env, limit);
                runs += 1;
                run.assert_no_panic_text();
                let doc = run.json();
                assert_eq!(run.code, crate::support::expected_exit_code(&doc), "{}", run.err());
                let seen = by_path(&doc);
                for item in doc["rejected"].as_array().unwrap() {
                    let status = item["status"].as_str().unwrap_or("?");
                    let fifo = item["reason"].as_str().is_some_and(|r| r.contains("is a FIFO"));
                    let key = if fifo { "FIFO at open" } else { status };
                    *statuses.entry(key.to_string()).or_default() += 1;
                    assert!(
                        ["rejected", "unreadable", "gone", "changed"].contains(&status),
                        "unexpected status: {item}"
                    );
                    let reason = item["reason"].as_str().expect("a reason");
                    assert!(!reason.is_empty() && !reason.contains('\n'), "{item}");
                    let path = item["path"].as_str().unwrap();
                    let skipped = if item["notSession"] == true {
                        "not a session, skipped"
                    } else {
                        "skipped"
                    };
                    let line = format!("{skipped} {}: ", root.join(path).display());
                    assert!(run.err().contains(&line), "no stderr line for {path}: {}", run.err());
                }
                *statuses.entry("read".into()).or_default() += doc["sessions"].as_array().unwrap().len() as u64;
                for issue in doc["issues"].as_array().unwrap() {
                    // A FIFO seen by discovery: reported, never opened.
                    let reason = issue["reason"].as_str().unwrap_or("");
                    let what = if reason.contains("is a FIFO") {
                        "FIFO seen by discovery"
                    } else if reason.starts_with("gone") {
                        "gone during discovery"
                    } else {
                        panic!("unexpected issue {issue}")
                    };
                    *statuses.entry(what.into()).or_default() += 1;
                }
                for s in &still {
                    let now = seen.get(s).unwrap_or_else(|| panic!("{s} (never touched) is missing"));
                    assert_eq!(own_part(now), own_part(&baseline[s]), "{s} (never touched) changed");
                }
                assert!(seen.contains_key(hot_rel), "the live file is not reported");
                // Appended to during the read, the live file is read as it was when its read
                // began: whole lines, at least those it started with (the writer cuts it back to
                // them now and then, which a read may see as a change).
                let live = &seen[hot_rel];
                if live["status"] == "ok" {
                    *statuses.entry("live file read".into()).or_default() += 1;
                    assert!(live["lines"].as_u64() >= baseline[hot_rel]["lines"].as_u64(), "{live}");
                    assert_eq!(live["damage"]["malformedLines"], 0, "the live file read mixed: {live}");
                }
                for (c, (present, removals)) in churn.iter().zip(before) {
                    let throughout =
                        present && c.present.load(Ordering::SeqCst) && c.removals.load(Ordering::SeqCst) == removals;
                    if throughout {
                        assert!(
                            seen.contains_key(&c.rel),
                            "{} existed all along but is not reported",
                            c.rel
                        );
                    }
                }
            }
        }));
        stop.store(true, Ordering::Relaxed);
        let writes = w.join().expect("the writer");
        if let Err(e) = check {
            std::panic::resume_unwind(e);
        }
        writes
    });
    eprintln!(
        "concurrent writer: {runs} pisa runs in {:.1} s; writer: {writes:?}; outcomes: {statuses:?}",
        started.elapsed().as_secs_f64()
    );
    assert!(runs >= 3, "only {runs} runs in the time budget");
    // The live file is written to during every full read of it, and read all the same.
    assert!(
        statuses.get("live file read").is_some_and(|&n| n > 0),
        "the live file was never read: {statuses:?}"
    );
}

/// A session file with a header, a user message and an answer.
fn session_text(id: &str, cwd: &str, name: &str, model: &str) -> String {
    let header =
        serde_json::json!({"type":"session","version":3,"id":id,"timestamp":"2026-05-01T10:00:00.000Z","cwd":cwd});
    let user = serde_json::json!({"type":"message","id":"a1","parentId":null,"timestamp":"2026-05-01T10:00:01.000Z",
        "message":{"role":"user","content":"hi","timestamp":1777629601000u64}});
    let answer = serde_json::json!({"type":"message","id":"a2","parentId":"a1","timestamp":"2026-05-01T10:00:02.000Z",
        "message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"api":"anthropic-messages",
        "provider":"anthropic","model":model,"usage":{"input":100,"output":20,"cacheRead":0,"cacheWrite":0,
        "totalTokens":120,"cost":{"input":0.0003,"output":0.0003,"cacheRead":0,"cacheWrite":0,"total":0.0006}},
        "stopReason":"stop","timestamp":1777629602000u64}});
    let info = serde_json::json!({"type":"session_info","id":"a3","parentId":"a2","timestamp":"2026-05-01T10:00:03.000Z","name":name});
    format!("{header}\n{user}\n{answer}\n{info}\n")
}

/// FIFOs and devices named like session files, in the tree and as roots, are reported and
/// never opened (a blocking open of a FIFO, or a read of `/dev/zero`, would never end); a
/// folder named `x.jsonl` is searched; symlink loops and broken links are reported.
#[test]
fn fifos_devices_loops_and_broken_links_are_reported_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("--proj--");
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("ok.jsonl"), session_text("s-1", "/p", "one", "m")).unwrap();
    mkfifo(&p.join("fifo.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", p.join("zero.jsonl")).unwrap();
    std::os::unix::fs::symlink(p.join("nowhere"), p.join("broken.jsonl")).unwrap();
    std::os::unix::fs::symlink(dir.path(), p.join("loop")).unwrap();
    std::os::unix::fs::symlink(p.join("self.jsonl"), p.join("self.jsonl")).unwrap();
    let folder = p.join("folder.jsonl");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("inner.jsonl"), session_text("s-2", "/p", "two", "m")).unwrap();

    let limit = Duration::from_secs(30);
    let run = pisa_within(&[os("sessions"), os("--json"), dir.path().as_os_str()], &[], limit);
    run.assert_no_panic_text();
    assert_eq!(run.code, 2, "{}", run.err());
    let doc = run.json();
    let paths: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["--proj--/folder.jsonl/inner.jsonl", "--proj--/ok.jsonl"]);
    assert_eq!(doc["rejected"], serde_json::json!([]));
    let issue = |name: &str| -> String {
        let found = doc["issues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["path"].as_str().unwrap().ends_with(name));
        found.unwrap_or_else(|| panic!("no issue for {name}: {}", doc["issues"]))["reason"]
            .as_str()
            .unwrap()
            .into()
    };
    assert!(issue("fifo.jsonl").contains("is a FIFO"));
    assert!(issue("zero.jsonl").contains("is a character device"));
    assert!(issue("broken.jsonl").contains("broken symlink"));
    assert!(issue("loop").contains("symlink loop"));
    assert!(issue("self.jsonl").contains("Too many levels of symbolic links"));
    for name in ["fifo.jsonl", "zero.jsonl", "broken.jsonl", "loop", "self.jsonl"] {
        let line = run
            .err()
            .lines()
            .find(|l| l.contains(name) && l.starts_with("pisa: cannot scan "));
        assert!(line.is_some(), "no stderr line for {name}: {}", run.err());
    }

    // As roots: reported, never opened; nothing could be scanned, so exit 1.
    for root in [p.join("fifo.jsonl"), PathBuf::from("/dev/zero"), p.join("zero.jsonl")] {
        let run = pisa_within(&[os("sessions"), os("--json"), root.as_os_str()], &[], limit);
        run.assert_no_panic_text();
        assert_eq!(run.code, 1, "{}", run.err());
        assert!(
            run.json()["issues"][0]["reason"]
                .as_str()
                .unwrap()
                .contains("not a session file or folder")
        );
        assert!(run.err().contains("not a session file or folder"), "{}", run.err());
        let run = pisa_within(&[os("inspect"), root.as_os_str()], &[], limit);
        assert_eq!(run.code, 1, "{}", run.err());
        assert!(run.err().contains("not a regular file"), "{}", run.err());
    }
}

/// Names that are not UTF-8 stay distinct in every output and in the cache, and every output
/// stays UTF-8 and valid JSON, broken links and unreadable folders with such names included.
#[test]
fn names_that_are_not_utf8_stay_distinct_and_outputs_stay_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let name = |b: &[u8]| OsString::from_vec(b.to_vec());
    let p = dir.path().join(name(b"--proj\xff--"));
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join(name(b"a\xff.jsonl")), session_text("s-ff", "/p", "ff", "m")).unwrap();
    std::fs::write(p.join(name(b"a\xfe.jsonl")), session_text("s-fe", "/p", "fe", "m")).unwrap();
    std::os::unix::fs::symlink(p.join("nowhere"), p.join(name(b"b\xfd.jsonl"))).unwrap();

    let args = [os("sessions"), os("--json"), dir.path().as_os_str()];
    let limit = Duration::from_secs(30);
    let cached = [("PISA_CACHE_DIR", cache.path().as_os_str())];
    let runs = [
        pisa_within(&args, &[], limit),
        pisa_within(&args, &cached, limit),
        pisa_within(&args, &cached, limit),
    ];
    for run in &runs {
        run.assert_no_panic_text();
        assert_eq!(run.code, 2, "{}", run.err());
        run.err();
        assert_eq!(run.stdout, runs[0].stdout, "the cache changed the output");
    }
    let doc = runs[0].json();
    let ids: Vec<(&str, &str)> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["path"].as_str().unwrap(), s["sessionId"].as_str().unwrap()))
        .collect();
    assert_eq!(
        ids,
        [
            (r"--proj\xFF--/a\xFE.jsonl", "s-fe"),
            (r"--proj\xFF--/a\xFF.jsonl", "s-ff")
        ]
    );
    assert_ne!(
        pisa::corpus::cache::key(&p.join(name(b"a\xff.jsonl"))),
        pisa::corpus::cache::key(&p.join(name(b"a\xfe.jsonl")))
    );
    assert!(
        doc["issues"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with(r"--proj\xFF--/b\xFD.jsonl"),
        "{doc}"
    );
    let table = pisa_within(&[os("sessions"), dir.path().as_os_str()], &cached, limit);
    table.out();
    assert!(table.err().contains(r"b\xFD.jsonl: broken symlink"), "{}", table.err());
}

/// A file that cannot be read is reported with the reason and exit code 2: `/proc/self/mem`
/// fails with EIO at offset 0 for any user, root included.
#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "needs Linux's /proc/self/mem")]
fn a_file_that_fails_to_read_is_reported_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("--proj--");
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("ok.jsonl"), session_text("s-1", "/p", "one", "m")).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", p.join("mem.jsonl")).unwrap();
    let limit = Duration::from_secs(30);
    let run = pisa_within(&[os("sessions"), os("--json"), dir.path().as_os_str()], &[], limit);
    run.assert_no_panic_text();
    assert_eq!(run.code, 2, "{}", run.err());
    let doc = run.json();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    let mem = &doc["rejected"][0];
    assert_eq!(
        (mem["path"].as_str(), mem["status"].as_str()),
        (Some("--proj--/mem.jsonl"), Some("unreadable"))
    );
    assert!(
        mem["reason"]
            .as_str()
            .unwrap()
            .contains("Input/output error (os error 5), at byte 0"),
        "{mem}"
    );
    assert!(run.err().contains("mem.jsonl: cannot read "), "{}", run.err());
    let table = pisa_within(&[os("sessions"), dir.path().as_os_str()], &[], limit);
    assert_eq!(table.code, 2, "{}", table.err());
    assert!(
        table.out().contains("0 rejected, 0 damaged, 1 unreadable\n"),
        "{}",
        table.out()
    );
}

/// A file and a folder under `chmod 000` are reported with the reason and exit code 2. Root
/// reads them anyway (`CAP_DAC_OVERRIDE`), so as root pisa runs under `setpriv` with that
/// capability dropped; the build script decides whether this machine allows it.
#[test]
#[cfg_attr(
    not(pisa_can_deny_reads),
    ignore = "running as root without setpriv or CAP_SETPCAP: chmod 000 cannot keep root out"
)]
fn files_and_folders_without_read_permission_are_reported_with_a_reason() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("--proj--");
    std::fs::create_dir(&p).unwrap();
    std::fs::write(p.join("ok.jsonl"), session_text("s-1", "/p", "one", "m")).unwrap();
    std::fs::write(p.join("locked.jsonl"), session_text("s-2", "/p", "two", "m")).unwrap();
    let closed = dir.path().join("--closed--");
    std::fs::create_dir(&closed).unwrap();
    std::fs::write(closed.join("inside.jsonl"), session_text("s-3", "/p", "three", "m")).unwrap();
    std::fs::set_permissions(p.join("locked.jsonl"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o000)).unwrap();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut args: Vec<&OsStr> = Vec::new();
    let bin = assert_cmd::cargo::cargo_bin("pisa");
    if root {
        args.extend([
            os("setpriv"),
            os("--bounding-set=-dac_override,-dac_read_search"),
            os("--inh-caps=-all"),
        ]);
    }
    args.extend([bin.as_os_str(), os("sessions"), os("--json"), dir.path().as_os_str()]);
    let mut cmd = Command::new(args[0]);
    let out = cmd.args(&args[1..]).env("PISA_NO_CACHE", "1").output().unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: out.stderr,
    };
    run.assert_no_panic_text();
    assert_eq!(run.code, 2, "{}", run.err());
    let doc = run.json();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc}");
    let locked = &doc["rejected"][0];
    assert_eq!(locked["path"], "--proj--/locked.jsonl");
    assert!(
        locked["reason"].as_str().unwrap().contains("Permission denied"),
        "{locked}"
    );
    let issue = &doc["issues"][0];
    assert!(issue["path"].as_str().unwrap().ends_with("--closed--"), "{doc}");
    assert!(
        issue["reason"].as_str().unwrap().contains("Permission denied"),
        "{issue}"
    );
    assert!(run.err().contains("locked.jsonl: cannot read"), "{}", run.err());
    assert!(run.err().contains("--closed--: cannot read"), "{}", run.err());
}

/// An escape payload: an OSC that sets the window title, a CSI that clears the screen, a C1
/// CSI (U+009B) and a bell.
const PAYLOAD: &str = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{7}";

/// Bytes that must never reach a terminal from a file: ESC, BEL, and C1 controls in UTF-8.
fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let bad = text.chars().find(|&c| c.is_control() && c != '\n');
    assert!(bad.is_none(), "{what}: control character {bad:?} in output:\n{text}");
}

/// File-derived text (session name, cwd, model, file name) reaches tables and stderr without
/// control characters or escape sequences, in every report command.
#[test]
fn escape_sequences_in_files_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(format!("--proj{PAYLOAD}--"));
    std::fs::create_dir(&p).unwrap();
    let text = session_text(
        "s-1",
        &format!("/home/cwd-evil{PAYLOAD}"),
        &format!("name-evil{PAYLOAD}\u{202e}dlrow"),
        &format!("model-evil{PAYLOAD}"),
    );
    let file = p.join(format!("file-evil{PAYLOAD}.jsonl"));
    std::fs::write(&file, &text).unwrap();
    // Damaged and rejected files with the payload in their names, for the stderr lists.
    std::fs::write(p.join(format!("damaged{PAYLOAD}.jsonl")), format!("{text}{{oops\n")).unwrap();
    std::fs::write(p.join(format!("rejected{PAYLOAD}.jsonl")), "{\"role\":\"user\"}\n").unwrap();
    // A reason that quotes the file: the first entry's type.
    let typed = p.join("typed.jsonl");
    std::fs::write(
        &typed,
        format!("{}\n", serde_json::json!({"type": format!("type-evil{PAYLOAD}")})),
    )
    .unwrap();
    let mut raw = b"raw-c1-\x9b-\x1b".to_vec();
    raw.extend_from_slice(b".jsonl");
    std::fs::write(p.join(OsString::from_vec(raw)), "\n").unwrap();

    let d = dir.path().as_os_str();
    let limit = Duration::from_secs(60);
    // Each command, and what its output shows of the evil session.
    let commands: Vec<(Vec<&OsStr>, &str)> = vec![
        (vec![os("sessions"), d], "name-evil"),
        (vec![os("daily"), d], "2026-05-01"),
        (vec![os("weekly"), d], "2026-04-27"),
        (vec![os("monthly"), os("--breakdown"), d], "model-evil"),
        (vec![os("session"), d], "name-evil"),
        (vec![os("model"), d], "model-evil"),
        (vec![os("project"), d], "cwd-evil"),
        (vec![os("kind"), d], "assistant"),
        (vec![os("compactions"), d], "Compaction"),
        (vec![os("query"), os("SELECT * FROM sessions"), d], "name-evil"),
        (vec![os("query"), os("SELECT * FROM usage"), d], "model-evil"),
        (vec![os("query"), os("SELECT * FROM files"), d], "file-evil"),
        (vec![os("inspect"), file.as_os_str()], "name-evil"),
        (vec![os("inspect"), typed.as_os_str()], "type-evil"),
    ];
    for (mut args, shows) in commands {
        if args[0] != "inspect" {
            // List the files that are not sessions too (the file named rejected...).
            args.insert(1, os("--verbose"));
        }
        let run = pisa_within(&args, &[], limit);
        run.assert_no_panic_text();
        let what = format!("pisa {args:?}");
        assert!(
            run.code == 0 || run.code == 2,
            "{what}: exit {}: {}",
            run.code,
            run.err()
        );
        assert_terminal_safe(&format!("{what} stdout"), &run.stdout);
        assert_terminal_safe(&format!("{what} stderr"), &run.stderr);
        // A right-to-left override would show the rest of the row reversed.
        assert!(
            !run.out().contains('\u{202e}'),
            "{what}: bidirectional override in the table"
        );
        // The rows are there, only the escapes are gone.
        let out = run.out();
        assert!(out.contains(shows), "{what}: no row shows {shows}:\n{out}");
        if args[0] != "inspect" {
            let err = run.err();
            for shown in ["damaged", "rejected", "raw-c1-", "type-evil"] {
                assert!(err.contains(shown), "{what}: no {shown} on stderr: {err}");
            }
        }
    }
    // JSON keeps the text, escaped (C1 controls too, which JSON does not require).
    for args in [
        vec![os("sessions"), os("--json"), d],
        vec![os("session"), os("--json"), d],
        vec![os("query"), os("--json"), os("SELECT name FROM sessions"), d],
        vec![os("inspect"), os("--json"), file.as_os_str()],
    ] {
        let run = pisa_within(&args, &[], limit);
        assert!(
            run.out().contains(r"name-evil\u001b]0;pwned\u0007\u001b[2J\u009b31m"),
            "{}",
            run.out()
        );
        assert_terminal_safe(&format!("{args:?} stdout"), &run.stdout);
        run.json();
    }
}

/// A panic in a worker costs only its file: reported with the file and a one-line reason,
/// the scan goes on, exit code 2, and no Rust panic text reaches the user. Debug builds
/// honour `PISA_DEBUG_PANIC_ON` (a substring of the file's path) to make a worker panic.
#[test]
#[cfg_attr(not(debug_assertions), ignore = "PISA_DEBUG_PANIC_ON exists in debug builds only")]
fn a_panic_in_a_worker_is_reported_with_its_file_and_the_scan_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("--proj--");
    std::fs::create_dir(&p).unwrap();
    for i in 0..4 {
        std::fs::write(
            p.join(format!("s{i}.jsonl")),
            session_text(&format!("s-{i}"), "/p", "n", "m"),
        )
        .unwrap();
    }
    let d = dir.path().as_os_str();
    let panic_on = [("PISA_DEBUG_PANIC_ON", os("s2.jsonl"))];
    let limit = Duration::from_secs(60);
    for args in [
        vec![os("sessions"), os("--json"), d],
        vec![os("sessions"), d],
        vec![os("daily"), d],
        vec![os("export"), os("--out"), os("/dev/null/never"), d],
    ] {
        let run = pisa_within(&args, &panic_on, limit);
        run.assert_no_panic_text();
        let what = format!("pisa {args:?}");
        let line = run.err().lines().find(|l| l.contains("s2.jsonl")).unwrap_or("");
        assert!(
            line.starts_with("pisa: skipped ") && line.contains("internal error in pisa"),
            "{what}: {}",
            run.err()
        );
        if args[0] == "export" {
            // The export fails (no such folder), one line, exit 1: still no panic text.
            assert_eq!(run.code, 1, "{what}: {}", run.err());
            continue;
        }
        assert_eq!(run.code, 2, "{what}: {}", run.err());
        assert!(
            run.err().contains("PISA_DEBUG_PANIC_ON matched"),
            "{what}: {}",
            run.err()
        );
        if args.contains(&os("--json")) {
            let doc = run.json();
            assert_eq!(doc["sessions"].as_array().unwrap().len(), 3);
            assert_eq!(doc["rejected"][0]["status"], "failed");
            assert_eq!(doc["rejected"][0]["path"], "--proj--/s2.jsonl");
        }
    }
    // On the main thread (`inspect` reads there): one line, exit 1.
    let run = pisa_within(&[os("inspect"), p.join("s2.jsonl").as_os_str()], &panic_on, limit);
    run.assert_no_panic_text();
    assert_eq!(run.code, 1, "{}", run.err());
    assert_eq!(run.err().lines().count(), 1, "{}", run.err());
    assert!(
        run.err()
            .starts_with("pisa: internal error: PISA_DEBUG_PANIC_ON matched"),
        "{}",
        run.err()
    );
}

/// Set a file's modification time `ago` into the past.
fn age(path: &Path, ago: Duration) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::SystemTime::now() - ago).unwrap();
}

/// A file cut short while pisa has it mapped (Pi migrating a settled session: the debug hook
/// `PISA_DEBUG_TRUNCATE_MAPPED` truncates every file it names to half its length right after
/// it is mapped) is never a crash: with every file mapped (`--read-mode map`) it is read again
/// by mapping it, cut short again, and reported `changed`; in `auto` the second read is a plain
/// read of the file as it is now. Every other file keeps its figures. A big file (parsed by
/// every core from the map) and a small one are cut. Without the SIGBUS guard pisa dies of the
/// signal here.
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "PISA_DEBUG_TRUNCATE_MAPPED exists in debug builds only"
)]
fn a_file_truncated_under_its_map_is_reported_changed_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let (root, cut) = sample_with_big_and_small(dir.path(), "--cut--");
    let put_back = || {
        for (rel, text) in &cut {
            std::fs::write(root.join(rel), text).unwrap();
        }
    };
    let limit = Duration::from_secs(120);
    let args = |mode| sessions_json_in_mode(&root, mode);
    let baseline = pisa_within(&args("read"), &[], limit);
    baseline.assert_no_panic_text();
    let baseline = by_path(&baseline.json());
    let hook = [("PISA_DEBUG_TRUNCATE_MAPPED", os("--cut--"))];
    let others_unchanged = |seen: &std::collections::BTreeMap<String, Value>| {
        for (rel, was) in &baseline {
            if !rel.starts_with("--cut--") {
                assert_eq!(own_part(&seen[rel]), own_part(was), "{rel} changed");
            }
        }
    };

    // Every file mapped: each cut file is cut under both maps, and reported.
    let run = pisa_within(&args("map"), &hook, limit);
    run.assert_no_panic_text();
    assert_eq!(run.code, 2, "{}", run.err());
    let seen = by_path(&run.json());
    for (rel, text) in &cut {
        let item = &seen[rel];
        assert_eq!(item["status"], "changed", "{item}");
        // The small file's new end is on a page the map still has (read as zeros past the
        // end, which the file's stamp tells): no SIGBUS; the big one's is pages before its end.
        let reason = item["reason"].as_str().unwrap();
        let fault = reason.contains("cut short to") && reason.contains("under a map of");
        assert_eq!(fault, rel.contains("big"), "{reason}");
        let now = std::fs::metadata(root.join(rel)).unwrap().len();
        assert_eq!(now, text.len() as u64 / 4, "{rel}: cut twice");
        assert!(run.err().contains(&format!("skipped {}: ", root.join(rel).display())));
    }
    others_unchanged(&seen);

    // Settled files are mapped in `auto`: a cut file is read again, as it is now.
    put_back();
    for rel in baseline.keys() {
        age(&root.join(rel), Duration::from_secs(3600));
    }
    let run = pisa_within(&args("auto"), &hook, limit);
    run.assert_no_panic_text();
    let seen = by_path(&run.json());
    let again = pisa_within(&args("read"), &[], limit);
    let again = by_path(&again.json());
    for (rel, text) in &cut {
        let now = std::fs::metadata(root.join(rel)).unwrap().len();
        assert_eq!(now, text.len() as u64 / 2, "{rel}: mapped and cut once");
        assert_eq!(seen[rel], again[rel], "{rel}: what a read of it gives");
        assert_ne!(seen[rel]["status"], "changed");
    }
    others_unchanged(&seen);

    // Files written to in the last minutes are read in `auto`: nothing is mapped, nothing cut.
    put_back();
    let run = pisa_within(&args("auto"), &hook, limit);
    assert_eq!(by_path(&run.json())["--cut--/big.jsonl"], baseline["--cut--/big.jsonl"]);
    for (rel, text) in &cut {
        assert_eq!(std::fs::metadata(root.join(rel)).unwrap().len(), text.len() as u64);
    }
}

/// A parse from a map can meet bytes rewritten under it (a piece cut at a newline that ends in
/// another byte when it is parsed) and panic on them; CI saw it as a `failed` file in the churn
/// test above. The debug hook `PISA_DEBUG_PANIC_MAPPED` makes every parse from a map of the
/// files it names panic: each is then read instead, with the figures a read gives, and no file
/// is reported, also when a cached file grew and the map held only its new part.
#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "PISA_DEBUG_PANIC_MAPPED exists in debug builds only"
)]
fn a_parse_that_panics_under_a_map_reads_the_file_instead() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (root, shaken) = sample_with_big_and_small(dir.path(), "--shaken--");
    let limit = Duration::from_secs(120);
    let args = |mode| sessions_json_in_mode(&root, mode);
    let hook = [("PISA_DEBUG_PANIC_MAPPED", os("--shaken--"))];
    let cached = [
        ("PISA_DEBUG_PANIC_MAPPED", os("--shaken--")),
        ("PISA_CACHE_DIR", cache.path().as_os_str()),
    ];
    let check = |env: &[(&str, &OsStr)], what: &str| {
        let read = pisa_within(&args("read"), &[], limit);
        let mapped = pisa_within(&args("map"), env, limit);
        mapped.assert_no_panic_text();
        // The sample's damaged files are reported as a read reports them; the shaken ones not.
        assert_eq!((mapped.code, mapped.err()), (read.code, read.err()), "{what}");
        assert!(!mapped.err().contains("--shaken--"), "{what}: {}", mapped.err());
        let (read, mapped) = (by_path(&read.json()), by_path(&mapped.json()));
        assert!(read.contains_key("--shaken--/big.jsonl"), "{what}");
        assert_eq!(mapped, read, "{what}");
    };
    check(&hook, "no cache");
    check(&cached, "cache filled");
    check(&cached, "cache warm");
    // The big file grows: the next run maps only what was appended, on top of the cached part.
    let big = &shaken[0].1;
    let body_start = big.iter().position(|&b| b == b'\n').unwrap() + 1;
    let tail = &big[big.len() - (big.len() - body_start).min(64 << 10)..];
    let tail = &tail[tail.iter().position(|&b| b == b'\n').unwrap() + 1..];
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(&shaken[0].0))
        .unwrap();
    std::io::Write::write_all(&mut f, tail).unwrap();
    drop(f);
    check(&cached, "cached file grown");
}

/// The sample copied to `dir/sessions`, with a folder `folder` holding a big session (past the
/// size from which every core parses a file) and a small one: the root, and the two files'
/// paths under it with their bytes (the big one first).
fn sample_with_big_and_small(dir: &Path, folder: &str) -> (PathBuf, [(String, Vec<u8>); 2]) {
    let root = dir.join("sessions");
    copy_tree(&repo().join("datasets").join("sample"), &root);
    let files = jsonl_files(&root);
    std::fs::create_dir_all(root.join(folder)).unwrap();
    let made = [
        (format!("{folder}/big.jsonl"), crate::support::big_session(&files)),
        (format!("{folder}/small.jsonl"), std::fs::read(&files[0]).unwrap()),
    ];
    for (rel, text) in &made {
        std::fs::write(root.join(rel), text).unwrap();
    }
    (root, made)
}

/// `pisa --read-mode MODE sessions --json ROOT`.
fn sessions_json_in_mode<'a>(root: &'a Path, mode: &'static str) -> [&'a OsStr; 5] {
    [
        os("--read-mode"),
        os(mode),
        os("sessions"),
        os("--json"),
        root.as_os_str(),
    ]
}

/// The `.jsonl` files under `root`, sorted.
fn jsonl_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}
