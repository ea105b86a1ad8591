//! How an archive is opened: the reading knobs of a profile, the KDF
//! budget, the state, the trusted signers and the progress counters.

use std::sync::Arc;

use super::AsOf;
use crate::crypto::DEFAULT_KDF_BUDGET;
use crate::keys::Fingerprint;
use crate::profile::{ReadTuning, WorkloadProfile};
use crate::progress::Progress;

/// How an archive is read. Every setter's doc states its default.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub(crate) tuning: ReadTuning,
    /// The preset the tuning came from, for [`threads`](Self::threads).
    pub(super) profile: WorkloadProfile,
    pub(super) kdf_budget: u64,
    pub(super) state: Option<AsOf>,
    pub(super) trusted: Option<Vec<Fingerprint>>,
    pub(super) progress: Option<Arc<Progress>>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions::new()
    }
}

impl OpenOptions {
    /// The [`WorkloadProfile::Balanced`] reading knobs.
    pub fn new() -> OpenOptions {
        OpenOptions {
            tuning: WorkloadProfile::Balanced.read_tuning(),
            profile: WorkloadProfile::Balanced,
            kdf_budget: DEFAULT_KDF_BUDGET,
            state: None,
            trusted: None,
            progress: None,
        }
    }

    /// Counters that [`Archive::verify`](super::Archive::verify) and tar export update as they go
    /// (entries, content bytes, and the total they expect). Default: none.
    pub fn progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Opens the archive as it was right after state `state` (numbered as
    /// [`Archive::history`](super::Archive::history) numbers them, from 1; `-1` is the last, `-2`
    /// the one before): its trailer is taken as the end, so every read
    /// costs what it cost then; [`Archive::at`](super::Archive::at) opens another state of an
    /// archive already open. Default: the last committed state.
    pub fn session(mut self, state: i64) -> Self {
        self.state = Some(AsOf::State(state));
        self
    }

    /// Opens the archive as it was at `unix_ns` (UTC nanoseconds since
    /// 1970): the last state whose session time is at or before it, found
    /// in the sessions tree; [`Error::NoStateAt`](crate::error::Error::NoStateAt) before the first.
    /// Default: the last committed state.
    pub fn at_time(mut self, unix_ns: i64) -> Self {
        self.state = Some(AsOf::Time(unix_ns));
        self
    }

    /// The Argon2id work (memory in KiB × passes) an open with a password
    /// may spend on the password slots, tried cheapest first; past it the
    /// open fails with [`Error::KdfOverBudget`](crate::error::Error::KdfOverBudget) naming the slot. The slot
    /// table is not authenticated until a slot opens, so its costs may be
    /// an attacker's. Default: [`DEFAULT_KDF_BUDGET`](crate::limits::DEFAULT_KDF_BUDGET)
    /// (1 GiB × 1 pass).
    pub fn kdf_budget(mut self, kib_passes: u64) -> Self {
        self.kdf_budget = kib_passes;
        self
    }

    /// Opens only an archive whose last session has a valid signature by one
    /// of `signers` (it covers the whole state by the hash chain), else fails
    /// with [`Error::Signature`](crate::error::Error::Signature) naming the session. Default: not checked.
    pub fn trust(mut self, signers: impl IntoIterator<Item = Fingerprint>) -> Self {
        self.trusted = Some(signers.into_iter().collect());
        self
    }

    /// Takes every reading knob from `profile`. Default: `Balanced`.
    pub fn profile(mut self, profile: WorkloadProfile) -> Self {
        self.tuning = profile.read_tuning();
        self.profile = profile;
        self
    }

    /// Worker threads opening pages; an extraction's or export's data
    /// pages get one spare worker more when this is 2 or more
    /// ([`ReadTuning::threads`](crate::profile::ReadTuning::threads)).
    /// The pages in flight become the profile's for that many threads;
    /// [`pages_in_flight`](Self::pages_in_flight) after this sets them.
    /// Default: the profile's (all cores).
    pub fn threads(mut self, threads: usize) -> Self {
        self.tuning.threads = threads;
        self.tuning.pages_in_flight = self.profile.read_tuning_for(threads).pages_in_flight.max(1);
        self
    }

    /// Pages and index nodes read ahead at once. Default: the profile's.
    pub fn pages_in_flight(mut self, pages: usize) -> Self {
        self.tuning.pages_in_flight = pages;
        self
    }

    /// Opened pages cached for random reads. Default: the profile's.
    pub fn page_cache(mut self, pages: usize) -> Self {
        self.tuning.page_cache = pages;
        self
    }
}
