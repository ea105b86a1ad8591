//! [`Archive::info`]: facts about an archive from its header, root, index
//! and page table (no data page is read).

use crate::format::{Codec, EntryKind, KeySlot, PagesLeaf, Table, DATA_START, TRAILER_LEN, VERSION};
use crate::storage::ReadAt;
use crate::{Archive, KdfParams, Result};

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
    /// Sealed bytes of the index: its nodes and root.
    pub index_bytes: u64,
    /// Write sessions.
    pub sessions: u64,
    /// Regular files.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Hard links.
    pub hardlinks: u64,
    /// Total bytes of file content (hard links not counted again).
    pub content_bytes: u64,
}

impl<S: ReadAt> Archive<S> {
    /// Facts about the archive. Streams the index and the page table.
    pub fn info(&self) -> Result<ArchiveInfo> {
        let mut info = ArchiveInfo {
            version: VERSION,
            archive_bytes: self.file_len,
            pages: self.root.page_count,
            sessions: self.root.sessions.len() as u64,
            ..ArchiveInfo::default()
        };
        for slot in &self.slots {
            info.key_slots += u64::from(!matches!(slot, KeySlot::Empty));
            if let KeySlot::Password(p) = slot {
                info.kdf.push(KdfParams { m_kib: p.m_kib, t: p.t, p: p.p });
            }
        }
        let tree = self.tree(Table::Pages);
        for leaf in tree.leaves(&self.root.pages) {
            let (id, child) = leaf?;
            for p in PagesLeaf::decode(&tree.node(&id, &child)?)?.pages {
                info.stored_page_bytes += u64::from(p.stored_len);
                info.raw_pages += u64::from(p.codec == Codec::Raw);
            }
        }
        info.index_bytes = self.file_len - DATA_START - info.stored_page_bytes - TRAILER_LEN as u64;
        for e in self.entries()? {
            match e?.kind {
                EntryKind::Dir => info.dirs += 1,
                EntryKind::File { size, .. } => {
                    info.files += 1;
                    info.content_bytes += size;
                }
                EntryKind::Symlink { .. } => info.symlinks += 1,
                EntryKind::Hardlink { .. } => info.hardlinks += 1,
            }
        }
        Ok(info)
    }
}
