//! Wrapping the content key into password and key-file slots, and
//! unwrapping it.

use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use zeroize::Zeroizing;

use hkdf::Hkdf;
use sha2::Sha256;

use super::kdf::KdfFailure;
#[cfg(test)]
use super::kdf::DEFAULT_KDF_BUDGET;
use super::{random_bytes, AuthFailed, ContentKey, KdfParams, Password};
use crate::format::{
    labels, KeyFileSlot, KeySlot, PasswordSlot, ARCHIVE_ID_LEN, KEY_LEN, MAX_PASSWORD_SLOTS_TRIED, NONCE_LEN,
    TAG_LEN,
};

/// Seals the content key under a key-encryption key.
fn seal_key(
    kek: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    key: &ContentKey,
) -> [u8; KEY_LEN + TAG_LEN] {
    let cipher = ChaCha20Poly1305::new(&Key::from(*kek));
    let mut buf = Zeroizing::new(*key.bytes());
    let tag = cipher
        .encrypt_inout_detached(&Nonce::from(*nonce), aad, buf.as_mut_slice().into())
        .expect("32-byte message");
    let mut wrapped = [0u8; KEY_LEN + TAG_LEN];
    wrapped[..KEY_LEN].copy_from_slice(buf.as_ref());
    wrapped[KEY_LEN..].copy_from_slice(&tag);
    wrapped
}

/// Opens a sealed content key; fails the same way for any wrong input.
fn open_key(
    kek: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    wrapped: &[u8; KEY_LEN + TAG_LEN],
) -> Result<ContentKey, AuthFailed> {
    let cipher = ChaCha20Poly1305::new(&Key::from(*kek));
    let mut key = Zeroizing::new([0u8; KEY_LEN]);
    key.copy_from_slice(&wrapped[..KEY_LEN]);
    let tag = Tag::try_from(&wrapped[KEY_LEN..]).expect("16-byte tag");
    cipher
        .decrypt_inout_detached(&Nonce::from(*nonce), aad, key.as_mut_slice().into(), &tag)
        .map_err(|_| AuthFailed)?;
    Ok(ContentKey::from_bytes(&key))
}

/// The key-encryption key of a key-file slot: HKDF-SHA256 of the file's
/// 256-bit key with the slot's salt (no password KDF: the key is random).
fn key_file_kek(file_key: &[u8; KEY_LEN], salt: &[u8]) -> Zeroizing<[u8; KEY_LEN]> {
    let mut kek = Zeroizing::new([0u8; KEY_LEN]);
    Hkdf::<Sha256>::new(Some(salt), file_key)
        .expand(labels::KEY_FILE_SLOT_AAD, kek.as_mut())
        .expect("32 bytes is a valid HKDF output length");
    kek
}

/// Seals `key` into a new key-file slot for `file_key`.
pub(crate) fn wrap_key_file_slot(
    archive_id: &[u8; ARCHIVE_ID_LEN],
    key: &ContentKey,
    file_key: &[u8; KEY_LEN],
) -> std::io::Result<KeyFileSlot> {
    let mut slot = KeyFileSlot {
        salt: Default::default(),
        nonce: Default::default(),
        wrapped_key: [0; KEY_LEN + TAG_LEN],
    };
    random_bytes(&mut slot.salt)?;
    random_bytes(&mut slot.nonce)?;
    slot.wrapped_key = seal_key(&key_file_kek(file_key, &slot.salt), &slot.nonce, &slot.aad(archive_id), key);
    Ok(slot)
}

/// Tries every key-file slot with `file_key`.
pub(crate) fn unwrap_key_file_slots(
    archive_id: &[u8; ARCHIVE_ID_LEN],
    slots: &[KeySlot],
    file_key: &[u8; KEY_LEN],
) -> Result<(ContentKey, usize), AuthFailed> {
    for (i, slot) in slots.iter().enumerate() {
        let KeySlot::KeyFile(slot) = slot else { continue };
        let kek = key_file_kek(file_key, &slot.salt);
        if let Ok(key) = open_key(&kek, &slot.nonce, &slot.aad(archive_id), &slot.wrapped_key) {
            return Ok((key, i));
        }
    }
    Err(AuthFailed)
}

/// Seals `key` into a new password slot of the archive `archive_id`.
pub(crate) fn wrap_password_slot(
    archive_id: &[u8; ARCHIVE_ID_LEN],
    key: &ContentKey,
    password: &Password,
    params: KdfParams,
) -> std::io::Result<PasswordSlot> {
    let mut slot = PasswordSlot {
        m_kib: params.m_kib,
        t: params.t,
        p: params.p,
        salt: Default::default(),
        nonce: Default::default(),
        wrapped_key: [0; KEY_LEN + TAG_LEN],
    };
    random_bytes(&mut slot.salt)?;
    random_bytes(&mut slot.nonce)?;
    let kek = params.derive(password.expose(), &slot.salt)?;
    slot.wrapped_key = seal_key(&kek, &slot.nonce, &slot.aad(archive_id), key);
    Ok(slot)
}

/// Why no password slot gave the content key.
#[derive(Debug)]
pub(crate) enum PasswordFailure {
    /// No slot tried opened (a wrong password, or damaged slots).
    NoneOpened,
    /// The system refused the Argon2id memory.
    Memory(std::io::Error),
    /// Trying slot `slot` with `params` would take the open past its
    /// budget of Argon2id work (KiB × passes): none tried so far opened.
    OverBudget { slot: usize, params: KdfParams },
}

/// Tries the password slots in `slots`, cheapest first (Argon2id memory ×
/// passes), and at most [`MAX_PASSWORD_SLOTS_TRIED`] of them, spending at
/// most `budget` KiB × passes in all: the slot table is not authenticated
/// before a slot opens, so whoever can change the file chooses these
/// costs. The first that opens gives the content key and its position.
/// Fails the same way for a wrong password and a damaged slot.
pub(crate) fn unwrap_password_slots(
    archive_id: &[u8; ARCHIVE_ID_LEN],
    slots: &[KeySlot],
    password: &Password,
    budget: u64,
) -> Result<(ContentKey, usize), PasswordFailure> {
    let mut password_slots: Vec<(usize, &PasswordSlot, KdfParams)> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            KeySlot::Password(p) => Some((i, p, KdfParams { m_kib: p.m_kib, t: p.t, p: p.p })),
            _ => None,
        })
        // Parameters a reader or Argon2 itself refuses are never run, so
        // they are not tries: four slots of t = 0 (work 0, sorted first)
        // kept a valid fifth from being tried.
        .filter(|(_, _, params)| params.check().is_ok())
        .collect();
    password_slots.sort_by_key(|(i, _, params)| (params.work(), *i));
    let mut spent = 0u64;
    for (i, slot, params) in password_slots.into_iter().take(MAX_PASSWORD_SLOTS_TRIED) {
        spent += params.work();
        if spent > budget {
            return Err(PasswordFailure::OverBudget { slot: i, params });
        }
        let kek = match params.derive(password.expose(), &slot.salt) {
            Ok(kek) => kek,
            Err(KdfFailure::Params) => continue,
            Err(memory) => return Err(PasswordFailure::Memory(memory.into())),
        };
        if let Ok(key) = open_key(&kek, &slot.nonce, &slot.aad(archive_id), &slot.wrapped_key) {
            return Ok((key, i));
        }
    }
    Err(PasswordFailure::NoneOpened)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_then_unwrap() {
        let mut id = [3; ARCHIVE_ID_LEN];
        let key = ContentKey::random().unwrap();
        let pw = Password::from("correct horse");
        let slot = wrap_password_slot(&id, &key, &pw, KdfParams::INSECURE_FOR_TESTS).unwrap();
        let slots = [KeySlot::Empty, KeySlot::Password(slot)];
        let budget = DEFAULT_KDF_BUDGET;
        let (opened, at) = unwrap_password_slots(&id, &slots, &pw, budget).unwrap();
        assert_eq!((*opened.bytes(), at), (*key.bytes(), 1));
        assert!(unwrap_password_slots(&id, &slots, &Password::from("wrong"), budget).is_err());
        id[0] ^= 1;
        assert!(unwrap_password_slots(&id, &slots, &pw, budget).is_err(), "slot is bound to the archive id");
    }

    #[test]
    fn slots_are_tried_cheapest_first_within_the_budget() {
        let id = [3; ARCHIVE_ID_LEN];
        let key = ContentKey::random().unwrap();
        let pw = Password::from("pw");
        let real = wrap_password_slot(&id, &key, &pw, KdfParams::INSECURE_FOR_TESTS).unwrap();
        // Slots raised to the caps without the password: their wrapped keys
        // no longer open, but a reader only learns that by paying for them.
        let dear = PasswordSlot { m_kib: 1 << 20, t: 4, ..real.clone() };
        let mut slots = vec![KeySlot::Password(dear.clone()); 4];
        slots.push(KeySlot::Password(real));
        let (opened, at) = unwrap_password_slots(&id, &slots, &pw, DEFAULT_KDF_BUDGET).unwrap();
        assert_eq!((*opened.bytes(), at), (*key.bytes(), 4), "the cheap slot first, for free");
        match unwrap_password_slots(&id, &slots, &Password::from("wrong"), DEFAULT_KDF_BUDGET) {
            Err(PasswordFailure::OverBudget { slot: 0, params }) => assert_eq!(params.m_kib, 1 << 20),
            other => panic!("{other:?}"),
        }
    }

    fn unhex<const N: usize>(text: &str) -> [u8; N] {
        std::array::from_fn(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap())
    }

    /// The whole password and key-file slots of FORMAT.md §10, computed
    /// from the spec by a second implementation (Python's `cryptography`:
    /// Argon2id v1.3, HKDF-SHA256, ChaCha20-Poly1305): both open to the
    /// content key `40 41 … 5f`.
    #[test]
    fn slots_of_the_spec_are_known_answers() {
        let id: [u8; ARCHIVE_ID_LEN] = std::array::from_fn(|i| i as u8);
        let salt = std::array::from_fn(|i| 0x30 + i as u8);
        let nonce = std::array::from_fn(|i| 0x50 + i as u8);
        let content: [u8; KEY_LEN] = std::array::from_fn(|i| 0x40 + i as u8);
        let wrapped_key = unhex(concat!(
            "b53ba40d3d089a9df09e8807ac41b78c0025de0628dc0f907e741d9433bd31fe",
            "ee07b1d43368258c95be912ba1b9a114",
        ));
        let slot = KeySlot::Password(PasswordSlot { m_kib: 8, t: 1, p: 1, salt, nonce, wrapped_key });
        let pw = Password::from("correct horse");
        let (key, at) = unwrap_password_slots(&id, &[slot], &pw, DEFAULT_KDF_BUDGET).unwrap();
        assert_eq!((*key.bytes(), at), (content, 0));
        let wrapped_key = unhex(concat!(
            "74001601b5b58f41860f40fba6ea7bed802a56f2a4524aa43421d5370a06ddc2",
            "4ff6f60d624cd0488a2148db635fa6c9",
        ));
        let slot = KeySlot::KeyFile(KeyFileSlot { salt, nonce, wrapped_key });
        let file_key = std::array::from_fn(|i| 0x70 + i as u8);
        let (key, at) = unwrap_key_file_slots(&id, &[slot], &file_key).unwrap();
        assert_eq!((*key.bytes(), at), (content, 0));
    }

    /// FORMAT.md §3.3's bounds: no floor above Argon2's minima (the
    /// cheapest parameters open), and a slot below them is a try that
    /// fails like a wrong password, not an error.
    #[test]
    fn password_slots_at_and_below_argon2s_minima() {
        let id = [3; ARCHIVE_ID_LEN];
        let key = ContentKey::random().unwrap();
        let pw = Password::from("pw");
        let cheapest = KdfParams { m_kib: 8, t: 1, p: 1 };
        let real = wrap_password_slot(&id, &key, &pw, cheapest).unwrap();
        let slots = [KeySlot::Password(real.clone())];
        assert!(unwrap_password_slots(&id, &slots, &pw, DEFAULT_KDF_BUDGET).is_ok());
        for (m_kib, t, p) in [(8, 0, 1), (8, 1, 0), (15, 1, 2), (7, 1, 1)] {
            assert!(KdfParams { m_kib, t, p }.check().is_err(), "a writer refuses {m_kib} {t} {p}");
            let below = KeySlot::Password(PasswordSlot { m_kib, t, p, ..real.clone() });
            match unwrap_password_slots(&id, &[below], &pw, DEFAULT_KDF_BUDGET) {
                Err(PasswordFailure::NoneOpened) => {}
                other => panic!("{m_kib} {t} {p}: {other:?}"),
            }
        }
    }

    #[test]
    fn slots_argon2_refuses_use_up_no_tries() {
        // Four slots of t = 0 cost nothing and sorted first: they took the
        // four tries, and the valid fifth slot was never tried.
        let id = [3; ARCHIVE_ID_LEN];
        let key = ContentKey::random().unwrap();
        let pw = Password::from("pw");
        let real = wrap_password_slot(&id, &key, &pw, KdfParams::INSECURE_FOR_TESTS).unwrap();
        let refused = PasswordSlot { t: 0, ..real.clone() };
        let mut slots = vec![KeySlot::Password(refused); MAX_PASSWORD_SLOTS_TRIED];
        slots.push(KeySlot::Password(real));
        let (opened, at) = unwrap_password_slots(&id, &slots, &pw, DEFAULT_KDF_BUDGET).unwrap();
        assert_eq!((*opened.bytes(), at), (*key.bytes(), MAX_PASSWORD_SLOTS_TRIED));
    }
}
