//! Shared helpers: where things are, running pisa and the oracle, comparing figures.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Pi's session files (`tests/data/pi-mono`, MIT, see its README): the real files the tests use.
pub fn pi_files() -> PathBuf {
    repo().join("tests").join("data").join("pi-mono")
}

/// What the tests need besides Rust (Pi's npm package for the oracle, a Python environment),
/// installed once by `scripts/test-env` under `target/test-env` (or `$PISA_TEST_ENV`).
#[derive(Debug)]
pub struct TestEnv {
    dir: PathBuf,
}

impl TestEnv {
    /// The environment's Python (3.10 or later, with the packages of the requirements files).
    pub fn python(&self) -> Command {
        Command::new(self.dir.join("venv").join("bin").join("python"))
    }

    /// Where Pi's npm package (and pi-ai with it) is installed.
    pub fn node_modules(&self) -> PathBuf {
        self.dir.join("node").join("node_modules")
    }

    /// Headless Chromium: `PISA_CHROMIUM`, else the one `scripts/test-env` unpacked.
    pub fn chromium(&self) -> PathBuf {
        std::env::var_os("PISA_CHROMIUM").map_or_else(|| self.dir.join("chromium").join("chromium"), PathBuf::from)
    }

    /// Node with the environment in which the oracle finds Pi's package.
    pub fn node(&self) -> Command {
        let mut node = Command::new("node");
        node.env("PISA_TEST_ENV", &self.dir);
        node
    }
}

/// Install what the tests need, once per test run. A machine without Node, Python or Java gets
/// the set-up script's line saying what to install, and the test run ends there, instead of
/// failing test after test.
pub fn test_env() -> &'static TestEnv {
    static ENV: OnceLock<TestEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let dir = std::env::var_os("PISA_TEST_ENV").map_or_else(
            || Path::new(env!("CARGO_TARGET_TMPDIR")).join("..").join("test-env"),
            PathBuf::from,
        );
        let status = Command::new("bash")
            .arg(repo().join("scripts").join("test-env"))
            .env("PISA_TEST_ENV", &dir)
            .stdout(std::process::Stdio::null())
            .status();
        match status.map(|s| s.code()) {
            Ok(Some(0)) => TestEnv { dir },
            // The script said what is missing, one line each.
            Ok(Some(3)) => std::process::exit(3),
            other => {
                eprintln!("pisa's tests cannot run: scripts/test-env failed ({other:?}; see above)");
                std::process::exit(1)
            }
        }
    })
}

/// A folder under `target/test-artifacts` for what a test keeps to be looked at (screenshots).
pub fn artifacts(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("..")
        .join("test-artifacts")
        .join(name);
    std::fs::create_dir_all(&dir).expect("create the artifacts folder");
    dir
}

/// Run pisa with arguments; returns (exit code, stdout, stderr).
pub fn pisa(args: &[&str]) -> (i32, String, String) {
    let out = assert_cmd::Command::cargo_bin("pisa")
        .expect("pisa binary")
        .env("PISA_NO_CACHE", "1")
        // The developer's own config file must not change what the tests see.
        .env_remove("PISA_CONFIG")
        .env("XDG_CONFIG_HOME", repo().join("tests").join("no-config"))
        .args(args)
        .output()
        .expect("run pisa");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `pisa export --quiet --out TEMP DIR EXTRA...`; the temporary folder it wrote.
pub fn export(dir: &Path, extra: &[&str]) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("temp dir");
    let mut args = vec![
        "export",
        "--quiet",
        "--out",
        out.path().to_str().expect("utf-8 path"),
        dir.to_str().expect("utf-8 path"),
    ];
    args.extend(extra);
    let (code, _, err) = pisa(&args);
    assert_eq!(code, scan_exit_code(dir), "pisa export: {err}");
    out
}

/// `pisa sessions --json DIR`, parsed; its exit code is the one the document calls for.
pub fn pisa_json(dir: &Path) -> Value {
    let (code, out, err) = pisa(&["sessions", "--json", "--quiet", dir.to_str().expect("utf-8 path")]);
    let doc: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("pisa exited {code} and printed invalid JSON ({e}): {err}"));
    assert_eq!(code, expected_exit_code(&doc), "{}: {err}", dir.display());
    doc
}

/// The exit code of a scan that produced `doc`: 2 when a session was damaged, a session or
/// other file could not be loaded or read, or a folder could not be scanned; 0 when every
/// file was read (files that are not sessions do not count).
pub fn expected_exit_code(doc: &Value) -> i32 {
    let skipped = doc["totals"]["damagedFiles"].as_u64().expect("damagedFiles") > 0
        || doc["rejected"]
            .as_array()
            .expect("rejected")
            .iter()
            .any(|r| r["notSession"] != true)
        || !doc["issues"].as_array().expect("issues").is_empty();
    if skipped { 2 } else { 0 }
}

/// The exit code every pisa command gives for a scan of `dir` (from `sessions --json`, once
/// per folder and test run).
pub fn scan_exit_code(dir: &Path) -> i32 {
    static CODES: std::sync::Mutex<Option<std::collections::HashMap<PathBuf, i32>>> = std::sync::Mutex::new(None);
    if let Some(&code) = CODES.lock().unwrap().get_or_insert_default().get(dir) {
        return code;
    }
    let code = expected_exit_code(&pisa_json(dir));
    CODES
        .lock()
        .unwrap()
        .get_or_insert_default()
        .insert(dir.to_path_buf(), code);
    code
}

/// Run a Node script that prints one JSON object per line, with Pi's package installed.
pub fn node_lines(script: &Path, arg: &Path) -> Vec<Value> {
    let out = test_env().node().arg(script).arg(arg).output().expect("run node");
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("output is UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// Run the oracle over a directory: one record per file.
pub fn oracle(dir: &Path) -> Vec<Value> {
    node_lines(&repo().join("tests").join("oracle").join("oracle.mjs"), dir)
}

/// Differences between an oracle value and pisa's (every oracle key must match).
pub fn diff(oracle: &Value, pisa: &Value, path: &str, out: &mut Vec<String>) {
    match (oracle, pisa) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                match b.get(k) {
                    None => out.push(format!("{path}.{k}: missing in pisa")),
                    Some(w) => diff(v, w, &format!("{path}.{k}"), out),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!("{path}: {} items in the oracle, {} in pisa", a.len(), b.len()));
                return;
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(x, y, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let equal = match (a.as_i64(), b.as_i64()) {
                // Token counts and other integers: exact.
                (Some(x), Some(y)) => x == y,
                _ => {
                    // Costs: within 1e-9 relative.
                    let (x, y) = (a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN));
                    x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
                }
            };
            if !equal {
                out.push(format!("{path}: oracle {a}, pisa {b}"));
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: oracle {a}, pisa {b}")),
    }
}

/// Outcome of comparing a directory.
#[derive(Debug, Default)]
pub struct Agreement {
    pub compared: usize,
    pub equal: usize,
    pub failures: Vec<String>,
}

/// Compare every file the oracle reports with pisa's record of it.
pub fn agreement(dir: &Path) -> Agreement {
    let records = oracle(dir);
    let doc = pisa_json(dir);
    let mut by_path = std::collections::HashMap::new();
    for s in doc["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .chain(doc["rejected"].as_array().expect("rejected"))
    {
        by_path.insert(s["path"].as_str().expect("path").to_string(), s.clone());
    }
    let mut a = Agreement::default();
    for o in &records {
        a.compared += 1;
        let path = o["path"].as_str().expect("oracle path");
        let Some(p) = by_path.get(path) else {
            a.failures.push(format!("{path}: pisa has no record"));
            continue;
        };
        if o["status"] == "error" {
            // Pi's own code throws on this file; pisa must say so, and still report it.
            if p["piError"].is_string() {
                a.equal += 1;
            } else {
                a.failures.push(format!(
                    "{path}: the oracle's Pi code threw ({}) but pisa reports no piError",
                    o["error"]
                ));
            }
            continue;
        }
        if p.get("piError").is_some_and(Value::is_string) {
            a.failures.push(format!(
                "{path}: pisa says Pi would fail ({}) but the oracle ran fine",
                p["piError"]
            ));
            continue;
        }
        let mut d = Vec::new();
        diff(o, p, "", &mut d);
        if d.is_empty() {
            a.equal += 1;
        } else {
            d.truncate(12);
            a.failures.push(format!("{path}:\n    {}", d.join("\n    ")));
        }
    }
    a
}

/// Panic with every failure when a directory disagrees.
pub fn assert_agreement(dir: &Path, min_files: usize) {
    let a = agreement(dir);
    eprintln!(
        "oracle agreement on {}: {} equal / {} compared",
        dir.display(),
        a.equal,
        a.compared
    );
    assert!(
        a.compared >= min_files,
        "expected at least {min_files} files in {}, the oracle saw {}",
        dir.display(),
        a.compared
    );
    assert!(
        a.failures.is_empty(),
        "pisa disagrees with the oracle on {} file(s):\n{}",
        a.failures.len(),
        a.failures.join("\n")
    );
}

/// A folder scanned in the library (no cache), and its frames with costs under `mode`.
pub fn frames(
    dir: &Path,
    pricing: &pisa::pricing::Pricing,
    mode: pisa::pricing::CostMode,
) -> (pisa::Corpus, pisa::frame::Frames) {
    let roots = [dir.to_path_buf()];
    let corpus = pisa::corpus::scan(&roots, &pisa::corpus::Quiet, None).expect("the scan runs");
    let frames = pisa::frame::Frames::build(&corpus, "test-machine", pricing, mode).expect("frames");
    (corpus, frames)
}

/// A directory written by `datasets/generate.py` at small scale.
pub fn generated(seed: &str, sessions: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let status = test_env()
        .python()
        .arg(repo().join("datasets").join("generate.py"))
        .args(["--out", dir.path().to_str().expect("utf-8"), "--seed", seed])
        .args(["--sessions", &sessions.to_string(), "--scale", "small"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run the corpus generator");
    assert!(status.success(), "the generator failed for seed {seed}");
    dir
}

/// A session past the size from which every core parses a file (9 MB): see [`session_of_at_least`].
pub fn big_session(files: &[PathBuf]) -> Vec<u8> {
    session_of_at_least(files, 9 << 20)
}

/// A session of at least `size` bytes: the largest of `files`, its body written again and again
/// after its header.
pub fn session_of_at_least(files: &[PathBuf], size: usize) -> Vec<u8> {
    let largest = files
        .iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .expect("a file");
    let bytes = std::fs::read(largest).unwrap();
    let body = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let mut big = bytes.clone();
    while big.len() < size {
        big.extend_from_slice(&bytes[body..]);
    }
    big
}

/// Copy the folder `from` with all it holds to `to`.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.expect("walk the folder");
        let target = to.join(entry.path().strip_prefix(from).expect("under the folder"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("create a folder");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}
