//! Operations on archive files, the top floor of the library: create
//! (from a tree or a tar stream), update in place (add, update, remove),
//! maintain (compact, repair), and key slots in place. They share the one
//! atomic write (a temporary name, synced, renamed), the writer lock, and
//! the background sync; the writing itself is a session (`session/`) fed
//! by a source (`walk/`, `tarstream/`).

mod atomic;
mod changes;
mod create;
mod keys;
mod lock;
mod maintain;
mod options;
mod sync;
mod update;

pub use atomic::AtomicFile;
pub use create::{create_archive, create_archive_from_tar, write_archive};
pub use keys::{
    add_keys, change_password, list_key_slots, read_key_slots, remove_key_slot, SlotInfo, SlotKind,
};
pub use maintain::{compact_archive, repair_archive};
pub use options::{UpdateOptions, UpdateReport};
pub use update::ArchiveUpdater;
