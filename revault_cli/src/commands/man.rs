//! `man`: the manual page (roff) of lockbox or of one of its commands,
//! generated from the flag definitions, with the exit codes of
//! [`crate::exit::TABLE`].

use anyhow::{Context, Result};
use clap::CommandFactory;

use super::Outcome;
use crate::exit::{self, UsageError};
use crate::flags::{Cli, ManArgs};
use crate::output;

/// `lockbox man [COMMAND]`: the page of lockbox, or of one of its commands
/// (`lockbox-create(1)`, as git names them), on stdout.
pub fn run(a: ManArgs) -> Result<Outcome> {
    let mut cli = Cli::command();
    cli.build();
    let page_of = match a.command.as_deref() {
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
    output::raw(&with_exit_status(page).into_bytes())?;
    Ok(Outcome::Success)
}

/// `page` with an EXIT STATUS section before VERSION (where man-pages(7)
/// puts it), or at the end.
fn with_exit_status(page: Vec<u8>) -> String {
    let page = String::from_utf8_lossy(&page).into_owned();
    let section = exit::man_section();
    match page.find("\n.SH VERSION") {
        Some(at) => format!("{}\n{section}{}", &page[..at], &page[at + 1..]),
        None => format!("{page}{section}"),
    }
}
