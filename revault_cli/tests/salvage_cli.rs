//! Salvage (FORMAT.md §6.6) through the real binary: archives cut at many
//! points, a flipped byte in the trailer, the root or one entries leaf.
//! `extract --keep-going` restores what the scan proves, every restored
//! byte equal to the source; `verify` lists what is lost and exits 3;
//! `repair` writes a valid archive of what was proven.

use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::util::{code, create_cmd, lockbox, ok, run, stderr, walk};

/// `count` files under `d/` of about 20-50 KB of seeded bytes that do not
/// compress, so that a 64 KiB-page archive (`random-read`) spreads them
/// over many pages and entries leaves.
fn tree(root: &Path, prefix: &str, count: usize, seed: u64) -> Vec<PathBuf> {
    fs::create_dir_all(root.join("d")).unwrap();
    let mut state = seed;
    (0..count)
        .map(|i| {
            let rel = PathBuf::from(format!("d/{prefix}{i:03}"));
            fs::write(root.join(&rel), noise(20_000 + (i * 977) % 30_000, &mut state)).unwrap();
            rel
        })
        .collect()
}

/// `len` seeded bytes that do not compress, `state` carried on.
fn noise(len: usize, state: &mut u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (*state >> 33) as u8
        })
        .collect()
}

fn create(work: &TempDir, files: usize) -> (PathBuf, PathBuf, Vec<PathBuf>) {
    let src = work.path().join("src");
    let names = tree(&src, "f", files, 7);
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "d", &["--profile", "random-read"])));
    (archive, src, names)
}

/// Runs `extract --keep-going` of `archive` into a fresh directory; returns
/// the exit code, stderr, and how many of `names` were restored, after
/// checking that every restored file equals its source byte for byte and
/// that nothing else was written.
fn salvage_extract(archive: &Path, src: &Path, names: &[PathBuf], out: &Path) -> (i32, String, usize) {
    fs::create_dir_all(out).unwrap();
    let result = run(lockbox().args(["extract", "--keep-going", "-C"]).arg(out).arg(archive));
    let mut restored = 0;
    for name in names {
        let path = out.join(name);
        if path.exists() {
            assert_eq!(fs::read(&path).unwrap(), fs::read(src.join(name)).unwrap(), "{}", path.display());
            restored += 1;
        }
    }
    let written = walk(out).into_iter().filter(|p| p.is_file()).count();
    assert_eq!(written, restored, "only files of the source are written");
    (code(&result), stderr(&result), restored)
}

/// Where each unit of the first session starts, with its frame's kind,
/// table, level and number (FORMAT.md §3.4, §3.9), read from the bytes.
fn units(bytes: &[u8]) -> Vec<(usize, u8, u8, u8, u64)> {
    let slot_len = usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    let header = 32 + 16 * slot_len;
    let body = u32::from_le_bytes(bytes[header + 60..header + 64].try_into().unwrap()) as usize;
    let mut at = header + 64 + body;
    let mut found = Vec::new();
    // The units end where the header copy (FORMAT.md §3.11) starts: a
    // trailer follows it.
    let copy = 32 + 16 * slot_len;
    while !bytes[at + copy..].starts_with(b"LBOXTAIL") {
        let f = &bytes[at..at + 20];
        let number = u64::from_le_bytes(f[4..12].try_into().unwrap());
        found.push((at, f[0], f[1], f[2], number));
        at += 20 + u32::from_le_bytes(f[16..20].try_into().unwrap()) as usize;
    }
    found
}

#[test]
fn cuts_at_many_points_restore_every_file_before_the_cut_and_nothing_else() {
    let work = TempDir::new().unwrap();
    let (archive, src, mut names) = create(&work, 60);
    let first_len = fs::metadata(&archive).unwrap().len() as usize;
    // A second session: more files, appended.
    names.extend(tree(&src, "g", 10, 11));
    ok(run(lockbox().args(["add", "--profile", "random-read"]).arg(&archive).arg("-C").arg(&src).arg("d")));
    let bytes = fs::read(&archive).unwrap();
    let first_units = units(&bytes);
    let leaves = first_units.iter().filter(|u| (u.1, u.2, u.3) == (2, 1, 0)).count();
    assert!(leaves >= 4, "the first session's entries are spread over {leaves} leaves");
    let data_start = first_units[0].0;
    let mut last = 0;
    for i in 1..=16 {
        let cut = data_start + (bytes.len() - data_start) * i / 17;
        let cut_file = work.path().join(format!("cut{i}.lbox"));
        fs::write(&cut_file, &bytes[..cut]).unwrap();
        let (status, err, restored) =
            salvage_extract(&cut_file, &src, &names, &work.path().join(format!("out{i}")));
        if cut < first_len {
            // No commit left: salvaged, what lies before the cut restored.
            assert_eq!(status, 3, "cut at {cut}: {err}");
            assert!(err.contains("salvaging") && err.contains("lost: "), "cut at {cut}: {err}");
            assert!(restored >= last, "cut at {cut}: {restored} files, {last} at an earlier cut");
            last = restored;
        } else {
            // The first session's commit reads: its state, whole.
            assert_eq!((status, restored), (0, 60), "cut at {cut}: {err}");
        }
    }
    assert!(last > 30, "a cut late in the first session keeps most of its files ({last})");
    // Cut right at the first session's root: every file of it is named by
    // a leaf and lies in a page before the cut.
    let root = first_units.iter().find(|u| u.1 == 3).unwrap().0;
    let cut_file = work.path().join("at-root.lbox");
    fs::write(&cut_file, &bytes[..root]).unwrap();
    let (status, err, restored) = salvage_extract(&cut_file, &src, &names, &work.path().join("out-root"));
    assert_eq!((status, restored), (3, 60), "{err}");
    let out = run(lockbox().arg("verify").arg(&cut_file));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("has no trailer that authenticates"), "{}", stderr(&out));
}

/// Cuts right after each entries leaf of an archive with an empty file
/// after every other file. A leaf sealed while the page holding the last
/// file's end was still filling names an empty file at an offset no
/// surviving page reaches: it is restored (it needs no page), and the
/// salvage goes on. (Until this was fixed, such a cut restored nothing:
/// the Linux tree's archive cut at 96 % and 98 % of its length.)
#[test]
fn a_cut_after_an_entries_leaf_keeps_its_empty_files() {
    let work = TempDir::new().unwrap();
    let src = work.path().join("src");
    let mut names = tree(&src, "f", 60, 7);
    let mut empty = Vec::new();
    for i in 0..60 {
        let rel = PathBuf::from(format!("d/f{i:03}e"));
        fs::write(src.join(&rel), b"").unwrap();
        empty.push(rel);
    }
    names.extend(empty.iter().cloned());
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "d", &["--profile", "random-read"])));
    let bytes = fs::read(&archive).unwrap();
    let all = units(&bytes);
    let ends: Vec<usize> =
        all.windows(2).filter(|w| (w[0].1, w[0].2, w[0].3) == (2, 1, 0)).map(|w| w[1].0).collect();
    assert!(ends.len() >= 4, "{} entries leaves", ends.len());
    let mut beyond_the_pages = 0;
    for (i, &cut) in ends.iter().enumerate() {
        let cut_file = work.path().join(format!("leaf{i}.lbox"));
        fs::write(&cut_file, &bytes[..cut]).unwrap();
        let out = work.path().join(format!("out{i}"));
        let (status, err, restored) = salvage_extract(&cut_file, &src, &names, &out);
        assert_eq!(status, 3, "cut after leaf {i}: {err}");
        assert!(err.contains("salvaging") && !err.contains("malformed"), "cut after leaf {i}: {err}");
        let kept_empty = empty.iter().filter(|e| out.join(e).exists()).count();
        let kept_full = restored - kept_empty;
        // An empty file sorts right after its neighbour `d/fNNN`: kept
        // empty files beyond the kept full ones lay past the pages.
        beyond_the_pages += kept_empty.saturating_sub(kept_full);
    }
    assert!(beyond_the_pages > 0, "some cut left an empty file past the surviving pages");
}

/// Small files stored right before a large one, cut in the large file's
/// pages: their leaf was written once the stream had grown by four pages
/// past its first record (FORMAT.md §5), not after the large file's last
/// byte, so the cut keeps them all. (Until the writer checked that rule
/// as pages were handed over, not only as records came, such a cut lost
/// every one of them: issue 46, spec defect 17.)
#[test]
fn a_cut_in_a_large_file_keeps_the_small_files_before_it() {
    let work = TempDir::new().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(src.join("d")).unwrap();
    let mut state = 5;
    let mut names: Vec<PathBuf> = (0..20).map(|i| PathBuf::from(format!("d/a{i:02}"))).collect();
    for name in &names {
        fs::write(src.join(name), noise(1000, &mut state)).unwrap();
    }
    // 32 pages of 64 KiB (`random-read`), after the small files' one.
    names.push(PathBuf::from("d/b"));
    fs::write(src.join("d/b"), noise(2 << 20, &mut state)).unwrap();
    let archive = work.path().join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "d", &["--profile", "random-read"])));
    let bytes = fs::read(&archive).unwrap();
    let all = units(&bytes);
    let pages: Vec<usize> = all.iter().filter(|u| u.1 == 1).map(|u| u.0).collect();
    assert!(pages.len() >= 30, "{} pages", pages.len());
    // Half way through the large file's pages.
    let cut = pages[pages.len() / 2] + 100;
    let cut_file = work.path().join("cut.lbox");
    fs::write(&cut_file, &bytes[..cut]).unwrap();
    let (status, err, restored) = salvage_extract(&cut_file, &src, &names, &work.path().join("out"));
    assert_eq!(status, 3, "{err}");
    assert!(err.contains("salvaging"), "{err}");
    assert_eq!(restored, 20, "every small file, not the large one: {err}");
    assert!(!work.path().join("out/d/b").exists());
}

#[test]
fn a_flipped_byte_in_the_trailer_or_the_root_loses_no_file() {
    let work = TempDir::new().unwrap();
    let (archive, src, names) = create(&work, 30);
    let bytes = fs::read(&archive).unwrap();
    let root = units(&bytes).iter().find(|u| u.1 == 3).unwrap().0;
    for (what, at) in [("trailer", bytes.len() - 100), ("root", root + 30)] {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x40;
        let file = work.path().join(format!("{what}.lbox"));
        fs::write(&file, &damaged).unwrap();
        let (status, err, restored) = salvage_extract(&file, &src, &names, &work.path().join(what));
        assert_eq!((status, restored), (3, 30), "{what}: {err}");
        // Without --keep-going the damage stops extract, nothing written.
        let plain = work.path().join(format!("{what}-plain"));
        fs::create_dir(&plain).unwrap();
        let out = run(lockbox().arg("extract").arg("-C").arg(&plain).arg(&file));
        assert_eq!(code(&out), 3, "{what}");
        assert_eq!(stderr(&out).lines().count(), 1, "{what}: one line: {}", stderr(&out));
        assert!(walk(&plain).is_empty(), "{what}");
    }
}

#[test]
fn a_flipped_byte_in_one_entries_leaf_loses_only_that_leafs_entries() {
    let work = TempDir::new().unwrap();
    let (archive, src, names) = create(&work, 60);
    let mut bytes = fs::read(&archive).unwrap();
    let all = units(&bytes);
    let leaf = all.iter().find(|u| (u.1, u.2, u.3, u.4) == (2, 1, 0, 1)).expect("a second entries leaf");
    bytes[leaf.0 + 40] ^= 1;
    fs::write(&archive, &bytes).unwrap();
    let (status, err, restored) = salvage_extract(&archive, &src, &names, &work.path().join("out"));
    assert_eq!(status, 3, "{err}");
    assert!(err.contains("entries leaf #1"), "{err}");
    // The other leaves' files all come back; the damaged leaf held at
    // most a few pages' worth (four 64 KiB pages: a dozen of these files).
    assert!((60 - 14..60).contains(&restored), "{restored} restored: {err}");
    let out = run(lockbox().arg("verify").arg(&archive));
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("lost: "), "{}", stderr(&out));
}

#[test]
fn repair_writes_a_valid_archive_of_what_a_cut_one_proves() {
    let work = TempDir::new().unwrap();
    let (archive, src, names) = create(&work, 40);
    let bytes = fs::read(&archive).unwrap();
    let cut = work.path().join("cut.lbox");
    fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let (_, _, salvaged) = salvage_extract(&cut, &src, &names, &work.path().join("before"));
    let out = run(lockbox().arg("repair").arg(&cut));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(stderr(&out).contains("rewritten from what a scan proves"), "{}", stderr(&out));
    ok(run(lockbox().arg("verify").arg(&cut)));
    let (status, err, restored) = salvage_extract(&cut, &src, &names, &work.path().join("after"));
    assert_eq!((status, restored), (0, salvaged), "{err}");
    // Its one session holds state 1 (the numbering starts again).
    let log = String::from_utf8(ok(run(lockbox().arg("log").arg(&cut))).stdout).unwrap();
    assert!(
        log.starts_with("   1  ") && log.contains("holding this state") && log.lines().count() == 1,
        "{log}"
    );
    // Whole now: a second repair has nothing to do.
    let again = ok(run(lockbox().arg("repair").arg(&cut)));
    assert!(stderr(&again).contains("whole, nothing to cut"), "{}", stderr(&again));
}

/// `repair` of an archive whose index reads but one data page does not
/// said "whole, nothing to cut" and exited 0 (issue 49). It now reads
/// every page, rewrites the last state from what authenticates, names
/// each file it left out, and exits 3; the archive then verifies, and
/// extracts every file but those.
#[test]
fn repair_of_a_damaged_data_page_rewrites_the_rest_and_names_what_it_lost() {
    let work = TempDir::new().unwrap();
    let (archive, src, mut names) = create(&work, 40);
    let bytes = fs::read(&archive).unwrap();
    let page = units(&bytes).into_iter().find(|u| (u.1, u.4) == (1, 2)).expect("a third data page");
    fs::write(src.join("d/late"), b"stored by the second session\n").unwrap();
    ok(run(lockbox().arg("add").arg(&archive).arg("-C").arg(&src).arg("d/late")));
    names.push(PathBuf::from("d/late"));
    let mut bytes = fs::read(&archive).unwrap();
    bytes[page.0 + 20 + 100] ^= 1;
    fs::write(&archive, &bytes).unwrap();
    let (status, err, _) = salvage_extract(&archive, &src, &names, &work.path().join("before"));
    assert_eq!(status, 3, "{err}");
    let on_the_page: Vec<&PathBuf> =
        names.iter().filter(|n| !work.path().join("before").join(n).exists()).collect();
    assert!(!on_the_page.is_empty() && on_the_page.len() < 10, "{on_the_page:?}");

    let out = run(lockbox().arg("repair").arg(&archive));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let said = stderr(&out);
    let left_out: Vec<&str> = said
        .lines()
        .filter_map(|l| l.strip_prefix("lockbox: damaged, left out: "))
        .map(|l| l.split(": ").next().unwrap())
        .collect();
    let expected: Vec<String> = on_the_page.iter().map(|n| n.display().to_string()).collect();
    assert_eq!(left_out, expected, "{said}");
    // The page's session is named as `log` names it: by its state.
    assert!(
        said.contains("data page 2 of state 1:") && said.contains("rewritten from what a scan proves"),
        "{said}"
    );
    assert!(said.contains("state 1: the rewrite holds the last state only"), "{said}");
    assert!(!said.contains("whole, nothing to cut"), "{said}");

    ok(run(lockbox().arg("verify").arg(&archive)));
    let after = work.path().join("after");
    fs::create_dir(&after).unwrap();
    ok(run(lockbox().args(["extract", "-C"]).arg(&after).arg(&archive)));
    for name in &names {
        let restored = after.join(name);
        match on_the_page.contains(&name) {
            true => assert!(!restored.exists(), "{}", name.display()),
            false => assert_eq!(fs::read(&restored).unwrap(), fs::read(src.join(name)).unwrap()),
        }
    }
    // The last state keeps its number: `--session 2` still reads it.
    let log = String::from_utf8(ok(run(lockbox().arg("log").arg(&archive))).stdout).unwrap();
    assert!(
        log.contains("state 1 was removed") && log.lines().last().unwrap().starts_with("   2  "),
        "{log}"
    );
    ok(run(lockbox().args(["cat", "--session", "2"]).arg(&archive).arg("d/late")));
    let again = ok(run(lockbox().arg("repair").arg(&archive)));
    assert!(stderr(&again).contains("whole, nothing to cut"), "{}", stderr(&again));
}

#[test]
fn salvage_refuses_a_wrong_password_and_what_is_no_archive() {
    let work = TempDir::new().unwrap();
    let (archive, ..) = create(&work, 5);
    let bytes = fs::read(&archive).unwrap();
    let cut = work.path().join("cut.lbox");
    fs::write(&cut, &bytes[..bytes.len() - 1]).unwrap();
    let out = run(lockbox().env("LOCKBOX_PASSWORD", "wrong").arg("verify").arg(&cut));
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("wrong password") && !stderr(&out).contains("salvag"), "{}", stderr(&out));
    let junk = work.path().join("junk.lbox");
    fs::write(&junk, vec![7u8; 5000]).unwrap();
    let before = fs::read(&junk).unwrap();
    let out = run(lockbox().arg("repair").arg(&junk));
    assert_ne!(code(&out), 0);
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert_eq!(fs::read(&junk).unwrap(), before, "left untouched");
}

/// A flipped byte anywhere in an earlier session's trailer (its core, which
/// the next trailer's `previous_hash` pins, its `signature_len` or its
/// tag). In the trailer the last session links to, every strict command
/// refuses the archive in one line naming it; `extract --keep-going`
/// restores every file; `repair` makes it valid again. In one further back,
/// the last state still opens; `verify` checks every file, names the
/// trailer and exits 3, and `repair` makes the archive valid again.
#[test]
fn a_damaged_earlier_trailer_loses_history_not_files() {
    const TRAILER: usize = 216;
    let work = TempDir::new().unwrap();
    let (archive, src, mut names) = create(&work, 20);
    let first_end = fs::metadata(&archive).unwrap().len() as usize;
    names.extend(tree(&src, "g", 5, 11));
    ok(run(lockbox().arg("add").arg(&archive).arg("-C").arg(&src).arg("d")));
    let second_end = fs::metadata(&archive).unwrap().len() as usize;
    names.extend(tree(&src, "h", 5, 13));
    ok(run(lockbox().arg("add").arg(&archive).arg("-C").arg(&src).arg("d")));
    let bytes = fs::read(&archive).unwrap();
    let damaged = |trailer_end: usize, at: usize| {
        let mut copy = bytes.clone();
        copy[trailer_end - TRAILER + at] ^= 0x10;
        let file = work.path().join(format!("t{trailer_end}-{at}.lbox"));
        fs::write(&file, copy).unwrap();
        file
    };
    let repaired_whole = |file: &Path, tag: &str| {
        let out = run(lockbox().arg("repair").arg(file));
        assert_eq!(code(&out), 3, "{tag}: {}", stderr(&out));
        assert!(stderr(&out).contains("rewritten from what a scan proves"), "{tag}: {}", stderr(&out));
        ok(run(lockbox().arg("verify").arg(file)));
        let (status, err, restored) =
            salvage_extract(file, &src, &names, &work.path().join(format!("{tag}-r")));
        assert_eq!((status, restored), (0, 30), "{tag}: {err}");
    };
    // Magic, salt, root_offset, previous_hash, signature_len, tag.
    for at in [0, 40, 124, 180, 197, 210] {
        let tag = format!("second trailer, byte {at}");
        let file = damaged(second_end, at);
        let out = run(lockbox().arg("list").arg(&file));
        let named = format!("the trailer at byte {}", second_end - TRAILER);
        assert_eq!(code(&out), 3, "{tag}");
        assert!(
            stderr(&out).contains(&named) && stderr(&out).lines().count() == 1,
            "{tag}: {}",
            stderr(&out)
        );
        let (status, err, restored) =
            salvage_extract(&file, &src, &names, &work.path().join(format!("s{at}")));
        assert_eq!((status, restored), (3, 30), "{tag}: {err}");
        assert!(err.contains("its trailer is damaged"), "{tag}: {err}");
        repaired_whole(&file, &format!("s{at}"));
    }
    for at in [100, 210] {
        let tag = format!("first trailer, byte {at}");
        let file = damaged(first_end, at);
        ok(run(lockbox().arg("list").arg(&file)));
        let out = run(lockbox().arg("verify").arg(&file));
        let named = format!("the trailer at byte {}", first_end - TRAILER);
        assert_eq!(code(&out), 3, "{tag}");
        assert!(
            stderr(&out).contains(&named) && stderr(&out).contains("30 files proven"),
            "{tag}: {}",
            stderr(&out)
        );
        repaired_whole(&file, &format!("f{at}"));
    }
}
