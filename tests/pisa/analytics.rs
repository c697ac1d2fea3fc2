//! Reports, exports and SQL: every billed call counted once, so that every total equals the
//! sum of the oracle's per-file figures minus the fork copies, and exports that read back
//! the same in polars (Rust) and in Python's duckdb, polars and pyarrow.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde_json::Value;

use crate::support::{export, frames, generated, oracle, pisa, repo, scan_exit_code};

fn sample() -> PathBuf {
    repo().join("datasets").join("sample")
}

/// A folder scanned through the library with the usage frame's rows.
fn read_parquet(path: &Path) -> DataFrame {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetReader::new(file).finish().expect("readable Parquet")
}

/// A command's JSON; its last argument is the folder it reads, and it exits as a scan of that
/// folder must.
fn json_of(args: &[&str]) -> Value {
    let (code, out, err) = pisa(args);
    let dir = Path::new(args.last().expect("a folder"));
    assert_eq!(code, scan_exit_code(dir), "pisa {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("pisa {args:?} printed invalid JSON ({e}): {out}"))
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

fn strs(df: &DataFrame, name: &str) -> Vec<Option<String>> {
    df.column(name)
        .unwrap()
        .str()
        .unwrap()
        .iter()
        .map(|s| s.map(str::to_string))
        .collect()
}

fn f64s(df: &DataFrame, name: &str) -> Vec<f64> {
    df.column(name)
        .unwrap()
        .f64()
        .unwrap()
        .iter()
        .map(|x| x.unwrap_or(0.0))
        .collect()
}

/// The check of the issue: rows left out as copies are exactly the fork copies, the other rows
/// left out are subagent records whose call another file holds, and every report's totals equal
/// the oracle's per-file sums, plus the answers read from subagent transcripts (files the oracle
/// does not load), minus every row left out.
fn assert_counted_once(dir: &Path) {
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).expect("manifest")).unwrap();
    let files = manifest["files"].as_array().unwrap();
    let present: HashSet<&str> = files
        .iter()
        .filter(|f| f["expect"] == "ok")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let transcripts: HashSet<&str> = files
        .iter()
        .filter(|f| f["kind"] == "artifact")
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    // Fork → (entries copied from its source, whether that source is in the corpus).
    let forks: HashMap<&str, (u64, bool)> = files
        .iter()
        .filter_map(|f| {
            let src = f["forkOf"].as_str()?;
            let copied = f["features"]["copied_entries"].as_u64().unwrap_or(0);
            Some((f["path"].as_str().unwrap(), (copied, present.contains(src))))
        })
        .collect();
    assert!(forks.len() >= 3, "the corpus has forks");
    assert!(
        forks.values().any(|f| f.1) && forks.values().any(|f| !f.1),
        "forks with and without their source"
    );

    let out = export(dir, &[]);
    let usage = read_parquet(&out.path().join("usage.parquet"));
    let (file, origin, reason) = (
        strs(&usage, "file"),
        strs(&usage, "origin"),
        strs(&usage, "inherited_reason"),
    );
    let entry_id = strs(&usage, "entry_id");
    let index: Vec<u32> = usage
        .column("entry_index")
        .unwrap()
        .u32()
        .unwrap()
        .iter()
        .map(Option::unwrap)
        .collect();
    let inherited: Vec<bool> = usage
        .column("inherited")
        .unwrap()
        .bool()
        .unwrap()
        .iter()
        .map(Option::unwrap)
        .collect();
    let (mut copies, mut inherited_rows) = (0, 0);
    let mut reasons: HashMap<&str, usize> = HashMap::new();
    for i in 0..usage.height() {
        let f = file[i].as_deref().unwrap();
        let copied = forks.get(f).is_some_and(|&(n, _)| u64::from(index[i]) < n);
        let why = reason[i].as_deref();
        assert_eq!(
            inherited[i],
            why.is_some(),
            "{f} entry {}: inherited without a reason",
            index[i]
        );
        if let Some(why) = why {
            inherited_rows += 1;
            *reasons.entry(why).or_default() += 1;
            let from = origin[i].as_deref().unwrap();
            match why {
                "copy" => assert!(copied, "{f} entry {}: a copy but not a fork copy", index[i]),
                "child" | "transcript" => assert_eq!(from, "subagent", "{f} entry {}: {why}", index[i]),
                "session" => assert!(transcripts.contains(f), "{f}: a session's answer outside a transcript"),
                "repeat" => assert!(
                    (0..i).any(|j| file[j] == file[i] && entry_id[j] == entry_id[i]),
                    "{f} entry {}: a repeat of no earlier entry",
                    index[i]
                ),
                other => panic!("{f} entry {}: unknown reason {other}", index[i]),
            }
        }
        if copied && forks[f].1 {
            copies += 1;
            assert_eq!(
                why,
                Some("copy"),
                "{f} entry {}: copied from a scanned source",
                index[i]
            );
        }
    }
    assert!(copies > 10, "only {copies} copied rows");
    assert!(inherited_rows >= copies);
    if !transcripts.is_empty() {
        for why in ["child", "transcript", "session"] {
            assert!(
                reasons.get(why).is_some_and(|&n| n > 0),
                "no rows left out as {why}: {reasons:?}"
            );
        }
    }

    // Totals: the oracle's per-file sums, plus the transcripts' rows, minus the rows left out.
    let (mut tokens, mut cost) = (0.0, 0.0);
    for r in oracle(dir).iter().filter(|r| r["status"] == "ok") {
        tokens += r["stats"]["tokens"]["total"].as_f64().expect("total tokens");
        cost += r["stats"]["cost"].as_f64().expect("cost");
    }
    let in_transcript: BooleanChunked = file
        .iter()
        .map(|f| transcripts.contains(f.as_deref().unwrap()))
        .collect();
    let read = usage.filter(&in_transcript).unwrap();
    let left_out = usage
        .filter(usage.column("inherited").unwrap().bool().unwrap())
        .unwrap();
    for c in ["input", "output", "cache_read", "cache_write"] {
        tokens += f64s(&read, c).iter().sum::<f64>();
        tokens -= f64s(&left_out, c).iter().sum::<f64>();
    }
    cost += f64s(&read, "cost").iter().sum::<f64>();
    cost -= f64s(&left_out, "cost").iter().sum::<f64>();
    let d = dir.to_str().unwrap();
    for report in ["daily", "weekly", "monthly", "session", "model", "project", "kind"] {
        let doc = json_of(&[report, "--json", "--quiet", "-z", "UTC", d]);
        let t = &doc["totals"];
        assert_eq!(t["totalTokens"].as_f64().unwrap(), tokens, "{report} tokens");
        assert!(
            close(t["cost"].as_f64().unwrap(), cost),
            "{report} cost {} vs {cost}",
            t["cost"]
        );
        let rows: f64 = doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cost"].as_f64().unwrap())
            .sum();
        assert!(close(rows, cost), "{report}: rows add up to the total");
    }
    let doc = json_of(&["sessions", "--json", "--quiet", d]);
    assert!(close(doc["totals"]["cost"].as_f64().unwrap(), cost));
}

#[test]
fn each_billed_call_is_counted_once_in_the_sample() {
    assert_counted_once(&sample());
}

#[test]
fn each_billed_call_is_counted_once_in_generated_corpora() {
    for seed in ["31", "32"] {
        assert_counted_once(generated(seed, 40).path());
    }
}

#[test]
fn filters_select_days_projects_and_models() {
    let d = sample();
    let d = d.to_str().unwrap();
    let all = json_of(&["daily", "--json", "-q", "-z", "UTC", d]);
    let days: Vec<&str> = all["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert!(days.len() > 5);
    let (since, until) = (days[1], days[days.len() - 2]);
    let compact_until = until.replace('-', "");
    let part = json_of(&[
        "daily",
        "--json",
        "-q",
        "-z",
        "UTC",
        "--since",
        since,
        "--until",
        &compact_until,
        d,
    ]);
    let kept: Vec<&str> = part["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(kept, days[1..days.len() - 1].to_vec());
    // A zone far from UTC moves calls across midnight.
    let auckland = json_of(&["daily", "--json", "-q", "-z", "Pacific/Auckland", d]);
    assert_ne!(auckland["rows"], all["rows"]);
    assert!(close(
        auckland["totals"]["cost"].as_f64().unwrap(),
        all["totals"]["cost"].as_f64().unwrap()
    ));
    // Project and model filters.
    let by_model = json_of(&["model", "--json", "-q", "-z", "UTC", "--model", "OPUS", d]);
    let keys: Vec<&str> = by_model["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert!(!keys.is_empty() && keys.iter().all(|k| k.contains("opus")), "{keys:?}");
    let by_project = json_of(&["project", "--json", "-q", "-z", "UTC", "--project", "pisa", d]);
    let keys: Vec<&str> = by_project["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert!(!keys.is_empty() && keys.iter().all(|k| k.contains("pisa")), "{keys:?}");
    // Bad input is a usage error.
    for bad in [["--since", "2026-13-01"], ["-z", "Mars/Olympus"]] {
        let (code, _, err) = pisa(&["daily", "-q", bad[0], bad[1], d]);
        assert_eq!(code, 1, "{err}");
        assert!(!err.is_empty());
    }
}

#[test]
fn breakdown_rows_add_up_to_their_row() {
    let d = sample();
    let doc = json_of(&[
        "monthly",
        "--json",
        "-q",
        "-z",
        "UTC",
        "--breakdown",
        d.to_str().unwrap(),
    ]);
    for row in doc["rows"].as_array().unwrap() {
        let models = row["models"].as_array().expect("models per row");
        for k in ["cost", "totalTokens", "requests", "compactions"] {
            let sum: f64 = models.iter().map(|m| m[k].as_f64().unwrap()).sum();
            assert!(close(sum, row[k].as_f64().unwrap()), "{k} of {}", row["key"]);
        }
    }
}

#[test]
fn exports_read_back_with_the_documented_types() {
    let d = sample();
    let out = export(&d, &["--source", "test-machine"]);
    let (corpus, frames) = frames(
        &d,
        &pisa::pricing::Pricing::default(),
        pisa::pricing::CostMode::Recorded,
    );
    let schemas = [
        ("usage", pisa::frame::USAGE),
        ("sessions", pisa::frame::SESSIONS),
        ("compactions", pisa::frame::COMPACTIONS),
        ("files", pisa::frame::FILES),
    ];
    for ((name, df), (_, cols)) in frames.named().into_iter().zip(schemas) {
        let back = read_parquet(&out.path().join(format!("{name}.parquet")));
        assert!(back.equals_missing(df), "{name}.parquet reads back equal");
        assert!(df.height() > 0, "{name} has rows");
        let names: Vec<&str> = back.get_column_names().iter().map(|n| n.as_str()).collect();
        assert_eq!(names, cols.iter().map(|c| c.name).collect::<Vec<_>>(), "{name} columns");
        for c in cols {
            let dtype = back.column(c.name).unwrap().dtype().clone();
            let expected = match c.ty {
                pisa::frame::Ty::Str => DataType::String,
                pisa::frame::Ty::Bool => DataType::Boolean,
                pisa::frame::Ty::U32 => DataType::UInt32,
                pisa::frame::Ty::U64 => DataType::UInt64,
                pisa::frame::Ty::I64 => DataType::Int64,
                pisa::frame::Ty::F64 => DataType::Float64,
                pisa::frame::Ty::Time => DataType::Datetime(TimeUnit::Milliseconds, Some(TimeZone::UTC)),
            };
            assert_eq!(dtype, expected, "{name}.{}", c.name);
        }
    }
    assert_eq!(
        frames.files.height(),
        corpus.sessions.len() + corpus.rejected.len(),
        "every file has a row"
    );
    // Nothing half-written is left behind.
    let names: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");

    // CSV and NDJSON: one line per row (plus the CSV header).
    for (format, extra) in [("csv", 1), ("ndjson", 0)] {
        let out = export(&d, &["--format", format]);
        let text = std::fs::read_to_string(out.path().join(format!("usage.{format}"))).unwrap();
        assert_eq!(text.lines().count(), frames.usage.height() + extra, "{format}");
    }
}

#[test]
fn monthly_partitions_form_one_table_and_replace_the_previous_export() {
    let d = sample();
    let out = export(&d, &["--partition", "month"]);
    let usage = out.path().join("usage");
    // A stale partition from an earlier export must disappear.
    std::fs::create_dir_all(usage.join("month=1999-01")).unwrap();
    let (code, _, err) = pisa(&[
        "export",
        "-q",
        "--partition",
        "month",
        "--out",
        out.path().to_str().unwrap(),
        d.to_str().unwrap(),
    ]);
    assert_eq!(code, scan_exit_code(&d), "{err}");
    let mut rows = 0;
    let mut months = Vec::new();
    for e in std::fs::read_dir(&usage).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let month = name.strip_prefix("month=").expect("hive folder name");
        let part = read_parquet(&e.path().join("part-0.parquet"));
        assert!(part.column("month").is_err(), "the partition column lives in the path");
        let ts = part.column("timestamp").unwrap().datetime().unwrap().clone();
        for t in ts.physical().iter().flatten() {
            let m = jiff::Timestamp::from_millisecond(t)
                .unwrap()
                .strftime("%Y-%m")
                .to_string();
            assert_eq!(m, month);
        }
        rows += part.height();
        months.push(month.to_string());
    }
    assert!(
        !months.contains(&"1999-01".to_string()),
        "stale partition kept: {months:?}"
    );
    assert!(months.len() >= 2);
    let (_, frames) = frames(
        &d,
        &pisa::pricing::Pricing::default(),
        pisa::pricing::CostMode::Recorded,
    );
    assert_eq!(rows, frames.usage.height());
}

/// A frame that cannot be written fails the export, and the frames written beside it leave no
/// temporary file behind: here `sessions.parquet` is a folder, so its file cannot be renamed
/// into place while the usage frame is being written.
#[test]
fn a_failed_export_leaves_no_temporary_files() {
    let d = sample();
    for partition in [None, Some("month")] {
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(out.path().join("sessions.parquet")).unwrap();
        let mut args = vec![
            "export",
            "-q",
            "--out",
            out.path().to_str().unwrap(),
            d.to_str().unwrap(),
        ];
        if let Some(p) = partition {
            args.extend(["--partition", p]);
        }
        let (code, _, err) = pisa(&args);
        assert_eq!(code, 1, "{partition:?}: {err}");
        assert!(err.contains("sessions.parquet"), "{partition:?}: {err}");
        let mut names: Vec<String> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // The files that were finished stay; nothing half-written does.
        assert!(names.iter().all(|n| !n.starts_with('.')), "{partition:?}: {names:?}");
        assert!(
            !names.contains(&"usage.parquet".to_string()),
            "{partition:?}: {names:?}"
        );
        assert!(!names.contains(&"usage".to_string()), "{partition:?}: {names:?}");
    }
}

#[test]
fn python_readers_agree_with_the_export() {
    let d = sample();
    let flat = export(&d, &[]);
    let parts = export(&d, &["--partition", "month"]);
    let expected = json_of(&[
        "query",
        "--json",
        "-q",
        "SELECT count(*) AS n, sum(cost) AS cost, sum(input + output + cache_read + cache_write) AS tokens, \
         sum(CASE WHEN inherited THEN 0 ELSE cost END) AS own_cost FROM usage",
        d.to_str().unwrap(),
    ]);
    let script = repo().join("tests").join("pisa").join("read_export.py");
    let out = crate::support::test_env()
        .python()
        .arg(&script)
        .arg(flat.path())
        .arg(parts.path())
        .arg(expected[0].to_string())
        .output()
        .expect("run read_export.py");
    assert!(
        out.status.success(),
        "{} failed:\n{}{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    for reader in ["duckdb", "polars", "pyarrow"] {
        assert!(said.contains(&format!("{reader}: ok")), "{said}");
    }
}

/// The calls read back in windows of files (the next window read on the thread pool while the
/// calling thread visits one) come in the usage frame's order, each with what was made of it
/// beside its price, as each file read on its own gives them; a visit that fails stops there.
#[test]
fn calls_read_back_in_windows_come_in_order() {
    let d = generated("31", 200);
    let corpus = pisa::corpus::scan(&[d.path().to_path_buf()], &pisa::corpus::Quiet, None).expect("the scan runs");
    let pricing = pisa::pricing::Pricing::default();
    let files = corpus.call_files();
    // Windows hold 64 files at most.
    assert!(files.len() > 3 * 64, "several windows: {} files", files.len());
    let mut expected = Vec::new();
    for f in &files {
        for call in corpus.billed(f.calls).expect("read back").iter() {
            expected.push((f.file().rel.to_string(), call.ms, call.cost.to_bits()));
        }
    }
    let mut seen = Vec::new();
    let made = |call: &pisa::corpus::billed::Billed<'_>| (call.ms, call.cost.to_bits());
    pisa::frame::each_call_with(&corpus, &pricing, pisa::pricing::CostMode::Auto, made, |row, made| {
        assert_eq!(made, (row.call.ms, row.call.cost.to_bits()), "made of its own call");
        seen.push((row.file.rel.to_string(), row.call.ms, row.call.cost.to_bits()));
    })
    .expect("read back");
    assert!(expected.len() > 1_000, "{} calls", expected.len());
    assert!(seen == expected, "the calls in another order, or others");
    let mut visited = 0;
    let stopped = corpus.each_billed(|_| {
        visited += 1;
        match visited {
            100 => Err(std::io::Error::other("stop")),
            _ => Ok(()),
        }
    });
    assert_eq!(stopped.map_err(|e| e.to_string()), Err("stop".to_string()));
    assert_eq!(visited, 100, "no file is visited after a failed visit");
}

/// The usage frame written in many small batches is the frame built whole: the same rows in
/// Parquet (one file and by month), and the same bytes in CSV and NDJSON.
#[test]
fn batched_exports_equal_the_whole_frame() {
    let d = generated("23", 30);
    let pricing = pisa::pricing::Pricing::default();
    let mode = pisa::pricing::CostMode::Auto;
    let (corpus, frames) = frames(d.path(), &pricing, mode);
    assert!(frames.usage.height() > 100, "enough rows for many batches");
    let export_with =
        |batch_rows, format, partition| export_corpus(&corpus, &pricing, mode, batch_rows, format, partition);
    use pisa::export::{Format, Partition};
    // Batches of 64 rows are built in pieces of a few rows (a part of 16 rows or more is
    // split in two), batches of 7 mostly in one piece each.
    for rows in [7, 64] {
        let small = export_with(rows, Format::Parquet, Partition::None);
        let back = read_parquet(&small.path().join("usage.parquet"));
        assert!(
            back.equals_missing(&frames.usage),
            "usage.parquet in batches of {rows} reads back as the frame"
        );
    }
    let monthly = export_with(7, Format::Parquet, Partition::Month);
    let parts: Vec<PathBuf> = walk(&monthly.path().join("usage"));
    assert!(parts.len() >= 2, "several months: {parts:?}");
    let rows: usize = parts.iter().map(|p| read_parquet(p).height()).sum();
    assert_eq!(rows, frames.usage.height(), "every row in one month");
    for format in [Format::Csv, Format::Ndjson] {
        for partition in [Partition::None, Partition::Month] {
            let (a, b) = (
                export_with(7, format, partition),
                export_with(1 << 20, format, partition),
            );
            for entry in walk(a.path()) {
                let rel = entry.strip_prefix(a.path()).expect("inside");
                let (x, y) = (
                    std::fs::read(&entry).expect("read"),
                    std::fs::read(b.path().join(rel)).expect("read"),
                );
                assert!(x == y, "{} differs between batch sizes", rel.display());
            }
        }
    }
}

/// The export encodes and compresses a row group's columns in parallel itself; its files are
/// byte for byte what polars' own writer makes of the same frames with the same settings.
#[test]
fn exported_parquet_is_what_polars_writes() {
    let d = generated("29", 30);
    let pricing = pisa::pricing::Pricing::default();
    let mode = pisa::pricing::CostMode::Auto;
    let (corpus, frames) = frames(d.path(), &pricing, mode);
    use pisa::export::{Format, Partition};
    let out = export_corpus(&corpus, &pricing, mode, 1 << 20, Format::Parquet, Partition::None);
    for (name, df) in frames.named() {
        let bytes = pisa::export::polars_parquet(&mut df.clone()).expect("polars writes the frame");
        let ours = std::fs::read(out.path().join(format!("{name}.parquet"))).expect("read");
        assert!(df.height() > 10, "{name}: {} rows", df.height());
        assert!(
            ours == bytes,
            "{name}.parquet differs from polars' own ({} against {} bytes)",
            ours.len(),
            bytes.len()
        );
    }
}

/// `corpus` exported (source `test-machine`) into a new folder, `batch_rows` usage rows a batch.
fn export_corpus(
    corpus: &pisa::Corpus,
    pricing: &pisa::pricing::Pricing,
    mode: pisa::pricing::CostMode,
    batch_rows: usize,
    format: pisa::export::Format,
    partition: pisa::export::Partition,
) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("temp dir");
    let what = pisa::export::Exported {
        corpus,
        source: "test-machine",
        pricing,
        mode,
        batch_rows,
        last_use: false,
    };
    pisa::export::export(&what, out.path(), format, partition).expect("the export runs");
    out
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn sql_queries_run_over_all_four_frames() {
    let d = sample();
    let d = d.to_str().unwrap();
    let doc = json_of(&[
        "query",
        "--json",
        "-q",
        "SELECT * FROM (SELECT count(*) AS calls FROM usage WHERE NOT inherited) a \
         CROSS JOIN (SELECT count(*) AS sessions FROM sessions) b \
         CROSS JOIN (SELECT count(*) AS compactions FROM compactions) c \
         CROSS JOIN (SELECT count(*) AS rejected FROM files WHERE status = 'rejected') d \
         CROSS JOIN (SELECT count(*) AS not_sessions FROM files WHERE status = 'not_session') e",
        d,
    ]);
    let daily = json_of(&["daily", "--json", "-q", "-z", "UTC", d]);
    assert_eq!(doc[0]["calls"], daily["totals"]["requests"]);
    assert_eq!(doc[0]["sessions"], 45);
    assert_eq!(doc[0]["rejected"], 4, "sessions Pi cannot load");
    assert_eq!(doc[0]["not_sessions"], 2, "a stray log and a subagent's file");
    assert!(doc[0]["compactions"].as_u64().unwrap() >= 32);
    let (code, out, _) = pisa(&[
        "query",
        "--csv",
        "-q",
        "SELECT origin, count(*) AS n FROM usage GROUP BY origin ORDER BY origin",
        d,
    ]);
    assert_eq!(code, 2, "the sample holds damaged files");
    assert!(out.starts_with("origin,n\nassistant,"), "{out}");
    let (code, _, err) = pisa(&["query", "-q", "SELECT nope FROM usage", d]);
    assert_eq!(code, 1);
    assert!(err.contains("query"), "{err}");
}

/// Every frame's `source` column holds `--source`, else the host name, on every row.
#[test]
fn the_source_column_names_the_machine() {
    let d = sample();
    let out = export(&d, &["--source", "alice@laptop"]);
    for name in ["usage", "sessions", "compactions", "files"] {
        let df = read_parquet(&out.path().join(format!("{name}.parquet")));
        assert_eq!(df.get_column_names()[0].as_str(), "source", "{name}");
        let values = df.column("source").unwrap().as_materialized_series().clone();
        assert_eq!(values.n_unique().unwrap(), 1, "{name}: one source");
        assert_eq!(values.str().unwrap().get(0), Some("alice@laptop"), "{name}");
        assert_eq!(values.null_count(), 0);
    }
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let d = d.to_str().unwrap();
    let sql = "SELECT DISTINCT source FROM usage";
    assert_eq!(
        json_of(&["query", "--json", "-q", sql, d]),
        serde_json::json!([{ "source": host }])
    );
    assert_eq!(
        json_of(&["query", "--json", "-q", "--source", "bob", sql, d]),
        serde_json::json!([{ "source": "bob" }])
    );
}

#[test]
fn readme_documents_the_schemas() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for cols in [
        pisa::frame::USAGE,
        pisa::frame::SESSIONS,
        pisa::frame::COMPACTIONS,
        pisa::frame::FILES,
    ] {
        let table = pisa::frame::markdown(cols);
        assert!(
            readme.contains(&table),
            "README lacks the current schema table:\n{table}"
        );
    }
}

/// Every report on the bundled sample, with the time zone fixed.
#[test]
fn reports_on_the_sample() {
    let d = sample();
    let d = d.to_str().unwrap();
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for (name, args) in [
            ("report_daily", vec!["daily", "-z", "UTC"]),
            (
                "report_daily_auckland_range",
                vec![
                    "daily",
                    "-z",
                    "Pacific/Auckland",
                    "--since",
                    "20260601",
                    "--until",
                    "2026-06-30",
                ],
            ),
            ("report_weekly", vec!["weekly", "-z", "UTC"]),
            ("report_monthly_breakdown", vec!["monthly", "-z", "UTC", "--breakdown"]),
            ("report_session", vec!["session", "-z", "UTC"]),
            ("report_model", vec!["model", "-z", "UTC"]),
            ("report_project_asc", vec!["project", "-z", "UTC", "--order", "asc"]),
            ("report_kind", vec!["kind", "-z", "UTC"]),
            ("report_compactions", vec!["compactions", "-z", "UTC"]),
            ("report_daily_csv", vec!["daily", "-z", "UTC", "--csv"]),
            (
                "report_model_json",
                vec!["model", "-z", "UTC", "--json", "--project", "api"],
            ),
        ] {
            let mut a = args.clone();
            a.extend(["-q", d]);
            let (code, out, err) = pisa(&a);
            assert_eq!(code, 2, "the sample has rejected files: {err}");
            insta::assert_snapshot!(name, out);
        }
    });
}

/// Prints the README's schema tables: `cargo test print_schema_tables -- --ignored --nocapture`.
#[test]
#[ignore = "prints the README's schema section"]
fn print_schema_tables() {
    for (name, cols) in [
        ("usage", pisa::frame::USAGE),
        ("sessions", pisa::frame::SESSIONS),
        ("compactions", pisa::frame::COMPACTIONS),
        ("files", pisa::frame::FILES),
    ] {
        println!("#### `{name}`\n\n{}", pisa::frame::markdown(cols));
    }
}

/// Costs are floating-point sums: they must be added in one fixed order, whatever the threads.
#[test]
fn reports_are_identical_on_every_run_and_thread_count() {
    let d = sample();
    let d = d.to_str().unwrap();
    for report in [
        vec!["monthly", "--json", "--breakdown"],
        vec!["session", "--csv"],
        vec!["compactions", "--json"],
    ] {
        let mut outputs = Vec::new();
        for threads in ["1", "2", "4", "4"] {
            let mut a = vec!["--threads", threads];
            a.extend(&report);
            a.extend(["-q", "-z", "UTC", d]);
            let (code, out, err) = pisa(&a);
            assert_eq!(code, 2, "{err}");
            outputs.push(out);
        }
        assert!(
            outputs.windows(2).all(|w| w[0] == w[1]),
            "{report:?} changed between runs"
        );
    }
}

/// A line written twice (same entry id, same call) is one call: Pi's own figures count it twice,
/// pisa's totals once, and the usage frame says why the second is left out.
#[test]
fn a_line_written_twice_is_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let answer = r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-05-01T10:00:02.000Z","message":{"role":"assistant","content":[],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":100,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":110,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.01}},"stopReason":"stop","timestamp":1777629602000}}"#;
    let lines = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-05-01T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        answer,
        answer,
    ];
    let file = dir.path().join("--p--").join("2026-05-01T10-00-00-000Z_s.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let d = dir.path().to_str().unwrap();
    let doc = crate::support::pisa_json(dir.path());
    let s = &doc["sessions"][0];
    assert_eq!(s["stats"]["tokens"]["total"], 220, "Pi counts both lines: {s}");
    assert_eq!(
        (s["own"]["total"].as_u64(), s["own"]["inheritedCalls"].as_u64()),
        (Some(110), Some(1))
    );
    assert_eq!(doc["totals"]["total"], 110);
    let out = export(dir.path(), &[]);
    let usage = read_parquet(&out.path().join("usage.parquet"));
    assert_eq!(strs(&usage, "inherited_reason"), [None, Some("repeat".to_string())]);
    let daily = json_of(&["daily", "--json", "-q", "-z", "UTC", d]);
    assert_eq!(daily["totals"]["totalTokens"], 110);
}

/// A scan for a report keeps only what reports read of each call, a scan for an export only the
/// full records, a scan for `sessions` neither: the same calls, totals, owned and inherited calls
/// per session, report rows and records as a scan that keeps both, and not the other form
/// (asking for it is an error, never an empty list). Through the cache both are kept anyway,
/// for a later command to find: each scan in turn finds the form its command reads there, and
/// is refused the other (which it did not check against its hash).
#[test]
fn scans_keep_the_same_calls_in_the_forms_their_command_reads() {
    use pisa::corpus::{Corpus, Keep, Quiet, scan_keeping};
    let roots = [sample()];
    let all = scan_keeping(&roots, &Quiet, None, Keep::All).unwrap();
    let reports = scan_keeping(&roots, &Quiet, None, Keep::Reports).unwrap();
    let records = scan_keeping(&roots, &Quiet, None, Keep::Records).unwrap();
    let totals = scan_keeping(&roots, &Quiet, None, Keep::Totals).unwrap();
    let sessions = |c: &Corpus| {
        let each = c.sessions.iter();
        each.map(|s| format!("{} {:?} {:?} {:?}", s.rel, s.row.own, s.calls.own, s.calls.inherited))
            .collect::<Vec<_>>()
    };
    assert!(all.inherited_calls > 0, "the sample has forks");
    for c in [&reports, &records, &totals] {
        assert_eq!(format!("{:?}", all.totals), format!("{:?}", c.totals));
        assert_eq!((all.calls, all.inherited_calls), (c.calls, c.inherited_calls));
        assert_eq!(sessions(c), sessions(&all));
    }
    let rows = |c: &Corpus| {
        let mut rows = Vec::new();
        c.each_billed(|f| {
            rows.push(format!("{} {:?}", f.file.rel, f.read));
            Ok::<_, std::io::Error>(())
        })
        .map(|()| rows)
    };
    let full = |c: &Corpus| {
        let mut full = Vec::new();
        c.each_file(|f| {
            full.push(format!("{} {:?}", f.file.rel, f.read));
            Ok::<_, std::io::Error>(())
        })
        .map(|()| full)
    };
    let (all_rows, all_full) = (rows(&all).unwrap(), full(&all).unwrap());
    assert!(all_full.len() > 10, "{} files with calls", all_full.len());
    assert_eq!(rows(&reports).unwrap(), all_rows);
    assert!(full(&reports).is_err(), "a scan for reports has no records to give");
    assert_eq!(full(&records).unwrap(), all_full);
    assert!(
        rows(&records).is_err(),
        "a scan for an export has no report rows to give"
    );
    assert!(
        rows(&totals).is_err() && full(&totals).is_err(),
        "a scan for sessions keeps neither"
    );
    let dir = tempfile::tempdir().unwrap();
    for keep in [Keep::Reports, Keep::Records, Keep::Totals, Keep::Reports] {
        let cache = pisa::corpus::cache::Cache::open(dir.path());
        let cached = scan_keeping(&roots, &Quiet, Some(&cache), keep).unwrap();
        cache.save(&roots).unwrap();
        let reads = (matches!(keep, Keep::Reports), matches!(keep, Keep::Records));
        assert_eq!(rows(&cached).ok(), reads.0.then(|| all_rows.clone()), "{keep:?}");
        assert_eq!(full(&cached).ok(), reads.1.then(|| all_full.clone()), "{keep:?}");
    }
}
