//! `-v`/`-vv` and `-n/--dry-run`, for the commands that store or restore
//! entries.

use clap::{ArgAction, Args};

/// tar's `-v`: once for names, twice for `tar -tv` lines.
#[derive(Debug, Args)]
pub struct VerboseArgs {
    /// Name each entry as it is stored, removed or restored; twice (-vv),
    /// show it as list -l does. Turns the progress bar off.
    #[arg(short, long, action = ArgAction::Count)]
    pub verbose: u8,
}

/// `-n`: the work without its result.
#[derive(Debug, Args)]
pub struct DryRunArgs {
    /// Do everything but write: read and check what would be stored or
    /// restored, report it (with -v, each entry) and any failure, and
    /// leave the archive or destination untouched.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
}
