//! docs/CONFORMANCE.md, checked: every row's archive (made by the
//! library's `write_conformance_vectors`) run through the real binary
//! with every command, each exit code and message class compared with the
//! table, so that the table cannot drift from what lockbox does. Beside
//! the table's cells, every run must leave nothing behind: no panic, a
//! failed `extract` writes nothing, a failed `compact` or `add` leaves the
//! archive as it was, and no temporary name survives.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tempfile::TempDir;

use crate::util::{code, stderr};

const COMMANDS: [&str; 9] = ["list", "cat", "extract", "verify", "log", "info", "diff", "compact", "add"];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The table's rows: the archive's name, its `cat` path and one cell per
/// command (`0`, or the exit code and message class, as `3 damaged`).
fn rows() -> Vec<(String, String, Vec<String>)> {
    let table = fs::read_to_string(repository().join("docs/CONFORMANCE.md")).unwrap();
    let cell = |c: &str| c.trim().trim_matches('`').to_string();
    let rows: Vec<_> = table
        .lines()
        .skip_while(|l| !l.starts_with("| archive |"))
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<String> = l.trim_matches('|').split('|').map(cell).collect();
            assert_eq!(cells.len(), 2 + COMMANDS.len(), "a row of docs/CONFORMANCE.md: {l}");
            (cells[0].clone(), cells[1].clone(), cells[2..].to_vec())
        })
        .collect();
    assert!(rows.len() >= 10, "docs/CONFORMANCE.md has {} rows", rows.len());
    rows
}

/// The message class of a failure: what the first line says went wrong
/// (`diff` exits 1 without a message when the states differ).
fn class(command: &str, status: i32, message: &str) -> &'static str {
    let first = message.lines().next().unwrap_or("");
    if command == "diff" && first.is_empty() {
        return "differences";
    }
    if status == 2 {
        return "usage";
    }
    [
        ("failed authentication", "damaged"),
        ("authenticates, but", "malformed"),
        ("corrupted or not a lockbox archive", "malformed"),
        ("too many write sessions", "limit"),
        ("checksum mismatch", "checksum"),
    ]
    .into_iter()
    .find(|(words, _)| first.contains(words))
    .map_or("other", |(_, class)| class)
}

/// Runs `command` on a copy of `vector` in a directory of its own; returns
/// the table's cell for what it did, after checking it left nothing behind.
fn cell(vector: &Path, cat_path: &str, command: &str) -> String {
    let work = TempDir::new().unwrap();
    let archive = work.path().join("a.lbox");
    fs::copy(vector, &archive).unwrap();
    let before = fs::read(&archive).unwrap();
    let src = work.path().join("src");
    fs::create_dir(&src).unwrap();
    fs::write(src.join("new"), "new").unwrap();
    let dest = work.path().join("dest");
    // Ended after 120 s: B7's `compact` ran for hours. What `cat` writes
    // is not kept (a sparse file's zeros would all be held in memory).
    let mut cmd = std::process::Command::new("timeout");
    cmd.arg("120").arg(env!("CARGO_BIN_EXE_lockbox")).arg(command).arg(&archive);
    cmd.env("LOCKBOX_PASSWORD", "chain").env_remove("LOCKBOX_NEW_PASSWORD").stdout(Stdio::null());
    let extra: Vec<&std::ffi::OsStr> = match command {
        "cat" => vec![cat_path.as_ref()],
        "extract" => vec!["-C".as_ref(), dest.as_os_str()],
        "diff" => vec!["--from".as_ref(), "1".as_ref()],
        "add" => vec!["-C".as_ref(), src.as_os_str(), "new".as_ref()],
        _ => Vec::new(),
    };
    cmd.args(extra);
    let out = cmd.output().expect("runs timeout and lockbox");
    let (status, err) = (code(&out), stderr(&out));
    let what = format!("{} {command}", vector.display());
    assert!(!err.contains("panicked"), "{what}: {err}");
    let mut left: Vec<_> = fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    left.sort();
    let expected: &[&str] = if dest.exists() { &["a.lbox", "dest", "src"] } else { &["a.lbox", "src"] };
    assert_eq!(left, expected, "{what}: left behind");
    if status == 0 {
        return "0".into();
    }
    eprintln!("{what}: {status}: {}", err.lines().next().unwrap_or(""));
    if dest.exists() {
        assert_eq!(fs::read_dir(&dest).unwrap().count(), 0, "{what}: a failed extract wrote");
    }
    if command == "compact" || command == "add" {
        assert!(fs::read(&archive).unwrap() == before, "{what}: a failed {command} changed the archive");
    }
    format!("{status} {}", class(command, status, &err))
}

#[test]
fn every_command_does_what_the_conformance_table_says() {
    let vectors = repository().join("revault_lockbox_api/tests/vectors/conformance");
    let mut wrong = Vec::new();
    let mut actual = Vec::new();
    for (name, cat_path, expected) in rows() {
        let vector = vectors.join(format!("{name}.lbox"));
        let got: Vec<String> = COMMANDS.iter().map(|command| cell(&vector, &cat_path, command)).collect();
        for ((command, want), got) in COMMANDS.iter().zip(&expected).zip(&got) {
            if want != got {
                wrong.push(format!("{name} {command}: the table says `{want}`, lockbox did `{got}`"));
            }
        }
        actual.push(format!("| `{name}` | `{cat_path}` | {} |", got.join(" | ")));
    }
    assert!(wrong.is_empty(), "{}\nwhat lockbox did:\n{}", wrong.join("\n"), actual.join("\n"));
}

/// `cat` of a file whose content authenticates but fails its SHA-256: a
/// small one writes nothing at all before exit 3; one longer than `cat`
/// holds (a sparse file of 9 MiB) streams, as documented, and still exits
/// 3. (Until a small file was checked before output, `cat` wrote all its
/// wrong bytes, then failed: issue 46.)
#[test]
fn cat_of_a_small_file_whose_checksum_fails_writes_nothing() {
    let vector = repository().join("revault_lockbox_api/tests/vectors/conformance/wrong-digest.lbox");
    let cat = |path: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lockbox"))
            .args(["cat".as_ref(), vector.as_os_str(), path.as_ref()])
            .env("LOCKBOX_PASSWORD", "chain")
            .output()
            .expect("runs lockbox")
    };
    let small = cat("a");
    assert_eq!(code(&small), 3, "{}", stderr(&small));
    assert!(stderr(&small).contains("checksum mismatch for a"), "{}", stderr(&small));
    assert_eq!(stderr(&small).lines().count(), 1, "{}", stderr(&small));
    assert!(small.stdout.is_empty(), "{} bytes written", small.stdout.len());
    let long = cat("s");
    assert_eq!(code(&long), 3, "{}", stderr(&long));
    assert!(stderr(&long).contains("checksum mismatch for s"), "{}", stderr(&long));
    assert_eq!(long.stdout.len(), 9 << 20, "the long file streams");
}
