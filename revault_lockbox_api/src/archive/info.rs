//! [`Archive::info`]: facts about an archive from its header, root, index
//! and page tables (no data page is read).

use std::collections::HashMap;

use super::{page_in, SessionSigners};
use crate::archive::Archive;
use crate::crypto::KdfParams;
use crate::error::Result;
use crate::format::{Codec, EntryKind, Extent, KeySlot, PagesLeaf, TreeTop, TRAILER_LEN};
use crate::storage::ReadAt;

/// What [`Archive::info`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveInfo {
    /// Format version.
    pub version: u16,
    /// Size of the archive file.
    pub archive_bytes: u64,
    /// Argon2id parameters of each password slot.
    pub kdf: Vec<KdfParams>,
    /// Key slots in use.
    pub key_slots: u64,
    /// Data pages.
    pub pages: u64,
    /// Data pages stored without compression.
    pub raw_pages: u64,
    /// Sealed bytes of all data pages.
    pub stored_page_bytes: u64,
    /// Sealed bytes of the index in use: the nodes of every entries run and
    /// pages tree the root lists, and the root.
    pub index_bytes: u64,
    /// Write sessions.
    pub sessions: u64,
    /// Entries runs the index merges.
    pub runs: u64,
    /// Bytes `compact` (keeping the last state only) would reclaim at
    /// least: data pages holding no live
    /// file's content, and the index runs, roots and trailers of earlier
    /// sessions that the root no longer lists.
    pub dead_bytes: u64,
    /// Bytes after the last committed trailer (an interrupted session);
    /// `repair` or the next append cuts them off.
    pub torn_tail_bytes: u64,
    /// Regular files.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Hard links.
    pub hardlinks: u64,
    /// Total bytes of file content (hard links not counted again): the
    /// last state's logical size.
    pub content_bytes: u64,
    /// Bytes of content the last state's files reference more than once
    /// and the archive stores once: the content its files reference (each
    /// chunked file's chunks, each other file's stored bytes) less the
    /// distinct content among it (each chunk, each stored content once).
    /// With one state in the history the chunk indexes stand for the
    /// lists (every chunk they list is one of its files'), so no data page
    /// is read for it.
    pub deduplicated_bytes: u64,
    /// The last session's number (0 for the create).
    pub last_session: u32,
    /// The state the archive holds, numbered from 1 as
    /// [`Archive::history`] numbers states (and [`AsOf::State`](crate::read::AsOf::State) takes
    /// them): a change makes the next state, a merge of index runs none,
    /// a compaction holds the state it kept.
    pub state: u64,
    /// When the last session started: UTC nanoseconds since 1970.
    pub last_session_created_ns: i64,
    /// The last session's label (`-m TEXT`), empty when none.
    pub last_session_label: String,
    /// The last trailer's commit hash (FORMAT.md §3.8).
    pub commit_hash: [u8; 32],
    /// Each session's signatures, checked, oldest first.
    pub signers: Vec<SessionSigners>,
}

impl<S: ReadAt> Archive<S> {
    /// Facts about the archive. Streams the index and the page tables;
    /// reads chunked files' chunk lists (data pages) only when the history
    /// holds more than one state: with one, every chunk a chunk index
    /// lists is one its files stored, so the indexes tell which are live.
    pub fn info(&self) -> Result<ArchiveInfo> {
        let states = self.history()?.iter().filter(|s| s.state.is_some()).count();
        self.info_reading(if states > 1 { ChunkPages::FromLists } else { ChunkPages::FromIndexes })
    }

    /// [`info`](Self::info) reading no data page: a chunked file's chunks
    /// count as live through the chunk indexes (every chunk any session
    /// stored), so dead bytes are those of the whole history, not of the
    /// latest state.
    pub(crate) fn info_of_index(&self) -> Result<ArchiveInfo> {
        self.info_reading(ChunkPages::FromIndexes)
    }

    fn info_reading(&self, chunk_pages: ChunkPages) -> Result<ArchiveInfo> {
        let mut info = ArchiveInfo {
            version: self.version(),
            archive_bytes: self.file_len,
            pages: self.root.page_count,
            sessions: self.sessions(),
            runs: self.root.runs.len() as u64,
            torn_tail_bytes: self.torn_tail_bytes(),
            last_session: self.last_session().number,
            state: self.history()?.iter().rev().find_map(|s| s.state).unwrap_or(0),
            last_session_created_ns: self.last_session().created_ns,
            last_session_label: self.last_session().label.clone(),
            commit_hash: self.commit_hash(),
            signers: self.signers()?,
            ..ArchiveInfo::default()
        };
        for slot in &self.slots {
            info.key_slots += u64::from(!matches!(slot, KeySlot::Empty));
            if let KeySlot::Password(p) = slot {
                info.kdf.push(KdfParams { m_kib: p.m_kib, t: p.t, p: p.p });
            }
        }
        let index = IndexBytes::of(self)?;
        (info.stored_page_bytes, info.raw_pages) = (index.page_bytes, index.raw_pages);
        let index_bytes = index.total;
        info.index_bytes = index_bytes;
        let mut live = LivePages::default();
        // Every content the last state references, as (offset, length):
        // 16 bytes a chunk reference (64 MiB per TiB of chunked files at
        // the default average), sorted once to find the distinct ones.
        let mut referenced: Vec<(u64, u64)> = Vec::new();
        // The bytes the files reference, each reference counted.
        let mut total = 0u64;
        for e in self.entries()? {
            let e = e?;
            match e.kind {
                EntryKind::Dir => info.dirs += 1,
                EntryKind::File { size, .. } => {
                    info.files += 1;
                    info.content_bytes += size;
                    if let Some(x) = e.extent {
                        live.mark_content(self, &x)?;
                        total = total.saturating_add(x.size);
                        if chunk_pages == ChunkPages::FromLists {
                            match self.chunk_list_of(&x)? {
                                Some(chunks) => {
                                    for chunk in chunks {
                                        live.mark(self, chunk.offset, chunk.end())?;
                                        referenced.push((chunk.offset, u64::from(chunk.len)));
                                    }
                                }
                                None => referenced.push((x.offset, x.size)),
                            }
                        } else if x.chunks == 0 {
                            referenced.push((x.offset, x.size));
                        }
                    }
                }
                EntryKind::Symlink { .. } => info.symlinks += 1,
                EntryKind::Hardlink { .. } => info.hardlinks += 1,
            }
        }
        if chunk_pages == ChunkPages::FromIndexes {
            // Without the lists (one state): the chunks the indexes list,
            // every one of which a file of that state stored, stand for
            // chunked files' chunks. A small file stored whole is listed
            // there too, at its own place, so it counts once.
            for chunk in self.chunk_entries()? {
                let chunk = chunk?;
                live.mark(self, chunk.offset, chunk.offset + u64::from(chunk.len))?;
                referenced.push((chunk.offset, u64::from(chunk.len)));
            }
        }
        let used = self.data_start + live.bytes + index_bytes + self.session_overhead() + TRAILER_LEN as u64;
        info.dead_bytes = self.committed_len.saturating_sub(used);
        info.deduplicated_bytes = total.saturating_sub(distinct_len(referenced));
        Ok(info)
    }
}

/// The bytes of `spans` (offset, length), each span once: a span at one
/// offset is one chunk or one stored content.
fn distinct_len(mut spans: Vec<(u64, u64)>) -> u64 {
    spans.sort_unstable();
    spans.dedup();
    spans.iter().fold(0u64, |sum, &(_, len)| sum.saturating_add(len))
}

/// Where [`Archive::info`] learns which pages chunked files' chunks lie in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ChunkPages {
    /// Each chunked file's list (data pages read).
    FromLists,
    /// The chunk indexes (no data page read).
    FromIndexes,
}

/// The sealed bytes of the index in use (every pages tree, every run the
/// root lists and its chunk index, the root), and of the data pages the
/// pages trees list.
pub(super) struct IndexBytes {
    pub(super) total: u64,
    pub(super) page_bytes: u64,
    pub(super) raw_pages: u64,
}

impl IndexBytes {
    pub(super) fn of<S: ReadAt>(archive: &Archive<S>) -> Result<IndexBytes> {
        let mut bytes =
            IndexBytes { total: u64::from(archive.trailer_root_len()), page_bytes: 0, raw_pages: 0 };
        let table = archive.sessions_table()?;
        for session in 0..table.len() {
            let tree = archive.pages_tree(session)?;
            let mut leaves = tree.leaves(table.pages(session));
            for leaf in leaves.by_ref() {
                let (id, child) = leaf?;
                bytes.total += u64::from(child.unit_len());
                for p in PagesLeaf::decode(&tree.node(&id, &child)?)?.pages {
                    bytes.page_bytes += u64::from(p.unit_len());
                    bytes.raw_pages += u64::from(p.codec == Codec::Raw);
                }
            }
            bytes.total += leaves.internal_bytes;
        }
        for (tree, top) in archive.runs().chain(archive.chunk_trees()) {
            bytes.total += tree_bytes(&tree, top)?;
        }
        Ok(bytes)
    }
}

/// Sealed bytes of every node of one tree (leaves are not read).
fn tree_bytes(tree: &crate::index::TreeReader<'_>, top: &TreeTop) -> Result<u64> {
    let mut leaves = tree.leaves(top);
    let mut bytes = 0;
    for leaf in leaves.by_ref() {
        bytes += u64::from(leaf?.1.unit_len());
    }
    Ok(bytes + leaves.internal_bytes)
}

/// Data pages holding live content, counted once each (one bit a page,
/// so several states' files may be marked in any order). The page-table
/// leaf last used is kept per session, since each state's files come in
/// ascending stream order.
#[derive(Default)]
pub(super) struct LivePages {
    pub(super) bytes: u64,
    pub(super) pages: u64,
    /// Per session: the page-table leaf in use.
    sessions: HashMap<usize, PagesLeaf>,
    /// The pages counted, a bit each.
    counted: Vec<u64>,
}

impl LivePages {
    /// Marks the pages of what `extent` names directly: a file's content,
    /// or a chunked file's list (reads no data page).
    pub(super) fn mark_content<S: ReadAt>(&mut self, archive: &Archive<S>, extent: &Extent) -> Result<()> {
        self.mark(archive, extent.offset, extent.end())
    }

    pub(super) fn mark<S: ReadAt>(&mut self, archive: &Archive<S>, from: u64, to: u64) -> Result<()> {
        let session = archive.session_at(from)?;
        let mut at = from;
        while at < to {
            let cached = self.sessions.get(&session).and_then(|leaf| page_in(leaf, at));
            let (number, record, start) = match cached {
                Some(hit) => hit,
                None => {
                    let leaf = archive.pages_leaf_at(at)?;
                    let hit = page_in(&leaf, at).ok_or_else(super::no_page)?;
                    self.sessions.insert(session, leaf);
                    hit
                }
            };
            let (word, bit) = ((number / 64) as usize, 1u64 << (number % 64));
            if self.counted.len() <= word {
                self.counted.resize(word + 1, 0);
            }
            if self.counted[word] & bit == 0 {
                self.counted[word] |= bit;
                self.bytes += u64::from(record.unit_len());
                self.pages += 1;
            }
            at = start + u64::from(record.plain_len);
        }
        Ok(())
    }
}
