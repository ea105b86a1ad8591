//! `completions`: a shell completion script, generated from the flag
//! definitions so that it never drifts from them.

use anyhow::Result;
use clap::CommandFactory;

use super::Outcome;
use crate::flags::{Cli, CompletionsArgs};
use crate::output;

pub fn run(a: CompletionsArgs) -> Result<Outcome> {
    let mut out = output::stdout();
    clap_complete::generate(a.shell, &mut Cli::command(), "lockbox", &mut out);
    output::flush(out)?;
    Ok(Outcome::Success)
}
