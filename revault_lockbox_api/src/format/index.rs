//! The index: write sessions, the page table and one record per entry.
//!
//! ```text
//! index    = session_count u32 || (first_page u64 || salt[32])*
//!            || page_count u64 || page_record*
//!            || entry_count u64 || entry*
//! page_record = offset u64 || stored_len u32 || plain_len u32 || kind u8 || codec u8
//! entry    = kind u8 || path_len u32 || path || mode u32 || uid u32 || gid u32
//!            || mtime_secs i64 || mtime_nanos u32 || body
//! file     = size u64 || first_page u64 || offset_in_page u32 || sha256[32]
//! symlink  = target_len u32 || target      (bytes, kept exactly)
//! hardlink = target_len u32 || target      (path of an earlier file entry)
//! dir      = (nothing)
//! ```
//! A file's content is `size` bytes of the data stream starting at
//! `offset_in_page` of page `first_page` and running on through the following
//! pages. Small files share pages; writers start large files on a fresh page.

use super::codec::{malformed, Decoder, Encoder};
use super::page::{Codec, PageKind};
use super::{
    DecodeError, DIGEST_LEN, MAX_PAGE_PLAIN_LEN, MAX_PAGE_STORED_LEN, MAX_PATH_LEN, MAX_SESSIONS,
    SESSION_SALT_LEN,
};

/// One write session: its pages start at `first_page` and are sealed under
/// keys derived from `salt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// First data page written by the session.
    pub first_page: u64,
    /// The session's HKDF salt.
    pub salt: [u8; SESSION_SALT_LEN],
}

/// Where a data page is and how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRecord {
    /// Byte offset of the sealed page in the archive.
    pub offset: u64,
    /// Sealed length, tag included.
    pub stored_len: u32,
    /// Plaintext length.
    pub plain_len: u32,
    /// Storage codec.
    pub codec: Codec,
}

const PAGE_RECORD_LEN: usize = 8 + 4 + 4 + 1 + 1;
const MIN_ENTRY_LEN: usize = 1 + 4 + 4 * 3 + 8 + 4;

/// Where a file's bytes are in the data stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLocation {
    /// Page holding the first byte.
    pub first_page: u64,
    /// Offset of the first byte within that page's plaintext.
    pub offset: u32,
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File {
        /// Length in bytes.
        size: u64,
        /// Where its bytes are.
        location: FileLocation,
        /// SHA-256 of its bytes.
        sha256: [u8; DIGEST_LEN],
    },
    /// A symbolic link, never followed; its target bytes kept exactly.
    Symlink {
        /// Target as stored.
        target: Vec<u8>,
    },
    /// A hard link to an earlier file entry.
    Hardlink {
        /// Path of the earlier entry.
        target: Vec<u8>,
    },
}

/// One archived path and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Relative path, `/`-separated, as raw bytes (not necessarily UTF-8).
    pub path: Vec<u8>,
    /// Kind and kind-specific data.
    pub kind: EntryKind,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// Owner user id (stored, not restored).
    pub uid: u32,
    /// Owner group id (stored, not restored).
    pub gid: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime_secs: i64,
    /// Nanoseconds part of the modification time.
    pub mtime_nanos: u32,
}

/// The decoded index of one archive version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Index {
    /// Write sessions in page order.
    pub sessions: Vec<Session>,
    /// Every data page in order.
    pub pages: Vec<PageRecord>,
    /// Every entry in the order written.
    pub entries: Vec<Entry>,
}

const ENTRY_DIR: u8 = 1;
const ENTRY_FILE: u8 = 2;
const ENTRY_SYMLINK: u8 = 3;
const ENTRY_HARDLINK: u8 = 4;

impl Index {
    /// Encodes the index (before compression and sealing).
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(self.sessions.len() as u32);
        for s in &self.sessions {
            e.u64(s.first_page).bytes(&s.salt);
        }
        e.u64(self.pages.len() as u64);
        for p in &self.pages {
            e.u64(p.offset).u32(p.stored_len).u32(p.plain_len).u8(PageKind::Data as u8).u8(p.codec as u8);
        }
        e.u64(self.entries.len() as u64);
        for entry in &self.entries {
            entry.encode(&mut e);
        }
        e.buf
    }

    /// Decodes an index and checks that its page table and file locations
    /// are consistent, so that readers can trust them.
    pub fn decode(bytes: &[u8]) -> Result<Index, DecodeError> {
        let mut d = Decoder::new(bytes, "index");
        let session_count = d.u32()? as usize;
        if session_count == 0 || session_count > MAX_SESSIONS {
            return Err(malformed("index", "session count out of range"));
        }
        let mut sessions = Vec::with_capacity(session_count);
        for _ in 0..session_count {
            sessions.push(Session { first_page: d.u64()?, salt: d.array()? });
        }
        if sessions[0].first_page != 0 || sessions.windows(2).any(|w| w[0].first_page > w[1].first_page) {
            return Err(malformed("index", "sessions out of order"));
        }
        let page_count = checked_count(d.u64()?, PAGE_RECORD_LEN, &d)?;
        let mut pages = Vec::with_capacity(page_count);
        let mut next_offset = 0u64;
        for _ in 0..page_count {
            let page = PageRecord {
                offset: d.u64()?,
                stored_len: d.u32()?,
                plain_len: d.u32()?,
                codec: {
                    PageKind::decode(d.u8()?)?;
                    Codec::decode(d.u8()?)?
                },
            };
            if page.plain_len > MAX_PAGE_PLAIN_LEN || page.stored_len > MAX_PAGE_STORED_LEN {
                return Err(malformed("page record", "length over its limit"));
            }
            if page.offset < next_offset {
                return Err(malformed("page record", "pages overlap"));
            }
            next_offset = page
                .offset
                .checked_add(u64::from(page.stored_len))
                .ok_or_else(|| malformed("page record", "offset out of range"))?;
            pages.push(page);
        }
        let entry_count = checked_count(d.u64()?, MIN_ENTRY_LEN, &d)?;
        let mut entries = Vec::with_capacity(entry_count);
        for _ in 0..entry_count {
            let entry = Entry::decode(&mut d)?;
            if let EntryKind::File { size, location, .. } = &entry.kind {
                check_location(&pages, *size, *location)?;
            }
            entries.push(entry);
        }
        d.finish()?;
        Ok(Index { sessions, pages, entries })
    }

    /// Position in `sessions` of the session that sealed data page `page`.
    pub fn session_of(&self, page: u64) -> usize {
        self.sessions.partition_point(|s| s.first_page <= page).saturating_sub(1)
    }
}

/// A count read from input can claim at most as many records as the
/// remaining bytes can hold.
fn checked_count(count: u64, min_len: usize, d: &Decoder<'_>) -> Result<usize, DecodeError> {
    if count > (d.remaining() / min_len) as u64 {
        return Err(malformed("index", "count larger than the index"));
    }
    Ok(count as usize)
}

/// A file's byte range must lie inside the page table.
fn check_location(pages: &[PageRecord], size: u64, loc: FileLocation) -> Result<(), DecodeError> {
    let bad = || malformed("index entry", "file location outside the data pages");
    if size == 0 {
        return if loc.first_page <= pages.len() as u64 { Ok(()) } else { Err(bad()) };
    }
    let first = usize::try_from(loc.first_page).map_err(|_| bad())?;
    let page = pages.get(first).ok_or_else(bad)?;
    if loc.offset >= page.plain_len {
        return Err(bad());
    }
    let mut available = u64::from(page.plain_len - loc.offset);
    for p in &pages[first + 1..] {
        if available >= size {
            break;
        }
        available += u64::from(p.plain_len);
    }
    if available < size {
        return Err(bad());
    }
    Ok(())
}

impl Entry {
    fn encode(&self, e: &mut Encoder) {
        let kind = match self.kind {
            EntryKind::Dir => ENTRY_DIR,
            EntryKind::File { .. } => ENTRY_FILE,
            EntryKind::Symlink { .. } => ENTRY_SYMLINK,
            EntryKind::Hardlink { .. } => ENTRY_HARDLINK,
        };
        e.u8(kind)
            .var_bytes(&self.path)
            .u32(self.mode)
            .u32(self.uid)
            .u32(self.gid)
            .i64(self.mtime_secs)
            .u32(self.mtime_nanos);
        match &self.kind {
            EntryKind::Dir => {}
            EntryKind::File { size, location, sha256 } => {
                e.u64(*size).u64(location.first_page).u32(location.offset).bytes(sha256);
            }
            EntryKind::Symlink { target } | EntryKind::Hardlink { target } => {
                e.var_bytes(target);
            }
        }
    }

    fn decode(d: &mut Decoder<'_>) -> Result<Entry, DecodeError> {
        let kind = d.u8()?;
        let path = d.var_bytes(MAX_PATH_LEN)?.to_vec();
        if path.is_empty() {
            return Err(malformed("index entry", "empty path"));
        }
        let mode = d.u32()?;
        let uid = d.u32()?;
        let gid = d.u32()?;
        let mtime_secs = d.i64()?;
        let mtime_nanos = d.u32()?;
        if mode > 0o7777 || mtime_nanos >= 1_000_000_000 {
            return Err(malformed("index entry", "mode or mtime out of range"));
        }
        let kind = match kind {
            ENTRY_DIR => EntryKind::Dir,
            ENTRY_FILE => EntryKind::File {
                size: d.u64()?,
                location: FileLocation { first_page: d.u64()?, offset: d.u32()? },
                sha256: d.array()?,
            },
            ENTRY_SYMLINK => EntryKind::Symlink { target: d.var_bytes(MAX_PATH_LEN)?.to_vec() },
            ENTRY_HARDLINK => EntryKind::Hardlink { target: d.var_bytes(MAX_PATH_LEN)?.to_vec() },
            _ => return Err(malformed("index entry", "unknown entry kind")),
        };
        Ok(Entry { path, kind, mode, uid, gid, mtime_secs, mtime_nanos })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &[u8], kind: EntryKind) -> Entry {
        Entry { path: path.to_vec(), kind, mode: 0o644, uid: 1, gid: 2, mtime_secs: -5, mtime_nanos: 7 }
    }

    fn sample() -> Index {
        Index {
            sessions: vec![Session { first_page: 0, salt: [4; SESSION_SALT_LEN] }],
            pages: vec![
                PageRecord { offset: 100, stored_len: 50, plain_len: 1000, codec: Codec::Zstd },
                PageRecord { offset: 150, stored_len: 1016, plain_len: 1000, codec: Codec::Raw },
            ],
            entries: vec![
                entry(b"d", EntryKind::Dir),
                entry(
                    b"d/\xff",
                    EntryKind::File {
                        size: 1500,
                        location: FileLocation { first_page: 0, offset: 400 },
                        sha256: [8; 32],
                    },
                ),
                entry(b"l", EntryKind::Symlink { target: b"../x".to_vec() }),
                entry(b"h", EntryKind::Hardlink { target: b"d/\xff".to_vec() }),
            ],
        }
    }

    #[test]
    fn index_round_trips() {
        let index = sample();
        assert_eq!(Index::decode(&index.encode()).unwrap(), index);
    }

    #[test]
    fn file_past_the_last_page_is_refused() {
        let mut index = sample();
        if let EntryKind::File { size, .. } = &mut index.entries[1].kind {
            *size = 1601;
        }
        assert!(Index::decode(&index.encode()).is_err());
    }

    #[test]
    fn pages_belong_to_the_session_that_started_before_them() {
        let mut index = sample();
        index.sessions.push(Session { first_page: 1, salt: [5; SESSION_SALT_LEN] });
        assert_eq!([0, 1, 7].map(|p| index.session_of(p)), [0, 1, 1]);
    }

    #[test]
    fn page_offsets_near_the_top_do_not_overflow() {
        let mut index = sample();
        index.pages[0].offset = u64::MAX - 10;
        assert!(Index::decode(&index.encode()).is_err());
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        let mut e = Encoder::default();
        e.u32(1).u64(0).bytes(&[0; 32]).u64(u64::MAX);
        assert!(Index::decode(&e.buf).is_err());
    }

    #[test]
    fn every_truncation_fails_cleanly() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            assert!(Index::decode(&bytes[..len]).is_err(), "len {len}");
        }
    }
}
