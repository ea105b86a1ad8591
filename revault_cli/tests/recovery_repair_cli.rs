//! Repairing with recovery records through the real binary (issue 50, items 3 and 4;
//! docs/RECOVERY.md "Reading and repairing"): an archive made with
//! `--recovery 5`, damaged as the issue's trials damage it, is repaired
//! byte for byte; readers go on through the damage in memory, saying what
//! they rebuilt; `verify` says repairable or not (exit 3 either way);
//! damage past the parity falls back to salvage; parity that lies is
//! refused and never used.

use std::fs;
use std::path::{Path, PathBuf};

use revault_lockbox_api::recovery::{sums_check, Footer, FOOTER_LEN};

use crate::util::{code, create_cmd, lockbox, noise, ok, run, stderr, walk};

/// A tree of a few MiB: incompressible files of several sizes, and a
/// directory of small ones.
fn tree(work: &Path) -> PathBuf {
    let src = work.join("src");
    fs::create_dir_all(src.join("t/small")).unwrap();
    for (i, len) in [1 << 20, 700_000, 1_300_000, 90_000, 2 << 20].into_iter().enumerate() {
        fs::write(src.join(format!("t/big{i}")), noise(i as u64 + 7, len)).unwrap();
    }
    for i in 0..40 {
        fs::write(src.join(format!("t/small/{i}")), noise(i + 100, 3000 + 97 * i as usize)).unwrap();
    }
    src
}

/// The archive of `src` with a 5 % recovery record.
fn protected(work: &Path, src: &Path, name: &str) -> (PathBuf, Vec<u8>) {
    let archive = work.join(name);
    ok(run(&mut create_cmd(&archive, src, "t", &["--recovery", "5"])));
    let bytes = fs::read(&archive).unwrap();
    (archive, bytes)
}

/// `damaged` written beside the archive under `name`.
fn damaged_copy(work: &Path, name: &str, damaged: &[u8]) -> PathBuf {
    let path = work.join(name);
    fs::write(&path, damaged).unwrap();
    path
}

/// Every file of `src` extracted from `archive` equal to its source.
fn extracts_equal(work: &Path, archive: &Path, src: &Path, label: &str) {
    let out = work.join(format!("out-{label}"));
    let extracted = run(lockbox().args(["extract", "-C"]).arg(&out).arg(archive));
    assert_eq!(code(&extracted), 0, "{label}: {}", stderr(&extracted));
    for entry in walk(&src.join("t")).into_iter().filter(|p| p.is_file()) {
        let relative = entry.strip_prefix(src).unwrap();
        assert_eq!(fs::read(out.join(relative)).unwrap(), fs::read(&entry).unwrap(), "{label}: {relative:?}");
    }
    fs::remove_dir_all(&out).unwrap();
}

/// Names in `dir` other than `keep`: what a failed rewrite left behind.
fn strays(dir: &Path, keep: &[&str]) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !keep.contains(&n.as_str()) && !n.starts_with("out-") && n != "src")
        .collect()
}

#[test]
fn the_issue_s_damage_is_repaired_byte_for_byte_and_readers_go_on_through_it() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path());
    let (archive, original) = protected(work.path(), &src, "a.lbox");
    let len = original.len();
    let run_len = len * 45 / 1000;
    // 4.5 % contiguous at 10 offsets, the first at byte 0 (the header,
    // the slot table) and the last ending at the last byte (the trailer
    // copy, the footer, the record's end).
    let mut cases: Vec<(String, Vec<u8>)> = (0..10)
        .map(|i| {
            let start = (len - run_len) * i / 9;
            let mut bytes = original.clone();
            bytes[start..start + run_len].copy_from_slice(&noise(i as u64 + 1, run_len));
            (format!("run-at-{start}"), bytes)
        })
        .collect();
    // 0.5 % of the 4 KiB blocks, at random (seeded).
    let mut bytes = original.clone();
    let blocks = len / 4096;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..blocks * 5 / 1000 + 1 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x as usize % blocks) * 4096;
        bytes[at..at + 4096].copy_from_slice(&noise(x | 1, 4096));
    }
    cases.push(("random-sectors".into(), bytes));
    // The header and slot table zeroed.
    let data_start = 32 + 16 * usize::from(u16::from_le_bytes([original[30], original[31]]));
    let mut bytes = original.clone();
    bytes[..data_start].fill(0);
    cases.push(("header-zeroed".into(), bytes));

    for (label, bytes) in &cases {
        let path = damaged_copy(work.path(), &format!("{label}.lbox"), bytes);
        let repaired = run(lockbox().arg("repair").arg(&path));
        assert_eq!(code(&repaired), 0, "{label}: {}", stderr(&repaired));
        assert!(fs::read(&path).unwrap() == original, "{label}: not byte for byte: {}", stderr(&repaired));
        assert!(!stderr(&repaired).contains("salvag"), "{label}: {}", stderr(&repaired));
        fs::remove_file(&path).unwrap();
    }
    extracts_equal(work.path(), &archive, &src, "original");

    // Readers on a damaged copy (a run in the middle): each goes on, and
    // says once what it rebuilt of what it read; the file is never written.
    let (label, bytes) = &cases[4];
    let path = damaged_copy(work.path(), "readers.lbox", bytes);
    let rebuilt_line = "from its recovery record";
    let listed = run(lockbox().arg("list").arg(&path));
    assert_eq!(code(&listed), 0, "{label}: {}", stderr(&listed));
    assert!(String::from_utf8_lossy(&listed.stdout).contains("t/small/39"));
    // `list` reads the index only: it says something only if the run
    // reached the index.
    assert!(stderr(&listed).lines().all(|l| l.contains(rebuilt_line)), "{}", stderr(&listed));
    let cat = run(lockbox().arg("cat").arg(&path).arg("t/big4"));
    assert_eq!(code(&cat), 0, "{}", stderr(&cat));
    assert!(cat.stdout == fs::read(src.join("t/big4")).unwrap());
    let out = work.path().join("out-damaged");
    let extracted = run(lockbox().args(["extract", "-C"]).arg(&out).arg(&path));
    assert_eq!(code(&extracted), 0, "{}", stderr(&extracted));
    let said = stderr(&extracted);
    assert!(said.contains("rebuilt ") && said.contains(rebuilt_line), "{said}");
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    fs::remove_dir_all(&out).unwrap();
    extracts_equal(work.path(), &path, &src, "damaged");
    assert!(&fs::read(&path).unwrap() == bytes, "readers never write the archive");

    let verified = run(lockbox().arg("verify").arg(&path));
    assert_eq!(code(&verified), 3, "{}", stderr(&verified));
    assert!(stderr(&verified).contains(", repairable"), "{}", stderr(&verified));

    // An undamaged archive with records: no noise, exit 0.
    let verified = ok(run(lockbox().arg("verify").arg(&archive)));
    assert!(!stderr(&verified).contains("damage"), "{}", stderr(&verified));
    let listed = ok(run(lockbox().arg("list").arg(&archive)));
    assert_eq!(stderr(&listed), "");
}

#[test]
fn damage_past_the_parity_is_not_repairable_and_repair_salvages_saying_so() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path());
    let (_, original) = protected(work.path(), &src, "a.lbox");
    let mut bytes = original.clone();
    // 20 % in the middle: four times the parity.
    let (start, wide) = (original.len() * 2 / 5, original.len() / 5);
    bytes[start..start + wide].copy_from_slice(&noise(3, wide));
    let path = damaged_copy(work.path(), "wide.lbox", &bytes);

    let verified = run(lockbox().arg("verify").arg(&path));
    assert_eq!(code(&verified), 3);
    let said = stderr(&verified);
    assert!(said.contains("not repairable (group ") && said.contains("recovery shards intact"), "{said}");

    let repaired = run(lockbox().arg("repair").arg(&path));
    assert_eq!(code(&repaired), 3, "{}", stderr(&repaired));
    let said = stderr(&repaired);
    assert!(
        said.contains("cannot repair the session at byte") && said.contains("salvaging instead"),
        "{said}"
    );
    assert!(said.contains("rewritten from what a scan proves"), "{said}");
    assert_eq!(strays(work.path(), &["a.lbox", "wide.lbox"]), Vec::<String>::new(), "nothing left behind");
    // What the salvage kept verifies.
    ok(run(lockbox().arg("verify").arg(&path)));
}

/// The footer of the archive's last recovery record, where it lies.
fn last_footer(bytes: &[u8]) -> (usize, Footer) {
    let at = bytes.len() - 216 - FOOTER_LEN;
    let footer = Footer::decode(bytes[at..at + FOOTER_LEN].try_into().unwrap(), at as u64).unwrap();
    (at, footer)
}

#[test]
fn a_recovery_record_from_another_archive_is_refused_and_never_used() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path());
    let (_, ours) = protected(work.path(), &src, "ours.lbox");
    // Our record under a footer that names another archive (the footer's
    // own checksum right), and damage in the middle ours would repair.
    let mut spliced = ours.clone();
    let (at, mut footer) = last_footer(&ours);
    footer.owner.archive_id = [0xAB; 16];
    spliced[at..at + FOOTER_LEN].copy_from_slice(&footer.encode());
    let mid = ours.len() / 2;
    spliced[mid..mid + 8192].fill(0);
    let path = damaged_copy(work.path(), "spliced.lbox", &spliced);

    let refused = "belongs to another archive (its archive id is not the header's): not used";
    let verified = run(lockbox().arg("verify").arg(&path));
    assert_eq!(code(&verified), 3);
    assert!(stderr(&verified).contains(refused), "{}", stderr(&verified));
    let listed = run(lockbox().arg("list").arg(&path));
    assert!(stderr(&listed).contains(refused), "{}", stderr(&listed));
    assert!(!stderr(&listed).contains("rebuilt"), "{}", stderr(&listed));
    let repaired = run(lockbox().arg("repair").arg(&path));
    let said = stderr(&repaired);
    assert!(said.contains(refused) && said.contains("salvaging instead"), "{said}");
    assert!(fs::read(&path).unwrap() != ours, "the refused record rebuilt nothing");
}

#[test]
fn checksums_that_lie_are_refused_and_never_used() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path());
    let (_, ours) = protected(work.path(), &src, "ours.lbox");
    let (footer_at, footer) = last_footer(&ours);
    let record_at = footer_at - footer.record_len as usize;
    let record = footer.record_layout();
    // Group 0's checksum of its first shard changed in both of its lists,
    // each list's check made again so that it passes: the list lies.
    let sums_len = record.sums_len() as usize;
    let mut lying = ours.clone();
    for list in [record.first_sums(0), record.second_sums(0)] {
        let list = record_at + list as usize;
        lying[list] ^= 0xFF;
        let check = sums_check(0, &lying[list..list + sums_len - 8]);
        lying[list + sums_len - 8..list + sums_len].copy_from_slice(&check);
    }
    let path = damaged_copy(work.path(), "lying.lbox", &lying);
    let lies = "does not match its checksum (the parity lies)";
    // A reader refuses the record and reads the bytes as they are (they
    // are whole: nothing is "repaired" into them).
    let listed = run(lockbox().arg("list").arg(&path));
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    assert!(stderr(&listed).contains(lies), "{}", stderr(&listed));
    let out = work.path().join("out-lying");
    ok(run(lockbox().args(["extract", "-C"]).arg(&out).arg(&path)));
    assert!(fs::read(out.join("t/big0")).unwrap() == fs::read(src.join("t/big0")).unwrap());
}

#[test]
fn each_session_s_record_repairs_its_own_damage_after_an_add() {
    let work = tempfile::tempdir().unwrap();
    let src = tree(work.path());
    let (archive, first) = protected(work.path(), &src, "a.lbox");
    fs::create_dir_all(src.join("t/later")).unwrap();
    fs::write(src.join("t/later/more"), noise(77, 1_500_000)).unwrap();
    ok(run(lockbox().args(["add", "--recovery", "5"]).arg(&archive).arg("-C").arg(&src).arg("t/later")));
    let original = fs::read(&archive).unwrap();
    // A run in the first session and scattered sectors in the second,
    // repaired at once, each by its own record.
    let mut bytes = original.clone();
    let run_len = first.len() * 4 / 100;
    bytes[first.len() / 3..first.len() / 3 + run_len].fill(0xEE);
    for at in [first.len() + 20_000, first.len() + 700_000, original.len() - 400_000] {
        bytes[at..at + 4096].fill(0x11);
    }
    let path = damaged_copy(work.path(), "two.lbox", &bytes);
    // An extraction reads both sessions' damage: a line for each.
    let out = work.path().join("out-both");
    let extracted = run(lockbox().args(["extract", "-C"]).arg(&out).arg(&path));
    assert_eq!(code(&extracted), 0, "{}", stderr(&extracted));
    assert_eq!(stderr(&extracted).matches("from its recovery record").count(), 2, "{}", stderr(&extracted));
    fs::remove_dir_all(&out).unwrap();
    let repaired = run(lockbox().arg("repair").arg(&path));
    assert_eq!(code(&repaired), 0, "{}", stderr(&repaired));
    assert!(fs::read(&path).unwrap() == original, "byte for byte: {}", stderr(&repaired));
    extracts_equal(work.path(), &path, &src, "two-sessions");
}

/// `cat` of each file of `src` from `archive`: the file's name and what
/// the reader said on stderr, each file's bytes checked.
fn cat_each(src: &Path, archive: &Path) -> Vec<(String, String)> {
    walk(&src.join("t"))
        .into_iter()
        .filter(|p| p.is_file())
        .map(|file| {
            let name = file.strip_prefix(src).unwrap().to_string_lossy().into_owned();
            let cat = run(lockbox().arg("cat").arg(archive).arg(&name));
            assert_eq!(code(&cat), 0, "{name}: {}", stderr(&cat));
            assert!(cat.stdout == fs::read(&file).unwrap(), "{name}: not its bytes");
            (name, stderr(&cat))
        })
        .collect()
}

/// One damaged sector in the middle of a protected archive: the files
/// whose pages hold it are rebuilt, and only those.
fn sector_damaged(work: &Path) -> (PathBuf, Vec<(String, String)>) {
    let src = tree(work);
    let (_, mut bytes) = protected(work, &src, "a.lbox");
    let at = bytes.len() / 2 / 4096 * 4096;
    bytes[at..at + 4096].copy_from_slice(&noise(99, 4096));
    let path = damaged_copy(work, "sector.lbox", &bytes);
    let said = cat_each(&src, &path);
    (src, said)
}

#[test]
fn cat_of_a_file_away_from_the_damage_reads_nothing_damaged() {
    let work = tempfile::tempdir().unwrap();
    let (_, said) = sector_damaged(work.path());
    // A reader that touched the damaged shard would have rebuilt it and
    // said so: silence means the damaged range was never read.
    let quiet: Vec<&String> = said.iter().filter(|(_, s)| s.is_empty()).map(|(n, _)| n).collect();
    assert!(quiet.len() >= said.len() / 2, "most files lie away from one sector: {said:?}");
}

#[test]
fn cat_of_a_file_over_the_damage_rebuilds_it_and_says_so_once() {
    let work = tempfile::tempdir().unwrap();
    let (_, said) = sector_damaged(work.path());
    let rebuilt: Vec<&(String, String)> = said.iter().filter(|(_, s)| !s.is_empty()).collect();
    assert!(!rebuilt.is_empty(), "some file lies over the sector: {said:?}");
    for (name, s) in rebuilt {
        assert_eq!(s.lines().count(), 1, "{name}: {s}");
        // The sector straddles two shards (they start at the session's
        // first byte, not at a multiple of 4 KiB).
        assert!(
            s.contains("rebuilt 2 shards (8192 bytes)") && s.contains("from its recovery record"),
            "{name}: {s}"
        );
    }
}
