//! Compaction with retention on real files: the kept states read back as
//! they were (every entry, every extracted byte, number, time and label),
//! the removed ones are refused, and `reclaimable` is what the rewrite
//! reclaims at least.

use std::fs;
use std::num::NonZeroU64;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use revault_lockbox_api::read::{AsOf, SessionKind, SessionSummary};
use revault_lockbox_api::update::Retention;
use revault_lockbox_api::{ArchiveUpdater, Error, ExtractOptions, UpdateOptions};

use crate::util::*;

fn options(label: &str) -> UpdateOptions {
    UpdateOptions::new().threads(2).label(label)
}

/// Session `i` of 24 after the create: adds, edits of a hard-linked file,
/// permission changes, removals, a directory replaced by a file.
fn change(archive: &Path, src: &Path, i: u32) {
    let label = format!("s{i}");
    let updater = || ArchiveUpdater::open(archive, &password(), options(&label)).unwrap();
    match i % 4 {
        _ if i == 10 => {
            fs::remove_dir_all(src.join("e")).unwrap();
            fs::write(src.join("e"), b"now a file").unwrap();
            updater().remove(&[b"e".to_vec()]).unwrap();
            ArchiveUpdater::open(archive, &password(), options(&label))
                .unwrap()
                .add(src, &["e".into()])
                .unwrap();
        }
        0 => {
            fs::write(src.join(format!("f{i:02}")), format!("file {i}\n").repeat(i as usize + 1)).unwrap();
            updater().add(src, &[format!("f{i:02}").into()]).unwrap();
        }
        1 => {
            fs::write(src.join("d/a"), format!("edit {i}\n")).unwrap();
            updater().add(src, &["d".into()]).unwrap();
        }
        2 => {
            let mode = if i % 8 == 2 { 0o600 } else { 0o644 };
            fs::set_permissions(src.join("d/a"), fs::Permissions::from_mode(mode)).unwrap();
            updater().add(src, &["d/a".into()]).unwrap();
        }
        _ => {
            let gone = format!("f{:02}", i - 3);
            fs::remove_file(src.join(&gone)).unwrap();
            updater().remove(&[gone.into_bytes()]).unwrap();
        }
    }
}

/// A create and 24 changes (25 states, merges between).
fn history_archive(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("src");
    fs::create_dir_all(src.join("d")).unwrap();
    fs::create_dir_all(src.join("e")).unwrap();
    fs::write(src.join("d/a"), b"first\n").unwrap();
    fs::hard_link(src.join("d/a"), src.join("d/b")).unwrap();
    fs::write(src.join("e/x"), b"x").unwrap();
    std::os::unix::fs::symlink("d/a", src.join("l")).unwrap();
    let archive = archive_of(dir, &src, &["d", "e", "l"], cheap().label("made"));
    for i in 0..24 {
        change(&archive, &src, i);
    }
    archive
}

fn states(history: &[SessionSummary]) -> Vec<(u64, i64, String, u64)> {
    history.iter().filter_map(|s| Some((s.state?, s.created_ns, s.label.clone(), s.entries))).collect()
}

/// Each state's extracted tree, by state number.
fn extracted(archive: &Path, dir: &Path, numbers: impl Iterator<Item = u64>) -> Vec<Snapshot> {
    let a = open(archive);
    numbers
        .map(|n| {
            let out = dir.join(format!("state-{n}"));
            fs::create_dir(&out).unwrap();
            a.at(AsOf::State(n as i64)).unwrap().extract(&out, &ExtractOptions::new().sync(false)).unwrap();
            let snap = snapshot(&out);
            fs::remove_dir_all(&out).unwrap();
            snap
        })
        .collect()
}

#[test]
fn keeping_the_last_states_reads_each_back_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let archive = history_archive(dir.path());
    let before = open(&archive).history().unwrap();
    let all = states(&before);
    // The rm and add of session 10 are two.
    let last = all.len() as u64;
    assert_eq!(last, 26);
    let first = last - 19;
    assert!(before.iter().any(|s| s.kind == SessionKind::Merge));
    let trees = extracted(&archive, dir.path(), first..=last);
    let entries_before: Vec<_> =
        (first..=last).map(|n| entries(&open(&archive).at(AsOf::State(n as i64)).unwrap())).collect();
    let len_before = fs::metadata(&archive).unwrap().len();

    let twenty = Retention::latest().last_states(NonZeroU64::new(20).unwrap());
    let predicted = open(&archive).reclaimable(&twenty).unwrap();
    assert_eq!(predicted.states, (first, last));
    let dry = ArchiveUpdater::compact(
        &archive,
        &password(),
        UpdateOptions::new().retention(twenty.clone()).dry_run(true),
    );
    let dry = dry.unwrap();
    assert_eq!(fs::metadata(&archive).unwrap().len(), len_before, "a dry run writes nothing");
    let len = ArchiveUpdater::compact(&archive, &password(), UpdateOptions::new().retention(twenty)).unwrap();
    assert_eq!(len, fs::metadata(&archive).unwrap().len());
    assert!(
        len_before - len >= predicted.bytes,
        "reclaimed {} < predicted {}",
        len_before - len,
        predicted.bytes
    );
    assert!(dry.abs_diff(len) <= 256, "dry run {dry}, compaction {len}");

    let a = open(&archive);
    let after = a.history().unwrap();
    assert_eq!(
        states(&after),
        all[first as usize - 1..],
        "the last 20 states keep their numbers, times, labels and counts"
    );
    assert_eq!(after[0].kind, SessionKind::Compaction);
    assert!(after.iter().skip(1).all(|s| s.kind != SessionKind::Compaction));
    assert_eq!(a.info().unwrap().state, last, "the compacted archive still holds the last state");
    assert_eq!(extracted(&archive, dir.path(), first..=last), trees, "every kept state extracts as before");
    for (n, old) in (first..=last).zip(&entries_before) {
        let new = entries(&a.at(AsOf::State(n as i64)).unwrap());
        let strip = |e: &[revault_lockbox_api::Entry]| {
            e.iter().map(|e| (e.path.clone(), e.kind.clone(), e.meta.clone())).collect::<Vec<_>>()
        };
        assert_eq!(strip(&new), strip(old), "state {n}");
    }
    assert!(a.verify().unwrap().is_ok());
    let removed = a.at(AsOf::State(first as i64 - 1)).map(drop).unwrap_err();
    assert!(matches!(removed, Error::NoSuchState { first: f, .. } if f == first), "{removed:?}");
    let expected = format!(
        "state {} was removed by a compaction: the archive holds states {first} to {last}",
        first - 1
    );
    assert_eq!(removed.to_string(), expected);
    let too_far = a.at(AsOf::State(-21)).map(drop).unwrap_err();
    assert!(matches!(too_far, Error::NoSuchState { asked: -21, .. }), "{too_far:?}");
    assert_eq!(a.at(AsOf::State(-20)).unwrap().entry_count(), all[first as usize - 1].3);

    // Then a window from just after the time of the sixth state from the
    // end: it and the five after it (it was live at the window's start),
    // then the last one alone.
    let from = last - 5;
    let since = Retention::latest().since(all[from as usize - 1].1 + 1);
    let kept: Vec<u64> = a.kept_states(&since).unwrap().iter().map(|s| s.state.unwrap()).collect();
    assert_eq!(kept, (from..=last).collect::<Vec<_>>());
    drop(a);
    ArchiveUpdater::compact(&archive, &password(), UpdateOptions::new().retention(since)).unwrap();
    assert_eq!(states(&open(&archive).history().unwrap()), all[from as usize - 1..]);
    assert_eq!(extracted(&archive, dir.path(), from..=last), trees[(from - first) as usize..]);
    ArchiveUpdater::compact(&archive, &password(), UpdateOptions::new()).unwrap();
    let a = open(&archive);
    assert_eq!(
        states(&a.history().unwrap()),
        all[last as usize - 1..],
        "a plain compaction holds the last state, numbered"
    );
    let refused = a.at(AsOf::State(1)).map(drop).unwrap_err().to_string();
    assert_eq!(refused, format!("state 1 was removed by a compaction: the archive holds state {last} only"));
    assert!(a.verify().unwrap().is_ok());
}

/// A state that only changed a file's mode or mtime shares the file's
/// pages with the state before it: its session writes no content again.
#[test]
fn a_metadata_change_shares_the_content_already_written() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    let big: Vec<u8> = (0..400_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    fs::write(src.join("big"), &big).unwrap();
    let archive = archive_of(dir.path(), &src, &["big"], cheap());
    fs::set_permissions(src.join("big"), fs::Permissions::from_mode(0o600)).unwrap();
    ArchiveUpdater::open(&archive, &password(), options("mode")).unwrap().add(&src, &["big".into()]).unwrap();
    // Stored again unchanged: a state with no difference, an empty run.
    ArchiveUpdater::open(&archive, &password(), options("same")).unwrap().add(&src, &["big".into()]).unwrap();
    let two = Retention::latest().last_states(NonZeroU64::new(3).unwrap());
    let compact = UpdateOptions::new().retention(two).label("kept");
    let len = ArchiveUpdater::compact(&archive, &password(), compact).unwrap();
    let a = open(&archive);
    let history = a.history().unwrap();
    assert_eq!(history.iter().map(|s| s.state).collect::<Vec<_>>(), [Some(1), Some(2), Some(3)]);
    assert!(history[1].bytes_written < 8 << 10, "{history:?}");
    assert_eq!((history[2].stored, history[2].removed, history[2].label.as_str()), (0, 0, "same"));
    let labels: Vec<&str> = history.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["kept", "mode", "same"], "-m labels the compaction only");
    assert!(len < 500_000, "the content is stored once: {len} bytes");
    for n in [1, 2, 3] {
        let state = a.at(AsOf::State(n)).unwrap();
        let mut content = Vec::new();
        std::io::Read::read_to_end(&mut state.open_file("big").unwrap(), &mut content).unwrap();
        assert!(content == big, "state {n}");
    }
    let modes: Vec<u32> =
        [1, 2, 3].iter().map(|&n| entries(&a.at(AsOf::State(n)).unwrap())[0].meta.mode & 0o777).collect();
    assert_ne!(modes[0], modes[1]);
    assert_eq!(modes[1..], [0o600, 0o600]);
    assert!(a.verify().unwrap().is_ok());
}
