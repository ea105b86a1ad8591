//! The end of a write session: the last page and the rest of both trees,
//! the session's record in the sessions tree, then the index root, the
//! signature block when signing, and the trailer that commits them.

use std::io::Write;
use std::sync::Arc;

use super::ArchiveWriter;
use crate::crypto::SessionKeys;
use crate::crypto::{seal_root, to_seal, Sealing};
use crate::error::{Error, Result};
use crate::format::{
    chunking_allowed, Hash, RecordOwner, Root, Run, SessionKind, SessionRecord, SessionsTop, Summary, Table,
    Trailer, TreeTop, ARCHIVE_ID_LEN, FOOTER_LEN, HASH_LEN, MAX_ROOT_LEN, SESSION_SALT_LEN, TAG_LEN, VERSION,
};
use crate::storage::ReadAt;

use super::output::Output;
use crate::index::{push_session, TreeBuilder};
use crate::keys::sign_block;
use crate::recovery::write_record;

/// Bytes of the protected run a recovery record's encoding holds at once
/// (docs/RECOVERY.md: four 4 MiB groups).
const RECOVERY_WINDOW: usize = 16 << 20;
/// What a session's root continues from and what it adds: the sessions
/// tree and the runs kept from before it, the entry count after it, and
/// this session's two trees.
pub(crate) struct NextRoot {
    pub(crate) entry_count: u64,
    /// The sessions before this one (empty for a new archive).
    pub(crate) sessions: SessionsTop,
    /// The runs kept, oldest first (this session's is added after them).
    pub(crate) runs: Vec<Run>,
    pub(crate) entries: TreeTop,
    pub(crate) pages: TreeTop,
}

impl<W: Write> ArchiveWriter<W> {
    /// Writes the last page, the rest of the index, the root and the
    /// trailer, flushes, and returns the output. The archive is complete
    /// only once this returns `Ok`.
    pub fn finish(self) -> Result<W> {
        self.finish_counted().map(|(out, _)| out)
    }

    /// [`finish`](Self::finish), also returning the archive's length.
    pub(crate) fn finish_counted(mut self) -> Result<(W, u64)> {
        let (entries, pages) = self.finish_trees()?;
        let next = NextRoot {
            entry_count: self.entry_count,
            sessions: SessionsTop::default(),
            runs: Vec::new(),
            entries,
            pages,
        };
        self.commit(next, &mut |_| Ok(()))
    }

    /// The root after `next`: this session's record added to the sessions
    /// tree (writing the nodes it fills), its run after the kept ones.
    fn next_root(&mut self, next: NextRoot) -> Result<Root> {
        let (header_offset, first_page, stream_start) = self.start;
        let info = &self.info;
        let summary = Summary {
            created_ns: info.created_ns,
            kind: info.kind,
            label: info.label.clone(),
            stored: self.entry_count,
            removed: self.deleted,
            entries: next.entry_count,
            signers: self.signers.clone(),
            state: self.state,
        };
        let (number, salt) = (info.number, self.session_salt);
        let record = SessionRecord {
            number,
            salt,
            first_page,
            stream_start,
            header_offset,
            pages: next.pages,
            summary,
        };
        let too_many = || Error::TooManySessions { path: std::path::PathBuf::new() };
        let sessions = push_session(&next.sessions, record, salt, &mut self.output)?.ok_or_else(too_many)?;
        let mut runs = next.runs;
        let chunks = std::mem::take(&mut self.chunk_top);
        runs.push(Run { session: number, salt, top: next.entries, chunks });
        let (page_count, stream_len) = (self.next_page, self.page_start);
        Ok(Root { page_count, stream_len, entry_count: next.entry_count, sessions, runs })
    }

    /// Writes the last page, the rest of both trees of this session and its
    /// chunk index (kept for its run in the root); returns the two trees'
    /// tops (the newest entries run, this session's pages).
    pub(crate) fn finish_trees(&mut self) -> Result<(TreeTop, TreeTop)> {
        if !self.page.is_empty() {
            self.flush_page()?;
        }
        while self.sealer.in_flight() > 0 {
            self.write_oldest()?;
        }
        self.flush_page_records()?;
        self.flush_leaf()?;
        let entries = std::mem::replace(&mut self.entries, TreeBuilder::new(Table::Entries));
        let pages = std::mem::replace(&mut self.pages, TreeBuilder::new(Table::Pages));
        let (entries, pages) = (entries.finish(&mut self.output)?, pages.finish(&mut self.output)?);
        if !self.chunk_index.is_empty() {
            self.chunk_top = std::mem::take(&mut self.chunk_index).write(&mut self.output)?;
        }
        Ok((entries, pages))
    }

    /// Writes the sessions tree's new nodes, the root after `next` and the
    /// trailer that commits it, calling `sync` with the output in between
    /// (an append syncs everything the trailer points to before the trailer
    /// exists) and after. Returns the output and the archive's length.
    pub(crate) fn commit(
        mut self,
        next: NextRoot,
        sync: &mut dyn FnMut(&mut W) -> Result<()>,
    ) -> Result<(W, u64)> {
        let root = &self.next_root(next)?;
        let plain = to_seal(&self.output.archive_id, Sealing::Root, root.encode());
        if plain.len() > MAX_ROOT_LEN as usize {
            // The session knows no path; an append names its archive.
            return Err(Error::TooManySessions { path: std::path::PathBuf::new() });
        }
        let out = &mut self.output;
        let sealed = seal_root(&out.keys, &out.archive_id, &plain)?;
        let (previous_trailer, previous_hash) = self.previous;
        let mut trailer = Trailer {
            version: out.version,
            archive_id: out.archive_id,
            session_salt: self.session_salt,
            header_hash: self.header_hash,
            root_offset: out.position,
            root_stored_len: sealed.stored_len(),
            root_plain_len: sealed.plain_len,
            root_hash: sealed.hash,
            page_count: root.page_count,
            entry_count: root.entry_count,
            previous_trailer,
            previous_hash,
            signature_len: 0,
            // In the core, so before the commit hash a signature signs.
            copy_slot_len: out.header_copy.as_ref().map_or(0, |c| c.slot_len),
            // A record only with a copy (FORMAT.md §3.12); in the core too.
            recovery_percent: match out.header_copy {
                Some(_) => self.tuning.recovery_percent,
                None => 0,
            },
            tag: [0; TAG_LEN],
        };
        // The block signs the commit hash, which does not cover it (§3.10).
        let block = match self.signing.keys.is_empty() {
            true => Vec::new(),
            false => {
                sign_block(&self.signing.keys, &out.archive_id, &trailer.commit_hash(), self.signing.adopts)?
            }
        };
        trailer.signature_len = block.len() as u32;
        trailer.tag = out.keys.trailer_tag(&trailer.body());
        out.write(&sealed.frame, "writing the index root")?;
        out.write(&sealed.bytes, "writing the index root")?;
        out.write(&block, "writing the index root")?;
        if let Some(copy) = out.header_copy.take() {
            copy.written_at.store(out.position, std::sync::atomic::Ordering::Relaxed);
            out.write(&copy.bytes, "writing the header copy")?;
        }
        out.out.flush().map_err(Error::stream("flushing the archive"))?;
        sync(&mut out.out)?;
        out.write(&trailer.encode(), "writing the trailer")?;
        if trailer.recovery_percent != 0 {
            // `session` refused a record without a file to read back.
            let source = self
                .read_back
                .as_deref()
                .ok_or(Error::RecoveryUnavailable { reason: "no file to read the session back from" })?;
            write_recovery_record(out, source, &trailer, self.session_salt)?;
            out.write(&trailer.encode(), "writing the trailer")?;
        }
        out.out.flush().map_err(Error::stream("flushing the archive"))?;
        sync(&mut out.out)?;
        debug_assert_eq!(trailer.session_end(), out.position);
        Ok((self.output.out, self.output.position))
    }

    /// Whether this session may store a file as a list of chunks: only in
    /// an archive of version 4 or later (an append to a version 3 archive
    /// writes a version 3 session, which stores every file whole).
    pub(crate) fn chunking_allowed(&self) -> bool {
        chunking_allowed(self.output.version)
    }

    /// This session's keys.
    pub(crate) fn session_keys(&self) -> Arc<SessionKeys> {
        Arc::clone(&self.output.keys)
    }

    /// Data pages of the archive so far, and its data stream's length.
    pub(crate) fn pages_and_stream(&self) -> (u64, u64) {
        (self.next_page, self.page_start + self.page.len() as u64)
    }

    /// Entries stored in this session, and the first and last paths of its
    /// records.
    pub(crate) fn run_span(&self) -> (u64, Option<&[u8]>, Option<&[u8]>) {
        (self.entry_count, self.first_path.as_deref(), self.last_path.as_deref())
    }

    /// The output, to flush and sync it (an append, before reading back).
    pub(crate) fn output_mut(&mut self) -> &mut W {
        &mut self.output.out
    }
}

/// Writes the recovery record after `trailer`'s first copy (FORMAT.md
/// §3.12): over the session's bytes up to its header copy, read back from
/// `source` (flushed, so the page cache holds them), then its footer.
fn write_recovery_record<W: Write>(
    out: &mut Output<W>,
    source: &dyn ReadAt,
    trailer: &Trailer,
    session_salt: [u8; SESSION_SALT_LEN],
) -> Result<()> {
    let owner = RecordOwner {
        version: trailer.version,
        archive_id: trailer.archive_id,
        session_salt,
        first_session: trailer.previous_trailer == 0,
    };
    let protected = trailer.protected_start()..trailer.header_copy_offset();
    let footer =
        write_record(source, protected, trailer.recovery_percent, RECOVERY_WINDOW, owner, &mut out.out)
            .map_err(Error::stream("writing the recovery record"))?;
    out.advance(footer.record_len + FOOTER_LEN as u64);
    Ok(())
}

/// Where a write session begins: the archive's id and format version, the
/// offset of its first byte, the page number and stream offset it continues from, its number
/// and kind, and the trailer it follows.
pub(crate) struct SessionStart {
    pub(crate) archive_id: [u8; ARCHIVE_ID_LEN],
    /// The archive's format version: an append writes a session of the
    /// version its archive has (docs/FORMAT.md §9).
    pub(crate) version: u16,
    pub(crate) position: u64,
    pub(crate) next_page: u64,
    pub(crate) stream_len: u64,
    pub(crate) number: u32,
    pub(crate) kind: SessionKind,
    /// The previous trailer's end and commit hash: `(0, zeros)` for the
    /// first session of an archive.
    pub(crate) previous: (u64, Hash),
    /// The session's time, UTC nanoseconds since 1970: `None` for now; a
    /// compaction keeps each kept state's own.
    pub(crate) created_ns: Option<i64>,
    /// For a compaction: the number of the state it holds (§3.7).
    pub(crate) state: u64,
    /// The archive's header prefix and key-slot table, as at offset 0: a
    /// session of version 4 ends with their copy (FORMAT.md §3.11).
    pub(crate) head: Arc<[u8]>,
}

impl SessionStart {
    /// The first session of a new archive (of this library's [`VERSION`]),
    /// after its header and slot table `head`.
    pub(crate) fn first(archive_id: [u8; ARCHIVE_ID_LEN], head: Arc<[u8]>) -> SessionStart {
        SessionStart {
            archive_id,
            version: VERSION,
            position: head.len() as u64,
            next_page: 0,
            stream_len: 0,
            number: 0,
            kind: SessionKind::Change,
            previous: (0, [0; HASH_LEN]),
            created_ns: None,
            state: 0,
            head,
        }
    }
}
