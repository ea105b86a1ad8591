//! Appends on `s3://` (issue 51, docs/SCALE.md "Appends on an object
//! store"): `add`, `update --delete-missing` and `rm` each write one part,
//! `KEY.parts/s0000000001` on; the archive reads as the objects joined,
//! and their concatenation is the local archive. Two writers race for the
//! next part by a conditional create (`If-None-Match: *`, honoured by moto
//! on PutObject and on CompleteMultipartUpload, which these tests rely
//! on): the loser fails in one line, or with `--wait` writes its session
//! again on the new state. Writers killed mid-upload leave the archive as
//! it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::gate::Gate;
use super::server::{Moto, ACCESS_KEY};
use super::{create, fails, lockbox, server, url, BUCKET};
use crate::util::{code, ok, run, stderr, PASSWORD};

/// The objects of `key`'s archive joined: what a local copy holds.
fn joined(moto: &Moto, key: &str) -> Vec<u8> {
    let mut bytes = moto.get(BUCKET, key).unwrap();
    for part in parts(moto, key) {
        bytes.extend(moto.get(BUCKET, &part).unwrap());
    }
    bytes
}

/// The keys under `key`'s parts prefix, each checked to be a session part
/// numbered on from 1: nothing else (no staging object) is left there.
fn parts(moto: &Moto, key: &str) -> Vec<String> {
    let keys = moto.keys(BUCKET, &format!("{key}.parts/"));
    let expected: Vec<String> = (1..=keys.len()).map(|n| format!("{key}.parts/s{n:010}")).collect();
    assert_eq!(keys, expected, "only the archive's parts under its prefix");
    keys
}

/// `lockbox` as a process of its own (run beside another), with the test
/// credentials.
fn spawned(endpoint: &str, args: &[&str]) -> Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_lockbox"))
        .env("LOCKBOX_PASSWORD", PASSWORD)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", "lockbox-test-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL")
        .args(["-q", "--endpoint", endpoint, "--allow-http", "--s3-retry-timeout", "2"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// `diff -r` of two trees: same names, kinds, link targets and content.
fn same_content(a: &Path, b: &Path) {
    let diff =
        std::process::Command::new("diff").args(["-r", "--no-dereference"]).arg(a).arg(b).output().unwrap();
    assert!(diff.status.success(), "{}", String::from_utf8_lossy(&diff.stdout));
}

/// Extracts `archive` (at state `session`, if given) into a new directory
/// under `tmp` and returns it.
fn extracted(endpoint: &str, tmp: &Path, archive: &str, session: Option<u64>) -> std::path::PathBuf {
    static EXTRACTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = EXTRACTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let out = tmp.join(format!("extracted-{n}"));
    fs::create_dir(&out).unwrap();
    let mut cmd = lockbox(endpoint);
    cmd.args(["extract", "-C"]).arg(&out);
    if let Some(n) = session {
        cmd.args(["--session", &n.to_string()]);
    }
    ok(run(cmd.arg(archive)));
    out
}

#[test]
fn add_update_and_rm_on_s3_write_a_part_each_that_joins_into_the_local_archive() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(src.join("dir")).unwrap();
    for (name, seed) in [("a.txt", 1), ("b.txt", 2), ("dir/c.txt", 3)] {
        corpora::write_text_file(&src.join(name), seed, 20_000).unwrap();
    }
    let archive = url("app.lbox");
    // Every session signed: a signed change of a signed archive.
    let key = tmp.path().join("alice.key");
    ok(run(crate::util::lockbox().args(["keygen", "--sign", "-o"]).arg(&key)));
    let (key, public) = (key.to_str().unwrap().to_string(), format!("{}.pub", key.display()));
    let sign = ["--sign", key.as_str()];
    ok(create(&ep, &archive, tmp.path(), "src", &sign));
    let base = moto.get(BUCKET, "app.lbox").unwrap();
    let dir = |d: &Path| d.to_str().unwrap().to_string();
    let t = dir(tmp.path());

    corpora::write_text_file(&src.join("d.txt"), 4, 20_000).unwrap();
    let mark = moto.requests(BUCKET).len();
    ok(run(lockbox(&ep).args(["add", "-m", "second", "--sign", &key, &archive, "-C", &t, "src/d.txt"])));
    // What an append costs: the open (GET of the tail, LIST), the index
    // nodes its lookups need, one PUT; no data page of the archive.
    let lines = moto.requests(BUCKET)[mark..].to_vec();
    eprintln!("add of one small file: {} requests\n{}", lines.len(), lines.join("\n"));
    assert_eq!(lines.iter().filter(|l| l.starts_with("PUT ")).count(), 1, "{}", lines.join("\n"));
    assert!(lines.len() <= 4, "{}", lines.join("\n"));
    same_content(&src, &extracted(&ep, tmp.path(), &archive, None).join("src"));

    fs::remove_file(src.join("a.txt")).unwrap();
    corpora::write_text_file(&src.join("a.txt"), 5, 30_000).unwrap();
    fs::remove_file(src.join("b.txt")).unwrap();
    ok(run(lockbox(&ep).args(["update", "--delete-missing", "--sign", &key, &archive, "-C", &t, "src"])));
    same_content(&src, &extracted(&ep, tmp.path(), &archive, None).join("src"));

    ok(run(lockbox(&ep).args(["rm", "--sign", &key, &archive, "src/dir"])));
    fs::remove_dir_all(src.join("dir")).unwrap();
    same_content(&src, &extracted(&ep, tmp.path(), &archive, None).join("src"));

    // Nothing was rewritten: the base is the create's, each change a part.
    assert_eq!(moto.get(BUCKET, "app.lbox").unwrap(), base);
    assert_eq!(parts(&moto, "app.lbox").len(), 3);
    // The objects joined are one local archive, whole and the same.
    // `copy` writes them to one local file.
    let local = tmp.path().join("joined.lbox");
    ok(run(lockbox(&ep).args(["copy", &archive, "-o"]).arg(&local)));
    assert_eq!(fs::read(&local).unwrap(), joined(&moto, "app.lbox"));
    fails(&run(lockbox(&ep).args(["copy", &archive, "-o"]).arg(&local)), 1, "exists");
    fails(
        &run(lockbox(&ep).arg("copy").arg(&local).arg("-o").arg(tmp.path().join("x"))),
        2,
        "copy reads an archive on s3://",
    );
    ok(run(lockbox(&ep).arg("verify").arg(&local)));
    for args in [&["list"][..], &["log"][..]] {
        let remote = ok(run(lockbox(&ep).args(args).arg(&archive))).stdout;
        assert_eq!(remote, ok(run(lockbox(&ep).args(args).arg(&local))).stdout, "{args:?}");
    }
    let log = String::from_utf8(ok(run(lockbox(&ep).arg("log").arg(&archive))).stdout).unwrap();
    assert!(log.contains("second"), "{log}");
    let verify = ["--endpoint", &ep, "--allow-http", "verify", "--signer", &public, &archive];
    let verified = ok(run(super::bare_lockbox().env("LOCKBOX_PASSWORD", PASSWORD).args(verify)));
    let verified = String::from_utf8(verified.stdout).unwrap();
    let signed = verified.lines().filter(|l| l.starts_with("state ") && l.contains("signed by")).count();
    assert_eq!(signed, 4, "{verified}");
    // An earlier state reads from the joined objects as from the file.
    let first = extracted(&ep, tmp.path(), &archive, Some(1)).join("src");
    assert!(first.join("b.txt").exists() && !first.join("d.txt").exists());

    // A dry run writes nothing.
    ok(run(lockbox(&ep).args(["rm", "-n", &archive, "src/a.txt"])));
    assert_eq!(parts(&moto, "app.lbox").len(), 3);

    // What a read of an appended archive costs: one LIST beside the
    // opening GET, the last part's tail, the header.
    let mark = moto.requests(BUCKET).len();
    ok(run(lockbox(&ep).arg("log").arg(&archive)));
    let lines = moto.requests(BUCKET)[mark..].to_vec();
    eprintln!("log of an archive of 3 parts: {} requests\n{}", lines.len(), lines.join("\n"));
    assert!(lines.len() <= 5, "{}", lines.join("\n"));

    // A replacement that fails leaves the archive whole, parts and all.
    let failed = create(&ep, &archive, tmp.path(), "src/no-such-file", &["--overwrite"]);
    assert_ne!(failed.status.code(), Some(0));
    assert_eq!(parts(&moto, "app.lbox").len(), 3);
    ok(run(lockbox(&ep).args(["verify", &archive])));

    // Replacing the archive drops its parts with it.
    ok(create(&ep, &archive, tmp.path(), "src/a.txt", &["--overwrite"]));
    assert!(parts(&moto, "app.lbox").is_empty());
    let listed = ok(run(lockbox(&ep).args(["list", &archive]))).stdout;
    assert_eq!(String::from_utf8(listed).unwrap(), "src/a.txt\n");
}

/// The request line of the commit of `key`'s next part by a single PUT.
fn part_put(key: &str) -> String {
    format!("PUT /{BUCKET}/{key}.parts/s")
}

/// A server holding `key`, an archive of `src/first.txt`, under `tmp`;
/// `None` (skipping) without moto.
fn one_file_archive(key: &str) -> Option<(Moto, TempDir, PathBuf, String)> {
    let moto = server()?;
    let tmp = TempDir::new().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(&src).unwrap();
    corpora::write_text_file(&src.join("first.txt"), 1, 1000).unwrap();
    let archive = url(key);
    ok(create(&moto.endpoint(), &archive, &src, "first.txt", &[]));
    Some((moto, tmp, src, archive))
}

#[test]
fn two_writers_racing_for_the_next_part_one_fails_or_both_commit_with_wait() {
    let Some((moto, tmp, src, archive)) = one_file_archive("race.lbox") else { return };
    let ep = moto.endpoint();
    let mut expected = vec!["first.txt".to_string()];
    let mut committed = 0;
    for round in 0..6 {
        let wait = round % 2 == 1;
        let names = [format!("r{round}a.txt"), format!("r{round}b.txt")];
        for (i, name) in names.iter().enumerate() {
            corpora::write_text_file(&src.join(name), (round * 2 + i + 2) as u64, 1000).unwrap();
        }
        // Both commits reach the server together: both built their
        // session on the same state, and race for the same part.
        let gate = Gate::start(moto.port, &part_put("race.lbox"), 2);
        let s = src.to_str().unwrap();
        let children: Vec<Child> = names
            .iter()
            .map(|name| {
                let mut args = vec!["add", &archive, "-C", s, name.as_str()];
                if wait {
                    args.insert(1, "--wait");
                }
                spawned(&gate.endpoint(), &args)
            })
            .collect();
        let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        let won: Vec<bool> = outs.iter().map(|o| o.status.success()).collect();
        if wait {
            for out in &outs {
                assert!(out.status.success(), "{}", stderr(out));
            }
            expected.extend(names.iter().cloned());
            committed += 2;
            assert!(gate.arrived() >= 3, "the loser wrote its session again");
        } else {
            assert_eq!(won.iter().filter(|w| **w).count(), 1, "exactly one commits");
            let lost = outs.iter().find(|o| !o.status.success()).unwrap();
            fails(lost, 1, "another writer committed the next session first");
            assert!(stderr(lost).contains("--wait"), "{}", stderr(lost));
            expected.push(names[won.iter().position(|w| *w).unwrap()].clone());
            committed += 1;
        }
        assert_eq!(parts(&moto, "race.lbox").len(), committed, "round {round}");
    }
    // Every state holds what was committed up to it, nothing mixed.
    let last = extracted(&ep, tmp.path(), &archive, None);
    let mut names: Vec<String> =
        fs::read_dir(&last).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    expected.sort();
    assert_eq!(names, expected);
    for name in &names {
        assert_eq!(fs::read(last.join(name)).unwrap(), fs::read(src.join(name)).unwrap(), "{name}");
    }
    ok(run(lockbox(&ep).arg("verify").arg(&archive)));
    for state in 1..=committed as u64 + 1 {
        let listed = ok(run(lockbox(&ep).args(["list", "--session", &state.to_string(), &archive]))).stdout;
        // Each state adds one file to the one before.
        assert_eq!(String::from_utf8(listed).unwrap().lines().count() as u64, state, "state {state}");
    }
    assert_eq!(moto.open_uploads(BUCKET), 0);
}

/// Waits until `gate` has held a request (the writer is mid-upload), then
/// kills the writer with SIGKILL.
fn kill_when_held(mut child: Child, gate: &Gate) {
    let started = Instant::now();
    while gate.arrived() == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the writer never reached the gate");
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the writer ended first: {status}: {}", stderr(&child.wait_with_output().unwrap()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn writers_killed_mid_upload_leave_the_archive_as_it_was() {
    let Some((moto, tmp, src, archive)) = one_file_archive("kill.lbox") else { return };
    let ep = moto.endpoint();
    // Above one part (5 MiB with random-read's 64 KiB pages): staged by a
    // multipart upload, then copied to the part's name if absent.
    corpora::write_random_file(&src.join("big.bin"), 2, 7 << 20).unwrap();
    corpora::write_text_file(&src.join("small.txt"), 3, 1000).unwrap();
    let s = src.to_str().unwrap();
    let before = joined(&moto, "kill.lbox");

    // Killed with its single PUT in flight (it never reached the server),
    // then with the first part of its staging upload in flight.
    for (prefix, file) in
        [(part_put("kill.lbox"), "small.txt"), (format!("PUT /{BUCKET}/kill.lbox.parts/u"), "big.bin")]
    {
        let gate = Gate::start(moto.port, &prefix, usize::MAX);
        let args = ["add", "--profile", "random-read", &archive, "-C", s, file];
        kill_when_held(spawned(&gate.endpoint(), &args), &gate);
        assert_eq!(joined(&moto, "kill.lbox"), before, "killed while adding {file}");
        assert!(parts(&moto, "kill.lbox").is_empty());
    }
    // The staging upload killed is invisible, and left to the bucket's
    // lifecycle rule (AbortIncompleteMultipartUpload).
    assert_eq!(moto.open_uploads(BUCKET), 1);
    ok(run(lockbox(&ep).arg("verify").arg(&archive)));

    // A large session racing a small one: the small one commits the part
    // while the large one's copy-if-absent waits; its completion (with
    // If-None-Match: *) is refused, and it leaves nothing behind.
    let gate = Gate::start(moto.port, &format!("POST /{BUCKET}/kill.lbox.parts/s"), usize::MAX - 1);
    let big = spawned(&gate.endpoint(), &["add", "--profile", "random-read", &archive, "-C", s, "big.bin"]);
    let started = Instant::now();
    while gate.arrived() == 0 {
        assert!(started.elapsed() < Duration::from_secs(60), "the large writer never reached its commit");
        std::thread::sleep(Duration::from_millis(10));
    }
    ok(run(lockbox(&ep).args(["add", &archive, "-C", s, "small.txt"])));
    gate.open();
    let lost = big.wait_with_output().unwrap();
    fails(&lost, 1, "another writer committed the next session first");
    assert_eq!(parts(&moto, "kill.lbox").len(), 1);
    assert_eq!(moto.open_uploads(BUCKET), 1, "the refused copy's upload is aborted");

    // The next writer goes on from the archive as it is.
    ok(run(lockbox(&ep).args(["add", "--profile", "random-read", &archive, "-C", s, "big.bin"])));
    assert_eq!(parts(&moto, "kill.lbox").len(), 2);
    let out = extracted(&ep, tmp.path(), &archive, None);
    for name in ["first.txt", "small.txt", "big.bin"] {
        assert_eq!(fs::read(out.join(name)).unwrap(), fs::read(src.join(name)).unwrap(), "{name}");
    }
    assert_eq!(code(&run(lockbox(&ep).arg("verify").arg(&archive))), 0);

    // A part missing from the run (one deleted by hand, say) is named,
    // and nothing reads or appends past it.
    moto.put(BUCKET, "kill.lbox.parts/s0000000004", b"not a session");
    let missing = "its parts are damaged: part kill.lbox.parts/s0000000003 is missing";
    fails(&run(lockbox(&ep).args(["list", &archive])), 1, missing);
    fails(&run(lockbox(&ep).args(["add", &archive, "-C", s, "small.txt"])), 1, missing);
    assert_eq!(moto.keys(BUCKET, "kill.lbox.parts/").len(), 3);
}
