//! Archives of other shapes through a real FUSE mount (root and
//! `/dev/fuse`; else a skip, a failure under `LOCKBOX_REQUIRE_FUSE=1`):
//! directories no entry lists (a tar stream without directory members)
//! shown as directories; a sparse file's holes found with `SEEK_DATA` and
//! `SEEK_HOLE` as on the source.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::process::Command;

use crate::mount_cli::{have_fuse, Mounted};
use crate::util::*;

/// `lockbox mount` as a child process (`Mounted` waits on it).
pub fn mount_cmd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbox"));
    cmd.env("LOCKBOX_PASSWORD", PASSWORD).arg("mount");
    cmd
}

pub fn mounted(archive: &std::path::Path, work: &std::path::Path) -> Mounted {
    let mut cmd = mount_cmd();
    cmd.arg(archive);
    Mounted::spawn(cmd, work)
}

/// Every path below `dir`, sorted, as `find` prints them.
fn found(dir: &std::path::Path) -> Vec<String> {
    let out = Command::new("find").arg(".").arg("-mindepth").arg("1").current_dir(dir).output().unwrap();
    assert!(out.status.success());
    let mut paths: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect();
    paths.sort();
    paths
}

#[test]
fn directories_no_entry_lists_show_as_directories() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(src.join("a/b")).unwrap();
    fs::create_dir_all(src.join("c/d")).unwrap();
    fs::create_dir_all(src.join("e")).unwrap();
    for (path, text) in
        [("a/b/one.txt", "one\n"), ("a/top.txt", "top\n"), ("c/d/x.txt", "x\n"), ("e/y.txt", "y\n")]
    {
        fs::write(src.join(path), text).unwrap();
    }
    // GNU tar with file names only: no member for a, a/b, c, c/d; e is one.
    let tar = work.path().join("t.tar");
    let status = Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(&src)
        .args(["--no-recursion", "a/b/one.txt", "a/top.txt", "c/d/x.txt", "e", "e/y.txt"])
        .status()
        .unwrap();
    assert!(status.success());
    let archive = work.path().join("a.lbox");
    ok(run(lockbox().arg("create").args(CHEAP).arg("--from-tar").arg(&tar).arg("-o").arg(&archive)));
    let listed = String::from_utf8(ok(run(lockbox().arg("list").arg(&archive))).stdout).unwrap();
    assert_eq!(listed.lines().count(), 5, "{listed}");

    let m = mounted(&archive, work.path());
    let mnt = &m.point;
    assert_eq!(
        found(mnt),
        ["./a", "./a/b", "./a/b/one.txt", "./a/top.txt", "./c", "./c/d", "./c/d/x.txt", "./e", "./e/y.txt"]
    );
    assert_eq!(fs::read_to_string(mnt.join("a/b/one.txt")).unwrap(), "one\n");
    let implicit = fs::metadata(mnt.join("c/d")).unwrap();
    assert!(implicit.is_dir());
    assert_eq!(implicit.mode() & 0o7777, 0o755);
    assert_eq!(fs::metadata(mnt.join("c/d")).unwrap().ino(), implicit.ino(), "one inode each time");
    assert_ne!(fs::metadata(mnt.join("a")).unwrap().ino(), fs::metadata(mnt.join("a/b")).unwrap().ino());
    // Nothing is implied by a name that is not a directory's.
    let missing = fs::metadata(mnt.join("a/b/one.txt/z")).unwrap_err();
    assert_eq!(missing.raw_os_error(), Some(20), "ENOTDIR: {missing}");
    assert_eq!(fs::metadata(mnt.join("a/nope")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    assert_eq!(fs::metadata(mnt.join("a/b/one")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    drop(m);
}

/// The (data, hole) offsets `SEEK_DATA` and `SEEK_HOLE` give over `path`,
/// and the errno of a `SEEK_DATA` at its end, by Python's `os.lseek`.
fn data_and_holes(path: &std::path::Path) -> String {
    let script = r#"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
size, at, out = os.fstat(fd).st_size, 0, []
while at < size:
    try:
        data = os.lseek(fd, at, os.SEEK_DATA)
    except OSError:
        break
    at = os.lseek(fd, data, os.SEEK_HOLE)
    out.append(f"{data}-{at}")
try:
    os.lseek(fd, size, os.SEEK_DATA)
except OSError as e:
    out.append(f"errno {e.errno}")
print(" ".join(out))
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_sparse_files_holes_are_found_by_seek_data_and_seek_hole() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    let t = src.display();
    // Data at 1 MiB and 3 MiB of an 8 MiB file; a plain file beside it.
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "truncate -s 8M {t}/holes && printf data | dd of={t}/holes bs=1 seek=1048576 conv=notrunc \
             status=none && printf more | dd of={t}/holes bs=1 seek=3145728 conv=notrunc status=none \
             && printf plain > {t}/plain"
        ))
        .status()
        .unwrap();
    assert!(made.success());
    let on_source = data_and_holes(&src.join("holes"));
    assert!(on_source.starts_with("1048576-"), "the source file system keeps holes: {on_source}");
    let archive = work.path().join("a.lbox");
    ok(run(create_cmd(&archive, &src, "holes", &[]).arg("plain")));

    let m = mounted(&archive, work.path());
    assert_eq!(data_and_holes(&m.point.join("holes")), on_source);
    assert_eq!(data_and_holes(&m.point.join("plain")), "0-5 errno 6", "data to the end, ENXIO past it");
    drop(m);
}

#[test]
fn a_mount_with_signer_serves_only_what_that_signer_signed() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.txt"), "signed\n").unwrap();
    let key = |name: &str| {
        let out = ok(run(lockbox().args(["keygen", "--sign", "-o"]).arg(work.path().join(name))));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let (alice, mallory) = (key("alice.key"), key("mallory.key"));
    let signed = work.path().join("signed.lbox");
    let alice_key = work.path().join("alice.key");
    ok(run(&mut create_cmd(&signed, &src, "a.txt", &["--sign", alice_key.to_str().unwrap()])));
    let unsigned = work.path().join("unsigned.lbox");
    ok(run(&mut create_cmd(&unsigned, &src, "a.txt", &[])));

    let mut cmd = mount_cmd();
    cmd.args(["--signer", &alice]).arg(&signed);
    let m = Mounted::spawn(cmd, work.path());
    assert_eq!(fs::read_to_string(m.point.join("a.txt")).unwrap(), "signed\n");
    drop(m);

    // The same through a signers file (`--signers`).
    let (team, outsiders) = (work.path().join("team"), work.path().join("outsiders"));
    fs::write(&team, "# alice\nalice.key.pub\n").unwrap();
    fs::write(&outsiders, format!("{mallory}\n")).unwrap();
    let mut cmd = mount_cmd();
    cmd.arg("--signers").arg(&team).arg(&signed);
    let m = Mounted::spawn(cmd, work.path());
    assert_eq!(fs::read_to_string(m.point.join("a.txt")).unwrap(), "signed\n");
    drop(m);

    let point = work.path().join("mnt");
    let (outsiders, team) = (outsiders.to_str().unwrap(), team.to_str().unwrap());
    for (archive, flag, signer, why) in [
        (&signed, "--signer", mallory.as_str(), "signed only by keys not trusted"),
        (&signed, "--signers", outsiders, "signed only by keys not trusted"),
        (&unsigned, "--signer", alice.as_str(), "state 1 is not signed"),
        (&unsigned, "--signers", team, "state 1 is not signed"),
    ] {
        let out = run(lockbox().args(["mount", flag, signer]).arg(archive).arg(&point));
        assert_eq!(code(&out), 3, "{}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.contains(why), "{err:?} says {why:?}");
        assert_eq!(fs::read_dir(&point).unwrap().count(), 0, "nothing mounted");
    }
}

#[test]
fn all_sessions_shows_each_state_as_a_directory_at_the_top() {
    if !have_fuse() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("a.txt"), "one\n").unwrap();
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "a.txt", &[])));
    fs::write(src.join("b.txt"), "bee\n").unwrap();
    let a = archive.to_str().unwrap();
    ok(run(lockbox().args(["add", "-q", a, "-C"]).arg(&src).arg("b.txt")));
    fs::write(src.join("a.txt"), "two, longer\n").unwrap();
    ok(run(lockbox().args(["add", "-q", a, "-C"]).arg(&src).arg("a.txt")));
    ok(run(lockbox().args(["rm", a, "b.txt"])));

    let mut cmd = mount_cmd();
    cmd.arg("--all-sessions").arg(&archive);
    let m = Mounted::spawn(cmd, work.path());
    let mnt = &m.point;
    assert_eq!(
        found(mnt),
        [
            "./@1",
            "./@1/a.txt",
            "./@2",
            "./@2/a.txt",
            "./@2/b.txt",
            "./@3",
            "./@3/a.txt",
            "./@3/b.txt",
            "./@4",
            "./@4/a.txt"
        ]
    );
    let read = |p: &str| fs::read_to_string(mnt.join(p)).unwrap();
    assert_eq!(
        (read("@1/a.txt"), read("@2/b.txt"), read("@3/a.txt")),
        ("one\n".into(), "bee\n".into(), "two, longer\n".into())
    );
    let ino = |p: &str| fs::metadata(mnt.join(p)).unwrap().ino();
    assert_ne!(ino("@1/a.txt"), ino("@3/a.txt"), "each state's entries are their own inodes");
    assert_eq!(ino("@2/a.txt"), ino("@2/a.txt"));
    let state = fs::metadata(mnt.join("@4")).unwrap();
    assert!(state.is_dir());
    let age = std::time::SystemTime::now().duration_since(state.modified().unwrap()).unwrap();
    assert!(age.as_secs() < 600, "a state's directory is dated by its commit: {age:?}");
    assert_eq!(fs::metadata(mnt.join("@5")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    assert_eq!(fs::metadata(mnt.join("a.txt")).unwrap_err().kind(), std::io::ErrorKind::NotFound);
    drop(m);

    // After a compaction keeping the last two states, they keep their names.
    ok(run(lockbox().args(["compact", "-q", "--keep-sessions", "2", a])));
    let mut cmd = mount_cmd();
    cmd.arg("--all-sessions").arg(&archive);
    let m = Mounted::spawn(cmd, work.path());
    assert_eq!(found(&m.point), ["./@3", "./@3/a.txt", "./@3/b.txt", "./@4", "./@4/a.txt"]);
    let read = |p: &str| fs::read_to_string(m.point.join(p)).unwrap();
    assert_eq!((read("@3/b.txt"), read("@4/a.txt")), ("bee\n".into(), "two, longer\n".into()));
    drop(m);

    let point = work.path().join("mnt");
    let both = run(lockbox().args(["mount", "--all-sessions", "--session", "1", a]).arg(&point));
    assert_eq!(code(&both), 2, "{}", stderr(&both));
    assert!(stderr(&both).contains("cannot be used with"), "{}", stderr(&both));
}
