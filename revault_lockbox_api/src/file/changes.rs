//! Change detection for an append session: what `update` stores again
//! (kind, size or mtime differ from the stored entry, as tar's `-u`
//! compares), what it deletes, and how a new run changes the entry count,
//! checked as a reader would check it.

use std::io::Write;

use rustix::fs::FileType;

use super::place::Source;
use crate::archive::{Archive, Merged};
use crate::error::{EntryPath, Error, Result};
use crate::format::{is_within, path_cmp, Entry, EntryKind, TreeTop};
use crate::index::TreeReader;
use crate::session::ArchiveWriter;
use crate::walk::{Seen, WalkFilter};

pub(super) fn inconsistent() -> Error {
    Error::malformed("index", "entry count differs from the root's")
}

pub(super) fn below_leaf(blocker: Vec<u8>) -> Error {
    Error::Conflict {
        path: EntryPath(blocker),
        reason: "is a file or symbolic link in the archive; nothing can be stored below it (remove it first)",
    }
}

/// How a new run changes the entry count over the range it touches (from
/// its first path to the end of its last path's subtree): entries of the
/// old view there, and of the new view, which is checked as a reader
/// would check it. Nothing outside the range changes.
pub(super) fn count_change(
    archive: &Archive<Source>,
    new_run: (TreeReader<'_>, TreeTop),
    first: &[u8],
    last: &[u8],
    offsets: &[u64],
    stream_len: u64,
) -> Result<(u64, u64)> {
    if let Some(blocker) = archive.leaf_above(first)? {
        return Err(below_leaf(blocker));
    }
    let in_range = |e: &Entry| path_cmp(&e.path, last).is_le() || is_within(last, &e.path);
    let count = |view: &mut dyn Iterator<Item = Result<Entry>>| -> Result<u64> {
        let mut n = 0;
        for e in view {
            if !in_range(&e?) {
                break;
            }
            n += 1;
        }
        Ok(n)
    };
    let old = count(&mut archive.merged_from(Some(first))?)?;
    let new_view: Merged<'_> = archive.merged_with(Some(first), &[new_run])?;
    let new =
        count(&mut Archive::<Source>::checked(new_view, false, offsets, stream_len)).map_err(
            |e| match e {
                Error::UnsafePath { path, .. } => Error::Conflict {
                    path,
                    reason: "would lie below a file or symbolic link of the archive (remove that first)",
                },
                e => e,
            },
        )?;
    Ok((old, new))
}

/// What an append's walk stores of what it reaches.
#[derive(Clone, Copy)]
pub(super) enum FilterMode {
    /// Everything (`add`).
    StoreAll,
    /// Only what differs from the stored entry (`update`); with
    /// `delete_missing`, stored paths under the inputs that the walk
    /// passed by are deleted.
    Changed { delete_missing: bool },
}

/// An append's view of the walk, beside the archive's entries under the
/// inputs in the same order: each path reached is compared with the
/// stored entry (what replaces one is counted), and under `update`,
/// unchanged paths are skipped and missing ones may be deleted.
pub(super) struct UpdateFilter<'a, 'r> {
    archive: &'a Archive<Source>,
    old: Merged<'a>,
    peeked: Option<Entry>,
    roots: &'r [Vec<u8>],
    mode: FilterMode,
    /// A path stored or deleted in this session that hides what the old
    /// view holds below it.
    hidden: Option<Vec<u8>>,
    pub(super) deleted: u64,
    /// Under `update` without `delete_missing`: stored paths under the
    /// inputs that the walk passed by, kept (each with what lies below it).
    pub(super) kept_missing: u64,
    /// Paths stored that the archive held already.
    pub(super) replaced: u64,
}

impl<'a, 'r> UpdateFilter<'a, 'r> {
    /// The filter of a walk of `roots` (stored paths, in index order) over
    /// `archive`'s entries.
    pub(super) fn new(
        archive: &'a Archive<Source>,
        roots: &'r [Vec<u8>],
        mode: FilterMode,
    ) -> Result<UpdateFilter<'a, 'r>> {
        let old = archive.merged_from(roots.first().map(Vec::as_slice))?;
        Ok(UpdateFilter {
            archive,
            old,
            peeked: None,
            roots,
            mode,
            hidden: None,
            deleted: 0,
            kept_missing: 0,
            replaced: 0,
        })
    }
}

impl UpdateFilter<'_, '_> {
    fn peek(&mut self) -> Result<Option<&Entry>> {
        if self.peeked.is_none() {
            self.peeked = self.old.next().transpose()?;
        }
        Ok(self.peeked.as_ref())
    }

    /// Deletes the old entries before `before` (all, when `None`) that lie
    /// under an input and were not reached; stops past the last input.
    pub(super) fn delete_before(
        &mut self,
        writer: &mut ArchiveWriter<impl Write>,
        before: Option<&[u8]>,
    ) -> Result<()> {
        let last_root = self.roots.last().cloned().unwrap_or_default();
        while let Some(e) = self.peek()? {
            if before.is_some_and(|b| path_cmp(&e.path, b).is_ge()) {
                break;
            }
            if path_cmp(&e.path, &last_root).is_gt() && !is_within(&last_root, &e.path) {
                break;
            }
            let e = self.peeked.take().expect("peeked");
            if self.hidden.as_ref().is_some_and(|h| is_within(h, &e.path)) {
                continue;
            }
            if !self.roots.iter().any(|r| is_within(r, &e.path)) {
                continue;
            }
            match self.mode {
                FilterMode::Changed { delete_missing: true } => {
                    writer.delete(&e.path)?;
                    self.deleted += 1;
                }
                FilterMode::Changed { delete_missing: false } => self.kept_missing += 1,
                FilterMode::StoreAll => continue,
            }
            self.hidden = Some(e.path);
        }
        Ok(())
    }
}

impl<W: Write> WalkFilter<W> for UpdateFilter<'_, '_> {
    fn admit(&mut self, writer: &mut ArchiveWriter<W>, stored: &[u8], seen: &Seen) -> Result<bool> {
        self.delete_before(writer, Some(stored))?;
        let (stored_before, unchanged) = match self.peek()? {
            Some(e) if e.path == stored => {
                let e = self.peeked.take().expect("peeked");
                let unchanged = matches!(self.mode, FilterMode::Changed { .. }) && same_as_stored(&e, seen);
                // A changed file stores only the chunks its previous
                // version lacks.
                // Only an offer: an old list that does not read (a
                // damaged page) leaves the new version stored in full.
                if !unchanged && seen.kind == FileType::RegularFile {
                    if let Ok(Some(chunks)) = self.archive.chunk_list(&e) {
                        writer.reuse_chunks(stored, &chunks);
                    }
                }
                (true, unchanged)
            }
            _ => (false, false),
        };
        if stored_before && !unchanged {
            self.replaced += 1;
        }
        if !unchanged && seen.kind != FileType::Directory {
            self.hidden = Some(stored.to_vec());
        }
        Ok(!unchanged)
    }
}

/// Whether what the walk saw looks like stored entry `e`: same
/// kind, size and modification time (what tar's `-u` compares).
fn same_as_stored(e: &Entry, seen: &Seen) -> bool {
    let same_time = (e.meta.mtime_secs, e.meta.mtime_nanos) == (seen.mtime_secs, seen.mtime_nanos);
    let same_kind = match &e.kind {
        EntryKind::Dir => seen.kind == FileType::Directory,
        EntryKind::Symlink { .. } => seen.kind == FileType::Symlink,
        EntryKind::File { size, .. } | EntryKind::Hardlink { size, .. } => {
            seen.kind == FileType::RegularFile && *size == seen.size
        }
    };
    same_kind && same_time
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, SystemTime};

    use crate::archive::{Archive, OpenOptions};
    use crate::chunk::ChunkParams;
    use crate::crypto::{KdfParams, Password};
    use crate::file::{create_archive, ArchiveUpdater, UpdateOptions};
    use crate::session::CreateOptions;
    use crate::test_data::random;

    fn read(archive: &Archive<std::fs::File>, path: &str) -> Vec<u8> {
        let mut got = Vec::new();
        archive.open_file(path).unwrap().read_to_end(&mut got).unwrap();
        got
    }

    fn write_at(path: &Path, data: &[u8], mtime_secs: u64) {
        std::fs::write(path, data).unwrap();
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(mtime_secs)).unwrap();
    }

    /// A database-like file with a few scattered 4 KiB writes: `update`
    /// stores the chunks around them, not the file again, and each state
    /// reads back as it was.
    #[test]
    fn an_update_of_a_file_with_scattered_writes_stores_only_their_chunks() {
        const LEN: usize = 4 << 20;
        let work = tempfile::tempdir().unwrap();
        let src = work.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let db = src.join("db");
        let old = random(LEN, 11);
        write_at(&db, &old, 1_700_000_000);
        let archive = work.path().join("a.lbox");
        let password = Password::from("update");
        let params = ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).chunk_sizes(params);
        create_archive(&archive, &src, &["db".into()], &password, options).unwrap();
        let before =
            Archive::open(std::fs::File::open(&archive).unwrap(), &password).unwrap().content_bytes();
        assert!(before >= LEN as u64);

        let mut new = old.clone();
        for i in 0..8 {
            let at = (i * 509 + 77) * (LEN / 4096 / 8) / 509 * 4096 + 1000 * i;
            new[at..at + 4096].copy_from_slice(&random(4096, 100 + i as u64));
        }
        write_at(&db, &new, 1_700_086_400);
        let options = UpdateOptions::new().chunk_sizes(params);
        ArchiveUpdater::open(&archive, &password, options)
            .unwrap()
            .update(&src, &["db".into()], true)
            .unwrap();

        let latest = Archive::open(std::fs::File::open(&archive).unwrap(), &password).unwrap();
        let added = latest.content_bytes() - before;
        assert!(
            added < LEN as u64 / 10,
            "the update added {added} bytes to the stream for 32 KiB of change in a {LEN}-byte file"
        );
        assert!(read(&latest, "db") == new, "the new state reads the new bytes");
        let first = OpenOptions::new().session(1);
        let earlier = Archive::open_with(std::fs::File::open(&archive).unwrap(), &password, first).unwrap();
        assert!(read(&earlier, "db") == old, "the first state reads the old bytes");
    }

    /// A large file copied and the original renamed, then backed up by an
    /// `add` of a new path: both find the first session's chunks through
    /// its chunk index (no previous version at their paths), so the
    /// session stores their chunk lists and no content; the merge session
    /// past 16 runs keeps the index whole.
    #[test]
    fn a_copy_or_a_rename_of_a_stored_file_stores_no_content_again() {
        const LEN: usize = 1 << 20;
        let work = tempfile::tempdir().unwrap();
        let src = work.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let data = random(LEN, 21);
        write_at(&src.join("big"), &data, 1_700_000_000);
        let archive = work.path().join("a.lbox");
        let password = Password::from("copies");
        let params = ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).chunk_sizes(params);
        create_archive(&archive, &src, &["big".into()], &password, options).unwrap();
        let stream = |path: &Path| Archive::open(std::fs::File::open(path).unwrap(), &password).unwrap();
        let before = stream(&archive).content_bytes();
        assert!(before >= LEN as u64);

        std::fs::copy(src.join("big"), src.join("copy")).unwrap();
        std::fs::rename(src.join("big"), src.join("renamed")).unwrap();
        let add = |names: &[&str]| {
            let inputs: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
            let options = UpdateOptions::new().chunk_sizes(params);
            ArchiveUpdater::open(&archive, &password, options).unwrap().add(&src, &inputs).unwrap();
        };
        add(&["copy", "renamed"]);
        let after = stream(&archive);
        let added = after.content_bytes() - before;
        // Two chunk lists of about 256 records of 44 bytes; the content
        // again would be 2 MiB.
        assert!(added < 64 << 10, "the copies added {added} bytes to the stream");
        assert!(read(&after, "copy") == data && read(&after, "renamed") == data);
        assert!(after.verify().unwrap().is_ok());

        // Sixteen more sessions: a merge session rewrites the runs, and its
        // chunk index must still find the first session's chunks.
        for i in 0..16 {
            write_at(&src.join(format!("small{i}")), b"x", 1_700_000_000);
            add(&[&format!("small{i}")]);
        }
        let merged = stream(&archive);
        assert!(merged.root().runs.len() < 16, "a merge session ran");
        let before = merged.content_bytes();
        std::fs::copy(src.join("copy"), src.join("third")).unwrap();
        add(&["third"]);
        let after = stream(&archive);
        assert!(after.content_bytes() - before < 64 << 10, "the merged index found the chunks");
        assert!(read(&after, "third") == data);
        assert!(after.verify().unwrap().is_ok());
    }

    /// SECURITY.md, "What deduplication shows": chunk ids and boundaries
    /// are inside sealed pages. No chunk id of a chunked file, nor its
    /// list's bytes, appears anywhere in the archive's bytes.
    #[test]
    fn chunk_ids_and_lists_do_not_appear_in_the_archive_bytes() {
        const LEN: usize = 1 << 20;
        let work = tempfile::tempdir().unwrap();
        let src = work.path().join("src");
        std::fs::create_dir(&src).unwrap();
        write_at(&src.join("big"), &random(LEN, 31), 1_700_000_000);
        let archive = work.path().join("a.lbox");
        let password = Password::from("observer");
        let params = ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).chunk_sizes(params);
        create_archive(&archive, &src, &["big".into()], &password, options).unwrap();
        let a = Archive::open(std::fs::File::open(&archive).unwrap(), &password).unwrap();
        let entry = a.find(b"big").unwrap().unwrap();
        let list = a.chunk_list(&entry).unwrap().expect("a chunked file");
        assert!(list.len() > 100, "{} chunks", list.len());
        let bytes = std::fs::read(&archive).unwrap();
        let appears = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        for chunk in &list {
            assert!(!appears(&chunk.id), "a chunk id appears in the archive");
        }
        let second = crate::format::encode_chunk_list(&list[1..2]);
        assert!(!appears(&second[..12]), "a chunk's offset and length appear in the archive");
    }

    /// A compaction that keeps three states of a large file with scattered
    /// writes stores the later states' changed chunks, not the file three
    /// times: each kept state's session looks chunks up in the rewrite.
    #[test]
    fn a_compaction_keeping_several_states_stores_each_chunk_once() {
        const LEN: usize = 4 << 20;
        let work = tempfile::tempdir().unwrap();
        let src = work.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let db = src.join("db");
        let mut data = random(LEN, 41);
        write_at(&db, &data, 1_700_000_000);
        let archive = work.path().join("a.lbox");
        let password = Password::from("compact");
        let params = ChunkParams::new(1 << 10, 4 << 10, 16 << 10).unwrap();
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).chunk_sizes(params);
        create_archive(&archive, &src, &["db".into()], &password, options).unwrap();
        for day in 1..4u64 {
            let at = (day as usize * 997_001) % (LEN - 4096);
            data[at..at + 4096].copy_from_slice(&random(4096, 50 + day));
            write_at(&db, &data, 1_700_000_000 + day * 86_400);
            ArchiveUpdater::open(&archive, &password, UpdateOptions::new().chunk_sizes(params))
                .unwrap()
                .update(&src, &["db".into()], true)
                .unwrap();
        }
        let keep = crate::archive::Retention::latest().last_states(std::num::NonZeroU64::new(3).unwrap());
        let options = UpdateOptions::new().chunk_sizes(params).retention(keep);
        ArchiveUpdater::compact(&archive, &password, options).unwrap();
        let a = Archive::open(std::fs::File::open(&archive).unwrap(), &password).unwrap();
        assert!(
            a.content_bytes() < LEN as u64 + (LEN as u64 / 4),
            "three kept states of a {LEN}-byte file took {} bytes of stream",
            a.content_bytes()
        );
        assert!(read(&a, "db") == data);
        assert!(a.verify().unwrap().is_ok());
    }
}
