//! Extraction against a destination that changes under it, and tar's
//! permission rules: the umask, setuid, setgid and sticky bits.

use std::fs;
use std::io::Cursor;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use revault_lockbox_api::{Archive, ArchiveWriter, Error, ExtractOptions};

use crate::util::{cheap, meta, password};

const DIRS: usize = 12;

/// Directories `dNN`, each with a subdirectory `s`, small files in both
/// and one file large enough to be streamed to disk as it arrives.
fn many_dirs() -> Vec<u8> {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap().page_size(64 << 10)).unwrap();
    let big = vec![b'b'; 300 << 10];
    for d in 0..DIRS {
        w.add_dir(format!("d{d:02}"), &meta(0o755)).unwrap();
        w.add_file(format!("d{d:02}/big"), &meta(0o644), big.len() as u64, &big[..]).unwrap();
        for f in 0..40 {
            w.add_file(format!("d{d:02}/f{f:02}"), &meta(0o644), 3, &b"abc"[..]).unwrap();
        }
        w.add_dir(format!("d{d:02}/s"), &meta(0o755)).unwrap();
        for f in 0..40 {
            w.add_file(format!("d{d:02}/s/f{f:02}"), &meta(0o644), 3, &b"abc"[..]).unwrap();
        }
        w.add_symlink(format!("d{d:02}/s/z-link"), &meta(0o777), "../f00").unwrap();
    }
    w.finish().unwrap()
}

/// Swaps the destination's directories (and their subdirectories) for
/// symbolic links to `outside` and back, as fast as it can, until `stop`;
/// counts the swaps.
fn race(dest: PathBuf, outside: PathBuf, stop: Arc<AtomicBool>, swaps: Arc<AtomicU64>) {
    let mut i = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let d = format!("d{:02}", i % DIRS);
        let target = if i % 3 == 0 { dest.join(&d).join("s") } else { dest.join(&d) };
        let moved = dest.join(format!("moved-{i}"));
        i += 1;
        if fs::rename(&target, &moved).is_err() {
            std::thread::yield_now();
            continue;
        }
        if symlink(&outside, &target).is_ok() {
            swaps.fetch_add(1, Ordering::Relaxed);
            std::thread::yield_now();
            let _ = fs::remove_file(&target);
        }
        let _ = fs::rename(&moved, &target);
    }
}

fn stamp(path: &Path) -> (u32, i64, i64) {
    let md = fs::symlink_metadata(path).unwrap();
    (md.mode(), md.mtime(), md.mtime_nsec())
}

#[test]
fn a_racing_symlink_swap_never_writes_outside_the_destination() {
    let bytes = many_dirs();
    let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let outside = work.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::set_permissions(&outside, fs::Permissions::from_mode(0o751)).unwrap();
    let before = stamp(&outside);
    let swaps = Arc::new(AtomicU64::new(0));
    let (mut refused, mut completed) = (0, 0);
    // Bounded in rounds and in time.
    let deadline = Instant::now() + Duration::from_secs(30);
    for round in 0..40 {
        if Instant::now() > deadline {
            break;
        }
        let dest = work.path().join(format!("dest{round}"));
        fs::create_dir(&dest).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let (dest, outside, stop, swaps) =
                (dest.clone(), outside.clone(), Arc::clone(&stop), Arc::clone(&swaps));
            std::thread::spawn(move || race(dest, outside, stop, swaps))
        };
        let sync = round % 4 == 0;
        let result = archive.extract(&dest, &ExtractOptions::new().sync(sync));
        stop.store(true, Ordering::Relaxed);
        racer.join().unwrap();
        match result {
            Ok(_) => completed += 1,
            Err(e @ (Error::UnsafePath { .. } | Error::AlreadyExists { .. } | Error::Io { .. })) => {
                assert!(!e.to_string().contains('\n'), "one line: {e}");
                refused += 1;
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
        let written: Vec<_> = fs::read_dir(&outside).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(written.is_empty(), "round {round}: written outside the destination: {written:?}");
        assert_eq!(stamp(&outside), before, "round {round}: the outside directory's mode or mtime changed");
    }
    eprintln!(
        "racing swaps: {} symlinks planted; {completed} extractions completed, {refused} refused",
        swaps.load(Ordering::Relaxed)
    );
    assert!(swaps.load(Ordering::Relaxed) > 0, "the racer never got a symlink in");
}

/// The process umask, as the kernel reports it.
fn umask() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:")).unwrap();
    u32::from_str_radix(line.trim(), 8).unwrap()
}

fn mode_of(dest: &Path, path: &str) -> u32 {
    fs::symlink_metadata(dest.join(path)).unwrap().mode() & 0o7777
}

#[test]
fn modes_follow_the_umask_without_special_bits_unless_same_permissions() {
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    let big = vec![7u8; 300 << 10];
    let stored = [("big", 0o4711), ("g", 0o2775), ("g/open", 0o666), ("g/suid", 0o4755), ("t", 0o1777)];
    for (path, mode) in stored {
        match path {
            "g" | "t" => w.add_dir(path, &meta(mode)).unwrap(),
            "big" => drop(w.add_file(path, &meta(mode), big.len() as u64, &big[..]).unwrap()),
            _ => drop(w.add_file(path, &meta(mode), 1, &b"x"[..]).unwrap()),
        }
    }
    let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
    let mask = umask();
    let dest = tempfile::tempdir().unwrap();
    archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    for (path, mode) in stored {
        assert_eq!(mode_of(dest.path(), path), mode & 0o777 & !mask, "{path} (umask {mask:o})");
    }
    let exact = tempfile::tempdir().unwrap();
    archive.extract(exact.path(), &ExtractOptions::new().sync(false).same_permissions(true)).unwrap();
    for (path, mode) in stored {
        assert_eq!(mode_of(exact.path(), path), mode, "{path} with same_permissions");
    }
}

/// `--strip-components` shortens names only after they are checked: two
/// names that meet after stripping (a symbolic link and a path through
/// it) still cannot write outside the destination.
#[test]
fn stripped_names_that_meet_at_a_symlink_never_write_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let (dest, outside) = (tmp.path().join("dest"), tmp.path().join("outside"));
    fs::create_dir_all(&dest).unwrap();
    fs::create_dir_all(&outside).unwrap();
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    w.add_symlink("a/link", &meta(0o777), outside.to_str().unwrap()).unwrap();
    w.add_file("b/link/planted", &meta(0o644), 4, &b"evil"[..]).unwrap();
    let bytes = w.finish().unwrap();
    let archive = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let result = archive.extract(&dest, &ExtractOptions::new().strip_components(1));
    assert!(matches!(result, Err(Error::AlreadyExists { .. })), "{result:?}");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "nothing written outside");
    assert!(fs::symlink_metadata(dest.join("link")).unwrap().is_dir(), "the file's directory, not the link");
}

/// `ExistingFiles::Skip` leaves what exists; `KeepNewer` replaces only
/// older files and warns about the others.
#[test]
fn existing_files_are_skipped_or_replaced_by_age() {
    use revault_lockbox_api::read::ExistingFiles;
    let tmp = tempfile::tempdir().unwrap();
    let mut w = ArchiveWriter::new(Vec::new(), &password(), cheap()).unwrap();
    let dated = |secs| revault_lockbox_api::create::Metadata::new(0o644, 0, 0, secs, 0);
    w.add_file("old", &dated(1_000), 3, &b"new"[..]).unwrap();
    w.add_file("young", &dated(2_000_000_000), 3, &b"new"[..]).unwrap();
    let archive = Archive::open(Cursor::new(w.finish().unwrap()), &password()).unwrap();
    for (policy, old, young, skipped) in
        [(ExistingFiles::Skip, "mine", "mine", 2), (ExistingFiles::KeepNewer, "mine", "new", 1)]
    {
        let dest = tmp.path().join(format!("{policy:?}"));
        fs::create_dir(&dest).unwrap();
        for name in ["old", "young"] {
            fs::write(dest.join(name), b"mine").unwrap();
            filetime::set_file_mtime(dest.join(name), filetime::FileTime::from_unix_time(1_500_000_000, 0))
                .unwrap();
        }
        let report = archive.extract(&dest, &ExtractOptions::new().existing(policy)).unwrap();
        assert_eq!(fs::read_to_string(dest.join("old")).unwrap(), old, "{policy:?}");
        assert_eq!(fs::read_to_string(dest.join("young")).unwrap(), young, "{policy:?}");
        assert_eq!(report.skipped, skipped, "{policy:?}");
        assert_eq!(report.warnings.len(), usize::from(policy == ExistingFiles::KeepNewer), "{policy:?}");
    }
}
