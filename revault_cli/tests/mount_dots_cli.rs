//! `.` and `..` in a mount's directory listings (root and `/dev/fuse`;
//! else a skip, a failure under `LOCKBOX_REQUIRE_FUSE=1`): `ls -a` showed
//! neither, unlike every other file system. Each names its directory and
//! the one above, with `--all-sessions` too.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::mount_cli::{have_fuse, Mounted};
use crate::mount_views_cli::{mount_cmd, mounted};
use crate::util::*;

/// `ls -1ai DIR`: each name readdir gives, with the inode number it gives.
fn listed(dir: &Path) -> Vec<(u64, String)> {
    let out = Command::new("ls").arg("-1ai").arg(dir).output().unwrap();
    assert!(out.status.success(), "ls -ai {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (ino, name) = l.trim_start().split_once(' ').unwrap();
            (ino.parse().unwrap(), name.to_owned())
        })
        .collect()
}

/// `dir`'s listing: `.` and `..` first, numbered as `dir` and `dir/..`
/// are (at the mount's top, `ls` shows the mount point's parent), then
/// `names`.
fn check(dir: &Path, names: &[&str]) {
    let got = listed(dir);
    let ino = |p: &Path| fs::metadata(p).unwrap().ino();
    let mut expected = vec![(ino(dir), ".".to_owned()), (ino(&dir.join("..")), "..".to_owned())];
    expected.extend(names.iter().map(|n| (ino(&dir.join(n)), n.to_string())));
    assert_eq!(got, expected, "{}", dir.display());
}

#[test]
fn listings_have_dot_and_dot_dot() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(src.join("d/sub")).unwrap();
    fs::write(src.join("d/sub/f"), b"f\n").unwrap();
    fs::write(src.join("top.txt"), b"t\n").unwrap();
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, ".", &[])));

    let m = mounted(&archive, work.path());
    let mnt = m.point.clone();
    check(&mnt, &["d", "top.txt"]);
    check(&mnt.join("d"), &["sub"]);
    check(&mnt.join("d/sub"), &["f"]);
    drop(m);

    ok(run(lockbox().args(["add", "-q"]).arg(&archive).arg("-C").arg(&src).arg("top.txt")));
    let mut cmd = mount_cmd();
    cmd.arg("--all-sessions").arg(&archive);
    let m = Mounted::spawn(cmd, work.path());
    let mnt = m.point.clone();
    check(&mnt, &["@1", "@2"]);
    check(&mnt.join("@2"), &["d", "top.txt"]);
    check(&mnt.join("@1/d"), &["sub"]);
    drop(m);
}
