//! A daily backup's traps in `info` (issue 49): after `compact
//! --keep-sessions N` it said "dead bytes … (lockbox compact reclaims
//! them)", though a plain `compact` would delete the very states just
//! kept; its compression ratio divided the last state's content by the
//! whole file, history included ("0.71" for incompressible data stored
//! as is). `compact -n` rewrote the whole archive before saying there was
//! nothing to reclaim, which `info` knew from the index at once. A plain
//! `update` kept deleted and renamed-away paths in the latest state
//! without a word.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::{code, create_cmd, lockbox, ok, run, stderr};

/// Seeded bytes that do not compress.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as u8
        })
        .collect()
}

fn info_json(archive: &Path) -> Value {
    let out = ok(run(lockbox().args(["info", "--json"]).arg(archive)));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn dead_bytes_line(archive: &Path) -> String {
    let out = ok(run(lockbox().arg("info").arg(archive)));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().find(|l| l.starts_with("dead bytes")).unwrap().to_owned()
}

#[test]
fn info_after_retention_warns_that_compact_removes_states_and_its_ratio_ignores_history() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir(&src).unwrap();
    let archive = work.path().join("a.lbox");
    fs::write(src.join("f"), noise(1, 200_000)).unwrap();
    ok(run(&mut create_cmd(&archive, &src, "f", &[])));
    assert!(dead_bytes_line(&archive).ends_with("(lockbox compact reclaims them)"));
    for day in 2..=4 {
        fs::write(src.join("f"), noise(day, 200_000)).unwrap();
        ok(run(lockbox().args(["update", "-q"]).arg(&archive).arg("-C").arg(&src).arg("f")));
    }
    ok(run(lockbox().args(["compact", "-q", "--keep-sessions", "3"]).arg(&archive)));

    let line = dead_bytes_line(&archive);
    assert!(!line.ends_with("(lockbox compact reclaims them)"), "{line}");
    assert!(line.contains("removes") && line.contains("--keep-sessions"), "{line}");

    // Incompressible content stored as is: the last state's content is
    // about the bytes it uses, though the file holds three copies.
    let info = info_json(&archive);
    let ratio = info["compression_ratio"].as_f64().unwrap();
    let (content, size) = (info["content_bytes"].as_f64().unwrap(), info["archive_bytes"].as_f64().unwrap());
    assert!(content / size < 0.5, "the file holds history: {info}");
    assert!((0.9..=1.0).contains(&ratio), "ratio {ratio}: {info}");
}

/// Nothing to reclaim (one state, no dead bytes): `compact -n` answers
/// from the index, reading no data page. A flipped byte in a data page
/// shows it: the rewrite `compact -n` made failed on it, and still does
/// when there is something to reclaim.
#[test]
fn compact_n_answers_from_the_index_when_nothing_can_be_reclaimed() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("f"), noise(7, 1_000_000)).unwrap();
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "f", &[])));
    let mut bytes = fs::read(&archive).unwrap();
    let len = bytes.len();
    // Incompressible, stored as is: the middle of the file is f's content.
    bytes[len / 2] ^= 1;
    fs::write(&archive, &bytes).unwrap();

    let dry = ok(run(lockbox().args(["compact", "-n", "--json"]).arg(&archive)));
    let summary: Value = serde_json::from_slice(&dry.stdout).unwrap();
    assert_eq!(summary["reclaimed"], 0, "{summary}");
    assert_eq!(summary["bytes_after"].as_u64(), Some(len as u64), "{summary}");
    assert_eq!(fs::read(&archive).unwrap(), bytes, "nothing written");

    // With something to reclaim, the rewrite is made and meets the damage.
    fs::write(src.join("g"), b"g\n").unwrap();
    ok(run(lockbox().args(["add", "-q"]).arg(&archive).arg("-C").arg(&src).arg("g")));
    ok(run(lockbox().args(["rm"]).arg(&archive).arg("g")));
    let rewritten = run(lockbox().args(["compact", "-n"]).arg(&archive));
    assert_ne!(code(&rewritten), 0, "{}", stderr(&rewritten));
    assert!(stderr(&rewritten).contains("failed authentication"), "{}", stderr(&rewritten));
}

/// A plain `update` keeps what was removed from disk in the latest state
/// (tar's `-u` does too): it now says how many paths it kept and what
/// removes them; `-q` silences it; `--delete-missing` removes them.
#[test]
fn update_says_what_it_keeps_of_paths_no_longer_on_disk() {
    let work = tempfile::TempDir::new().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(src.join("d/sub")).unwrap();
    for name in ["d/a", "d/b", "d/sub/c", "d/sub/e"] {
        fs::write(src.join(name), name).unwrap();
    }
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "d", &[])));
    let update =
        |extra: &[&str]| run(lockbox().arg("update").args(extra).arg(&archive).arg("-C").arg(&src).arg("d"));

    let out = update(&[]);
    assert_eq!((code(&out), stderr(&out).as_str()), (0, ""), "nothing is missing: nothing said");
    fs::remove_file(src.join("d/b")).unwrap();
    fs::remove_dir_all(src.join("d/sub")).unwrap();
    let out = ok(update(&[]));
    // d/b and d/sub (with what lies below it): two paths.
    let said = stderr(&out);
    assert_eq!(
        said,
        "lockbox: 2 stored paths under the inputs are no longer on disk; they stay in the archive's latest \
         state (--delete-missing removes them)\n"
    );
    let listed = String::from_utf8(ok(run(lockbox().arg("list").arg(&archive))).stdout).unwrap();
    assert!(listed.contains("d/b\n") && listed.contains("d/sub/c\n"), "{listed}");
    assert_eq!(stderr(&ok(update(&["-q"]))), "");
    let json: Value = serde_json::from_slice(&ok(update(&["--json"])).stdout).unwrap();
    assert_eq!((json["kept_missing"].as_u64(), json["removed"].as_u64()), (Some(2), Some(0)), "{json}");

    let out = ok(update(&["--delete-missing"]));
    assert_eq!(stderr(&out), "");
    let listed = String::from_utf8(ok(run(lockbox().arg("list").arg(&archive))).stdout).unwrap();
    assert_eq!(listed, "d\nd/a\n");
    assert_eq!(stderr(&ok(update(&[]))), "", "nothing is missing any more");
}
