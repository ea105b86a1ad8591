//! `create --exclude/--exclude-from/--exclude-vcs/--one-file-system` and
//! `-T/--files-from [--null]`.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::*;
use crate::util::{skip, Need};

/// The stored paths of `archive` (from `list --json`, so that a name may
/// hold a newline).
fn listed(archive: &Path) -> Vec<String> {
    let out = run(lockbox().args(["list", "--json"]).arg(archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines = String::from_utf8(out.stdout).unwrap();
    let objects = lines.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap());
    objects.filter(|v| v["type"] == "entry").map(|v| v["path"].as_str().unwrap().to_string()).collect()
}

fn vcs_tree(work: &Path) {
    small_tree(work);
    fs::create_dir_all(work.join("tree/.git/objects")).unwrap();
    fs::write(work.join("tree/.git/objects/x"), b"git").unwrap();
    fs::write(work.join("tree/sub/.gitignore"), b"*.o").unwrap();
    fs::create_dir(work.join("tree/build")).unwrap();
    fs::write(work.join("tree/build/out.o"), b"obj").unwrap();
}

#[test]
fn excludes_follow_tar_globs() {
    let work = tempfile::tempdir().unwrap();
    vcs_tree(work.path());
    let archive = archive_tree(work.path(), &["--exclude", "*.log", "--exclude", "build/", "--exclude-vcs"]);
    assert_eq!(listed(&archive), ["tree", "tree/a.txt", "tree/link", "tree/sub", "tree/sub/c.txt"]);
    // Patterns from a file (blank lines skipped), with --null too.
    fs::write(work.path().join("pats"), b"c.txt\n\n.git\r\n").unwrap();
    fs::write(work.path().join("pats0"), b"tree/sub\0link\0").unwrap();
    let out = create_in(work.path(), &["--exclude-from", "pats", "-o", "b.lbox", "tree"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let names = listed(&work.path().join("b.lbox"));
    assert!(!names.iter().any(|n| n.ends_with("c.txt") || n.contains(".git/")), "{names:?}");
    assert!(names.contains(&"tree/sub/.gitignore".to_string()), "{names:?}");
    let out = create_in(work.path(), &["--null", "--exclude-from", "pats0", "-o", "c.lbox", "tree"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let names = listed(&work.path().join("c.lbox"));
    assert!(!names.iter().any(|n| n.starts_with("tree/sub") || n == "tree/link"), "{names:?}");
}

#[test]
fn bad_patterns_and_unreadable_lists_fail_before_anything_is_written() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let create = |args: &[&str]| create_in(work.path(), &[args, &["-o", "x.lbox", "tree"]].concat(), b"");
    assert_fails(&create(&["--exclude", "[abc"]), 2, "invalid pattern \"[abc\"");
    assert_fails(&create(&["--exclude-from", "nope"]), 1, "--exclude-from: opening nope");
    assert_fails(&create(&["-T", "nope"]), 1, "--files-from: opening nope");
    assert_fails(&create(&["--files-from", "tree"]), 1, "--files-from: tree is a directory");
    fs::write(work.path().join("bad-pats"), b"ok\n[x\n").unwrap();
    assert_fails(&create(&["--exclude-from", "bad-pats"]), 2, "invalid pattern \"[x\"");
    assert_eq!(dir_names(work.path()), ["bad-pats", "tree"]);
}

#[test]
fn files_from_adds_listed_paths() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    fs::write(work.path().join("list"), b"tree/a.txt\ntree/sub/c.txt\n").unwrap();
    let out = create_in(work.path(), &["-T", "list", "-o", "a.lbox"], b"");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(listed(&work.path().join("a.lbox")), ["tree/a.txt", "tree/sub/c.txt"]);
    // From stdin, NUL-separated, with a name holding a newline.
    fs::write(work.path().join("tree/new\nline"), b"nl").unwrap();
    let names = b"tree/new\nline\0tree/sub/b.log\0";
    let out = create_in(work.path(), &["--null", "-T", "-", "-o", "b.lbox", "tree/link"], names);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(listed(&work.path().join("b.lbox")), ["tree/link", "tree/new\nline", "tree/sub/b.log"]);
    // A listed path that does not exist fails like a PATH argument: none
    // of them existing, exit 2 (GNU tar's rule) and no archive.
    fs::write(work.path().join("list"), b"tree/missing\n").unwrap();
    let out = create_in(work.path(), &["-T", "list", "-o", "c.lbox"], b"");
    assert_fails(&out, 2, "tree/missing");
    assert!(!work.path().join("c.lbox").exists());
}

#[test]
fn one_file_system_does_not_descend_into_mount_points() {
    let (dev, shm) = (fs::metadata("/dev"), fs::metadata("/dev/shm"));
    let writable = tempfile::tempdir_in("/dev/shm");
    let (Ok(dev), Ok(shm), Ok(marker_dir)) = (dev, shm, writable) else {
        return skip(Need::Mounts, "no writable /dev/shm to serve as a mount point");
    };
    if dev.dev() == shm.dev() {
        return skip(Need::Mounts, "/dev/shm is not a separate file system here");
    }
    let marker = marker_dir.path().file_name().unwrap().to_str().unwrap().to_string();
    let work = tempfile::tempdir().unwrap();
    let names = |extra: &[&str], name: &str| {
        let archive = work.path().join(name);
        let out = run(lockbox()
            .arg("create")
            .arg("--json")
            .args(CHEAP)
            .args(extra)
            .arg("-o")
            .arg(&archive)
            .args(["-C", "/", "dev"]));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        listed(&archive)
    };
    let all = names(&[], "all.lbox");
    assert!(all.contains(&format!("dev/shm/{marker}")), "{all:?}");
    let one = names(&["--one-file-system"], "one.lbox");
    assert!(one.contains(&"dev/shm".to_string()), "the mount point itself is kept: {one:?}");
    assert!(!one.iter().any(|n| n.starts_with("dev/shm/")), "{one:?}");
}

#[test]
fn dash_given_twice_is_a_usage_error() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let create = |args: &[&str]| create_in(work.path(), &[args, &["-o", "x.lbox"]].concat(), b"tree\n");
    assert_fails(&create(&["-T", "-", "--exclude-from", "-"]), 2, "`-` given twice");
    assert_fails(&create(&["-T", "-", "--exclude-from", "-", "--exclude-from", "-"]), 2, "`-` given twice");
    assert!(!work.path().join("x.lbox").exists());
    let out = create(&["-T", "-"]);
    assert_eq!(code(&out), 0, "one reader of stdin is fine: {}", stderr(&out));
}

#[test]
fn absolute_inputs_get_tars_note_once() {
    let work = tempfile::tempdir().unwrap();
    let tree = small_tree(work.path());
    let archive = work.path().join("abs.lbox");
    let out =
        run(lockbox().arg("create").args(CHEAP).arg("-o").arg(&archive).arg(&tree).arg(tree.join("a.txt")));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "lockbox: Removing leading `/' from member names\n");
    let stored = tree.strip_prefix("/").unwrap().join("a.txt");
    assert!(listed(&archive).contains(&stored.to_string_lossy().into_owned()));
    let out = run(lockbox().args(["-q", "add"]).arg(&archive).arg(tree.join("sub")));
    assert_eq!((code(&out), stderr(&out)), (0, String::new()), "-q silences it");
    let out = run(lockbox().arg("add").arg(&archive).arg(tree.join("sub")));
    assert!(stderr(&out).contains("Removing leading `/'"), "{}", stderr(&out));
    let out = run(lockbox().current_dir(work.path()).arg("add").arg(&archive).arg("tree/sub"));
    assert!(!stderr(&out).contains("Removing"), "relative paths get no note: {}", stderr(&out));
}
