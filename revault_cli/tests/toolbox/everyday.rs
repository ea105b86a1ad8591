//! tar's everyday flags, each compared with GNU tar on the same tree:
//! `list -l` (local time, `--utc`, `--full-time`), `create --newer`,
//! `--newer-mtime`, `--exclude-caches` and `--exclude-if-present`.

use std::fs;
use std::path::Path;
use std::process::Command as Process;

use super::*;

/// A time zone with a half-hour offset, so a listing in UTC cannot pass
/// for local time.
const KOLKATA: &str = "Asia/Kolkata";

/// Runs GNU tar in `cwd` (with `TZ` as given) and returns its stdout.
fn tar(args: &[&str], cwd: &Path, tz: &str) -> String {
    let out = Process::new("tar").args(args).current_dir(cwd).env("TZ", tz).output().expect("GNU tar");
    assert!(out.status.success(), "tar {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Sets a path's modification time with `touch -d` (GNU date syntax, UTC).
fn touch(path: &Path, when: &str) {
    let ok = Process::new("touch").arg("-h").arg("-d").arg(when).arg(path).status().unwrap().success();
    assert!(ok, "touch -d {when} {}", path.display());
}

/// The names GNU tar stores for `args` on `work/tree`, sorted, without
/// the trailing `/` it writes after directories.
fn tar_names(work: &Path, args: &[&str]) -> Vec<String> {
    let tar_file = work.join("t.tar");
    let mut create = vec!["-cf", tar_file.to_str().unwrap()];
    create.extend_from_slice(args);
    create.push("tree");
    tar(&create, work, "UTC");
    let listed = tar(&["-tf", tar_file.to_str().unwrap()], work, "UTC");
    fs::remove_file(&tar_file).unwrap();
    let mut names: Vec<String> = listed.lines().map(|l| l.trim_end_matches('/').to_string()).collect();
    names.sort();
    names
}

/// The names `lockbox create` stores for `args` on `work/tree`, sorted.
fn lockbox_names(work: &Path, args: &[&str]) -> Vec<String> {
    let archive = work.join("n.lbox");
    let out = create_tree(work, &archive, args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(lockbox().arg("list").arg(&archive));
    fs::remove_file(&archive).unwrap();
    let mut names: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    names.sort();
    names
}

#[test]
fn list_long_is_gnu_tars_tv_in_local_time_or_utc() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    for (i, name) in ["tree/a.txt", "tree/sub/b.log", "tree/sub/c.txt", "tree/link", "tree/sub", "tree"]
        .into_iter()
        .enumerate()
    {
        touch(&work.path().join(name), &format!("2001-09-09 01:4{i}:40 UTC"));
    }
    let archive = archive_tree(work.path(), &[]);
    tar(&["-cf", "t.tar", "tree"], work.path(), "UTC");
    let sorted = |text: String| {
        let mut lines: Vec<String> = text.lines().map(|l| l.trim_end_matches('/').to_string()).collect();
        lines.sort();
        lines
    };
    for (tz, flags) in [(KOLKATA, &[][..]), (KOLKATA, &["--utc"][..]), ("UTC", &[][..])] {
        let ours = run(lockbox().env("TZ", tz).args(["list", "-l"]).args(flags).arg(&archive));
        assert_eq!(code(&ours), 0, "{}", stderr(&ours));
        let mut tar_args = vec!["-tvf", "t.tar"];
        tar_args.extend_from_slice(flags);
        let theirs = tar(&tar_args, work.path(), tz);
        assert_eq!(
            sorted(String::from_utf8(ours.stdout).unwrap()),
            sorted(theirs),
            "TZ={tz} {flags:?}: the same lines as tar -tv"
        );
    }
    let local = run(lockbox().env("TZ", KOLKATA).args(["list", "-l"]).arg(&archive));
    assert!(String::from_utf8_lossy(&local.stdout).contains(" 2001-09-09 07:10 tree/a.txt"), "UTC+05:30");
    let full = run(lockbox().env("TZ", KOLKATA).args(["list", "-l", "--full-time"]).arg(&archive));
    let full = String::from_utf8(full.stdout).unwrap();
    assert!(full.contains(" 2001-09-09T07:10:40+05:30 tree/a.txt"), "{full}");
    let full_utc =
        run(lockbox().env("TZ", KOLKATA).args(["list", "-l", "--full-time", "--utc"]).arg(&archive));
    assert!(String::from_utf8_lossy(&full_utc.stdout).contains(" 2001-09-09T01:40:40+00:00 tree/a.txt"));
}

#[test]
fn list_long_widens_its_columns_for_long_owners_and_sizes_as_tar_does() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("a"), b"x").unwrap();
    fs::write(tree.join("b"), vec![7u8; 12_345_678]).unwrap();
    fs::write(tree.join("c"), b"yy").unwrap();
    let archive = archive_tree(work.path(), &[]);
    let out = run(lockbox().args(["list", "-l"]).arg(&archive));
    let text = String::from_utf8(out.stdout).unwrap();
    let date_at = |name: &str| {
        let line = text.lines().find(|l| l.ends_with(name)).unwrap();
        line.len() - name.len()
    };
    // The width grows at `b` and stays: `c` lines up with `b`, not with `a`.
    assert_eq!(date_at(" tree/c"), date_at(" tree/b"), "{text}");
    assert!(date_at(" tree/a") <= date_at(" tree/b"), "{text}");
}

#[test]
fn newer_stores_what_gnu_tar_stores() {
    let work = tempfile::tempdir().unwrap();
    let tree = small_tree(work.path());
    touch(&tree.join("a.txt"), "2001-01-01 00:00 UTC");
    touch(&tree.join("sub/b.log"), "2015-06-01 12:00 UTC");
    touch(&tree.join("sub/c.txt"), "2024-06-01 12:00 UTC");
    touch(&tree.join("link"), "2001-01-01 00:00 UTC");
    for date in ["2010-01-01", "2015-06-01 13:00 UTC", "2015-06-01T11:59:59Z", "@1420070400"] {
        let ours = lockbox_names(work.path(), &["--newer-mtime", date]);
        assert_eq!(ours, tar_names(work.path(), &[&format!("--newer-mtime={date}")]), "--newer-mtime {date}");
        assert!(ours.contains(&"tree/sub/c.txt".to_string()) && !ours.contains(&"tree/a.txt".to_string()));
    }
    // --newer also counts the status-change time, which the files here
    // all have from just now: whatever their modification time, they are
    // newer than a reference file dated at the epoch.
    let stamp = work.path().join("stamp");
    fs::write(&stamp, b"").unwrap();
    touch(&stamp, "@0");
    let stamp = stamp.to_str().unwrap();
    let by_file = lockbox_names(work.path(), &["--newer", stamp]);
    assert_eq!(by_file, tar_names(work.path(), &[&format!("--newer={stamp}")]), "both date it at the epoch");
    assert!(by_file.contains(&"tree/a.txt".to_string()), "changed (ctime) after 1970: {by_file:?}");
    let in_a_day = lockbox_names(work.path(), &["-N", "1 day ago"]);
    assert!(in_a_day.contains(&"tree/a.txt".to_string()), "status changed just now: {in_a_day:?}");
    let none = lockbox_names(work.path(), &["--after-date", "2999-01-01"]);
    assert_eq!(none, ["tree", "tree/sub"], "directories are kept whatever their age, as tar keeps them");
    assert_eq!(none, tar_names(work.path(), &["--newer=2999-01-01"]));
}

#[test]
fn exclude_caches_and_exclude_if_present_keep_the_tag_and_drop_the_rest_as_tar_does() {
    let work = tempfile::tempdir().unwrap();
    let tree = small_tree(work.path());
    let signature = b"Signature: 8a477f597d28d172789f06886806bc55\n# a cache\n";
    for (dir, tag, body) in [
        ("cache", "CACHEDIR.TAG", &signature[..]),
        ("cache/deeper", "CACHEDIR.TAG", &signature[..]),
        ("fake", "CACHEDIR.TAG", &b"no signature here"[..]),
        ("private", ".nobackup", &b""[..]),
    ] {
        fs::create_dir_all(tree.join(dir)).unwrap();
        fs::write(tree.join(dir).join(tag), body).unwrap();
        fs::write(tree.join(dir).join("data.bin"), b"bulky").unwrap();
    }
    for flags in [
        &["--exclude-caches"][..],
        &["--exclude-if-present", ".nobackup"][..],
        &["--exclude-caches", "--exclude-if-present", ".nobackup", "--exclude-if-present", "a.txt"][..],
        &["--exclude-if-present", "CACHEDIR.TAG"][..],
    ] {
        let tar_flags: Vec<String> = flags
            .iter()
            .zip(flags.iter().skip(1).chain(std::iter::once(&"")))
            .filter_map(|(f, v)| match *f {
                "--exclude-caches" => Some(f.to_string()),
                "--exclude-if-present" => Some(format!("--exclude-tag={v}")),
                _ => None,
            })
            .collect();
        let tar_flags: Vec<&str> = tar_flags.iter().map(String::as_str).collect();
        let ours = lockbox_names(work.path(), flags);
        assert_eq!(ours, tar_names(work.path(), &tar_flags), "{flags:?}");
    }
    let caches = lockbox_names(work.path(), &["--exclude-caches"]);
    assert!(caches.contains(&"tree/cache/CACHEDIR.TAG".to_string()), "{caches:?}");
    assert!(!caches.iter().any(|n| n.starts_with("tree/cache/d")), "{caches:?}");
    assert!(caches.contains(&"tree/fake/data.bin".to_string()), "no signature, no cache: {caches:?}");
}

#[test]
fn a_date_that_names_no_time_is_a_usage_error_naming_it() {
    let work = tempfile::tempdir().unwrap();
    small_tree(work.path());
    let archive = work.path().join("x.lbox");
    for bad in ["next blursday", "2024-02-30", "@soon", "./no-such-stamp"] {
        let out = create_tree(work.path(), &archive, &["--newer", bad]);
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{err}");
        assert!(err.contains(&format!("invalid date '{bad}'")), "{err}");
        assert!(!archive.exists(), "nothing written");
    }
}
