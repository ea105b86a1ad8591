//! Being told of each entry a job writes as it goes: what tar's `-v`
//! shows, without the library knowing where it is shown.

use std::fmt;
use std::sync::Arc;

use crate::format::Entry;

/// Told of each entry a create, add, update or extract handles, in index
/// order, on the job's own thread.
pub trait EntryLog: Send + Sync {
    /// `entry` is stored (create, add, update) or about to be restored
    /// (extract).
    fn entry(&self, entry: &Entry);
    /// `path` and everything below it are recorded as removed (update
    /// `--delete-missing`, rm). Default: nothing.
    fn removed(&self, path: &[u8]) {
        let _ = path;
    }
}

/// An [`EntryLog`] held by options, which derive `Debug`.
#[derive(Clone)]
pub(crate) struct Log(pub(crate) Arc<dyn EntryLog>);

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EntryLog")
    }
}
