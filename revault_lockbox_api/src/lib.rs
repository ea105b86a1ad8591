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
//! The root holds what most callers need: [`Archive`] to read,
//! [`create_archive`] and [`ArchiveWriter`] to write, [`ArchiveUpdater`] to
//! change in place (add, update, remove, compact, repair), their options,
//! the keys ([`Password`], [`KeySet`], [`Unlock`]) and [`Error`]. The rest
//! is in modules named for what a caller does with it: [`create`] and
//! [`read`] in detail, [`update`], [`slots`] (key slots in place), [`tar`]
//! (tar streams in and out), [`diff`] (what changed between states, or
//! against a directory), [`keys`] (recipients, identities, key files),
//! [`profile`], [`storage`], [`error`], [`limits`]. Earlier states: the
//! session list ([`Archive::history`]) and [`Archive::at`] (or
//! [`OpenOptions::session`] and [`OpenOptions::at_time`] at open).
//! [`chunk`] is the keyed content-defined chunker and its chunk ids, the
//! first piece of deduplication, which no writer uses yet.
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
mod cache;
pub mod chunk;
pub mod civil;
mod compare;
mod crypto;
mod entry_log;
pub mod error;
mod extract;
mod file;
mod format;
#[cfg(feature = "fuzzing")]
pub mod fuzz;
mod index;
pub mod keys;
mod owners;
mod pattern;
mod pipeline;
pub mod profile;
mod progress;
mod quote;
pub mod recovery;
mod session;
mod sparse;
pub mod storage;
mod tarstream;
pub mod temporary;
#[cfg(test)]
mod test_data;
mod walk;
mod warning;
mod xattrs;

pub use archive::{Archive, OpenOptions};
pub use crypto::{AeadBackend, ChaChaBackend, KdfParams, Password, AEAD_ENV};
pub use entry_log::EntryLog;
pub use error::{Error, Result};
pub use extract::ExtractOptions;
pub use file::{create_archive, ArchiveUpdater, UpdateOptions};
pub use format::{Entry, EntryKind};
pub use keys::{KeySet, Unlock};
pub use profile::WorkloadProfile;
pub use progress::Progress;
pub use quote::Quoted;
pub use session::{ArchiveWriter, CreateOptions};
#[cfg(feature = "s3")]
pub use storage::s3;

/// Creating an archive in detail: streaming one to any writer, what a
/// create reports and warns about, which files it takes, the metadata
/// a caller gives [`ArchiveWriter`] for each entry, and the atomic file an
/// archive (or an export) is written through.
pub mod create {
    pub use crate::file::{write_archive, AtomicFile};
    pub use crate::format::check_label;
    pub use crate::session::{Metadata, NewerBy, Selection};
    pub use crate::walk::CreateReport;
    pub use crate::warning::{CreateWarning, WarningKind};
}

/// Reading an archive in detail: listing, reading one file, verifying,
/// describing, choosing subtrees, browsing by path and place (what a
/// mount needs, with the bounded cache readers keep what they opened in),
/// and what an extraction did.
pub mod read {
    pub use crate::archive::{
        is_salvageable, ArchiveInfo, AsOf, Browser, Damage, Entries, EntryReader, Listed, Members, Node,
        Place, Salvage, Selected, SessionSigners, SessionSummary, Subtrees, VerifyReport,
    };
    pub use crate::cache::Bounded;
    pub use crate::extract::{ExistingFiles, ExtractReport};
    pub use crate::format::{SessionInfo, SessionKind, SparseMap, Xattr};
    pub use crate::pattern::MatchRules;
    pub use crate::quote::SessionName;
    pub use crate::tarstream::write_contents;
}

/// Differences between two states of an archive, or a state and a
/// directory on disk: added, removed and changed paths in index order,
/// from a merge of two sorted entry streams (flat memory).
pub mod diff {
    pub use crate::compare::{directory, states, Changes, Diff, DiffOptions, Difference};
}

/// What a change in place ([`ArchiveUpdater`]) did.
pub mod update {
    pub use crate::archive::{Period, Reclaim, Retention, Zone};
    pub use crate::file::{RepairReport, UpdateReport};
}

/// Key slots of an archive file, changed in place: list, add, remove, and
/// change a password, without rewriting the payload.
pub mod slots {
    pub use crate::file::slots::{
        add, add_with_budget, add_with_options, change_password, change_password_with_budget, list, read,
        remove, remove_with_budget, SlotInfo, SlotKind, SlotsAdded,
    };
    pub use crate::format::{check_slot_label, MAX_SLOT_LABEL_LEN};
}

/// Tar streams in and out: an archive made from a tar or pax stream, and an
/// archive's entries written as a pax stream.
pub mod tar {
    pub use crate::file::create_archive_from_tar as create_archive;
    pub use crate::tarstream::{export, write_archive, ExportReport};
}

/// The Argon2id cost limits every reader enforces (a writer refuses
/// parameters above them), and the work one open spends on password slots
/// unless told otherwise.
pub mod limits {
    pub use crate::crypto::DEFAULT_KDF_BUDGET;
    pub use crate::format::{MAX_KDF_LANES, MAX_KDF_MEMORY_KIB, MAX_KDF_PASSES, MAX_KDF_WORK, MAX_LABEL_LEN};
}
