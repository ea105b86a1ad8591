//! `-n/--dry-run` and `--json` on the commands that change an archive in
//! place (`add`, `update`, `rm`, `compact`, `repair`), through the real
//! binary: a dry run leaves the archive byte for byte as it was (and its
//! mtime), says what the real run then does, and fails as the real run
//! fails; every JSON line parses, the summary last.

use std::fs;
use std::path::Path;
use std::process::Output;
use std::time::SystemTime;

use serde_json::Value;

use crate::append_cli::{archived, ok, run, s};
use crate::util::{code, lockbox, stderr};

/// Every stdout line as JSON with a `"type"`; the last, and only the last,
/// the summary of `command`, which is returned.
fn summary(out: &Output, command: &str) -> Value {
    let text = std::str::from_utf8(&out.stdout).expect("UTF-8");
    let all: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert!(!all.is_empty(), "no JSON: {}", stderr(out));
    for (i, v) in all.iter().enumerate() {
        assert_eq!(v["type"] == "summary", i == all.len() - 1, "summary last, once: {text}");
    }
    let last = all.last().unwrap().clone();
    assert_eq!(last["command"], command, "{text}");
    last
}

/// The archive's bytes and modification time.
fn state(archive: &Path) -> (Vec<u8>, SystemTime) {
    (fs::read(archive).unwrap(), fs::metadata(archive).unwrap().modified().unwrap())
}

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn dry_runs_leave_the_archive_as_it_was_and_say_what_the_change_does() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    fs::write(src.join("top.txt"), b"top, changed\n").unwrap();
    fs::write(src.join("d/new.txt"), b"new\n").unwrap();
    let before = state(&archive);

    // add -n: what would be stored and replaced, nothing written.
    let dry = summary(&ok(&["add", "-n", "--json", a, "-C", s(&src), "top.txt", "d/new.txt"]), "add");
    assert_eq!(state(&archive), before, "add -n changed the archive");
    assert_eq!((dry["dry_run"].as_bool(), num(&dry, "stored"), num(&dry, "replaced")), (Some(true), 2, 1));
    assert!(dry.get("entries").is_none(), "a dry run does not count entries afterwards: {dry}");
    let text = ok(&["add", "-n", "-v", a, "-C", s(&src), "top.txt", "d/new.txt"]);
    assert_eq!(String::from_utf8_lossy(&text.stdout), "d/new.txt\ntop.txt\n");
    let said = stderr(&text);
    assert!(said.contains("dry run: add would store 2 entries, 1 replacing stored ones"), "{said}");
    assert!(said.contains("nothing written"), "{said}");
    assert_eq!(state(&archive), before);

    // The real add does what the dry run said; its summary has the count.
    let real = summary(&ok(&["add", "--json", a, "-C", s(&src), "top.txt", "d/new.txt"]), "add");
    assert_eq!((num(&real, "stored"), num(&real, "replaced"), num(&real, "entries")), (2, 1, 6));
    assert_eq!(real["dry_run"], false);
    // The dry run counts pages and index; the real one also root, header
    // copy (4,128 bytes, FORMAT.md §3.11) and trailer.
    let (would, wrote) = (num(&dry, "bytes_written"), num(&real, "bytes_written"));
    assert!(would > 0 && would < wrote && wrote - would < 4096 + 4128, "{would} vs {wrote}");

    // update -n --delete-missing: a changed file and a vanished one (and
    // `d`, whose mtime changed with them).
    fs::write(src.join("d/one.txt"), b"one, longer\n").unwrap();
    fs::remove_file(src.join("d/new.txt")).unwrap();
    let before = state(&archive);
    let dry = summary(&ok(&["update", "-n", "--json", "--delete-missing", a, "-C", s(&src), "d"]), "update");
    assert_eq!(state(&archive), before, "update -n changed the archive");
    assert_eq!((num(&dry, "stored"), num(&dry, "replaced"), num(&dry, "removed")), (2, 2, 1));
    let real = summary(&ok(&["update", "--json", "--delete-missing", a, "-C", s(&src), "d"]), "update");
    assert_eq!((num(&real, "stored"), num(&real, "removed"), num(&real, "entries")), (2, 1, 5));
    // Nothing left to update: a dry run says so.
    let none = ok(&["update", "-n", a, "-C", s(&src), "d"]);
    assert!(stderr(&none).contains("update would change nothing in"), "{}", stderr(&none));

    // rm -n -v: the paths named, nothing removed.
    let before = state(&archive);
    let dry = ok(&["rm", "-n", "-v", a, "d/sub"]);
    assert_eq!(String::from_utf8_lossy(&dry.stdout), "removed d/sub\n");
    assert!(stderr(&dry).contains("rm would remove 1 path in"), "{}", stderr(&dry));
    assert_eq!(state(&archive), before, "rm -n changed the archive");
    let real = summary(&ok(&["rm", "--json", a, "d/sub"]), "rm");
    assert_eq!((num(&real, "removed"), num(&real, "entries")), (1, 3));

    // compact -n: the length the rewrite will have (but for a few bytes:
    // the session's time is compressed with its index).
    let before = state(&archive);
    let dry = summary(&ok(&["compact", "-n", "--json", a]), "compact");
    assert_eq!(state(&archive), before, "compact -n changed the archive");
    assert_eq!(num(&dry, "bytes_before"), before.0.len() as u64);
    assert!(num(&dry, "reclaimed") > 0, "{dry}");
    let text = ok(&["compact", "-n", a]);
    assert!(stderr(&text).contains("dry run: compacting"), "{}", stderr(&text));
    let real = summary(&ok(&["compact", "--json", a]), "compact");
    let (would, did) = (num(&dry, "bytes_after"), num(&real, "bytes_after"));
    assert!(would.abs_diff(did) < 64, "dry {dry} real {real}");
    assert_eq!(num(&real, "bytes_after"), fs::metadata(&archive).unwrap().len());
    ok(&["verify", "-q", a]);
}

#[test]
fn a_dry_run_reports_a_torn_tail_and_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    let whole = fs::read(&archive).unwrap();
    fs::write(&archive, [&whole[..], &[0xAB; 3000][..]].concat()).unwrap();
    let before = state(&archive);
    let dry = summary(&ok(&["add", "-n", "--json", a, "-C", s(&src), "top.txt"]), "add");
    assert_eq!(num(&dry, "torn_tail_cut"), 3000);
    let text = ok(&["rm", "-n", a, "top.txt"]);
    assert!(stderr(&text).contains("would cut off 3000 bytes"), "{}", stderr(&text));
    assert_eq!(state(&archive), before, "a dry run cut the tail");
    // repair --json: the tail cut, the summary says how much.
    let repaired = summary(&ok(&["repair", "--json", a]), "repair");
    assert_eq!((repaired["ok"].as_bool(), num(&repaired, "torn_tail_cut")), (Some(true), 3000));
    assert_eq!(fs::read(&archive).unwrap(), whole);
    let again = summary(&ok(&["repair", "--json", a]), "repair");
    assert_eq!((num(&again, "torn_tail_cut"), again["salvaged"].is_null()), (0, true));
}

#[test]
fn a_dry_run_fails_as_the_change_would_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (src, archive) = archived(dir.path());
    let a = s(&archive);
    let before = state(&archive);
    let one_line = |out: &Output, expected: i32, needle: &str| {
        let err = stderr(out);
        assert_eq!(code(out), expected, "{err}");
        assert!(err.starts_with("lockbox: ") && err.lines().count() == 1 && err.contains(needle), "{err}");
        assert!(out.stdout.is_empty(), "no summary after a failure");
    };
    one_line(&run(&["rm", "-n", "--json", a, "nope"]), 1, "nope");
    let wrong = lockbox().env("LOCKBOX_PASSWORD", "wrong").args(["compact", "-n", a]).output().unwrap();
    one_line(&wrong, 3, "wrong password");
    let wrong =
        lockbox().env("LOCKBOX_PASSWORD", "wrong").args(["add", "-n", a, "-C", s(&src), "d"]).output();
    one_line(&wrong.unwrap(), 3, "wrong password");
    // Below a stored file: the same refusal as the real add.
    fs::remove_file(src.join("top.txt")).unwrap();
    fs::create_dir(src.join("top.txt")).unwrap();
    fs::write(src.join("top.txt/inner"), b"x").unwrap();
    one_line(&run(&["add", "-n", a, "-C", s(&src), "top.txt/inner"]), 1, "is a file or symbolic link");
    assert_eq!(state(&archive), before);
}
