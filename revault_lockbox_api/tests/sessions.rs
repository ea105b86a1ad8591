//! The sessions tree on real files: what one more session costs however
//! many came before, and every session's record read back.

use std::fs;
use std::path::Path;

use revault_lockbox_api::read::SessionKind;
use revault_lockbox_api::{ArchiveUpdater, UpdateOptions};

use crate::util::*;

/// Adds one small file `name` in a session of its own; returns the
/// session's bytes.
fn add_one(archive: &Path, src: &Path, name: &str) -> u64 {
    fs::write(src.join(name), name.as_bytes()).unwrap();
    let updater = ArchiveUpdater::open(archive, &password(), UpdateOptions::new().threads(2)).unwrap();
    updater.add(src, &[name.into()]).unwrap().bytes_written
}

/// The most bytes one of 17 single-file adds writes (17: one of them
/// writes a full sessions leaf) once the archive holds `sessions`.
fn costliest_add_after(archive: &Path, src: &Path, sessions: u64, next: &mut u32) -> u64 {
    while open(archive).sessions() < sessions {
        add_one(archive, src, &format!("f{next:04}"));
        *next += 1;
    }
    (0..17)
        .map(|_| {
            *next += 1;
            add_one(archive, src, &format!("f{:04}", *next - 1))
        })
        .max()
        .unwrap()
}

#[test]
fn a_one_file_add_writes_a_bounded_amount_whatever_the_session_count() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("first"), b"first").unwrap();
    let archive = archive_of(dir.path(), &src, &["first"], cheap());
    let mut next = 0;
    let at_10 = costliest_add_after(&archive, &src, 10, &mut next);
    let at_300 = costliest_add_after(&archive, &src, 300, &mut next);
    eprintln!("the costliest one-file add writes {at_10} bytes at 10 sessions, {at_300} at 300");
    // Listing every session in the root would add ~60 bytes a session:
    // 17 KB more at 300 sessions than at 10.
    assert!(at_300 <= at_10 + 1024, "{at_300} bytes at 300 sessions, {at_10} at 10");
    let a = open(&archive);
    assert!(a.sessions() >= 300);
    assert_eq!(a.entry_count(), 1 + u64::from(next));
    let report = a.verify().unwrap();
    assert!(report.is_ok(), "{report:?}");
}

/// A file that counts the bytes read from it.
struct Counted(fs::File, std::sync::atomic::AtomicU64);

impl revault_lockbox_api::storage::ReadAt for Counted {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.1.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        std::os::unix::fs::FileExt::read_exact_at(&self.0, buf, offset)
    }

    fn len(&self) -> std::io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
}

#[test]
fn history_lists_every_session_from_the_sessions_tree_alone() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("first"), b"first").unwrap();
    let archive = archive_of(dir.path(), &src, &["first"], cheap().label("made"));
    for i in 0..40 {
        add_one(&archive, &src, &format!("f{i:02}"));
    }
    let updater = ArchiveUpdater::open(&archive, &password(), UpdateOptions::new()).unwrap();
    updater.remove(&[b"f00".to_vec(), b"f01".to_vec()]).unwrap();

    let counted = Counted(fs::File::open(&archive).unwrap(), 0.into());
    let a = revault_lockbox_api::Archive::open(counted, &password()).unwrap();
    let opened = a.source().1.load(std::sync::atomic::Ordering::Relaxed);
    let history = a.history().unwrap();
    let read = a.source().1.load(std::sync::atomic::Ordering::Relaxed) - opened;
    // The create, 40 adds, two merges (each when 16 runs are there) and the rm.
    assert_eq!(history.len(), 44);
    assert_eq!(history.iter().map(|s| s.number).collect::<Vec<_>>(), (0..44).collect::<Vec<_>>());
    let merges: Vec<_> = history.iter().filter(|s| s.state.is_none()).map(|s| s.number).collect();
    assert_eq!(merges, [16, 32]);
    assert!(merges.iter().all(|&n| history[n as usize].kind == SessionKind::Merge));
    let states: Vec<_> = history.iter().filter_map(|s| s.state).collect();
    assert_eq!(states, (1..=42).collect::<Vec<_>>(), "merges are not states");
    let (first, last) = (&history[0], history.last().unwrap());
    assert_eq!((first.label.as_str(), first.stored, first.entries), ("made", 1, 1));
    assert_eq!((last.stored, last.removed, last.entries), (0, 2, 39));
    assert_eq!(history[1].stored, 1);
    assert_eq!(history[16].stored, 16, "a merge stores the whole view");
    assert!(history.windows(2).all(|w| w[0].created_ns <= w[1].created_ns));
    let total: u64 = history.iter().map(|s| s.bytes_written).sum();
    // Header and a password's 16 slots of 256 bytes before the first session.
    assert_eq!(total + 4128, fs::metadata(&archive).unwrap().len());
    // Two full sessions leaves (16 records each), nothing else: no entry
    // leaf, page or session header.
    assert!(read < 2 * 16 * 200, "history read {read} bytes");
    assert!(read > 0, "records 0 to 31 are in leaves");
    let info = a.info().unwrap();
    assert_eq!((info.last_session, info.state), (43, 42), "the last session's number and the state it makes");
}
