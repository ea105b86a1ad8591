//! What lockbox once did without a word: `create --password-file F -r
//! RECIPIENT` dropped the password (one recipient slot; opening with the
//! password then failed); `passwd` moved the password to another slot;
//! an unsigned `add` to a signed archive said nothing.

use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::Output;

use assert_cmd::Command;

use crate::util::{code, create_cmd, lockbox_without_password, ok, stderr};

fn lockbox() -> Command {
    Command::from_std(lockbox_without_password())
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `lockbox create` of `dir/note` into `archive` locked by `keys` (no
/// password from the environment).
fn create(dir: &Path, archive: &Path, keys: &[&OsStr]) -> Output {
    let mut cmd = create_cmd(archive, dir, "note", &[]);
    cmd.env_remove("LOCKBOX_PASSWORD").args(keys);
    cmd.output().unwrap()
}

#[test]
fn a_password_file_with_recipients_is_a_slot_of_its_own() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let key = dir.join("key.txt");
    let recipient = stdout(&ok(lockbox().args(["keygen", "-o"]).arg(&key).output().unwrap()));
    fs::write(dir.join("pw"), "a password\n").unwrap();
    fs::write(dir.join("note"), b"both open it\n").unwrap();
    let archive = dir.join("a.lbox");
    let pw = dir.join("pw");
    ok(create(dir, &archive, &["--password-file".as_ref(), pw.as_ref(), "-r".as_ref(), recipient.as_ref()]));
    let by_password = lockbox()
        .arg("cat")
        .arg("--password-file")
        .arg(dir.join("pw"))
        .arg(&archive)
        .arg("note")
        .output()
        .unwrap();
    assert_eq!(code(&by_password), 0, "the password was dropped: {}", stderr(&by_password));
    assert_eq!(stdout(&by_password), "both open it");
    let by_identity =
        ok(lockbox().arg("cat").arg("-i").arg(&key).arg(&archive).arg("note").output().unwrap());
    assert_eq!(stdout(&by_identity), "both open it");

    // A key file and a password file: one line, nothing written.
    let key_file = dir.join("k.key");
    fs::write(&key_file, [7u8; 32]).unwrap();
    let both = dir.join("b.lbox");
    let out = create(
        dir,
        &both,
        &["--password-file".as_ref(), pw.as_ref(), "--key-file".as_ref(), key_file.as_ref()],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!both.exists());
}

/// `passwd` moved the password to another slot number and said nothing,
/// so the next `key remove N` missed: it keeps the slot and names it.
#[test]
fn passwd_keeps_the_slot_number_and_names_it() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    fs::write(dir.join("note"), b"x").unwrap();
    fs::write(dir.join("old"), "old password\n").unwrap();
    fs::write(dir.join("new"), "new password\n").unwrap();
    let archive = dir.join("a.lbox");
    let with_password = |file: &str| {
        let mut cmd = lockbox();
        cmd.arg("--password-file").arg(dir.join(file));
        cmd
    };
    ok(create(dir, &archive, &["--password-file".as_ref(), dir.join("old").as_os_str()]));
    let key = dir.join("key.txt");
    let recipient = stdout(&ok(lockbox().args(["keygen", "-o"]).arg(&key).output().unwrap()));
    ok(with_password("old").args(["key", "add"]).arg(&archive).args(["-r", &recipient]).output().unwrap());
    let out = ok(with_password("old")
        .arg("passwd")
        .arg(&archive)
        .arg("--new-password-file")
        .arg(dir.join("new"))
        .output()
        .unwrap());
    assert!(stderr(&out).contains("slot 0"), "passwd names the slot: {}", stderr(&out));
    let listed = stdout(&ok(lockbox().args(["key", "list"]).arg(&archive).output().unwrap()));
    let first = listed.lines().next().unwrap_or_default().to_string();
    assert!(first.starts_with('0') && first.contains("password"), "the password keeps slot 0: {listed}");
    ok(with_password("new").args(["list"]).arg(&archive).output().unwrap());
}

/// An unsigned `add` to a signed archive leaves it with an unsigned last
/// session, which `--signer` readers refuse: it says so.
#[test]
fn an_unsigned_change_of_a_signed_archive_warns() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    fs::write(dir.join("a"), b"a").unwrap();
    fs::write(dir.join("b"), b"b").unwrap();
    let key = dir.join("s.key");
    ok(lockbox().args(["keygen", "--sign", "-o"]).arg(&key).output().unwrap());
    let archive = dir.join("a.lbox");
    ok(create_cmd(&archive, dir, "a", &["-q", "--sign", key.to_str().unwrap()]).output().unwrap());
    // `add -q [SIGN...] ARCHIVE -C DIR b`, which must succeed.
    let add = |sign: &[&std::ffi::OsStr]| {
        let mut cmd = crate::util::lockbox();
        cmd.args(["add", "-q"]).args(sign).arg(&archive).arg("-C").arg(dir).arg("b");
        ok(cmd.output().unwrap())
    };
    let signed = add(&["--sign".as_ref(), key.as_os_str()]);
    assert!(!stderr(&signed).contains("warning"), "{}", stderr(&signed));
    let unsigned = add(&[]);
    let err = stderr(&unsigned);
    assert!(err.contains("warning") && err.contains("--sign"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
