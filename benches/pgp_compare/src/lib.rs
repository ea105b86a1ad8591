//! `pgp_compare`: lockbox against `gpg --symmetric` (and, where installed,
//! `zstd | age` and `7zz`) on the published corpora.
//!
//! ```text
//! cargo run --release -p pgp_compare -- --iterations 3
//! cargo bench -p revault_lockbox_api --bench pgp_compare -- --iterations 3   # the same run
//! cargo run --release -p pgp_compare -- --scenario large-randomish --lockbox-only
//! cargo run --release -p pgp_compare -- --extract-root /dev/shm
//! ```
//!
//! Why it is built this way:
//! - Lockbox runs in a child process (this binary re-executed with a hidden
//!   `--child` mode), so its wall time includes a process start like the
//!   external tools' does, and its peak RSS (`VmHWM`) is lockbox's alone.
//! - External tools run as real processes (`bash -c` for pipelines), each
//!   stage under `/usr/bin/time -f %M` when that exists; a pipeline's peak
//!   RSS is the sum of its stages' peaks (they run at the same time).
//! - Like against like: lockbox extracts twice per iteration, synced (its
//!   default) and with `sync(false)` (as the other tools, which never
//!   sync); `--extract-root` puts every tool's extractions on another file
//!   system (a tmpfs); `fixed-cost` times an empty input; iterations
//!   alternate the tools' order.
//! - Every extraction is compared with the source before its time counts:
//!   content and symlink targets for every tool, plus modes and mtimes for
//!   lockbox. A mismatch fails the run.
//! - Corpora are generated once per size factor (a stamp file records it)
//!   and reused; runs are on a warm page cache.
//! - Lockbox keeps its defaults (Argon2id m=64 MiB, t=3, p=4; the archive
//!   and every extracted file synced to disk); gpg keeps its S2K defaults.
//!
//! Modules, from the top down (each uses only those below it): `report`
//! (Markdown) and `measure` (iterations over tools, each extraction
//! checked by `verify`) over `results` (rows and samples); `tools` (each
//! tool's command lines, gpg's home) over `env` (what is installed, found
//! once) and `host` (the machine and the commit, for the record); `process`
//! (timing one command, its RSS and threads) under them all, with `units`
//! (how numbers print); `scratch` (directories, tmpfs, deferred deletion),
//! `corpus` (generation and stamps), `args` (flags) and `util` at the
//! bottom. `child` is lockbox's side of the child process.
//!
//! Only the library's stable entry points are used: `create_archive`,
//! `CreateOptions::new`, `Archive::open`, `Archive::extract`,
//! `ExtractOptions::new().sync(..)`, `Password::from`, and for the
//! `lockbox add (append)` row `ArchiveWriter` and `ArchiveUpdater`.

mod args;
mod child;
mod corpus;
mod env;
mod host;
mod measure;
mod process;
mod report;
mod results;
mod scratch;
mod tools;
mod units;
mod util;
mod verify;

use std::fs;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::args::Args;
use crate::corpus::{corpus_for, existing_tree};
use crate::env::Env;
use crate::measure::run_scenario;
use crate::report::{render, Setting};
use crate::scratch::{fs_type, Scratch};
use crate::units::human_bytes;
use crate::util::{remove_tree, write_atomic};

/// Runs the harness on `argv` (the arguments after the program's name),
/// as `cargo run -p pgp_compare` and `cargo bench -p revault_lockbox_api
/// --bench pgp_compare` both do. `command` is how it was started, up to
/// and including the `--` before `argv`: the results record it.
pub fn main(command: &str, argv: Vec<String>) -> ExitCode {
    if argv.first().map(String::as_str) == Some("--child") {
        return child::main(&argv[1..]);
    }
    let args = Args::from_command_line(command, argv);
    if args.list {
        args::list();
        return ExitCode::SUCCESS;
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pgp_compare: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<()> {
    let selected = args.selected();
    if args.scale_entries.is_some() && !selected.iter().any(|s| s.name == "scale-many-files") {
        bail!("--scale-entries sizes scale-many-files: add --scenario scale-many-files or --scale");
    }
    let cwd = std::env::current_dir().context("current directory")?;
    let root = cwd.join(&args.root);
    let extract_root = args.extract_root.as_ref().map(|d| cwd.join(d));
    let mut scratch = Scratch::new(&root, extract_root.as_deref(), args.mount_tmpfs)?;
    let env = Env::probe(args, &scratch.work)?;
    for note in &env.notes {
        eprintln!("note: {note}");
    }
    eprintln!("extracting into {} ({})", scratch.extract.display(), scratch.extract_fs);
    let mut reports = Vec::new();
    for tree in &args.trees {
        let (name, corpus) = existing_tree(tree)?;
        eprintln!(
            "== {name}: {} in {} file(s) under {}",
            human_bytes(corpus.logical_bytes),
            corpus.files,
            corpus.root.display()
        );
        reports.push(run_scenario(
            &env,
            &name,
            corpora::Shape::Tree,
            &corpus,
            args.iterations,
            &mut scratch,
        )?);
    }
    for scenario in selected {
        let (scenario, name) = corpus::sized(scenario, args.scale_entries);
        let corpus = corpus_for(&scenario, &name, &root.join("corpora"), args.size_factor)?;
        eprintln!(
            "== {name}: {} in {} file(s) under {}",
            human_bytes(corpus.logical_bytes),
            corpus.files,
            corpus.root.display()
        );
        reports.push(run_scenario(&env, &name, scenario.shape, &corpus, args.iterations, &mut scratch)?);
    }
    let setting = Setting {
        root: &root,
        work_fs: fs_type(&scratch.work),
        extract: &scratch.extract,
        extract_fs: &scratch.extract_fs,
    };
    let markdown = render(args, &env, &setting, &reports);
    scratch.finish();
    // Scratch left by runs that failed, and this run's stale one.
    for entry in fs::read_dir(&root).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with("stale-work-") {
            let _ = remove_tree(&entry.path());
        }
    }
    print!("{markdown}");
    let output = match &args.output {
        Some(o) if o == "-" => None,
        Some(o) => Some(cwd.join(o)),
        None => Some(root.join("results.md")),
    };
    if let Some(path) = output {
        write_atomic(&path, markdown.as_bytes())?;
        eprintln!("results written to {}", path.display());
    }
    Ok(())
}

/// `cargo bench -p revault_lockbox_api --bench pgp_compare -- ARGS`. Cargo
/// runs a bench from its package's directory and adds `--bench` to ARGS;
/// the harness runs from the workspace's root instead, where `cargo run -p
/// pgp_compare` is typed and where its relative paths (`--root`,
/// `--output`, `--tree`) point, and without that flag.
pub fn main_as_cargo_bench() -> ExitCode {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if let Err(e) = std::env::set_current_dir(&workspace) {
        eprintln!("pgp_compare: error: changing to the workspace {}: {e}", workspace.display());
        return ExitCode::FAILURE;
    }
    let argv = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    main("cargo bench -p revault_lockbox_api --bench pgp_compare --", argv)
}
