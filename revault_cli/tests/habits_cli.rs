//! tar's, restic's and age's habits a new user brings: `create -f ARCHIVE`
//! (clap answered with its tip "to pass '-f' as a value, use '-- -f'"); a
//! missing PATH warned about while the rest is archived (it stopped the
//! whole create); `keygen -y KEY` as `age-keygen -y` (it needed `--sign`);
//! `diff -q` as `cmp -s` (it was refused).

use crate::util::{code, create_cmd, lockbox, run, stderr, CHEAP};

#[test]
fn create_takes_f_for_the_archive_as_tar_does() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("note"), b"x").unwrap();
    let archive = work.path().join("x.lbox");
    let out = run(lockbox()
        .arg("create")
        .args(CHEAP)
        .arg("-f")
        .arg(&archive)
        .arg("-C")
        .arg(work.path())
        .arg("note"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let listed = run(lockbox().arg("list").arg(&archive));
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "note\n", "{}", stderr(&listed));
}

/// GNU tar's rule: `tar cf x.tar tree no-such` says "Cannot stat", archives
/// `tree` and exits 2. lockbox refused the whole create with exit 1.
#[test]
fn a_missing_path_is_warned_about_and_the_rest_archived_exit_2() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("tree")).unwrap();
    std::fs::write(work.path().join("tree/a.txt"), b"hello\n").unwrap();
    let archive = work.path().join("out.lbox");
    let out = run(create_cmd(&archive, work.path(), "tree", &[]).arg("no-such-input"));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let lines: Vec<&str> = std::str::from_utf8(&out.stderr).unwrap().lines().collect();
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    assert!(lines[0].starts_with("lockbox: ") && lines[0].contains("no-such-input"), "{lines:?}");
    assert!(lines[0].contains("No such file or directory"), "{lines:?}");
    let listed = run(lockbox().arg("list").arg(&archive));
    assert_eq!(String::from_utf8_lossy(&listed.stdout), "tree\ntree/a.txt\n", "{}", stderr(&listed));
}

/// None of the PATHs exists: one line, exit 2, and nothing written.
#[test]
fn no_existing_path_writes_nothing_exit_2() {
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("out.lbox");
    let out = run(&mut create_cmd(&archive, work.path(), "gone", &[]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("gone"), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "no archive and no temporary file left");
}

/// `age-keygen -y FILE` prints the identity's recipient; `lockbox keygen -y`
/// did only with `--sign`, and a signing key then needed `--sign` too.
#[test]
fn keygen_y_prints_an_identitys_recipient_and_a_signing_keys_fingerprint() {
    let work = tempfile::tempdir().unwrap();
    for pq in [false, true] {
        let key = work.path().join(format!("id-{pq}.txt"));
        let made = run(lockbox().arg("keygen").args(pq.then_some("--pq")).arg("-o").arg(&key));
        assert_eq!(code(&made), 0, "{}", stderr(&made));
        let recipient = String::from_utf8(made.stdout).unwrap();
        let shown = run(lockbox().arg("keygen").arg("-y").arg(&key));
        assert_eq!(code(&shown), 0, "{}", stderr(&shown));
        assert_eq!(String::from_utf8(shown.stdout).unwrap(), recipient, "pq {pq}");
        assert!(recipient.starts_with("age1"), "{recipient}");
    }
    let key = work.path().join("author.key");
    let made = run(lockbox().args(["keygen", "--sign", "-o"]).arg(&key));
    assert_eq!(code(&made), 0, "{}", stderr(&made));
    let fingerprint = String::from_utf8(made.stdout).unwrap();
    for file in [key.clone(), work.path().join("author.key.pub")] {
        let shown = run(lockbox().arg("keygen").arg("-y").arg(&file));
        assert_eq!(code(&shown), 0, "{}", stderr(&shown));
        assert_eq!(stderr(&shown), "", "no warning for a 0600 key nor a public file");
        assert_eq!(String::from_utf8(shown.stdout).unwrap(), fingerprint, "{file:?}");
    }
    let junk = work.path().join("junk");
    std::fs::write(&junk, b"not a key\n").unwrap();
    let refused = run(lockbox().arg("keygen").arg("-y").arg(&junk));
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    let lines: Vec<String> = stderr(&refused).lines().map(str::to_owned).collect();
    assert!(lines.last().is_some_and(|l| l.contains("not an age identity")), "{lines:?}");
}

/// `diff -q` was refused ("unexpected argument '-q'") while `lockbox -q
/// diff` was taken; both now print nothing and answer by the exit code.
#[test]
fn diff_q_answers_by_the_exit_code_alone() {
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("a.txt"), b"hello\n").unwrap();
    let archive = work.path().join("a.lbox");
    let made = run(&mut create_cmd(&archive, &tree, ".", &[]));
    assert_eq!(code(&made), 0, "{}", stderr(&made));
    let diff = |before: &[&str], after: &[&str]| {
        run(lockbox().args(before).arg("diff").args(after).arg(&archive).arg("-C").arg(&tree))
    };
    for (before, after) in [(&[][..], &["-q"][..]), (&["-q"], &[]), (&[], &["--quiet"])] {
        let equal = diff(before, after);
        assert_eq!((code(&equal), equal.stdout.len()), (0, 0), "{before:?} {after:?}: {}", stderr(&equal));
    }
    std::fs::write(tree.join("a.txt"), b"changed\n").unwrap();
    for (before, after) in [(&[][..], &["-q"][..]), (&["-q"], &[])] {
        let differ = diff(before, after);
        assert_eq!(code(&differ), 1, "{before:?} {after:?}: {}", stderr(&differ));
        assert_eq!((differ.stdout.len(), differ.stderr.len()), (0, 0), "{before:?} {after:?}");
    }
    let shown = diff(&[], &[]);
    assert_eq!(code(&shown), 1, "{}", stderr(&shown));
    assert!(String::from_utf8_lossy(&shown.stdout).starts_with("M a.txt"), "{shown:?}");
}
