//! The file system side: walking input trees into an [`ArchiveWriter`]
//! (`create`) and restoring entries safely (`extract`).
//!
//! [`ArchiveWriter`]: crate::ArchiveWriter

mod create;
mod extract;

pub use create::{create_archive, write_archive, CreateReport};
pub use extract::{ExtractOptions, ExtractReport};
