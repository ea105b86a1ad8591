//! Writing archives: the one-pass [`ArchiveWriter`] and the tree walk that
//! feeds it in index order.

mod create;
mod sync;
mod walk;
mod warning;
mod writer;

pub use create::{create_archive, write_archive, CreateReport};
pub use warning::{CreateWarning, WarningKind};
pub use writer::{ArchiveWriter, CreateOptions, Metadata};
