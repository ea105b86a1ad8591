//! `lockbox` on `s3://` archives against a real S3-compatible server (moto,
//! see `server.rs`): round trips compared with local archives, existing
//! keys, refusals, and faults (the server stopped mid-create and
//! mid-extract, a flipped byte in the stored object).

mod appends;
mod gate;
mod mount;
mod progress;
mod requests;
mod server;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use server::{Moto, Proxy, Watch, ACCESS_KEY};
use tempfile::TempDir;

use crate::util::{code, ok, run, stderr, CHEAP};

const BUCKET: &str = "lockbox-tests";

/// `lockbox` with credentials for `endpoint` and nothing from the user's
/// own AWS setup.
fn lockbox(endpoint: &str) -> Command {
    let mut cmd = bare_lockbox();
    cmd.args(["-q", "--endpoint", endpoint, "--allow-http", "--s3-retry-timeout", "2"]);
    cmd
}

/// `lockbox mount` of `s3://BUCKET/key` from `endpoint`, with the test
/// credentials, as a plain command ([`Mounted::spawn`](crate::mount_cli::Mounted::spawn)
/// adds the mount point and runs it in the background).
fn mount_command(endpoint: &str, key: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lockbox"));
    cmd.env("LOCKBOX_PASSWORD", crate::util::PASSWORD)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", "lockbox-test-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
        .args(["--endpoint", endpoint, "--allow-http", "mount", &url(key)]);
    cmd
}

/// `lockbox` with the test credentials and no endpoint.
fn bare_lockbox() -> Command {
    let mut cmd = crate::util::lockbox();
    cmd.env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", "lockbox-test-secret")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_ALLOW_HTTP");
    cmd
}

/// A failure reported as one `lockbox: ` line with exit code `expected`.
fn fails(out: &Output, expected: i32, needle: &str) {
    let text = stderr(out);
    assert_eq!(code(out), expected, "{text}");
    assert!(text.starts_with("lockbox: ") && text.trim_end().lines().count() == 1, "{text}");
    assert!(text.contains(needle), "{needle:?} not in {text}");
}

fn url(key: &str) -> String {
    format!("s3://{BUCKET}/{key}")
}

/// A server with the test bucket, or `None` (skipping) without moto.
fn server() -> Option<Moto> {
    let moto = Moto::start()?;
    moto.create_bucket(BUCKET);
    Some(moto)
}

/// The mixed tree (symbolic and hard links, empty files and directories,
/// deep and non-UTF-8 names) at 4 MiB, in `root/mixed-tree`.
fn edge_tree(root: &Path) -> PathBuf {
    let scenario = corpora::find("mixed-tree").unwrap();
    scenario.generate(root, 1.0 / 16.0).unwrap();
    root.join("mixed-tree")
}

fn create(endpoint: &str, output: &str, dir: &Path, input: &str, extra: &[&str]) -> Output {
    run(lockbox(endpoint)
        .arg("create")
        .args(CHEAP)
        .args(extra)
        .args(["-o", output, "-C"])
        .arg(dir)
        .arg(input))
}

/// `diff -r` of two trees (content, names, link targets) and `find`'s view
/// of their metadata: equal, or the test fails with the difference.
fn same_trees(a: &Path, b: &Path) {
    let diff =
        std::process::Command::new("diff").args(["-r", "--no-dereference"]).arg(a).arg(b).output().unwrap();
    assert!(diff.status.success(), "{}", String::from_utf8_lossy(&diff.stdout));
    let meta = |dir: &Path| {
        // Symbolic links' own mtimes are not restored; their targets are.
        let out = std::process::Command::new("find")
            .args([".", "-mindepth", "1", "(", "-type", "l", "-printf", "%p link %l\\n", ")"])
            .args(["-o", "-printf", "%p %y %m %n %s %T@\\n"])
            .current_dir(dir)
            .output()
            .unwrap();
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect();
        lines.sort();
        lines
    };
    assert_eq!(meta(a), meta(b));
}

#[test]
fn edge_case_tree_round_trips_through_s3_as_through_a_file() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    let src = tmp.path().join("src");
    edge_tree(&src);
    let local = tmp.path().join("local.lbox");
    ok(create(&ep, local.to_str().unwrap(), &src, "mixed-tree", &[]));
    ok(create(&ep, &url("edge.lbox"), &src, "mixed-tree", &[]));
    assert!(moto.get(BUCKET, "edge.lbox").is_some_and(|o| o.len() > 1 << 20), "the object is there, whole");

    // The index and root hold random salts that compress differently by a
    // byte or two, and large files' chunk lists follow cut points keyed by
    // each archive's own content key (so the data pages' bytes differ a
    // little too); everything else `info` says is the same.
    let stable = |out: Output| {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let varies =
            ["archive size", "index ", "compression ratio", "last written", "commit hash", "data pages"];
        text.lines().filter(|l| !varies.iter().any(|v| l.starts_with(v))).collect::<Vec<_>>().join("\n")
    };
    for args in [&["list", "-l"][..], &["info"][..]] {
        let from_file = ok(run(lockbox(&ep).args(args).arg(&local)));
        let from_object = ok(run(lockbox(&ep).args(args).arg(url("edge.lbox"))));
        assert_eq!(stable(from_object), stable(from_file));
    }
    ok(run(lockbox(&ep).arg("verify").arg(url("edge.lbox"))));
    let (out_file, out_object) = (tmp.path().join("out-file"), tmp.path().join("out-object"));
    for (out, archive) in [(&out_file, local.to_str().unwrap().to_string()), (&out_object, url("edge.lbox"))]
    {
        fs::create_dir(out).unwrap();
        ok(run(lockbox(&ep).args(["extract", "-C"]).arg(out).arg(archive)));
    }
    same_trees(&out_file, &out_object);
    let diff = std::process::Command::new("diff")
        .args(["-r", "--no-dereference"])
        .arg(&src)
        .arg(&out_object)
        .output();
    assert!(diff.unwrap().status.success(), "the extracted tree differs from the source");

    let listing = ok(run(lockbox(&ep).arg("list").arg(url("edge.lbox"))));
    let some_file = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .map(String::from)
        .find(|p| src.join(p).symlink_metadata().is_ok_and(|m| m.is_file() && m.len() > 1000))
        .expect("a file in the tree");
    let cat = ok(run(lockbox(&ep).arg("cat").arg(url("edge.lbox")).arg(&some_file)));
    assert_eq!(cat.stdout, fs::read(src.join(&some_file)).unwrap());
    assert_eq!(moto.open_uploads(BUCKET), 0);
}

/// An archive larger than one part (5 MiB): a multipart upload.
fn large_tree(root: &Path) {
    fs::create_dir_all(root.join("big")).unwrap();
    corpora::write_random_file(&root.join("big/random.bin"), 1, 12 << 20).unwrap();
    corpora::write_text_file(&root.join("big/notes.txt"), 2, 100_000).unwrap();
}

#[test]
fn existing_keys_are_refused_unless_overwrite() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    large_tree(tmp.path());
    ok(create(&ep, &url("big.lbox"), tmp.path(), "big", &[]));
    let first = moto.get(BUCKET, "big.lbox").unwrap();
    assert!(first.len() > 12 << 20);

    // Refused before any upload starts, multipart or single PUT.
    fails(&create(&ep, &url("big.lbox"), tmp.path(), "big", &[]), 1, "already exists (use --overwrite");
    fails(&create(&ep, &url("big.lbox"), tmp.path(), "big/notes.txt", &[]), 1, "already exists");
    assert_eq!(moto.get(BUCKET, "big.lbox").unwrap(), first, "the object is untouched");

    ok(create(&ep, &url("big.lbox"), tmp.path(), "big/notes.txt", &["--overwrite"]));
    let small = moto.get(BUCKET, "big.lbox").unwrap();
    assert!(small.len() < 1 << 20);
    ok(create(&ep, &url("big.lbox"), tmp.path(), "big", &["--overwrite"]));
    let out = tmp.path().join("out");
    fs::create_dir(&out).unwrap();
    ok(run(lockbox(&ep).args(["extract", "-C"]).arg(&out).arg(url("big.lbox"))));
    same_trees(&tmp.path().join("big"), &out.join("big"));
    assert_eq!(moto.open_uploads(BUCKET), 0);
}

#[test]
fn server_stopped_during_create_leaves_nothing_under_the_key() {
    let Some(moto) = server() else { return };
    let tmp = TempDir::new().unwrap();
    large_tree(tmp.path());
    // Stopped after the first part (5 MiB) went up, in the second.
    let proxy = Proxy::start(moto.port, Watch::ToServer, 7 << 20);
    let out = create(&proxy.endpoint(), &url("cut.lbox"), tmp.path(), "big", &[]);
    assert!(proxy.stopped());
    fails(&out, 1, &format!("creating {}", url("cut.lbox")));
    assert_eq!(moto.get(BUCKET, "cut.lbox"), None, "nothing visible under the key");
}

#[test]
fn server_stopped_during_extract_leaves_no_partial_file() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    let src = tmp.path().join("src");
    fs::create_dir_all(src.join("files")).unwrap();
    for i in 0..6 {
        corpora::write_random_file(&src.join(format!("files/{i}.bin")), i, 2 << 20).unwrap();
    }
    ok(create(&ep, &url("cut.lbox"), &src, "files", &[]));
    let proxy = Proxy::start(moto.port, Watch::FromServer, 5 << 20);
    let out = tmp.path().join("out");
    fs::create_dir(&out).unwrap();
    let result = run(lockbox(&proxy.endpoint()).args(["extract", "-C"]).arg(&out).arg(url("cut.lbox")));
    assert!(proxy.stopped());
    fails(&result, 1, &format!("extracting {}", url("cut.lbox")));
    // Whatever sits under a final name is whole.
    for entry in fs::read_dir(out.join("files")).into_iter().flatten() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if let Ok(original) = fs::read(src.join("files").join(&name)) {
            assert_eq!(fs::read(&path).unwrap(), original, "{name} is partial");
        }
    }
}

#[test]
fn a_flipped_byte_in_the_object_fails_authentication() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    let src = tmp.path().join("src");
    edge_tree(&src);
    ok(create(&ep, &url("flip.lbox"), &src, "mixed-tree", &[]));
    let mut object = moto.get(BUCKET, "flip.lbox").unwrap();
    let middle = object.len() / 3;
    object[middle] ^= 0x20;
    moto.put(BUCKET, "flip.lbox", &object);
    let verify = run(lockbox(&ep).arg("verify").arg(url("flip.lbox")));
    assert_eq!(code(&verify), 3, "{}", stderr(&verify));
    assert!(stderr(&verify).contains("failed authentication"), "{}", stderr(&verify));
    let out = tmp.path().join("out");
    fs::create_dir(&out).unwrap();
    let extract = run(lockbox(&ep).args(["extract", "-C"]).arg(&out).arg(url("flip.lbox")));
    fails(&extract, 3, "failed authentication");
}

#[test]
fn cat_reads_one_file_in_a_few_gets() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    let src = tmp.path().join("src");
    for d in 0..40 {
        let dir = src.join(format!("many/dir{d:02}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            fs::write(dir.join(format!("file{f:03}.txt")), format!("file {d} {f}\n").repeat(10)).unwrap();
        }
    }
    corpora::write_random_file(&src.join("many/blob.bin"), 3, 6 << 20).unwrap();
    ok(create(&ep, &url("many.lbox"), &src, "many", &[]));
    let before = moto.gets_of(BUCKET, "many.lbox");
    let cat = ok(run(lockbox(&ep).arg("cat").arg(url("many.lbox")).arg("many/dir23/file042.txt")));
    assert_eq!(cat.stdout, "file 23 42\n".repeat(10).as_bytes());
    let gets = moto.gets_of(BUCKET, "many.lbox") - before;
    assert!((1..=6).contains(&gets), "{gets} GETs");
}

#[test]
fn bad_locations_and_objects_fail_cleanly() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let tmp = TempDir::new().unwrap();
    fs::write(tmp.path().join("a.txt"), b"hello\n").unwrap();
    ok(create(&ep, &url("a.lbox"), tmp.path(), "a.txt", &[]));

    for (args, needle) in [
        (vec!["list", "s3://Bad_Bucket/a.lbox"], "not an object location"),
        (vec!["list", "s3://lockbox-tests/"], "names no key"),
        (
            vec!["key", "add", "--password", "s3://lockbox-tests/a.lbox"],
            "key add rewrites an archive in place",
        ),
        (
            vec!["key", "remove", "s3://lockbox-tests/a.lbox", "0"],
            "on s3:// lockbox can create, add, update, rm, list, cat, extract, verify, info, log, diff, export, mount and key list;",
        ),
        (vec!["passwd", "s3://lockbox-tests/a.lbox"], "passwd rewrites an archive in place"),
        (vec!["compact", "s3://lockbox-tests/a.lbox"], "compact rewrites an archive in place"),
    ] {
        fails(&run(lockbox(&ep).args(&args)), 2, needle);
    }
    // Listing key slots only reads the header and slot table: allowed, and
    // the same as for the local copy; no password is needed.
    let slots = ok(run(lockbox(&ep).env_remove("LOCKBOX_PASSWORD").args(["key", "list"]).arg(url("a.lbox"))));
    assert_eq!(String::from_utf8_lossy(&slots.stdout), " 0  password   Argon2id 1 MiB, 1 passes, 1 lanes\n");
    let local = tmp.path().join("a.lbox");
    fs::write(&local, moto.get(BUCKET, "a.lbox").unwrap()).unwrap();
    let local_slots = ok(run(lockbox(&ep).args(["key", "list", "--json"]).arg(&local)));
    let remote_slots = ok(run(lockbox(&ep).args(["key", "list", "--json"]).arg(url("a.lbox"))));
    assert_eq!(local_slots.stdout, remote_slots.stdout);
    // `log` and `diff`, which the refusal names, read an object as a file.
    for args in [vec!["log", "--json"], vec!["diff", "--json", "--from", "1"]] {
        let remote = ok(run(lockbox(&ep).args(&args).arg(url("a.lbox"))));
        let local_run = ok(run(lockbox(&ep).args(&args).arg(&local)));
        assert_eq!(remote.stdout, local_run.stdout, "{args:?}");
    }
    fails(&run(lockbox(&ep).args(["key", "list"]).arg(url("missing.lbox"))), 1, "missing.lbox");
    // The endpoint from the environment; plain HTTP only when asked.
    let from_env = run(bare_lockbox()
        .env("AWS_ENDPOINT_URL", &ep)
        .env("AWS_ALLOW_HTTP", "true")
        .arg("list")
        .arg(url("a.lbox")));
    assert_eq!(String::from_utf8_lossy(&ok(from_env).stdout), "a.txt\n");
    fails(
        &run(bare_lockbox().env("AWS_ENDPOINT_URL", &ep).arg("list").arg(url("a.lbox"))),
        2,
        "--allow-http",
    );
    fails(&run(bare_lockbox().args(["--endpoint", &ep, "list", &url("a.lbox")])), 2, "--allow-http");

    fails(&run(lockbox(&ep).arg("list").arg(url("missing.lbox"))), 1, "missing.lbox");
    fails(&run(lockbox(&ep).arg("list").arg("s3://no-such-bucket/a.lbox")), 1, "no-such-bucket");
    moto.put(BUCKET, "not-lockbox", &b"just some text, not an archive\n".repeat(100));
    fails(&run(lockbox(&ep).arg("list").arg(url("not-lockbox"))), 3, "not a lockbox archive");
    fails(&run(lockbox(&ep).args(["key", "list"]).arg(url("not-lockbox"))), 3, "not a lockbox archive");
    moto.put(BUCKET, "empty", b"");
    fails(&run(lockbox(&ep).arg("info").arg(url("empty"))), 3, "too short");
    let wrong = run(lockbox(&ep).env("LOCKBOX_PASSWORD", "wrong").arg("list").arg(url("a.lbox")));
    fails(&wrong, 3, "wrong password");
}
