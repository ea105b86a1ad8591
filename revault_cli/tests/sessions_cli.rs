//! Every committed state of an appended archive, as the real binary reads
//! it: the archive cut at each session's trailer (the `previous_trailer`
//! chain) lists, verifies and extracts, the merge session's state included
//! (what a `kill -9` right after the merge commit leaves).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util::{code, lockbox, stderr, CHEAP};

fn ok(args: &[&str]) -> Output {
    let out = lockbox().args(args).output().expect("runs lockbox");
    assert_eq!(code(&out), 0, "lockbox {args:?}: {}", stderr(&out));
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Where each trailer of the chain ends, oldest first (FORMAT.md §3.8:
/// `previous_trailer` at offset 156 of the 216-byte trailer).
fn trailer_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut end = bytes.len();
    while end > 0 {
        ends.push(end);
        let t = &bytes[end - 216..end];
        assert_eq!(&t[..8], b"LBOXTAIL");
        end = u64::from_le_bytes(t[156..164].try_into().unwrap()) as usize;
    }
    ends.reverse();
    ends
}

/// Issue 27's case 1: `d/b` a hard link to `d/a`, `d/a` replaced by an
/// add, then 15 more single-file adds, the last of which first merges the
/// 16 runs into one. Returns the source tree and the archive.
fn linked_then_replaced(dir: &Path) -> (PathBuf, PathBuf) {
    let src = dir.join("src");
    fs::create_dir_all(src.join("d")).unwrap();
    fs::write(src.join("d/a"), b"orig\n").unwrap();
    fs::hard_link(src.join("d/a"), src.join("d/b")).unwrap();
    let archive = dir.join("a.lbox");
    let mut args = vec!["create", "-q", "-o", s(&archive), "-C", s(&src), "d"];
    args.extend(CHEAP);
    ok(&args);
    fs::remove_file(src.join("d/a")).unwrap();
    fs::write(src.join("d/a"), b"replaced\n").unwrap();
    ok(&["add", "-q", s(&archive), "-C", s(&src), "d/a"]);
    for i in 0..15 {
        let name = format!("f{i:02}");
        fs::write(src.join(&name), name.as_bytes()).unwrap();
        ok(&["add", "-q", s(&archive), "-C", s(&src), &name]);
    }
    (src, archive)
}

#[test]
fn every_cut_at_a_trailer_reads_the_merge_sessions_state_included() {
    let dir = tempfile::tempdir().unwrap();
    let (_, archive) = linked_then_replaced(dir.path());
    let bytes = fs::read(&archive).unwrap();
    let ends = trailer_ends(&bytes);
    // The create, the replacing add, 15 adds and the merge before the last.
    assert_eq!(ends.len(), 18, "one merge session among the adds");
    for (session, &end) in ends.iter().enumerate() {
        let cut = dir.path().join(format!("cut{session}.lbox"));
        fs::write(&cut, &bytes[..end]).unwrap();
        let listed = String::from_utf8(ok(&["list", s(&cut)]).stdout).unwrap();
        ok(&["verify", "-q", s(&cut)]);
        let out = dir.path().join(format!("out{session}"));
        fs::create_dir(&out).unwrap();
        ok(&["extract", "-q", s(&cut), "-C", s(&out)]);
        assert_eq!(fs::read(out.join("d/b")).unwrap(), b"orig\n", "state {session}: the link's content");
        let a = fs::read(out.join("d/a")).unwrap();
        assert_eq!(a, if session == 0 { &b"orig\n"[..] } else { b"replaced\n" }, "state {session}");
        // After the create and the replacing add, one file per add (the
        // merge session, 17th, adds none).
        let added = session.saturating_sub(1).min(14) + usize::from(session == 17);
        assert_eq!(listed.lines().count(), 3 + added, "state {session}: {listed}");
    }
}

#[test]
fn log_shows_every_session_oldest_first_merges_marked() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = linked_then_replaced(dir.path());
    ok(&["rm", "-m", "drop f00", s(&archive), "f00"]);
    let text = String::from_utf8(ok(&["log", "--utc", s(&archive)]).stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 19, "{text}");
    assert!(lines[0].starts_with("   1  ") && lines[0].contains("stored 3, removed 0, 3 entries"), "{text}");
    assert!(lines[0].contains("+00:00"), "--utc: {}", lines[0]);
    assert!(
        lines[16].starts_with("   -  ") && lines[16].contains("merge of index runs (session 16)"),
        "{text}"
    );
    assert!(lines[18].starts_with("  18  ") && lines[18].contains("removed 1, 17 entries"), "{text}");
    assert!(lines[18].ends_with("bytes  drop f00"), "{}", lines[18]);

    let json = String::from_utf8(ok(&["log", "--json", s(&archive)]).stdout).unwrap();
    let values: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(values.len(), 20);
    assert_eq!(values[16]["kind"], "merge");
    assert!(values[16]["state"].is_null());
    assert_eq!(values[18]["state"], 18);
    assert_eq!(values[18]["label"], "drop f00");
    let summary = &values[19];
    assert_eq!((summary["type"].as_str(), summary["sessions"].as_u64()), (Some("summary"), Some(19)));
    assert_eq!(summary["states"], 18);
    let written: u64 = values[..19].iter().map(|v| v["bytes_written"].as_u64().unwrap()).sum();
    assert_eq!(written + 4128, fs::metadata(&archive).unwrap().len(), "every byte after the slots");

    // A torn tail is shown as such; a damaged archive or wrong password
    // is exit 3 as everywhere.
    let mut bytes = fs::read(&archive).unwrap();
    bytes.extend_from_slice(&[7; 100]);
    fs::write(&archive, &bytes).unwrap();
    let text = String::from_utf8(ok(&["log", s(&archive)]).stdout).unwrap();
    assert!(text.ends_with("torn tail: 100 bytes after the last commit (`lockbox repair` cuts them off)\n"));
    let wrong = lockbox().env("LOCKBOX_PASSWORD", "wrong").args(["log", s(&archive)]).output().unwrap();
    assert_eq!(code(&wrong), 3, "{}", stderr(&wrong));
    let missing = lockbox().args(["log", s(&src.join("nope.lbox"))]).output().unwrap();
    assert_ne!(code(&missing), 0);
    assert_eq!(stderr(&missing).lines().count(), 1, "{}", stderr(&missing));
}

#[test]
fn session_n_reads_each_state_as_the_cut_at_its_trailer_does() {
    let dir = tempfile::tempdir().unwrap();
    let (_, archive) = linked_then_replaced(dir.path());
    let bytes = fs::read(&archive).unwrap();
    let ends = trailer_ends(&bytes);
    // States 1 to 16 are sessions 0 to 15; session 16 merged runs; state
    // 17 is session 17.
    let state_ends: Vec<usize> = ends[..16].iter().chain(&ends[17..]).copied().collect();
    for (i, &end) in state_ends.iter().enumerate() {
        let cut = dir.path().join("cut.lbox");
        fs::write(&cut, &bytes[..end]).unwrap();
        let n = (i + 1).to_string();
        let back = (i as i64 - 17).to_string();
        let expected = ok(&["list", "-l", s(&cut)]).stdout;
        assert_eq!(ok(&["list", "-l", "--session", &n, s(&archive)]).stdout, expected, "state {n}");
        assert_eq!(ok(&["list", "-l", "--session", &back, s(&archive)]).stdout, expected, "state {back}");
        let info = |path: &Path, extra: &[&str]| {
            let mut args = vec!["info", "--json"];
            args.extend(extra);
            args.push(s(path));
            let v: serde_json::Value = serde_json::from_slice(&ok(&args).stdout).unwrap();
            (v["files"].clone(), v["sessions"].clone(), v["commit_hash"].clone())
        };
        assert_eq!(info(&archive, &["--session", &n]), info(&cut, &[]), "state {n}");
    }
    let cat = |state: &str| ok(&["cat", "--session", state, s(&archive), "d/a"]).stdout;
    assert_eq!(cat("1"), b"orig\n");
    assert_eq!(cat("2"), b"replaced\n");
    ok(&["verify", "-q", "--session", "1", s(&archive)]);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    ok(&["extract", "-q", "--session", "1", s(&archive), "-C", s(&out)]);
    assert_eq!(fs::read(out.join("d/a")).unwrap(), b"orig\n");
    assert!(!out.join("f00").exists(), "state 1 is the create's");
    let log = String::from_utf8(ok(&["log", "--session", "3", s(&archive)]).stdout).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");

    for bad in ["0", "18", "-18"] {
        let out = lockbox().args(["list", "--session", bad, s(&archive)]).output().unwrap();
        assert_eq!(code(&out), 2, "--session {bad}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("no state {bad}: the archive holds states 1 to 17")), "{err}");
    }
}
