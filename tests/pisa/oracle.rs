//! Differential tests: every figure the oracle (Pi's own code) prints equals pisa's.

use std::process::Command;

use crate::support::{assert_agreement, repo, shared};

#[test]
fn fixtures_written_by_pi_agree_with_the_oracle() {
    assert_agreement(&shared().join("fixtures"), 2);
}

#[test]
fn hand_written_edge_cases_agree_with_the_oracle() {
    assert_agreement(&repo().join("tests").join("data").join("edge"), 40);
}

#[test]
fn generated_directories_agree_with_the_oracle() {
    for seed in ["7", "8"] {
        let dir = tempfile::tempdir().expect("temp dir");
        let status = Command::new("python3")
            .arg(repo().join("datasets").join("generate.py"))
            .args([
                "--out",
                dir.path().to_str().expect("utf-8"),
                "--seed",
                seed,
                "--sessions",
                "40",
                "--scale",
                "small",
            ])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("python3 is required to generate test corpora");
        assert!(status.success(), "the generator failed for seed {seed}");
        assert_agreement(dir.path(), 40);
    }
}

#[test]
fn files_pi_cannot_load_are_reported_with_pi_error() {
    assert_agreement(&repo().join("tests").join("data").join("pi-errors"), 8);
}

#[test]
fn bundled_sample_agrees_with_the_oracle() {
    assert_agreement(&repo().join("datasets").join("sample"), 40);
}

#[test]
fn valid_but_hostile_lines_agree_with_the_oracle() {
    assert_agreement(&repo().join("tests").join("data").join("hostile"), 2);
}
