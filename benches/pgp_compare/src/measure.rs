//! One scenario: every tool's create and extract, iteration by iteration,
//! each extraction checked against the source before its time counts.
//!
//! Iterations alternate the tools' order (forward, then backward), so no
//! tool always runs first on a cold machine or last on a hot one.

use std::fs;
use std::path::Path;

use anyhow::{anyhow, Error, Result};
use corpora::{Corpus, Shape};

use crate::args::Mode;
use crate::env::Env;
use crate::results::{Row, ScenarioReport};
use crate::scratch::Scratch;
use crate::tools::{Ctx, GpgHome, Tool};
use crate::units::human_bytes;
use crate::util::{fresh_dir, remove_tree};
use crate::verify::Verifier;

/// Larger corpora (the scale scenarios) skip 7zz.
const SEVENZIP_MAX_BYTES: u64 = 256 << 20;
/// So do trees of more files (about 4.5 s for 20,000 on the dev machine).
const SEVENZIP_MAX_FILES: u64 = 100_000;

enum Failure {
    /// A tool failed to run: fatal for lockbox and gpg, a note for others.
    Tool(Error),
    /// An extraction differs from the source: always fatal.
    Mismatch(Error),
}

/// Measures every available tool on `corpus`, `iterations` times.
pub fn run_scenario(
    env: &Env,
    name: &str,
    shape: Shape,
    corpus: &Corpus,
    iterations: u32,
    scratch: &mut Scratch,
) -> Result<ScenarioReport> {
    let work = scratch.work.join(name);
    let extract_dir = scratch.extract.join(name);
    fresh_dir(&work)?;
    fresh_dir(&extract_dir)?;
    let mut report = ScenarioReport {
        name: name.to_string(),
        shape,
        logical_bytes: corpus.logical_bytes,
        files: corpus.files,
        rows: Vec::new(),
        notes: Vec::new(),
    };
    let mut tools = vec![Tool::Lockbox];
    // The append row opens its archive with the password: password mode only.
    if env.mode == Mode::Password {
        tools.push(Tool::LockboxAdd);
    }
    if env.gpg.is_some() {
        tools.push(Tool::Gpg);
    }
    if env.age.is_some() {
        tools.extend([Tool::ZstdAge, Tool::Age]);
    }
    if env.restic.is_some() {
        tools.push(Tool::Restic);
    }
    if env.sevenzip.is_some() {
        if corpus.logical_bytes > SEVENZIP_MAX_BYTES {
            report.notes.push(format!(
                "7zz skipped: above {} its default LZMA2 level (about 1 MiB/s of text a core) takes hours",
                human_bytes(SEVENZIP_MAX_BYTES)
            ));
        } else if corpus.files > SEVENZIP_MAX_FILES {
            report.notes.push(format!(
                "7zz skipped: above {SEVENZIP_MAX_FILES} files it takes minutes a run \
                 (about 4.5 s for 20,000 on the dev machine)"
            ));
        } else {
            tools.push(Tool::SevenZip);
        }
    }
    tools.retain(|t| t.skip_name().is_none_or(|n| !env.skip.iter().any(|s| s == n)));
    for &tool in &tools {
        for &how in tool.extracts() {
            let label = tool.variant_label(how, shape, env.mode);
            report.rows.push(Row { tool, how, label, size: 0, create: Vec::new(), extract: Vec::new() });
        }
    }
    let gpg_home = match env.gpg {
        Some(_) => Some(GpgHome::new(env, name, &work)?),
        None => None,
    };
    let ctx = Ctx { env, shape, corpus, gpg_home: gpg_home.as_ref() };
    let mut round = Round {
        ctx: &ctx,
        name,
        work: &work,
        extract_dir: &extract_dir,
        iterations,
        verifier: Verifier::new(),
    };
    for i in 0..iterations {
        let order: Vec<Tool> = if i % 2 == 0 { tools.clone() } else { tools.iter().rev().copied().collect() };
        for tool in order {
            match round.run(tool, i, &mut report.rows, scratch) {
                Ok(()) => {}
                Err(Failure::Mismatch(e)) => return Err(e),
                Err(Failure::Tool(e)) if tool.required() => return Err(e),
                Err(Failure::Tool(e)) => {
                    let msg = format!("{e:#}");
                    eprintln!("note: {msg}");
                    report.notes.push(msg);
                    tools.retain(|&t| t != tool);
                    report.rows.retain(|r| r.tool != tool);
                }
            }
        }
    }
    drop(gpg_home);
    let _ = remove_tree(&work);
    let _ = remove_tree(&extract_dir);
    Ok(report)
}

/// What one tool's turn in an iteration needs.
struct Round<'a> {
    ctx: &'a Ctx<'a>,
    name: &'a str,
    work: &'a Path,
    extract_dir: &'a Path,
    iterations: u32,
    verifier: Verifier,
}

impl Round<'_> {
    /// One create and each of the tool's extractions (in alternating
    /// order too), each checked.
    fn run(&mut self, tool: Tool, i: u32, rows: &mut [Row], scratch: &mut Scratch) -> Result<(), Failure> {
        let (ctx, name, n) = (self.ctx, self.name, self.iterations);
        let label = tool.label(ctx.shape, ctx.env.mode);
        let archive = self.work.join(tool.archive_name());
        remove_archive(&archive);
        let fail = |what: &'static str| move |e: Error| Failure::Tool(e.context(format!("{label} {what}")));
        if let Some(seed) = ctx.seed(tool, &archive) {
            ctx.env.runner.run(&seed).map_err(fail("seed"))?;
        }
        let job = ctx.create(tool, &archive).map_err(fail("create"))?;
        let sample = ctx.env.runner.run(&job).map_err(fail("create"))?;
        let size = stored_size(&archive)
            .map_err(|e| Failure::Tool(anyhow!("{label} made no archive at {}: {e}", archive.display())))?;
        eprintln!("[{name}] {label} create {}/{n}: {:.3} s, {}", i + 1, sample.secs, human_bytes(size));
        let mut hows = tool.extracts().to_vec();
        if i % 2 == 1 {
            hows.reverse();
        }
        for how in hows {
            let row = rows.iter_mut().find(|r| r.tool == tool && r.how == how).expect("a row per variant");
            row.size = size;
            if how == tool.extracts()[0] {
                row.create.push(sample);
            }
            let dest = self.extract_dir.join(format!("{}-{how:?}", tool.archive_name()));
            fresh_dir(&dest).map_err(Failure::Tool)?;
            let job = ctx.extract(tool, how, &archive, &dest).map_err(fail("extract"))?;
            let sample = ctx.env.runner.run(&job).map_err(fail("extract"))?;
            for input in &ctx.corpus.inputs {
                self.verifier.verify(&ctx.corpus.root, &dest, input, tool.is_lockbox()).map_err(|e| {
                    Failure::Mismatch(e.context(format!(
                        "{name} extracted by {} differs from the source (left in {} for inspection)",
                        row.label,
                        dest.display()
                    )))
                })?;
            }
            eprintln!("[{name}] {} extract {}/{n}: {:.3} s, verified", row.label, i + 1, sample.secs);
            row.extract.push(sample);
            scratch.discard(&dest, ctx.corpus.logical_bytes, ctx.corpus.files).map_err(Failure::Tool)?;
        }
        remove_archive(&archive);
        Ok(())
    }
}

/// The bytes of an archive file, or of every file under a repository
/// directory (restic's).
fn stored_size(path: &Path) -> std::io::Result<u64> {
    let meta = fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Ok(meta.len());
    }
    let mut total = 0;
    for entry in fs::read_dir(path)? {
        total += stored_size(&entry?.path())?;
    }
    Ok(total)
}

/// Removes an archive file or a repository directory, if there is one.
fn remove_archive(path: &Path) {
    if path.is_dir() {
        let _ = remove_tree(path);
    } else {
        let _ = fs::remove_file(path);
    }
}
