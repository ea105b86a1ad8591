//! The target behind the MAC: a small archive written with fixed keys in
//! which one plaintext is the fuzzer's, sealed like any other, so that the
//! decoders after authentication get its bytes. It bends crypto only
//! through `crypto::seam`.

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Seed, HEADER_PREFIX_LEN, PASSWORD};
use crate::archive::Archive;
use crate::crypto::{seam, KdfParams, Password, Sealing};
use crate::error::Result;
use crate::format::{EntryKind, HeaderPrefix, IndexNodeId, Table, ARCHIVE_ID_LEN};
use crate::session::{ArchiveWriter, CreateOptions, Metadata};

/// Selector byte (`% 6`) of a [`sealed`] input: the index root.
pub const SEALED_ROOT: u8 = 0;
/// Selector byte of a [`sealed`] input: the (only) entries leaf.
pub const SEALED_ENTRIES_LEAF: u8 = 1;
/// Selector byte of a [`sealed`] input: the (only) page-table leaf.
pub const SEALED_PAGES_LEAF: u8 = 2;
/// Selector bytes 3 to 5 of a [`sealed`] input: data pages 0 to 2.
pub const SEALED_FIRST_PAGE: u8 = 3;

/// Plaintexts swapped by [`sealed`] in the archive it writes (by archive
/// id, so that other archives written at the same time are untouched), and
/// every plaintext sealed there, for the seeds. One such archive at a time
/// (`SEALED_WRITER`): they all have the same id.
struct Swap {
    archive_id: [u8; ARCHIVE_ID_LEN],
    what: Option<Plaintext>,
    seen: Vec<Plaintext>,
}

/// A plaintext and what it is sealed as.
type Plaintext = (Sealing, Vec<u8>);

static SWAPS: Mutex<Vec<Swap>> = Mutex::new(Vec::new());
static SEALED_WRITER: Mutex<()> = Mutex::new(());

fn swaps() -> MutexGuard<'static, Vec<Swap>> {
    SWAPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hook [`sealed_archive`] installs in `crypto::seam`: `plain`, or the
/// fuzzer's bytes when `what` of this archive is to be swapped.
fn swap_plaintext(archive_id: &[u8; ARCHIVE_ID_LEN], what: Sealing, plain: Vec<u8>) -> Vec<u8> {
    let mut swaps = swaps();
    let Some(swap) = swaps.iter_mut().find(|s| s.archive_id == *archive_id) else { return plain };
    swap.seen.push((what, plain.clone()));
    match &swap.what {
        Some((w, bytes)) if *w == what => bytes.clone(),
        _ => plain,
    }
}

/// A writer's output that the caller can read while the writer holds it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the small archive of [`sealed`] (fixed keys, password [`PASSWORD`], 4 KiB
/// pages: a directory, a three-page file, its hard link, an empty file,
/// two small files sharing a page, a symlink), with `what` swapped; returns
/// it and every plaintext sealed in it.
fn sealed_archive(what: Option<Plaintext>) -> Result<(Vec<u8>, Vec<Plaintext>)> {
    let _one_at_a_time = SEALED_WRITER.lock().unwrap_or_else(|e| e.into_inner());
    let out = Shared::default();
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096).threads(1);
    seam::set_swap_hook(swap_plaintext);
    // The same archive id, content key and session salt every time, so
    // that a seed's root (which holds the salt) fits any run.
    seam::set_fixed_random(true);
    let started = ArchiveWriter::new(out.clone(), &Password::from(PASSWORD), options);
    seam::set_fixed_random(false);
    let mut w = started?;
    let header: [u8; HEADER_PREFIX_LEN] = out.0.lock().unwrap_or_else(|e| e.into_inner())
        [..HEADER_PREFIX_LEN]
        .try_into()
        .expect("header written");
    let archive_id = HeaderPrefix::decode(&header)?.archive_id;
    swaps().push(Swap { archive_id, what, seen: Vec::new() });
    let written = write_sealed_entries(&mut w).and_then(|()| w.finish());
    let mut all = swaps();
    let at = all.iter().position(|s| s.archive_id == archive_id).expect("registered above");
    let seen = all.swap_remove(at).seen;
    drop(all);
    written?;
    let bytes = std::mem::take(&mut *out.0.lock().unwrap_or_else(|e| e.into_inner()));
    Ok((bytes, seen))
}

fn write_sealed_entries(w: &mut ArchiveWriter<Shared>) -> Result<()> {
    let meta = |mode| Metadata::new(mode, 1000, 1000, 1_700_000_000, 5);
    let text: Vec<u8> =
        (0..10_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).take(3 * 4096 - 100).collect();
    w.add_dir("d", &meta(0o755))?;
    w.add_linked_file("d/a.txt", &meta(0o644), text.len() as u64, &text[..])?;
    w.add_file("d/b-empty", &meta(0o600), 0, &b""[..])?;
    w.add_hardlink("d/c-link", &meta(0o644), "d/a.txt")?;
    w.add_file("d/e-small", &meta(0o644), 6, &b"small\n"[..])?;
    w.add_file("d/f-small", &meta(0o644), 6, &b"other\n"[..])?;
    w.add_symlink("d/g-sym", &meta(0o777), "a.txt")?;
    // The entry tail: names, xattrs and a sparse map for the decoders.
    let tail = meta(0o644)
        .with_names(Some(b"user".to_vec()), Some(b"group".to_vec()))
        .with_xattrs(vec![crate::format::Xattr { name: b"user.k".to_vec(), value: b"v".to_vec() }]);
    let map = crate::format::SparseMap::new(vec![(4096, 5), (1 << 20, 3)], 1 << 21).expect("a valid map");
    w.add_sparse_file("d/h-sparse", &tail, map, 1 << 21, false, &b"holesend"[..])?;
    Ok(())
}

/// Behind the MAC: writes a small archive in which one plaintext (the
/// first byte picks which, `% 6`: [`SEALED_ROOT`], [`SEALED_ENTRIES_LEAF`],
/// [`SEALED_PAGES_LEAF`], or data page `n - SEALED_FIRST_PAGE`) is the rest
/// of the input, sealed under the archive's fixed test keys like any other; then
/// opens, verifies, lists it and reads every file. So the decoders after
/// authentication and the streaming of file spans over pages get the
/// fuzzer's bytes.
pub fn sealed(data: &[u8]) {
    let Some((&which, plain)) = data.split_first() else { return };
    let what = match which % 6 {
        SEALED_ROOT => Sealing::Root,
        SEALED_ENTRIES_LEAF => Sealing::Node(IndexNodeId { table: Table::Entries, level: 0, seq: 0 }),
        SEALED_PAGES_LEAF => Sealing::Node(IndexNodeId { table: Table::Pages, level: 0, seq: 0 }),
        n => Sealing::Page(u64::from(n - SEALED_FIRST_PAGE)),
    };
    let Ok((bytes, _)) = sealed_archive(Some((what, plain.to_vec()))) else { return };
    let Ok(archive) = Archive::open(Cursor::new(bytes), &Password::from(PASSWORD)) else { return };
    let _ = archive.verify();
    let _ = archive.info();
    let Ok(entries) = archive.entries() else { return };
    for entry in entries.take(64) {
        let Ok(entry) = entry else { break };
        if matches!(entry.kind, EntryKind::File { .. }) {
            if let Ok(file) = archive.open_file(&entry.path) {
                // A file may say it is huge (a hole of a PiB reads as that
                // many zeros, by design): reading it through would time the
                // fuzzer out. Every file the seeds hold is whole within this.
                let _ = std::io::copy(&mut std::io::Read::take(file, MAX_READ), &mut std::io::sink());
            }
        }
    }
}

/// Bytes [`sealed`] reads of one file: more than any file of its archive
/// holds (the largest is a 2 MiB sparse file).
const MAX_READ: u64 = 4 << 20;

/// Seeds for [`sealed`]: every plaintext of its archive after its selector
/// byte, named `root`, `entries-leaf`, `pages-leaf`, `page-<n>`.
pub fn sealed_seeds() -> Result<Vec<Seed>> {
    let (_, seen) = sealed_archive(None)?;
    let mut seeds = Vec::new();
    for (what, plain) in seen {
        let (selector, name) = match what {
            Sealing::Root => (SEALED_ROOT, "root".to_string()),
            Sealing::Node(id) if id.level == 0 && id.seq == 0 && id.table == Table::Entries => {
                (SEALED_ENTRIES_LEAF, "entries-leaf".into())
            }
            Sealing::Node(id) if id.level == 0 && id.seq == 0 && id.table == Table::Pages => {
                (SEALED_PAGES_LEAF, "pages-leaf".into())
            }
            Sealing::Page(n) if n < 3 => (SEALED_FIRST_PAGE + n as u8, format!("page-{n}")),
            _ => continue,
        };
        seeds.push((name, [&[selector], &plain[..]].concat()));
    }
    Ok(seeds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_swaps_exactly_the_chosen_plaintext() {
        let seeds = sealed_seeds().unwrap();
        let names: Vec<&str> = seeds.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["page-0", "page-1", "page-2", "pages-leaf", "entries-leaf", "root"]);
        let open = |bytes: Vec<u8>| Archive::open(Cursor::new(bytes), &Password::from(PASSWORD));
        for (name, seed) in &seeds {
            // The same plaintext swapped in: an intact archive.
            let what = match seed[0] {
                SEALED_ROOT => Sealing::Root,
                SEALED_ENTRIES_LEAF => Sealing::Node(IndexNodeId { table: Table::Entries, level: 0, seq: 0 }),
                SEALED_PAGES_LEAF => Sealing::Node(IndexNodeId { table: Table::Pages, level: 0, seq: 0 }),
                n => Sealing::Page(u64::from(n - SEALED_FIRST_PAGE)),
            };
            let (same, _) = sealed_archive(Some((what, seed[1..].to_vec()))).unwrap();
            assert!(open(same).unwrap().verify().unwrap().is_ok(), "{name}");
            sealed(seed);
        }
        // Another page-0 plaintext, sealed and authentic: files over it are
        // damaged, not the archive's authentication.
        let (other, _) = sealed_archive(Some((Sealing::Page(0), b"other bytes".to_vec()))).unwrap();
        let archive = open(other).unwrap();
        assert!(!archive.verify().map(|r| r.is_ok()).unwrap_or(false));
    }
}
