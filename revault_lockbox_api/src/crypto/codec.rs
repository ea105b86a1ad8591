//! The page codec: compress when it pays, seal; open, decompress. One
//! place for data pages and index nodes alike.

use super::compress::{compress_into, decompress, decompress_into, sealed_capacity, zstd_compress_into};
use super::{PageNonce, SessionKeys};
use crate::error::{Error, Result};
use crate::format::{
    unit_hash, Child, Codec, Frame, Hash, IndexNodeId, PageRecord, Trailer, ARCHIVE_ID_LEN, FRAME_LEN,
    TAG_LEN,
};

/// What is being sealed, for the fuzzing hook that swaps plaintexts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sealing {
    Root,
    Node(IndexNodeId),
    Page(u64),
}

/// The plaintext to seal as `what`: `plain`, unless a fuzz target swaps it
/// (feature `fuzzing`), so that the decoders behind the MAC get its bytes.
pub(crate) fn to_seal(archive_id: &[u8; ARCHIVE_ID_LEN], what: Sealing, plain: Vec<u8>) -> Vec<u8> {
    #[cfg(feature = "fuzzing")]
    return super::seam::swap_plaintext(archive_id, what, plain);
    #[cfg(not(feature = "fuzzing"))]
    {
        let _ = (archive_id, what);
        plain
    }
}

/// A page or node compressed (or not) and sealed, ready to write: its
/// frame, then its sealed bytes; `hash` is the unit hash of both.
pub(crate) struct Sealed {
    pub(crate) plain_len: u32,
    pub(crate) codec: Codec,
    pub(crate) frame: [u8; FRAME_LEN],
    pub(crate) bytes: Vec<u8>,
    pub(crate) hash: Hash,
}

impl Sealed {
    /// Sealed length, tag included, frame not.
    pub(crate) fn stored_len(&self) -> u32 {
        self.bytes.len() as u32
    }

    /// The page table's record of this data page, written at `offset`.
    pub(crate) fn page_record(&self, offset: u64) -> PageRecord {
        let (stored_len, plain_len, codec, hash) = (self.stored_len(), self.plain_len, self.codec, self.hash);
        PageRecord { offset, stored_len, plain_len, codec, hash }
    }

    /// Compresses `plain` when it pays and seals it; `frame_of` gives the
    /// frame for the codec and lengths, `seal` seals the buffer in place
    /// with that frame's associated data.
    fn new(
        plain: Vec<u8>,
        level: i32,
        frame_of: impl FnOnce(Codec, u32, u32) -> Frame,
        seal: impl FnOnce(&Frame, &mut Vec<u8>),
    ) -> Sealed {
        Sealed::into_buffers(plain, Vec::new(), level, frame_of, seal).0
    }

    /// [`new`](Self::new) into recycled buffers: `plain` holds the
    /// plaintext, `spare` is any buffer. Returns the sealed unit and the
    /// buffer it did not need (as it was, or holding the plaintext). Neither grows when both have
    /// [`page_buffer_capacity`] room for a plaintext of this length.
    fn into_buffers(
        plain: Vec<u8>,
        mut spare: Vec<u8>,
        level: i32,
        frame_of: impl FnOnce(Codec, u32, u32) -> Frame,
        seal: impl FnOnce(&Frame, &mut Vec<u8>),
    ) -> (Sealed, Vec<u8>) {
        let plain_len = plain.len() as u32;
        let (codec, mut bytes, left) = if compress_into(&plain, level, &mut spare) {
            (Codec::Zstd, spare, plain)
        } else {
            (Codec::Raw, plain, spare)
        };
        let frame = frame_of(codec, plain_len, (bytes.len() + TAG_LEN) as u32);
        bytes.reserve(TAG_LEN);
        seal(&frame, &mut bytes);
        let frame = frame.encode();
        let hash = unit_hash(&frame, &bytes);
        (Sealed { plain_len, codec, frame, bytes, hash }, left)
    }
}

/// Capacity of a page buffer that sealing never has to grow: room for a
/// page of `page_size` bytes, its zstd frame at worst, and the tag.
pub(crate) fn page_buffer_capacity(page_size: usize) -> usize {
    sealed_capacity(page_size)
}

/// zstd level of index nodes and the root: they are small (128 KiB at
/// most) and read often, and decompress as fast at this level as at 3.
/// The Linux tree's index: 3.97 MB at level 3, 3.86 at 6, 3.86 at 9
/// (docs/BENCHMARKS.md, "Larger pages for runs of small files").
const INDEX_LEVEL: i32 = 6;

/// Compresses (when it pays) and seals data page `number`, held in
/// `plain`, using `spare` for the frame; returns the sealed page and the
/// buffer it did not need (see [`Sealed::into_buffers`]).
pub(crate) fn seal_data_page(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    number: u64,
    plain: Vec<u8>,
    spare: Vec<u8>,
    level: i32,
) -> (Sealed, Vec<u8>) {
    let plain = to_seal(archive_id, Sealing::Page(number), plain);
    let frame_of = |codec, plain_len, stored_len| Frame::page(number, codec, plain_len, stored_len);
    Sealed::into_buffers(plain, spare, level, frame_of, |frame, buf| {
        keys.seal_page(PageNonce::data(number), &frame.aad(archive_id), buf)
    })
}

/// Checks a unit read from the file (`framed`: frame, then sealed bytes)
/// against what points to it: the frame it must have and its hash.
fn check_unit(framed: &[u8], expected: &Frame, hash: &Hash) -> bool {
    framed.len() >= FRAME_LEN
        && framed[..FRAME_LEN] == expected.encode()
        && unit_hash(&framed[..FRAME_LEN], &framed[FRAME_LEN..]) == *hash
}

/// Opens and decompresses data page `number` read from the archive
/// (`framed`: its frame and sealed bytes).
pub(crate) fn open_data_page(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    number: u64,
    record: &PageRecord,
    framed: Vec<u8>,
) -> Result<Vec<u8>> {
    open_data_page_into(keys, archive_id, number, record, framed, Vec::new()).0
}

/// [`open_data_page`] into recycled buffers: checks the frame and hash,
/// then opens a raw page into a buffer of its own with no copy beyond the
/// decryption (`framed` or `spare`, by AEAD backend:
/// [`SessionKeys::open_page_out`]), or a zstd page in place and
/// decompresses it into `spare` (which grows only when it has less room
/// than the page; its old bytes, of any length, are overwritten). Returns
/// the plaintext's buffer, or the error, and the buffer not needed.
pub(crate) fn open_data_page_into(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    number: u64,
    record: &PageRecord,
    mut framed: Vec<u8>,
    mut spare: Vec<u8>,
) -> (Result<Vec<u8>>, Vec<u8>) {
    let damaged = || Error::DamagedPage { number };
    let frame = Frame::page(number, record.codec, record.plain_len, record.stored_len);
    if !check_unit(&framed, &frame, &record.hash) {
        return (Err(damaged()), spare);
    }
    let aad = frame.aad(archive_id);
    let len = record.plain_len as usize;
    let malformed = |why| Error::StoredForm { what: format!("page {number}"), why };
    match record.codec {
        Codec::Raw if framed.len() == FRAME_LEN + len + TAG_LEN => {
            let (opened, left) = keys.open_page_out(PageNonce::data(number), &aad, framed, FRAME_LEN, spare);
            (opened.map_err(|_| damaged()), left)
        }
        Codec::Zstd => match keys.open_page_in_place(PageNonce::data(number), &aad, &mut framed[FRAME_LEN..])
        {
            Ok(body) => match decompress_into(&framed[FRAME_LEN..FRAME_LEN + body], len, &mut spare) {
                Ok(()) => (Ok(spare), framed),
                Err(why) => (Err(malformed(why)), spare),
            },
            Err(_) => (Err(damaged()), spare),
        },
        // Authenticated first: a raw page of the wrong length that opens
        // was written so by a key holder; one that does not is damage.
        Codec::Raw => {
            match keys.open_page_in_place(PageNonce::data(number), &aad, &mut framed[FRAME_LEN..]) {
                Ok(_) => (Err(malformed(RAW_LENGTH)), spare),
                Err(_) => (Err(damaged()), spare),
            }
        }
    }
}

/// What a raw unit whose length is not its plain length breaks.
const RAW_LENGTH: &str = "it is stored raw at another length than its plain length";

/// Compresses (when it pays) and seals index node `id`.
pub(crate) fn seal_index_node(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    id: &IndexNodeId,
    plain: Vec<u8>,
) -> Sealed {
    let plain = to_seal(archive_id, Sealing::Node(*id), plain);
    let frame_of = |codec, plain_len, stored_len| Frame::node(id, codec, plain_len, stored_len);
    Sealed::new(plain, INDEX_LEVEL, frame_of, |frame, buf| {
        keys.seal_index(PageNonce::index_node(id), &frame.aad(archive_id), buf)
    })
}

/// Opens and decompresses index node `id` read from the archive
/// (`framed`), after checking its frame and hash against `child`.
pub(crate) fn open_index_node(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    id: &IndexNodeId,
    child: &Child,
    mut framed: Vec<u8>,
) -> Result<Vec<u8>> {
    let what = || format!("index node {:?} level {} #{}", id.table, id.level, id.seq);
    let frame = Frame::node(id, child.codec, child.plain_len, child.stored_len);
    if !check_unit(&framed, &frame, &child.hash) {
        return Err(Error::tampered(format!("{} (frame or hash differs from its parent's record)", what())));
    }
    framed.drain(..FRAME_LEN);
    keys.open_index(PageNonce::index_node(id), &frame.aad(archive_id), &mut framed)
        .map_err(|_| Error::tampered(what()))?;
    expand(child.codec, framed, child.plain_len).map_err(|why| Error::StoredForm { what: what(), why })
}

/// Compresses and seals the root: always one zstd frame, so that its
/// length needs no codec field.
pub(crate) fn seal_root(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    plain: &[u8],
) -> Result<Sealed> {
    let mut frame = Vec::new();
    if !zstd_compress_into(plain, INDEX_LEVEL, &mut frame) {
        return Err(Error::Stream {
            action: "compressing the index root",
            source: std::io::Error::other("zstd failed"),
        });
    }
    let unit = Frame::root(plain.len() as u32, (frame.len() + TAG_LEN) as u32);
    frame.reserve_exact(TAG_LEN);
    keys.seal_index(PageNonce::single(), &unit.aad(archive_id), &mut frame);
    let encoded = unit.encode();
    let hash = unit_hash(&encoded, &frame);
    Ok(Sealed { plain_len: plain.len() as u32, codec: Codec::Zstd, frame: encoded, bytes: frame, hash })
}

/// Opens and decompresses the root read from the archive (`framed`),
/// after checking its frame and hash against the trailer's.
pub(crate) fn open_root(
    keys: &SessionKeys,
    archive_id: &[u8; ARCHIVE_ID_LEN],
    trailer: &Trailer,
    mut framed: Vec<u8>,
) -> Result<Vec<u8>> {
    let frame = Frame::root(trailer.root_plain_len, trailer.root_stored_len);
    if !check_unit(&framed, &frame, &trailer.root_hash) {
        return Err(Error::tampered("index root (frame or hash differs from the trailer's)"));
    }
    framed.drain(..FRAME_LEN);
    keys.open_index(PageNonce::single(), &frame.aad(archive_id), &mut framed)
        .map_err(|_| Error::tampered("index root"))?;
    expand(Codec::Zstd, framed, trailer.root_plain_len)
        .map_err(|why| Error::StoredForm { what: "index root".into(), why })
}

/// Seals a session header's body under the session's index key, with
/// the header's clear part as associated data.
pub(crate) fn seal_session_body(keys: &SessionKeys, clear: &[u8], mut body: Vec<u8>) -> Vec<u8> {
    body.reserve_exact(TAG_LEN);
    keys.seal_index(PageNonce::session_header(), clear, &mut body);
    body
}

/// Opens a session header's sealed body.
pub(crate) fn open_session_body(keys: &SessionKeys, clear: &[u8], mut sealed: Vec<u8>) -> Result<Vec<u8>> {
    keys.open_index(PageNonce::session_header(), clear, &mut sealed)
        .map_err(|_| Error::tampered("session header"))?;
    Ok(sealed)
}

/// The plaintext of an opened unit: as is, or decompressed to exactly
/// `plain_len` bytes.
fn expand(codec: Codec, bytes: Vec<u8>, plain_len: u32) -> std::result::Result<Vec<u8>, &'static str> {
    match codec {
        Codec::Raw if bytes.len() == plain_len as usize => Ok(bytes),
        Codec::Raw => Err(RAW_LENGTH),
        Codec::Zstd => decompress(&bytes, plain_len as usize),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::ContentKey;

    const ID: [u8; ARCHIVE_ID_LEN] = [9; ARCHIVE_ID_LEN];

    /// Data page 7 with the stored form `stored` as a key holder seals it:
    /// its frame, hash and tag all check. Returns its record and bytes.
    fn sealed(
        keys: &SessionKeys,
        codec: Codec,
        plain_len: u32,
        mut stored: Vec<u8>,
    ) -> (PageRecord, Vec<u8>) {
        let stored_len = (stored.len() + TAG_LEN) as u32;
        let frame = Frame::page(7, codec, plain_len, stored_len);
        keys.seal_page(PageNonce::data(7), &frame.aad(&ID), &mut stored);
        let encoded = frame.encode();
        let hash = unit_hash(&encoded, &stored);
        (PageRecord { offset: 0, stored_len, plain_len, codec, hash }, [&encoded[..], &stored].concat())
    }

    #[test]
    fn a_wrong_stored_form_that_authenticates_is_malformed_not_damage() {
        let keys = SessionKeys::derive(&ContentKey::from_bytes(&[1; 32]), &[2; 32]);
        let plain = b"a page of text, a page of text. ".repeat(64);
        let len = plain.len() as u32;
        let frame = zstd::bulk::compress(&plain, 3).unwrap();
        let mut undeclared = zstd::bulk::Compressor::new(3).unwrap();
        undeclared.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false)).unwrap();
        let undeclared = undeclared.compress(&plain).unwrap();
        let skippable = [&[0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0][..], &[0; 4], &frame].concat();
        // 16 MiB of zeros in a few hundred bytes, the page saying 2 KiB:
        // refused from the frame's header, before any is decompressed.
        let bomb = zstd::bulk::compress(&vec![0u8; 16 << 20], 1).unwrap();
        let (record, bytes) = sealed(&keys, Codec::Zstd, len, frame.clone());
        assert_eq!(open_data_page(&keys, &ID, 7, &record, bytes).unwrap(), plain);
        let cases = [
            ("trailing bytes", Codec::Zstd, len, [&frame[..], b"x"].concat()),
            ("a second frame", Codec::Zstd, 2 * len, [&frame[..], &frame].concat()),
            ("a skippable frame first", Codec::Zstd, len, skippable),
            ("no declared size", Codec::Zstd, len, undeclared),
            ("a declared size that is not plain_len", Codec::Zstd, len - 1, frame.clone()),
            ("a zstd bomb", Codec::Zstd, len, bomb),
            ("a raw page of another length", Codec::Raw, len, plain.clone()[1..].to_vec()),
        ];
        for (name, codec, plain_len, stored) in cases {
            let (record, bytes) = sealed(&keys, codec, plain_len, stored);
            let err = open_data_page(&keys, &ID, 7, &record, bytes.clone()).unwrap_err();
            assert!(matches!(err, Error::StoredForm { .. }), "{name}: {err}");
            assert!(err.to_string().contains("page 7 authenticates, but"), "{name}: {err}");
            // The same bytes, one flipped: damage, as before.
            let mut flipped = bytes;
            *flipped.last_mut().unwrap() ^= 1;
            let mut record = record;
            record.hash = unit_hash(&flipped[..FRAME_LEN], &flipped[FRAME_LEN..]);
            let err = open_data_page(&keys, &ID, 7, &record, flipped).unwrap_err();
            assert!(matches!(err, Error::DamagedPage { number: 7 }), "{name}, flipped: {err}");
        }
    }
}
