//! Where a reading command's archive comes from: a file named on the
//! command line, or `-` for standard input. The one owner of archive
//! arguments (an object-store location would resolve here too).
//!
//! An archive is read from its end (trailer, then index), so a piped one is
//! first copied to an unnamed temporary file in `$TMPDIR` (`O_TMPFILE`:
//! nothing is left behind, even on `kill -9`), a buffer
//! at a time: memory stays bounded whatever its size, and only ciphertext
//! touches the disk. Standard input redirected from a regular file is read
//! in place.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use revault_lockbox_api::Quoted;

use crate::exit::UsageError;

/// The argument that names standard input (or output).
pub const STDIO: &str = "-";

/// An archive ready to be read: an open file.
pub struct ArchiveInput {
    /// The archive's bytes.
    pub file: File,
    /// How messages name it.
    pub name: String,
}

/// Opens the archive argument `arg`: a file, or `-` for stdin.
pub fn open(arg: &Path) -> Result<ArchiveInput> {
    if arg.as_os_str() != STDIO {
        let name = Quoted::path(arg).to_string();
        let file = File::open(arg).with_context(|| format!("opening {name}"))?;
        let kind = file.metadata().with_context(|| format!("opening {name}"))?.file_type();
        if kind.is_fifo() || kind.is_socket() || kind.is_char_device() {
            anyhow::bail!("opening {name}: not a seekable file; give `-` to read an archive from stdin");
        }
        return Ok(ArchiveInput { file, name });
    }
    claim_stdin("the archive")?;
    let name = "archive on stdin".to_string();
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return Err(UsageError("refusing to read an archive from a terminal: pipe one in".into()).into());
    }
    let own = stdin.as_fd().try_clone_to_owned().context("reading stdin")?;
    let file = File::from(own);
    if file.metadata().context("reading stdin")?.is_file() {
        return Ok(ArchiveInput { file, name });
    }
    let copying = "copying the archive on stdin to a temporary file in $TMPDIR";
    let spool = tempfile::tempfile().context(copying)?;
    let mut out = BufWriter::with_capacity(1 << 20, &spool);
    io::copy(&mut stdin.lock(), &mut out).and_then(|_| out.flush()).context(copying)?;
    drop(out);
    Ok(ArchiveInput { file: spool, name })
}

/// Which argument already reads standard input.
static STDIN_USER: Mutex<Option<&'static str>> = Mutex::new(None);

/// Records that `what` reads standard input; a second reader is a usage
/// error (stdin can be read once).
pub fn claim_stdin(what: &'static str) -> Result<()> {
    let mut user = STDIN_USER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(first) = *user {
        return Err(UsageError(format!("`-` given twice: {first} and {what} cannot both read stdin")).into());
    }
    *user = Some(what);
    Ok(())
}

/// Opens an input stream that is not an archive (`--from-tar`,
/// `--files-from`, `--exclude-from`): a file, or `-` for stdin. `what`
/// names the option in messages.
pub fn open_input(arg: &Path, what: &'static str) -> Result<Box<dyn io::Read>> {
    if arg.as_os_str() == STDIO {
        claim_stdin(what)?;
        return Ok(Box::new(io::BufReader::with_capacity(1 << 20, io::stdin())));
    }
    let file = File::open(arg).with_context(|| format!("{what}: opening {}", Quoted::path(arg)))?;
    if file.metadata().with_context(|| format!("{what}: opening {}", Quoted::path(arg)))?.is_dir() {
        anyhow::bail!("{what}: {} is a directory", Quoted::path(arg));
    }
    Ok(Box::new(io::BufReader::with_capacity(1 << 20, file)))
}

/// Where an output stream goes (`export -o`): stdout for `-`, refused on a
/// terminal.
pub fn is_stdout(arg: &Path, what: &str) -> Result<bool> {
    if arg.as_os_str() != STDIO {
        return Ok(false);
    }
    if io::stdout().is_terminal() {
        return Err(UsageError(format!(
            "refusing to write {what} to a terminal: redirect stdout or use -o FILE"
        ))
        .into());
    }
    Ok(true)
}
