//! `pisa bench`: the throughput of each stage on a corpus, from reading the bytes to the
//! whole pipeline and a re-run from the cache, each on every core.

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;

use pisa::corpus::cache::Cache;
use pisa::corpus::{Keep, Quiet, analyze_files};
use pisa::parse::Scratch;
use pisa::scan::map::{self, Mapped, ReadMode};
use pisa::scan::{self, FoundFile};

/// One measured stage.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stage {
    pub name: &'static str,
    pub what: &'static str,
    /// Median wall seconds.
    pub seconds: f64,
    /// Every run's wall seconds.
    pub runs: Vec<f64>,
    pub mb_per_s: f64,
}

/// The corpus and its stages.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bench {
    pub files: usize,
    pub bytes: u64,
    pub lines: u64,
    pub threads: usize,
    pub stages: Vec<Stage>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn timed<T>(runs: usize, mut f: impl FnMut() -> T) -> (Vec<f64>, T) {
    let mut times = Vec::with_capacity(runs);
    let mut last = None;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let out = f();
        times.push(t.elapsed().as_secs_f64());
        last = Some(out);
    }
    (times, last.expect("at least one run"))
}

/// Read every file into a reused buffer: the floor of getting the bytes.
fn read_all(files: &[FoundFile]) -> u64 {
    files
        .par_iter()
        .map_init(Vec::new, |buf, f| {
            let mut total = 0;
            if let Ok(mut h) = std::fs::File::open(&f.path) {
                buf.resize(scan::source::CHUNK, 0);
                while let Ok(n @ 1..) = h.read(buf) {
                    total += n as u64;
                }
            }
            total
        })
        .sum()
}

/// Read every file in pieces of whole lines, as the pipeline does, and count its lines.
fn split_all(files: &[FoundFile]) -> u64 {
    files
        .par_iter()
        .map_init(Vec::new, |buf, f| {
            let mut lines = 0;
            if let Ok(mut h) = std::fs::File::open(&f.path)
                && let Ok(m) = h.metadata()
            {
                // Newlines, as `wc -l` counts them.
                let _ = scan::source::read_lines(&mut h, 0, m.len(), buf, scan::source::CHUNK, |piece| {
                    lines += memchr::memchr_iter(b'\n', piece).count() as u64;
                });
            }
            lines
        })
        .sum()
}

/// Map every file as the pipeline maps settled ones, and count its lines.
fn map_all(files: &[FoundFile]) -> u64 {
    files
        .par_iter()
        .map(|f| {
            let Ok(h) = std::fs::File::open(&f.path) else { return 0 };
            let len = h.metadata().map_or(0, |m| m.len());
            match Mapped::new(&h, 0, len) {
                Ok(Some(m)) => memchr::memchr_iter(b'\n', m.bytes()).count() as u64,
                _ => 0,
            }
        })
        .sum()
}

/// Read and parse every file (no tree, no projection, no accounting).
fn parse_all(files: &[FoundFile]) -> u64 {
    files
        .par_iter()
        .map_init(Scratch::default, |scratch, f| {
            std::fs::File::open(&f.path)
                .and_then(|mut h| {
                    let size = h.metadata()?.len();
                    scratch.read_file(&mut h, size, None)
                })
                .map_or(0, |(p, _, _)| p.entries.len() as u64)
        })
        .sum()
}

/// Map and parse every file (no tree, no projection, no accounting).
fn parse_all_mapped(files: &[FoundFile]) -> u64 {
    files
        .par_iter()
        .map_init(Scratch::default, |scratch, f| {
            let Ok(h) = std::fs::File::open(&f.path) else { return 0 };
            let len = h.metadata().map_or(0, |m| m.len());
            match Mapped::new(&h, 0, len) {
                Ok(Some(m)) => scratch
                    .parse_bytes(m.bytes(), None, |done| m.release(done))
                    .0
                    .entries
                    .len() as u64,
                _ => 0,
            }
        })
        .sum()
}

/// Time `a` and `b` `runs` times each, taking turns, so that a machine whose speed drifts
/// meanwhile weighs on both alike.
fn timed_pair<T, U>(runs: usize, mut a: impl FnMut() -> T, mut b: impl FnMut() -> U) -> (Vec<f64>, Vec<f64>) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        ta.extend(timed(1, &mut a).0);
        tb.extend(timed(1, &mut b).0);
    }
    (ta, tb)
}

/// The pipeline with files read in `mode`.
fn pipeline(files: &[FoundFile], mode: ReadMode) {
    map::set_mode(mode);
    let _ = analyze_files(files, &Quiet, None, Keep::Totals);
}

/// Measure every stage on the files under `roots`, `runs` times each.
pub fn run(roots: &[PathBuf], runs: usize) -> Bench {
    let found = scan::discover(roots);
    let files = found.files;
    let bytes: u64 = files.iter().map(|f| f.size).sum();
    let mb = bytes as f64 / 1e6;
    let stage = |name, what, times: Vec<f64>| {
        let seconds = median(times.clone());
        Stage {
            name,
            what,
            seconds,
            runs: times,
            mb_per_s: if seconds > 0.0 { mb / seconds } else { f64::INFINITY },
        }
    };
    let mut stages = Vec::new();
    let (t, _) = timed(runs, || read_all(&files));
    stages.push(stage("read", "read every byte into memory", t));
    let (t, _) = timed(runs, || map_all(&files));
    stages.push(stage("map", "memory-map every file, count lines", t));
    let (t, lines) = timed(runs, || split_all(&files));
    stages.push(stage("split", "read in pieces of whole lines, count lines", t));
    let (read, mapped) = timed_pair(runs, || parse_all(&files), || parse_all_mapped(&files));
    stages.push(stage("parse-read", "read, lines to typed entries (simd-json)", read));
    stages.push(stage("parse-map", "map, lines to typed entries (simd-json)", mapped));
    let mode = map::mode();
    let (read, mapped) = timed_pair(
        runs,
        || pipeline(&files, ReadMode::Read),
        || pipeline(&files, ReadMode::Map),
    );
    map::set_mode(mode);
    stages.push(stage("pipeline-read", "the pipeline, every file read", read));
    stages.push(stage("pipeline-map", "the pipeline, every file mapped", mapped));
    if let Ok(dir) = tempfile::tempdir() {
        let fill = Cache::open(dir.path());
        let _ = analyze_files(&files, &Quiet, Some(&fill), Keep::Reports);
        let _ = fill.save(roots);
        let (t, _) = timed(runs, || {
            let cache = Cache::open(dir.path());
            let corpus = analyze_files(&files, &Quiet, Some(&cache), Keep::Reports);
            let _ = cache.save(roots);
            corpus
        });
        stages.push(stage(
            "cached",
            "the pipeline again, nothing changed, from the cache",
            t,
        ));
    }
    Bench {
        files: files.len(),
        bytes,
        lines,
        threads: rayon::current_num_threads(),
        stages,
    }
}

/// The table `pisa bench` prints.
pub fn table(b: &Bench) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header(["stage", "what", "seconds", "MB/s", "× read"]);
    let read = b.stages.first().map_or(0.0, |s| s.seconds);
    for s in &b.stages {
        t.add_row([
            s.name.to_string(),
            s.what.to_string(),
            format!("{:.3}", s.seconds),
            format!("{:.0}", s.mb_per_s),
            if read > 0.0 {
                format!("{:.2}", s.seconds / read)
            } else {
                "-".into()
            },
        ]);
    }
    t
}
