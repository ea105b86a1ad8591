//! One function per subcommand: gather the password and options, call the
//! library, print what it returns.

use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use revault_lockbox_api::limits::{MAX_KDF_LANES, MAX_KDF_MEMORY_KIB, MAX_KDF_PASSES};
use revault_lockbox_api::{
    create_archive, write_archive, Archive, CreateOptions, EntryPath, ExtractOptions, KdfParams, OpenOptions,
    ReadAt, WorkloadProfile,
};

use crate::keys;
use crate::location::{create_object, ArchiveLocation};
use crate::progress::{self, Job};
use crate::{
    listing, CatArgs, CreateArgs, ExtractArgs, GlobalArgs, InfoArgs, KeygenArgs, ListArgs, UsageError,
    VerifyArgs, EXIT_AUTH,
};

pub fn create(g: &GlobalArgs, a: CreateArgs) -> Result<ExitCode> {
    let kdf = kdf_params(&a)?;
    let to_stdout = a.output.as_os_str() == "-";
    if to_stdout && io::stdout().is_terminal() {
        return Err(UsageError(
            "refusing to write an archive to a terminal: redirect stdout or use -o FILE".into(),
        )
        .into());
    }
    // Missing inputs are reported before the password is asked for.
    for p in &a.paths {
        let full = if a.directory == Path::new(".") { p.clone() } else { a.directory.join(p) };
        std::fs::symlink_metadata(&full).with_context(|| format!("cannot archive {}", full.display()))?;
    }
    // An existing object is refused before the password is asked for.
    let object = match ArchiveLocation::parse(&a.output)? {
        ArchiveLocation::Object(location) => {
            Some((create_object(&location, &g.s3, a.overwrite, a.profile)?, location))
        }
        ArchiveLocation::Local(_) => None,
    };
    let lock = keys::lock(g, &a)?;
    let mut options = CreateOptions::new().profile(a.profile).kdf(kdf);
    if let Some(level) = a.level {
        options = options.zstd_level(level);
    }
    let roots: Vec<PathBuf> = a.paths.iter().map(|p| a.directory.join(p)).collect();
    let display = progress::maybe_start(g.quiet, Job::Create, move || input_bytes(&roots));
    if let Some((counters, _)) = &display {
        options = options.progress(Arc::clone(counters));
    }
    let report = if let Some((writer, location)) = object {
        // The upload completes (the object appears) only after the whole
        // archive was written; on an error the writer is dropped and aborts.
        let (writer, report) = write_archive(writer, &a.directory, &a.paths, lock, options)
            .with_context(|| format!("creating {location}"))?;
        writer.finish().with_context(|| format!("creating {location}"))?;
        report
    } else if to_stdout {
        // `create -o - . > x.lbox` must not archive x.lbox into itself.
        if let Ok(md) = std::fs::metadata("/dev/stdout") {
            use std::os::unix::fs::MetadataExt;
            if md.is_file() {
                options = options.skip_file(md.dev(), md.ino());
            }
        }
        let out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
        let (out, report) = write_archive(out, &a.directory, &a.paths, lock, options)
            .context("writing the archive to stdout")?;
        let mut out =
            out.into_inner().map_err(|e| e.into_error()).context("writing the archive to stdout")?;
        out.flush().context("writing the archive to stdout")?;
        report
    } else {
        create_archive(&a.output, &a.directory, &a.paths, lock, options)
            .with_context(|| format!("creating {}", a.output.display()))?
    };
    if let Some((_, display)) = display {
        display.finish();
    }
    for w in &report.warnings {
        eprintln!("lockbox: warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The Argon2id cost: defaults, overridden flag by flag, within what
/// readers accept (an archive above the limits could never be opened).
fn kdf_params(a: &CreateArgs) -> Result<KdfParams> {
    let d = KdfParams::default();
    let too_big = || {
        UsageError(format!(
            "KDF cost above what readers accept: at most {} MiB, {MAX_KDF_PASSES} passes, {MAX_KDF_LANES} lanes",
            MAX_KDF_MEMORY_KIB / 1024
        ))
    };
    let m_kib = match a.kdf_memory {
        Some(mib) => mib.checked_mul(1024).ok_or_else(too_big)?,
        None => d.m_kib,
    };
    let params = KdfParams { m_kib, t: a.kdf_passes.unwrap_or(d.t), p: a.kdf_lanes.unwrap_or(d.p) };
    if !params.within_limits() {
        return Err(too_big().into());
    }
    Ok(params)
}

/// Total size of the regular files under `roots`, for the progress bar.
/// Unreadable parts count as nothing: the create itself reports them.
fn input_bytes(roots: &[PathBuf]) -> u64 {
    let mut stack: Vec<PathBuf> = roots.to_vec();
    let mut total = 0u64;
    while let Some(path) = stack.pop() {
        let Ok(md) = std::fs::symlink_metadata(&path) else { continue };
        if md.is_file() {
            total += md.len();
        } else if md.is_dir() {
            if let Ok(dir) = std::fs::read_dir(&path) {
                stack.extend(dir.filter_map(|d| d.ok().map(|d| d.path())));
            }
        }
    }
    total
}

fn open_archive(
    archive: &Path,
    g: &GlobalArgs,
    profile: WorkloadProfile,
) -> Result<Archive<Box<dyn ReadAt>>> {
    let src = ArchiveLocation::parse(archive)?.open_reader(&g.s3)?;
    let options = OpenOptions::new().profile(profile);
    keys::with_key(g, |key| Archive::open_with(src, key, options))
        .with_context(|| format!("opening {}", archive.display()))
}

pub fn list(g: &GlobalArgs, a: ListArgs) -> Result<ExitCode> {
    let archive = open_archive(&a.archive, g, WorkloadProfile::Balanced)?;
    let terminal = io::stdout().is_terminal();
    let mut out = BufWriter::new(io::stdout().lock());
    let reading = || format!("reading the index of {}", a.archive.display());
    for e in archive.entries().with_context(reading)? {
        let e = e.with_context(reading)?;
        let e = &e;
        if a.long {
            listing::write_long(&mut out, e, terminal)
        } else {
            listing::write_name(&mut out, &e.path, terminal).and_then(|()| out.write_all(b"\n"))
        }
        .context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub fn extract(g: &GlobalArgs, a: ExtractArgs) -> Result<ExitCode> {
    let profile = a.profile.unwrap_or(WorkloadProfile::ExtractMany);
    let archive = open_archive(&a.archive, g, profile)?;
    let only: Vec<Vec<u8>> = a.paths.into_iter().map(|p| filter_path(p.into_vec())).collect();
    let mut options =
        ExtractOptions::new().overwrite(a.overwrite).sync(!a.no_sync).keep_going(a.keep_going).only(only);
    // All of the content for a whole extraction; at most that for a part.
    let total = archive.content_bytes();
    let display = progress::maybe_start(g.quiet, Job::Extract, move || total);
    if let Some((counters, _)) = &display {
        options = options.progress(Arc::clone(counters));
    }
    let report = archive
        .extract(&a.directory, &options)
        .with_context(|| format!("extracting {} into {}", a.archive.display(), a.directory.display()))?;
    if let Some((_, display)) = display {
        display.finish();
    }
    if report.damaged.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for d in &report.damaged {
        eprintln!("lockbox: damaged, not restored: {}: {}", d.path, d.reason);
    }
    eprintln!(
        "lockbox: extracting {}: {} damaged entries not restored, {} restored",
        a.archive.display(),
        report.damaged.len(),
        report.entries
    );
    Ok(ExitCode::from(EXIT_AUTH))
}

/// A PATH argument as the stored paths spell it: no leading `./`, no
/// trailing `/`.
fn filter_path(mut p: Vec<u8>) -> Vec<u8> {
    while p.len() > 1 && p.ends_with(b"/") {
        p.pop();
    }
    while p.starts_with(b"./") {
        p.drain(..2);
    }
    p
}

pub fn cat(g: &GlobalArgs, a: CatArgs) -> Result<ExitCode> {
    let archive = open_archive(&a.archive, g, WorkloadProfile::RandomRead)?;
    let path = a.path.into_vec();
    let what = || format!("reading {} from {}", EntryPath(path.clone()), a.archive.display());
    let mut reader = archive.open_file(&path).with_context(what)?;
    let mut out = io::stdout().lock();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A checksum mismatch arrives as an `io::Error` wrapping the
            // library's error; `crate::library_error` finds it there.
            Err(e) => return Err(e).with_context(what),
        };
        out.write_all(&buf[..n]).context("writing to stdout")?;
    }
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub fn info(g: &GlobalArgs, a: InfoArgs) -> Result<ExitCode> {
    let archive = open_archive(&a.archive, g, WorkloadProfile::Balanced)?;
    let info = archive.info().with_context(|| format!("reading {}", a.archive.display()))?;
    let text = if a.json { listing::info_json(&info) } else { listing::info_text(&info) };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

pub fn verify(g: &GlobalArgs, a: VerifyArgs) -> Result<ExitCode> {
    let archive = open_archive(&a.archive, g, WorkloadProfile::ExtractMany)?;
    let report = archive.verify().with_context(|| format!("verifying {}", a.archive.display()))?;
    for d in &report.damaged {
        eprintln!("lockbox: damaged: {}: {}", d.path, d.reason);
    }
    if report.is_ok() {
        if !g.quiet {
            eprintln!(
                "{}: OK: {} files, {} bytes, {} pages authenticated",
                a.archive.display(),
                report.files,
                report.bytes,
                report.pages
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "lockbox: verifying {}: {} damaged entries, {} damaged pages",
        a.archive.display(),
        report.damaged.len(),
        report.damaged_pages.len()
    );
    Ok(ExitCode::from(EXIT_AUTH))
}

pub fn keygen(a: KeygenArgs) -> Result<ExitCode> {
    keys::keygen(a.output.as_deref(), a.pq, a.symmetric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_paths_are_normalised() {
        assert_eq!(filter_path(b"./a/b/".to_vec()), b"a/b");
        assert_eq!(filter_path(b"a//".to_vec()), b"a");
        assert_eq!(filter_path(b"/".to_vec()), b"/");
        assert_eq!(filter_path(b"a\xff".to_vec()), b"a\xff");
    }
}
