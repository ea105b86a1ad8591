//! The header's and key slots' encodings: round trips, labels, and what
//! decoding refuses.

use super::*;

fn password_slot() -> KeySlot {
    KeySlot::Password(PasswordSlot {
        m_kib: 65536,
        t: 3,
        p: 4,
        salt: [1; KDF_SALT_LEN],
        nonce: [2; NONCE_LEN],
        wrapped_key: [3; KEY_LEN + TAG_LEN],
    })
}

#[test]
fn slots_round_trip_at_their_fixed_size() {
    let recipient = KeySlot::Recipient(vec![5; MAX_KEY_SLOT_BODY_LEN]);
    let key_file = KeySlot::KeyFile(KeyFileSlot { salt: [1; 16], nonce: [2; 12], wrapped_key: [3; 48] });
    for slot in [KeySlot::Empty, password_slot(), recipient, key_file] {
        let prefix = HeaderPrefix::fitting([0; ARCHIVE_ID_LEN], std::slice::from_ref(&slot));
        assert!(prefix.fits(&slot, ""));
        assert_eq!(decode_slot(&encode_slot(&slot, prefix.slot_len)).unwrap(), slot);
        assert_eq!(decode_slot(&encode_slot(&slot, MAX_KEY_SLOT_LEN)).unwrap(), slot);
    }
    let mut bytes = encode_slot(&password_slot(), MIN_KEY_SLOT_LEN);
    bytes[MIN_KEY_SLOT_LEN - 1] = 1;
    assert!(decode_slot(&bytes).is_err(), "non-zero padding");
    let mut bytes = encode_slot(&KeySlot::Empty, MIN_KEY_SLOT_LEN);
    bytes[0] = 0x80;
    assert!(decode_slot(&bytes).is_err(), "unknown kind");
    let mut bytes = encode_slot(&KeySlot::Empty, MIN_KEY_SLOT_LEN);
    bytes[1..3].copy_from_slice(&300u16.to_le_bytes());
    assert!(decode_slot(&bytes).is_err(), "body longer than the slot");
    for len in [0, 128, 300, 8192] {
        assert!(decode_slot(&vec![0; len]).is_err(), "slot of {len} bytes");
    }
}

#[test]
fn the_slot_size_is_the_smallest_that_fits() {
    let id = [0; ARCHIVE_ID_LEN];
    assert_eq!(HeaderPrefix::fitting(id, &[password_slot(), KeySlot::Empty]).slot_len, 256);
    assert_eq!(HeaderPrefix::fitting(id, &[KeySlot::Recipient(vec![1; 253])]).slot_len, 256);
    assert_eq!(HeaderPrefix::fitting(id, &[KeySlot::Recipient(vec![1; 254])]).slot_len, 512);
    let hybrid = HeaderPrefix::fitting(id, &[KeySlot::Recipient(vec![1; 1500])]);
    assert_eq!((hybrid.slot_len, hybrid.data_start()), (2048, 32 + 16 * 2048));
}

#[test]
fn prefix_refuses_other_files_and_versions() {
    let prefix = HeaderPrefix { version: VERSION, archive_id: [9; ARCHIVE_ID_LEN], slot_len: 512 };
    let mut bytes = prefix.encode();
    assert_eq!(HeaderPrefix::decode(&bytes).unwrap(), prefix);
    for bad_len in [0u16, 128, 768, 8192] {
        let mut other = bytes;
        other[30..32].copy_from_slice(&bad_len.to_le_bytes());
        assert!(HeaderPrefix::decode(&other).is_err(), "slot_len {bad_len}");
    }
    for readable in [3, 4] {
        bytes[8] = readable;
        assert_eq!(HeaderPrefix::decode(&bytes).unwrap().version, u16::from(readable));
        assert_eq!(HeaderPrefix::decode(&bytes).unwrap().encode(), bytes, "version {readable} kept");
    }
    for unread in [1, 2, 5, 0xff] {
        bytes[8] = unread;
        assert_eq!(HeaderPrefix::peek_version(&bytes), Some(u16::from(unread)));
        assert!(HeaderPrefix::decode(&bytes).is_err(), "version {unread}");
    }
    assert!(HeaderPrefix::decode(b"PK\x03\x04 not an archive at all......").is_err());
}
