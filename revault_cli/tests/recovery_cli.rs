//! `--recovery PCT` through the real binary (issue 50 item 1, FORMAT.md
//! §3.12): every writer ends its sessions with a recovery record when asked,
//! every reader reads chains that mix sessions with and without one, a
//! stream refuses it, and records that are damaged or lie are reported in
//! one line.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{code, create_cmd, lockbox, noise, ok, run, stderr};

/// A tree of a few files, some incompressible, under `work/src`.
fn tree(work: &Path, len: usize) -> PathBuf {
    let src = work.join("src");
    fs::create_dir_all(src.join("d")).unwrap();
    fs::write(src.join("d/noise"), noise(7, len)).unwrap();
    fs::write(src.join("d/text"), "line\n".repeat(len / 50)).unwrap();
    fs::write(src.join("d/small"), "small").unwrap();
    src
}

/// Whether the last trailer of `archive` says a recovery record follows.
fn has_record(archive: &Path) -> bool {
    let bytes = fs::read(archive).unwrap();
    let flags = u16::from_le_bytes([bytes[bytes.len() - 216 + 10], bytes[bytes.len() - 216 + 11]]);
    flags & 0x10 != 0
}

/// `list`, `verify`, `log`, `info`, `cat` and `extract` all read `archive`,
/// and the extraction holds `expected` (name, content).
fn reads(archive: &Path, work: &Path, expected: &[(&str, Vec<u8>)]) {
    for command in [&["list"][..], &["verify"], &["log"], &["info"]] {
        let out = run(lockbox().args(command).arg(archive));
        assert_eq!(code(&out), 0, "{command:?}: {}", stderr(&out));
        assert!(stderr(&out).is_empty() || command == ["verify"], "{command:?}: {}", stderr(&out));
    }
    let cat = ok(run(lockbox().arg("cat").arg(archive).arg("d/small")));
    assert_eq!(cat.stdout, b"small");
    let out = tempfile::tempdir_in(work).unwrap();
    ok(run(lockbox().arg("extract").arg("-C").arg(out.path()).arg(archive)));
    for (name, content) in expected {
        assert_eq!(&fs::read(out.path().join(name)).unwrap(), content, "{name}");
    }
}

#[test]
fn records_through_create_add_update_rm_compact_and_repair() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path(), 1 << 20);
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "d", &["--recovery", "5"])));
    assert!(has_record(&archive));
    let noise = noise(7, 1 << 20);
    reads(&archive, work.path(), &[("d/noise", noise.clone())]);

    fs::write(src.join("d/added"), "added").unwrap();
    ok(run(lockbox().args(["add", "--recovery", "10", "-C"]).arg(&src).arg(&archive).arg("d/added")));
    assert!(has_record(&archive));
    fs::write(src.join("d/text"), "changed").unwrap();
    ok(run(lockbox().args(["update", "-C"]).arg(&src).arg(&archive).arg("d")));
    assert!(!has_record(&archive), "a session without a record after sessions with");
    reads(&archive, work.path(), &[("d/added", b"added".to_vec()), ("d/text", b"changed".to_vec())]);
    ok(run(lockbox().args(["rm", "--recovery", "1"]).arg(&archive).arg("d/added")));
    assert!(has_record(&archive));
    reads(&archive, work.path(), &[("d/noise", noise.clone())]);
    let log = String::from_utf8(ok(run(lockbox().arg("log").arg(&archive))).stdout).unwrap();
    assert_eq!(log.lines().count(), 4, "{log}");

    ok(run(lockbox().args(["compact", "--recovery", "5"]).arg(&archive)));
    assert!(has_record(&archive));
    reads(&archive, work.path(), &[("d/noise", noise.clone()), ("d/text", b"changed".to_vec())]);
    ok(run(lockbox().arg("compact").arg(&archive)));
    assert!(!has_record(&archive), "compact without --recovery writes none");

    // A damaged data page: repair rewrites what it proves, with a record.
    let mut bytes = fs::read(&archive).unwrap();
    let middle = bytes.len() / 3;
    bytes[middle] ^= 1;
    fs::write(&archive, &bytes).unwrap();
    let repaired = run(lockbox().args(["repair", "--recovery", "5"]).arg(&archive));
    assert_eq!(code(&repaired), 3, "{}", stderr(&repaired));
    assert!(has_record(&archive));
    ok(run(lockbox().arg("verify").arg(&archive)));
}

#[test]
fn a_record_costs_about_its_percentage() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path(), 4 << 20);
    let (plain, parity) = (work.path().join("plain.lbox"), work.path().join("parity.lbox"));
    ok(run(&mut create_cmd(&plain, &src, "d", &[])));
    ok(run(&mut create_cmd(&parity, &src, "d", &["--recovery", "5"])));
    let len = |p: &Path| fs::metadata(p).unwrap().len() as f64;
    let ratio = len(&parity) / len(&plain);
    eprintln!("--recovery 5: {} -> {} bytes, x{ratio:.4}", len(&plain), len(&parity));
    assert!((1.05..1.058).contains(&ratio), "{ratio}");
}

#[test]
fn recovery_to_a_stream_or_out_of_range_is_refused_in_one_line() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path(), 10_000);
    let out = run(&mut create_cmd(Path::new("-"), &src, "d", &["--recovery", "5"]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("--recovery needs the archive as a file"), "{}", stderr(&out));
    let archive = work.path().join("a.lbox");
    for pct in ["0", "51", "x"] {
        let out = run(&mut create_cmd(&archive, &src, "d", &["--recovery", pct]));
        assert_eq!(code(&out), 2, "{pct}: {}", stderr(&out));
        assert!(stderr(&out).contains("--recovery"), "{pct}: {}", stderr(&out));
        assert!(!archive.exists());
    }
    // The archival profile's record is left out of a stream, with a warning.
    let out = run(&mut create_cmd(Path::new("-"), &src, "d", &["--profile", "archival"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("no recovery record"), "{}", stderr(&out));
    ok(run(&mut create_cmd(&archive, &src, "d", &["--profile", "archival"])));
    assert!(has_record(&archive), "archival: 5 %");
    let out = run(lockbox().args(["rm", "--recovery", "0"]).arg(&archive).arg("d/small"));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn a_version_3_archive_refuses_a_record_in_one_line() {
    let work = tempfile::tempdir().unwrap();
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../revault_lockbox_api/tests/golden/v3-balanced.lbox");
    let archive = work.path().join("v3.lbox");
    fs::copy(golden, &archive).unwrap();
    let src = tree(work.path(), 1000);
    let before = fs::read(&archive).unwrap();
    let out = run(lockbox()
        .env("LOCKBOX_PASSWORD", "golden v3")
        .args(["add", "--recovery", "5", "-C"])
        .arg(&src)
        .arg(&archive)
        .arg("d/small"));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("format version 3"), "{}", stderr(&out));
    assert_eq!(fs::read(&archive).unwrap(), before, "nothing written");
}

#[test]
fn damaged_or_lying_records_are_reported_in_one_line_and_lose_no_file() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path(), 300_000);
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "d", &["--recovery", "5"])));
    let bytes = fs::read(&archive).unwrap();
    let footer = bytes.len() - 216 - 166;
    // (what, byte, what verify says)
    let cases = [
        ("footer", footer + 60, "recovery record footer at byte"),
        ("footer's percent", footer + 12, "recovery record footer at byte"),
        ("record", footer - 5000, "does not match its footer's hash"),
        ("second trailer", bytes.len() - 100, "second copy"),
    ];
    for (what, at, said) in cases {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x04;
        let file = work.path().join(format!("{}.lbox", what.replace([' ', '\''], "-")));
        fs::write(&file, &damaged).unwrap();
        let listed = run(lockbox().arg("list").arg(&file));
        assert_eq!(code(&listed), 0, "{what}: {}", stderr(&listed));
        assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 4, "{what}");
        assert!(stderr(&listed).lines().count() <= 1, "{what}: {}", stderr(&listed));
        let verified = run(lockbox().arg("verify").arg(&file));
        assert_eq!(code(&verified), 3, "{what}: {}", stderr(&verified));
        assert!(stderr(&verified).contains(said), "{what}: {}", stderr(&verified));
    }
}
