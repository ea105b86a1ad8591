//! Index nodes: two sorted trees per write session, one of entries (keyed
//! by path) and one of data page records (keyed by data-stream offset),
//! each built bottom-up from bounded leaves. The root above them is
//! `root`'s.
//!
//! ```text
//! entries_leaf = count u32 || record[count]               (entries and deletions in path order)
//! pages_leaf   = first_page u64 || first_offset u64 || count u32 || page_record[count]
//! page_record  = offset u64 || stored_len u32 || plain_len u32 || codec u8 || hash[32]  (49 bytes)
//! internal     = first_child_seq u64 || count u32 || child[count]
//! child        = first_key var(16384) || offset u64 || stored_len u32 || plain_len u32 || codec u8
//!                || hash[32]
//! ```
//! An offset is where the unit's frame starts; a hash is its unit hash
//! (frame and sealed bytes), checked before the unit is opened.
//! A page record's key is the data-stream offset of its first byte, written
//! big-endian in `first_key` so that keys of both trees compare bytewise.

use super::codec::{malformed, Decoder, Encoder};
use super::entry::{decode_record, encode_record, Record, SHORTEST_RECORD_LEN};
use super::frame::FRAME_LEN;
use super::hash::Hash;
use super::page::Codec;
use super::{
    DecodeError, HASH_LEN, MAX_INDEX_NODE_LEN, MAX_PAGE_PLAIN_LEN, MAX_PAGE_STORED_LEN, MAX_PATH_LEN, TAG_LEN,
};

/// Where a sealed node lies, and the first key below it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Child {
    pub(crate) first_key: Vec<u8>,
    pub(crate) offset: u64,
    pub(crate) stored_len: u32,
    pub(crate) plain_len: u32,
    pub(crate) codec: Codec,
    /// The node's unit hash.
    pub(crate) hash: Hash,
}

const MIN_CHILD_LEN: usize = 4 + 8 + 4 + 4 + 1 + HASH_LEN;

impl Child {
    pub(super) fn encode(&self, e: &mut Encoder) {
        e.var_bytes(&self.first_key)
            .u64(self.offset)
            .u32(self.stored_len)
            .u32(self.plain_len)
            .u8(self.codec as u8)
            .bytes(&self.hash);
    }

    pub(super) fn decode(d: &mut Decoder<'_>) -> Result<Child, DecodeError> {
        let child = Child {
            first_key: d.var_bytes(MAX_PATH_LEN)?.to_vec(),
            offset: d.u64()?,
            stored_len: d.u32()?,
            plain_len: d.u32()?,
            codec: Codec::decode(d.u8()?)?,
            hash: d.array()?,
        };
        // A node holds at least one record, and a sealed unit at least its
        // tag: anything smaller is malformed before it is ever opened.
        if child.plain_len == 0
            || child.plain_len > MAX_INDEX_NODE_LEN
            || !(TAG_LEN as u32..=MAX_INDEX_NODE_LEN + TAG_LEN as u32).contains(&child.stored_len)
        {
            return Err(malformed("index node", "child length out of range"));
        }
        if child.offset.checked_add(FRAME_LEN as u64 + u64::from(child.stored_len)).is_none() {
            return Err(malformed("index node", "child offset out of range"));
        }
        Ok(child)
    }

    /// Bytes the node takes in the file: its frame and sealed bytes (the
    /// stored length is checked against its limit when decoded).
    pub(crate) fn unit_len(&self) -> u32 {
        FRAME_LEN as u32 + self.stored_len
    }

    /// Encoded length, for writers filling a node up to its target size.
    pub(crate) fn encoded_len(&self) -> usize {
        MIN_CHILD_LEN + self.first_key.len()
    }
}

/// Children of `d`. Their key order depends on the tree; readers check it
/// as they walk.
pub(super) fn decode_children(d: &mut Decoder<'_>) -> Result<Vec<Child>, DecodeError> {
    let count = checked_count(d.u32()?.into(), MIN_CHILD_LEN, d)?;
    let mut children: Vec<Child> = Vec::with_capacity(count);
    for _ in 0..count {
        children.push(Child::decode(d)?);
    }
    Ok(children)
}

pub(super) fn encode_children(children: &[Child], e: &mut Encoder) {
    e.u32(children.len() as u32);
    for c in children {
        c.encode(e);
    }
}

/// A count read from input can claim at most as many records as the
/// remaining bytes can hold.
pub(super) fn checked_count(count: u64, min_len: usize, d: &Decoder<'_>) -> Result<usize, DecodeError> {
    if count > (d.remaining() / min_len) as u64 {
        return Err(malformed("index node", "count larger than the node"));
    }
    Ok(count as usize)
}

/// An inner node of either tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Internal {
    /// Position within its level of the first child.
    pub(crate) first_child_seq: u64,
    pub(crate) children: Vec<Child>,
}

impl Internal {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u64(self.first_child_seq);
        encode_children(&self.children, &mut e);
        e.buf
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Internal, DecodeError> {
        let mut d = Decoder::new(bytes, "index node");
        let first_child_seq = d.u64()?;
        let children = decode_children(&mut d)?;
        d.finish()?;
        if children.is_empty() {
            return Err(malformed("index node", "no children"));
        }
        Ok(Internal { first_child_seq, children })
    }
}

/// A leaf of an entries run: records in strictly increasing path order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntriesLeaf {
    pub(crate) entries: Vec<Record>,
}

impl EntriesLeaf {
    pub(crate) fn encode(entries: &[Record]) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(entries.len() as u32);
        for entry in entries {
            encode_record(entry, &mut e);
        }
        e.buf
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<EntriesLeaf, DecodeError> {
        let mut d = Decoder::new(bytes, "index leaf");
        let count = checked_count(d.u32()?.into(), SHORTEST_RECORD_LEN, &d)?;
        let mut entries: Vec<Record> = Vec::with_capacity(count);
        for _ in 0..count {
            let entry = decode_record(&mut d)?;
            if entries.last().is_some_and(|prev| super::path_cmp(prev.path(), entry.path()).is_ge()) {
                return Err(malformed("index leaf", "paths not in strictly increasing order"));
            }
            entries.push(entry);
        }
        d.finish()?;
        if entries.is_empty() {
            return Err(malformed("index leaf", "no entries"));
        }
        Ok(EntriesLeaf { entries })
    }
}

/// Where a data page is and how it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageRecord {
    /// Byte offset of the sealed page in the archive.
    pub(crate) offset: u64,
    /// Sealed length, tag included.
    pub(crate) stored_len: u32,
    /// Plaintext length.
    pub(crate) plain_len: u32,
    pub(crate) codec: Codec,
    /// The page's unit hash.
    pub(crate) hash: Hash,
}

impl PageRecord {
    /// Bytes the page takes in the file: its frame and sealed bytes.
    pub(crate) fn unit_len(&self) -> u32 {
        FRAME_LEN as u32 + self.stored_len
    }

    /// Where the page's bytes (frame and sealed) end in the file.
    pub(crate) fn end(&self) -> u64 {
        self.offset + FRAME_LEN as u64 + u64::from(self.stored_len)
    }
}

/// Encoded length of one page record.
pub(crate) const PAGE_RECORD_LEN: usize = 8 + 4 + 4 + 1 + HASH_LEN;

/// A leaf of the pages tree: consecutive page records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PagesLeaf {
    /// Number of the first page recorded here.
    pub(crate) first_page: u64,
    /// Data-stream offset of that page's first byte.
    pub(crate) first_offset: u64,
    pub(crate) pages: Vec<PageRecord>,
}

impl PagesLeaf {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u64(self.first_page).u64(self.first_offset).u32(self.pages.len() as u32);
        for p in &self.pages {
            e.u64(p.offset).u32(p.stored_len).u32(p.plain_len).u8(p.codec as u8).bytes(&p.hash);
        }
        e.buf
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<PagesLeaf, DecodeError> {
        let mut d = Decoder::new(bytes, "page table leaf");
        let first_page = d.u64()?;
        let first_offset = d.u64()?;
        let count = checked_count(d.u32()?.into(), PAGE_RECORD_LEN, &d)?;
        let mut pages: Vec<PageRecord> = Vec::with_capacity(count);
        for _ in 0..count {
            let p = PageRecord {
                offset: d.u64()?,
                stored_len: d.u32()?,
                plain_len: d.u32()?,
                codec: Codec::decode(d.u8()?)?,
                hash: d.array()?,
            };
            if p.plain_len == 0
                || p.plain_len > MAX_PAGE_PLAIN_LEN
                || !(TAG_LEN as u32..=MAX_PAGE_STORED_LEN).contains(&p.stored_len)
            {
                return Err(malformed("page record", "length out of range"));
            }
            if p.offset.checked_add(FRAME_LEN as u64 + u64::from(p.stored_len)).is_none() {
                return Err(malformed("page record", "offset out of range"));
            }
            if pages.last().is_some_and(|q: &PageRecord| p.offset < q.end()) {
                return Err(malformed("page record", "pages overlap or are out of order"));
            }
            pages.push(p);
        }
        d.finish()?;
        if pages.is_empty() {
            return Err(malformed("page table leaf", "no pages"));
        }
        let plain: u64 = pages.iter().map(|p| u64::from(p.plain_len)).sum();
        if first_offset.checked_add(plain).is_none() || first_page.checked_add(count as u64).is_none() {
            return Err(malformed("page table leaf", "offsets out of range"));
        }
        Ok(PagesLeaf { first_page, first_offset, pages })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::{
        Entry, EntryKind, Extent, Metadata, SparseMap, Xattr, MAX_FILE_SIZE, MAX_SPARSE_SEGMENTS,
        MAX_XATTRS_LEN,
    };

    fn entry(path: &[u8], kind: EntryKind, extent: Option<Extent>) -> Entry {
        Entry { path: path.to_vec(), kind, meta: Metadata::new(0o644, 1, 2, -5, 7), extent, sparse: None }
    }

    fn sample_entries() -> Vec<Record> {
        let sha = [8; 32];
        let ext = Extent::whole(400, 1500, true);
        vec![
            entry(b"d", EntryKind::Dir, None),
            entry(b"d/\xff", EntryKind::File { size: 1500, sha256: sha }, Some(ext)),
            entry(
                b"h",
                EntryKind::Hardlink { target: b"d/\xff".to_vec(), size: 1500, sha256: sha },
                Some(Extent { linked: false, ..ext }),
            ),
            entry(b"l", EntryKind::Symlink { target: b"../x".to_vec() }, None),
            entry(
                b"m",
                EntryKind::File { size: 1 << 20, sha256: sha },
                Some(Extent { chunks: 5, ..Extent::whole(1 << 30, 1 << 20, false) }),
            ),
            Entry {
                meta: Metadata::new(0o644, 1, 2, -5, 7)
                    .with_names(Some(b"\xffuser".to_vec()), Some(b"staff".to_vec()))
                    .with_xattrs(vec![
                        Xattr { name: b"system.posix_acl_access".to_vec(), value: vec![2, 0, 0, 0] },
                        Xattr { name: b"user.empty".to_vec(), value: Vec::new() },
                    ]),
                sparse: Some(SparseMap::new(vec![(10, 5), (100, 995)], 1 << 40).unwrap()),
                ..entry(
                    b"sparse",
                    EntryKind::File { size: 1 << 40, sha256: sha },
                    Some(Extent::whole(1900, 1000, false)),
                )
            },
        ]
        .into_iter()
        .map(Record::Put)
        .chain([Record::Delete(b"z/gone".to_vec())])
        .collect()
    }

    /// The largest entry the format allows (a hard link with two longest
    /// paths, longest names, a full xattr list and sparse map) fits one
    /// index node.
    #[test]
    fn the_largest_entry_fits_a_node() {
        // 64 components of 255 bytes: 16383 bytes.
        let long = vec![vec![b'p'; 255]; MAX_PATH_LEN / 256].join(&b'/');
        let xattrs = (0u8..)
            .map(|i| Xattr { name: vec![b'n', b'A' + i], value: vec![0; 4096] })
            .take_while({
                let mut total = 0;
                move |x| {
                    total += 5 + x.name.len() + x.value.len();
                    total <= MAX_XATTRS_LEN
                }
            })
            .collect();
        let segments = (0..MAX_SPARSE_SEGMENTS as u64).map(|i| (i * 2, 1)).collect();
        let big = Entry {
            meta: Metadata::new(0o644, 1, 2, -5, 7)
                .with_names(Some(vec![b'u'; 255]), Some(vec![b'g'; 255]))
                .with_xattrs(xattrs),
            // The largest size a reader accepts (FORMAT.md §3.5, B6).
            sparse: Some(SparseMap::new(segments, crate::format::MAX_FILE_SIZE).unwrap()),
            ..entry(
                &long,
                EntryKind::Hardlink {
                    target: long.clone(),
                    size: crate::format::MAX_FILE_SIZE,
                    sha256: [0; 32],
                },
                Some(Extent::whole(0, MAX_SPARSE_SEGMENTS as u64, false)),
            )
        };
        let leaf = EntriesLeaf::encode(&[Record::Put(big.clone())]);
        assert!(leaf.len() <= MAX_INDEX_NODE_LEN as usize, "{} bytes", leaf.len());
        assert_eq!(EntriesLeaf::decode(&leaf).unwrap().entries, [Record::Put(big)]);
    }

    /// A child record for round-trip tests (root's too).
    pub(crate) fn child(key: &[u8]) -> Child {
        Child {
            first_key: key.to_vec(),
            offset: 100,
            stored_len: 50,
            plain_len: 60,
            codec: Codec::Zstd,
            hash: [3; 32],
        }
    }

    #[test]
    fn nodes_round_trip() {
        let entries = sample_entries();
        assert_eq!(EntriesLeaf::decode(&EntriesLeaf::encode(&entries)).unwrap().entries, entries);
        let pages = PagesLeaf {
            first_page: 3,
            first_offset: 1 << 20,
            pages: vec![
                PageRecord {
                    offset: 100,
                    stored_len: 50,
                    plain_len: 1000,
                    codec: Codec::Zstd,
                    hash: [1; 32],
                },
                PageRecord {
                    offset: 170,
                    stored_len: 1016,
                    plain_len: 1000,
                    codec: Codec::Raw,
                    hash: [2; 32],
                },
            ],
        };
        assert_eq!(PagesLeaf::decode(&pages.encode()).unwrap(), pages);
        let node = Internal { first_child_seq: 9, children: vec![child(b"a"), child(b"b")] };
        assert_eq!(Internal::decode(&node.encode()).unwrap(), node);
    }

    #[test]
    fn duplicate_and_unordered_paths_are_refused() {
        let mut entries = sample_entries();
        entries.swap(0, 1);
        assert!(EntriesLeaf::decode(&EntriesLeaf::encode(&entries)).is_err());
        let mut entries = sample_entries();
        entries[2] = Record::Delete(entries[1].path().to_vec());
        assert!(EntriesLeaf::decode(&EntriesLeaf::encode(&entries)).is_err());
    }

    #[test]
    fn overlapping_pages_are_refused() {
        let rec =
            PageRecord { offset: 100, stored_len: 50, plain_len: 1000, codec: Codec::Zstd, hash: [1; 32] };
        let leaf =
            PagesLeaf { first_page: 0, first_offset: 0, pages: vec![rec, PageRecord { offset: 169, ..rec }] };
        assert!(PagesLeaf::decode(&leaf.encode()).is_err());
        let leaf = PagesLeaf {
            first_page: 0,
            first_offset: 0,
            pages: vec![PageRecord { offset: u64::MAX - 10, ..rec }],
        };
        assert!(PagesLeaf::decode(&leaf.encode()).is_err());
    }

    #[test]
    fn records_below_the_smallest_sealed_unit_are_malformed() {
        // A unit shorter than its tag, or a node of no bytes, was opened
        // and reported as failed authentication, though no writer makes it.
        let rec = PageRecord { offset: 100, stored_len: 16, plain_len: 1, codec: Codec::Raw, hash: [1; 32] };
        let leaf = |rec| PagesLeaf { first_page: 0, first_offset: 0, pages: vec![rec] }.encode();
        assert!(PagesLeaf::decode(&leaf(rec)).is_ok(), "the smallest page record");
        let err = PagesLeaf::decode(&leaf(PageRecord { stored_len: 15, ..rec })).unwrap_err();
        assert_eq!((err.what, err.why), ("page record", "length out of range"));
        let node = |c| Internal { first_child_seq: 0, children: vec![c] }.encode();
        let smallest = Child { stored_len: 16, plain_len: 1, ..child(b"a") };
        assert!(Internal::decode(&node(smallest.clone())).is_ok(), "the smallest child");
        for short in [Child { stored_len: 15, ..smallest.clone() }, Child { plain_len: 0, ..smallest }] {
            let err = Internal::decode(&node(short)).unwrap_err();
            assert_eq!(err.why, "child length out of range");
        }
    }

    /// A chunked file (format v4) is neither linked nor sparse, and its
    /// count is bounded by its size; each breach is one malformed entry.
    #[test]
    fn a_chunked_file_is_refused_linked_sparse_or_overcounted() {
        let sha = [8; 32];
        let chunked = |size, chunks, linked| {
            let extent = Extent { chunks, linked, ..Extent::whole(1 << 30, size, false) };
            entry(b"m", EntryKind::File { size, sha256: sha }, Some(extent))
        };
        let refusal =
            |e: Entry| EntriesLeaf::decode(&EntriesLeaf::encode(&[Record::Put(e)])).unwrap_err().why;
        assert_eq!(refusal(chunked(10, 11, false)), "a chunk count out of range");
        assert_eq!(refusal(chunked(10, 2, true)), "unknown file flags");
        let sparse =
            Entry { sparse: Some(SparseMap::new(vec![(0, 10)], 100).unwrap()), ..chunked(100, 2, false) };
        assert_eq!(refusal(sparse), "a chunked file with a sparse map");
        // The encoder never writes a count of 0 with the flag: the bytes do.
        let mut zero = EntriesLeaf::encode(&[Record::Put(chunked(10, 1, false))]);
        let len = zero.len();
        zero[len - 4..].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(EntriesLeaf::decode(&zero).unwrap_err().why, "a chunk count out of range");
        let at_end = Entry {
            extent: Some(Extent { chunks: 1, ..Extent::whole(MAX_FILE_SIZE - 8, 10, false) }),
            ..chunked(10, 1, false)
        };
        assert_eq!(refusal(at_end), "chunk list range overflows");
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        let mut e = Encoder::default();
        e.u32(u32::MAX);
        assert!(EntriesLeaf::decode(&e.buf).is_err());
        assert!(Internal::decode(&[0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255]).is_err());
    }

    #[test]
    fn every_truncation_fails_cleanly() {
        let bytes = EntriesLeaf::encode(&sample_entries());
        for len in 0..bytes.len() {
            assert!(EntriesLeaf::decode(&bytes[..len]).is_err(), "len {len}");
        }
    }
}
