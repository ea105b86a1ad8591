//! The entry model and its encoding in index leaves.
//!
//! ```text
//! entry    = kind u8 || path var(16384) || mode u32 || uid u32 || gid u32
//!            || mtime_secs i64 || mtime_nanos u32 || body
//! dir      = (nothing)
//! file     = size u64 || data_offset u64 || sha256[32] || flags u8
//!            || [chunk_count u32]                 (when flags has CHUNKED)
//! symlink  = target var(16384)                 (bytes, kept exactly)
//! hardlink = target var(16384) || size u64 || data_offset u64 || sha256[32]
//! deleted  = (kind 5, and nothing after the path: a record of a later run)
//! ```
//! Kinds 1 to 4 with bit 7 set ([`KIND_HAS_EXTRA`]) are followed by an
//! [`Extra`] tail (owner names, xattrs, a sparse map; see `extra.rs`).
//! `data_offset` is where the content starts in the data stream (all data
//! pages' plaintext, concatenated in page order), or, for a chunked file
//! (format v4), where its chunk list starts (`chunks.rs`). A hard link
//! names an earlier file and repeats where that file's content is; a file
//! that hard links name is never chunked.

use super::chunks::{check_chunk_count, CHUNK_RECORD_LEN};
use super::codec::{malformed, Decoder, Encoder};
use super::extra::{decode_extra, Extra, SparseMap, KIND_HAS_EXTRA};
use super::metadata::Metadata;
use super::{check_entry_path, check_symlink_target, DecodeError, DIGEST_LEN, MAX_FILE_SIZE, MAX_PATH_LEN};

/// One archived path and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// Relative path, `/`-separated, as raw bytes (not necessarily UTF-8).
    pub path: Vec<u8>,
    /// Kind and kind-specific data.
    pub kind: EntryKind,
    /// Mode, owner, mtime, owner names and xattrs.
    pub meta: Metadata,
    /// Where the content is, for files and hard links.
    pub(crate) extent: Option<Extent>,
    /// Where a sparse file's data lies (stored in the optional tail).
    pub(crate) sparse: Option<SparseMap>,
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    #[non_exhaustive]
    File {
        /// Length in bytes.
        size: u64,
        /// SHA-256 of its bytes.
        sha256: [u8; DIGEST_LEN],
    },
    /// A symbolic link, never followed; its target bytes kept exactly.
    #[non_exhaustive]
    Symlink {
        /// Target as stored.
        target: Vec<u8>,
    },
    /// A hard link to an earlier file entry, sharing its content.
    #[non_exhaustive]
    Hardlink {
        /// Path of the earlier file entry.
        target: Vec<u8>,
        /// Length of the shared content.
        size: u64,
        /// SHA-256 of the shared content.
        sha256: [u8; DIGEST_LEN],
    },
}

/// Where a file's content lies in the data stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    /// Data-stream offset of the first byte.
    pub(crate) offset: u64,
    /// Length in bytes.
    pub(crate) size: u64,
    /// Whether hard links to this file follow (file entries only).
    pub(crate) linked: bool,
    /// For a chunked file, the records in its chunk list at `offset`; 0
    /// for content stored whole from `offset`.
    pub(crate) chunks: u32,
}

impl Extent {
    /// Content stored whole from `offset`: `size` bytes.
    pub(crate) fn whole(offset: u64, size: u64, linked: bool) -> Extent {
        Extent { offset, size, linked, chunks: 0 }
    }

    /// The end of what this extent names directly in the stream: the
    /// content's end, or a chunked file's list's end.
    pub(crate) fn end(&self) -> u64 {
        self.offset.saturating_add(self.direct_len())
    }

    /// Bytes at `offset` that belong to this entry: the content, or the
    /// chunk list.
    pub(crate) fn direct_len(&self) -> u64 {
        match self.chunk_list() {
            Some((_, len)) => len,
            None => self.size,
        }
    }

    /// A chunked file's list: its record count and its length in bytes.
    pub(crate) fn chunk_list(&self) -> Option<(u32, u64)> {
        (self.chunks > 0).then(|| (self.chunks, u64::from(self.chunks) * CHUNK_RECORD_LEN as u64))
    }
}

impl Entry {
    /// Size and digest of the content, for files and hard links.
    pub fn content(&self) -> Option<(u64, &[u8; DIGEST_LEN])> {
        match &self.kind {
            EntryKind::File { size, sha256 } | EntryKind::Hardlink { size, sha256, .. } => {
                Some((*size, sha256))
            }
            _ => None,
        }
    }

    /// Where a sparse file's data lies; `None` for a file stored whole.
    pub fn sparse_map(&self) -> Option<&SparseMap> {
        self.sparse.as_ref()
    }

    fn extra(&self) -> Extra<'_> {
        Extra { meta: &self.meta, sparse: self.sparse.as_ref() }
    }
}

const ENTRY_DIR: u8 = 1;
const ENTRY_FILE: u8 = 2;
const ENTRY_SYMLINK: u8 = 3;
const ENTRY_HARDLINK: u8 = 4;
const RECORD_DELETED: u8 = 5;
const FILE_LINKED: u8 = 1;
/// A file whose content is a list of chunks (format v4, §3.5c).
const FILE_CHUNKED: u8 = 2;

/// Fixed part of every entry: kind, path length, mode, owner, mtime.
const MIN_ENTRY_LEN: usize = 1 + 4 + 4 * 3 + 8 + 4;
/// Fixed part of a deletion: kind and path length.
pub(crate) const MIN_RECORD_LEN: usize = 1 + 4;
/// Shortest record on disk: a deletion of a one-byte path (paths are
/// never empty), which bounds a leaf's count.
pub(crate) const SHORTEST_RECORD_LEN: usize = MIN_RECORD_LEN + 1;

/// One record of an entries run: an entry stored, or a path deleted. A
/// later run's record hides what older runs hold at its path; a deletion
/// or a non-directory also hides everything older below its path.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // deletions are rare; boxing would cost every entry an allocation
pub(crate) enum Record {
    Put(Entry),
    Delete(Vec<u8>),
}

impl Record {
    pub(crate) fn path(&self) -> &[u8] {
        match self {
            Record::Put(e) => &e.path,
            Record::Delete(p) => p,
        }
    }

    /// Whether it hides older records below its path.
    pub(crate) fn hides_below(&self) -> bool {
        !matches!(self, Record::Put(Entry { kind: EntryKind::Dir, .. }))
    }
}

/// Bytes `record` takes encoded.
pub(crate) fn encoded_record_len(record: &Record) -> usize {
    match record {
        Record::Put(e) => encoded_entry_len(e),
        Record::Delete(p) => MIN_RECORD_LEN + p.len(),
    }
}

pub(crate) fn encode_record(record: &Record, e: &mut Encoder) {
    match record {
        Record::Put(entry) => encode_entry(entry, e),
        Record::Delete(path) => {
            e.u8(RECORD_DELETED).var_bytes(path);
        }
    }
}

/// Decodes one record: an entry, or a deletion with a valid path.
pub(crate) fn decode_record(d: &mut Decoder<'_>) -> Result<Record, DecodeError> {
    if d.peek_u8() == Some(RECORD_DELETED) {
        d.u8()?;
        let path = d.var_bytes(MAX_PATH_LEN)?.to_vec();
        check_entry_path(&path).map_err(|why| malformed("index entry path", why))?;
        return Ok(Record::Delete(path));
    }
    decode_entry(d).map(Record::Put)
}

/// Bytes `entry` takes encoded.
pub(crate) fn encoded_entry_len(entry: &Entry) -> usize {
    MIN_ENTRY_LEN
        + entry.path.len()
        + match &entry.kind {
            EntryKind::Dir => 0,
            EntryKind::File { .. } => {
                8 + 8 + DIGEST_LEN + 1 + if entry.extent.is_some_and(|x| x.chunks > 0) { 4 } else { 0 }
            }
            EntryKind::Symlink { target } => 4 + target.len(),
            EntryKind::Hardlink { target, .. } => 4 + target.len() + 8 + 8 + DIGEST_LEN,
        }
        + entry.extra().encoded_len()
}

fn encode_entry(entry: &Entry, e: &mut Encoder) {
    let kind = match entry.kind {
        EntryKind::Dir => ENTRY_DIR,
        EntryKind::File { .. } => ENTRY_FILE,
        EntryKind::Symlink { .. } => ENTRY_SYMLINK,
        EntryKind::Hardlink { .. } => ENTRY_HARDLINK,
    };
    let has_extra = if entry.extra().is_empty() { 0 } else { KIND_HAS_EXTRA };
    e.u8(kind | has_extra)
        .var_bytes(&entry.path)
        .u32(entry.meta.mode)
        .u32(entry.meta.uid)
        .u32(entry.meta.gid)
        .i64(entry.meta.mtime_secs)
        .u32(entry.meta.mtime_nanos);
    let extent = entry.extent.unwrap_or(Extent::whole(0, 0, false));
    match &entry.kind {
        EntryKind::Dir => {}
        EntryKind::File { size, sha256 } => {
            let linked = if extent.linked { FILE_LINKED } else { 0 };
            let chunked = if extent.chunks > 0 { FILE_CHUNKED } else { 0 };
            e.u64(*size).u64(extent.offset).bytes(sha256).u8(linked | chunked);
            if extent.chunks > 0 {
                e.u32(extent.chunks);
            }
        }
        EntryKind::Symlink { target } => {
            e.var_bytes(target);
        }
        EntryKind::Hardlink { target, size, sha256 } => {
            e.var_bytes(target).u64(*size).u64(extent.offset).bytes(sha256);
        }
    }
    if has_extra != 0 {
        entry.extra().encode(e);
    }
}

/// Decodes one entry and checks every field that does not depend on its
/// neighbours: a valid path, mode and mtime in range, a known kind.
fn decode_entry(d: &mut Decoder<'_>) -> Result<Entry, DecodeError> {
    let kind_byte = d.u8()?;
    let (kind, has_extra) = (kind_byte & !KIND_HAS_EXTRA, kind_byte & KIND_HAS_EXTRA != 0);
    let path = d.var_bytes(MAX_PATH_LEN)?.to_vec();
    check_entry_path(&path).map_err(|why| malformed("index entry path", why))?;
    let mode = d.u32()?;
    let uid = d.u32()?;
    let gid = d.u32()?;
    let mtime_secs = d.i64()?;
    let mtime_nanos = d.u32()?;
    if mode > 0o7777 || mtime_nanos >= 1_000_000_000 {
        return Err(malformed("index entry", "mode or mtime out of range"));
    }
    let target = |d: &mut Decoder<'_>| -> Result<Vec<u8>, DecodeError> {
        let t = d.var_bytes(MAX_PATH_LEN)?;
        if t.is_empty() {
            return Err(malformed("index entry", "empty link target"));
        }
        Ok(t.to_vec())
    };
    let (kind, mut extent) = match kind {
        ENTRY_DIR => (EntryKind::Dir, None),
        ENTRY_FILE => {
            let (size, offset, sha256) = (d.u64()?, d.u64()?, d.array()?);
            let (linked, chunks) = match d.u8()? {
                0 => (false, 0),
                FILE_LINKED => (true, 0),
                FILE_CHUNKED => match d.u32()? {
                    0 => return Err(malformed("index entry", "a chunk count out of range")),
                    count => (false, count),
                },
                _ => return Err(malformed("index entry", "unknown file flags")),
            };
            (EntryKind::File { size, sha256 }, Some(Extent { offset, size, linked, chunks }))
        }
        ENTRY_SYMLINK => {
            let target = target(d)?;
            check_symlink_target(&target).map_err(|why| malformed("symbolic link", why))?;
            (EntryKind::Symlink { target }, None)
        }
        ENTRY_HARDLINK => {
            let target = target(d)?;
            check_entry_path(&target).map_err(|why| malformed("hard link target", why))?;
            let (size, offset, sha256) = (d.u64()?, d.u64()?, d.array()?);
            (EntryKind::Hardlink { target, size, sha256 }, Some(Extent::whole(offset, size, false)))
        }
        _ => return Err(malformed("index entry", "unknown entry kind")),
    };
    if extent.is_some_and(|x| x.size > MAX_FILE_SIZE) {
        return Err(malformed("index entry", "a size of 2^63 bytes or more"));
    }
    let mut meta = Metadata::new(mode, uid, gid, mtime_secs, mtime_nanos);
    let sparse = if has_extra { decode_extra(d, extent.map(|x| x.size), &mut meta)? } else { None };
    // A sparse file's data stream holds only its segments.
    if let (Some(x), Some(map)) = (&mut extent, &sparse) {
        if x.chunks > 0 {
            return Err(malformed("index entry", "a chunked file with a sparse map"));
        }
        x.size = map.stored_len();
    }
    if let Some(x) = extent.filter(|x| x.chunks > 0) {
        check_chunk_count(x.offset, x.chunks, x.size)?;
    }
    if extent.is_some_and(|x| x.offset.checked_add(x.size).is_none()) {
        return Err(malformed("index entry", "content range overflows"));
    }
    Ok(Entry { path, kind, meta, extent, sparse })
}
