//! The Markdown results: the machine, the tools, one table row per tool
//! and extraction variant, ratios to gpg, and how to read them.

use std::fmt::Write as _;
use std::path::Path;

use corpora::Shape;

use crate::args::{Args, Mode};
use crate::env::Env;
use crate::host::{binary_size, chacha_backend, load_average, machine, os, utc_now};
use crate::process::Sample;
use crate::results::ScenarioReport;
use crate::tools::{Extract, Tool};
use crate::units::{cpu_ratio, cpu_timing, human_bytes, max_rss, peak, ratio, threads, timing};
use crate::util::q;

/// Where the run wrote, for the record.
pub struct Setting<'a> {
    pub root: &'a Path,
    pub work_fs: String,
    pub extract: &'a Path,
    pub extract_fs: &'a str,
}

pub fn render(args: &Args, env: &Env, at: &Setting, reports: &[ScenarioReport]) -> String {
    let mut md = String::new();
    let title = match args.mode {
        Mode::Password => "# pgp_compare: lockbox vs gpg\n",
        Mode::Key => "# pgp_compare --mode key: lockbox vs gpg, public keys\n",
    };
    let _ = writeln!(md, "{title}");
    let _ = writeln!(md, "- Date (UTC): {}", utc_now());
    let _ = writeln!(md, "- Machine: {}", machine());
    let _ = writeln!(md, "- OS: {}", os());
    let _ = writeln!(md, "- Load average at the end (1, 5, 15 min): {}", load_average());
    let _ =
        writeln!(md, "- lockbox: revault_lockbox_api {} at commit {}", env!("CARGO_PKG_VERSION"), env.commit);
    let _ = writeln!(md, "- lockbox release binary: {}", binary_size(&env.runner.exe));
    let _ = writeln!(md, "- lockbox page cipher: {}", chacha_backend());
    for (_, v) in &env.versions {
        let _ = writeln!(md, "- Tool: {v}");
    }
    let mut cmd = args.command.clone();
    for a in &args.given {
        cmd.push(' ');
        cmd.push_str(&q(a));
    }
    let _ = writeln!(md, "- Command: `{cmd}`");
    let _ = writeln!(
        md,
        "- Settings: {} iteration(s) each (tools in alternating order), size factor {}, warm page cache; \
         archives in `{}` ({}), extractions in `{}` ({})",
        args.iterations,
        args.size_factor,
        at.root.join("work").display(),
        at.work_fs,
        at.extract.display(),
        at.extract_fs
    );
    for note in &env.notes {
        let _ = writeln!(md, "- Note: {note}");
    }
    md.push('\n');

    let _ = writeln!(
        md,
        "| scenario | logical bytes | tool | output size | create s, median (min–max) | \
         create CPU s | extract s, median (min–max) | extract CPU s | peak RSS create | \
         peak RSS extract | peak threads create | peak threads extract |"
    );
    let _ = writeln!(md, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for r in reports {
        for t in &r.rows {
            let pct = if r.logical_bytes == 0 {
                String::new()
            } else {
                format!(" ({:.1}%)", 100.0 * t.size as f64 / r.logical_bytes as f64)
            };
            let same_as = if t.tool.is_lockbox() { "= lockbox" } else { "= above" };
            let shared = |cell: String| if t.create.is_empty() { same_as.to_string() } else { cell };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {}{pct} | {} | {} | {} | {} | {} | {} | {} | {} |",
                r.name,
                human_bytes(r.logical_bytes),
                t.label.replace('|', "\\|"),
                human_bytes(t.size),
                shared(timing(&t.create)),
                shared(cpu_timing(&t.create)),
                timing(&t.extract),
                cpu_timing(&t.extract),
                shared(peak(&t.create)),
                peak(&t.extract),
                shared(threads(&t.create)),
                threads(&t.extract)
            );
        }
    }
    md.push('\n');

    let compared: Vec<_> = reports
        .iter()
        .filter_map(|r| {
            let l = r.row(Tool::Lockbox, Extract::Default)?;
            let g = r.row(Tool::Gpg, Extract::Default)?;
            Some((r, l, r.row(Tool::Lockbox, Extract::NoSync), g))
        })
        .collect();
    if !compared.is_empty() {
        let _ = writeln!(md, "Ratios lockbox / GPG (below 1: lockbox smaller, faster or leaner):\n");
        let _ = writeln!(
            md,
            "| scenario | size | create time | extract time | extract time, sync off | \
             peak RSS create | peak RSS extract |"
        );
        let _ = writeln!(md, "|---|--:|--:|--:|--:|--:|--:|");
        for (r, l, unsynced, g) in compared {
            let rss = |a: &[Sample], b: &[Sample]| match (max_rss(a), max_rss(b)) {
                (Some(x), Some(y)) if y > 0 => format!("{:.2}", x as f64 / y as f64),
                _ => "n/a".into(),
            };
            let _ = writeln!(
                md,
                "| {} | {:.3} | {} | {} | {} | {} | {} |",
                r.name,
                l.size as f64 / g.size.max(1) as f64,
                ratio(&l.create, &g.create),
                ratio(&l.extract, &g.extract),
                unsynced.map_or_else(|| "n/a".into(), |u| ratio(&u.extract, &g.extract)),
                rss(&l.create, &g.create),
                rss(&l.extract, &g.extract)
            );
        }
        md.push('\n');
    }

    peer_ratios(&mut md, reports);

    let shapes: Vec<String> = reports
        .iter()
        .map(|r| {
            let shape = if r.shape == Shape::Tree { "tree" } else { "single file" };
            format!("{} ({shape}, {} file(s))", r.name, r.files)
        })
        .collect();
    let _ = writeln!(md, "Scenarios: {}.\n", shapes.join(", "));
    for r in reports {
        for n in &r.notes {
            let _ = writeln!(md, "- {}: {n}", r.name);
        }
    }
    md.push_str(HOW_TO_READ);
    if args.mode == Mode::Key {
        md.push_str(HOW_TO_READ_KEYS);
    }
    md
}

/// lockbox against every other tool, wall and CPU time: create, and
/// extraction with sync off (like the others, which never sync).
fn peer_ratios(md: &mut String, reports: &[ScenarioReport]) {
    let mut rows = Vec::new();
    for r in reports {
        let (Some(l), Some(u)) =
            (r.row(Tool::Lockbox, Extract::Default), r.row(Tool::Lockbox, Extract::NoSync))
        else {
            continue;
        };
        for t in r.rows.iter().filter(|t| !t.tool.is_lockbox() && t.how == Extract::Default) {
            rows.push(format!(
                "| {} | {} | {:.3} | {} | {} | {} | {} |",
                r.name,
                t.label.replace('|', "\\|"),
                l.size as f64 / t.size.max(1) as f64,
                ratio(&l.create, &t.create),
                cpu_ratio(&l.create, &t.create),
                ratio(&u.extract, &t.extract),
                cpu_ratio(&u.extract, &t.extract)
            ));
        }
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(md, "Ratios lockbox / each other tool, medians (extraction: lockbox with sync off):\n");
    let _ =
        writeln!(md, "| scenario | against | size | create wall | create CPU | extract wall | extract CPU |");
    let _ = writeln!(md, "|---|---|--:|--:|--:|--:|--:|");
    for row in rows {
        let _ = writeln!(md, "{row}");
    }
    md.push('\n');
}

const HOW_TO_READ_KEYS: &str = "\
- Key mode: lockbox locks each archive to an X25519 recipient (`KeySet::new().recipients(..)`) and \
opens it with the identity (parsed in the timed run): no Argon2id. gpg encrypts with `--encrypt -r` to \
a key pair made without passphrase in the fresh `--homedir` (`--quick-generate-key ... \
future-default`: ed25519 signing, cv25519 encryption), same cipher and compression options; its \
agent holds the key before timing. zstd|age is as in password mode. 7zz has no public keys.
";

const HOW_TO_READ: &str = "\
How to read this:
- Times are wall clock per run, including process start; CPU times are user + system seconds of \
the command and every process it waited for (the stages of a pipeline), from the kernel's \
accounting in clock ticks (10 ms). Every extraction was compared with the \
source before its time was kept (content and symlink targets; for lockbox also modes and mtimes). \
Each iteration runs the tools in turn, forward in even iterations and backward in odd ones.
- lockbox: `create_archive` with `CreateOptions::new()` (Argon2id m=64 MiB, t=3, p=4; the archive \
synced) and `Archive::open` + `extract` with `ExtractOptions::new()` (every file synced), in a \
child process; its peak RSS is the child's VmHWM. `lockbox, sync off` extracts the same archive \
with `ExtractOptions::new().sync(false)`, like the other tools, which never sync; its create is \
the `lockbox` row's (`= lockbox`). `..., then sync` is the `zstd | age` extraction followed by \
`sync -f .` in the destination (one syncfs), like against lockbox's synced default.
- gpg: `gpg --symmetric --cipher-algo AES256 --compress-algo ZLIB --compress-level 6` with a fresh \
`--homedir` whose agent was started before timing; trees go through `tar -cf -` / `tar -xf -` in \
the same pipeline. Nothing is synced.
- zstd|age uses an X25519 identity from `age-keygen` (`age -p` needs a terminal): no passphrase \
KDF cost. 7zz is `7zz a -t7z -mhe=on -p...` at its default level (LZMA2 -mx5, all cores).
- `age -r` is age alone (`tar -cf - | age -r` for trees), the peer on incompressible data. `restic \
backup/restore` backs the tree up into a repository made fresh before each create (`restic init`, \
untimed) and restores the latest snapshot, `--no-cache`, with the same passphrase (its scrypt KDF, \
calibrated at init, runs in each timed command, as lockbox's Argon2id does); its size is the \
repository's files.
- `fixed-cost` (an empty file) is what each tool pays whatever the input: process start, the \
password KDF or S2K (gpg's agent already running), headers.
- Peak RSS of external tools is GNU time's maximum resident set size of each process of the \
pipeline, summed over the stages (they run at once).
- Peak threads: the most threads seen at once in `/proc/PID/stat`, sampled every 2 ms from the \
harness: lockbox's child process; for the external tools every process of the pipeline (not the \
`bash` and `time` wrappers, nor gpg's agent), summed over the stages.
- Extractions on a disk are deleted at the end of the run, not between runs: creating files soon \
after deleting many is slow on some file systems (ext4 without a journal), for every tool. On a \
tmpfs they are deleted at once.
";
