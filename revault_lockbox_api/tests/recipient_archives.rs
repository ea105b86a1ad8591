//! Archives locked to public keys: age X25519 and ML-KEM-768 + X25519
//! hybrid recipients, alone and beside a password, opened with identities
//! and no KDF; wrong keys, mixed sets and damaged slots fail cleanly.

use std::io::{Cursor, Read};

use revault_lockbox_api::keys::{keygen, Identity, Recipient};
use revault_lockbox_api::{create_archive, Archive, ArchiveWriter, Error, ExtractOptions, KeySet};

use crate::util::*;

fn identity(pq: bool) -> (Vec<Identity>, Recipient) {
    let (text, public) = keygen(pq).unwrap();
    (Identity::parse_file(text.as_bytes(), &mut |_| None).unwrap(), public.parse().unwrap())
}

fn archive(keys: KeySet) -> Vec<u8> {
    let mut w = ArchiveWriter::new(Vec::new(), keys, cheap()).unwrap();
    w.add_file("secret.txt", &meta(0o644), 6, &b"hello\n"[..]).unwrap();
    w.finish().unwrap()
}

fn read_secret(bytes: &[u8], ids: &[Identity]) -> Result<Vec<u8>, Error> {
    let a = Archive::open(Cursor::new(bytes.to_vec()), ids)?;
    let mut got = Vec::new();
    a.open_file("secret.txt")?.read_to_end(&mut got).map_err(Error::from)?;
    Ok(got)
}

#[test]
fn each_recipient_opens_with_its_identity_only() {
    let (x_ids, x) = identity(false);
    let (y_ids, y) = identity(false);
    let (other_ids, _) = identity(false);
    let bytes = archive(KeySet::new().recipient(x).recipient(y));
    assert_eq!(read_secret(&bytes, &x_ids).unwrap(), b"hello\n");
    assert_eq!(read_secret(&bytes, &y_ids).unwrap(), b"hello\n");
    let err = read_secret(&bytes, &other_ids).unwrap_err();
    assert!(matches!(err, Error::NoIdentityMatched), "{err}");
    assert!(err.is_authentication());
    let err = Archive::open(Cursor::new(bytes), &password()).unwrap_err();
    assert!(matches!(err, Error::WrongPassword), "a key-only archive has no password slot: {err}");
}

#[test]
fn hybrid_recipients_and_passwords_share_one_archive() {
    let (pq_ids, pq) = identity(true);
    let bytes = archive(KeySet::new().recipient(pq).password(&password()));
    assert_eq!(read_secret(&bytes, &pq_ids).unwrap(), b"hello\n");
    let a = Archive::open(Cursor::new(bytes), &password()).unwrap();
    let info = a.info().unwrap();
    assert_eq!((info.key_slots, info.kdf.len()), (2, 1));
    let dest = tempfile::tempdir().unwrap();
    a.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    assert_eq!(std::fs::read(dest.path().join("secret.txt")).unwrap(), b"hello\n");
}

/// A create to a file wraps the password slot last (on its own thread,
/// while the data is written) and the hybrid slot at once; the table it
/// fills in has the hybrid's slot size, and each key opens the archive.
#[test]
fn password_slot_written_last_beside_a_hybrid_recipient() {
    let (pq_ids, pq) = identity(true);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("secret.txt"), b"hello\n").unwrap();
    let path = work.path().join("a.lbox");
    let keys = KeySet::new().password(&password()).recipient(pq);
    create_archive(&path, work.path(), &["secret.txt".into()], keys, cheap()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let slot_len = usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    assert_eq!(slot_len, 2048, "sized for the ML-KEM hybrid slot");
    assert_eq!((bytes[32], bytes[32 + slot_len]), (1, 2), "the password slot, then the recipient's");
    assert_eq!(read_secret(&bytes, &pq_ids).unwrap(), b"hello\n");
    let a = Archive::open(Cursor::new(bytes), &password()).unwrap();
    assert_eq!(a.info().unwrap().key_slots, 2);
}

/// One label per slot (`KeySet::labels`), in the order written: the
/// password slot wrapped last on its own thread gets its own label, sized
/// for (a 255-byte label on a password slot needs 512-byte slots), and
/// each recipient its own; a count that does not pair is refused.
#[test]
fn each_slot_gets_its_own_label_also_when_written_last() {
    let (x_ids, x) = identity(false);
    let (_, y) = identity(false);
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("secret.txt"), b"hello\n").unwrap();
    let path = work.path().join("a.lbox");
    let long = "p".repeat(255);
    let labels = [long.clone(), "x".to_owned(), String::new()];
    let keys = KeySet::new().password(&password()).recipient(x.clone()).recipient(y.clone()).labels(labels);
    create_archive(&path, work.path(), &["secret.txt".into()], keys, cheap()).unwrap();
    let listed = revault_lockbox_api::slots::list(&path).unwrap();
    let got: Vec<&str> = listed.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(got, [long.as_str(), "x", ""]);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[30], bytes[31]]), 512, "sized for the long password label");
    assert_eq!(read_secret(&bytes, &x_ids).unwrap(), b"hello\n");
    Archive::open(Cursor::new(bytes), &password()).unwrap();

    let two = KeySet::new().recipient(x).recipient(y).password(&password()).labels(["a".into(), "b".into()]);
    let err = ArchiveWriter::new(Vec::new(), two, cheap()).err().expect("refused");
    assert!(matches!(err, Error::BadLabel { .. }), "{err}");
}

#[test]
fn mixing_post_quantum_and_classical_recipients_needs_consent() {
    let (_, pq) = identity(true);
    let (x_ids, x) = identity(false);
    let keys = KeySet::new().recipient(pq.clone()).recipient(x.clone());
    let err = ArchiveWriter::new(Vec::new(), keys, cheap()).err().expect("refused");
    assert!(matches!(err, Error::Key(_)), "{err}");
    let bytes = archive(KeySet::new().recipient(pq).recipient(x).allow_mixed_recipients(true));
    assert_eq!(read_secret(&bytes, &x_ids).unwrap(), b"hello\n");
}

#[test]
fn no_keys_or_too_many_are_refused() {
    let err = ArchiveWriter::new(Vec::new(), KeySet::new(), cheap()).err().expect("refused");
    assert!(matches!(err, Error::KeyCount { given: 0, in_use: 0 }), "{err}");
    let (_, x) = identity(false);
    let err = ArchiveWriter::new(Vec::new(), KeySet::new().recipients(vec![x; 17]), cheap())
        .err()
        .expect("refused");
    assert!(matches!(err, Error::KeyCount { given: 17, in_use: 0 }), "{err}");
}

/// Every byte of a recipient slot matters: a flip anywhere in the table
/// either keeps the slot from opening or is refused as malformed, and is
/// noticed (the reader says it read the header copy, FORMAT.md §3.11);
/// the copy at the end of the session still opens, so nothing is lost.
/// With the copy damaged the same way, the flip is refused.
#[test]
fn a_flipped_byte_in_a_recipient_slot_is_noticed() {
    let (ids, x) = identity(false);
    let original = archive(KeySet::new().recipient(x));
    let table = data_start(&original) - 32;
    let copy = original.len() - 216 - 32 - table;
    for at in (32..data_start(&original)).step_by(7).chain(32..32 + 300) {
        let mut bytes = original.clone();
        bytes[at] ^= 0x04;
        let a = Archive::open(Cursor::new(bytes.clone()), &ids[..]).unwrap();
        assert!(a.header_damage().is_some(), "flip at {at} not noticed");
        assert_eq!(read_secret(&bytes, &ids).unwrap(), b"hello\n", "flip at {at}");
        bytes[copy + at - 32] ^= 0x04;
        let err = read_secret(&bytes, &ids).unwrap_err();
        assert!(err.is_authentication(), "flip at {at}, in the copy too: {err}");
    }
}

/// Slots are managed in place: add, replace, remove, up to 16, each one
/// alone opening the archive; nothing else in the file changes.
#[test]
fn key_slots_are_added_replaced_and_removed_in_place() {
    use revault_lockbox_api::slots::SlotKind;
    use revault_lockbox_api::{slots, KdfParams, Password};
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("a.lbox");
    let old = Password::from("old password");
    std::fs::write(&path, archive(KeySet::new().password(&old))).unwrap();
    let data_before = std::fs::read(&path).unwrap()[DATA_START..].to_vec();
    let cheap_kdf = KdfParams::INSECURE_FOR_TESTS;

    let (x_ids, x) = identity(false);
    assert_eq!(slots::add(&path, &old, &KeySet::new().recipient(x), cheap_kdf).unwrap(), [1]);
    let kinds: Vec<SlotKind> = slots::list(&path).unwrap().into_iter().map(|s| s.kind).collect();
    assert!(
        matches!(&kinds[..], [SlotKind::Password(_), SlotKind::Recipient(t)] if t == &["X25519"]),
        "{kinds:?}"
    );
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(read_secret(&bytes, &x_ids).unwrap(), b"hello\n");

    // A new password: written and synced in a spare slot before the old
    // slot is overwritten, at the old slot's position (`key remove 0`
    // still names it); the spare is cleared.
    let new = Password::from("new password");
    let at = slots::change_password(&path, &old, &new, cheap_kdf).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(matches!(Archive::open(Cursor::new(bytes.clone()), &old), Err(Error::WrongPassword)));
    Archive::open(Cursor::new(bytes.clone()), &new).unwrap();
    assert_eq!(at, 0, "the password keeps its slot");
    assert!(bytes[32 + 2 * 256..32 + 3 * 256].iter().all(|&b| b == 0), "the spare slot's bytes are gone");
    let kinds: Vec<SlotKind> = slots::list(&path).unwrap().into_iter().map(|s| s.kind).collect();
    assert!(matches!(&kinds[..], [SlotKind::Password(_), SlotKind::Recipient(_)]), "{kinds:?}");

    // Up to 16 slots; each opens the archive alone.
    let mut all_ids = vec![x_ids];
    for _ in 0..14 {
        let (ids, r) = identity(false);
        slots::add(&path, &new, &KeySet::new().recipient(r), cheap_kdf).unwrap();
        all_ids.push(ids);
    }
    let (_, extra) = identity(false);
    let err = slots::add(&path, &new, &KeySet::new().recipient(extra), cheap_kdf).unwrap_err();
    assert!(matches!(err, Error::KeyCount { given: 1, in_use: 16 }), "{err}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(slots::list(&path).unwrap().len(), 16);
    for ids in &all_ids {
        assert_eq!(read_secret(&bytes, ids).unwrap(), b"hello\n");
    }

    // Removing needs a key that opens the archive, and never the last slot.
    let err = slots::remove(&path, &old, 1).unwrap_err();
    assert!(matches!(err, Error::WrongPassword), "{err}");
    slots::remove(&path, &new, 1).unwrap();
    assert!(matches!(
        read_secret(&std::fs::read(&path).unwrap(), &all_ids[0]),
        Err(Error::NoIdentityMatched)
    ));
    for index in slots::list(&path).unwrap().into_iter().map(|s| s.index).filter(|&i| i != at) {
        slots::remove(&path, &new, index).unwrap();
    }
    let err = slots::remove(&path, &new, at).unwrap_err();
    assert!(matches!(err, Error::LastSlot), "{err}");
    // The slot table changed, at offset 0 and in the session's copy of it
    // before the trailer (FORMAT.md §3.11), alike; nothing else did.
    let after = std::fs::read(&path).unwrap();
    let copy = after.len() - 216 - 32 - (DATA_START - 32);
    assert_eq!(
        after[copy..copy + DATA_START - 32],
        after[32..DATA_START],
        "the copy's table is the primary's"
    );
    let unchanged = |bytes: &[u8]| [&bytes[DATA_START..copy], &bytes[copy + DATA_START - 32..]].concat();
    let mut before = vec![0; DATA_START];
    before.extend_from_slice(&data_before);
    assert_eq!(unchanged(&after), unchanged(&before), "only the slot table and its copy changed");
}

/// A password archive has 256-byte slots; a post-quantum recipient needs
/// more, so adding one rewrites the archive with larger slots: every old
/// key still opens it, the new one too, and the content is unchanged.
#[test]
fn a_key_larger_than_the_slots_rewrites_the_archive_with_larger_ones() {
    use revault_lockbox_api::slots::SlotKind;
    use revault_lockbox_api::{slots, KdfParams, Password};
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join("a.lbox");
    let password = Password::from("password");
    std::fs::write(&path, archive(KeySet::new().password(&password))).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert_eq!(data_start(&before), 32 + 16 * 256);

    let (pq_ids, pq) = identity(true);
    assert_eq!(
        slots::add(&path, &password, &KeySet::new().recipient(pq), KdfParams::INSECURE_FOR_TESTS).unwrap(),
        [1]
    );
    let after = std::fs::read(&path).unwrap();
    assert_eq!(data_start(&after), 32 + 16 * 2048, "slots grown to fit the hybrid stanza");
    assert_eq!(after[12..28], before[12..28], "same archive id");
    assert_eq!(read_secret(&after, &pq_ids).unwrap(), b"hello\n");
    let a = Archive::open(Cursor::new(after.clone()), &password).unwrap();
    let mut got = Vec::new();
    a.open_file("secret.txt").unwrap().read_to_end(&mut got).unwrap();
    assert_eq!(got, b"hello\n");
    let kinds: Vec<SlotKind> = slots::list(&path).unwrap().into_iter().map(|s| s.kind).collect();
    assert!(
        matches!(&kinds[..], [SlotKind::Password(_), SlotKind::Recipient(t)] if t == &["mlkem768x25519"])
    );
    let leftovers: Vec<_> = std::fs::read_dir(work.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["a.lbox"], "no temporary file left");

    // A wrong key changes nothing.
    let (_, other) = identity(true);
    let err = slots::add(
        &path,
        &Password::from("wrong"),
        &KeySet::new().recipient(other),
        KdfParams::INSECURE_FOR_TESTS,
    )
    .unwrap_err();
    assert!(matches!(err, Error::WrongPassword), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), after);
}
