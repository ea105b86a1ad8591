//! Operations on archive files, the top floor of the library: create
//! (from a tree or a tar stream), update in place (add, update, remove),
//! maintain (compact, repair), and key slots in place (`slots`). They share the one
//! atomic write (a temporary name, synced, renamed), the writer lock, and
//! the background sync; the writing itself is a session (`session/`) fed
//! by a source (`walk/`, `tarstream/`).

mod atomic;
#[cfg(test)]
mod calendar_tests;
#[cfg(test)]
mod chain_tests;
mod changes;
#[cfg(test)]
mod chunked_tests;
#[cfg(test)]
mod conformance_tests;
mod create;
#[cfg(test)]
mod head_copy_tests;
mod lock;
mod maintain;
mod merge;
mod options;
#[cfg(test)]
mod recovery_tests;
mod retain;
#[cfg(test)]
mod reuse_tests;
pub(crate) mod slots;
mod sync;
mod update;

pub use atomic::AtomicFile;
pub use create::{create_archive, create_archive_from_tar, write_archive};
pub use maintain::RepairReport;
pub use options::{UpdateOptions, UpdateReport};
pub use update::ArchiveUpdater;
