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
