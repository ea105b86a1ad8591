//! Archives holding chunked files (format v4, FORMAT.md §3.5c), from the
//! library's vectors (`revault_lockbox_api/tests/vectors/chunked/`): the
//! binary verifies and extracts them, reports a chunk whose id is wrong as
//! damage naming its file, and refuses a list that breaks the format.

use std::fs;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use tempfile::TempDir;

use crate::util::{code, run, stderr};

fn vector(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../revault_lockbox_api/tests/vectors/chunked/{name}.lbox"))
}

fn lockbox() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbox"));
    cmd.env("LOCKBOX_PASSWORD", "chunked");
    cmd
}

#[test]
fn a_chunked_file_verifies_and_extracts() {
    let out = run(lockbox().arg("verify").arg(vector("chunked")));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dst = TempDir::new().unwrap();
    let out = run(lockbox().arg("extract").arg(vector("chunked")).arg("-C").arg(dst.path()));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let a = fs::read(dst.path().join("a")).unwrap();
    // `b` is five ranges of `a`, one named twice (README.md).
    let b: Vec<u8> = [(5000, 3000), (0, 5000), (5000, 3000), (12_000, 8000), (8000, 4000)]
        .iter()
        .flat_map(|&(at, len)| a[at..at + len].to_vec())
        .collect();
    assert_eq!(fs::read(dst.path().join("b")).unwrap(), b);
}

#[test]
fn a_wrong_chunk_id_is_damage_naming_the_file() {
    let out = run(lockbox().arg("verify").arg(vector("wrong-chunk-id")));
    let err = stderr(&out);
    assert_eq!(code(&out), 3, "{err}");
    assert!(err.contains("chunk id mismatch for b"), "{err}");
}

#[test]
fn a_chunk_after_its_list_is_refused_in_one_line() {
    let work = TempDir::new().unwrap();
    for command in ["verify", "extract"] {
        let dst = work.path().join(command);
        fs::create_dir(&dst).unwrap();
        let mut cmd = lockbox();
        cmd.arg(command).arg(vector("chunk-after-list"));
        if command == "extract" {
            cmd.arg("-C").arg(&dst);
        }
        let out = run(&mut cmd);
        let err = stderr(&out);
        assert_eq!(code(&out), 3, "{command}: {err}");
        assert!(err.starts_with("lockbox: ") && err.lines().count() == 1, "{command}: {err}");
        assert!(err.contains("a chunk that does not lie before its list"), "{command}: {err}");
        assert_eq!(fs::read_dir(&dst).unwrap().count(), 0, "{command} wrote something");
    }
}
