//! Signed sessions through the real `lockbox` binary on real files (issue
//! 24): `--sign` on every command that writes a session, the chain rule,
//! `--signer` on the readers, and the forgeries a holder of the content key
//! (here: the password) can try, each refused with `--signer` and the
//! session named.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use tempfile::TempDir;

use crate::util::{code, create_cmd, lockbox, ok, run, stderr};

/// A trailer's length, and where in it `previous_trailer` and
/// `signature_len` sit (FORMAT.md §3.8).
const TRAILER_LEN: usize = 216;
const PREVIOUS_AT: usize = 156;
const SIGNATURE_LEN_AT: usize = 196;

pub(crate) struct Work {
    pub(crate) dir: TempDir,
}

impl Work {
    pub(crate) fn new() -> Work {
        let work = Work { dir: TempDir::new().unwrap() };
        fs::create_dir(work.path("src")).unwrap();
        fs::write(work.path("src/a.txt"), b"written by alice\n").unwrap();
        work
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A new signing key `NAME.key` and its `NAME.key.pub`; returns the
    /// fingerprint.
    pub(crate) fn key(&self, name: &str) -> String {
        let out = ok(run(lockbox().args(["keygen", "--sign", "-o"]).arg(self.path(&format!("{name}.key")))));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// `lockbox ARGS... ARCHIVE [TAIL...]`, run in the source directory.
    pub(crate) fn run(&self, args: &[&str], archive: &Path, tail: &[&str]) -> Output {
        run(lockbox().current_dir(self.path("src")).args(args).arg(archive).args(tail))
    }

    /// `ARCHIVE` created from `src/a.txt` with `extra` flags.
    pub(crate) fn create(&self, name: &str, extra: &[&str]) -> PathBuf {
        let archive = self.path(name);
        ok(run(create_cmd(&archive, &self.path("src"), "a.txt", extra).current_dir(self.path("src"))));
        archive
    }
}

/// The error is one line, exit 3, and names `what`.
pub(crate) fn refused(out: &Output, what: &str) {
    assert_eq!(code(out), 3, "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(what), "{err:?} names {what:?}");
}

/// Standard output with runs of spaces (text columns) made one.
pub(crate) fn stdout(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split('\n')
        .map(|l| l.split(' ').filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The signature blocks of each session of `archive`, newest first, as
/// `(offset, length)`: read from the trailers, which anyone can parse.
fn blocks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut end = bytes.len();
    loop {
        let trailer = &bytes[end - TRAILER_LEN..end];
        let len = u32::from_le_bytes(trailer[SIGNATURE_LEN_AT..SIGNATURE_LEN_AT + 4].try_into().unwrap());
        // The header copy (FORMAT.md §3.11) lies between the block and the
        // trailer: flags bit 0, its slot size in bits 1-3.
        let flags = u16::from_le_bytes([trailer[10], trailer[11]]);
        let copy = if flags & 1 == 1 { 32 + 16 * (256 << ((flags >> 1) & 7)) } else { 0 };
        out.push((end - TRAILER_LEN - copy - len as usize, len as usize));
        let previous = u64::from_le_bytes(trailer[PREVIOUS_AT..PREVIOUS_AT + 8].try_into().unwrap());
        if previous == 0 {
            return out;
        }
        end = previous as usize;
    }
}

#[test]
fn a_signed_archive_is_checked_by_every_reader_and_refused_for_another_signer() {
    let work = Work::new();
    let alice = work.key("alice");
    let mallory = work.key("mallory");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    let public = work.path("alice.key.pub");
    let public = public.to_str().unwrap();

    let verified = ok(work.run(&["verify", "--signer", public], &archive, &[]));
    assert!(stdout(&verified).contains(&format!("state 1 signed by {alice}")), "{}", stdout(&verified));
    let out = work.path("out");
    let read_commands: [(&[&str], &[&str]); 6] = [
        (&["list"], &[]),
        (&["cat"], &["a.txt"]),
        (&["extract", "-C", out.to_str().unwrap()], &[]),
        (&["export", "-o", "-"], &[]),
        (&["info"], &[]),
        (&["verify"], &[]),
    ];
    fs::create_dir(&out).unwrap();
    for (args, tail) in read_commands {
        ok(work.run(&[args, &["--signer", &alice]].concat(), &archive, tail));
        let untrusted = work.run(&[args, &["--signer", &mallory]].concat(), &archive, tail);
        refused(&untrusted, "state 1 is signed only by keys not trusted");
    }
    assert_eq!(fs::read(out.join("a.txt")).unwrap(), b"written by alice\n");
    assert_eq!(
        ok(work.run(&["cat", "--signer", public], &archive, &["a.txt"])).stdout,
        b"written by alice\n"
    );

    // info shows the signers, as text and as JSON.
    let info = stdout(&ok(work.run(&["info"], &archive, &[])));
    assert!(info.contains(&format!("signed by {alice}")), "{info}");
    let json: serde_json::Value =
        serde_json::from_slice(&ok(work.run(&["info", "--json"], &archive, &[])).stdout).unwrap();
    assert_eq!(json["signers"][0]["session"], 0);
    assert_eq!(json["signers"][0]["signatures"][0]["signer"], alice.as_str());
    assert_eq!(json["signers"][0]["signatures"][0]["valid"], true);

    // An unsigned archive is refused, naming the session.
    let unsigned = work.create("u.lbox", &[]);
    refused(&work.run(&["list", "--signer", &alice], &unsigned, &[]), "state 1 is not signed");
}

#[test]
fn bad_signing_flags_fail_cleanly_and_write_nothing() {
    let work = Work::new();
    work.key("alice");
    // A missing key file: exit 1, no archive.
    let archive = work.path("a.lbox");
    let out = run(&mut create_cmd(&archive, &work.path("src"), "a.txt", &["--sign", "/nonexistent.key"]));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("nonexistent.key"), "{}", stderr(&out));
    assert!(!archive.exists());
    // A public key given to --sign, or garbage: a usage error.
    let public = work.path("alice.key.pub");
    let out =
        run(&mut create_cmd(&archive, &work.path("src"), "a.txt", &["--sign", public.to_str().unwrap()]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(!archive.exists());
    // A malformed fingerprint, or a file that is no .pub: a usage error.
    let signed = work.create("s.lbox", &["--sign", "../alice.key"]);
    for bad in ["lbsig1qqqq", work.path("src/a.txt").to_str().unwrap()] {
        let out = work.run(&["list", "--signer", bad], &signed, &[]);
        assert_eq!(code(&out), 2, "{bad}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim_end().lines().count(), 1, "{}", stderr(&out));
    }
    // --signer and --adopt-unsigned on a writer need --sign.
    let out = work.run(&["add", "--adopt-unsigned"], &signed, &["a.txt"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn the_chain_rule_refuses_to_sign_over_unsigned_or_untrusted_sessions() {
    let work = Work::new();
    let alice = work.key("alice");
    let bob = work.key("bob");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    fs::write(work.path("src/b.txt"), b"second\n").unwrap();

    // Someone with the password appends an unsigned session.
    ok(work.run(&["add"], &archive, &["b.txt"]));
    refused(&work.run(&["verify", "--signer", &alice], &archive, &[]), "state 2 is not signed");
    refused(&work.run(&["list", "--signer", &alice], &archive, &[]), "state 2 is not signed");

    // Alice will not sign over it: exit 3, nothing written.
    let before = fs::read(&archive).unwrap();
    let sign = ["add", "--sign", "../alice.key"];
    refused(&work.run(&sign, &archive, &["b.txt"]), "state 2 is not signed");
    assert_eq!(fs::read(&archive).unwrap(), before);
    // ... unless she vouches for it, which the signature records.
    ok(work.run(&[&sign[..], &["--adopt-unsigned"]].concat(), &archive, &["b.txt"]));
    let verified = stdout(&ok(work.run(&["verify", "--signer", &alice], &archive, &[])));
    assert!(verified.contains("state 2 unsigned"), "{verified}");
    assert!(verified.contains(&format!("state 3 signed by {alice} (adopting")), "{verified}");

    // Bob signs only with Alice's sessions trusted (--signer); co-signing.
    fs::write(work.path("src/b.txt"), b"third\n").unwrap();
    let bob_signs = ["update", "--sign", "../bob.key"];
    refused(&work.run(&bob_signs, &archive, &["b.txt"]), "state 3 is signed only by keys not trusted");
    ok(work.run(&[&bob_signs[..], &["--signer", &alice]].concat(), &archive, &["b.txt"]));
    ok(work.run(
        &["rm", "--sign", "../alice.key", "--sign", "../bob.key", "--signer", &alice],
        &archive,
        &["b.txt"],
    ));
    let both = stdout(&ok(work.run(&["verify", "--signer", &alice, "--signer", &bob], &archive, &[])));
    assert!(both.contains(&format!("state 5 signed by {alice}, {bob}")), "{both}");
    // The last session is Bob's too: one signature covers the state.
    ok(work.run(&["list", "--signer", &bob], &archive, &[]));
    // But every session's: state 3 is Alice's alone.
    refused(
        &work.run(&["verify", "--signer", &bob], &archive, &[]),
        "state 3 is signed only by keys not trusted",
    );

    // compact rewrites into one fresh session: signed with --sign, else not.
    ok(work.run(&["compact", "--sign", "../alice.key", "--signer", &bob], &archive, &[]));
    ok(work.run(&["verify", "--signer", &alice], &archive, &[]));
    ok(work.run(&["compact"], &archive, &[]));
    refused(&work.run(&["verify", "--signer", &alice], &archive, &[]), "state 5 is not signed");
}

/// A holder of the password re-seals the whole state (every page, index
/// node, the root and the trailer: `compact` does it with the real tool),
/// after changing a file, and puts Alice's signature block in the place of
/// her own: plain `verify` passes, `verify --signer` refuses it.
#[test]
fn a_key_holder_resealing_the_state_under_alices_signature_is_refused() {
    let work = Work::new();
    let alice = work.key("alice");
    work.key("mallory");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    let original = fs::read(&archive).unwrap();
    let (alice_at, alice_len) = blocks(&original)[0];

    // Mallory changes a.txt, and rewrites everything into one session she
    // signs (so that her block has the length of Alice's).
    fs::write(work.path("src/a.txt"), b"written by mallory\n").unwrap();
    let mallory = ["--sign", "../mallory.key", "--signer", &alice];
    ok(work.run(&[&["update"][..], &mallory].concat(), &archive, &["a.txt"]));
    ok(work.run(&[&["compact"][..], &mallory].concat(), &archive, &[]));
    let mut forged = fs::read(&archive).unwrap();
    let [(at, len)] = blocks(&forged)[..] else { panic!("one session") };
    assert_eq!(len, alice_len);
    forged[at..at + len].copy_from_slice(&original[alice_at..alice_at + alice_len]);
    fs::write(&archive, &forged).unwrap();

    ok(work.run(&["verify"], &archive, &[]));
    assert_eq!(ok(work.run(&["cat"], &archive, &["a.txt"])).stdout, b"written by mallory\n");
    let refusal = format!("state 2: the signature by {alice} does not verify");
    refused(&work.run(&["verify", "--signer", &alice], &archive, &[]), &refusal);
    refused(&work.run(&["cat", "--signer", &alice], &archive, &["a.txt"]), &refusal);
}

/// The block is outside what the trailer's tag covers (only its length is
/// covered), so anyone can replace it by one of the same length: a valid
/// signature copied from another archive, or from another session of this
/// one, is refused.
#[test]
fn a_signature_copied_from_another_archive_or_session_is_refused() {
    let work = Work::new();
    let alice = work.key("alice");
    let a = work.create("a.lbox", &["--sign", "../alice.key"]);
    let b = work.create("b.lbox", &["--sign", "../alice.key"]);
    ok(work.run(&["verify", "--signer", &alice], &b, &[]));

    let (a_bytes, b_bytes) = (fs::read(&a).unwrap(), fs::read(&b).unwrap());
    let (a_at, len) = blocks(&a_bytes)[0];
    let (b_at, b_len) = blocks(&b_bytes)[0];
    assert_eq!(len, b_len);
    let mut copied = a_bytes.clone();
    copied[a_at..a_at + len].copy_from_slice(&b_bytes[b_at..b_at + len]);
    fs::write(&a, &copied).unwrap();
    ok(work.run(&["verify"], &a, &[]));
    refused(&work.run(&["verify", "--signer", &alice], &a, &[]), "state 1: the signature by");

    // Two signed sessions; the first's block copied over the second's.
    fs::write(&a, &a_bytes).unwrap();
    fs::write(work.path("src/b.txt"), b"second\n").unwrap();
    ok(work.run(&["add", "--sign", "../alice.key"], &a, &["b.txt"]));
    let mut two = fs::read(&a).unwrap();
    let all = blocks(&two);
    let ((last_at, last_len), (first_at, first_len)) = (all[0], all[1]);
    assert_eq!(last_len, first_len);
    two.copy_within(first_at..first_at + first_len, last_at);
    fs::write(&a, &two).unwrap();
    ok(work.run(&["verify"], &a, &[]));
    refused(&work.run(&["verify", "--signer", &alice], &a, &[]), "state 2: the signature by");
    refused(&work.run(&["list", "--signer", &alice], &a, &[]), "state 2: the signature by");
}

/// Cutting the file back to an earlier signed session is a signed state:
/// signatures do not detect rollback (SECURITY.md says so); the session
/// state numbers that `info` shows do.
#[test]
fn truncation_to_an_earlier_signed_session_still_verifies_and_shows_its_number() {
    let work = Work::new();
    let alice = work.key("alice");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    let first_len = fs::metadata(&archive).unwrap().len();
    fs::write(work.path("src/b.txt"), b"second\n").unwrap();
    ok(work.run(&["add", "--sign", "../alice.key"], &archive, &["b.txt"]));
    let file = fs::OpenOptions::new().write(true).open(&archive).unwrap();
    file.set_len(first_len).unwrap();
    ok(work.run(&["verify", "--signer", &alice], &archive, &[]));
    let info = stdout(&ok(work.run(&["info"], &archive, &[])));
    assert!(info.contains("\nstate 1 (as lockbox log numbers it"), "{info}");
}
