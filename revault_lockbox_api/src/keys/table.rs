//! The archive's key slots: which keys lock a new archive ([`KeySet`]),
//! which key opens one ([`Unlock`]), building the slot table and finding
//! the content key in it.

use super::{
    check_recipient_mix, unwrap_content_key, wrap_content_key, Identity, KeyError, KeyFile, Recipient,
};
use crate::crypto::{
    unwrap_key_file_slots, unwrap_password_slots, wrap_key_file_slot, wrap_password_slot, ContentKey,
    KdfParams, Password, PasswordFailure,
};
use crate::error::{Error, KdfError, Result};
use crate::format::{
    check_slot_label, recipient_slot_aad, KeySlot, ARCHIVE_ID_LEN, KEY_SLOTS, MAX_KEY_SLOT_BODY_LEN,
};

/// The keys a new archive is locked with: passwords (Argon2id), key files
/// and public-key recipients, one key slot each, at most 16 in all. Any one of them opens
/// the archive.
///
/// ```
/// use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, KeySet};
/// use revault_lockbox_api::keys::{Identity, Recipient, keygen};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (identity_file, recipient) = keygen(false)?; // or age-keygen's output
/// let recipient: Recipient = recipient.parse()?;
/// let w = ArchiveWriter::new(Vec::new(), KeySet::new().recipient(recipient), CreateOptions::new())?;
/// let bytes = w.finish()?;
/// // No password, no KDF: the identity opens it.
/// let identities = Identity::parse_file(identity_file.as_bytes(), &mut |_| None)?;
/// Archive::open(std::io::Cursor::new(bytes), &identities)?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct KeySet {
    passwords: Vec<Password>,
    key_files: Vec<KeyFile>,
    recipients: Vec<Recipient>,
    allow_mixed: bool,
    labels: Vec<String>,
}

impl KeySet {
    /// No keys yet.
    pub fn new() -> KeySet {
        KeySet::default()
    }

    /// Adds a password slot.
    pub fn password(mut self, password: &Password) -> Self {
        self.passwords.push(password.clone());
        self
    }

    /// Adds a key-file slot (no KDF).
    pub fn key_file(mut self, key: &KeyFile) -> Self {
        self.key_files.push(key.clone());
        self
    }

    /// Adds a recipient slot.
    pub fn recipient(mut self, recipient: Recipient) -> Self {
        self.recipients.push(recipient);
        self
    }

    /// Adds recipient slots.
    pub fn recipients(mut self, recipients: impl IntoIterator<Item = Recipient>) -> Self {
        self.recipients.extend(recipients);
        self
    }

    /// Allows post-quantum and classical-only recipients together (the
    /// archive is then only as strong as its classical slots). Default: off.
    pub fn allow_mixed_recipients(mut self, yes: bool) -> Self {
        self.allow_mixed = yes;
        self
    }

    /// Whether a password slot will be written (the Argon2id cost is paid).
    pub fn has_password(&self) -> bool {
        !self.passwords.is_empty()
    }

    /// Whether any key was given.
    pub fn has_keys(&self) -> bool {
        !(self.passwords.is_empty() && self.key_files.is_empty() && self.recipients.is_empty())
    }

    /// The slot table: one slot per key, then empty slots.
    pub(crate) fn slots(
        &self,
        archive_id: &[u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
        kdf: KdfParams,
    ) -> Result<Vec<KeySlot>> {
        let mut slots = self.wrap(archive_id, content_key, kdf, &[])?;
        slots.resize(KEY_SLOTS, KeySlot::Empty);
        Ok(slots)
    }

    /// Labels every slot this set writes with `label` (FORMAT.md §3.2: a
    /// name `key list` shows, not secret and not authenticated; recipients
    /// stay anonymous without one). It must pass
    /// [`check_slot_label`](crate::slots::check_slot_label), else writing
    /// fails with [`Error::BadLabel`]. Default: none.
    pub fn label(self, label: impl Into<String>) -> Self {
        self.labels([label.into()])
    }

    /// One label per slot, in the order the slots are written: passwords,
    /// then key files, then recipients (in the order added). One label
    /// names every slot (as [`label`](Self::label)); none, none; any other
    /// count than the keys' makes writing fail with [`Error::BadLabel`].
    /// Empty labels leave their slots unnamed.
    pub fn labels(mut self, labels: impl IntoIterator<Item = String>) -> Self {
        self.labels = labels.into_iter().collect();
        self
    }

    /// How many slots this set writes: one per password, key file and
    /// recipient.
    pub fn key_count(&self) -> usize {
        self.passwords.len() + self.key_files.len() + self.recipients.len()
    }

    /// Each slot's label, in the order [`wrap`](Self::wrap) returns the
    /// slots (empty: none).
    pub(crate) fn slot_labels(&self) -> Vec<String> {
        match self.labels.as_slice() {
            [] => vec![String::new(); self.key_count()],
            [one] => vec![one.clone(); self.key_count()],
            many => many.to_vec(),
        }
    }

    /// What [`wrap`](Self::wrap) refuses before any KDF runs: no key, more
    /// than the free slots, recipients mixed against the rule, a bad label
    /// or labels that do not pair with the keys.
    pub(crate) fn check(&self, existing: &[KeySlot]) -> Result<()> {
        for label in &self.labels {
            check_slot_label(label).map_err(|reason| Error::BadLabel { reason })?;
        }
        let used = existing.iter().filter(|s| !matches!(s, KeySlot::Empty)).count();
        let count = self.key_count();
        if count == 0 || used + count > KEY_SLOTS {
            return Err(Error::KeyCount { given: count, in_use: used });
        }
        if self.labels.len() > 1 && self.labels.len() != count {
            return Err(Error::BadLabel { reason: "give one key label for all keys, or one for each key" });
        }
        check_recipient_mix(&self.recipients, self.allow_mixed)?;
        Ok(())
    }

    /// One slot per key, in order; `existing` (slots already in the
    /// archive) counts towards the limit and the mixing rule.
    pub(crate) fn wrap(
        &self,
        archive_id: &[u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
        kdf: KdfParams,
        existing: &[KeySlot],
    ) -> Result<Vec<KeySlot>> {
        self.check(existing)?;
        let mut slots = self.wrap_passwords(archive_id, content_key, kdf)?;
        slots.extend(self.wrap_without_kdf(archive_id, content_key)?);
        Ok(slots)
    }

    /// The password slots, an Argon2id derivation each.
    pub(crate) fn wrap_passwords(
        &self,
        archive_id: &[u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
        kdf: KdfParams,
    ) -> Result<Vec<KeySlot>> {
        if !self.passwords.is_empty() {
            kdf.check().map_err(|reason| kdf.invalid(reason))?;
        }
        self.passwords
            .iter()
            .map(|password| {
                let slot = wrap_password_slot(archive_id, content_key, password, kdf).map_err(|e| match e
                    .kind()
                {
                    std::io::ErrorKind::InvalidInput => kdf.invalid(KdfError::Refused),
                    _ => Error::Stream { action: "deriving the password key", source: e },
                })?;
                Ok(KeySlot::Password(slot))
            })
            .collect()
    }

    /// The slots that need no KDF: key files, then recipients.
    pub(crate) fn wrap_without_kdf(
        &self,
        archive_id: &[u8; ARCHIVE_ID_LEN],
        content_key: &ContentKey,
    ) -> Result<Vec<KeySlot>> {
        let mut slots = Vec::with_capacity(self.key_files.len() + self.recipients.len());
        for key in &self.key_files {
            let slot = wrap_key_file_slot(archive_id, content_key, &key.0)
                .map_err(Error::stream("drawing random bytes"))?;
            slots.push(KeySlot::KeyFile(slot));
        }
        let aad = recipient_slot_aad(archive_id);
        for recipient in &self.recipients {
            let body = wrap_content_key(recipient, content_key.bytes(), &aad)?;
            if body.len() > MAX_KEY_SLOT_BODY_LEN {
                return Err(Error::RecipientSlotTooLarge { recipient: recipient.to_string() });
            }
            slots.push(KeySlot::Recipient(body));
        }
        Ok(slots)
    }
}

impl From<&Password> for KeySet {
    fn from(password: &Password) -> KeySet {
        KeySet::new().password(password)
    }
}

/// What opens an archive: a password (tried on the password slots, each
/// try an Argon2id derivation), identities (tried on the recipient slots)
/// or a key file (on the key-file slots); keys need no KDF.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Unlock<'a> {
    /// A password.
    Password(&'a Password),
    /// Age or SSH identities.
    Identities(&'a [Identity]),
    /// A key file.
    KeyFile(&'a KeyFile),
}

impl<'a> From<&'a KeyFile> for Unlock<'a> {
    fn from(key: &'a KeyFile) -> Unlock<'a> {
        Unlock::KeyFile(key)
    }
}

impl<'a> From<&'a Password> for Unlock<'a> {
    fn from(password: &'a Password) -> Unlock<'a> {
        Unlock::Password(password)
    }
}

impl<'a> From<&'a [Identity]> for Unlock<'a> {
    fn from(identities: &'a [Identity]) -> Unlock<'a> {
        Unlock::Identities(identities)
    }
}

impl<'a> From<&'a Vec<Identity>> for Unlock<'a> {
    fn from(identities: &'a Vec<Identity>) -> Unlock<'a> {
        Unlock::Identities(identities)
    }
}

impl Unlock<'_> {
    /// The content key from the first slot that opens, and that slot's
    /// position. Fails the same way for a wrong key and a damaged slot. A
    /// password spends at most `kdf_budget` (Argon2id KiB × passes) on the
    /// slots, cheapest first.
    pub(crate) fn content_key(
        &self,
        archive_id: &[u8; ARCHIVE_ID_LEN],
        slots: &[KeySlot],
        kdf_budget: u64,
    ) -> Result<(ContentKey, usize)> {
        match self {
            Unlock::Password(password) => unwrap_password_slots(archive_id, slots, password, kdf_budget)
                .map_err(|failure| match failure {
                    PasswordFailure::Memory(memory) => {
                        Error::Stream { action: "deriving the password key", source: memory }
                    }
                    PasswordFailure::NoneOpened => Error::WrongPassword,
                    PasswordFailure::OverBudget { slot, params } => {
                        Error::KdfOverBudget { slot, m_kib: params.m_kib, t: params.t, budget: kdf_budget }
                    }
                }),
            Unlock::KeyFile(key) => {
                unwrap_key_file_slots(archive_id, slots, &key.0).map_err(|_| Error::WrongKeyFile)
            }
            Unlock::Identities(identities) => {
                let aad = recipient_slot_aad(archive_id);
                let mut refused = None;
                for (i, slot) in slots.iter().enumerate() {
                    let KeySlot::Recipient(body) = slot else { continue };
                    match unwrap_content_key(identities, body, &aad) {
                        Ok(Some(key)) => return Ok((ContentKey::from_bytes(&key), i)),
                        // The user's side, not the archive's: said as it is.
                        Err(e @ KeyError::MissingPlugin { .. }) => return Err(Error::Key(e)),
                        Err(e @ KeyError::PluginRefused { .. }) => {
                            refused.get_or_insert(e);
                        }
                        // A malformed body is as opaque as a wrong key: the
                        // slot table is not authenticated as a whole.
                        Ok(None) | Err(_) => {}
                    }
                }
                Err(refused.map_or(Error::NoIdentityMatched, Error::Key))
            }
        }
    }
}
