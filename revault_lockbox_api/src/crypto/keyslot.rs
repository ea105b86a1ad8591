//! Wrapping the content key into password slots, and unwrapping it.

use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use zeroize::Zeroizing;

use super::{random_bytes, AuthFailed, ContentKey, KdfParams, Password};
use crate::format::{KeySlot, PasswordSlot, ARCHIVE_ID_LEN, KEY_LEN, MAX_PASSWORD_SLOTS_TRIED};

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
        wrapped_key: [0; KEY_LEN + 16],
    };
    random_bytes(&mut slot.salt)?;
    random_bytes(&mut slot.nonce)?;
    let kek = params.derive(password.expose(), &slot.salt).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "invalid Argon2id parameters")
    })?;
    let cipher = ChaCha20Poly1305::new(&Key::from(*kek));
    let mut buf = Zeroizing::new(*key.0);
    let tag = cipher
        .encrypt_inout_detached(&Nonce::from(slot.nonce), &slot.aad(archive_id), buf.as_mut_slice().into())
        .expect("32-byte message");
    slot.wrapped_key[..KEY_LEN].copy_from_slice(buf.as_ref());
    slot.wrapped_key[KEY_LEN..].copy_from_slice(&tag);
    Ok(slot)
}

/// Tries every password slot in `slots`; the first that opens gives the
/// content key and its position. Fails the same way for a wrong password
/// and a damaged slot.
pub(crate) fn unwrap_password_slots(
    archive_id: &[u8; ARCHIVE_ID_LEN],
    slots: &[KeySlot],
    password: &Password,
) -> Result<(ContentKey, usize), AuthFailed> {
    let password_slots = slots.iter().enumerate().filter_map(|(i, s)| match s {
        KeySlot::Password(p) => Some((i, p)),
        _ => None,
    });
    for (i, slot) in password_slots.take(MAX_PASSWORD_SLOTS_TRIED) {
        let params = KdfParams { m_kib: slot.m_kib, t: slot.t, p: slot.p };
        let Some(kek) = params.derive(password.expose(), &slot.salt) else { continue };
        let cipher = ChaCha20Poly1305::new(&Key::from(*kek));
        let mut key = Zeroizing::new([0u8; KEY_LEN]);
        key.copy_from_slice(&slot.wrapped_key[..KEY_LEN]);
        let tag = Tag::try_from(&slot.wrapped_key[KEY_LEN..]).expect("16-byte tag");
        let opened = cipher.decrypt_inout_detached(
            &Nonce::from(slot.nonce),
            &slot.aad(archive_id),
            key.as_mut_slice().into(),
            &tag,
        );
        if opened.is_ok() {
            return Ok((ContentKey(key), i));
        }
    }
    Err(AuthFailed)
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
        let (opened, at) = unwrap_password_slots(&id, &slots, &pw).unwrap();
        assert_eq!((*opened.0, at), (*key.0, 1));
        assert!(unwrap_password_slots(&id, &slots, &Password::from("wrong")).is_err());
        id[0] ^= 1;
        assert!(unwrap_password_slots(&id, &slots, &pw).is_err(), "slot is bound to the archive id");
    }
}
