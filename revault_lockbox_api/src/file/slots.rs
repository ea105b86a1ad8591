//! Managing an archive's key slots in place: list, add, remove, replace a
//! password. Only the slot table is rewritten, one slot at a time, each
//! write synced before the next step, so that a crash at any point leaves
//! an archive that opens with the keys it had before or after the step
//! (and, between the two steps of a replacement, with both).
//!
//! A slot lives in the table at offset 0 and in the header copy at the end
//! of every session of version 4 (FORMAT.md §3.11), which a reader uses
//! only when no slot of the primary opens. Each slot is written into every
//! copy first, synced, then into the primary, synced: a crash in between
//! leaves the primary as it was (the old key set opens, as before the
//! step), and never a primary that refuses a removed key while a copy
//! still takes it. Data pages,
//! the index and the trailer are never touched, except when a new key is
//! larger than the archive's slots (a post-quantum recipient added to an
//! archive made with a password): then the whole archive is rewritten with
//! larger slots, as `compact` rewrites it, and renamed over the old one.
//!
//! Signatures (FORMAT.md §3.10) sign each session's commit hash, which
//! leaves the slot table out (§3.8): a slot written in place keeps every
//! signature valid. A rewrite makes one fresh session, signed only when
//! [`add_with_options`] is given signing keys (with the chain rule of
//! [`UpdateOptions::sign`]); otherwise it is unsigned.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::lock::open_locked;
use super::maintain::rewrite_archive;
use super::UpdateOptions;
use crate::archive::{
    find_committed, header_copies, listed_head, read_labeled_slots, read_prefix, Archive, Retention,
};
use crate::crypto::{ContentKey, KdfParams, Password, DEFAULT_KDF_BUDGET};
use crate::error::{Error, Result};
use crate::format::{
    decode_labeled_slot, encode_labeled_slot, HeaderPrefix, KeySlot, HEADER_PREFIX_LEN, TRAILER_LEN,
};
use crate::keys::{stanza_types, KeySet, Unlock};
use crate::storage::ReadAt;

/// What one slot holds, as `key list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlotKind {
    /// A password, with its Argon2id cost.
    Password(KdfParams),
    /// A key file.
    KeyFile,
    /// A public-key recipient; its stanza types (`X25519`,
    /// `mlkem768x25519`, `ssh-ed25519`, `ssh-rsa`).
    Recipient(Vec<String>),
}

/// One slot in use.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlotInfo {
    /// Its position in the table (0 to 15), as [`slots::remove`](crate::slots::remove) takes it.
    pub index: usize,
    /// What it holds.
    pub kind: SlotKind,
    /// The name its owner gave it ([`KeySet::label`], [`KeySet::labels`]);
    /// empty when none.
    pub label: String,
}

/// An archive opened for changing its slots: locked against other writers.
struct SlotTable {
    file: File,
    path: std::path::PathBuf,
    header: HeaderPrefix,
    slots: Vec<KeySlot>,
    /// Each slot's label, by position.
    labels: Vec<String>,
    /// Where each session's header copy starts, found once unlocked.
    copies: Vec<u64>,
}

impl SlotTable {
    fn open(path: &Path, wait: bool) -> Result<SlotTable> {
        let file = open_locked(path, wait)?;
        let header = read_prefix(&file)?;
        let (slots, labels) = read_labeled_slots(&file, &header)?.into_iter().unzip();
        Ok(SlotTable { file, path: path.to_path_buf(), header, slots, labels, copies: Vec::new() })
    }

    /// The content key that `key` opens (a password spending at most
    /// `kdf_budget`, as [`OpenOptions::kdf_budget`](crate::OpenOptions::kdf_budget)), checked against this
    /// archive's last committed trailer, and the slot it came from.
    fn unlock(&mut self, key: Unlock<'_>, kdf_budget: u64) -> Result<(ContentKey, usize)> {
        let (content_key, at) = key.content_key(&self.header.archive_id, &self.slots, kdf_budget)?;
        let len = self.file.metadata().map_err(Error::io("inspecting", &self.path))?.len();
        if len < self.header.data_start() + TRAILER_LEN as u64 {
            return Err(Error::tampered("trailer (archive truncated)"));
        }
        let committed = find_committed(&self.file, len, &self.header, &content_key)?;
        self.copies = header_copies(&self.file, &self.header, &content_key, &committed.trailer);
        Ok((content_key, at))
    }

    /// Writes slot `index` with `label` into every header copy, syncs,
    /// then into the primary table, and syncs, before anything else happens.
    fn write(&mut self, index: usize, slot: KeySlot, label: &str) -> Result<()> {
        let bytes = encode_labeled_slot(&slot, label, self.header.slot_len);
        self.write_copies(index, &bytes)?;
        self.write_primary(index, &bytes)?;
        self.slots[index] = slot;
        self.labels[index] = label.to_owned();
        Ok(())
    }

    /// Slot `index` of every session's header copy, synced.
    fn write_copies(&self, index: usize, bytes: &[u8]) -> Result<()> {
        if self.copies.is_empty() {
            return Ok(());
        }
        for copy in &self.copies {
            let offset = copy + (index * self.header.slot_len) as u64;
            self.file.write_all_at(bytes, offset).map_err(Error::io("writing a key slot of", &self.path))?;
        }
        self.file.sync_data().map_err(Error::io("syncing", &self.path))
    }

    /// Slot `index` of the table at offset 0, synced.
    fn write_primary(&self, index: usize, bytes: &[u8]) -> Result<()> {
        let offset = self.header.slot_offset(index);
        self.file.write_all_at(bytes, offset).map_err(Error::io("writing a key slot of", &self.path))?;
        self.file.sync_data().map_err(Error::io("syncing", &self.path))
    }

    fn first_empty(&self) -> Option<usize> {
        self.slots.iter().position(|s| matches!(s, KeySlot::Empty))
    }

    /// Rewrites the archive with `new` (labelled by `labels`, in order) in
    /// the first empty slots and every slot as large as the largest needs,
    /// every state kept, its sessions signed as `options` says (the chain
    /// rule checked first, before anything is written). Returns the
    /// positions of `new`.
    fn rewrite_with(
        mut self,
        new: Vec<KeySlot>,
        labels: &[String],
        content_key: &ContentKey,
        options: &UpdateOptions,
    ) -> Result<Vec<usize>> {
        let mut written = Vec::with_capacity(new.len());
        for (slot, label) in new.into_iter().zip(labels) {
            let index = self.first_empty().expect("room checked by wrap");
            self.slots[index] = slot;
            self.labels[index] = label.clone();
            written.push(index);
        }
        let header = HeaderPrefix::fitting_labeled(self.header.archive_id, &self.slots, &self.labels);
        let reader = self.file.try_clone().map_err(Error::io("opening", &self.path))?;
        let archive = Archive::reopen(reader, content_key, options.open_options())?;
        options.check_chain(&archive)?;
        let head: std::sync::Arc<[u8]> = header.encode_labeled(&self.slots, &self.labels).into();
        // Every state stays: growing the slots removes no history.
        let kept = archive.kept_states(&Retention::latest().last_states(std::num::NonZeroU64::MAX))?;
        rewrite_archive(&self.path, &archive, &head, &kept, &options.create, options.open_options())?;
        Ok(written)
    }

    fn in_use(&self) -> usize {
        self.slots.iter().filter(|s| !matches!(s, KeySlot::Empty)).count()
    }
}

/// The slots in use of the archive at `path`. Slots are not secret: no key
/// is needed.
pub fn list(path: &Path) -> Result<Vec<SlotInfo>> {
    let file = File::open(path).map_err(Error::io("opening", path))?;
    read(&file)
}

/// The slots in use of the archive `src` (a file, an object store), read
/// by position: the header and the slot table, nothing else.
///
/// A header whose prefix or table does not decode is read from its copy at
/// the end of the last session (FORMAT.md §3.11), as opening reads it.
pub fn read(src: &dyn ReadAt) -> Result<Vec<SlotInfo>> {
    let file_len = src.len().map_err(Error::stream("finding the archive's length"))?;
    let head = listed_head(src, file_len)?;
    let table = head.bytes[HEADER_PREFIX_LEN..].chunks(head.header.slot_len).map(decode_labeled_slot);
    let info =
        table.collect::<Result<Vec<_>, _>>()?.into_iter().enumerate().filter_map(|(index, (slot, label))| {
            let kind = match slot {
                KeySlot::Empty => return None,
                KeySlot::Password(p) => SlotKind::Password(KdfParams { m_kib: p.m_kib, t: p.t, p: p.p }),
                KeySlot::KeyFile(_) => SlotKind::KeyFile,
                KeySlot::Recipient(body) => SlotKind::Recipient(stanza_types(&body).unwrap_or_default()),
            };
            Some(SlotInfo { index, kind, label })
        });
    Ok(info.collect())
}

/// Adds a slot for each key of `keys` (new passwords at cost `kdf`) to the
/// archive at `path`, which `key` (any existing slot's key) opens. Returns
/// the positions written. A key larger than the archive's slots makes this
/// rewrite the whole archive with larger ones (see the module's comment).
/// Opening with a password spends at most the default KDF budget
/// ([`add_with_budget`] takes another).
pub fn add<'k>(path: &Path, key: impl Into<Unlock<'k>>, keys: &KeySet, kdf: KdfParams) -> Result<Vec<usize>> {
    add_with_budget(path, key, keys, kdf, DEFAULT_KDF_BUDGET)
}

/// [`add`], opening with a password that may spend `kdf_budget` (Argon2id
/// KiB × passes, as [`OpenOptions::kdf_budget`](crate::OpenOptions::kdf_budget)).
pub fn add_with_budget<'k>(
    path: &Path,
    key: impl Into<Unlock<'k>>,
    keys: &KeySet,
    kdf: KdfParams,
    kdf_budget: u64,
) -> Result<Vec<usize>> {
    let options = UpdateOptions::new().kdf_budget(kdf_budget);
    add_with_options(path, key, keys, kdf, &options).map(|added| added.slots)
}

/// What [`add_with_options`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlotsAdded {
    /// The positions written.
    pub slots: Vec<usize>,
    /// Whether a key did not fit the archive's slots, so that the whole
    /// archive was rewritten with larger ones into one fresh session
    /// (signed by the options' signing keys, else unsigned); `false`: the
    /// slots were written in place and every signature still holds.
    pub rewritten: bool,
}

/// [`add`], with `options`: of them, the KDF budget of opening
/// ([`UpdateOptions::kdf_budget`]), `wait`, and, for a rewrite, the
/// signing keys with their chain rule ([`UpdateOptions::sign`],
/// [`trust_earlier`](UpdateOptions::trust_earlier),
/// [`adopt_unsigned`](UpdateOptions::adopt_unsigned)), the profile,
/// threads and progress. Slots written in place sign nothing (signatures
/// leave the slot table out), so the chain rule is checked only when the
/// archive is rewritten, before anything is written.
pub fn add_with_options<'k>(
    path: &Path,
    key: impl Into<Unlock<'k>>,
    keys: &KeySet,
    kdf: KdfParams,
    options: &UpdateOptions,
) -> Result<SlotsAdded> {
    let mut table = SlotTable::open(path, options.wait)?;
    let (content_key, _) = table.unlock(key.into(), options.kdf_budget)?;
    let new = keys.wrap(&table.header.archive_id, &content_key, kdf, &table.slots)?;
    let labels = keys.slot_labels();
    if !new.iter().zip(&labels).all(|(slot, label)| table.header.fits(slot, label)) {
        let slots = table.rewrite_with(new, &labels, &content_key, options)?;
        return Ok(SlotsAdded { slots, rewritten: true });
    }
    let mut written = Vec::with_capacity(new.len());
    for (slot, label) in new.into_iter().zip(&labels) {
        let index = table.first_empty().expect("room checked by wrap");
        table.write(index, slot, label)?;
        written.push(index);
    }
    Ok(SlotsAdded { slots: written, rewritten: false })
}

/// Removes slot `index` from the archive at `path`, which `key` opens:
/// its bytes are overwritten with zeros in the file. The last slot in use
/// is never removed. Opening with a password spends at most the default
/// KDF budget ([`remove_with_budget`] takes another).
pub fn remove<'k>(path: &Path, key: impl Into<Unlock<'k>>, index: usize) -> Result<()> {
    remove_with_budget(path, key, index, DEFAULT_KDF_BUDGET)
}

/// [`remove`], opening with a password that may spend `kdf_budget`.
pub fn remove_with_budget<'k>(
    path: &Path,
    key: impl Into<Unlock<'k>>,
    index: usize,
    kdf_budget: u64,
) -> Result<()> {
    let mut table = SlotTable::open(path, false)?;
    table.unlock(key.into(), kdf_budget)?;
    if table.slots.get(index).is_none_or(|s| matches!(s, KeySlot::Empty)) {
        return Err(Error::SlotNotInUse { index });
    }
    if table.in_use() == 1 {
        return Err(Error::LastSlot);
    }
    table.write(index, KeySlot::Empty, "")
}

/// Replaces the password slot that `old` opens with one for `new` (cost
/// `kdf`), at the same position, so that `key list` and `key remove` keep
/// naming it: the new slot is written and synced in an empty slot first,
/// then the old one is overwritten with it, then the spare is emptied (at
/// every step a slot opens the archive with `old` or `new`). Returns the
/// slot's position. Trying `old` spends at
/// most the default KDF budget ([`change_password_with_budget`] takes
/// another).
pub fn change_password(path: &Path, old: &Password, new: &Password, kdf: KdfParams) -> Result<usize> {
    change_password_with_budget(path, old, new, kdf, DEFAULT_KDF_BUDGET)
}

/// [`change_password`], trying `old` within `kdf_budget`.
pub fn change_password_with_budget(
    path: &Path,
    old: &Password,
    new: &Password,
    kdf: KdfParams,
    kdf_budget: u64,
) -> Result<usize> {
    let mut table = SlotTable::open(path, false)?;
    let (content_key, old_index) = table.unlock(Unlock::Password(old), kdf_budget)?;
    let slot = KeySet::new().password(new).wrap(&table.header.archive_id, &content_key, kdf, &[])?.remove(0);
    let Some(index) = table.first_empty() else {
        return Err(Error::SlotsFull);
    };
    // The new password's slot keeps the old one's label and position.
    let label = table.labels[old_index].clone();
    table.write(index, slot.clone(), &label)?;
    table.write(old_index, slot, &label)?;
    table.write(index, KeySlot::Empty, "")?;
    Ok(old_index)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::file::head_copy_tests::{flipped, password, two_sessions};
    use crate::format::Trailer;

    /// A [`two_sessions`] archive, unlocked for its slots, and the position
    /// of its key-file slot.
    fn unlocked(path: &Path) -> (SlotTable, usize) {
        let mut table = SlotTable::open(path, false).unwrap();
        table.unlock(Unlock::Password(&password()), DEFAULT_KDF_BUDGET).unwrap();
        assert_eq!(table.copies.len(), 2, "each session's copy is found");
        let index = table.slots.iter().position(|s| matches!(s, KeySlot::KeyFile(_))).unwrap();
        (table, index)
    }

    fn empty_slot(table: &SlotTable) -> Vec<u8> {
        encode_labeled_slot(&KeySlot::Empty, "", table.header.slot_len)
    }

    fn opens(bytes: &[u8], key: Unlock<'_>) -> bool {
        Archive::open(Cursor::new(bytes.to_vec()), key).is_ok()
    }

    #[test]
    fn a_key_remove_cut_between_the_copies_and_the_primary_leaves_the_old_set() {
        let dir = tempfile::tempdir().unwrap();
        let (path, key_file) = two_sessions(dir.path());
        let (table, index) = unlocked(&path);
        // The crash: every copy written and synced, the primary not yet.
        table.write_copies(index, &empty_slot(&table)).unwrap();
        drop(table);
        let bytes = std::fs::read(&path).unwrap();
        let pw = password();
        let (by_key_file, by_password) = (|| Unlock::from(&key_file), || Unlock::from(&pw));
        assert!(opens(&bytes, by_key_file()) && opens(&bytes, by_password()), "the old set opens");
        let report = Archive::open(Cursor::new(bytes.clone()), &password()).unwrap().verify().unwrap();
        assert!(report.lost.iter().any(|l| l.contains("cut short")), "{:?}", report.lost);
        // No copy takes the removed key any more, whatever the primary's state.
        let damaged = flipped(&bytes, 10, 3);
        assert!(!opens(&damaged, by_key_file()) && opens(&damaged, by_password()));
        // Run again, the removal ends: the key file opens nothing, through
        // the primary or any session's copy.
        remove(&path, &password(), index).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(!opens(&bytes, by_key_file()) && opens(&bytes, by_password()));
        let damaged = flipped(&bytes, 10, 3);
        assert!(!opens(&damaged, by_key_file()) && opens(&damaged, by_password()));
        // The file cut after the first session: its copy is the one read.
        let last = Trailer::parse(damaged[damaged.len() - TRAILER_LEN..].try_into().unwrap()).unwrap();
        let first = &damaged[..last.previous_trailer as usize];
        assert!(!opens(first, by_key_file()), "the first session's copy lost the slot too");
        let earlier = Archive::open(Cursor::new(first.to_vec()), by_password()).unwrap();
        assert_eq!((earlier.entry_count(), earlier.header_damage().is_some()), (3, true));
        assert!(Archive::open(Cursor::new(bytes), &password()).unwrap().verify().unwrap().is_ok());
    }

    #[test]
    fn the_primary_first_would_let_a_removed_key_open_through_a_stale_copy() {
        // Why the copies go first: a primary without the slot and a copy
        // that still holds it open with the removed key (the copy is read
        // when no slot of the primary opens).
        let dir = tempfile::tempdir().unwrap();
        let (path, key_file) = two_sessions(dir.path());
        let (table, index) = unlocked(&path);
        table.write_primary(index, &empty_slot(&table)).unwrap();
        drop(table);
        let archive = Archive::open(std::fs::File::open(&path).unwrap(), &key_file).unwrap();
        assert!(archive.header_damage().is_some());
    }
}
