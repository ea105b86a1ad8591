//! Shell completions and the manual page, generated from the clap
//! definitions so that they never drift from the flags.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::{Cli, UsageError};

/// `lockbox completions SHELL`: the completion script on stdout.
pub fn completions(shell: Shell) -> Result<ExitCode> {
    let mut out = io::stdout().lock();
    clap_complete::generate(shell, &mut Cli::command(), "lockbox", &mut out);
    out.flush().context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// `lockbox man [COMMAND]`: the manual page (roff) of lockbox, or of one
/// of its commands (`lockbox-create(1)`, as git names them), on stdout.
pub fn man(command: Option<&str>) -> Result<ExitCode> {
    let mut cli = Cli::command();
    cli.build();
    let page_of = match command {
        None => cli,
        Some(name) => {
            let sub = cli.find_subcommand(name).ok_or_else(|| {
                UsageError(format!("no command {name:?}: see `lockbox --help` for the commands"))
            })?;
            let full = format!("lockbox-{}", sub.get_name());
            sub.clone().name(full.clone()).bin_name(full)
        }
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(page_of).render(&mut page).context("rendering the manual page")?;
    let mut out = io::stdout().lock();
    out.write_all(&page).and_then(|()| out.flush()).context("writing to stdout")?;
    Ok(ExitCode::SUCCESS)
}
