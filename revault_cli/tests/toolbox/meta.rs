//! Owners, extended attributes and ACLs, sparse files: stored by
//! `create`, shown by `list`, restored by `extract` as GNU tar does.
//! The tests run as root; a non-root user is `setpriv` to 65534.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command as Std;

use super::{archive_tree, assert_fails, code, lockbox, run, stderr, CHEAP, PASSWORD};
use crate::util::{have_root, skip, Need};

fn sh(cmd: &str) -> String {
    let out = Std::new("sh").arg("-c").arg(cmd).output().expect("sh runs");
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ids(path: &Path) -> (u32, u32) {
    let md = fs::symlink_metadata(path).unwrap();
    (md.uid(), md.gid())
}

/// The `list --json` object of `path`.
fn listed(archive: &Path, path: &str) -> serde_json::Value {
    let out = run(lockbox().args(["list", "--json"]).arg(archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["path"] == path)
        .unwrap_or_else(|| panic!("{path} not listed"))
}

/// `lockbox extract ARCHIVE -C DEST extra...`, which must succeed.
fn extract(archive: &Path, dest: &Path, extra: &[&str]) -> String {
    fs::create_dir_all(dest).unwrap();
    let out = run(lockbox().arg("extract").arg(archive).arg("-C").arg(dest).args(extra));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stderr(&out)
}

/// `lockbox` as user 65534, through `setpriv`.
fn as_nobody(args: &[&str]) -> std::process::Output {
    crate::util::as_nobody(env!("CARGO_BIN_EXE_lockbox")).args(args).output().expect("setpriv runs")
}

/// A directory user 65534 can read archives from and extract into.
fn open_to_all(dir: &Path) {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o777)).unwrap();
}

#[test]
fn owners_are_stored_by_id_and_name_and_restored_as_root() {
    if !have_root() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let tree = super::small_tree(work.path());
    // An id with no name here, a named one, and a setuid file that chown
    // must not strip: its mode is set after the owner.
    sh(&format!("chown 12345:54321 {0}/a.txt && chown daemon:daemon {0}/sub/b.log", tree.display()));
    sh(&format!("chown -h 4242:4343 {0}/link && chown 777:778 {0}/sub/c.txt", tree.display()));
    sh(&format!("chmod 4755 {0}/sub/c.txt", tree.display()));
    let archive = archive_tree(work.path(), &[]);

    let out = run(lockbox().args(["list", "-l"]).arg(&archive));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.lines().any(|l| l.starts_with("-rw-r--r-- 12345/54321 ") && l.ends_with(" tree/a.txt")),
        "{text}"
    );
    assert!(text.lines().any(|l| l.contains(" daemon/daemon ") && l.ends_with(" tree/sub/b.log")), "{text}");
    assert!(text.lines().any(|l| l.contains(" root/root ") && l.ends_with(" tree/sub")), "{text}");
    let b_log = listed(&archive, "tree/sub/b.log");
    assert_eq!((b_log["user"].as_str(), b_log["group"].as_str()), (Some("daemon"), Some("daemon")));
    assert_eq!((b_log["uid"].as_u64(), b_log["gid"].as_u64()), (Some(1), Some(1)));

    // Root's default is --same-owner; -p keeps the setuid bit.
    let dest = work.path().join("same");
    extract(&archive, &dest, &["-p"]);
    assert_eq!(ids(&dest.join("tree/a.txt")), (12345, 54321));
    assert_eq!(ids(&dest.join("tree/sub/b.log")), (1, 1));
    assert_eq!(ids(&dest.join("tree/link")), (4242, 4343), "a symbolic link's own owner");
    assert_eq!(ids(&dest.join("tree/sub/c.txt")), (777, 778));
    assert_eq!(fs::metadata(dest.join("tree/sub/c.txt")).unwrap().mode() & 0o7777, 0o4755);

    let dest = work.path().join("none");
    extract(&archive, &dest, &["--no-same-owner"]);
    for f in ["tree/a.txt", "tree/sub/b.log", "tree/link", "tree"] {
        assert_eq!(ids(&dest.join(f)), (0, 0), "{f}");
    }
}

/// GNU tar's `--owner=NAME:ID` stores a name and an id that disagree:
/// extraction maps the name to the local id, falls back to the stored id
/// for a name unknown here, and `--numeric-owner` takes the ids.
#[test]
fn names_map_to_local_ids_unless_numeric_owner() {
    if !have_root() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("t");
    fs::create_dir(&tree).unwrap();
    fs::write(tree.join("known"), b"k").unwrap();
    fs::write(tree.join("unknown"), b"u").unwrap();
    let tar = work.path().join("t.tar");
    sh(&format!(
        "cd {0} && tar -cf t1.tar --owner=daemon:4242 --group=daemon:4343 t/known \
         && tar -cf t2.tar --owner=nosuchuser-lb:4545 --group=nosuchgroup-lb:4646 t/unknown \
         && tar -Af t1.tar t2.tar && mv t1.tar {1}",
        work.path().display(),
        tar.display()
    ));
    let archive = work.path().join("t.lbox");
    let out = run(lockbox().arg("create").args(CHEAP).arg("--from-tar").arg(&tar).arg("-o").arg(&archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dest = work.path().join("names");
    extract(&archive, &dest, &[]);
    assert_eq!(ids(&dest.join("t/known")), (1, 1), "daemon is uid 1 here");
    assert_eq!(ids(&dest.join("t/unknown")), (4545, 4646));
    let dest = work.path().join("numeric");
    extract(&archive, &dest, &["--numeric-owner"]);
    assert_eq!(ids(&dest.join("t/known")), (4242, 4343));

    // export writes the names back (ustar uname/gname).
    let out = run(lockbox().arg("export").arg(&archive).arg("-o").arg("-"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    fs::write(work.path().join("back.tar"), &out.stdout).unwrap();
    let listing = sh(&format!("tar -tvf {}", work.path().join("back.tar").display()));
    assert!(
        listing.contains("daemon/daemon") && listing.contains("nosuchuser-lb/nosuchgroup-lb"),
        "{listing}"
    );
}

#[test]
fn same_owner_as_a_user_is_refused_up_front_and_the_default_keeps_their_own() {
    if !have_root() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    super::small_tree(work.path());
    sh(&format!("chown -R 12345:54321 {}/tree", work.path().display()));
    let archive = archive_tree(work.path(), &[]);
    open_to_all(work.path());
    fs::set_permissions(&archive, fs::Permissions::from_mode(0o644)).unwrap();
    let dest = work.path().join("dest");
    fs::create_dir(&dest).unwrap();
    open_to_all(&dest);
    let (a, d) = (archive.to_str().unwrap(), dest.to_str().unwrap());

    let out = as_nobody(&["extract", a, "-C", d, "--same-owner"]);
    assert_fails(&out, 2, "--same-owner needs root");
    assert_eq!(fs::read_dir(&dest).unwrap().count(), 0, "nothing written");

    let out = as_nobody(&["extract", a, "-C", d]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(ids(&dest.join("tree/a.txt")), (65534, 65534));
}

/// A 3 GiB file with three small data regions: stored without its holes,
/// extracted sparse and equal byte for byte, read whole by `cat` and
/// checked by `verify` over its map and stored bytes.
#[test]
fn sparse_files_are_stored_and_restored_without_their_holes() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    fs::create_dir(&tree).unwrap();
    let sparse = tree.join("disk.img");
    const GIB: u64 = 1 << 30;
    {
        use std::os::unix::fs::FileExt;
        let f = fs::File::create(&sparse).unwrap();
        f.write_all_at(&[0xab; 100_000], 0).unwrap();
        f.write_all_at(b"middle of nowhere", GIB + 12345).unwrap();
        f.write_all_at(&[7; 70_000], 3 * GIB - 70_000).unwrap();
    }
    // A file ending in a hole, and one that is all hole.
    sh(&format!("printf tail > {0}/ends-in-hole && truncate -s 50M {0}/ends-in-hole", tree.display()));
    sh(&format!("truncate -s 64M {}/all-hole", tree.display()));
    let archive = archive_tree(work.path(), &[]);
    let archive_len = fs::metadata(&archive).unwrap().len();
    assert!(archive_len < 2 << 20, "archive of {archive_len} bytes stores the holes");

    let dest = work.path().join("dest");
    extract(&archive, &dest, &[]);
    for name in ["disk.img", "ends-in-hole", "all-hole"] {
        let (orig, back) = (tree.join(name), dest.join("tree").join(name));
        sh(&format!("cmp {} {}", orig.display(), back.display()));
        let md = fs::metadata(&back).unwrap();
        assert_eq!(md.len(), fs::metadata(&orig).unwrap().len(), "{name}");
        assert!(md.blocks() * 512 < 4 << 20, "{name}: {} blocks allocated", md.blocks());
    }

    let out = run(lockbox().args(["verify", "--json"]).arg(&archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // A sparse file's digest covers its map and stored bytes, not its
    // holes (FORMAT.md §3.5b), so it is not what sha256sum says.
    let entry = listed(&archive, "tree/ends-in-hole");
    let sum = sh(&format!("sha256sum {}/ends-in-hole", tree.display()));
    assert_ne!(entry["sha256"].as_str().unwrap(), sum.split(' ').next().unwrap());
    // Data is found by the block: the 4 bytes' block, not the 50 MiB.
    assert!(entry["stored_size"].as_u64().is_some_and(|n| (4..=64 << 10).contains(&n)), "{entry}");

    let cmd = format!(
        "LOCKBOX_PASSWORD='{PASSWORD}' {} cat {} tree/disk.img | cmp - {}",
        env!("CARGO_BIN_EXE_lockbox"),
        archive.display(),
        sparse.display()
    );
    sh(&cmd);
}

/// `create --xattrs` stores every attribute and ACL, `extract --xattrs`
/// puts them back (read with the real getfattr and getfacl); without the
/// flag none are restored; as a user, a namespace the kernel refuses is a
/// warning, not a failure.
#[test]
fn xattrs_and_acls_round_trip_with_the_real_tools() {
    if !have_root() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let tree = super::small_tree(work.path());
    let t = tree.display();
    let set = format!(
        "setfattr -n user.note -v 'hello world' {t}/a.txt && setfattr -n user.bin -v 0x00ff10 {t}/a.txt \
         && setfattr -n trusted.secret -v root-only {t}/sub/b.log \
         && setfacl -m u:12345:rw,g:54321:r {t}/sub/c.txt && setfacl -d -m g:54321:rx {t}/sub \
         && setfattr -n user.dir -v d {t}/sub"
    );
    if Std::new("sh").arg("-c").arg(&set).status().map_or(true, |s| !s.success()) {
        return skip(
            Need::Xattrs,
            "the file system takes no user xattrs or ACLs, or setfattr/setfacl are missing",
        );
    }
    let archive = archive_tree(work.path(), &["--xattrs"]);
    let dump = |root: &Path| {
        sh(&format!("cd {} && getfattr -R -h -d -m - -e hex tree | grep -v '^$' | sort", root.display()))
    };
    let acls = |root: &Path| sh(&format!("cd {} && getfacl -R -p tree/sub 2>/dev/null", root.display()));

    let dest = work.path().join("with");
    extract(&archive, &dest, &["--xattrs"]);
    assert_eq!(dump(&dest), dump(work.path()));
    assert!(dump(&dest).contains("user.note=0x68656c6c6f20776f726c64"), "{}", dump(&dest));
    assert_eq!(acls(&dest), acls(work.path()));
    assert!(acls(&dest).contains("user:12345:rw-"), "{}", acls(&dest));

    let dest = work.path().join("without");
    extract(&archive, &dest, &[]);
    assert!(!dump(&dest).contains("user."), "{}", dump(&dest));

    // A user may write user.* but not trusted.*: a warning, exit 0.
    open_to_all(work.path());
    fs::set_permissions(&archive, fs::Permissions::from_mode(0o644)).unwrap();
    let dest = work.path().join("user");
    fs::create_dir(&dest).unwrap();
    open_to_all(&dest);
    let out = as_nobody(&["extract", archive.to_str().unwrap(), "-C", dest.to_str().unwrap(), "--xattrs"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("warning") && err.contains("trusted.secret"), "{err}");
    assert!(!err.contains("user.note"), "{err}");
    assert!(dump(&dest).contains("user.note="), "{}", dump(&dest));
}

#[test]
fn create_from_tar_keeps_pax_xattrs_and_export_writes_them() {
    let work = tempfile::tempdir().unwrap();
    let tree = super::small_tree(work.path());
    if !Std::new("setfattr")
        .args(["-n", "user.tag", "-v", "blue"])
        .arg(tree.join("a.txt"))
        .status()
        .unwrap()
        .success()
    {
        return skip(Need::Xattrs, "the file system takes no user xattrs");
    }
    let tar = work.path().join("t.tar");
    sh(&format!(
        "cd {} && tar --xattrs --xattrs-include='*' -cf {} tree",
        work.path().display(),
        tar.display()
    ));
    let archive = work.path().join("t.lbox");
    let out = run(lockbox().arg("create").args(CHEAP).arg("--from-tar").arg(&tar).arg("-o").arg(&archive));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = run(lockbox().arg("export").arg(&archive).arg("-o").arg(work.path().join("back.tar")));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dest = work.path().join("dest");
    fs::create_dir(&dest).unwrap();
    sh(&format!(
        "tar --xattrs --xattrs-include='*' -xf {} -C {}",
        work.path().join("back.tar").display(),
        dest.display()
    ));
    let got = sh(&format!("getfattr -n user.tag --only-values {}", dest.join("tree/a.txt").display()));
    assert_eq!(got, "blue");
}
