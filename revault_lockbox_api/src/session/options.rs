//! How a write session is set up ([`CreateOptions`]): the caller's side of
//! the writer, held apart from the engine so that options read in one
//! place.

use std::sync::Arc;

use super::Selection;
use crate::chunk::ChunkParams;
use crate::crypto::KdfParams;
use crate::entry_log::{EntryLog, Log};
use crate::error::{Error, Result};
use crate::format::WalkRecord;
use crate::keys::SigningKey;
use crate::profile::{CreateTuning, WorkloadProfile};
use crate::progress::Progress;
use crate::storage::ReadAt;

/// How an archive is written. Every setter's doc states its default.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    pub(crate) tuning: CreateTuning,
    /// The preset the tuning came from, for [`threads`](Self::threads).
    profile: WorkloadProfile,
    pub(crate) kdf: KdfParams,
    pub(crate) progress: Option<Arc<Progress>>,
    pub(crate) log: Option<Log>,
    pub(crate) skip_files: Vec<(u64, u64)>,
    pub(crate) dereference: bool,
    pub(crate) strict: bool,
    pub(crate) overwrite: bool,
    pub(crate) selection: Selection,
    pub(crate) xattrs: bool,
    pub(crate) label: String,
    pub(crate) signing: Signing,
    pub(crate) chunk_params: ChunkParams,
    /// The file the archive is written to, read back for recovery records.
    pub(crate) read_back: Option<ReadBack>,
}

/// The file a writer writes to, opened for reading: a session's recovery
/// record is computed from its bytes read back (FORMAT.md §3.12).
#[derive(Clone)]
pub(crate) struct ReadBack(pub(crate) Arc<dyn ReadAt>);

impl std::fmt::Debug for ReadBack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadBack")
    }
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions::new()
    }
}

impl CreateOptions {
    /// The [`WorkloadProfile::Balanced`] preset and the default Argon2id cost.
    pub fn new() -> CreateOptions {
        CreateOptions {
            tuning: WorkloadProfile::Balanced.create_tuning(),
            profile: WorkloadProfile::Balanced,
            kdf: KdfParams::default(),
            progress: None,
            log: None,
            skip_files: Vec::new(),
            dereference: false,
            strict: false,
            overwrite: false,
            selection: Selection::new(),
            xattrs: false,
            label: String::new(),
            signing: Signing::default(),
            chunk_params: ChunkParams::default(),
            read_back: None,
        }
    }

    /// Takes every knob from `profile`. Default: [`WorkloadProfile::Balanced`].
    pub fn profile(mut self, profile: WorkloadProfile) -> Self {
        self.tuning = profile.create_tuning();
        self.profile = profile;
        self
    }

    /// Overrides the zstd level of data pages. Default: the profile's (3 for
    /// `Balanced`).
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.tuning.zstd_level = level;
        self
    }

    /// Overrides the plaintext bytes of every page, small files' pages
    /// included. Default: the profile's (1 MiB for `Balanced`, 4 MiB for its
    /// runs of small files).
    pub fn page_size(mut self, bytes: usize) -> Self {
        self.tuning.page_size = bytes;
        self.tuning.small_files_page_size = bytes;
        self
    }

    /// Overrides the plaintext bytes of pages that hold only files smaller
    /// than half of [`page_size`](Self::page_size); set it after
    /// `page_size`. Default: the profile's (4 MiB for `Balanced`).
    pub fn small_files_page_size(mut self, bytes: usize) -> Self {
        self.tuning.small_files_page_size = bytes;
        self
    }

    /// Overrides the worker threads, and the pages in flight with the
    /// profile's for that many threads (as `zstd -T1` holds less than
    /// `-T0`). Default: the profile's (all cores).
    pub fn threads(mut self, threads: usize) -> Self {
        self.tuning.threads = threads;
        self.tuning.pages_in_flight =
            self.profile.create_tuning_for(threads).pages_in_flight.max(threads + 1);
        self
    }

    /// Ends every session with a recovery record of `percent` % (1 to 50;
    /// 0: none): Reed–Solomon parity over the session's bytes that repairs
    /// one contiguous run of damage of about that share, or scattered bad
    /// sectors (FORMAT.md §3.12, docs/RECOVERY.md). Needs a file to read
    /// the session back from: a stream refuses it
    /// ([`Error::RecoveryUnavailable`]). Default: the profile's (none; 5
    /// for `Archival`).
    pub fn recovery(mut self, percent: u8) -> Self {
        self.tuning.recovery_percent = percent;
        self
    }

    /// The file the archive is written to, for a recovery record to read
    /// the session back from; none for a writer to a stream.
    pub(crate) fn read_back(mut self, file: std::fs::File) -> Self {
        self.read_back = Some(ReadBack(Arc::new(file)));
        self
    }

    /// Argon2id cost of the password slot. Default: m = 64 MiB, t = 3, p = 4.
    /// Lower costs make password guessing cheaper for whoever holds the file.
    pub fn kdf(mut self, params: KdfParams) -> Self {
        self.kdf = params;
        self
    }

    /// Told of each entry stored and each path removed, as it goes (tar's
    /// `-v`). Default: none.
    pub fn log(mut self, log: Arc<dyn EntryLog>) -> Self {
        self.log = Some(Log(log));
        self
    }

    /// Counters updated as data is archived, for progress displays.
    /// Default: none.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Never archives the file with this device and inode number: the
    /// archive itself when it is streamed into the tree being archived
    /// (`create -o - . > x.lbox`). [`create_archive`](crate::create_archive)
    /// skips its own output without being told. Default: none.
    pub fn skip_file(mut self, dev: u64, ino: u64) -> Self {
        self.skip_files.push((dev, ino));
        self
    }

    /// Store every extended attribute of each entry (POSIX ACLs
    /// included, as the `system.posix_acl_*` attributes), as `tar
    /// --xattrs` does. An entry whose attributes cannot be read or exceed
    /// 72 KiB is stored without them, with a warning. Default: off.
    pub fn xattrs(mut self, yes: bool) -> Self {
        self.xattrs = yes;
        self
    }

    /// Follow symbolic links, inputs and those inside the trees, storing
    /// what they point to (tar's `-h`); a link to a directory containing it
    /// is skipped with a warning, not followed forever. Default: off, links
    /// are stored as links.
    pub fn dereference(mut self, follow: bool) -> Self {
        self.dereference = follow;
        self
    }

    /// Fail at the first thing the walk would skip or store incompletely
    /// with a warning ([`Error::Strict`](crate::error::Error::Strict)),
    /// before the archive is renamed into place. Default: off, such things
    /// are reported in
    /// [`CreateReport::warnings`](crate::create::CreateReport::warnings).
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Lets [`create_archive`](crate::create_archive) replace an existing
    /// archive (once the new one is complete). Default: false, an existing
    /// file is refused with [`Error::AlreadyExists`](crate::error::Error::AlreadyExists).
    pub fn overwrite(mut self, overwrite: bool) -> Self {
        self.overwrite = overwrite;
        self
    }

    /// Which paths the tree walk of [`create_archive`](crate::create_archive)
    /// and [`write_archive`](crate::create::write_archive) takes. Default: all.
    pub fn selection(mut self, selection: Selection) -> Self {
        self.selection = selection;
        self
    }

    /// The session's label (`-m TEXT`), kept in its session header: UTF-8
    /// without control characters, at most 1024 bytes; the writer refuses
    /// others with [`Error::BadLabel`](crate::error::Error::BadLabel).
    /// Default: none.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Signs the session with `key` too (FORMAT.md §3.10): its commit hash,
    /// with Ed25519 and ML-DSA-65, in the block before the trailer. At most
    /// 12 keys; more fail the commit with
    /// [`KeyError::InvalidSignature`](crate::keys::KeyError::InvalidSignature).
    /// Default: none, an unsigned session.
    pub fn sign(mut self, key: Arc<SigningKey>) -> Self {
        self.signing.keys.push(key);
        self
    }

    /// Whether the signers also vouch for every earlier session, signed or
    /// not (`--adopt-unsigned`; the flag is signed). Default: false.
    pub fn adopt_unsigned(mut self, adopts: bool) -> Self {
        self.signing.adopts = adopts;
        self
    }

    /// The sizes large files are cut to (smallest, average, largest
    /// chunk; [`ChunkParams::new`] checks them): a file that is not sparse
    /// nor named by hard links is stored as chunks from the smallest size
    /// on, each distinct chunk once (FORMAT.md §3.5c). Default: 64 KiB /
    /// 256 KiB / 1 MiB ([`ChunkParams::default`]).
    pub fn chunk_sizes(mut self, params: ChunkParams) -> Self {
        self.chunk_params = params;
        self
    }

    /// The tuning in effect.
    pub fn tuning(&self) -> &CreateTuning {
        &self.tuning
    }

    /// The walk rules a session written with these options records in its
    /// header (FORMAT.md §3.9b): the selection but `--newer`, and whether
    /// links are followed, xattrs stored and skips fatal. `None` when
    /// there are none; [`Error::BadWalkRules`] when they are too many to
    /// record.
    pub(crate) fn walk_record(&self) -> Result<Option<WalkRecord>> {
        let mut record = WalkRecord {
            dereference: self.dereference,
            xattrs: self.xattrs,
            strict: self.strict,
            ..WalkRecord::default()
        };
        self.selection.record_into(&mut record);
        if record.is_empty() {
            return Ok(None);
        }
        record.encode().map_err(|reason| Error::BadWalkRules { reason })?;
        Ok(Some(record))
    }

    /// These options with the rules of `record` added (an archive's, for an
    /// append that walks as the archive was made).
    pub(crate) fn with_walk_record(mut self, record: &WalkRecord) -> Result<Self> {
        self.dereference |= record.dereference;
        self.xattrs |= record.xattrs;
        self.strict |= record.strict;
        self.selection = self.selection.with_record(record)?;
        Ok(self)
    }
}

/// Who signs a session, and whether they vouch for the earlier ones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Signing {
    pub(crate) keys: Vec<Arc<SigningKey>>,
    pub(crate) adopts: bool,
}
