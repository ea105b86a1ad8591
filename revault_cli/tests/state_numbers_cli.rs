//! One numbering of states everywhere (issue 49, by the rule of issue 46):
//! `info` said "last session #2" and `--signer` refused "session 2 is not
//! signed" where `log` showed state 3 and `--session 3` read it. Every
//! message now names a session by the state it holds, as `log` numbers
//! them; after `compact --keep-sessions 2`, whose records carry the kept
//! states' numbers on, they still agree.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::signed_sessions_cli::{refused, Work};
use crate::util::{lockbox, ok, run};

/// `log`'s state column, oldest first (`None` for a merge's `-`).
fn logged_states(archive: &Path) -> Vec<Option<u64>> {
    let out = ok(run(lockbox().arg("log").arg(archive)));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("removed by a compaction"))
        .map(|l| l.split_whitespace().next().unwrap().parse().ok())
        .collect()
}

fn info_json(archive: &Path) -> Value {
    serde_json::from_slice(&ok(run(lockbox().args(["info", "--json"]).arg(archive))).stdout).unwrap()
}

/// `info`, its JSON, `log`, and the refusals of `--signer` for the last
/// state and for state `earlier` (opened with `--session`) all say
/// `last` and `earlier` (Alice signed neither).
fn agree(work: &Work, archive: &Path, alice: &str, earlier: u64, last: u64) {
    assert_eq!(logged_states(archive).last(), Some(&Some(last)));
    let text = String::from_utf8(ok(run(lockbox().arg("info").arg(archive))).stdout).unwrap();
    let shown =
        format!("\nstate              {last} (as lockbox log numbers it; --session {last} reads it)\n");
    assert!(text.contains(&shown) && !text.contains('#'), "{text}");
    let json = info_json(archive);
    assert_eq!(json["state"].as_u64(), Some(last), "{json}");
    let signer_states: Vec<Option<u64>> =
        json["signers"].as_array().unwrap().iter().map(|s| s["state"].as_u64()).collect();
    assert_eq!(signer_states.last(), Some(&Some(last)), "{json}");

    let not_signed = |state: u64| format!("state {state} is not signed");
    refused(&work.run(&["list", "--signer", alice], archive, &[]), &not_signed(last));
    refused(&work.run(&["verify", "--signer", alice], archive, &[]), &not_signed(last));
    let session = earlier.to_string();
    refused(
        &work.run(&["cat", "--session", &session, "--signer", alice], archive, &["b.txt"]),
        &not_signed(earlier),
    );
    // `--session N` reads the state the message names.
    assert_eq!(ok(work.run(&["cat", "--session", &session], archive, &["b.txt"])).stdout, b"b, first\n");
}

#[test]
fn info_log_and_signature_refusals_number_states_alike_before_and_after_a_retention_compaction() {
    let work = Work::new();
    let alice = work.key("alice");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    fs::write(work.path("src/b.txt"), b"b, first\n").unwrap();
    ok(work.run(&["add"], &archive, &["b.txt"]));
    fs::write(work.path("src/c.txt"), b"c\n").unwrap();
    ok(work.run(&["add"], &archive, &["c.txt"]));
    // Sessions 0, 1, 2 hold states 1, 2, 3; Alice signed state 1 only.
    assert_eq!(logged_states(&archive), [Some(1), Some(2), Some(3)]);
    agree(&work, &archive, &alice, 2, 3);

    // States 2 and 3 kept: the compaction (session 3) holds state 2 and
    // session 4 state 3, so the session numbers no longer follow the
    // states at all; every message still says what `log` says.
    ok(work.run(&["compact", "--keep-sessions", "2"], &archive, &[]));
    assert_eq!(logged_states(&archive), [Some(2), Some(3)]);
    let json = info_json(&archive);
    assert_eq!((json["last_session"].as_u64(), json["state"].as_u64()), (Some(4), Some(3)), "{json}");
    agree(&work, &archive, &alice, 2, 3);
}
