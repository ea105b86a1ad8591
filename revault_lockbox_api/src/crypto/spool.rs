//! Sealing for temporary spool files: plaintext that must wait on disk
//! (a tar stream being sorted) is sealed under a random key that lives only
//! in memory, so the spool file is unreadable once the process ends and
//! any change to it while it waits is detected.

use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use zeroize::Zeroizing;

use super::secret::random_bytes;
use super::AuthFailed;
use crate::format::TAG_LEN;

/// A one-process key for spooled chunks; each chunk's number is its nonce,
/// so chunk numbers must never repeat under one `SpoolCipher`.
pub(crate) struct SpoolCipher(ChaCha20Poly1305);

impl SpoolCipher {
    pub(crate) fn random() -> std::io::Result<SpoolCipher> {
        let mut key = Zeroizing::new([0u8; 32]);
        random_bytes(key.as_mut())?;
        Ok(SpoolCipher(ChaCha20Poly1305::new(&Key::from(*key))))
    }

    /// Seals `buf` in place as chunk `number` and appends its tag.
    pub(crate) fn seal(&self, number: u64, buf: &mut Vec<u8>) {
        let tag = self
            .0
            .encrypt_inout_detached(&nonce(number), b"", buf.as_mut_slice().into())
            .expect("spool chunk within ChaCha20-Poly1305 message limits");
        buf.extend_from_slice(&tag);
    }

    /// Opens chunk `number` (body and tag) in place, dropping the tag.
    pub(crate) fn open(&self, number: u64, buf: &mut Vec<u8>) -> Result<(), AuthFailed> {
        let body_len = buf.len().checked_sub(TAG_LEN).ok_or(AuthFailed)?;
        let tag = Tag::try_from(&buf[body_len..]).map_err(|_| AuthFailed)?;
        self.0
            .decrypt_inout_detached(&nonce(number), b"", (&mut buf[..body_len]).into(), &tag)
            .map_err(|_| AuthFailed)?;
        buf.truncate(body_len);
        Ok(())
    }
}

fn nonce(number: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&number.to_le_bytes());
    Nonce::from(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_open_only_under_their_number() {
        let cipher = SpoolCipher::random().unwrap();
        let mut buf = b"spooled plaintext".to_vec();
        cipher.seal(7, &mut buf);
        assert_ne!(&buf[..17], b"spooled plaintext");
        let mut wrong = buf.clone();
        assert_eq!(cipher.open(8, &mut wrong), Err(AuthFailed));
        buf[0] ^= 1;
        assert_eq!(cipher.open(7, &mut buf.clone()), Err(AuthFailed));
        buf[0] ^= 1;
        cipher.open(7, &mut buf).unwrap();
        assert_eq!(buf, b"spooled plaintext");
    }
}
