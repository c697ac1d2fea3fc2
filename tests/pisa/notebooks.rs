//! The notebook and the scale-out examples, run as a user would: `notebooks/pi-usage.ipynb`
//! executes headless on an export and draws every figure, and DuckDB and Spark reading
//! partitioned exports (alone and pooled as a shared bucket) say what `pisa monthly` says.
//! They run in the test environment's Python (`scripts/test-env`), with Java for Spark.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::support::{export, generated, pisa, repo};

/// Run a Python script of the repository; its stdout, or a panic with everything it said.
fn python<S: AsRef<OsStr>>(script: &[&str], args: &[S]) -> String {
    let path: PathBuf = script.iter().fold(repo(), |p, part| p.join(part));
    let out = crate::support::test_env()
        .python()
        .arg(&path)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e})", path.display()));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{} exited {:?}:\n{stdout}\n{stderr}",
        path.display(),
        out.status.code()
    );
    stdout.into_owned()
}

/// Execute the notebook against an export; every figure must be a non-empty PNG.
fn assert_notebook_runs(export: &Path) {
    let said = python(
        &["notebooks", "run_notebook.py"],
        &[export.as_os_str(), "--timeout".as_ref(), "240".as_ref()],
    );
    eprint!("{said}");
    assert!(said.contains("notebook: ok (7 figures"), "{said}");
}

#[test]
fn notebook_draws_every_figure_from_the_sample() {
    let out = export(&repo().join("datasets").join("sample"), &["--source", "sample"]);
    assert_notebook_runs(out.path());
}

#[test]
fn notebook_reads_a_partitioned_export() {
    let corpus = generated("11", 60);
    let out = export(corpus.path(), &["--partition", "month"]);
    assert!(out.path().join("usage").is_dir() && !out.path().join("usage.parquet").exists());
    assert_notebook_runs(out.path());
}

/// The examples' per-month tokens and cost equal the report's: tokens and requests exactly,
/// cost to 1e-9 relative, for each export alone and for two pooled under their sources.
#[test]
fn duckdb_and_spark_totals_equal_the_monthly_report() {
    let corpus = generated("7", 60);
    let alice = export(corpus.path(), &["--partition", "month", "--source", "alice-laptop"]);
    let build = export(corpus.path(), &["--partition", "month", "--source", "build-server"]);
    let (code, report, err) = pisa(&[
        "monthly",
        "--json",
        "--quiet",
        "-z",
        "UTC",
        corpus.path().to_str().unwrap(),
    ]);
    assert_eq!(
        code,
        crate::support::scan_exit_code(corpus.path()),
        "pisa monthly: {err}"
    );
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), report).expect("write the report");
    let said = python(
        &["examples", "check_totals.py"],
        &[file.path(), alice.path(), build.path()],
    );
    eprint!("{said}");
    for line in [
        "duckdb export alice-laptop: ok",
        "duckdb export build-server: ok",
        "duckdb bucket: ok (2 source(s)",
        "spark export alice-laptop: ok",
        "spark export build-server: ok",
        "spark bucket: ok (2 source(s)",
    ] {
        assert!(said.contains(line), "missing {line:?} in:\n{said}");
    }
}
