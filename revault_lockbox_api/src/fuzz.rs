//! Entry points for fuzzers (feature `fuzzing`): each decoder that reads
//! bytes from a file, callable in one line from any fuzzing harness
//! (cargo-afl, cargo-fuzz) and from the corpus replay test. None may panic,
//! whatever the input. Also what a seed generator needs to cut real
//! archives into the inputs of each target.

use std::io::Cursor;

use crate::format::{
    decode_slot, Child, EntriesLeaf, HeaderPrefix, IndexNodeId, Internal, KeySlot, PagesLeaf, Root, Table,
    Trailer, DATA_START, MAX_PAGE_PLAIN_LEN,
};
use crate::index::TreeReader;
use crate::{Archive, Password, Result};

/// Length of the header prefix, the input of [`header`].
pub const HEADER_PREFIX_LEN: usize = crate::format::HEADER_PREFIX_LEN;
/// Length of one key slot, the input of [`key_slots`]; the first slot
/// starts right after the header prefix.
pub const KEY_SLOT_LEN: usize = crate::format::KEY_SLOT_LEN;
/// Length of the trailer at the end of every archive.
pub const TRAILER_LEN: usize = crate::format::TRAILER_LEN;

/// First byte of an [`index`] input that decodes the rest as an entries leaf.
pub const INDEX_ENTRIES_LEAF: u8 = 0;
/// First byte of an [`index`] input that decodes the rest as a page-table leaf.
pub const INDEX_PAGES_LEAF: u8 = 1;
/// First byte of an [`index`] input that decodes the rest as an internal node.
pub const INDEX_INTERNAL: u8 = 2;
/// First byte of an [`index`] input that decodes the rest as the root.
pub const INDEX_ROOT: u8 = 3;

/// The header prefix.
pub fn header(data: &[u8]) {
    if let Ok(prefix) = <&[u8; HEADER_PREFIX_LEN]>::try_from(data) {
        let _ = HeaderPrefix::decode(prefix);
    }
}

/// One key slot (padded or cut to its fixed size).
pub fn key_slots(data: &[u8]) {
    let mut slot = data.to_vec();
    slot.resize(KEY_SLOT_LEN, 0);
    let _ = decode_slot(&slot);
}

/// A trailer; the first 8 bytes give the offset the trailer claims to sit at.
pub fn trailer(data: &[u8]) {
    if data.len() == 8 + TRAILER_LEN {
        let offset = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let _ = Trailer::decode(data[8..].try_into().expect("trailer length"), offset);
    }
}

/// An index node or root plaintext, after opening and decompression: the
/// first byte picks the decoder (modulo 4: [`INDEX_ENTRIES_LEAF`],
/// [`INDEX_PAGES_LEAF`], [`INDEX_INTERNAL`], [`INDEX_ROOT`]).
pub fn index(data: &[u8]) {
    let Some((&which, node)) = data.split_first() else { return };
    match which % 4 {
        INDEX_ENTRIES_LEAF => drop(EntriesLeaf::decode(node)),
        INDEX_PAGES_LEAF => drop(PagesLeaf::decode(node)),
        INDEX_INTERNAL => drop(Internal::decode(node)),
        _ => drop(Root::decode(node)),
    }
}

/// A page body after opening: zstd decompression to the length the first
/// four bytes claim (capped at the format's page limit).
pub fn page(data: &[u8]) {
    if data.len() >= 4 {
        let len = u32::from_le_bytes(data[..4].try_into().expect("4 bytes")).min(MAX_PAGE_PLAIN_LEN);
        let _ = crate::pipeline::decompress(&data[4..], len as usize);
    }
}

/// The password fuzzers use for whole archives.
pub const PASSWORD: &str = "fuzz";

/// A whole archive: open with [`PASSWORD`], verify, list, look one path up.
/// Archives with a password slot (any of them: the reader tries several)
/// that asks for more than a cheap Argon2id cost are skipped, so that the
/// fuzzer spends its time in the decoders, not in the KDF.
pub fn archive(data: &[u8]) {
    let slots = data.get(HEADER_PREFIX_LEN..DATA_START as usize).unwrap_or_default();
    let cheap = slots.chunks(KEY_SLOT_LEN).all(|s| match decode_slot(s) {
        Ok(KeySlot::Password(p)) => p.m_kib <= 64 && p.t <= 2 && p.p <= 2,
        _ => true,
    });
    if !cheap {
        return;
    }
    if let Ok(a) = Archive::open(Cursor::new(data), &Password::from(PASSWORD)) {
        let _ = a.verify();
        let _ = a.info();
        let _ = a.find(b"a");
    }
}

/// Seeds for [`index`]: the decrypted plaintexts of the root and of every
/// index node of `archive`, each after the byte that selects its decoder;
/// the root first, then each tree (entries, pages) top-down in key order.
pub fn index_plaintexts(archive: &[u8], password: &Password) -> Result<Vec<Vec<u8>>> {
    let opened = Archive::open(Cursor::new(archive), password)?;
    let root = opened.root();
    // The root's encoding is canonical: its decoder refuses anything else.
    let mut out = vec![[&[INDEX_ROOT], &root.encode()[..]].concat()];
    for (table, top) in [(Table::Entries, &root.entries), (Table::Pages, &root.pages)] {
        node_plaintexts(&opened.tree(table), top.height.saturating_sub(1), 0, &top.children, &mut out)?;
    }
    Ok(out)
}

/// Appends the plaintexts of `children` (of `level`, the first numbered
/// `first_seq`) and of every node below them to `out`.
fn node_plaintexts(
    reader: &TreeReader<'_>,
    level: u8,
    first_seq: u64,
    children: &[Child],
    out: &mut Vec<Vec<u8>>,
) -> Result<()> {
    for (i, child) in children.iter().enumerate() {
        let id = IndexNodeId { table: reader.table, level, seq: first_seq + i as u64 };
        let plain = reader.node(&id, child)?;
        let kind = match (level, reader.table) {
            (0, Table::Entries) => INDEX_ENTRIES_LEAF,
            (0, Table::Pages) => INDEX_PAGES_LEAF,
            _ => INDEX_INTERNAL,
        };
        out.push([&[kind], &plain[..]].concat());
        if level > 0 {
            let node = Internal::decode(&plain)?;
            node_plaintexts(reader, level - 1, node.first_child_seq, &node.children, out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ArchiveWriter, CreateOptions, KdfParams, Metadata};

    #[test]
    fn index_seeds_are_the_root_and_every_node() {
        let password = Password::from(PASSWORD);
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
        w.add_file("a", &Metadata::new(0o644, 0, 0, 0, 0), 3, &b"abc"[..]).unwrap();
        let seeds = index_plaintexts(&w.finish().unwrap(), &password).unwrap();
        let kinds: Vec<u8> = seeds.iter().map(|s| s[0]).collect();
        assert_eq!(kinds, [INDEX_ROOT, INDEX_ENTRIES_LEAF, INDEX_PAGES_LEAF]);
        assert!(Root::decode(&seeds[0][1..]).is_ok());
        assert!(EntriesLeaf::decode(&seeds[1][1..]).is_ok() && PagesLeaf::decode(&seeds[2][1..]).is_ok());
    }
}
