//! Selection on read (`list`, `extract`, `export`, `cat`, `verify` with
//! NAMEs, `--wildcards`, `--no-anchored`, `--exclude`, `-O`), compared
//! with GNU tar's selection of the same patterns on a tar of the same tree.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command as Process;

use super::*;

/// `work/tree` with names that tell the rules apart: nested directories,
/// a file and a directory sharing a prefix, names in several depths.
fn member_tree(work: &Path) {
    for dir in ["tree/sub/deep", "tree/src", "tree/subway"] {
        fs::create_dir_all(work.join(dir)).unwrap();
    }
    for (file, body) in [
        ("tree/a.txt", "a"),
        ("tree/sub/b.log", "b"),
        ("tree/sub/c.txt", "c"),
        ("tree/sub/deep/d.c", "d"),
        ("tree/src/e.c", "e"),
        ("tree/src.c", "x"),
        ("tree/subway/c.txt", "w"),
    ] {
        fs::write(work.join(file), body).unwrap();
    }
}

/// What `tar ARGS` printed (names without a directory's trailing `/`) and
/// whether it succeeded.
fn tar_names(work: &Path, args: &[&str]) -> (BTreeSet<String>, bool) {
    let out = Process::new("tar").args(args).current_dir(work).output().expect("GNU tar is installed");
    let names = String::from_utf8(out.stdout).unwrap();
    (names.lines().map(|l| l.trim_end_matches('/').to_string()).collect(), out.status.success())
}

fn lockbox_names(work: &Path, args: &[&str]) -> (BTreeSet<String>, bool, String) {
    let out = run(lockbox().current_dir(work).args(args));
    let names = String::from_utf8(out.stdout.clone()).unwrap();
    (names.lines().map(str::to_string).collect(), code(&out) == 0, stderr(&out))
}

/// The files and directories under `dir`, relative to it.
fn tree_of(dir: &Path) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            all.insert(path.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            if path.is_dir() {
                todo.push(path);
            }
        }
    }
    all
}

/// The selection flags and NAMEs compared, each a case that one of the
/// rules decides.
const CASES: &[&[&str]] = &[
    &["tree/sub"],
    &["tree/sub/"],
    &["tree/sub", "tree/a.txt"],
    &["--wildcards", "tree/s*"],
    &["--wildcards", "tree/*.c"],
    &["--wildcards", "tree/s?b"],
    &["--wildcards", "tree/sub/*"],
    &["--wildcards", "*/c.txt"],
    &["--wildcards", "tree/[ab].txt"],
    &["--wildcards", "--no-anchored", "*.c"],
    &["--wildcards", "--no-anchored", "d*"],
    &["--no-anchored", "c.txt"],
    &["--no-anchored", "sub"],
    &["--exclude", "sub", "tree"],
    &["--exclude", "sub/*"],
    &["--exclude", "*.c", "--exclude", "deep"],
    &["--exclude", "tree/s?b"],
    &["--exclude", "*.txt", "--wildcards", "tree/sub*"],
    &["tree/s*"],
    &["tree/nope"],
    &["--wildcards", "tree/*.x"],
    &["--no-anchored", "ub/c.txt"],
];

#[test]
fn list_and_extract_select_what_gnu_tar_selects() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    member_tree(w);
    let archive = archive_tree(w, &[]);
    let archive = archive.to_str().unwrap();
    let (_, ok) = tar_names(w, &["-cf", "t.tar", "tree"]);
    assert!(ok, "tar -c failed");
    for (n, case) in CASES.iter().enumerate() {
        let (want, tar_ok) = tar_names(w, &[&["-tf", "t.tar"], *case].concat());
        let (got, ok, err) = lockbox_names(w, &[&["list", archive], *case].concat());
        assert_eq!(got, want, "list {case:?}: {err}");
        assert_eq!(ok, tar_ok, "list {case:?} succeeds as tar -t does: {err}");
        if !ok {
            assert!(err.contains("not found in the archive") && err.lines().count() == 1, "{err}");
            assert!(case.iter().any(|a| err.contains(a)), "the error names what matched nothing: {err}");
            continue;
        }
        let (tar_dest, dest) = (w.join(format!("tx{n}")), w.join(format!("x{n}")));
        fs::create_dir(&tar_dest).unwrap();
        fs::create_dir(&dest).unwrap();
        let (_, ok) = tar_names(w, &[&["-xf", "t.tar", "-C", tar_dest.to_str().unwrap()], *case].concat());
        assert!(ok, "tar -x {case:?}");
        let out = run(lockbox().current_dir(w).args(["extract", archive, "-C"]).arg(&dest).args(*case));
        assert_eq!(code(&out), 0, "extract {case:?}: {}", stderr(&out));
        assert_eq!(tree_of(&dest), tree_of(&tar_dest), "extract {case:?}");
        // The same members as a tar stream, and their contents on stdout.
        let exported = run(lockbox().current_dir(w).args(["export", archive, "-o", "-"]).args(*case));
        assert_eq!(code(&exported), 0, "export {case:?}: {}", stderr(&exported));
        fs::write(w.join("e.tar"), &exported.stdout).unwrap();
        assert_eq!(tar_names(w, &["-tf", "e.tar"]).0, want, "export {case:?}");
        let contents = |args: &[&str]| Process::new("tar").args(args).current_dir(w).output().unwrap().stdout;
        let tar_out = contents(&[&["-xOf", "t.tar"], *case].concat());
        let out = run(lockbox().current_dir(w).args(["extract", "-O", archive]).args(*case));
        assert_eq!(code(&out), 0, "extract -O {case:?}: {}", stderr(&out));
        let sorted = |b: &[u8]| -> Vec<u8> {
            let mut v = b.to_vec();
            v.sort_unstable();
            v
        };
        // Archive order differs from index order; the bytes must not.
        assert_eq!(sorted(&out.stdout), sorted(&tar_out), "extract -O {case:?}");
    }
}

#[test]
fn cat_and_verify_take_names_and_patterns() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    member_tree(w);
    let archive = archive_tree(w, &[]);
    let out = run(lockbox().arg("cat").arg(&archive).args(["tree/sub/c.txt", "tree/a.txt"]));
    assert_eq!((code(&out), out.stdout.as_slice()), (0, &b"ca"[..]), "{}", stderr(&out));
    let out = run(lockbox().arg("cat").arg(&archive).args(["--wildcards", "tree/*.c", "tree/a.txt"]));
    assert_eq!((code(&out), out.stdout.as_slice()), (0, &b"exda"[..]), "{}", stderr(&out));
    let out = run(lockbox().arg("cat").arg(&archive).args(["--wildcards", "--exclude", "src*", "tree/*.c"]));
    assert_eq!(out.stdout, b"d", "{}", stderr(&out));
    let out = run(lockbox().arg("verify").arg(&archive).args(["--wildcards", "tree/sub*"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("4 files, 4 bytes"), "{}", stderr(&out));
    let out = run(lockbox().arg("verify").arg(&archive).arg("--exclude=*.txt"));
    assert!(stderr(&out).contains("4 files, 4 bytes"), "{}", stderr(&out));
}

#[test]
fn names_matching_nothing_and_bad_patterns_fail_cleanly() {
    let (work, archive) = archived_tree();
    let a = archive.to_str().unwrap();
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    let d = dest.to_str().unwrap();
    for args in [
        vec!["list", a, "tree/a.txt", "tree/nope"],
        vec!["extract", a, "-C", d, "--wildcards", "tree/*.x"],
        vec!["extract", "-O", a, "--wildcards", "tree/*.x"],
        vec!["export", a, "-o", "-", "tree/nope"],
        vec!["cat", a, "--wildcards", "nope*"],
        vec!["verify", a, "--wildcards", "tree/*", "tree/nope"],
    ] {
        let out = run(lockbox().args(&args));
        let missing = args.last().unwrap();
        assert_fails(&out, 1, &format!("{missing}: not found in the archive"));
    }
    assert!(dir_names(&dest).is_empty(), "nothing extracted");
    let out = run(lockbox().args(["list", a, "tree/*.txt"]));
    assert_fails(&out, 1, "only with --wildcards");
    for args in [vec!["list", a, "--wildcards", "[ab"], vec!["extract", a, "-C", d, "--exclude", "x["]] {
        assert_fails(&run(lockbox().args(&args)), 2, "invalid pattern");
    }
    let out = run(lockbox().args(["extract", a, "-C", d, "--exclude-from", "/nonexistent/list"]));
    assert_fails(&out, 1, "--exclude-from: opening");
    let out = run(lockbox().args(["extract", a, "-k", "--overwrite", "-C", d]));
    assert_eq!(code(&out), 2, "-k and --overwrite conflict: {}", stderr(&out));
    // -k is the default: an existing file is an error, nothing replaced.
    assert_eq!(code(&run(lockbox().args(["extract", a, "-C", d]))), 0);
    fs::write(dest.join("tree/a.txt"), b"mine").unwrap();
    let out = run(lockbox().args(["extract", a, "-k", "-C", d]));
    assert_fails(&out, 1, "already exists");
    assert_eq!(fs::read(dest.join("tree/a.txt")).unwrap(), b"mine");
}
