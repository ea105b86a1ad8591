//! `key add` on a signed archive, through the real binary (issue 24 item
//! 4): a slot written in place keeps every signature (the slot table is
//! outside the hash chain, FORMAT.md §3.8); a key too large for the slots
//! rewrites the archive, every state kept, signed with `--sign` (the
//! chain rule and `--adopt-unsigned` as on every writer), else unsigned,
//! which `verify --signer` says plainly.

use std::fs;
use std::path::Path;
use std::process::Output;

use crate::signed_sessions_cli::{refused, stdout, Work};
use crate::util::{code, ok, run, stderr};

/// The archive's slot length (FORMAT.md §3.1, offset 30).
fn slot_len(archive: &Path) -> u16 {
    let bytes = fs::read(archive).unwrap();
    u16::from_le_bytes([bytes[30], bytes[31]])
}

impl Work {
    /// A new post-quantum identity `NAME`; returns its recipient (its
    /// 1,652-byte slot does not fit 256-byte slots).
    fn pq_recipient(&self, name: &str) -> String {
        let out = ok(run(crate::util::lockbox().args(["keygen", "--pq", "-o"]).arg(self.path(name))));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// `key add EXTRA... ARCHIVE -r RECIPIENT`.
    fn add_recipient(&self, extra: &[&str], archive: &Path, recipient: &str) -> Output {
        self.run(&[&["key", "add"][..], extra].concat(), archive, &["-r", recipient])
    }
}

#[test]
fn key_add_in_place_keeps_every_signature() {
    let work = Work::new();
    let alice = work.key("alice");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    fs::write(work.path("new-password"), "another password\n").unwrap();
    let before = fs::read(&archive).unwrap();

    let out = ok(work.run(&["key", "add", "--new-password-file", "../new-password"], &archive, &[]));
    let said = stderr(&out);
    assert!(!said.contains("rewritten") && !said.contains("nothing was signed"), "{said}");
    let after = fs::read(&archive).unwrap();
    assert_eq!(after.len(), before.len(), "written in place");
    assert_ne!(after, before, "a slot was written");
    let verified = stdout(&ok(work.run(&["verify", "--signer", &alice], &archive, &[])));
    assert!(verified.contains(&format!("state 1 signed by {alice}")), "{verified}");

    // With --sign, nothing is rewritten, so nothing is signed: it says so.
    fs::write(work.path("third"), "a third password\n").unwrap();
    let signed = ok(work.run(
        &["key", "add", "--new-password-file", "../third", "--sign", "../alice.key"],
        &archive,
        &[],
    ));
    assert!(stderr(&signed).contains("written in place: nothing was signed"), "{}", stderr(&signed));
    ok(work.run(&["verify", "--signer", &alice], &archive, &[]));
    let by_third = run(crate::util::lockbox()
        .env("LOCKBOX_PASSWORD", "a third password")
        .args(["cat", "--signer", &alice])
        .arg(&archive)
        .arg("a.txt"));
    assert_eq!(ok(by_third).stdout, b"written by alice\n");
}

#[test]
fn key_add_signs_a_rewrite_with_sign_and_leaves_it_unsigned_without() {
    let work = Work::new();
    let alice = work.key("alice");
    let pq = work.pq_recipient("pq.txt");

    // Without --sign: rewritten, unsigned, and both the warning and
    // verify --signer say so.
    let unsigned = work.create("u.lbox", &["--sign", "../alice.key"]);
    let out = ok(work.add_recipient(&[], &unsigned, &pq));
    assert_eq!(slot_len(&unsigned), 2048);
    assert!(stderr(&out).contains("rewritten, every state kept, into unsigned"), "{}", stderr(&out));
    ok(work.run(&["verify"], &unsigned, &[]));
    refused(&work.run(&["verify", "--signer", &alice], &unsigned, &[]), "state 1 is not signed");
    refused(&work.run(&["cat", "--signer", &alice], &unsigned, &["a.txt"]), "state 1 is not signed");

    // With --sign: rewritten and signed; the new identity opens it too.
    let signed = work.create("s.lbox", &["--sign", "../alice.key"]);
    let out = ok(work.add_recipient(&["--sign", "../alice.key"], &signed, &pq));
    assert!(stderr(&out).contains("rewritten, every state kept, into signed sessions"), "{}", stderr(&out));
    assert_eq!(slot_len(&signed), 2048);
    let verified = stdout(&ok(work.run(&["verify", "--signer", &alice], &signed, &[])));
    assert!(verified.contains(&format!("state 1 signed by {alice}")), "{verified}");
    let mut by_identity = crate::util::lockbox_without_password();
    by_identity
        .arg("-i")
        .arg(work.path("pq.txt"))
        .args(["cat", "--signer", &alice])
        .arg(&signed)
        .arg("a.txt");
    let by_identity = run(&mut assert_cmd::Command::from_std(by_identity));
    assert_eq!(ok(by_identity).stdout, b"written by alice\n");
}

#[test]
fn key_add_sign_keeps_the_chain_rule_before_anything_is_written() {
    let work = Work::new();
    let alice = work.key("alice");
    let bob = work.key("bob");
    let pq = work.pq_recipient("pq.txt");

    // An unsigned archive: refused (exit 3, byte for byte as it was) ...
    let archive = work.create("a.lbox", &[]);
    let before = fs::read(&archive).unwrap();
    refused(&work.add_recipient(&["--sign", "../alice.key"], &archive, &pq), "state 1 is not signed");
    assert_eq!(fs::read(&archive).unwrap(), before);
    // ... unless Alice vouches for it, which verify --signer shows.
    ok(work.add_recipient(&["--sign", "../alice.key", "--adopt-unsigned"], &archive, &pq));
    let verified = stdout(&ok(work.run(&["verify", "--signer", &alice], &archive, &[])));
    assert!(verified.contains(&format!("state 1 signed by {alice} (adopting")), "{verified}");

    // Bob's archive: Alice signs its rewrite when she trusts Bob.
    let bobs = work.create("b.lbox", &["--sign", "../bob.key"]);
    let before = fs::read(&bobs).unwrap();
    let untrusted = work.add_recipient(&["--sign", "../alice.key"], &bobs, &pq);
    refused(&untrusted, "state 1 is signed only by keys not trusted");
    assert_eq!(fs::read(&bobs).unwrap(), before);
    ok(work.add_recipient(&["--sign", "../alice.key", "--signer", &bob], &bobs, &pq));
    ok(work.run(&["verify", "--signer", &alice], &bobs, &[]));

    // Bad signing flags: a missing key (exit 1), --adopt-unsigned without
    // --sign (exit 2); nothing written either way.
    let other = work.create("c.lbox", &[]);
    let before = fs::read(&other).unwrap();
    let missing = work.add_recipient(&["--sign", "/nonexistent.key"], &other, &pq);
    assert_eq!(code(&missing), 1, "{}", stderr(&missing));
    assert!(stderr(&missing).contains("nonexistent.key"), "{}", stderr(&missing));
    let usage = work.add_recipient(&["--adopt-unsigned"], &other, &pq);
    assert_eq!(code(&usage), 2, "{}", stderr(&usage));
    assert_eq!(fs::read(&other).unwrap(), before);
}
