//! `lockbox mount s3://…`: the mount reads one file in at most twice the
//! GETs `lockbox cat` of the same path sends (the kernel looks each path
//! component up on its own), and reads it right.

use std::fs;

use tempfile::TempDir;

use super::{create, lockbox, mount_command, server, url, BUCKET};
use crate::mount_cli::{have_fuse, Mounted};
use crate::util::{ok, run};

#[test]
fn a_mount_of_an_s3_archive_reads_one_file_in_few_gets() {
    if !have_fuse() {
        return;
    }
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    let src = tmp.path().join("src");
    for d in 0..20 {
        let dir = src.join(format!("many/dir{d:02}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            fs::write(dir.join(format!("file{f:03}.txt")), format!("file {d} {f}\n").repeat(10)).unwrap();
        }
    }
    corpora::write_random_file(&src.join("many/blob.bin"), 3, 6 << 20).unwrap();
    ok(create(&ep, &url("mount.lbox"), &src, "many", &[]));
    let before = moto.gets_of(BUCKET, "mount.lbox");
    ok(run(lockbox(&ep).arg("cat").arg(url("mount.lbox")).arg("many/dir13/file042.txt")));
    let cat = moto.gets_of(BUCKET, "mount.lbox") - before;

    let m = Mounted::spawn(mount_command(&ep, "mount.lbox"), tmp.path());
    let before = moto.gets_of(BUCKET, "mount.lbox");
    let got = fs::read(m.point.join("many/dir13/file042.txt")).unwrap();
    let mount = moto.gets_of(BUCKET, "mount.lbox") - before;
    assert_eq!(got, "file 13 42\n".repeat(10).as_bytes());
    assert!(mount <= 2 * cat, "{mount} GETs through the mount, {cat} for cat");
    eprintln!("one file through an s3:// mount: {mount} GETs; lockbox cat: {cat}");
    drop(m);
}
