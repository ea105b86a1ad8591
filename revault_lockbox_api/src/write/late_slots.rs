//! The key-slot table of a new archive, wrapped on a thread of its own
//! while the data is written, and written last into the room reserved for
//! it.
//!
//! A password slot costs a full Argon2id derivation (about 0.1 s at the
//! default cost). The content key is random, so nothing else waits for it:
//! pages are compressed, sealed, written and synced while the KDF runs,
//! and the header (the prefix, then the table, which held zeroes until
//! then) is written into its place just before the final sync and the
//! rename. A file whose table was never written is never renamed into
//! place (`write_atomically`). A stream cannot go back, so `-o -` and
//! [`ArchiveWriter::new`] still wrap the slots first.
//!
//! The slot size must be known before the first page is placed. A password
//! slot's size is fixed, and the slots that need no KDF (key files,
//! recipients) are cheap, so those are wrapped at once and sized with it.
//!
//! [`ArchiveWriter::new`]: crate::ArchiveWriter::new

use std::thread::JoinHandle;

use crate::crypto::{ContentKey, KdfParams};
use crate::format::{HeaderPrefix, KeySlot, ARCHIVE_ID_LEN, KEY_SLOTS};
use crate::{Error, KeySet, Result};

/// A header being finished on its own thread.
pub(crate) struct LateSlots {
    wrapping: JoinHandle<Result<Vec<u8>>>,
}

impl LateSlots {
    /// Checks what can be checked at once (how many keys, the recipient
    /// mixing rule), wraps the slots that need no KDF, then the password
    /// slots on a thread named `lockbox-kdf`. Also returns the header
    /// prefix, whose slot size the table will have.
    pub(crate) fn start(
        keys: &KeySet,
        archive_id: [u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
        kdf: KdfParams,
    ) -> Result<(LateSlots, HeaderPrefix)> {
        keys.check(&[])?;
        let without_kdf = keys.wrap_without_kdf(&archive_id, content_key)?;
        let prefix = HeaderPrefix::fitting_with_passwords(archive_id, &without_kdf);
        let keys = keys.clone();
        let content_key = ContentKey::from_bytes(content_key.bytes());
        let wrapping = std::thread::Builder::new()
            .name("lockbox-kdf".into())
            .spawn(move || {
                let mut slots = keys.wrap_passwords(&archive_id, &content_key, kdf)?;
                slots.extend(without_kdf);
                slots.resize(KEY_SLOTS, KeySlot::Empty);
                Ok(prefix.encode_with(&slots))
            })
            .map_err(Error::stream("starting the key-slot thread"))?;
        Ok((LateSlots { wrapping }, prefix))
    }

    /// Waits for the encoded header: the prefix and the slot table, the
    /// archive's first `data_start` bytes.
    pub(crate) fn wait(self) -> Result<Vec<u8>> {
        self.wrapping.join().map_err(|_| {
            Error::stream("wrapping the key slots")(std::io::Error::other("the key-slot thread panicked"))
        })?
    }
}
