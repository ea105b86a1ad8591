//! How an archive is changed in place ([`UpdateOptions`]) and what a
//! change did ([`UpdateReport`]), shared by the updater and maintenance.

use std::sync::Arc;

use crate::archive::{Archive, OpenOptions, Retention};
use crate::chunk::ChunkParams;
use crate::crypto::DEFAULT_KDF_BUDGET;
use crate::error::Result;
use crate::keys::{Fingerprint, SigningKey};
use crate::profile::WorkloadProfile;
use crate::progress::Progress;
use crate::session::{CreateOptions, Selection};
use crate::storage::ReadAt;
use crate::warning::CreateWarning;

/// How an archive is changed in place. Every setter's doc states its
/// default.
#[derive(Debug, Clone)]
pub struct UpdateOptions {
    pub(super) create: CreateOptions,
    profile: WorkloadProfile,
    pub(super) wait: bool,
    pub(super) kdf_budget: u64,
    earlier_signers: Vec<Fingerprint>,
    pub(super) dry_run: bool,
    pub(super) retention: Retention,
    recorded_rules: bool,
}

impl Default for UpdateOptions {
    fn default() -> Self {
        UpdateOptions::new()
    }
}

impl UpdateOptions {
    /// The [`WorkloadProfile::Balanced`] preset; fail at once when another
    /// writer holds the archive.
    pub fn new() -> UpdateOptions {
        UpdateOptions {
            create: CreateOptions::new(),
            profile: WorkloadProfile::Balanced,
            wait: false,
            kdf_budget: DEFAULT_KDF_BUDGET,
            earlier_signers: Vec::new(),
            dry_run: false,
            retention: Retention::latest(),
            recorded_rules: true,
        }
    }

    /// Page size, zstd level and threads of the new pages, and the reading
    /// knobs, from `profile`. Default: `Balanced`.
    pub fn profile(mut self, profile: WorkloadProfile) -> Self {
        self.create = self.create.profile(profile);
        self.profile = profile;
        self
    }

    /// Ends the session (each session of a compaction or a repair's
    /// rewrite) with a recovery record of `percent` % ([`CreateOptions::recovery`]).
    /// Default: the profile's (none; 5 for `Archival`).
    pub fn recovery(mut self, percent: u8) -> Self {
        self.create = self.create.recovery(percent);
        self
    }

    /// Overrides the zstd level of new pages. Default: the profile's.
    pub fn zstd_level(mut self, level: i32) -> Self {
        self.create = self.create.zstd_level(level);
        self
    }

    /// The sizes new large files are cut to ([`CreateOptions::chunk_sizes`]).
    /// Default: 64 KiB / 256 KiB / 1 MiB.
    pub fn chunk_sizes(mut self, params: ChunkParams) -> Self {
        self.create = self.create.chunk_sizes(params);
        self
    }

    /// The session's label (`-m TEXT`), kept in its session header (see
    /// [`CreateOptions::label`]); `compact` gives it to the new archive's
    /// compaction session (without it, that session keeps the label of the
    /// state it holds). Default: none.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.create = self.create.label(label);
        self
    }

    /// Overrides the worker threads. Default: the profile's (all cores).
    pub fn threads(mut self, threads: usize) -> Self {
        self.create = self.create.threads(threads);
        self
    }

    /// Which paths `add` and `update` walk, besides the rules the archive
    /// recorded ([`recorded_rules`](Self::recorded_rules)); see
    /// [`CreateOptions::selection`]. Default: all.
    pub fn selection(mut self, selection: Selection) -> Self {
        self.create = self.create.selection(selection);
        self
    }

    /// Follow symbolic links ([`CreateOptions::dereference`]). Default:
    /// off, unless the archive recorded it.
    pub fn dereference(mut self, follow: bool) -> Self {
        self.create = self.create.dereference(follow);
        self
    }

    /// Store extended attributes and ACLs ([`CreateOptions::xattrs`]).
    /// Default: off, unless the archive recorded it.
    pub fn xattrs(mut self, yes: bool) -> Self {
        self.create = self.create.xattrs(yes);
        self
    }

    /// Fail at the first thing the walk would skip with a warning
    /// ([`CreateOptions::strict`]); nothing is appended then. Default: off,
    /// unless the archive recorded it.
    pub fn strict(mut self, strict: bool) -> Self {
        self.create = self.create.strict(strict);
        self
    }

    /// Whether a change walks by the rules the archive's last session
    /// recorded (FORMAT.md §3.9b: the excludes, tag files, `--exclude-vcs`,
    /// `--exclude-caches`, `--one-file-system`, `-h`, `--xattrs`,
    /// `--strict` it was made or last changed with), added to those set
    /// here; the new session records the rules it walked by, and a
    /// compaction carries them over. With `false`, only the rules set here
    /// apply and are recorded. An archive that recorded none (or was made
    /// before rules were recorded) walks by those set here. Default: `true`.
    pub fn recorded_rules(mut self, apply: bool) -> Self {
        self.recorded_rules = apply;
        self
    }

    /// Whether the rules an archive recorded apply ([`recorded_rules`](Self::recorded_rules)).
    pub(super) fn applies_recorded_rules(&self) -> bool {
        self.recorded_rules
    }

    /// Adds the walk rules `archive` recorded to the create options, unless
    /// [`recorded_rules`](Self::recorded_rules) is off.
    pub(super) fn adopt_recorded_rules<S: ReadAt>(&mut self, archive: &Archive<S>) -> Result<()> {
        if let (true, Some(record)) = (self.recorded_rules, &archive.last_session().walk) {
            self.create = self.create.clone().with_walk_record(record)?;
        }
        Ok(())
    }

    /// Waits for another writer to finish instead of failing with
    /// [`Error::Locked`](crate::error::Error::Locked). Default: `false`.
    pub fn wait(mut self, wait: bool) -> Self {
        self.wait = wait;
        self
    }

    /// Told of each entry stored and each path removed (tar's `-v`).
    /// Default: none.
    pub fn log(mut self, log: Arc<dyn crate::EntryLog>) -> Self {
        self.create = self.create.log(log);
        self
    }

    /// Counters updated as data is archived. Default: none.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.create = self.create.progress(progress);
        self
    }

    /// Does the whole change but writes nothing (tar's `-n`): the archive
    /// is opened, locked and read, the session's pages and index are made
    /// and counted, and the report says what would be stored, replaced and
    /// removed and about how many bytes appended
    /// ([`UpdateReport::bytes_written`]: pages and index, not the root and
    /// trailer); a torn tail is reported, not cut; runs past the bound are
    /// reported as [`UpdateReport::runs_merged`], not merged. `compact`
    /// returns about the length the compacted archive would have. The file is
    /// left byte for byte as it was. Default: `false`.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Which states [`ArchiveUpdater::compact`](super::ArchiveUpdater::compact)
    /// keeps readable: the last `n` ([`Retention::last_states`]), those of
    /// a recent window ([`Retention::since`]), the newest of each recent
    /// hour, day, week, month or year ([`Retention::per`]), any of them
    /// combined; the pages no kept state uses are reclaimed, and
    /// [`Archive::reclaimable`] says how many bytes that is at least.
    /// Changes in place ignore it. Default: [`Retention::latest`], the
    /// last state only.
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The Argon2id work opening the archive may spend on its password
    /// slots ([`OpenOptions::kdf_budget`]). Default:
    /// [`DEFAULT_KDF_BUDGET`](crate::limits::DEFAULT_KDF_BUDGET).
    pub fn kdf_budget(mut self, kib_passes: u64) -> Self {
        self.kdf_budget = kib_passes;
        self
    }

    /// Signs the new session with `key` too ([`CreateOptions::sign`]).
    /// Since a signature covers the whole chain, the change first checks
    /// that every earlier session is signed by a signing key or a key of
    /// [`trust_earlier`](Self::trust_earlier) (or adopted by a later one),
    /// and fails with [`Error::Signature`](crate::Error::Signature)
    /// naming the session, before anything is written, when one is not.
    /// Default: none, an unsigned session.
    pub fn sign(mut self, key: Arc<SigningKey>) -> Self {
        self.create = self.create.sign(key);
        self
    }

    /// Signers besides the signing keys whose sessions the check of
    /// [`sign`](Self::sign) accepts. Default: none.
    pub fn trust_earlier(mut self, signers: impl IntoIterator<Item = Fingerprint>) -> Self {
        self.earlier_signers.extend(signers);
        self
    }

    /// Skips the check of [`sign`](Self::sign): the signers vouch for every
    /// earlier session, signed or not, and the signatures say so
    /// ([`CreateOptions::adopt_unsigned`]). Default: false.
    pub fn adopt_unsigned(mut self, adopts: bool) -> Self {
        self.create = self.create.adopt_unsigned(adopts);
        self
    }

    /// The chain rule of [`sign`](Self::sign), on the archive to change.
    pub(super) fn check_chain<S: ReadAt>(&self, archive: &Archive<S>) -> Result<()> {
        let signing = &self.create.signing;
        if signing.keys.is_empty() || signing.adopts {
            return Ok(());
        }
        let mut trusted = self.earlier_signers.clone();
        trusted.extend(signing.keys.iter().map(|k| k.fingerprint()));
        archive.check_signers(&trusted).map(drop)
    }

    pub(super) fn open_options(&self) -> OpenOptions {
        OpenOptions::new()
            .profile(self.profile)
            .threads(self.create.tuning.threads)
            .kdf_budget(self.kdf_budget)
    }
}

/// What a change in place did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpdateReport {
    /// Entries stored by the session.
    pub stored: u64,
    /// Of those, how many replace an entry the archive held at the same
    /// path.
    pub replaced: u64,
    /// Deletion records written (each hides a path and what lies below it).
    pub deleted: u64,
    /// `update` without `delete_missing`: stored paths under the inputs
    /// that are no longer on disk (each with what lies below it), kept in
    /// the new state as they were.
    pub kept_missing: u64,
    /// Bytes of file content stored.
    pub content_bytes: u64,
    /// Bytes appended to the archive (0 when nothing changed).
    pub bytes_written: u64,
    /// Entries in the archive afterwards (0 after a dry run, which does
    /// not check the new run against the old ones).
    pub entries: u64,
    /// Bytes of a torn tail (an interrupted session) cut off first.
    pub torn_tail_cut: u64,
    /// Whether the entries runs were first merged into one (past the bound
    /// on runs), in a session of its own.
    pub runs_merged: bool,
    /// Things skipped, one line each, as [`CreateReport`](crate::create::CreateReport) has them.
    pub warnings: Vec<CreateWarning>,
}
