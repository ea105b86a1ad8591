//! Writing archives: the one-pass [`ArchiveWriter`] and the tree walk that
//! feeds it in index order.

mod append;
mod atomic;
mod create;
mod late_slots;
mod lock;
mod select;
mod sync;
mod walk;
mod warning;
mod writer;

pub(crate) use append::rewrite_archive;
pub use append::{compact_archive, repair_archive, ArchiveUpdater, UpdateOptions, UpdateReport};
pub(crate) use atomic::write_atomically;
pub use create::{create_archive, write_archive, CreateReport};
pub(crate) use lock::open_locked;
pub use select::Selection;
pub use warning::{CreateWarning, WarningKind};
pub use writer::{ArchiveWriter, CreateOptions, Metadata};
