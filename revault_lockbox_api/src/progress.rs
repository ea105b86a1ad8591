//! Counters that a long job updates as it goes, so that a caller can draw
//! progress from another thread without the library knowing about terminals.

use std::sync::atomic::AtomicU64;

/// Counters a long job (create, add, update, rm, compact, repair,
/// extract, verify, export) updates as it goes; a progress display reads
/// them from another thread.
#[derive(Debug, Default)]
pub struct Progress {
    /// File content bytes read (create, add, update, compact, repair),
    /// written (extract, export) or checked (verify).
    pub bytes_in: AtomicU64,
    /// Archive bytes written so far (create).
    pub bytes_out: AtomicU64,
    /// Entries done.
    pub entries: AtomicU64,
    /// The content bytes the job expects to handle, once known (0 until
    /// then): set by the library where it knows them (verify, export,
    /// compact) before the work starts, or by the caller (the size of the
    /// input tree of a create).
    pub total_bytes: AtomicU64,
}
