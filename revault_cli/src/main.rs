//! `lockbox`: the command-line face of `revault_lockbox_api`.
//!
//! This binary owns everything the library must not: flag parsing
//! ([`flags`]), reading passwords, drawing progress, showing results
//! ([`output`]), and turning errors into one-line messages and exit codes
//! ([`exit`], whose `TABLE` is the one list of the codes and what produces
//! them: `lockbox --help`, `lockbox man` and README.md show it). Archive
//! logic stays in the library; each command is a module of [`commands`].
//!
//! # Passwords
//!
//! Taken from, in order: `--password-file FILE` (its first line), the
//! environment variable `LOCKBOX_PASSWORD`, or a no-echo prompt on the
//! terminal (`/dev/tty`, whatever stdin is; `create` asks twice).
#![forbid(unsafe_code)]

mod commands;
mod dates;
mod exit;
mod flags;
#[cfg(feature = "mount")]
mod fuse;
mod keys;
mod location;
mod output;
mod password;
mod plugin_ui;
mod progress;
mod select;
mod signals;
mod signing;
mod source;

use std::process::ExitCode;

use commands::{
    append, cat, compact, completions, copy, create, diff, export, extract, info, key, keygen, list, man,
};
use commands::{log, mount, passwd, repair, verify};
use flags::{Command, KeyCommand};
use output::StopsAtDamage;

fn main() -> ExitCode {
    // First, while the process has one thread.
    password::take_from_environment();
    let cli = flags::parse();
    if let Err(err) = signals::watch() {
        output::error(&err, StopsAtDamage::No);
        return ExitCode::from(exit::FAILURE);
    }
    let stops = match &cli.command {
        Command::Extract(a) if !a.keep_going => StopsAtDamage::Extract,
        Command::Compact(_) => StopsAtDamage::Compact,
        _ => StopsAtDamage::No,
    };
    let streams_archive = matches!(&cli.command, Command::Create(_) | Command::Export(_));
    let compares = matches!(&cli.command, Command::Diff(_));
    let result = match cli.command {
        Command::Create(args) => create::run(args),
        Command::List(args) => list::run(args),
        Command::Extract(args) => extract::run(args),
        Command::Cat(args) => cat::run(args),
        Command::Info(args) => info::run(args),
        Command::Log(args) => log::run(args),
        Command::Diff(args) => diff::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Keygen(args) => keygen::run(args),
        Command::Key(KeyCommand::List(args)) => key::list(args),
        Command::Key(KeyCommand::Add(args)) => key::add(*args),
        Command::Key(KeyCommand::Remove(args)) => key::remove(args),
        Command::Passwd(args) => passwd::run(args),
        Command::Export(args) => export::run(args),
        Command::Copy(args) => copy::run(args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::Add(args) => append::add(args),
        Command::Update(args) => append::update(args),
        Command::Rm(args) => append::rm(args),
        Command::Compact(args) => compact::run(args),
        Command::Repair(args) => repair::run(args),
        Command::Mount(args) => mount::run(args),
        Command::Umount(args) => mount::umount(args),
    };
    match result {
        Ok(outcome) => outcome.into(),
        Err(err) => {
            // A reader cut off by `| head` is not a failure worth a line.
            if !exit::is_broken_pipe(&err) {
                output::error(&err, stops);
            }
            let code = exit::of_error(&err, streams_archive);
            // As `diff` and `cmp`: 1 means "different", so any trouble is 2.
            ExitCode::from(if compares && code == exit::FAILURE { exit::USAGE } else { code })
        }
    }
}
