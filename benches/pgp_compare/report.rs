//! The Markdown results: the machine, the tools, one table row per tool
//! and extraction variant, ratios to gpg, and how to read them.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use corpora::Shape;

use crate::args::{Args, Mode};
use crate::measure::{Row, ScenarioReport};
use crate::process::Sample;
use crate::tools::{Env, Extract, Tool};
use crate::util::{last_number, q};

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
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let _ = writeln!(md, "- Load average at the end (1, 5, 15 min): {}", load.join(" "));
    let _ =
        writeln!(md, "- lockbox: revault_lockbox_api {} at commit {}", env!("CARGO_PKG_VERSION"), env.commit);
    let _ = writeln!(md, "- lockbox release binary: {}", binary_size(&env.exe));
    for (_, v) in &env.versions {
        let _ = writeln!(md, "- Tool: {v}");
    }
    let mut cmd = String::from("cargo bench -p revault_lockbox_api --bench pgp_compare --");
    for a in Args::given() {
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
         extract s, median (min–max) | peak RSS create | peak RSS extract | \
         peak threads create | peak threads extract |"
    );
    let _ = writeln!(md, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|");
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
                "| {} | {} | {} | {}{pct} | {} | {} | {} | {} | {} | {} |",
                r.name,
                human_bytes(r.logical_bytes),
                t.label.replace('|', "\\|"),
                human_bytes(t.size),
                shared(timing(&t.create)),
                timing(&t.extract),
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
            let l = row(r, Tool::Lockbox, Extract::Default)?;
            let g = row(r, Tool::Gpg, Extract::Default)?;
            Some((r, l, row(r, Tool::Lockbox, Extract::NoSync), g))
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

const HOW_TO_READ_KEYS: &str = "\
- Key mode: lockbox locks each archive to an X25519 recipient (`KeySet::new().recipients(..)`) and \
opens it with the identity (parsed in the timed run): no Argon2id. gpg encrypts with `--encrypt -r` to \
a key pair made without passphrase in the fresh `--homedir` (`--quick-generate-key ... \
future-default`: ed25519 signing, cv25519 encryption), same cipher and compression options; its \
agent holds the key before timing. zstd|age is as in password mode. 7zz has no public keys.
";

const HOW_TO_READ: &str = "\
How to read this:
- Times are wall clock per run, including process start; every extraction was compared with the \
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

fn row(r: &ScenarioReport, tool: Tool, how: Extract) -> Option<&Row> {
    r.rows.iter().find(|t| t.tool == tool && t.how == how)
}

fn timing(samples: &[Sample]) -> String {
    let mut s: Vec<f64> = samples.iter().map(|s| s.secs).collect();
    if s.is_empty() {
        return "n/a".into();
    }
    s.sort_by(f64::total_cmp);
    let (min, max) = (s[0], s[s.len() - 1]);
    if s.len() == 1 {
        return format!("{min:.3}");
    }
    format!("{:.3} ({min:.3}–{max:.3})", median(&s))
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

fn ratio(a: &[Sample], b: &[Sample]) -> String {
    let med = |x: &[Sample]| {
        let mut v: Vec<f64> = x.iter().map(|s| s.secs).collect();
        v.sort_by(f64::total_cmp);
        median(&v)
    };
    if a.is_empty() || b.is_empty() {
        return "n/a".into();
    }
    format!("{:.3}", med(a) / med(b))
}

fn max_rss(samples: &[Sample]) -> Option<u64> {
    samples.iter().map(|s| s.rss_kib).collect::<Option<Vec<u64>>>()?.into_iter().max()
}

fn peak(samples: &[Sample]) -> String {
    max_rss(samples).map_or_else(|| "n/a".into(), |k| human_bytes(k * 1024))
}

/// The most threads over the runs.
fn threads(samples: &[Sample]) -> String {
    let max =
        samples.iter().map(|s| s.threads).collect::<Option<Vec<u32>>>().and_then(|t| t.into_iter().max());
    max.map_or_else(|| "n/a".into(), |n| n.to_string())
}

/// The size of the `lockbox` release binary next to this bench's build
/// (`target/release/lockbox`), or "not built".
fn binary_size(exe: &Path) -> String {
    let beside = exe.parent().and_then(Path::parent).map(|release| release.join("lockbox"));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/lockbox");
    let found: Option<(PathBuf, u64)> = beside
        .into_iter()
        .chain([workspace])
        .find_map(|p| fs::metadata(&p).ok().filter(|m| m.is_file()).map(|m| (p, m.len())));
    match found {
        Some((path, len)) => format!("{} ({len} bytes, `{}`)", human_bytes(len), path.display()),
        None => "not built (`cargo build --release -p revault_cli`)".into(),
    }
}

pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
}

fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let logical = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:").and_then(last_number)))
        .map_or_else(String::new, |kib| format!(", {} RAM", human_bytes(kib * 1024)));
    format!("{model}, {logical} logical CPU(s), {usable} usable{mem}")
}

fn os() -> String {
    let pretty = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        })
        .unwrap_or_else(|| "unknown OS".into());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string());
    format!("{pretty}, kernel {}", kernel.unwrap_or_else(|_| "unknown".into()))
}

pub fn commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let hash = Command::new("git").args(["-C", dir, "log", "-1", "--format=%h"]).output();
    let Ok(hash) = hash else { return "unknown (no git)".into() };
    let hash = String::from_utf8_lossy(&hash.stdout).trim().to_string();
    if hash.is_empty() {
        return "unknown".into();
    }
    let status =
        Command::new("git").args(["-C", dir, "status", "--porcelain", "--untracked-files=no"]).output();
    let changed: Vec<String> = status
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.get(3..))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    match changed.len() {
        0 => hash,
        n if n <= 6 => format!("{hash} + uncommitted changes to {}", changed.join(", ")),
        n => format!("{hash} + uncommitted changes to {n} files"),
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC.
fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs();
    let (year, month, day) = corpora::civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}
