//! Throughput of the read → project → usage path, in bytes per second.
//!
//! `parse` and `analyze` run on the session files Pi wrote (`tests/data/pi-mono`); `corpus`
//! runs the whole parallel pipeline on a generated directory (seed 42, realistic scale,
//! `PISA_BENCH_MB` megabytes, default 64), made once under `target/bench-corpus-*`.

use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pisa::parse::{Scratch, parse_file};

fn fixtures() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pi-mono");
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .map(|e| std::fs::read(e.path()).expect("read fixture"))
                .collect()
        })
        .unwrap_or_default();
    files.sort_by_key(Vec::len);
    files
}

fn generated_corpus(mb: u64) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/bench-corpus-{mb}m"));
    if dir.join("manifest.json").exists() {
        return Some(dir);
    }
    let status = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/generate.py"))
        .args([
            "--out",
            dir.to_str()?,
            "--seed",
            "42",
            "--scale",
            "realistic",
            "--bytes",
            &format!("{mb}M"),
        ])
        .status()
        .ok()?;
    status.success().then_some(dir)
}

fn bench(c: &mut Criterion) {
    let files = fixtures();
    let total: usize = files.iter().map(Vec::len).sum();
    if total > 0 {
        let mut g = c.benchmark_group("fixtures");
        g.throughput(Throughput::Bytes(total as u64));
        let mut scratch = Scratch::default();
        g.bench_function("parse", |b| {
            b.iter(|| {
                files
                    .iter()
                    .map(|f| parse_file(f, &mut scratch).entries.len())
                    .sum::<usize>()
            })
        });
        g.bench_function("analyze", |b| {
            b.iter(|| {
                files
                    .iter()
                    .map(|f| match pisa::analyze_bytes(f, &mut scratch) {
                        pisa::FileAnalysis::Session(a) => a.accounting.records.len(),
                        pisa::FileAnalysis::Rejected { .. } => 0,
                    })
                    .sum::<usize>()
            })
        });
        g.finish();
    }
    let mb = std::env::var("PISA_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    if let Some(dir) = generated_corpus(mb) {
        let found = pisa::scan::discover(std::slice::from_ref(&dir));
        let bytes: u64 = found.files.iter().map(|f| f.size).sum();
        let mut g = c.benchmark_group("corpus");
        g.throughput(Throughput::Bytes(bytes)).sample_size(10);
        g.bench_function(format!("sessions-{mb}MB"), |b| {
            b.iter(|| {
                pisa::corpus::analyze_files(&found.files, &pisa::corpus::Quiet, None, pisa::corpus::Keep::Reports)
                    .expect("the spill reads back")
                    .sessions
                    .len()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
