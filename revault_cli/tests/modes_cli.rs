//! Permission bits on extraction, as GNU tar restores them: run as root,
//! tar keeps the stored bits (`-p` is the superuser's default: a 664 file
//! comes back 664 under umask 022, a setuid file setuid); other users get
//! the umask applied and setuid, setgid and sticky dropped. lockbox once
//! applied the umask as root too, so a restored tree differed from the
//! backed-up one.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::cli::under_umask;
use crate::util::{code, create_cmd, have_root, run, stderr, NOBODY, PASSWORD};

const MODES: [(&str, u32); 2] = [("m/shared", 0o664), ("m/suid", 0o4755)];

fn extract_args(archive: &Path, dst: &Path, flag: Option<&str>) -> Vec<OsString> {
    let mut args = vec!["extract".into(), archive.into(), "-C".into(), dst.into()];
    args.extend(flag.map(Into::into));
    args
}

fn modes_of(dst: &Path) -> [u32; 2] {
    MODES.map(|(p, _)| fs::metadata(dst.join(p)).unwrap().mode() & 0o7777)
}

fn dir(work: &Path, name: &str) -> std::path::PathBuf {
    let d = work.join(name);
    fs::create_dir(&d).unwrap();
    d
}

#[test]
fn root_keeps_modes_as_tar_does_and_others_keep_the_umask() {
    if !have_root() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    fs::set_permissions(work.path(), fs::Permissions::from_mode(0o755)).unwrap();
    dir(work.path(), "m");
    for (path, mode) in MODES {
        let full = work.path().join(path);
        fs::write(&full, b"#!/bin/sh\n").unwrap();
        fs::set_permissions(&full, fs::Permissions::from_mode(mode)).unwrap();
    }
    let archive = work.path().join("m.lbox");
    let out = run(&mut create_cmd(&archive, work.path(), "m", &[]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    fs::set_permissions(&archive, fs::Permissions::from_mode(0o644)).unwrap();
    let under_022 = |args: Vec<OsString>| {
        let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
        under_umask("022", &args)
    };

    let root = dir(work.path(), "root");
    let out = under_022(extract_args(&archive, &root, None));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(modes_of(&root), [0o664, 0o4755], "root keeps the stored modes");

    let masked = dir(work.path(), "masked");
    let out = under_022(extract_args(&archive, &masked, Some("--no-same-permissions")));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(modes_of(&masked), [0o644, 0o755], "--no-same-permissions");

    let nobody = dir(work.path(), "nobody");
    std::os::unix::fs::chown(&nobody, Some(65534), Some(65534)).unwrap();
    let mut cmd = Command::new("setpriv");
    cmd.env("LOCKBOX_PASSWORD", PASSWORD)
        .args(NOBODY)
        .args(["sh", "-c", "umask 022 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_lockbox"))
        .args(extract_args(&archive, &nobody, None));
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(modes_of(&nobody), [0o644, 0o755], "others keep the umask");
}
