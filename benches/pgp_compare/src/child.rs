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
use revault_lockbox_api::keys::Identity;
use revault_lockbox_api::{
    create_archive, Archive, ArchiveUpdater, ArchiveWriter, CreateOptions, ExtractOptions, KeySet, Password,
    UpdateOptions,
};

use crate::util::last_number;

const USAGE: &str = "usage: --child create|append KEYFILE ARCHIVE BASE INPUT... | \
                     --child extract|nosync KEYFILE ARCHIVE DEST | --child seed KEYFILE ARCHIVE";

/// `--child create|append KEYFILE ARCHIVE BASE INPUT...` (`append`: one
/// `add` session into the empty archive that `--child seed KEYFILE
/// ARCHIVE` wrote, untimed, before) or
/// `--child extract|nosync KEYFILE ARCHIVE DEST` (`nosync`: extract with
/// `sync(false)`); KEYFILE holds a passphrase, or an age identity whose
/// recipient locks the archive (key mode). The process is named
/// `lockbox-MODE`; prints `elapsed_ns=… peak_rss_kib=…` on success.
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
    let key = rest.first().context(USAGE)?;
    let key = fs::read_to_string(key).with_context(|| format!("reading {key}"))?;
    let password = Password::from(key.as_str());
    let start = Instant::now();
    // Identities are parsed in the timed part: lockbox reads them on every run.
    let identities = if key.contains("AGE-SECRET-KEY-") {
        Identity::parse_file(key.as_bytes(), &mut |_| None).context("parsing the identity")?
    } else {
        Vec::new()
    };
    match (mode.as_str(), rest) {
        ("create", [_, archive, base, inputs @ ..]) if !inputs.is_empty() => {
            let inputs: Vec<PathBuf> = inputs.iter().map(PathBuf::from).collect();
            let keys = if identities.is_empty() {
                KeySet::from(&password)
            } else {
                KeySet::new().recipients(identities.iter().filter_map(Identity::to_recipient))
            };
            create_archive(Path::new(archive), Path::new(base), &inputs, keys, CreateOptions::new())
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
            let opened = if identities.is_empty() {
                Archive::open(file, &password)
            } else {
                Archive::open(file, &identities)
            };
            let opened = opened.with_context(|| format!("lockbox open of {archive}"))?;
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
