//! # revault lockbox
//!
//! Encrypted, compressed, page-oriented directory archives (`.lbox`).
//!
//! A password unlocks a key slot (Argon2id) that wraps a random content key;
//! data is cut into pages, each compressed with zstd and sealed with
//! ChaCha20-Poly1305 under per-session subkeys; a sorted, paged index of
//! every entry (with its SHA-256) follows the data. Looking one path up
//! reads a few index nodes; listing streams the index; reading one file
//! reads only its pages; any changed byte is detected. `docs/FORMAT.md`
//! specifies the bytes.
//!
//! ```
//! use revault_lockbox_api::{create_archive, Archive, CreateOptions, ExtractOptions, KdfParams, Password};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let work = tempfile::tempdir()?;
//! std::fs::create_dir(work.path().join("notes"))?;
//! std::fs::write(work.path().join("notes/todo.txt"), b"buy milk\n")?;
//!
//! let password = Password::from("correct horse battery staple");
//! let archive = work.path().join("notes.lbox");
//! // Real archives keep the default Argon2id cost; the doc test saves time.
//! let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
//! create_archive(&archive, work.path(), &["notes".into()], &password, options)?;
//!
//! let opened = Archive::open(std::fs::File::open(&archive)?, &password)?;
//! let names = opened.entries()?.map(|e| e.map(|e| e.path)).collect::<Result<Vec<_>, _>>()?;
//! assert_eq!(names, [b"notes".to_vec(), b"notes/todo.txt".to_vec()]);
//!
//! let out = work.path().join("restored");
//! std::fs::create_dir(&out)?;
//! opened.extract(&out, &ExtractOptions::new())?;
//! assert_eq!(std::fs::read(out.join("notes/todo.txt"))?, b"buy milk\n");
//! # Ok(()) }
//! ```
// One module, `crypto::kdf_memory`, allows it (a measured need: the
// Argon2id matrix on huge pages), with a `SAFETY:` comment on its block.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod archive;
pub mod civil;
mod crypto;
mod error;
mod extract;
mod file;
mod format;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod index;
mod keys;
mod owners;
mod pipeline;
mod profile;
mod progress;
mod quote;
mod session;
mod sparse;
mod storage;
mod tarstream;
mod walk;
mod xattrs;

pub use archive::Subtrees;
pub use archive::{Archive, ArchiveInfo, Damage, Entries, EntryReader, OpenOptions, VerifyReport};
pub use crypto::{KdfParams, Password};
pub use error::{CreateWarning, EntryPath, Error, Result, WarningKind};
pub use extract::{ExtractOptions, ExtractReport};
pub use file::AtomicFile;
pub use file::{
    add_keys, change_password, compact_archive, create_archive, create_archive_from_tar, list_key_slots,
    read_key_slots, remove_key_slot, repair_archive, write_archive, ArchiveUpdater, SlotInfo, SlotKind,
    UpdateOptions, UpdateReport,
};
pub use format::{DecodeError, Entry, EntryKind, SparseMap, Xattr};
pub use keys::{
    check_recipient_mix, keygen, parse_recipients, read_recipients_file, Identity, KeyError, KeyFile, KeySet,
    PassphraseFn, Recipient, RecipientKind, Unlock,
};
pub use profile::{zstd_levels, CreateTuning, ReadTuning, WorkloadProfile};
pub use progress::Progress;
pub use quote::Quoted;
pub use session::{ArchiveWriter, CreateOptions, Metadata, Selection};
#[cfg(feature = "s3")]
pub use storage::s3;
pub use storage::{ReadAt, SeekReader};
pub use tarstream::{export_tar, write_archive_from_tar, ExportReport};
pub use walk::CreateReport;

/// The Argon2id cost limits every reader enforces; a writer refuses
/// parameters above them.
pub mod limits {
    pub use crate::format::{MAX_KDF_LANES, MAX_KDF_MEMORY_KIB, MAX_KDF_PASSES, MAX_KDF_WORK};
}
