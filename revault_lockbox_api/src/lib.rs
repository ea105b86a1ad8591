//! # revault lockbox
//!
//! Encrypted, compressed, page-oriented directory archives (`.lbox`).
//!
//! A password unlocks a key slot (Argon2id) that wraps a random content key;
//! data is cut into pages, each compressed with zstd and sealed with
//! ChaCha20-Poly1305 under per-session subkeys; an encrypted index at the end
//! lists every entry with its SHA-256. Listing reads only the index; reading
//! one file reads only its pages; any changed byte is detected.
//! `docs/FORMAT.md` specifies the bytes.
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
//! let mut opened = Archive::open(std::fs::File::open(&archive)?, &password)?;
//! let names: Vec<_> = opened.entries().iter().map(|e| e.path.clone()).collect();
//! assert_eq!(names, [b"notes".to_vec(), b"notes/todo.txt".to_vec()]);
//!
//! let out = work.path().join("restored");
//! std::fs::create_dir(&out)?;
//! opened.extract(&out, &ExtractOptions::new())?;
//! assert_eq!(std::fs::read(out.join("notes/todo.txt"))?, b"buy milk\n");
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod crypto;
mod error;
pub mod format;
mod fs;
#[doc(hidden)]
pub mod fuzz;
mod keys;
mod pipeline;
mod profile;
mod reader;
mod stream;
mod verify;
mod writer;

use std::sync::atomic::AtomicU64;

pub use crypto::{KdfParams, Password};
pub use error::{Error, Result};
pub use format::{Entry, EntryKind};
pub use fs::{create_archive, write_archive, CreateReport, ExtractOptions, ExtractReport};
pub use keys::{
    check_recipient_mix, keygen, parse_recipients, read_recipients_file, Identity, KeyError, PassphraseFn,
    Recipient, RecipientKind,
};
pub use profile::{zstd_levels, Tuning, WorkloadProfile};
pub use reader::{Archive, ArchiveInfo, EntryReader};
pub use verify::{Damage, VerifyReport};
pub use writer::{ArchiveWriter, CreateOptions};

/// Metadata stored with each entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metadata {
    /// Permission bits (only `0o7777` is kept).
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime_secs: i64,
    /// Nanoseconds part of the modification time.
    pub mtime_nanos: u32,
}

impl Metadata {
    /// Takes mode, owner and mtime from file-system metadata.
    pub fn from_fs(md: &std::fs::Metadata) -> Metadata {
        use std::os::unix::fs::MetadataExt;
        Metadata {
            mode: md.mode() & 0o7777,
            uid: md.uid(),
            gid: md.gid(),
            mtime_secs: md.mtime(),
            mtime_nanos: md.mtime_nsec() as u32,
        }
    }
}

/// Counters a create or extract updates as it goes; a progress display
/// reads them from another thread.
#[derive(Debug, Default)]
pub struct Progress {
    /// File content bytes read (create) or written (extract).
    pub bytes_in: AtomicU64,
    /// Archive bytes written so far (create).
    pub bytes_out: AtomicU64,
    /// Entries done.
    pub entries: AtomicU64,
}

/// Checks a stored entry path: relative, `/`-separated, no empty, `.` or
/// `..` components, no NUL byte, at most [`format::MAX_PATH_LEN`] bytes.
/// Writers refuse other paths and extraction refuses to write them.
pub fn check_entry_path(path: &[u8]) -> std::result::Result<(), &'static str> {
    if path.is_empty() {
        return Err("empty path");
    }
    if path.len() > format::MAX_PATH_LEN {
        return Err("path too long");
    }
    if path[0] == b'/' {
        return Err("absolute path");
    }
    if path.contains(&0) {
        return Err("NUL byte in path");
    }
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" => return Err("empty path component"),
            b"." => return Err("`.` component"),
            b".." => return Err("`..` component"),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_are_checked() {
        assert!(check_entry_path(b"a/b\xff/c").is_ok());
        for bad in [&b""[..], b"/etc/x", b"../x", b"a/../../x", b"a//b", b"a/./b", b"a/", b"a\0b"] {
            assert!(check_entry_path(bad).is_err(), "{bad:?}");
        }
    }
}
