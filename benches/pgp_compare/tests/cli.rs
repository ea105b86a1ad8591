//! The harness binary as its users run it: flags, refusals, and one real
//! run of lockbox alone on the empty-file scenario (no external tool).
//!
//! These tests also make `cargo test --workspace` build the binary with the
//! test build's features, which `.ci/run`'s smoke runs then reuse.

use std::process::{Command, Output};

fn pgp_compare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgp_compare")).args(args).output().expect("running pgp_compare")
}

#[test]
fn list_names_every_scenario() {
    let out = pgp_compare(&["--list"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    for s in corpora::scenarios() {
        assert!(stdout.lines().any(|l| l.starts_with(s.name)), "{} missing from {stdout}", s.name);
    }
}

#[test]
fn unknown_scenario_is_a_usage_error() {
    let out = pgp_compare(&["--scenario", "no-such-scenario"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scenario \"no-such-scenario\""));
}

#[test]
fn scale_entries_without_its_scenario_is_refused() {
    let out = pgp_compare(&["--scale-entries", "10", "--scenario", "fixed-cost"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("pgp_compare: error: --scale-entries sizes scale-many-files"), "{stderr}");
}

#[test]
fn lockbox_only_run_prints_a_row_per_variant() {
    let root = tempfile::tempdir().unwrap();
    let root_arg = root.path().to_str().unwrap();
    let out = pgp_compare(&[
        "--lockbox-only",
        "--scenario",
        "fixed-cost",
        "--iterations",
        "1",
        "--size-factor",
        "0.01",
        "--root",
        root_arg,
        "--output",
        "-",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| fixed-cost |")).collect();
    let tools: Vec<&str> = rows.iter().map(|r| r.split(" | ").nth(2).unwrap()).collect();
    assert_eq!(tools, ["lockbox", "lockbox, sync off", "lockbox add (append)"], "{stdout}");
    assert!(rows.iter().all(|r| r.matches(" | ").count() == 11), "{stdout}");
    assert!(stdout.contains("- Command: `cargo run --release -p pgp_compare -- --lockbox-only"), "{stdout}");
}
