//! `-v`/`-vv`, for the commands that store, remove or restore entries.

use clap::{ArgAction, Args};

/// tar's `-v`: once for names, twice for `tar -tv` lines.
#[derive(Debug, Args)]
pub struct VerboseArgs {
    /// Name each entry as it is stored, removed or restored; twice (-vv),
    /// show it as list -l does. Turns the progress bar off.
    #[arg(short, long, action = ArgAction::Count)]
    pub verbose: u8,
}
