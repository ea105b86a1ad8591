//! `extract --strip-components`, `--skip-old-files` and
//! `--keep-newer-files`, each compared with GNU tar extracting a tar of
//! the same tree into the same starting directory.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command as Process;

use super::*;

/// `work/tree` (see [`small_tree`]) with a hard link and files of known
/// ages: `a.txt` from 2001, `sub/b.log` from 2020.
fn dated_tree(work: &Path) {
    let tree = small_tree(work);
    fs::create_dir(tree.join("sub/deep")).unwrap();
    fs::write(tree.join("sub/deep/d.txt"), b"delta\n").unwrap();
    fs::hard_link(tree.join("a.txt"), tree.join("sub/hard")).unwrap();
    touch(&tree.join("a.txt"), "2001-01-01 00:00 UTC");
    touch(&tree.join("sub/b.log"), "2020-01-01 00:00 UTC");
}

/// Every path under `dir`: its kind, its content or target, and for
/// files the mtime (seconds).
fn state(dir: &Path) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_dir() {
                todo.push(path.clone());
                "dir".to_string()
            } else if meta.file_type().is_symlink() {
                format!("link {}", fs::read_link(&path).unwrap().display())
            } else {
                format!("file {:?} at {}", String::from_utf8_lossy(&fs::read(&path).unwrap()), meta.mtime())
            };
            all.insert(path.strip_prefix(dir).unwrap().to_string_lossy().into_owned(), what);
        }
    }
    all
}

/// Runs `tar -xf t.tar -C DIR ARGS` in `work`, and whether it succeeded.
fn tar_extract(work: &Path, dest: &Path, args: &[&str]) -> bool {
    let out = Process::new("tar")
        .args(["-xf", "t.tar", "-C"])
        .arg(dest)
        .args(args)
        .current_dir(work)
        .output()
        .expect("GNU tar is installed");
    out.status.success()
}

/// Two copies of a starting directory made by `prepare`, one extracted
/// by tar and one by lockbox with `args`; returns both states and
/// lockbox's output.
type State = BTreeMap<String, String>;

fn both(work: &Path, n: usize, prepare: &dyn Fn(&Path), args: &[&str]) -> (State, State, Output) {
    let (theirs, ours) = (work.join(format!("tar{n}")), work.join(format!("lbx{n}")));
    for dest in [&theirs, &ours] {
        fs::create_dir(dest).unwrap();
        prepare(dest);
    }
    assert!(tar_extract(work, &theirs, args), "tar -x {args:?}");
    let out = run(lockbox().arg("extract").arg(work.join("a.lbox")).arg("-C").arg(&ours).args(args));
    (state(&theirs), state(&ours), out)
}

/// The dated tree as `a.lbox` and as GNU tar's `t.tar`.
fn archived_twice() -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    dated_tree(work.path());
    archive_tree(work.path(), &[]);
    let tarred = Process::new("tar").args(["-cf", "t.tar", "tree"]).current_dir(work.path()).status();
    assert!(tarred.unwrap().success());
    work
}

#[test]
fn strip_components_extracts_what_gnu_tar_extracts() {
    let work = archived_twice();
    let w = work.path();
    let cases: &[&[&str]] = &[
        &["--strip-components", "1"],
        &["--strip-components", "2"],
        &["--strip-components", "3"],
        &["--strip-components", "9"],
        &["--strip-components", "0"],
        &["--strip-components", "1", "tree/sub"],
        &["--strip-components", "2", "--exclude", "deep"],
    ];
    for (n, case) in cases.iter().enumerate() {
        let (theirs, ours, out) = both(w, n, &|_| {}, case);
        assert_eq!(code(&out), 0, "{case:?}: {}", stderr(&out));
        assert_eq!(ours, theirs, "{case:?}");
    }
    // The hard link whose target is stripped away is a copy of its content.
    let d = w.join("lbx1");
    assert_eq!(fs::read(d.join("hard")).unwrap(), b"alpha\n");
    assert!(!d.join("a.txt").exists() && d.join("deep/d.txt").exists());
}

#[test]
fn skip_old_files_and_keep_newer_files_leave_what_gnu_tar_leaves() {
    let work = archived_twice();
    let w = work.path();
    // a.txt there is newer than the archive's, b.log older; c.txt absent.
    let prepare = |dest: &Path| {
        fs::create_dir_all(dest.join("tree/sub")).unwrap();
        fs::write(dest.join("tree/a.txt"), b"mine\n").unwrap();
        fs::write(dest.join("tree/sub/b.log"), b"mine too\n").unwrap();
        touch(&dest.join("tree/a.txt"), "2010-01-01 00:00 UTC");
        touch(&dest.join("tree/sub/b.log"), "2010-01-01 00:00 UTC");
    };
    let (theirs, ours, out) = both(w, 0, &prepare, &["--skip-old-files"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "skipped silently, as tar does");
    assert_eq!(ours, theirs, "--skip-old-files");
    assert!(
        ours["tree/sub/b.log"].contains("mine too") && ours["tree/sub/c.txt"].contains("gamma"),
        "{ours:?}"
    );

    let (theirs, ours, out) = both(w, 1, &prepare, &["--keep-newer-files"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(ours, theirs, "--keep-newer-files");
    assert!(ours["tree/a.txt"].contains("mine") && ours["tree/sub/b.log"].contains("beta"), "{ours:?}");
    let err = stderr(&out);
    assert!(err.contains("tree/a.txt") && err.contains("newer") && err.lines().count() == 1, "{err}");

    // A directory where a file goes is skipped too, as tar skips it.
    let in_the_way = |dest: &Path| fs::create_dir_all(dest.join("tree/sub/c.txt/x")).unwrap();
    let (theirs, ours, out) = both(w, 2, &in_the_way, &["--skip-old-files"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(ours, theirs, "--skip-old-files over a directory");

    // Again over that result: the three directories merge, the six other
    // entries are all there already.
    let json = run(lockbox()
        .args(["extract", "--json", "--skip-old-files"])
        .arg(w.join("a.lbox"))
        .arg("-C")
        .arg(w.join("lbx0")));
    let last = String::from_utf8(json.stdout).unwrap().lines().last().unwrap().to_string();
    let summary: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(
        (summary["entries"].as_u64(), summary["skipped_entries"].as_u64()),
        (Some(3), Some(6)),
        "{summary}"
    );
}

#[test]
fn conflicting_or_bad_existing_file_flags_fail_cleanly_and_leave_the_destination_alone() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    dated_tree(w);
    let archive = archive_tree(w, &[]);
    let dest = w.join("dest");
    fs::create_dir_all(dest.join("tree/sub/c.txt")).unwrap();
    let before = state(&dest);
    for (args, code_wanted, needle) in [
        (&["--strip-components=-1"][..], 2, "--strip-components"),
        (&["--strip-components", "x"][..], 2, "--strip-components"),
        (&["--skip-old-files", "--overwrite"][..], 2, "cannot be used with"),
        (&["--keep-newer-files", "-k"][..], 2, "cannot be used with"),
        (&["--keep-newer-files"][..], 1, "tree/sub/c.txt"),
    ] {
        let out = run(lockbox().arg("extract").arg(&archive).arg("-C").arg(&dest).args(args));
        assert_eq!(code(&out), code_wanted, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
        assert_eq!(state(&dest), before, "{args:?}: nothing written");
    }
}
