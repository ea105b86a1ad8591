//! `create` to a file with a password wraps the key slots (Argon2id) on a
//! thread of its own while the data is written, and writes the slot table
//! last: the archive must open, and a create whose KDF fails must leave no
//! archive behind and an existing one as it was.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::util::{code, lockbox, run, stderr, CHEAP, PASSWORD};

/// A directory with a few files, one of them spanning several pages.
fn source(work: &TempDir) -> &Path {
    let dir = work.path();
    fs::create_dir(dir.join("src")).unwrap();
    fs::write(dir.join("src/small.txt"), b"hello\n").unwrap();
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    fs::write(dir.join("src/big.bin"), big).unwrap();
    dir
}

/// `dir/src` archived to `dir/a.lbox` (a file: the slots go last).
fn create(dir: &Path) -> PathBuf {
    let archive = dir.join("a.lbox");
    lockbox()
        .arg("create")
        .args(CHEAP)
        .arg("-o")
        .arg(&archive)
        .arg("-C")
        .arg(dir)
        .arg("src")
        .assert()
        .success();
    archive
}

#[test]
fn slot_table_written_last_opens_with_the_password() {
    let work = TempDir::new().unwrap();
    let dir = source(&work);
    let archive = create(dir);
    let bytes = fs::read(&archive).unwrap();
    let slot_len = usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    assert_eq!(slot_len, 256, "the smallest slots hold a password");
    assert_eq!(bytes[32], 1, "slot 0 is a password slot, not the zeroes reserved for it");
    assert!(bytes[32 + slot_len..32 + 16 * slot_len].iter().all(|&b| b == 0), "the other slots are empty");
    let out = dir.join("out");
    fs::create_dir(&out).unwrap();
    lockbox().arg("extract").arg(&archive).arg("-C").arg(&out).assert().success();
    assert_eq!(fs::read(out.join("src/big.bin")).unwrap(), fs::read(dir.join("src/big.bin")).unwrap());
    let wrong = run(lockbox().env("LOCKBOX_PASSWORD", "wrong").arg("verify").arg(&archive));
    assert_eq!(code(&wrong), 3, "{}", stderr(&wrong));
}

/// With its address space capped (`prlimit --as`), the process cannot map
/// the 1 GiB of Argon2id memory asked for; the data is written by then.
#[test]
fn kdf_without_memory_leaves_no_archive_and_the_old_one_intact() {
    let work = TempDir::new().unwrap();
    let dir = source(&work);
    let archive = create(dir);
    let before = fs::read(&archive).unwrap();
    let capped = |overwrite: bool, target: &Path| {
        let mut cmd = std::process::Command::new("prlimit");
        cmd.arg("--as=805306368").arg(env!("CARGO_BIN_EXE_lockbox"));
        cmd.env("LOCKBOX_PASSWORD", PASSWORD);
        cmd.args(["create", "-q", "--kdf-memory", "1024", "--kdf-passes", "1", "--kdf-lanes", "1"]);
        if overwrite {
            cmd.arg("--overwrite");
        }
        cmd.arg("-o").arg(target).arg("-C").arg(dir).arg("src");
        cmd.output().expect("runs prlimit")
    };
    for (overwrite, target) in [(true, archive.clone()), (false, dir.join("new.lbox"))] {
        let out = capped(overwrite, &target);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.starts_with("lockbox: ") && err.contains("Argon2id memory"), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    assert_eq!(fs::read(&archive).unwrap(), before, "the existing archive is untouched");
    assert!(!dir.join("new.lbox").exists(), "no archive without its key slots");
    let leftovers: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files removed: {leftovers:?}");
}
