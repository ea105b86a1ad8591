//! What one small add costs in I/O: the bytes this process reads and
//! writes (`rchar`/`wchar` of /proc/self/io, every read and write system
//! call) while adding one 10 KiB file to a large archive. A test binary of
//! its own, so that no other test's I/O is counted.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use revault_lockbox_api::create::Metadata;
use revault_lockbox_api::{
    Archive, ArchiveUpdater, ArchiveWriter, CreateOptions, KdfParams, Password, UpdateOptions,
};

/// `(rchar, wchar)` of this process so far.
fn io_counters() -> (u64, u64) {
    let text = fs::read_to_string("/proc/self/io").expect("/proc/self/io");
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in /proc/self/io"))
    };
    (field("rchar:"), field("wchar:"))
}

/// Adds one 10 KiB incompressible file to an archive of `dirs` × `per_dir` incompressible
/// files of `file_len` bytes; returns the bytes read and written by the add.
fn one_small_add(dirs: usize, per_dir: usize, file_len: usize) -> (u64, u64) {
    // The counters are the process's: one test at a time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let work = tempfile::tempdir().unwrap();
    let password = Password::from("cost");
    let path = work.path().join("big.lbox");
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).threads(2);
    let out = BufWriter::with_capacity(1 << 20, fs::File::create(&path).unwrap());
    let mut w = ArchiveWriter::new(out, &password, options).unwrap();
    let meta = Metadata::new(0o644, 1000, 1000, 1_700_000_000, 0);
    let mut content = vec![0u8; file_len];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for d in 0..dirs {
        w.add_dir(format!("d{d:03}"), &Metadata::new(0o755, 1000, 1000, 1_700_000_000, 0)).unwrap();
        for f in 0..per_dir {
            for chunk in content.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
            }
            w.add_file(format!("d{d:03}/f{f:05}"), &meta, file_len as u64, &content[..]).unwrap();
        }
    }
    w.finish().unwrap().flush().unwrap();
    let archive_len = fs::metadata(&path).unwrap().len();

    let src = work.path().join("src");
    let middle = format!("d{:03}", dirs / 2);
    fs::create_dir_all(src.join(&middle)).unwrap();
    // Incompressible, like the rest: the session stores all 10 KiB.
    let new_file: Vec<u8> = content.iter().cycle().take(10 << 10).map(|b| b ^ 0x5a).collect();
    fs::write(src.join(&middle).join("zz-new.bin"), new_file).unwrap();
    let input = PathBuf::from(&middle).join("zz-new.bin");

    let (r0, w0) = io_counters();
    let report = ArchiveUpdater::open(&path, &password, UpdateOptions::new().threads(2))
        .unwrap()
        .add(&src, std::slice::from_ref(&input))
        .unwrap();
    let (r1, w1) = io_counters();
    let (read, written) = (r1 - r0, w1 - w0);
    eprintln!(
        "one 10 KiB add to a {archive_len}-byte archive of {} entries: read {read} bytes, wrote {written} \
         (the session: {} bytes)",
        dirs * (per_dir + 1),
        report.bytes_written
    );
    assert_eq!(report.entries, (dirs * (per_dir + 1) + 1) as u64);
    let archive = Archive::open(fs::File::open(&path).unwrap(), &password).unwrap();
    let added = archive.find(format!("{middle}/zz-new.bin")).unwrap().expect("the file was added");
    assert_eq!(added.content().map(|c| c.0), Some(10 << 10));
    (read, written)
}

#[test]
fn one_small_add_to_an_archive_of_20k_entries_reads_and_writes_little() {
    let (read, written) = one_small_add(20, 1000, 4 << 10);
    assert!(written <= 2 << 20, "wrote {written} bytes");
    assert!(read <= 4 << 20, "read {read} bytes");
}

#[test]
#[ignore = "writes a 1 GiB archive of 70k files first (about a minute); run with --ignored, result in BENCHMARKS.md"]
fn one_small_add_to_a_1_gib_archive_of_70k_entries_reads_and_writes_little() {
    let (read, written) = one_small_add(70, 1000, 15 << 10);
    assert!(written <= 2 << 20, "wrote {written} bytes");
    assert!(read <= 4 << 20, "read {read} bytes");
}
