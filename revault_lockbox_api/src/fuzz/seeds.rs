//! Seeds cut from real archives: the key-slot table and recipient bodies
//! of an archive locked every way, and the plaintext of every index node.

use std::io::Cursor;

use super::{
    identities, key_file, Seed, ARCHIVE_ID, INDEX_ENTRIES_LEAF, INDEX_INTERNAL, INDEX_PAGES_LEAF, INDEX_ROOT,
    KEY_SLOT_LEN, PASSWORD,
};
use crate::archive::Archive;
use crate::crypto::{KdfParams, Password};
use crate::error::Result;
use crate::format::{Child, IndexNodeId, Internal, KeySlot, Table};
use crate::index::TreeReader;
use crate::keys::{Identity, KeySet};

/// Seeds for [`recipient_slot`](super::recipient_slot) and
/// [`slot_table`](super::slot_table): the slot table of an archive locked
/// with [`PASSWORD`] (cheap), [`KEY_FILE`](super::KEY_FILE) and the
/// recipients of [`IDENTITIES`](super::IDENTITIES), written under
/// [`ARCHIVE_ID`]; and each
/// recipient slot's body, named by kind.
pub fn key_seeds() -> Result<(Vec<u8>, Vec<Seed>)> {
    let keys = KeySet::new()
        .password(&Password::from(PASSWORD))
        .key_file(key_file())
        .recipients(identities().iter().filter_map(Identity::to_recipient))
        .allow_mixed_recipients(true);
    let content_key =
        crate::crypto::ContentKey::random().map_err(crate::error::Error::stream("drawing a key"))?;
    let slots = keys.slots(&ARCHIVE_ID, &content_key, KdfParams::INSECURE_FOR_TESTS)?;
    let mut table = Vec::new();
    let mut bodies = Vec::new();
    for slot in &slots {
        table.extend_from_slice(&crate::format::encode_slot(slot, KEY_SLOT_LEN));
        if let KeySlot::Recipient(body) = slot {
            let kind = crate::keys::stanza_types(body).unwrap_or_default().join("-");
            bodies.push((kind, body.clone()));
        }
    }
    Ok((table, bodies))
}

/// Seeds for [`index`](super::index): the decrypted plaintexts of the root and of every
/// index node of `archive`, each after the byte that selects its decoder;
/// the root first, then each tree (entries, pages) top-down in key order.
pub fn index_plaintexts(archive: &[u8], password: &Password) -> Result<Vec<Vec<u8>>> {
    let opened = Archive::open(Cursor::new(archive), password)?;
    let root = opened.root();
    // The root's encoding is canonical: its decoder refuses anything else.
    let mut out = vec![[&[INDEX_ROOT], &root.encode()[..]].concat()];
    let newest = &root.runs.last().expect("a root has a run").top;
    for (table, top) in [(Table::Entries, newest), (Table::Pages, &root.sessions.last().pages)] {
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
    use crate::format::{decode_slot, EntriesLeaf, PagesLeaf, Root};
    use crate::keys::{unwrap_content_key, Unlock};
    use crate::session::{ArchiveWriter, CreateOptions, Metadata};

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

    #[test]
    fn key_seeds_unlock_with_the_test_keys() {
        let (table, bodies) = key_seeds().unwrap();
        let kinds: Vec<&str> = bodies.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, ["X25519", "mlkem768x25519"]);
        let aad = crate::format::recipient_slot_aad(&ARCHIVE_ID);
        for (_, body) in &bodies {
            assert!(unwrap_content_key(identities(), body, &aad).unwrap().is_some());
        }
        let slots: Vec<KeySlot> = table.chunks(KEY_SLOT_LEN).map(|s| decode_slot(s).unwrap()).collect();
        assert!(Unlock::KeyFile(key_file())
            .content_key(&ARCHIVE_ID, &slots, crate::crypto::DEFAULT_KDF_BUDGET)
            .is_ok());
        assert!(Unlock::Password(&Password::from(PASSWORD))
            .content_key(&ARCHIVE_ID, &slots, crate::crypto::DEFAULT_KDF_BUDGET)
            .is_ok());
        crate::fuzz::slot_table(&table);
    }
}
