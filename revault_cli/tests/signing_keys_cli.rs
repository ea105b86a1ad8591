//! Signing keys through the real `lockbox` binary: `keygen --sign` writes
//! the key (0600) and its `.pub`, prints the fingerprint, refuses to
//! overwrite, protects with a passphrase; `keygen --sign -y` prints the
//! fingerprint again; bad input gets one line, its exit code and nothing
//! left behind.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use tempfile::TempDir;

use crate::util::{code, lockbox_without_password, ok, stderr};

fn lockbox(args: &[&str], paths: &[&Path]) -> Output {
    let mut cmd = lockbox_without_password();
    cmd.args(args).args(paths).stdin(std::process::Stdio::null());
    cmd.output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The error is one line (after `lockbox: `) and names `what`.
fn fails(out: &Output, exit: i32, what: &str) {
    assert_eq!(code(out), exit, "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(what), "{err:?} names {what:?}");
}

#[test]
fn keygen_sign_writes_the_key_and_its_pub_and_prints_the_fingerprint() {
    let work = TempDir::new().unwrap();
    let key = work.path().join("author.key");
    let public = work.path().join("author.key.pub");
    let fingerprint = stdout(&ok(lockbox(&["keygen", "--sign", "-o"], &[&key])));
    assert!(fingerprint.starts_with("lbsig1") && fingerprint.len() == 64, "{fingerprint}");
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(&public), 0o644);
    let secret_text = fs::read_to_string(&key).unwrap();
    assert!(secret_text.lines().any(|l| l.starts_with("LOCKBOX-SIGNING-KEY-1 ")), "{secret_text}");
    let public_text = fs::read_to_string(&public).unwrap();
    assert!(public_text.contains(&format!("# fingerprint: {fingerprint}\n")));
    let line = public_text.lines().last().unwrap();
    assert_eq!(line.len(), "LOCKBOX-SIGNING-PUBLIC-KEY-1 ".len() + 2648, "1984 bytes in base64");

    for file in [&key, &public] {
        assert_eq!(stdout(&ok(lockbox(&["keygen", "--sign", "-y"], &[file]))), fingerprint);
    }

    // Never over an existing key, nor over an existing .pub; nothing left behind.
    let again = lockbox(&["keygen", "--sign", "-o"], &[&key]);
    fails(&again, 1, "author.key");
    assert_eq!(fs::read_to_string(&key).unwrap(), secret_text);
    assert_eq!(fs::read_to_string(&public).unwrap(), public_text);
    let other = work.path().join("other.key");
    fs::write(work.path().join("other.key.pub"), "mine\n").unwrap();
    fails(&lockbox(&["keygen", "--sign", "-o"], &[&other]), 1, "other.key.pub");
    assert!(!other.exists(), "the secret key is not left without its .pub");
    assert_eq!(fs::read_to_string(work.path().join("other.key.pub")).unwrap(), "mine\n");

    let second = stdout(&ok(lockbox(&["keygen", "--sign", "-o"], &[&work.path().join("second.key")])));
    assert_ne!(second, fingerprint, "a fresh key each time");
}

#[test]
fn keygen_sign_with_a_passphrase() {
    let work = TempDir::new().unwrap();
    let (key, pass, wrong, empty) = (
        work.path().join("author.key"),
        work.path().join("pass"),
        work.path().join("wrong"),
        work.path().join("empty"),
    );
    fs::write(&pass, "correct horse\n").unwrap();
    fs::write(&wrong, "incorrect horse\n").unwrap();
    fs::write(&empty, "\n").unwrap();
    let fingerprint =
        stdout(&ok(lockbox(&["keygen", "--sign", "--passphrase-file"], &[&pass, Path::new("-o"), &key])));
    let text = fs::read_to_string(&key).unwrap();
    assert!(text.contains("LOCKBOX-SIGNING-KEY-ARGON2ID-1 65536 3 4 "), "the slot defaults: {text}");
    assert!(!text.contains("LOCKBOX-SIGNING-KEY-1 "));

    let shown = ok(lockbox(&["keygen", "--sign", "--passphrase-file"], &[&pass, Path::new("-y"), &key]));
    assert_eq!(stdout(&shown), fingerprint);
    let public = work.path().join("author.key.pub");
    assert_eq!(
        stdout(&ok(lockbox(&["keygen", "--sign", "-y"], &[&public]))),
        fingerprint,
        "a .pub needs none"
    );

    let bad = lockbox(&["keygen", "--sign", "--passphrase-file"], &[&wrong, Path::new("-y"), &key]);
    fails(&bad, 3, "wrong passphrase");
    fails(&lockbox(&["keygen", "--sign", "-y"], &[&key]), 2, "passphrase-protected");

    // No passphrase to protect with: refused before anything is written.
    let none = work.path().join("none.key");
    fails(&lockbox(&["keygen", "--sign", "--passphrase", "-o"], &[&none]), 2, "--passphrase-file");
    fails(
        &lockbox(&["keygen", "--sign", "--passphrase-file"], &[&empty, Path::new("-o"), &none]),
        2,
        "empty passphrase",
    );
    assert!(!none.exists() && !work.path().join("none.key.pub").exists());
}

#[test]
fn keygen_sign_refuses_bad_input_cleanly() {
    let work = TempDir::new().unwrap();
    let key = work.path().join("author.key");
    ok(lockbox(&["keygen", "--sign", "-o"], &[&key]));
    let text = fs::read_to_string(&key).unwrap();
    let broken = work.path().join("broken.key");
    fs::write(&broken, text.replace("LOCKBOX-SIGNING-KEY-1 ", "LOCKBOX-SIGNING-KEY-1 zz")).unwrap();
    fails(&lockbox(&["keygen", "--sign", "-y"], &[&broken]), 2, "broken.key");
    let age = work.path().join("age.txt");
    ok(lockbox(&["keygen", "-o"], &[&age]));
    fails(&lockbox(&["keygen", "--sign", "-y"], &[&age]), 2, "invalid signing key file");
    fails(&lockbox(&["keygen", "--sign", "-y"], &[&work.path().join("missing.key")]), 1, "missing.key");
    fails(&lockbox(&["keygen", "--sign"], &[]), 2, "needs -o FILE");
    assert_eq!(code(&lockbox(&["keygen", "--sign", "--pq", "-o"], &[&work.path().join("x")])), 2);
    assert!(!work.path().join("x").exists());
}

/// A passphrase-protected signing key once asked only on a terminal, so
/// signing could not run from cron: `--sign-passphrase-file FILE` and
/// `LOCKBOX_SIGN_PASSPHRASE` give it, for create and for an append; `log`
/// then names the signer as `--signer` takes it.
#[test]
fn a_protected_signing_key_signs_without_a_terminal() {
    let work = TempDir::new().unwrap();
    let dir = work.path();
    let (key, pass) = (dir.join("cron.key"), dir.join("pass"));
    fs::write(&pass, "correct horse\n").unwrap();
    fs::write(dir.join("note"), b"nightly\n").unwrap();
    let fingerprint =
        stdout(&ok(lockbox(&["keygen", "--sign", "--passphrase-file"], &[&pass, Path::new("-o"), &key])));
    let archive = dir.join("a.lbox");
    let (k, a) = (key.to_str().unwrap(), archive.to_str().unwrap());
    let no_terminal = |extra: &[&str], env: Option<&str>| {
        let mut cmd = crate::util::create_cmd(&archive, dir, "note", &["-q", "--sign", k, "--overwrite"]);
        cmd.args(extra).write_stdin("");
        if let Some(passphrase) = env {
            cmd.env("LOCKBOX_SIGN_PASSPHRASE", passphrase);
        }
        cmd.output().unwrap()
    };
    fails(&no_terminal(&[], None), 2, "LOCKBOX_SIGN_PASSPHRASE");
    ok(no_terminal(&["--sign-passphrase-file", pass.to_str().unwrap()], None));
    ok(no_terminal(&[], Some("correct horse")));
    let mut add = crate::util::lockbox();
    add.args(["add", "-q", "--sign", k, a, "-C", dir.to_str().unwrap(), "note"])
        .env("LOCKBOX_SIGN_PASSPHRASE", "correct horse")
        .write_stdin("");
    ok(add.output().unwrap());
    ok(crate::util::lockbox().args(["verify", "--signer", &fingerprint, a]).output().unwrap());

    // `log` names the signer as `--signer` takes it (it showed 64 hex
    // digits, which `--signer` read as a path).
    let log = stdout(&ok(crate::util::lockbox().args(["log", a]).output().unwrap()));
    let shown = log.lines().last().and_then(|l| l.split("signed by ").nth(1)).unwrap_or_default();
    let shown = shown.split_whitespace().next().unwrap_or_default();
    assert_eq!(shown, fingerprint, "{log}");
    ok(crate::util::lockbox().args(["list", "--signer", shown, a]).output().unwrap());
}
