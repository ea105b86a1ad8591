//! What the BLAKE3 commitments add to the AEAD: a key holder (every
//! password holder and recipient has the content key) can seal a page or a
//! node that authenticates in the place of another, but not one with the
//! same hash, so every reader refuses it (FORMAT.md §3.4, §3.8).

use std::io::{Cursor, Read};

use crate::archive::Archive;
use crate::crypto::{seal_data_page, seal_index_node, KdfParams, Password};
use crate::error::Error;
use crate::format::{IndexNodeId, Table, FRAME_LEN};
use crate::session::{ArchiveWriter, CreateOptions, Metadata};

fn random(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// An archive of one incompressible file of one 4 KiB page (stored raw,
/// so a replacement has the same length).
fn archive() -> Vec<u8> {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).page_size(4096);
    let mut w = ArchiveWriter::new(Vec::new(), &Password::from("k"), options).unwrap();
    let data = random(4096, 7);
    w.add_file("f", &Metadata::new(0o644, 0, 0, 0, 0), 4096, &data[..]).unwrap();
    w.finish().unwrap()
}

#[test]
fn a_page_resealed_by_a_key_holder_is_refused_by_its_hash() {
    let bytes = archive();
    let a = Archive::open(Cursor::new(bytes.clone()), &Password::from("k")).unwrap();
    let record = a.pages_leaf_at(0).unwrap().pages[0];
    let keys = keys_of(&a);
    // Same key, nonce, frame and length: the AEAD alone would accept it.
    let (forged, _) = seal_data_page(&keys, &a.archive_id, 0, random(4096, 99), Vec::new(), 3);
    assert_eq!((forged.frame.len() + forged.bytes.len()) as u32, record.unit_len());
    let at = record.offset as usize + FRAME_LEN;
    let mut tampered = bytes.clone();
    tampered[at..at + forged.bytes.len()].copy_from_slice(&forged.bytes);
    let b = Archive::open(Cursor::new(tampered), &Password::from("k")).unwrap();
    let mut out = Vec::new();
    let err = b.open_file("f").unwrap().read_to_end(&mut out).unwrap_err();
    let inner = err.get_ref().and_then(|e| e.downcast_ref::<Error>());
    assert!(matches!(inner, Some(Error::DamagedPage { number: 0 })), "{err:?}");
    assert!(!b.verify().is_ok_and(|r| r.is_ok()), "verify refuses it");
}

#[test]
fn a_leaf_resealed_by_a_key_holder_is_refused_by_its_parent_hash() {
    let bytes = archive();
    let a = Archive::open(Cursor::new(bytes.clone()), &Password::from("k")).unwrap();
    let top = a.root().runs[0].top.children[0].clone();
    let tree = a.tree_with(&keys_of(&a), Table::Entries);
    let id = IndexNodeId { table: Table::Entries, level: 0, seq: 0 };
    let plain = tree.node(&id, &top).unwrap();
    // A different leaf (the file's `linked` flag flipped, its last byte)
    // sealed under the same key and id: a valid AEAD in the old one's place.
    let mut changed = plain.clone();
    let last = changed.len() - 1;
    changed[last] ^= 1;
    let forged = seal_index_node(&keys_of(&a), &a.archive_id, &id, changed);
    // The leaf's bytes are fixed (fixed content and metadata), so its
    // stored length is too: the forgery takes exactly the old one's place.
    assert_eq!(forged.bytes.len() as u32, top.stored_len);
    let at = top.offset as usize;
    let mut tampered = bytes.clone();
    tampered[at..at + FRAME_LEN].copy_from_slice(&forged.frame);
    tampered[at + FRAME_LEN..at + FRAME_LEN + forged.bytes.len()].copy_from_slice(&forged.bytes);
    let b = Archive::open(Cursor::new(tampered), &Password::from("k")).unwrap();
    let err = b.entries().unwrap().collect::<Result<Vec<_>, _>>().unwrap_err();
    assert!(matches!(err, Error::Tampered { .. }), "{err}");
}

fn keys_of(a: &Archive<Cursor<Vec<u8>>>) -> std::sync::Arc<crate::crypto::SessionKeys> {
    a.run_keys[0].clone()
}
