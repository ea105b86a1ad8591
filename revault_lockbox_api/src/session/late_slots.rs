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
//! Also the key setup every new archive shares: its id and content key
//! drawn, the KDF cost checked, the header written.
//!
//! [`ArchiveWriter::new`]: super::ArchiveWriter::new

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{ArchiveWriter, CreateOptions, SessionStart};
use crate::crypto::{random_bytes, ContentKey, KdfParams};
use crate::error::{Error, Result};
use crate::format::{encode_header_copy, HeaderPrefix, KeySlot, ARCHIVE_ID_LEN, KEY_SLOTS};
use crate::keys::KeySet;

/// A header being finished on its own thread.
pub(crate) struct LateSlots {
    wrapping: JoinHandle<Result<Vec<u8>>>,
    /// Where the session wrote its header copy (FORMAT.md §3.11), which
    /// holds zeroes for the table too until the table is written.
    copy_at: Option<Arc<AtomicU64>>,
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
        let labels = keys.slot_labels();
        let (password_labels, other_labels) = labels.split_at(labels.len() - without_kdf.len());
        let prefix =
            HeaderPrefix::fitting_with_passwords(archive_id, &without_kdf, other_labels, password_labels);
        let keys = keys.clone();
        let content_key = ContentKey::from_bytes(content_key.bytes());
        let wrapping = std::thread::Builder::new()
            .name("lockbox-kdf".into())
            .spawn(move || {
                let mut slots = keys.wrap_passwords(&archive_id, &content_key, kdf)?;
                slots.extend(without_kdf);
                slots.resize(KEY_SLOTS, KeySlot::Empty);
                Ok(prefix.encode_labeled(&slots, &labels))
            })
            .map_err(Error::stream("starting the key-slot thread"))?;
        Ok((LateSlots { wrapping, copy_at: None }, prefix))
    }

    /// Waits for the encoded header (the prefix and the slot table, the
    /// archive's first `data_start` bytes) and writes it into `file`: at
    /// offset 0, then into the session's header copy.
    pub(crate) fn write_into(self, file: &std::fs::File, path: &std::path::Path) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let head = self.wrapping.join().map_err(|_| {
            Error::stream("wrapping the key slots")(std::io::Error::other("the key-slot thread panicked"))
        })??;
        file.write_all_at(&head, 0).map_err(Error::io("writing the key slots of", path))?;
        if let Some(at) = self.copy_at {
            let copy = encode_header_copy(&head);
            file.write_all_at(&copy, at.load(Ordering::Relaxed))
                .map_err(Error::io("writing the key slots of", path))?;
        }
        Ok(())
    }
}

impl<W: Write> ArchiveWriter<W> {
    /// [`new`](Self::new) with the keys already gathered.
    pub(crate) fn with_keys(out: W, keys: &KeySet, options: CreateOptions) -> Result<Self> {
        Self::with_keys_shaped(out, keys, options, |start| start)
    }

    /// [`with_keys`](Self::with_keys), its first session as `shape` makes
    /// it from a create's: tests build archives at the format's limits
    /// (a session numbered `u32::MAX`, a compaction holding the last state).
    pub(crate) fn with_keys_shaped(
        out: W,
        keys: &KeySet,
        options: CreateOptions,
        shape: impl FnOnce(SessionStart) -> SessionStart,
    ) -> Result<Self> {
        let (archive_id, content_key) = new_archive_keys(&options)?;
        let slots = keys.slots(&archive_id, &content_key, options.kdf)?;
        let in_use = slots.iter().filter(|s| !matches!(s, KeySlot::Empty)).count();
        let labels = keys.slot_labels();
        debug_assert_eq!(labels.len(), in_use);
        let header =
            HeaderPrefix::fitting_labeled(archive_id, &slots, &labels).encode_labeled(&slots, &labels);
        Self::begin(out, archive_id, &content_key, &header, options, shape)
    }

    /// [`with_keys`](Self::with_keys) under a content key and archive id
    /// the caller chose: tests that must compute chunk ids (keyed by both)
    /// before writing the lists that hold them.
    #[cfg(test)]
    pub(crate) fn with_known_keys(
        out: W,
        keys: &KeySet,
        options: CreateOptions,
        (archive_id, content_key): ([u8; ARCHIVE_ID_LEN], &ContentKey),
    ) -> Result<Self> {
        let slots = keys.slots(&archive_id, content_key, options.kdf)?;
        let labels = keys.slot_labels();
        let header =
            HeaderPrefix::fitting_labeled(archive_id, &slots, &labels).encode_labeled(&slots, &labels);
        Self::begin(out, archive_id, content_key, &header, options, |start| start)
    }

    /// Writes `header` (the prefix and the slot table), and starts the
    /// first session (as `shape` makes it).
    pub(super) fn begin(
        mut out: W,
        archive_id: [u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
        header: &[u8],
        options: CreateOptions,
        shape: impl FnOnce(SessionStart) -> SessionStart,
    ) -> Result<Self> {
        out.write_all(header).map_err(Error::stream("writing the archive header"))?;
        let start = shape(SessionStart::first(archive_id, header.into()));
        Self::session(out, content_key, start, options)
    }
}

/// An output that can take the slot table last: an archive file, which
/// can go back to its header (a stream cannot).
pub(crate) trait SlotsLast: Write {
    /// The header (its slot table zeroes so far) is to be written from
    /// `slots` once the rest of the file is.
    fn write_slots_last(&mut self, slots: LateSlots);
}

impl<W: Write> ArchiveWriter<W> {
    /// [`with_keys`](Self::with_keys) for an archive file: with a password
    /// among the keys, the slot table is wrapped on its own thread while
    /// the data is written, and written last (`late_slots`).
    pub(crate) fn with_late_slots(out: W, keys: &KeySet, options: CreateOptions) -> Result<Self>
    where
        W: SlotsLast,
    {
        if !keys.has_password() {
            return Self::with_keys(out, keys, options);
        }
        let (archive_id, content_key) = new_archive_keys(&options)?;
        let (mut late, prefix) = LateSlots::start(keys, archive_id, &content_key, options.kdf)?;
        let header = prefix.encode_with(&vec![KeySlot::Empty; KEY_SLOTS]);
        let mut writer = Self::begin(out, archive_id, &content_key, &header, options, |start| start)?;
        late.copy_at = writer.output.header_copy.as_ref().map(|c| Arc::clone(&c.written_at));
        writer.output.out.write_slots_last(late);
        Ok(writer)
    }
}

/// Checks the KDF parameters, then draws a new archive's id and content key.
fn new_archive_keys(options: &CreateOptions) -> Result<([u8; ARCHIVE_ID_LEN], ContentKey)> {
    options.tuning.validate()?;
    options.kdf.check().map_err(|reason| options.kdf.invalid(reason))?;
    let mut archive_id = [0u8; ARCHIVE_ID_LEN];
    random_bytes(&mut archive_id).map_err(Error::stream("drawing random bytes"))?;
    let content_key = ContentKey::random().map_err(Error::stream("drawing random bytes"))?;
    Ok((archive_id, content_key))
}
