//! Child mode: one lockbox create or extract, isolated for timing and RSS.
//!
//! The harness re-executes itself as `--child ...` so that lockbox's wall
//! time includes a process start like the external tools', and its peak
//! RSS (`VmHWM`) is lockbox's alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use revault_lockbox_api::{
    create_archive, Archive, ArchiveUpdater, ArchiveWriter, CreateOptions, ExtractOptions, Password,
    UpdateOptions,
};

use crate::util::last_number;

const USAGE: &str = "usage: --child create|append PASSFILE ARCHIVE BASE INPUT... | \
                     --child extract|nosync PASSFILE ARCHIVE DEST | --child seed PASSFILE ARCHIVE";

/// `--child create|append PASSFILE ARCHIVE BASE INPUT...` (`append`: one
/// `add` session into the empty archive that `--child seed PASSFILE
/// ARCHIVE` wrote, untimed, before) or
/// `--child extract|nosync PASSFILE ARCHIVE DEST` (`nosync`: extract with
/// `sync(false)`); the process is named `lockbox-MODE`; prints
/// `elapsed_ns=… peak_rss_kib=…` on success.
pub fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<String> {
    let (mode, rest) = args.split_first().context(USAGE)?;
    // Names the process (and the threads it starts) for perf reports.
    let _ = fs::write("/proc/self/comm", format!("lockbox-{mode}"));
    let pass = rest.first().context(USAGE)?;
    let pass = fs::read_to_string(pass).with_context(|| format!("reading {pass}"))?;
    let password = Password::from(pass.as_str());
    let start = Instant::now();
    match (mode.as_str(), rest) {
        ("create", [_, archive, base, inputs @ ..]) if !inputs.is_empty() => {
            let inputs: Vec<PathBuf> = inputs.iter().map(PathBuf::from).collect();
            create_archive(Path::new(archive), Path::new(base), &inputs, &password, CreateOptions::new())
                .with_context(|| format!("lockbox create of {archive}"))?;
        }
        ("seed", [_, archive]) => {
            let file = fs::File::create(archive).with_context(|| format!("creating {archive}"))?;
            ArchiveWriter::new(file, &password, CreateOptions::new())?.finish()?.sync_all()?;
        }
        ("append", [_, archive, base, inputs @ ..]) if !inputs.is_empty() => {
            let inputs: Vec<PathBuf> = inputs.iter().map(PathBuf::from).collect();
            ArchiveUpdater::open(Path::new(archive), &password, UpdateOptions::new())
                .and_then(|u| u.add(Path::new(base), &inputs))
                .with_context(|| format!("lockbox add to {archive}"))?;
        }
        ("extract" | "nosync", [_, archive, dest]) => {
            let options = ExtractOptions::new().sync(mode == "extract");
            let file = fs::File::open(archive).with_context(|| format!("opening {archive}"))?;
            let opened =
                Archive::open(file, &password).with_context(|| format!("lockbox open of {archive}"))?;
            opened
                .extract(Path::new(dest), &options)
                .with_context(|| format!("lockbox extract of {archive} to {dest}"))?;
        }
        _ => bail!(USAGE),
    }
    let elapsed = start.elapsed();
    let peak = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmHWM:").and_then(last_number)))
        .map_or_else(|| "n/a".into(), |k| k.to_string());
    Ok(format!("elapsed_ns={} peak_rss_kib={peak}", elapsed.as_nanos()))
}
