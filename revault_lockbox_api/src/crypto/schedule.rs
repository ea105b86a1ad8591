//! The key schedule of one write session, and page sealing.
//!
//! Each write session (a create, later each append) draws a random 256-bit
//! salt and derives its own subkeys with HKDF-SHA256 from the content key,
//! one per purpose. Within a session a page's nonce is its page number,
//! which the writer never reuses; across sessions the keys differ. So no
//! nonce repeats under a key even when an archive is copied and both copies
//! are appended to.

use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

#[cfg(test)]
use super::aead::AeadBackend;
use super::aead::Cipher;
use super::{AuthFailed, ContentKey};
use crate::format::{labels, IndexNodeId, KEY_LEN, NONCE_LEN, SESSION_SALT_LEN, TAG_LEN};

/// A ChaCha20-Poly1305 nonce, built only here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageNonce([u8; NONCE_LEN]);

impl PageNonce {
    /// Data page `n` of a session (page key): the page number, little-endian.
    pub(crate) fn data(page_number: u64) -> PageNonce {
        let mut n = [0u8; NONCE_LEN];
        n[..8].copy_from_slice(&page_number.to_le_bytes());
        PageNonce(n)
    }

    /// An index node of a session (index key): its table, level and
    /// position, which the session's writer gives to one node only.
    pub(crate) fn index_node(id: &IndexNodeId) -> PageNonce {
        let mut n = [0u8; NONCE_LEN];
        n[0] = id.table as u8;
        n[1] = id.level;
        n[4..].copy_from_slice(&id.seq.to_le_bytes());
        PageNonce(n)
    }

    /// The session header's body (index key): no table is numbered 0xfe.
    pub(crate) fn session_header() -> PageNonce {
        PageNonce([0xfe; NONCE_LEN])
    }

    /// A nonce as the test vectors give it.
    #[cfg(test)]
    pub(crate) fn from_raw(bytes: [u8; NONCE_LEN]) -> PageNonce {
        PageNonce(bytes)
    }

    /// The one root (index key) or trailer (trailer key) a session seals.
    /// No table is numbered 0xff, so it never meets an index node's nonce.
    pub(crate) fn single() -> PageNonce {
        PageNonce([0xff; NONCE_LEN])
    }
}

/// The subkeys of one write session. The ciphers hold expanded keys,
/// wiped on drop (`aead`).
pub(crate) struct SessionKeys {
    page: Cipher,
    index: Cipher,
    trailer: Cipher,
}

impl SessionKeys {
    pub(crate) fn derive(key: &ContentKey, salt: &[u8; SESSION_SALT_LEN]) -> SessionKeys {
        let hk = Hkdf::<Sha256>::new(Some(salt), key.bytes());
        let sub = |label: &[u8]| {
            let mut k = Zeroizing::new([0u8; KEY_LEN]);
            hk.expand(label, k.as_mut()).expect("32 bytes is a valid HKDF output length");
            Cipher::new(&k)
        };
        SessionKeys {
            page: sub(labels::PAGE_KEY),
            index: sub(labels::INDEX_KEY),
            trailer: sub(labels::TRAILER_KEY),
        }
    }

    /// Keys for the test vectors: `key` for every purpose, as given, on
    /// `backend`.
    #[cfg(test)]
    pub(crate) fn from_raw_key(key: &[u8; KEY_LEN], backend: AeadBackend) -> SessionKeys {
        let cipher = || Cipher::on(backend, key);
        SessionKeys { page: cipher(), index: cipher(), trailer: cipher() }
    }

    /// Seals a data page in place, appending the tag.
    pub(crate) fn seal_page(&self, nonce: PageNonce, aad: &[u8], buf: &mut Vec<u8>) {
        seal(&self.page, nonce, aad, buf)
    }

    /// Opens a data page in place, removing the tag.
    #[cfg(test)]
    pub(crate) fn open_page(
        &self,
        nonce: PageNonce,
        aad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<(), AuthFailed> {
        open(&self.page, nonce, aad, buf)
    }

    /// Opens the sealed page held in `framed[from..]` (stored form and
    /// tag) into a buffer of its own with no copy beyond the decryption:
    /// `framed` or `spare` (see [`Cipher::open_out`]). Returns the stored
    /// form's buffer, or the failure, and the buffer not needed.
    pub(crate) fn open_page_out(
        &self,
        nonce: PageNonce,
        aad: &[u8],
        framed: Vec<u8>,
        from: usize,
        spare: Vec<u8>,
    ) -> (Result<Vec<u8>, AuthFailed>, Vec<u8>) {
        self.page.open_out(&nonce.0, aad, framed, from, spare)
    }

    /// Opens the sealed page `sealed` in place; returns the stored form's
    /// length (the bytes before the tag).
    pub(crate) fn open_page_in_place(
        &self,
        nonce: PageNonce,
        aad: &[u8],
        sealed: &mut [u8],
    ) -> Result<usize, AuthFailed> {
        let body_len = sealed.len().checked_sub(TAG_LEN).ok_or(AuthFailed)?;
        let (body, tag) = sealed.split_at_mut(body_len);
        self.page.open(&nonce.0, aad, body, &(*tag).try_into().expect("16 bytes"))?;
        Ok(body_len)
    }

    /// Seals an index node or the root in place, appending the tag.
    pub(crate) fn seal_index(&self, nonce: PageNonce, aad: &[u8], buf: &mut Vec<u8>) {
        seal(&self.index, nonce, aad, buf)
    }

    /// Opens an index node or the root in place, removing the tag.
    pub(crate) fn open_index(
        &self,
        nonce: PageNonce,
        aad: &[u8],
        buf: &mut Vec<u8>,
    ) -> Result<(), AuthFailed> {
        open(&self.index, nonce, aad, buf)
    }

    /// The trailer's tag: a MAC over its body.
    pub(crate) fn trailer_tag(&self, body: &[u8]) -> [u8; TAG_LEN] {
        let mut empty = Vec::with_capacity(TAG_LEN);
        seal(&self.trailer, PageNonce::single(), body, &mut empty);
        empty.try_into().expect("tag only")
    }

    pub(crate) fn check_trailer_tag(&self, body: &[u8], tag: &[u8; TAG_LEN]) -> Result<(), AuthFailed> {
        let mut buf = tag.to_vec();
        open(&self.trailer, PageNonce::single(), body, &mut buf)
    }
}

fn seal(cipher: &Cipher, nonce: PageNonce, aad: &[u8], buf: &mut Vec<u8>) {
    let tag = cipher.seal(&nonce.0, aad, buf);
    buf.extend_from_slice(&tag);
}

fn open(cipher: &Cipher, nonce: PageNonce, aad: &[u8], buf: &mut Vec<u8>) -> Result<(), AuthFailed> {
    let body_len = buf.len().checked_sub(TAG_LEN).ok_or(AuthFailed)?;
    let (body, tag) = buf.split_at_mut(body_len);
    cipher.open(&nonce.0, aad, body, &(*tag).try_into().expect("16 bytes"))?;
    buf.truncate(body_len);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(salt: u8) -> SessionKeys {
        SessionKeys::derive(&ContentKey::from_bytes(&[7; KEY_LEN]), &[salt; SESSION_SALT_LEN])
    }

    #[test]
    fn page_round_trip_and_binding() {
        let k = keys(1);
        let mut buf = b"hello page".to_vec();
        k.seal_page(PageNonce::data(5), b"aad", &mut buf);
        let sealed = buf.clone();
        k.open_page(PageNonce::data(5), b"aad", &mut buf).unwrap();
        assert_eq!(buf, b"hello page");
        for (nonce, aad) in [(6, &b"aad"[..]), (5, &b"aaX"[..])] {
            let mut b = sealed.clone();
            assert!(k.open_page(PageNonce::data(nonce), aad, &mut b).is_err());
        }
        let mut b = sealed.clone();
        assert!(keys(2).open_page(PageNonce::data(5), b"aad", &mut b).is_err(), "other session");
        let mut short = vec![1, 2, 3];
        assert!(k.open_page(PageNonce::data(5), b"aad", &mut short).is_err());
    }

    /// The nonce vectors of docs/FORMAT.md §10.
    #[test]
    fn nonces_match_the_spec() {
        use crate::format::Table;
        assert_eq!(PageNonce::data(5).0, [5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let id = IndexNodeId { table: Table::Pages, level: 1, seq: 258 };
        assert_eq!(PageNonce::index_node(&id).0, [2, 1, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0]);
        let sessions_leaf = IndexNodeId { table: Table::Sessions, level: 0, seq: 1 };
        assert_eq!(PageNonce::index_node(&sessions_leaf).0, [3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(PageNonce::single().0, [0xff; NONCE_LEN]);
    }

    #[test]
    fn subkeys_differ_by_purpose() {
        // The same empty message, nonce and AAD under each purpose's key:
        // only the keys differ, so equal tags would mean equal keys.
        let k = keys(1);
        let (mut page, mut index) = (Vec::new(), Vec::new());
        k.seal_page(PageNonce::single(), b"aad", &mut page);
        k.seal_index(PageNonce::single(), b"aad", &mut index);
        let trailer = k.trailer_tag(b"aad").to_vec();
        assert_ne!(page, index);
        assert_ne!(page, trailer);
        assert_ne!(index, trailer);
    }
}
