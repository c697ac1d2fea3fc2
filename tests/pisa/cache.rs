//! The incremental cache: output is byte-identical with and without it, whatever happened
//! to the files in between; a damaged or foreign cache is discarded with a warning.

use std::path::Path;

use crate::support::{copy_tree, repo};

/// Run pisa with the cache in `cache` (or `--no-cache`); (exit code, stdout, stderr).
fn run(cache: Option<&Path>, args: &[&str]) -> (i32, String, String) {
    let mut cmd = assert_cmd::Command::cargo_bin("pisa").expect("pisa binary");
    cmd.env_remove("PISA_NO_CACHE").env_remove("PISA_CACHE_DIR");
    match cache {
        Some(dir) => cmd.arg("--cache-dir").arg(dir),
        None => cmd.arg("--no-cache"),
    };
    let out = cmd.args(args).output().expect("run pisa");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const COMMANDS: &[&[&str]] = &[
    &["sessions", "--json"],
    &["sessions"],
    &["daily", "--json", "-z", "UTC", "--breakdown"],
    &["session", "--csv", "-z", "UTC"],
    &["compactions", "--json", "-z", "UTC"],
    &[
        "query",
        "--csv",
        "--source",
        "t",
        "SELECT * FROM usage ORDER BY file, entry_index",
    ],
];

/// Every command prints the same with the cache as without, and says nothing about the
/// cache on stderr.
fn assert_same(dir: &Path, cache: &Path, when: &str) {
    let d = dir.to_str().unwrap();
    for cmd in COMMANDS {
        let args: Vec<&str> = cmd.iter().copied().chain([d]).collect();
        let fresh = run(None, &args);
        let cached = run(Some(cache), &args);
        assert_eq!(fresh.0, cached.0, "{when}: exit code of {cmd:?}");
        assert!(fresh.1 == cached.1, "{when}: {cmd:?} prints otherwise with the cache");
        assert_eq!(fresh.2, cached.2, "{when}: stderr of {cmd:?}");
    }
}

fn session_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && std::fs::metadata(p).is_ok_and(|m| m.len() > 4096))
        .collect();
    v.sort();
    v
}

/// A line a Pi session would append: a custom entry under the file's last entry.
fn appended_line(file: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let last_id = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("id").and_then(|i| i.as_str()).map(str::to_string));
    serde_json::json!({
        "type": "message", "id": format!("app{n:05}"), "parentId": last_id,
        "timestamp": "2026-07-01T10:00:00.000Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "appended"}],
            "provider": "anthropic", "model": "claude-sonnet-4-5", "api": "anthropic-messages",
            "stopReason": "stop", "timestamp": 1_782_900_000_000u64,
            "usage": {"input": 11, "output": 7, "cacheRead": 1000 + n, "cacheWrite": 3, "totalTokens": 1021 + n,
                "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.3, "cacheWrite": 0.4, "total": 1.0}}}
    })
    .to_string()
}

fn append(file: &Path, bytes: &[u8]) {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// Move a file's modification time, as a later write would.
fn touch_later(file: &Path, seconds: u64) {
    let f = std::fs::File::options().write(true).open(file).unwrap();
    let t = std::fs::metadata(file).unwrap().modified().unwrap() + std::time::Duration::from_secs(seconds);
    f.set_modified(t).unwrap();
}

#[test]
fn output_is_identical_with_and_without_the_cache_as_files_change() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&repo().join("datasets").join("sample"), dir.path());
    let generated = crate::support::generated("21", 30);
    copy_tree(generated.path(), &dir.path().join("generated"));
    let cache = tempfile::tempdir().unwrap();
    assert_same(dir.path(), cache.path(), "cold cache");
    assert!(cache.path().join("index.bin").exists(), "the cache was written");
    let written = std::fs::metadata(cache.path().join("index.bin"))
        .unwrap()
        .modified()
        .unwrap();
    assert_same(dir.path(), cache.path(), "warm cache");
    let index = cache.path().join("index.bin");
    assert_eq!(
        std::fs::metadata(&index).unwrap().modified().unwrap(),
        written,
        "nothing changed: index kept"
    );

    let files = session_files(dir.path());
    assert!(files.len() > 20);
    // Pi appends turns; one file gets a line still being written, another its completion.
    for (n, f) in files.iter().step_by(5).enumerate() {
        append(f, format!("{}\n", appended_line(f, n)).as_bytes());
    }
    let line = appended_line(&files[1], 99);
    let (start, rest) = line.split_at(line.len() / 2);
    append(&files[1], start.as_bytes());
    assert_same(dir.path(), cache.path(), "appended turns and a partial line");
    append(&files[1], format!("{rest}\n").as_bytes());
    assert_same(dir.path(), cache.path(), "the partial line completed");

    // Shrunk, rewritten to the same size (new mtime), replaced by another file, deleted.
    let bytes = std::fs::read(&files[2]).unwrap();
    std::fs::write(&files[2], &bytes[..bytes.len() * 2 / 3]).unwrap();
    let mut bytes = std::fs::read(&files[3]).unwrap();
    let at = bytes.len() / 2;
    let i = at
        + bytes[at..]
            .windows(8)
            .position(|w| w == b"\"input\":")
            .expect("a usage in the middle")
        + 8;
    bytes[i] = if bytes[i] == b'9' { b'8' } else { b'9' };
    std::fs::write(&files[3], &bytes).unwrap();
    touch_later(&files[3], 2);
    std::fs::copy(&files[5], &files[4]).unwrap();
    std::fs::remove_file(&files[6]).unwrap();
    assert_same(
        dir.path(),
        cache.path(),
        "shrunk, rewritten, replaced and deleted files",
    );

    // One and all threads, cached.
    let d = dir.path().to_str().unwrap();
    let one = run(Some(cache.path()), &["--threads", "1", "sessions", "--json", d]);
    let all = run(Some(cache.path()), &["sessions", "--json", d]);
    assert!(
        one.1 == all.1,
        "one thread and all threads print the same from the cache"
    );
}

#[test]
fn a_damaged_or_foreign_cache_is_discarded_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&repo().join("datasets").join("sample"), dir.path());
    let d = dir.path().to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let index = cache.path().join("index.bin");
    let (_, expected, _) = run(None, &["sessions", "--json", d]);
    run(Some(cache.path()), &["sessions", "--json", d]);

    // Garbage in the index.
    let good = std::fs::read(&index).unwrap();
    std::fs::write(&index, b"not a cache at all").unwrap();
    let (_, out, err) = run(Some(cache.path()), &["sessions", "--json", d]);
    assert!(out == expected, "a garbage index changes nothing");
    assert!(
        err.contains("ignoring the cache") && err.contains("not a pisa cache file"),
        "{err}"
    );
    // Truncated, and another format version.
    std::fs::write(&index, &good[..good.len() / 2]).unwrap();
    let (_, out, err) = run(Some(cache.path()), &["sessions", "--json", d]);
    assert!(out == expected);
    assert!(err.contains("does not decode"), "{err}");
    let mut other = good.clone();
    other[8] = other[8].wrapping_add(1);
    std::fs::write(&index, &other).unwrap();
    let (_, out, err) = run(Some(cache.path()), &["sessions", "--json", d]);
    assert!(out == expected);
    assert!(err.contains("another version of pisa"), "{err}");

    // A damaged entries blob, met when its file grew: parsed again, with a warning.
    run(Some(cache.path()), &["sessions", "--json", d]);
    for blob in std::fs::read_dir(cache.path().join("entries")).unwrap() {
        std::fs::write(blob.unwrap().path(), b"pisa\x00cch\x01\x00\x00\x00garbage").unwrap();
    }
    let f = &session_files(dir.path())[0];
    append(f, format!("{}\n", appended_line(f, 1)).as_bytes());
    let (_, expected, _) = run(None, &["sessions", "--json", d]);
    let (_, out, err) = run(Some(cache.path()), &["sessions", "--json", d]);
    assert!(out == expected, "a damaged blob changes nothing");
    assert!(err.contains("does not match its index"), "{err}");
}

/// The spills of the runs, kept in the cache folder.
fn spills(cache: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(cache.join("spills"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// A re-run reads an unchanged session's bulk from the spill of the run that wrote it and
/// writes only what changed; after many runs that each change a few files, the cache keeps a
/// bounded number of spills (the sparse ones are retired, their live sessions copied); a rows
/// run over unchanged files leaves the index alone; a damaged, cut or missing spill changes
/// nothing but a warning.
#[test]
fn spills_are_reused_bounded_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let generated = crate::support::generated("22", 24);
    copy_tree(generated.path(), dir.path());
    let d = dir.path().to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let fresh = || run(None, &["sessions", "--json", d]).1;
    let cached = || run(Some(cache.path()), &["sessions", "--json", d]);

    assert!(cached().1 == fresh(), "cold cache");
    let first = spills(cache.path());
    assert_eq!(first.len(), 1, "one run, one spill: {first:?}");
    let size = std::fs::metadata(&first[0]).unwrap().len();
    let index = cache.path().join("index.bin");
    // The index holds a summary per file (its table row); the facts and calls are in the spill.
    assert!(
        std::fs::metadata(&index).unwrap().len() < size,
        "the bulk is in the spill, not in the index"
    );
    // Unchanged: nothing written, not even by a command that wants rows.
    let written = std::fs::metadata(&index).unwrap().modified().unwrap();
    assert!(cached().1 == fresh(), "warm cache");
    let (code, _, err) = run(Some(cache.path()), &["daily", "--json", "-z", "UTC", d]);
    assert_eq!(code, crate::support::scan_exit_code(Path::new(d)), "{err}");
    assert_eq!(spills(cache.path()), first, "nothing new to keep");
    assert_eq!(
        std::fs::metadata(&index).unwrap().modified().unwrap(),
        written,
        "index kept"
    );

    // Each run appends to one file: a small spill per run, until the sparse ones are retired.
    let files = session_files(dir.path());
    for n in 0..14 {
        let f = &files[n % files.len()];
        append(f, format!("{}\n", appended_line(f, 100 + n)).as_bytes());
        let (_, out, err) = cached();
        assert!(out == fresh(), "run {n}: prints otherwise with the cache");
        assert!(!err.contains("cache"), "run {n}: {err}");
        let kept = spills(cache.path());
        assert!(kept.len() <= 8, "run {n}: {} spills kept", kept.len());
    }

    // A damaged spill, then a cut one, then none: read again, with a warning.
    let newest = || {
        spills(cache.path())
            .into_iter()
            .max_by_key(|p| std::fs::metadata(p).unwrap().len())
            .unwrap()
    };
    let big = newest();
    let mut bytes = std::fs::read(&big).unwrap();
    for b in bytes.iter_mut().step_by(509) {
        *b ^= 0x20;
    }
    std::fs::write(&big, &bytes).unwrap();
    let (_, out, err) = cached();
    assert!(out == fresh(), "a damaged spill changes nothing");
    assert!(err.contains("does not match its index"), "{err}");
    let big = newest();
    let len = std::fs::metadata(&big).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    let (_, out, err) = cached();
    assert!(out == fresh(), "a cut spill changes nothing");
    assert!(err.contains("does not match its index"), "{err}");
    for s in spills(cache.path()) {
        std::fs::remove_file(s).unwrap();
    }
    let (_, out, err) = cached();
    assert!(out == fresh(), "missing spills change nothing");
    assert!(err.contains("unreadable"), "{err}");
    let (_, out, err) = cached();
    assert!(out == fresh() && !err.contains("cache"), "and the cache heals: {err}");
}

/// `pisa bench --json`: every stage measured on the whole corpus, lines counted as `wc -l` does.
/// A run checks the parts of a cached bulk it reads, and only those: damage in a session's
/// full records (the last part of its bulk, read by exports, not by reports) leaves reports
/// silent and unchanged, and the export finds it and reads the file again.
#[test]
fn a_run_checks_the_parts_of_the_cache_it_reads() {
    let generated = crate::support::generated("23", 8);
    let file = session_files(generated.path())
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join(file.parent().unwrap().file_name().unwrap());
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(&file, folder.join(file.file_name().unwrap())).unwrap();
    let d = dir.path().to_str().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let daily = ["daily", "--json", "-z", "UTC", d];
    run(Some(cache.path()), &daily);
    // One session, so one bulk: the spill's last byte is in its records.
    let spill = spills(cache.path());
    assert_eq!(spill.len(), 1, "{spill:?}");
    let mut bytes = std::fs::read(&spill[0]).unwrap();
    *bytes.last_mut().unwrap() ^= 0x55;
    std::fs::write(&spill[0], &bytes).unwrap();
    for args in [&daily[..], &["sessions", "--json", d]] {
        let (_, fresh, _) = run(None, args);
        let (_, out, err) = run(Some(cache.path()), args);
        assert!(out == fresh, "{args:?} prints otherwise with the cache");
        assert!(!err.contains("cache"), "{args:?} reads the records: {err}");
    }
    let out = tempfile::tempdir().unwrap();
    let (fresh, cached) = (out.path().join("fresh"), out.path().join("cached"));
    run(None, &["export", "--out", fresh.to_str().unwrap(), d]);
    let (_, _, err) = run(Some(cache.path()), &["export", "--out", cached.to_str().unwrap(), d]);
    assert!(err.contains("does not match its index"), "{err}");
    for name in ["usage.parquet", "sessions.parquet"] {
        assert!(
            std::fs::read(fresh.join(name)).unwrap() == std::fs::read(cached.join(name)).unwrap(),
            "{name} differs"
        );
    }
}

#[test]
fn bench_measures_every_stage() {
    let d = repo().join("datasets").join("sample");
    let (code, out, err) = run(None, &["bench", "--json", "--runs", "1", d.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let b: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = b["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read",
            "map",
            "split",
            "parse-read",
            "parse-map",
            "pipeline-read",
            "pipeline-map",
            "cached"
        ]
    );
    let (mut files, mut bytes, mut lines) = (0u64, 0u64, 0u64);
    for e in walkdir::WalkDir::new(&d).into_iter().filter_map(Result::ok) {
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            let data = std::fs::read(e.path()).unwrap();
            files += 1;
            bytes += data.len() as u64;
            lines += data.iter().filter(|&&c| c == b'\n').count() as u64;
        }
    }
    assert_eq!(
        (b["files"].as_u64(), b["bytes"].as_u64(), b["lines"].as_u64()),
        (Some(files), Some(bytes), Some(lines))
    );
    for s in b["stages"].as_array().unwrap() {
        assert!(s["seconds"].as_f64().unwrap() > 0.0 && s["mbPerS"].is_number(), "{s}");
    }
}

/// Every command prints the same from maps as from reads (`--read-mode map` against `read`): on
/// the sample, the edge, hostile and error fixtures and a file big enough to be parsed by every
/// core, without a cache, and through a cache after appends (the appended bytes are mapped from
/// the old end of each grown file on).
#[test]
fn mapped_files_print_what_read_files_print() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&repo().join("datasets").join("sample"), &dir.path().join("sample"));
    for data in ["edge", "hostile", "pi-errors"] {
        copy_tree(&repo().join("tests").join("data").join(data), &dir.path().join(data));
    }
    let files = session_files(dir.path());
    let big = crate::support::big_session(&files);
    std::fs::create_dir_all(dir.path().join("--big--")).unwrap();
    std::fs::write(dir.path().join("--big--/big.jsonl"), &big).unwrap();
    let d = dir.path().to_str().unwrap();
    let same = |cache: Option<&Path>, when: &str| {
        for cmd in COMMANDS {
            let args = |mode| -> Vec<&str> { ["--read-mode", mode].iter().chain(*cmd).copied().chain([d]).collect() };
            let read = run(None, &args("read"));
            let mapped = run(cache, &args("map"));
            assert_eq!(read.0, mapped.0, "{when}: exit code of {cmd:?}");
            assert!(read.1 == mapped.1, "{when}: {cmd:?} prints otherwise from maps");
            assert_eq!(read.2, mapped.2, "{when}: stderr of {cmd:?}");
        }
    };
    same(None, "no cache");
    let cache = tempfile::tempdir().unwrap();
    same(Some(cache.path()), "cold cache");
    let files = session_files(dir.path());
    for (n, f) in files.iter().step_by(3).enumerate() {
        append(f, format!("{}\n", appended_line(f, n)).as_bytes());
        touch_later(f, 2);
    }
    same(Some(cache.path()), "grown files");
}
