//! Counters that a long job updates as it goes, so that a caller can draw
//! progress from another thread without the library knowing about terminals.

use std::sync::atomic::AtomicU64;

/// Counters a create or extract updates as it goes; a progress display
/// reads them from another thread.
#[derive(Debug, Default)]
pub struct Progress {
    /// File content bytes read (create) or written (extract).
    pub bytes_in: AtomicU64,
    /// Archive bytes written so far (create).
    pub bytes_out: AtomicU64,
    /// Entries done.
    pub entries: AtomicU64,
}
