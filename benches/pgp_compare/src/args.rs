//! The command line: flags, their defaults, and the scenarios they select.

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, ValueEnum};
use corpora::Scenario;

/// How the archives are locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// A passphrase: lockbox's Argon2id slot, `gpg --symmetric`, 7zz `-p`
    /// (zstd|age always uses an X25519 key).
    Password,
    /// Public keys: lockbox with an X25519 recipient, `gpg --encrypt` to a
    /// fresh key without passphrase, `zstd | age -r`; 7zz has none.
    Key,
}

/// pgp_compare: lockbox vs gpg (and zstd|age, 7zz) on the published corpora.
#[derive(Parser, Debug)]
#[command(name = "pgp_compare")]
pub struct Args {
    /// How the harness was started, up to the `--` (for the usage line and
    /// the record).
    #[arg(skip)]
    pub command: String,

    /// The arguments as given after the command, for the record.
    #[arg(skip)]
    pub given: Vec<String>,

    /// Timed runs of each create and extract.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,

    /// Corpora and scratch space, relative to the current directory.
    #[arg(long, value_name = "DIR", default_value = "target/lockbox-gpg-bench")]
    pub root: PathBuf,

    /// Markdown results; `-` for stdout only [default: the --root DIR's results.md].
    #[arg(long, value_name = "PATH")]
    pub output: Option<String>,

    /// Run this scenario (repeatable) [default: every default scenario, unless --tree is given].
    #[arg(long = "scenario", value_name = "NAME", value_parser = parse_scenario)]
    pub scenarios: Vec<&'static Scenario>,

    /// Also measure this existing directory tree, named after its last
    /// component (repeatable): real corpora such as the Linux source tree
    /// (`scripts/linux-tree.sh` unpacks one). It is read, never changed.
    #[arg(long = "tree", value_name = "DIR")]
    pub trees: Vec<PathBuf>,

    /// Add the scale (GiB-sized) scenarios.
    #[arg(long)]
    pub scale: bool,

    /// Multiply corpus sizes by F (CI smoke uses 0.01).
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_factor)]
    pub size_factor: f64,

    /// Extract into DIR (e.g. a tmpfs such as /dev/shm) instead of next to
    /// the archives on the disk, for every tool.
    #[arg(long, value_name = "DIR")]
    pub extract_root: Option<PathBuf>,

    /// Mount a fresh tmpfs on the extract root (default: the --root DIR's tmpfs) for
    /// the run and unmount it at the end; needs root.
    #[arg(long)]
    pub mount_tmpfs: bool,

    /// Entries (files) in the `scale-many-files` tree at size factor 1, for
    /// 100k or 2M variants [default: 1000000].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub scale_entries: Option<u64>,

    /// Lock archives with a passphrase or with public keys.
    #[arg(long, value_enum, default_value_t = Mode::Password)]
    pub mode: Mode,

    /// Skip the external tools.
    #[arg(long)]
    pub lockbox_only: bool,

    /// Skip one row's tool (repeatable): gpg, zstd-age, age, restic, 7zz,
    /// or add (lockbox's append row); gpg's 1 GiB runs take minutes.
    #[arg(long = "skip", value_name = "TOOL", value_parser = ["gpg", "zstd-age", "age", "restic", "7zz", "add"])]
    pub skip: Vec<String>,

    /// List the scenarios and exit.
    #[arg(long)]
    pub list: bool,
}

impl Args {
    /// Parses `argv` (without the program's name) for a harness started as
    /// `command`; a usage error exits 2, as clap's `parse` does.
    pub fn from_command_line(command: &str, argv: Vec<String>) -> Args {
        let matches = Args::command()
            .override_usage(format!("{command} [OPTIONS]"))
            .get_matches_from(std::iter::once("pgp_compare".to_owned()).chain(argv.iter().cloned()));
        let mut args = Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
        args.command = command.to_owned();
        args.given = argv;
        args
    }

    /// The scenarios to run, in order, each once.
    pub fn selected(&self) -> Vec<&'static Scenario> {
        let mut out: Vec<&'static Scenario> = Vec::new();
        let defaults = corpora::scenarios().iter().filter(|s| s.default);
        let named: Vec<&'static Scenario> = if self.scenarios.is_empty() && self.trees.is_empty() {
            defaults.collect()
        } else {
            self.scenarios.clone()
        };
        let scale = corpora::scenarios().iter().filter(|s| self.scale && s.scale);
        for s in named.into_iter().chain(scale) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        out
    }
}

/// Prints the scenarios, one a line.
pub fn list() {
    for s in corpora::scenarios() {
        let tag = if s.default {
            " (default)"
        } else if s.scale {
            " (--scale)"
        } else {
            ""
        };
        println!("{:<18} {}{tag}", s.name, s.description);
    }
}

fn parse_scenario(name: &str) -> Result<&'static Scenario, String> {
    corpora::find(name).ok_or_else(|| {
        let known: Vec<_> = corpora::scenarios().iter().map(|s| s.name).collect();
        format!("unknown scenario {name:?}; known: {}", known.join(", "))
    })
}

fn parse_factor(v: &str) -> Result<f64, String> {
    v.parse()
        .ok()
        .filter(|f: &f64| f.is_finite() && *f > 0.0)
        .ok_or_else(|| format!("wants a positive number, got {v:?}"))
}
