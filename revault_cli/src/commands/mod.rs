//! One module per command: each gathers its keys and options, calls the
//! library, and hands what comes back to [`crate::output`]. A command
//! returns an [`Outcome`] or an error; [`crate::exit`] turns either into
//! the exit code. Commands do not call one another; what several need
//! (opening the archive argument) sits here.

pub mod append;
pub mod cat;
pub mod compact;
pub mod completions;
pub mod copy;
pub mod create;
pub mod diff;
pub mod export;
pub mod extract;
pub mod info;
pub mod key;
pub mod keygen;
pub mod keygen_sign;
pub mod list;
pub mod log;
pub mod man;
mod man_text;
pub mod mount;
pub mod passwd;
pub mod repair;
pub mod verify;

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::read::{is_salvageable, Members, Salvage};
use revault_lockbox_api::recovery;
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{Archive, OpenOptions, Progress, Quoted, WorkloadProfile};

pub use crate::exit::Outcome;
use crate::flags::{ObjectStoreArgs, ReadArgs};
use crate::location::ArchiveLocation;
use crate::progress::{self, CountedReads, Opening};
use crate::{keys, output, signing, source};

/// The bytes of the archive argument (a file, `-` or `s3://BUCKET/KEY`)
/// for positioned reads, and how messages name it.
fn archive_bytes(arg: &Path, s3: &ObjectStoreArgs) -> Result<(Box<dyn ReadAt>, String)> {
    Ok(match ArchiveLocation::parse(arg)? {
        location @ ArchiveLocation::Object(_) => (location.open_reader(s3)?, Quoted::path(arg).to_string()),
        ArchiveLocation::Local(_) => {
            let input = source::open(arg)?;
            (Box::new(input.file), input.name)
        }
    })
}

/// Whether a reader reads an archive with recovery records through them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Records {
    /// Checks the protected shards under a unit that fails its own check
    /// and reads the damaged ones as their parity rebuilds them, in memory,
    /// saying so when done (`list`, `cat`, `extract`, `export`, `mount`).
    Repair,
    /// Reads the bytes as they are (`verify` scans them only on damage).
    AsTheyAre,
}

/// `src` read through its recovery records (docs/RECOVERY.md) as `records`
/// says, when it has any: the shards under a unit that fails its check
/// checked, damaged ones rebuilt, one line on stderr for each damaged session once the
/// archive is closed. Records that lie are refused in one line and not
/// used. An archive on object storage is read as it is.
fn through_records(
    src: Arc<dyn ReadAt>,
    arg: &Path,
    name: &str,
    records: Records,
) -> Result<Arc<dyn ReadAt>> {
    let remote = matches!(ArchiveLocation::parse(arg)?, ArchiveLocation::Object(_));
    if records == Records::AsTheyAre || remote {
        return Ok(src);
    }
    Ok(match recovery::lazy_records_view(Arc::clone(&src)) {
        Ok(Some(view)) => Arc::new(SaidWhenClosed { view, name: name.to_owned() }),
        Ok(None) => src,
        Err(e) => {
            output::warn(format_args!("{name}: {e}; read as it is"));
            src
        }
    })
}

/// An archive read through its recovery records that says, when the last
/// reader closes it, what reading found: only then are the counts whole.
struct SaidWhenClosed {
    view: recovery::LazyView<Arc<dyn ReadAt>>,
    name: String,
}

impl ReadAt for SaidWhenClosed {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.view.read_exact_at(buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        self.view.len()
    }

    fn will_read(&self, ranges: &[(u64, u32)]) {
        self.view.will_read(ranges)
    }
    fn at_hand(&self, offset: u64, len: u64) -> bool {
        self.view.at_hand(offset, len)
    }

    fn read_unit_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.view.read_unit_at(buf, offset)
    }

    fn recheck(&self, offset: u64, len: u64) -> io::Result<bool> {
        self.view.recheck(offset, len)
    }
}

impl Drop for SaidWhenClosed {
    fn drop(&mut self) {
        for refused in self.view.refused() {
            output::warn(format_args!("{}: {refused}; read as it is", self.name));
        }
        output::recovery::read_through(&self.name, &self.view.runs());
    }
}

/// Opens the archive argument with the key `read` gives, the knobs of
/// `profile` and `threads` workers (`--threads`; `None`: the profile's),
/// through its recovery records as `records` says; returns it and how
/// messages name it.
fn open_archive(
    arg: &Path,
    read: &ReadArgs,
    profile: WorkloadProfile,
    threads: Option<usize>,
    records: Records,
) -> Result<(Archive<Arc<dyn ReadAt>>, String)> {
    open_counted(arg, read, profile, threads, None, Opening::Remote, records)
}

/// [`open_archive`], the reading jobs of the archive updating `progress`,
/// its opening drawn as `opening` says.
fn open_counted(
    arg: &Path,
    read: &ReadArgs,
    profile: WorkloadProfile,
    threads: Option<usize>,
    progress: Option<&Arc<Progress>>,
    opening: Opening,
    records: Records,
) -> Result<(Archive<Arc<dyn ReadAt>>, String)> {
    // Shared, so that a mount of every state opens each on the same bytes.
    let (src, name) = archive_bytes(arg, &read.s3)?;
    let (src, stage) = opening_stage(Arc::from(src), arg, opening)?;
    let src = through_records(src, arg, &name, records)?;
    let options = open_options(read, profile, threads, progress)?;
    // A spooled copy may be deleted now: the open file keeps its bytes.
    let target = keys::Target::bytes(&*src, &name);
    let archive = keys::with_key(&read.unlock, target, |key| {
        // After the password prompt, which must not share the line.
        let _shown = progress::opening(stage.as_ref(), &name);
        Archive::open_with(src, key, options)
    })
    .with_context(|| format!("opening {name}"))?;
    warn_read_around(&archive, &name);
    Ok((archive, name))
}

/// Warns of the damage an open read around: the header and slot table
/// read from their copy, a session header read through its trailer
/// (FORMAT.md §6.1 steps 4 and 6), a recovery record that cannot be used
/// (§3.12). `verify` counts them as damage.
fn warn_read_around<S: ReadAt>(archive: &Archive<S>, name: &str) {
    let damage = archive.header_damage().into_iter().chain(archive.session_header_damage());
    for damage in damage.chain(archive.record_damage()) {
        output::warn(format_args!("{name}: {damage}"));
    }
}

/// The counters of an opening stage, when one is drawn.
type OpeningCounters = Option<Arc<Progress>>;

/// The archive's bytes, counted when its opening is drawn (`opening`: on
/// `s3://`, or always for a mount); and the counters. An age plugin among
/// the identities that asks on the terminal meanwhile moves the line
/// aside (`progress::suspended`).
fn opening_stage(
    src: Arc<dyn ReadAt>,
    arg: &Path,
    opening: Opening,
) -> Result<(Arc<dyn ReadAt>, OpeningCounters)> {
    let remote = matches!(ArchiveLocation::parse(arg)?, ArchiveLocation::Object(_));
    Ok(match opening.counters(remote) {
        Some(counters) => {
            let counted = CountedReads { inner: src, counters: Arc::clone(&counters) };
            (Arc::new(counted), Some(counters))
        }
        None => (src, None),
    })
}

/// How `read` asks the archive to be opened: the profile's knobs, the
/// worker threads (`--threads`), the KDF budget, the state (`--session`,
/// `--at`), the trusted signers (`--signer`, `--signers`) and the progress
/// counters.
fn open_options(
    read: &ReadArgs,
    profile: WorkloadProfile,
    threads: Option<usize>,
    progress: Option<&Arc<Progress>>,
) -> Result<OpenOptions> {
    let mut options = OpenOptions::new().profile(profile).kdf_budget(read.unlock.kdf_budget());
    if let Some(threads) = threads {
        options = options.threads(threads);
    }
    if let Some(progress) = progress {
        options = options.progress(Arc::clone(progress));
    }
    if let Some(state) = read.session {
        options = options.session(state);
    }
    if let Some(at) = read.at {
        let nanos = at.unix_nanos();
        options =
            options.at_time(i64::try_from(nanos).unwrap_or(if nanos < 0 { i64::MIN } else { i64::MAX }));
    }
    if read.trusts_signers() {
        options = options.trust(signing::trusted(&read.signers, &read.signers_files)?);
    }
    Ok(options)
}

/// An archive as `verify` and `extract --keep-going` read it: through its
/// index, or, when its trailer, root or index is damaged or it was cut
/// with no commit left, what a salvage scan proves (FORMAT.md §6.6).
enum Readable {
    Indexed(Box<Archive<Arc<dyn ReadAt>>>),
    /// The scan, and the damage that made the index unreadable.
    Salvaged(Box<Salvage<Arc<dyn ReadAt>>>, String),
}

/// What a reader does about damage: salvage (`verify`, `extract
/// --keep-going`), and read through recovery records (docs/RECOVERY.md).
#[derive(Debug, Clone, Copy)]
struct OnDamage {
    salvage: bool,
    records: Records,
}

/// Opens the archive argument; with `on_damage.salvage`, also reads its
/// whole index and, on damage there or in the trailer or root, scans it
/// instead (one more unlock with the same key). `verify` counts its work
/// on `progress`. Also returns the bytes it read (the view through
/// recovery records when it read through them).
fn open_or_salvage(
    arg: &Path,
    read: &ReadArgs,
    profile: WorkloadProfile,
    threads: Option<usize>,
    on_damage: OnDamage,
    progress: Option<&Arc<Progress>>,
    opening: Opening,
) -> Result<(Readable, String, Arc<dyn ReadAt>)> {
    let OnDamage { salvage, records } = on_damage;
    let (src, name) = archive_bytes(arg, &read.s3)?;
    let (src, stage) = opening_stage(Arc::from(src), arg, opening)?;
    let src = through_records(src, arg, &name, records)?;
    let options = open_options(read, profile, threads, progress)?;
    // A scan proves neither an earlier state nor a signature: asked for
    // either, damage is reported, not salvaged.
    let salvage = salvage && !read.earlier_state() && !read.trusts_signers();
    let target = keys::Target::bytes(&*src, &name);
    let bytes = Arc::clone(&src);
    let readable = keys::with_key(&read.unlock, target, |key| {
        let _shown = progress::opening(stage.as_ref(), &name);
        let damage = match Archive::open_with(Arc::clone(&src), key, options.clone()) {
            Ok(archive) if !salvage => return Ok(Readable::Indexed(Box::new(archive))),
            Ok(archive) => match archive.check_index() {
                Ok(()) => return Ok(Readable::Indexed(Box::new(archive))),
                Err(e) if is_salvageable(&e) => e,
                Err(e) => return Err(e),
            },
            Err(e) if salvage && is_salvageable(&e) => e,
            Err(e) => return Err(e),
        };
        let salvage = Salvage::scan(Arc::clone(&src), key, options)?;
        Ok(Readable::Salvaged(Box::new(salvage), damage.to_string()))
    })
    .with_context(|| format!("opening {name}"))?;
    match &readable {
        Readable::Salvaged(_, damage) => {
            output::say(format_args!("{name}: {damage}: salvaging what a scan of its sessions proves"))
        }
        Readable::Indexed(archive) => warn_read_around(archive, &name),
    }
    Ok((readable, name, bytes))
}

/// The archive of a command that rewrites it in place: a local file only.
fn in_place(archive: &Path, command: &str) -> Result<()> {
    ArchiveLocation::local_only(archive, command).map(drop)
}

/// The library's "not found" for the first plain NAME under which the
/// archive holds nothing, found by lookups before any output.
fn refuse_missing_names<S: ReadAt>(archive: &Archive<S>, members: &Members) -> Result<()> {
    match members.first_missing_name(archive)? {
        Some(missing) => Err(revault_lockbox_api::Error::NotFound { path: missing.into() }.into()),
        None => Ok(()),
    }
}

/// The contents of the files `members` selects, one after another in
/// index order, on stdout (`extract -O`, `cat` of a pattern); every name
/// must match an entry.
fn write_contents<S: ReadAt>(archive: &Archive<S>, name: &str, members: &Members) -> Result<()> {
    let reading = || format!("reading {name}");
    let out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let (out, _) = revault_lockbox_api::read::write_contents(out, archive, members).with_context(reading)?;
    let mut out = out.into_inner().map_err(|e| e.into_error()).context(output::STDOUT)?;
    out.flush().context(output::STDOUT)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use clap::Parser;
    use revault_lockbox_api::{CreateOptions, KdfParams, Password};

    use super::*;
    use crate::flags::{Cli, Command};

    /// A reading command's `--threads` reaches the library: the archive
    /// opened with its options works with that many threads; without it,
    /// with the profile's.
    #[test]
    fn threads_reach_the_archive_a_reader_opens() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"content").unwrap();
        let password = Password::from("threads");
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let inputs = [std::path::PathBuf::from("f")];
        let (bytes, _) =
            revault_lockbox_api::create::write_archive(Vec::new(), dir.path(), &inputs, &password, options)
                .unwrap();
        let profile = WorkloadProfile::ExtractMany;
        let cases: [(&[&str], usize); 3] =
            [(&["--threads", "3"], 3), (&["--threads", "1"], 1), (&[], profile.read_tuning().threads)];
        for (flags, expected) in cases {
            let args = [&["lockbox", "verify"][..], flags, &["a.lbox"]].concat();
            let Command::Verify(a) = Cli::parse_from(args).command else { panic!("not verify") };
            let options = open_options(&a.read, profile, a.threads.count(), None).unwrap();
            let archive = Archive::open_with(Cursor::new(bytes.as_slice()), &password, options).unwrap();
            assert_eq!(archive.tuning().threads, expected, "{flags:?}");
        }
    }
}
