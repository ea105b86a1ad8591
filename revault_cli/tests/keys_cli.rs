//! Public keys through the real `lockbox` binary: `keygen`, `create -r/-R`,
//! reading with `-i`, and interoperation with the real `age-keygen` and
//! `ssh-keygen`. No password is set in the environment: a key-only
//! archive must not need one.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use assert_cmd::Command;
use tempfile::TempDir;

use crate::util::{lockbox_without_password, ok, CHEAP};

fn lockbox() -> Command {
    Command::from_std(lockbox_without_password())
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `work/src/note.txt`, archived to `work/a.lbox` for `recipient_args`.
fn create(work: &Path, recipient_args: &[&str]) -> std::path::PathBuf {
    fs::create_dir_all(work.join("src")).unwrap();
    fs::write(work.join("src/note.txt"), b"for your eyes only\n").unwrap();
    let archive = work.join("a.lbox");
    ok(lockbox()
        .args(["create", "-o"])
        .arg(&archive)
        .arg("-C")
        .arg(work.join("src"))
        .args(recipient_args)
        .arg("note.txt")
        .output()
        .unwrap());
    archive
}

fn cat_with(archive: &Path, identity: &Path) -> Output {
    lockbox().arg("-i").arg(identity).arg("cat").arg(archive).arg("note.txt").output().unwrap()
}

#[test]
fn keygen_then_create_and_read_without_a_password() {
    let work = TempDir::new().unwrap();
    for pq in [false, true] {
        let key = work.path().join(format!("key-{pq}.txt"));
        let mut keygen = lockbox();
        keygen.args(["keygen", "-o"]).arg(&key);
        if pq {
            keygen.arg("--pq");
        }
        let recipient = stdout(&ok(keygen.output().unwrap()));
        assert!(recipient.starts_with(if pq { "age1pq1" } else { "age1" }), "{recipient}");
        assert_eq!(fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        let again = lockbox().args(["keygen", "-o"]).arg(&key).output().unwrap();
        assert_eq!(again.status.code(), Some(1), "keygen refuses to overwrite");

        let dir = work.path().join(format!("pq-{pq}"));
        let archive = create(&dir, &["-r", &recipient]);
        let read = ok(cat_with(&archive, &key));
        assert_eq!(stdout(&read), "for your eyes only");
        assert!(read.stderr.is_empty(), "no warning at 0600");
        let dest = dir.join("out");
        fs::create_dir(&dest).unwrap();
        ok(lockbox().arg("-i").arg(&key).arg("extract").arg(&archive).arg("-C").arg(&dest).output().unwrap());
        assert_eq!(fs::read(dest.join("note.txt")).unwrap(), b"for your eyes only\n");
    }
}

#[test]
fn wrong_identity_and_mixed_recipients_fail_clearly() {
    let work = TempDir::new().unwrap();
    let (x, other, pq) = (work.path().join("x"), work.path().join("other"), work.path().join("pq"));
    let recipient = stdout(&ok(lockbox().args(["keygen", "-o"]).arg(&x).output().unwrap()));
    ok(lockbox().args(["keygen", "-o"]).arg(&other).output().unwrap());
    let pq_recipient = stdout(&ok(lockbox().args(["keygen", "--pq", "-o"]).arg(&pq).output().unwrap()));
    let archive = create(work.path(), &["-r", &recipient]);
    let out = cat_with(&archive, &other);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no identity matched"));
    let mixed = lockbox()
        .args(["create", "-o"])
        .arg(work.path().join("m.lbox"))
        .arg("-C")
        .arg(work.path().join("src"))
        .args(["-r", &recipient, "-r", &pq_recipient, "note.txt"])
        .output()
        .unwrap();
    assert_eq!(mixed.status.code(), Some(2), "{}", String::from_utf8_lossy(&mixed.stderr));
    assert!(String::from_utf8_lossy(&mixed.stderr).contains("--allow-mixed-recipients"));
    assert!(!work.path().join("m.lbox").exists(), "nothing written");
    let bad = lockbox().args(["create", "-o", "x.lbox", "-r", "age1notarecipient", "."]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
}

/// Keys made by the real tools: `age-keygen` (X25519) and `ssh-keygen`
/// (ed25519), through `-R` recipients files.
#[test]
fn keys_from_age_keygen_and_ssh_keygen_work() {
    let work = TempDir::new().unwrap();
    let age_key = work.path().join("age.txt");
    let made = std::process::Command::new("age-keygen").arg("-o").arg(&age_key).output();
    let ssh_key = work.path().join("id_ed25519");
    let ssh = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&ssh_key)
        .output();
    let (Ok(made), Ok(ssh)) = (made, ssh) else {
        panic!("age-keygen and ssh-keygen are needed (.ci/run installs age and openssh-client)");
    };
    assert!(made.status.success() && ssh.status.success());
    let age_recipient = fs::read_to_string(&age_key)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("# public key: ").map(str::to_string))
        .unwrap();
    let list = work.path().join("recipients.txt");
    let ssh_pub = fs::read_to_string(ssh_key.with_extension("pub")).unwrap();
    fs::write(&list, format!("# a team\n{age_recipient}\n{ssh_pub}")).unwrap();
    let archive = create(work.path(), &["-R", list.to_str().unwrap()]);
    fs::set_permissions(&age_key, fs::Permissions::from_mode(0o644)).unwrap();
    let read = ok(cat_with(&archive, &age_key));
    assert_eq!(stdout(&read), "for your eyes only");
    assert!(String::from_utf8_lossy(&read.stderr).contains("readable by others"), "like ssh, a warning");
    assert_eq!(stdout(&ok(cat_with(&archive, &ssh_key))), "for your eyes only");
}

/// The wrong kind of unlock is refused before any prompt, saying how the
/// archive is locked; an SSH key given to `--key-file` is a usage error.
#[test]
fn the_wrong_kind_of_key_is_told_how_the_archive_is_locked() {
    let work = TempDir::new().unwrap();
    let x = work.path().join("x");
    let recipient = stdout(&ok(lockbox().args(["keygen", "-o"]).arg(&x).output().unwrap()));
    let archive = create(work.path(), &["-r", &recipient]);
    let refused = |out: Output, says: &str| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    };
    let said = "a.lbox is locked with 1 recipient (X25519), not a password: open it with -i IDENTITY_FILE";
    refused(lockbox().arg("list").arg(&archive).output().unwrap(), said);
    let with_password = lockbox().env("LOCKBOX_PASSWORD", "pw").arg("list").arg(&archive).output();
    refused(with_password.unwrap(), said);
    let key = work.path().join("key");
    ok(lockbox().args(["keygen", "--symmetric", "-o"]).arg(&key).output().unwrap());
    refused(
        lockbox().arg("--key-file").arg(&key).arg("list").arg(&archive).output().unwrap(),
        "not a key file",
    );
    let by_password = work.path().join("p.lbox");
    let mut made = lockbox();
    made.env("LOCKBOX_PASSWORD", "pw").arg("create").args(CHEAP).arg("-o").arg(&by_password);
    ok(made.arg(work.path().join("src")).output().unwrap());
    let with_identity = lockbox().arg("-i").arg(&x).arg("list").arg(&by_password).output().unwrap();
    refused(with_identity, "is locked with a password, not a recipient (-i): open it with its password");
    let ssh_key = work.path().join("id_ed25519");
    tool("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f"], &ssh_key);
    let ssh_as_key_file = lockbox().arg("--key-file").arg(&ssh_key).arg("list").arg(&archive).output();
    refused(ssh_as_key_file.unwrap(), "SSH and age keys go to -r and -i");
}

/// `key list/add/remove` and `passwd` rewrite slots in place; any slot's
/// key unlocks the change; the last slot stays.
#[test]
fn key_slots_are_managed_from_the_command_line() {
    let work = TempDir::new().unwrap();
    let archive = {
        fs::create_dir_all(work.path().join("src")).unwrap();
        fs::write(work.path().join("src/note.txt"), b"for your eyes only\n").unwrap();
        let archive = work.path().join("a.lbox");
        ok(lockbox()
            .env("LOCKBOX_PASSWORD", "first")
            .args(["create", "-o"])
            .arg(&archive)
            .arg("-C")
            .arg(work.path().join("src"))
            .args(CHEAP)
            .arg("note.txt")
            .output()
            .unwrap());
        archive
    };
    let key = work.path().join("key.txt");
    let recipient = stdout(&ok(lockbox().args(["keygen", "-o"]).arg(&key).output().unwrap()));
    let denied = lockbox()
        .env("LOCKBOX_PASSWORD", "wrong")
        .args(["key", "add"])
        .arg(&archive)
        .args(["-r", &recipient])
        .output()
        .unwrap();
    assert_eq!(denied.status.code(), Some(3), "{}", String::from_utf8_lossy(&denied.stderr));
    ok(lockbox()
        .env("LOCKBOX_PASSWORD", "first")
        .args(["key", "add"])
        .arg(&archive)
        .args(["-r", &recipient])
        .output()
        .unwrap());
    let listed = stdout(&ok(lockbox().args(["key", "list"]).arg(&archive).output().unwrap()));
    assert!(listed.contains("0  password") && listed.contains(" 1  recipient  X25519"), "{listed}");
    assert_eq!(stdout(&ok(cat_with(&archive, &key))), "for your eyes only");

    // passwd: the identity cannot stand in for the old password; the old
    // password stops working, the new one works.
    ok(lockbox()
        .env("LOCKBOX_PASSWORD", "first")
        .env("LOCKBOX_NEW_PASSWORD", "second")
        .arg("passwd")
        .arg(&archive)
        .output()
        .unwrap());
    let cat = |pw: &str| {
        lockbox().env("LOCKBOX_PASSWORD", pw).arg("cat").arg(&archive).arg("note.txt").output().unwrap()
    };
    assert_eq!(cat("first").status.code(), Some(3));
    assert_eq!(stdout(&ok(cat("second"))), "for your eyes only");

    // Remove the recipient with the identity itself, then refuse the last.
    let slot = listed
        .lines()
        .find(|l| l.contains("recipient"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    ok(lockbox().arg("-i").arg(&key).args(["key", "remove"]).arg(&archive).arg(&slot).output().unwrap());
    // No recipient slot is left: `-i` is the wrong kind of key now.
    assert_eq!(cat_with(&archive, &key).status.code(), Some(2));
    let listed = stdout(&ok(lockbox().args(["key", "list"]).arg(&archive).output().unwrap()));
    let last = listed.split_whitespace().next().unwrap().to_string();
    let refused = lockbox()
        .env("LOCKBOX_PASSWORD", "second")
        .args(["key", "remove"])
        .arg(&archive)
        .arg(&last)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("last key slot"));
    assert_eq!(stdout(&ok(cat("second"))), "for your eyes only");
}

/// Key files for scripts: `keygen --symmetric`, `--key-file` on create and
/// on reading commands, no password and no KDF; another key file is
/// refused with exit code 3.
#[test]
fn key_files_lock_and_open_archives() {
    let work = TempDir::new().unwrap();
    let (key, other) = (work.path().join("k"), work.path().join("other"));
    for path in [&key, &other] {
        ok(lockbox().args(["keygen", "--symmetric", "-o"]).arg(path).output().unwrap());
        assert_eq!(fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let archive = create(work.path(), &["--key-file", key.to_str().unwrap()]);
    let cat = |k: &Path| {
        lockbox().arg("--key-file").arg(k).arg("cat").arg(&archive).arg("note.txt").output().unwrap()
    };
    assert_eq!(stdout(&ok(cat(&key))), "for your eyes only");
    let refused = cat(&other);
    assert_eq!(refused.status.code(), Some(3), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("wrong key file"));
    ok(lockbox()
        .arg("--key-file")
        .arg(&key)
        .args(["key", "add"])
        .arg(&archive)
        .arg("--new-key-file")
        .arg(&other)
        .output()
        .unwrap());
    assert_eq!(stdout(&ok(cat(&other))), "for your eyes only");
    let listed = stdout(&ok(lockbox().args(["key", "list"]).arg(&archive).output().unwrap()));
    assert_eq!(listed.matches("key file").count(), 2, "{listed}");
    fs::write(work.path().join("bad"), "LOCKBOX-KEY-1 nothex\n").unwrap();
    let bad = cat(&work.path().join("bad"));
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid key file"));
}

/// Runs `program` with `args`, panicking with a hint when it is missing.
fn tool(program: &str, args: &[&str], path: &Path) {
    let made = std::process::Command::new(program).args(args).arg(path).output();
    let made = made.unwrap_or_else(|_| panic!("{program} is needed (.ci/run installs it)"));
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
}

/// One archive with a slot of every kind (password, key file, X25519,
/// hybrid, ssh-ed25519, ssh-rsa): each key alone opens it.
#[test]
fn every_slot_kind_in_one_archive_each_opens_it_alone() {
    let work = TempDir::new().unwrap();
    let p = |name: &str| work.path().join(name);
    let x = stdout(&ok(lockbox().args(["keygen", "-o"]).arg(p("x")).output().unwrap()));
    let pq = stdout(&ok(lockbox().args(["keygen", "--pq", "-o"]).arg(p("pq")).output().unwrap()));
    ok(lockbox().args(["keygen", "--symmetric", "-o"]).arg(p("kf")).output().unwrap());
    tool("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f"], &p("ed"));
    tool("ssh-keygen", &["-q", "-t", "rsa", "-b", "2048", "-N", "", "-f"], &p("rsa"));
    let list = p("recipients");
    let ed = fs::read_to_string(p("ed.pub")).unwrap();
    let rsa = fs::read_to_string(p("rsa.pub")).unwrap();
    fs::write(&list, format!("{x}\n{pq}\n{ed}{rsa}")).unwrap();
    let archive = {
        fs::create_dir_all(p("src")).unwrap();
        fs::write(p("src/note.txt"), b"for your eyes only\n").unwrap();
        let archive = p("a.lbox");
        ok(lockbox()
            .env("LOCKBOX_PASSWORD", "pw")
            .args(["create", "-o"])
            .arg(&archive)
            .arg("-C")
            .arg(p("src"))
            .args(CHEAP)
            .arg("note.txt")
            .output()
            .unwrap());
        archive
    };
    let add = |extra: &[&str]| {
        ok(lockbox()
            .env("LOCKBOX_PASSWORD", "pw")
            .args(["key", "add"])
            .arg(&archive)
            .args(extra)
            .output()
            .unwrap())
    };
    add(&["--allow-mixed-recipients", "-R", list.to_str().unwrap()]);
    add(&["--new-key-file", p("kf").to_str().unwrap()]);
    let listed = stdout(&ok(lockbox().args(["key", "list"]).arg(&archive).output().unwrap()));
    assert_eq!(listed.lines().count(), 6, "{listed}");
    for identity in ["x", "pq", "ed", "rsa"] {
        assert_eq!(stdout(&ok(cat_with(&archive, &p(identity)))), "for your eyes only", "{identity}");
    }
    let by_key_file =
        lockbox().arg("--key-file").arg(p("kf")).arg("cat").arg(&archive).arg("note.txt").output();
    assert_eq!(stdout(&ok(by_key_file.unwrap())), "for your eyes only");
    let by_password =
        lockbox().env("LOCKBOX_PASSWORD", "pw").arg("cat").arg(&archive).arg("note.txt").output().unwrap();
    assert_eq!(stdout(&ok(by_password)), "for your eyes only");
}

/// Identity files cut short (age, hybrid, OpenSSH) or not identities at
/// all: one clear line, exit 2 or 3, nothing extracted.
#[test]
fn truncated_identity_files_fail_cleanly() {
    let work = TempDir::new().unwrap();
    let key = work.path().join("key");
    let recipient = stdout(&ok(lockbox().args(["keygen", "-o"]).arg(&key).output().unwrap()));
    let archive = create(work.path(), &["-r", &recipient]);
    let pq = work.path().join("pq");
    ok(lockbox().args(["keygen", "--pq", "-o"]).arg(&pq).output().unwrap());
    let ssh = work.path().join("ed");
    tool("ssh-keygen", &["-q", "-t", "ed25519", "-N", "", "-f"], &ssh);
    let dest = work.path().join("out");
    fs::create_dir(&dest).unwrap();
    for (name, source) in [("age", &key), ("pq", &pq), ("ssh", &ssh)] {
        let full = fs::read(source).unwrap();
        for cut in [full.len() - 5, full.len() / 2, 20] {
            let bad = work.path().join(format!("{name}-cut-{cut}"));
            fs::write(&bad, &full[..cut]).unwrap();
            fs::set_permissions(&bad, fs::Permissions::from_mode(0o600)).unwrap();
            let out = lockbox()
                .arg("-i")
                .arg(&bad)
                .arg("extract")
                .arg(&archive)
                .arg("-C")
                .arg(&dest)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(matches!(out.status.code(), Some(2 | 3)), "{name} cut at {cut}: {stderr}");
            assert!(
                stderr.starts_with("lockbox: ") && stderr.lines().count() == 1,
                "{name} cut at {cut}: {stderr}"
            );
            assert!(!stderr.contains("AGE-SECRET-KEY"), "no key material in messages: {stderr}");
            assert_eq!(fs::read_dir(&dest).unwrap().count(), 0, "nothing extracted");
        }
    }
}

/// A password archive carries 16 slots of 256 bytes; adding a post-quantum
/// recipient (a 1,652-byte slot) rewrites it with 2048-byte slots, every
/// state kept, and both keys open it. A header naming a slot size the
/// format does not have is refused as damage.
#[test]
fn a_large_recipient_grows_the_slot_table() {
    let work = TempDir::new().unwrap();
    fs::write(work.path().join("note.txt"), b"for your eyes only\n").unwrap();
    let archive = work.path().join("a.lbox");
    ok(lockbox()
        .env("LOCKBOX_PASSWORD", "pw")
        .arg("create")
        .args(CHEAP)
        .arg("-o")
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("note.txt")
        .output()
        .unwrap());
    let slot_len = |bytes: &[u8]| u16::from_le_bytes([bytes[30], bytes[31]]);
    assert_eq!(slot_len(&fs::read(&archive).unwrap()), 256);
    // A second state, which the rewrite keeps.
    fs::write(work.path().join("later.txt"), "second state").unwrap();
    ok(lockbox()
        .env("LOCKBOX_PASSWORD", "pw")
        .arg("add")
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("later.txt")
        .output()
        .unwrap());

    let pq = work.path().join("pq.txt");
    let recipient = stdout(&ok(lockbox().args(["keygen", "--pq", "-o"]).arg(&pq).output().unwrap()));
    ok(lockbox()
        .env("LOCKBOX_PASSWORD", "pw")
        .args(["key", "add"])
        .arg(&archive)
        .args(["-r", &recipient])
        .output()
        .unwrap());
    let bytes = fs::read(&archive).unwrap();
    assert_eq!(slot_len(&bytes), 2048);
    assert_eq!(stdout(&ok(cat_with(&archive, &pq))), "for your eyes only");
    let by_password =
        lockbox().env("LOCKBOX_PASSWORD", "pw").arg("cat").arg(&archive).arg("note.txt").output().unwrap();
    assert_eq!(stdout(&ok(by_password)), "for your eyes only");
    let at_first =
        lockbox().env("LOCKBOX_PASSWORD", "pw").args(["list", "--session", "1"]).arg(&archive).output();
    assert_eq!(stdout(&ok(at_first.unwrap())), "note.txt", "the rewrite keeps every state");
    let last =
        lockbox().env("LOCKBOX_PASSWORD", "pw").args(["list", "--session", "2"]).arg(&archive).output();
    assert_eq!(stdout(&ok(last.unwrap())), "later.txt\nnote.txt");

    let mut bad = bytes;
    bad[30..32].copy_from_slice(&768u16.to_le_bytes());
    fs::write(&archive, &bad).unwrap();
    // A slot size the format does not allow, at offset 0 only: read
    // through the header copy at the end of the last session, one warning.
    let read_around = cat_with(&archive, &pq);
    let stderr = String::from_utf8_lossy(&read_around.stderr);
    assert_eq!(read_around.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("key-slot table") && stderr.lines().count() == 1, "{stderr}");
}
