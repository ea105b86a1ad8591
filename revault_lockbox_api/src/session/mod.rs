//! The writer engine: one write session, one owner. A session starts
//! from options ([`CreateOptions`]) and keys, fills pages and hands them to
//! the sealing workers, writes index nodes in line with the data, and ends
//! with the index root and the trailer that commits it. A new archive and
//! an append session are both sessions; where the bytes go (a stream, a
//! temporary file, an archive after its end) is the caller's business.
//!
//! Sources of entries (the tree walk, a tar stream, another archive) sit
//! above and call [`ArchiveWriter`]'s methods; nothing here knows about
//! files on disk beyond the `Write` it is given.

mod chunk_index;
mod chunk_runs;
mod chunked;
mod commit;
mod header;
mod late_slots;
mod options;
mod output;
mod pages;
mod select;
mod writer;

pub use crate::format::Metadata;
pub(crate) use chunk_index::StoredChunks;
pub(crate) use commit::{NextRoot, SessionStart};
pub(crate) use late_slots::{LateSlots, SlotsLast};
pub use options::CreateOptions;
pub use select::{NewerBy, Selection};
pub(crate) use select::{CACHEDIR_SIGNATURE, CACHEDIR_TAG};
pub use writer::ArchiveWriter;
