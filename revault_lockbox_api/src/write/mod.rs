//! Writing archives: the one-pass [`ArchiveWriter`] and the tree walk that
//! feeds it in index order.

mod append;
mod lock;
mod sync;
mod walk;
mod writer;

pub use append::{compact_archive, repair_archive, ArchiveUpdater, UpdateOptions, UpdateReport};
pub(crate) use lock::open_locked;
pub use walk::{create_archive, write_archive, CreateReport};
pub use writer::{ArchiveWriter, CreateOptions, Metadata};
