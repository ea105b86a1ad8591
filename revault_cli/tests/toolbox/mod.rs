//! The toolbox through the real `lockbox` binary: archives on pipes,
//! `create --overwrite`, `--json`, tar in and out, selection, completions
//! and the manual page.
//!
//! Archives are made with the cheapest Argon2id cost (`CHEAP`).

mod everyday;
mod json;
mod members;
mod meta;
mod pipes;
mod select;
mod shell;
mod tar;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use tempfile::TempDir;

pub use crate::util::{code, lockbox, run, stderr, CHEAP, PASSWORD};
pub const NON_UTF8: &[u8] = b"caf\xe9.txt";

/// Asserts a clean failure: exit `expected`, one line `lockbox: …`
/// containing `needle`.
pub fn assert_fails(out: &Output, expected: i32, needle: &str) {
    let err = stderr(out);
    assert_eq!(code(out), expected, "stderr: {err}");
    assert!(err.starts_with("lockbox: ") && err.lines().count() == 1, "not one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// `work/tree` with a few files, a subdirectory and a symbolic link.
pub fn small_tree(work: &Path) -> PathBuf {
    let tree = work.join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("a.txt"), b"alpha\n").unwrap();
    fs::write(tree.join("sub/b.log"), b"beta\n").unwrap();
    fs::write(tree.join("sub/c.txt"), b"gamma\n").unwrap();
    std::os::unix::fs::symlink("a.txt", tree.join("link")).unwrap();
    tree
}

/// Archives `work/tree` (see [`small_tree`]) into `work/a.lbox`.
pub fn archived_tree() -> (TempDir, PathBuf) {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let archive = archive_tree(work.path(), &[]);
    (work, archive)
}

/// Runs `lockbox create` (cheap KDF, `extra` flags) of `work/tree` into
/// `archive`.
pub fn create_tree(work: &Path, archive: &Path, extra: &[&str]) -> Output {
    run(lockbox()
        .arg("create")
        .args(CHEAP)
        .args(extra)
        .arg("-o")
        .arg(archive)
        .arg("-C")
        .arg(work)
        .arg("tree"))
}

/// Runs `lockbox create` (cheap KDF, `extra` flags) of `work/tree` into
/// `work/a.lbox`, which must succeed; returns the archive's path.
pub fn archive_tree(work: &Path, extra: &[&str]) -> PathBuf {
    let archive = work.join("a.lbox");
    let out = create_tree(work, &archive, extra);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    archive
}

/// Runs `lockbox create` (cheap KDF) with `args` in the directory `work`,
/// `stdin` on its standard input.
pub fn create_in(work: &Path, args: &[&str], stdin: &[u8]) -> Output {
    run(lockbox().current_dir(work).arg("create").args(CHEAP).args(args).write_stdin(stdin.to_vec()))
}

/// The names of the files directly in `dir`, sorted.
pub fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}
