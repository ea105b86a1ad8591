//! The key-slot table of a new archive, wrapped on a thread of its own
//! while the data is written, and written last into the room reserved for
//! it.
//!
//! A password slot costs a full Argon2id derivation (about 0.1 s at the
//! default cost). The content key is random, so nothing else waits for it:
//! pages are compressed, sealed, written and synced while the KDF runs,
//! and the table is written into its place (offset 32, which held zeroes
//! until then) just before the final sync and the rename. A file whose
//! table was never written is never renamed into place (`write_atomically`).
//! A stream cannot go back, so `-o -` and [`ArchiveWriter::new`] still
//! wrap the slots first.
//!
//! [`ArchiveWriter::new`]: crate::ArchiveWriter::new

use std::thread::JoinHandle;

use crate::crypto::{ContentKey, KdfParams};
use crate::format::{encode_slot, KeySlot, ARCHIVE_ID_LEN, KEY_SLOTS, KEY_SLOT_LEN};
use crate::{Error, KeySet, Result};

/// Bytes of the encoded slot table.
pub(crate) const SLOT_TABLE_LEN: usize = KEY_SLOTS * KEY_SLOT_LEN;

/// The table as it sits in the file.
pub(crate) fn encode_slot_table(slots: &[KeySlot]) -> Vec<u8> {
    let mut table = Vec::with_capacity(SLOT_TABLE_LEN);
    for slot in slots {
        table.extend_from_slice(&encode_slot(slot));
    }
    table
}

/// A slot table being wrapped on its own thread.
pub(crate) struct LateSlots {
    wrapping: JoinHandle<Result<Vec<u8>>>,
}

impl LateSlots {
    /// Checks what can be checked at once (how many keys, the recipient
    /// mixing rule), then wraps `content_key` for every key of `keys` on a
    /// thread named `lockbox-kdf`.
    pub(crate) fn start(
        keys: &KeySet,
        archive_id: [u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
        kdf: KdfParams,
    ) -> Result<LateSlots> {
        keys.check(&[])?;
        let keys = keys.clone();
        let content_key = ContentKey::from_bytes(content_key.bytes());
        let wrapping = std::thread::Builder::new()
            .name("lockbox-kdf".into())
            .spawn(move || Ok(encode_slot_table(&keys.slots(&archive_id, &content_key, kdf)?)))
            .map_err(Error::stream("starting the key-slot thread"))?;
        Ok(LateSlots { wrapping })
    }

    /// Waits for the encoded table ([`SLOT_TABLE_LEN`] bytes).
    pub(crate) fn wait(self) -> Result<Vec<u8>> {
        let table = self.wrapping.join().map_err(|_| {
            Error::stream("wrapping the key slots")(std::io::Error::other("the key-slot thread panicked"))
        })??;
        debug_assert_eq!(table.len(), SLOT_TABLE_LEN);
        Ok(table)
    }
}
