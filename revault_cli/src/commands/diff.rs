//! `diff`: what changed between two states of an archive (`--from N [--to
//! M]`), or between a state and a directory (`-C DIR [PATH...]`). The
//! library compares; this shows the differences and picks the exit code:
//! 0 equal, 1 different, 2 trouble, 3 authentication.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use anyhow::{Context, Result};
use revault_lockbox_api::diff::{self, DiffOptions, Difference};
use revault_lockbox_api::read::AsOf;
use revault_lockbox_api::WorkloadProfile;

use super::{open_archive, Outcome, Records};
use crate::exit::UsageError;
use crate::flags::DiffArgs;
use crate::output;

pub fn run(a: DiffArgs) -> Result<Outcome> {
    if a.from.is_some() && a.read.earlier_state() {
        let why =
            "--session and --at choose the state compared with -C DIR; between states, use --from and --to";
        return Err(UsageError(why.into()).into());
    }
    let mut options = DiffOptions::new().quick(a.quick).dir_mtimes(a.dir_mtimes);
    // The archive itself, if it lies in DIR, as a create leaves it out.
    if let Ok(own) = std::fs::metadata(&a.archive) {
        options = options.leave_out(own.dev(), own.ino());
    }
    let (archive, name) =
        open_archive(&a.archive, &a.read, WorkloadProfile::Balanced, a.threads.count(), Records::AsTheyAre)?;
    let comparing = || format!("comparing {name}");
    let found = match (&a.directory, a.from) {
        (Some(dir), _) => {
            let paths: Vec<Vec<u8>> = a.paths.iter().map(|p| p.as_bytes().to_vec()).collect();
            let differences = diff::directory(&archive, dir, &paths, options).with_context(comparing)?;
            let mut differences = differences.map(|d| d.with_context(comparing));
            show(&mut differences, a.quiet, a.format.json, true)?
        }
        (None, Some(from)) => {
            let state =
                |n: i64| archive.at(AsOf::State(n)).with_context(|| format!("opening state {n} of {name}"));
            let old = state(from)?;
            let new = a.to.map(state).transpose()?;
            let differences = match &new {
                Some(new) => diff::states(&old, new, options),
                None => diff::states(&old, &archive, options),
            }
            .with_context(comparing)?;
            let mut differences = differences.map(|d| d.with_context(comparing));
            show(&mut differences, a.quiet, a.format.json, false)?
        }
        (None, None) => unreachable!("clap requires --from or -C"),
    };
    Ok(if found == 0 { Outcome::Success } else { Outcome::Different })
}

/// Shows `differences` and counts them; `quiet` (`-q`): shows none, and
/// the first one answers.
fn show(
    differences: &mut dyn Iterator<Item = Result<Difference>>,
    quiet: bool,
    as_json: bool,
    on_disk: bool,
) -> Result<u64> {
    match quiet {
        true => Ok(u64::from(differences.next().transpose()?.is_some())),
        false => output::differences(differences, as_json, on_disk),
    }
}
