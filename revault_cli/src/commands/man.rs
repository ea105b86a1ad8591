//! `man`: the manual pages of lockbox and of each command (`lockbox-create(1)`,
//! `lockbox-key-add(1)`, as git names them), generated from the flag
//! definitions, with the written sections of [`super::man_text`] and the
//! exit codes of [`crate::exit::TABLE`]; printed, or installed as files.

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;

use super::man_text::{examples, ENVIRONMENT, FILES};
use super::Outcome;
use crate::exit::{self, roff_text, UsageError};
use crate::flags::{Cli, ManArgs};
use crate::output;

/// One page: the command path (`[]` for lockbox, `["key", "add"]`) and its
/// clap definition, renamed to the page's name.
struct Page {
    path: Vec<String>,
    command: clap::Command,
}

impl Page {
    fn name(&self) -> String {
        std::iter::once("lockbox").chain(self.path.iter().map(String::as_str)).collect::<Vec<_>>().join("-")
    }
}

/// `lockbox man [COMMAND [SUB]]` on stdout, or every page under
/// `--install DIR` (as `DIR/man1/lockbox-create.1`).
pub fn run(a: ManArgs) -> Result<Outcome> {
    let pages = pages();
    if let Some(dir) = &a.install {
        if !a.command.is_empty() {
            return Err(UsageError("--install writes every page: give no command with it".into()).into());
        }
        return install(&pages, dir);
    }
    let page = pages.iter().find(|p| p.path == a.command).ok_or_else(|| {
        UsageError(format!("no command {:?}: see `lockbox --help` for the commands", a.command.join(" ")))
    })?;
    output::raw(render(page, &pages)?.as_bytes())?;
    Ok(Outcome::Success)
}

fn install(pages: &[Page], dir: &Path) -> Result<Outcome> {
    let man1 = dir.join("man1");
    std::fs::create_dir_all(&man1).with_context(|| format!("creating {}", man1.display()))?;
    for page in pages {
        let path = man1.join(format!("{}.1", page.name()));
        std::fs::write(&path, render(page, pages)?).with_context(|| format!("writing {}", path.display()))?;
    }
    output::say(format_args!("installed {} manual pages in {}", pages.len(), man1.display()));
    Ok(Outcome::Success)
}

/// Every page: lockbox's, each command's, each subcommand's. clap's `help`
/// commands have none, so they are left out of the tree the pages are
/// made from, and no page names them.
fn pages() -> Vec<Page> {
    let mut cli = Cli::command().disable_help_subcommand(true);
    let nested: Vec<String> =
        cli.get_subcommands().filter(|s| s.has_subcommands()).map(|s| s.get_name().to_owned()).collect();
    for name in nested {
        cli = cli.mut_subcommand(name, |s| s.disable_help_subcommand(true));
    }
    cli.build();
    let mut pages = vec![Page { path: Vec::new(), command: cli.clone() }];
    for sub in cli.get_subcommands() {
        let path = vec![sub.get_name().to_owned()];
        pages.push(Page { path: path.clone(), command: sub.clone() });
        for inner in sub.get_subcommands() {
            let path = [path.clone(), vec![inner.get_name().to_owned()]].concat();
            pages.push(Page { path, command: inner.clone() });
        }
    }
    for page in &mut pages {
        let name = page.name();
        let bin = std::iter::once("lockbox").chain(page.path.iter().map(String::as_str)).collect::<Vec<_>>();
        // Every page shows lockbox's version (clap gives only the top one).
        let command = page.command.clone().name(name).bin_name(bin.join(" "));
        page.command = command.version(env!("CARGO_PKG_VERSION"));
    }
    pages
}

/// The page in roff: clap's sections, then EXAMPLES, ENVIRONMENT, FILES,
/// EXIT STATUS and SEE ALSO (man-pages(7)'s order), then VERSION.
fn render(page: &Page, pages: &[Page]) -> Result<String> {
    let man = clap_mangen::Man::new(page.command.clone());
    let mut roff = Vec::new();
    let rendering = "rendering the manual page";
    man.render_title(&mut roff).context(rendering)?;
    man.render_name_section(&mut roff).context(rendering)?;
    man.render_synopsis_section(&mut roff).context(rendering)?;
    man.render_description_section(&mut roff).context(rendering)?;
    if page.command.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut roff).context(rendering)?;
    }
    if page.command.has_subcommands() {
        man.render_subcommands_section(&mut roff).context(rendering)?;
    }
    let mut text = String::from_utf8(roff).context(rendering)?;
    let examples = examples(&page.path);
    if !examples.is_empty() {
        text.push_str(".SH EXAMPLES\n");
        for (what, command) in examples {
            text.push_str(&format!(".TP\n\\fB{}\\fR\n{}\n", roff_text(command), roff_text(what)));
        }
    }
    for (title, entries) in [("ENVIRONMENT", ENVIRONMENT), ("FILES", FILES)] {
        text.push_str(&format!(".SH {title}\n"));
        for (name, what) in entries {
            text.push_str(&format!(".TP\n\\fI{}\\fR\n{}\n", roff_text(name), roff_text(what)));
        }
    }
    text.push_str(&exit::man_section());
    text.push_str(".SH \"SEE ALSO\"\n");
    text.push_str(&see_also(page, pages).join(",\n"));
    text.push('\n');
    let mut version = Vec::new();
    man.render_version_section(&mut version).context(rendering)?;
    text.push_str(&String::from_utf8_lossy(&version));
    Ok(text)
}

/// lockbox's page names every command's; a command's names lockbox's and
/// those of its subcommands and its parent.
fn see_also(page: &Page, pages: &[Page]) -> Vec<String> {
    let reference = |name: &str| format!("\\fB{}\\fR(1)", roff_text(name));
    let mut refs = Vec::new();
    for other in pages {
        let related = match (page.path.len(), other.path.len()) {
            (0, 1) | (1, 0) | (2, 0) => true,
            (1, 2) | (2, 1) => other.path[0] == page.path[0],
            _ => false,
        };
        if related {
            refs.push(reference(&other.name()));
        }
    }
    if page.path.is_empty() {
        refs.extend(["tar", "age", "gpg", "ssh-keygen"].map(reference));
    }
    refs
}
