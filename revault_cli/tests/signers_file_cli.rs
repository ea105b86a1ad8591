//! `--signers FILE` through the real binary (issue 24): a file of trusted
//! signers (fingerprints, pasted key lines, `.pub` paths relative to the
//! file; `#` comments, blank lines) taken wherever `--signer` is: every
//! reader, `verify`'s per-session check and the writers' chain rule. A
//! file that is missing or has a bad line is one line naming the file (and
//! the line), exit 2, nothing written.

use std::fs;

use crate::signed_sessions_cli::{refused, stdout, Work};
use crate::util::{code, ok, stderr};

impl Work {
    /// Writes the signers file `NAME` (beside the keys, above `src`, where
    /// commands run: relative paths in it start from its own directory) and
    /// returns its path as the commands name it.
    fn signers(&self, name: &str, text: &str) -> String {
        fs::write(self.path(name), text).unwrap();
        format!("../{name}")
    }
}

/// `out` failed as a usage error: exit 2, one line, naming each of `what`.
fn usage(out: &std::process::Output, what: &[&str]) {
    assert_eq!(code(out), 2, "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    for w in what {
        assert!(err.contains(w), "{err:?} names {w:?}");
    }
}

#[test]
fn signers_listed_in_a_file_are_trusted_by_every_reader_and_writer() {
    let work = Work::new();
    let alice = work.key("alice");
    let bob = work.key("bob");
    let mallory = work.key("mallory");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    let bob_line = fs::read_to_string(work.path("bob.key.pub")).unwrap().lines().last().unwrap().to_owned();
    let team = work.signers("team", &format!("# the team\n\n# alice\nalice.key.pub\n  # bob\n{bob_line}\n"));
    let fingerprints = work.signers("fingerprints", &format!("{alice}\n"));
    let outsiders = work.signers("outsiders", &format!("# not alice\n{mallory}\n"));

    let out = work.path("out");
    fs::create_dir(&out).unwrap();
    let readers: [(&[&str], &[&str]); 6] = [
        (&["list"], &[]),
        (&["cat"], &["a.txt"]),
        (&["extract", "--overwrite", "-C", out.to_str().unwrap()], &[]),
        (&["export", "-o", "-"], &[]),
        (&["info"], &[]),
        (&["verify"], &[]),
    ];
    for (args, tail) in readers {
        for trusted in [&team, &fingerprints] {
            ok(work.run(&[args, &["--signers", trusted]].concat(), &archive, tail));
        }
        let untrusted = work.run(&[args, &["--signers", &outsiders]].concat(), &archive, tail);
        refused(&untrusted, "state 1 is signed only by keys not trusted");
    }
    assert_eq!(fs::read(out.join("a.txt")).unwrap(), b"written by alice\n");
    // Before the command name too, and beside --signer.
    ok(work.run(&["--signers", &team, "list"], &archive, &[]));
    ok(work.run(&["list", "--signers", &outsiders, "--signer", &alice], &archive, &[]));

    // The chain rule: Bob signs after Alice when a file he gives lists her.
    fs::write(work.path("src/b.txt"), b"by bob\n").unwrap();
    let bob_signs = ["add", "--sign", "../bob.key"];
    let before = fs::read(&archive).unwrap();
    refused(
        &work.run(&[&bob_signs[..], &["--signers", &outsiders]].concat(), &archive, &["b.txt"]),
        "state 1 is signed only by keys not trusted",
    );
    assert_eq!(fs::read(&archive).unwrap(), before);
    ok(work.run(&[&bob_signs[..], &["--signers", &fingerprints]].concat(), &archive, &["b.txt"]));
    let verified = stdout(&ok(work.run(&["verify", "--signers", &team], &archive, &[])));
    assert!(verified.contains(&format!("state 1 signed by {alice}")), "{verified}");
    assert!(verified.contains(&format!("state 2 signed by {bob}")), "{verified}");
    // Every session's signer must be listed for verify; the last one's for list.
    refused(
        &work.run(&["verify", "--signers", &fingerprints], &archive, &[]),
        "state 2 is signed only by keys not trusted",
    );
    ok(work.run(&["list", "--signer", &bob], &archive, &[]));
}

#[test]
fn a_missing_or_malformed_signers_file_is_a_usage_error_naming_file_and_line() {
    let work = Work::new();
    let alice = work.key("alice");
    let archive = work.create("a.lbox", &["--sign", "../alice.key"]);
    let bad_fingerprint = work.signers("bad-fingerprint", &format!("# ok so far\n{alice}\n\nlbsig1qqqq\n"));
    let bad_key_line = work.signers("bad-key-line", "LOCKBOX-SIGNING-PUBLIC-KEY-1 AAAA\n");
    let missing_pub = work.signers("missing-pub", "# a key that is not there\nnobody.key.pub\n");
    let not_a_pub = work.signers("not-a-pub", "src/a.txt\n");
    let empty = work.signers("empty", "# nobody\n\n");

    for (file, what) in [
        (&bad_fingerprint, &["bad-fingerprint", "line 4", "invalid signer fingerprint"][..]),
        (&bad_key_line, &["bad-key-line", "line 1", "invalid signing public key"]),
        (&missing_pub, &["missing-pub", "line 2", "nobody.key.pub", "No such file"]),
        (&not_a_pub, &["not-a-pub", "line 1", "a.txt"]),
        (&empty, &["empty", "holds no keys"]),
        (&"../nonexistent".to_owned(), &["nonexistent", "No such file"]),
    ] {
        for args in [&["list", "--signers", file][..], &["verify", "--signers", file]] {
            usage(&work.run(args, &archive, &[]), what);
        }
    }

    // A writer's list is read before anything is written; --signers on a
    // writer needs --sign.
    fs::write(work.path("src/b.txt"), b"second\n").unwrap();
    let before = fs::read(&archive).unwrap();
    let out = work.run(&["add", "--sign", "../alice.key", "--signers", &missing_pub], &archive, &["b.txt"]);
    usage(&out, &["missing-pub", "line 2"]);
    let out = work.run(&["add", "--signers", &bad_fingerprint], &archive, &["b.txt"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(fs::read(&archive).unwrap(), before);
}
