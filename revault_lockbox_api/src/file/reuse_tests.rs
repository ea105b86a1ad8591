//! What dedup saves, as `info` and `log --stats` report it: the bytes the
//! last state's files reference more than once ([`ArchiveInfo`]'s
//! `deduplicated_bytes`), and per session the content its files reuse
//! from earlier sessions ([`Archive::reused_bytes`]).
//!
//! [`ArchiveInfo`]: crate::archive::ArchiveInfo

use crate::archive::Archive;
use crate::chunk::ChunkParams;
use crate::crypto::{KdfParams, Password};
use crate::file::{create_archive, ArchiveUpdater, UpdateOptions};
use crate::session::CreateOptions;
use crate::test_data::random;

const LEN: usize = 64 << 10;

fn params() -> ChunkParams {
    ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap()
}

fn open(path: &std::path::Path, password: &Password) -> Archive<std::fs::File> {
    Archive::open(std::fs::File::open(path).unwrap(), password).unwrap()
}

#[test]
fn info_counts_what_copies_share_and_log_what_each_session_reused() {
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let data = random(LEN, 7);
    std::fs::write(src.join("a"), &data).unwrap();
    std::fs::write(src.join("b"), &data).unwrap();
    std::fs::write(src.join("small"), b"below the smallest chunk").unwrap();
    let archive = work.path().join("a.lbox");
    let password = Password::from("reuse");
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).chunk_sizes(params());
    let names = ["a".into(), "b".into(), "small".into()];
    create_archive(&archive, &src, &names, &password, options).unwrap();
    let a = open(&archive, &password);
    let info = a.info().unwrap();
    assert_eq!(info.content_bytes, 2 * LEN as u64 + 24);
    assert_eq!(info.deduplicated_bytes, LEN as u64, "b's chunks are a's");
    assert_eq!(
        a.reused_bytes(0).unwrap(),
        Some(0),
        "a copy within the session is not reuse of an earlier one"
    );
    drop(a);

    // A third copy, and a changed `a` (its first 1 KiB rewritten): c
    // reuses all of a's old chunks; a all but the first.
    std::fs::write(src.join("c"), &data).unwrap();
    let mut changed = data.clone();
    changed[..1024].copy_from_slice(&random(1024, 8));
    std::fs::write(src.join("a"), &changed).unwrap();
    let update = UpdateOptions::new().chunk_sizes(params());
    let updater = ArchiveUpdater::open(&archive, &password, update).unwrap();
    updater.add(&src, &["a".into(), "c".into()]).unwrap();
    let a = open(&archive, &password);
    let history = a.history().unwrap();
    let reused = a.reused_bytes(1).unwrap().unwrap();
    assert!(reused > LEN as u64 && reused < 2 * LEN as u64, "reused {reused}");
    // What `a` did not reuse, it stored: the chunks around the change.
    let stored = 2 * LEN as u64 - reused;
    assert!(stored < LEN as u64 / 2, "a's new chunks: {stored} bytes");
    assert!(history[1].bytes_written < LEN as u64 / 2, "{history:?}");
    // References: a, b and c, 3 LEN; distinct: b's chunks and a's new
    // ones. So the last state shares exactly what the session reused.
    assert_eq!(a.info().unwrap().deduplicated_bytes, reused);
    assert!(a.reused_bytes(2).is_err(), "no session 2");
}
