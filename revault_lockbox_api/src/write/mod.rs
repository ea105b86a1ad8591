//! Writing archives: the one-pass [`ArchiveWriter`] and the tree walk that
//! feeds it in index order.

mod atomic;
mod select;
mod sync;
mod walk;
mod writer;

pub(crate) use atomic::write_atomically;
pub use select::Selection;
pub use walk::{create_archive, write_archive, CreateReport};
pub use writer::{ArchiveWriter, CreateOptions, Metadata};
