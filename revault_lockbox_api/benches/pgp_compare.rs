//! `pgp_compare`: lockbox against `gpg --symmetric` (and, where installed,
//! `zstd | age` and `7zz`) on the published corpora.
//!
//! ```text
//! cargo bench -p revault_lockbox_api --bench pgp_compare -- --iterations 3
//! cargo bench -p revault_lockbox_api --bench pgp_compare -- --scenario large-randomish --lockbox-only
//! ```
//!
//! Why it is built this way:
//! - Lockbox runs in a child process (this binary re-executed with a hidden
//!   `--child` mode), so its wall time includes a process start like the
//!   external tools' does, and its peak RSS (`VmHWM`) is lockbox's alone.
//! - External tools run as real processes (`bash -c` for pipelines), each
//!   stage under `/usr/bin/time -f %M` when that exists; a pipeline's peak
//!   RSS is the sum of its stages' peaks (they run at the same time).
//! - Every extraction is compared with the source before its time counts:
//!   content and symlink targets for every tool, plus modes and mtimes for
//!   lockbox. A mismatch fails the run.
//! - Corpora are generated once per size factor (a stamp file records it)
//!   and reused; runs are on a warm page cache.
//! - Lockbox keeps its defaults (Argon2id m=64 MiB, t=3, p=4; the archive
//!   and every extracted file synced to disk); gpg keeps its S2K defaults.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

use corpora::{Scenario, Shape};
use revault_lockbox_api::{create_archive, Archive, CreateOptions, ExtractOptions, Password};

const DEFAULT_ROOT: &str = "target/lockbox-gpg-bench";
const DEFAULT_ITERATIONS: usize = 3;
/// Used for every tool. It is not secret: the archives are throw-away.
const PASSPHRASE: &str = "pgp_compare: correct horse battery staple";
/// Larger corpora (the scale scenarios) skip 7zz.
const SEVENZIP_MAX_BYTES: u64 = 256 << 20;
/// Bumped when the stamp format or the generation recipe changes.
const STAMP_VERSION: u32 = 1;

const USAGE: &str = "\
pgp_compare: lockbox vs gpg (and zstd|age, 7zz) on the published corpora

usage: cargo bench -p revault_lockbox_api --bench pgp_compare -- [options]

options:
  --iterations N     timed runs of each create and extract (default 3)
  --root DIR         corpora and scratch space (default target/lockbox-gpg-bench,
                     relative to the current directory: the package directory
                     under cargo)
  --output PATH      Markdown results; `-` for stdout only (default <root>/results.md)
  --scenario NAME    run this scenario (repeatable; default: every default scenario)
  --scale            add the scale (GiB-sized) scenarios
  --size-factor F    multiply corpus sizes by F (default 1.0; CI smoke uses 0.01)
  --lockbox-only     skip the external tools
  --list             list the scenarios and exit
  -h, --help         this text
";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--child") {
        return child::main(&argv[2..]);
    }
    let args = match Args::parse(&argv[1..]) {
        Ok(Some(args)) => args,
        Ok(None) => return ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("pgp_compare: {msg}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("pgp_compare: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Command-line options.
struct Args {
    iterations: usize,
    root: PathBuf,
    output: Option<String>,
    scenarios: Vec<&'static Scenario>,
    lockbox_only: bool,
    size_factor: f64,
    /// The arguments as given, minus cargo's `--bench`, for the record.
    given: Vec<String>,
}

impl Args {
    /// `Ok(None)` when the request was for help or a listing.
    fn parse(raw: &[String]) -> Result<Option<Args>, String> {
        let mut iterations = DEFAULT_ITERATIONS;
        let mut root = PathBuf::from(DEFAULT_ROOT);
        let mut output = None;
        let mut names: Vec<String> = Vec::new();
        let mut lockbox_only = false;
        let mut scale = false;
        let mut size_factor = 1.0f64;
        let mut given = Vec::new();
        let mut it = raw.iter();
        while let Some(arg) = it.next() {
            if arg == "--bench" {
                continue;
            }
            given.push(arg.clone());
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
                _ => (arg.as_str(), None),
            };
            let mut value = |what: &str| -> Result<String, String> {
                if let Some(v) = inline.clone() {
                    return Ok(v);
                }
                let v = it.next().ok_or_else(|| format!("{flag} needs {what}"))?;
                given.push(v.clone());
                Ok(v.clone())
            };
            match flag {
                "-h" | "--help" => {
                    print!("{USAGE}");
                    return Ok(None);
                }
                "--list" => {
                    for s in corpora::scenarios() {
                        let tag = if s.default {
                            " (default)"
                        } else if s.scale {
                            " (--scale)"
                        } else {
                            ""
                        };
                        println!("{:<16} {}{tag}", s.name, s.description);
                    }
                    return Ok(None);
                }
                "--iterations" => {
                    let v = value("a count")?;
                    iterations = v
                        .parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("--iterations wants a positive integer, got {v:?}"))?;
                }
                "--root" => root = PathBuf::from(value("a directory")?),
                "--output" => output = Some(value("a path or `-`")?),
                "--scenario" => names.push(value("a scenario name")?),
                "--size-factor" => {
                    let v = value("a number")?;
                    size_factor = v
                        .parse()
                        .ok()
                        .filter(|f: &f64| f.is_finite() && *f > 0.0)
                        .ok_or_else(|| format!("--size-factor wants a positive number, got {v:?}"))?;
                }
                "--lockbox-only" => lockbox_only = true,
                "--scale" => scale = true,
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        let mut scenarios: Vec<&'static Scenario> = Vec::new();
        for name in &names {
            let s = corpora::find(name).ok_or_else(|| {
                let known: Vec<_> = corpora::scenarios().iter().map(|s| s.name).collect();
                format!("unknown scenario {name:?}; known: {}", known.join(", "))
            })?;
            if !scenarios.contains(&s) {
                scenarios.push(s);
            }
        }
        if names.is_empty() {
            scenarios.extend(corpora::scenarios().iter().filter(|s| s.default));
        }
        if scale {
            for s in corpora::scenarios().iter().filter(|s| s.scale) {
                if !scenarios.contains(&s) {
                    scenarios.push(s);
                }
            }
        }
        Ok(Some(Args { iterations, root, output, scenarios, lockbox_only, size_factor, given }))
    }
}

// ---------------------------------------------------------------------------
// The run

fn run(args: &Args) -> Result<(), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let root = cwd.join(&args.root);
    let work = root.join("work");
    // A previous run's scratch is deleted at the end, not before measuring
    // (see `Trash`).
    if work.exists() {
        let stale = root.join(format!("stale-work-{}", std::process::id()));
        fs::rename(&work, &stale).map_err(|e| format!("moving {} aside: {e}", work.display()))?;
    }
    fresh_dir(&work)?;
    let env = Env::probe(args, &work)?;
    let mut trash = Trash { dir: work.join("trash"), bytes: 0, count: 0 };
    for note in &env.notes {
        eprintln!("note: {note}");
    }
    let mut reports = Vec::new();
    for scenario in &args.scenarios {
        let corpus = corpus_for(scenario, &root.join("corpora"), args.size_factor)?;
        eprintln!(
            "== {}: {} in {} file(s) under {}",
            scenario.name,
            human_bytes(corpus.logical_bytes),
            corpus.files,
            corpus.root.display()
        );
        reports.push(run_scenario(args, &env, scenario, &corpus, &work.join(scenario.name), &mut trash)?);
    }
    let _ = remove_tree(&work);
    // This run's stale scratch, and any left by runs that failed.
    for entry in fs::read_dir(&root).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with("stale-work-") {
            let _ = remove_tree(&entry.path());
        }
    }
    let markdown = render(args, &env, &root, &reports);
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

/// Everything about the machine and the tools, found once.
struct Env {
    exe: PathBuf,
    passfile: PathBuf,
    /// GNU time, for external tools' peak RSS.
    time: Option<PathBuf>,
    gpg: Option<PathBuf>,
    gpgconf: Option<PathBuf>,
    /// `(age identity file, recipient)` when age, age-keygen and zstd exist.
    age: Option<(PathBuf, String)>,
    sevenzip: Option<PathBuf>,
    versions: Vec<(String, String)>,
    /// The source's commit, read when the run starts.
    commit: String,
    notes: Vec<String>,
}

impl Env {
    fn probe(args: &Args, work: &Path) -> Result<Env, String> {
        let exe = std::env::current_exe().map_err(|e| format!("finding this executable: {e}"))?;
        let passfile = work.join("passphrase");
        write_private(&passfile, PASSPHRASE.as_bytes())?;
        let mut env = Env {
            exe,
            passfile,
            time: None,
            gpg: None,
            gpgconf: None,
            age: None,
            sevenzip: None,
            versions: Vec::new(),
            commit: commit(),
            notes: Vec::new(),
        };
        let time = Path::new("/usr/bin/time");
        let gnu_time = Command::new(time)
            .args(["-f", "%M", "true"])
            .output()
            .is_ok_and(|o| o.status.success() && last_number(&String::from_utf8_lossy(&o.stderr)).is_some());
        if gnu_time {
            env.time = Some(time.to_path_buf());
            env.versions.push(("time".into(), "GNU time (/usr/bin/time)".into()));
        } else {
            env.notes.push(
                "/usr/bin/time (GNU time, apt package `time`) not found: peak RSS of external tools is n/a"
                    .into(),
            );
        }
        if args.lockbox_only {
            env.notes.push("--lockbox-only: external tools skipped".into());
            return Ok(env);
        }
        let tar = find_tool("tar");
        match (find_tool("gpg"), &tar) {
            (Some(gpg), Some(tar)) => {
                env.version("gpg", &gpg, &["--version"]);
                env.version("tar", tar, &["--version"]);
                env.gpg = Some(gpg);
                env.gpgconf = find_tool("gpgconf");
            }
            _ => env.notes.push("gpg or tar not found: the GPG comparison is skipped".into()),
        }
        match (find_tool("zstd"), find_tool("age"), find_tool("age-keygen"), &tar) {
            (Some(zstd), Some(age), Some(keygen), Some(_)) => {
                env.version("zstd", &zstd, &["--version"]);
                env.version("age", &age, &["--version"]);
                let identity = work.join("age-identity.txt");
                let made = Command::new(&keygen).arg("-o").arg(&identity).output();
                let recipient = Command::new(&keygen).arg("-y").arg(&identity).output();
                match (made, recipient) {
                    (Ok(m), Ok(r)) if m.status.success() && r.status.success() => {
                        let recipient = String::from_utf8_lossy(&r.stdout).trim().to_string();
                        env.age = Some((identity, recipient));
                    }
                    _ => env.notes.push("age-keygen failed: zstd|age skipped".into()),
                }
            }
            (zstd, age, keygen, _) => {
                let missing: Vec<_> =
                    [("zstd", zstd.is_none()), ("age", age.is_none()), ("age-keygen", keygen.is_none())]
                        .iter()
                        .filter(|(_, m)| *m)
                        .map(|(n, _)| *n)
                        .collect();
                env.notes.push(format!("{} not installed: zstd|age skipped", missing.join(", ")));
            }
        }
        match find_tool("7zz") {
            Some(sz) => {
                env.version("7zz", &sz, &[]);
                env.sevenzip = Some(sz);
            }
            None => env.notes.push("7zz not installed: 7-Zip skipped".into()),
        }
        Ok(env)
    }

    /// Records the first line of `tool args` that names a version.
    fn version(&mut self, name: &str, tool: &Path, args: &[&str]) {
        let out = Command::new(tool).args(args).stdin(Stdio::null()).output();
        let text = out.map(|o| {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            s
        });
        let line = text
            .ok()
            .and_then(|t| {
                t.lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty() && l.chars().any(|c| c.is_ascii_digit()))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "unknown".into());
        let line = line.trim_matches('*').trim();
        let line = line.split(" : ").next().unwrap_or(line).to_string();
        let line =
            if line.starts_with(|c: char| c.is_ascii_digit()) { format!("{name} {line}") } else { line };
        self.versions.push((name.to_string(), line));
    }
}

/// The tools compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tool {
    Lockbox,
    Gpg,
    ZstdAge,
    SevenZip,
}

impl Tool {
    fn label(self, shape: Shape) -> &'static str {
        match (self, shape) {
            (Tool::Lockbox, _) => "lockbox",
            (Tool::Gpg, Shape::SingleFile) => "gpg -c",
            (Tool::Gpg, Shape::Tree) => "tar | gpg -c",
            (Tool::ZstdAge, Shape::SingleFile) => "zstd -3 | age (key)",
            (Tool::ZstdAge, Shape::Tree) => "tar | zstd -3 | age (key)",
            (Tool::SevenZip, _) => "7zz -mhe=on",
        }
    }

    fn archive_name(self) -> &'static str {
        match self {
            Tool::Lockbox => "out.lbox",
            Tool::Gpg => "out.gpg",
            Tool::ZstdAge => "out.zst.age",
            Tool::SevenZip => "out.7z",
        }
    }

    /// Lockbox and gpg are the comparison; failures of the others are noted.
    fn required(self) -> bool {
        matches!(self, Tool::Lockbox | Tool::Gpg)
    }
}

/// One timed run.
#[derive(Clone, Copy)]
struct Sample {
    secs: f64,
    rss_kib: Option<u64>,
}

/// Results of one tool on one scenario.
struct ToolReport {
    tool: Tool,
    label: &'static str,
    size: u64,
    create: Vec<Sample>,
    extract: Vec<Sample>,
}

struct ScenarioReport {
    name: &'static str,
    shape: Shape,
    logical_bytes: u64,
    files: u64,
    tools: Vec<ToolReport>,
    notes: Vec<String>,
}

fn run_scenario(
    args: &Args,
    env: &Env,
    scenario: &Scenario,
    corpus: &corpora::Corpus,
    work: &Path,
    trash: &mut Trash,
) -> Result<ScenarioReport, String> {
    fresh_dir(work)?;
    let mut report = ScenarioReport {
        name: scenario.name,
        shape: scenario.shape,
        logical_bytes: corpus.logical_bytes,
        files: corpus.files,
        tools: Vec::new(),
        notes: Vec::new(),
    };
    let mut tools = vec![Tool::Lockbox];
    if env.gpg.is_some() {
        tools.push(Tool::Gpg);
    }
    if env.age.is_some() {
        tools.push(Tool::ZstdAge);
    }
    if env.sevenzip.is_some() && corpus.logical_bytes <= SEVENZIP_MAX_BYTES {
        tools.push(Tool::SevenZip);
    } else if env.sevenzip.is_some() {
        report.notes.push(format!(
            "7zz skipped: above {} its default LZMA2 level (about 1 MiB/s of text a core) takes hours",
            human_bytes(SEVENZIP_MAX_BYTES)
        ));
    }
    let gpg_home = match env.gpg {
        Some(_) => Some(GpgHome::new(env, scenario.name, work)?),
        None => None,
    };
    let ctx = Ctx { env, scenario, corpus, work, gpg_home: gpg_home.as_ref() };
    for tool in tools {
        match measure(&ctx, tool, args.iterations, trash) {
            Ok(r) => report.tools.push(r),
            Err(Failure::Mismatch(msg)) => return Err(msg),
            Err(Failure::Tool(msg)) if tool.required() => return Err(msg),
            Err(Failure::Tool(msg)) => {
                eprintln!("note: {msg}");
                report.notes.push(msg);
            }
        }
    }
    drop(gpg_home);
    let _ = remove_tree(work);
    Ok(report)
}

/// What a scenario's measurements need.
struct Ctx<'a> {
    env: &'a Env,
    scenario: &'a Scenario,
    corpus: &'a corpora::Corpus,
    work: &'a Path,
    gpg_home: Option<&'a GpgHome>,
}

enum Failure {
    /// A tool failed to run: fatal for lockbox and gpg, a note for others.
    Tool(String),
    /// An extraction differs from the source: always fatal.
    Mismatch(String),
}

/// Where verified extractions go until the run ends. Deleting thousands of
/// files shortly (under about 30 s) before an extraction slows it down:
/// ext4 without a journal avoids reusing recently freed inodes and scans
/// for others (`recently_deleted`, `find_inode_bit`). On the dev machine
/// that scan took half the CPU time of a `small-tree` extraction and made
/// `tar -xf` 8 times slower.
struct Trash {
    dir: PathBuf,
    bytes: u64,
    count: u32,
}

/// Bytes of extractions kept in the trash at most; beyond this they are
/// deleted at once (the scale scenarios).
const TRASH_BUDGET: u64 = 2 << 30;

impl Trash {
    fn take(&mut self, dest: &Path, bytes: u64) -> Result<(), String> {
        if self.bytes + bytes > TRASH_BUDGET {
            return remove_tree(dest);
        }
        fs::create_dir_all(&self.dir).map_err(|e| format!("creating {}: {e}", self.dir.display()))?;
        let to = self.dir.join(self.count.to_string());
        fs::rename(dest, &to).map_err(|e| format!("moving {} to {}: {e}", dest.display(), to.display()))?;
        self.bytes += bytes;
        self.count += 1;
        Ok(())
    }
}

fn measure(ctx: &Ctx, tool: Tool, iterations: usize, trash: &mut Trash) -> Result<ToolReport, Failure> {
    let label = tool.label(ctx.scenario.shape);
    let archive = ctx.work.join(tool.archive_name());
    let mut report = ToolReport { tool, label, size: 0, create: Vec::new(), extract: Vec::new() };
    for i in 0..iterations {
        let _ = fs::remove_file(&archive);
        let sample =
            create(ctx, tool, &archive).map_err(|e| Failure::Tool(format!("{label} create: {e}")))?;
        report.size = fs::metadata(&archive)
            .map_err(|e| Failure::Tool(format!("{label} made no archive at {}: {e}", archive.display())))?
            .len();
        eprintln!(
            "[{}] {label} create {}/{iterations}: {:.3} s, {}",
            ctx.scenario.name,
            i + 1,
            sample.secs,
            human_bytes(report.size)
        );
        report.create.push(sample);

        let dest = ctx.work.join(format!("extract-{}", tool.archive_name()));
        fresh_dir(&dest).map_err(Failure::Tool)?;
        let sample = extract(ctx, tool, &archive, &dest)
            .map_err(|e| Failure::Tool(format!("{label} extract: {e}")))?;
        for input in &ctx.corpus.inputs {
            verify(&ctx.corpus.root, &dest, input, tool == Tool::Lockbox).map_err(|e| {
                Failure::Mismatch(format!(
                    "{} extracted by {label} differs from the source: {e} (left in {} for inspection)",
                    ctx.scenario.name,
                    dest.display()
                ))
            })?;
        }
        eprintln!(
            "[{}] {label} extract {}/{iterations}: {:.3} s, verified",
            ctx.scenario.name,
            i + 1,
            sample.secs
        );
        report.extract.push(sample);
        trash.take(&dest, ctx.corpus.logical_bytes).map_err(Failure::Tool)?;
    }
    let _ = fs::remove_file(&archive);
    Ok(report)
}

fn create(ctx: &Ctx, tool: Tool, archive: &Path) -> Result<Sample, String> {
    let env = ctx.env;
    let root = &ctx.corpus.root;
    let input = q(&ctx.corpus.inputs[0]);
    let inputs: Vec<String> = ctx.corpus.inputs.iter().map(q).collect();
    let out = q(archive);
    let tree = ctx.scenario.shape == Shape::Tree;
    match tool {
        Tool::Lockbox => {
            let mut child: Vec<OsString> =
                vec!["create".into(), env.passfile.clone().into(), archive.into(), root.into()];
            child.extend(ctx.corpus.inputs.iter().map(|p| p.clone().into_os_string()));
            run_child(&env.exe, &child)
        }
        Tool::Gpg => {
            let gpg = ctx.gpg_home.ok_or("no gpg home")?.command(env, &["--symmetric"]);
            let gpg = format!("{gpg} --cipher-algo AES256 --compress-algo ZLIB --compress-level 6 -o {out}");
            if tree {
                let tar = format!("tar -cf - {}", inputs.join(" "));
                run_pipeline(env, root, &[tar, gpg])
            } else {
                run_pipeline(env, root, &[format!("{gpg} {input}")])
            }
        }
        Tool::ZstdAge => {
            let (_, recipient) = env.age.as_ref().ok_or("no age")?;
            let age = format!("age -r {} -o {out}", q(recipient));
            if tree {
                let tar = format!("tar -cf - {}", inputs.join(" "));
                run_pipeline(env, root, &[tar, "zstd -3 -T0 -q".into(), age])
            } else {
                run_pipeline(env, root, &[format!("zstd -3 -T0 -q -c {input}"), age])
            }
        }
        Tool::SevenZip => {
            let sz = q(env.sevenzip.as_ref().ok_or("no 7zz")?);
            let cmd = format!(
                "{sz} a -t7z -bd -bso0 -bsp0 -snl -snh -mhe=on -p{} {out} {}",
                q(PASSPHRASE),
                inputs.join(" ")
            );
            run_pipeline(env, root, &[cmd])
        }
    }
}

fn extract(ctx: &Ctx, tool: Tool, archive: &Path, dest: &Path) -> Result<Sample, String> {
    let env = ctx.env;
    let src = q(archive);
    let tree = ctx.scenario.shape == Shape::Tree;
    let single_out = q(dest.join(&ctx.corpus.inputs[0]));
    match tool {
        Tool::Lockbox => {
            let child: Vec<OsString> =
                vec!["extract".into(), env.passfile.clone().into(), archive.into(), dest.into()];
            run_child(&env.exe, &child)
        }
        Tool::Gpg => {
            let gpg = ctx.gpg_home.ok_or("no gpg home")?.command(env, &["--decrypt"]);
            if tree {
                run_pipeline(env, dest, &[format!("{gpg} {src}"), "tar -xf -".into()])
            } else {
                run_pipeline(env, dest, &[format!("{gpg} -o {single_out} {src}")])
            }
        }
        Tool::ZstdAge => {
            let (identity, _) = env.age.as_ref().ok_or("no age")?;
            let age = format!("age -d -i {} {src}", q(identity));
            if tree {
                run_pipeline(env, dest, &[age, "zstd -d -q".into(), "tar -xf -".into()])
            } else {
                run_pipeline(env, dest, &[age, format!("zstd -d -q -o {single_out}")])
            }
        }
        Tool::SevenZip => {
            let sz = q(env.sevenzip.as_ref().ok_or("no 7zz")?);
            // `-snld`: restore symlinks that point up (`../`); the corpora have them.
            let cmd =
                format!("{sz} x -bd -bso0 -bsp0 -snl -snh -snld -p{} -o{} {src}", q(PASSPHRASE), q(dest));
            run_pipeline(env, dest, &[cmd])
        }
    }
}

/// A fresh gpg home directory (mode 0700) with its agent already running,
/// as it is for someone who uses gpg; the agent is stopped and the
/// directory removed on drop.
struct GpgHome {
    dir: PathBuf,
    gpgconf: Option<PathBuf>,
}

impl GpgHome {
    fn new(env: &Env, scenario: &str, work: &Path) -> Result<GpgHome, String> {
        // Short, because the agent's socket path has a length limit.
        let dir = std::env::temp_dir().join(format!("lockbox-bench-gpg-{}-{scenario}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let home = GpgHome { dir, gpgconf: env.gpgconf.clone() };
        let warm = work.join("gpg-warmup");
        write_private(&warm, b"warm-up")?;
        let cmd = format!(
            "{} -o {} {}",
            home.command(env, &["--symmetric"]),
            q(work.join("gpg-warmup.gpg")),
            q(&warm)
        );
        run_pipeline(env, work, &[cmd]).map_err(|e| format!("gpg warm-up: {e}"))?;
        Ok(home)
    }

    /// `gpg` with this home and the passphrase options, then `extra`.
    fn command(&self, env: &Env, extra: &[&str]) -> String {
        format!(
            "{} --homedir {} --batch --yes --pinentry-mode loopback --no-symkey-cache --passphrase-file {} {}",
            q(env.gpg.as_deref().unwrap_or(Path::new("gpg"))),
            q(&self.dir),
            q(&env.passfile),
            extra.join(" ")
        )
    }
}

impl Drop for GpgHome {
    fn drop(&mut self) {
        if let Some(gpgconf) = &self.gpgconf {
            let _ = Command::new(gpgconf)
                .arg("--homedir")
                .arg(&self.dir)
                .args(["--kill", "gpg-agent"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs this binary's `--child` mode; returns the wall time seen from here
/// and the child's own peak RSS.
fn run_child(exe: &Path, args: &[OsString]) -> Result<Sample, String> {
    let start = Instant::now();
    let out = Command::new(exe)
        .arg("--child")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("starting {}: {e}", exe.display()))?;
    let secs = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!("{} ({})", String::from_utf8_lossy(&out.stderr).trim(), out.status));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rss_kib = stdout
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("peak_rss_kib="))
        .and_then(|v| v.parse().ok());
    Ok(Sample { secs, rss_kib })
}

/// Runs `stages` as a `bash` pipeline in `cwd`, each stage under GNU time
/// when available; returns the wall time and the sum of the stages' peaks.
fn run_pipeline(env: &Env, cwd: &Path, stages: &[String]) -> Result<Sample, String> {
    let rss_files: Vec<PathBuf> = (0..stages.len())
        .map(|i| std::env::temp_dir().join(format!("lockbox-bench-rss-{}-{i}", std::process::id())))
        .collect();
    let script = stages
        .iter()
        .zip(&rss_files)
        .map(|(stage, rss)| match &env.time {
            Some(time) => format!("{} -f %M -o {} {stage}", q(time), q(rss)),
            None => stage.clone(),
        })
        .collect::<Vec<_>>()
        .join(" | ");
    let start = Instant::now();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -o pipefail; {script}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("starting bash: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    let mut total = Some(0u64);
    for rss in &rss_files {
        let peak = fs::read_to_string(rss).ok().and_then(|s| last_number(&s));
        total = match (total, peak, &env.time) {
            (Some(t), Some(p), Some(_)) => Some(t + p),
            _ => None,
        };
        let _ = fs::remove_file(rss);
    }
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("`{}` failed ({}): {}", stages.join(" | "), out.status, tail.join(" / ")));
    }
    Ok(Sample { secs, rss_kib: total })
}

// ---------------------------------------------------------------------------
// Verification

/// Compares `src_root/rel` with `dst_root/rel`, recursively: kinds, file
/// content, symlink targets and, with `strict`, modes and mtimes (seconds).
fn verify(src_root: &Path, dst_root: &Path, rel: &Path, strict: bool) -> Result<(), String> {
    let src = src_root.join(rel);
    let dst = dst_root.join(rel);
    let name = rel.display();
    let sm = fs::symlink_metadata(&src).map_err(|e| format!("{name}: reading the source: {e}"))?;
    let dm = fs::symlink_metadata(&dst).map_err(|e| format!("{name}: missing from the extraction ({e})"))?;
    let kind = |m: &fs::Metadata| {
        let t = m.file_type();
        if t.is_symlink() {
            "symlink"
        } else if t.is_dir() {
            "directory"
        } else if t.is_file() {
            "file"
        } else {
            "special file"
        }
    };
    if kind(&sm) != kind(&dm) {
        return Err(format!("{name}: a {} in the source, a {} in the extraction", kind(&sm), kind(&dm)));
    }
    if sm.file_type().is_symlink() {
        let (a, b) = (fs::read_link(&src), fs::read_link(&dst));
        let (a, b) = (a.map_err(|e| format!("{name}: {e}"))?, b.map_err(|e| format!("{name}: {e}"))?);
        if a != b {
            return Err(format!("{name}: symlink target {} should be {}", b.display(), a.display()));
        }
        return Ok(());
    }
    if strict {
        let (a, b) = (sm.mode() & 0o7777, dm.mode() & 0o7777);
        if a != b {
            return Err(format!("{name}: mode {b:o} should be {a:o}"));
        }
        if sm.mtime() != dm.mtime() {
            return Err(format!("{name}: mtime {} should be {} (seconds)", dm.mtime(), sm.mtime()));
        }
    }
    if sm.is_file() {
        if sm.len() != dm.len() {
            return Err(format!("{name}: {} bytes, should be {}", dm.len(), sm.len()));
        }
        return same_content(&src, &dst).map_err(|e| format!("{name}: {e}"));
    }
    if sm.is_dir() {
        let list = |dir: &Path| -> Result<Vec<OsString>, String> {
            let mut names = Vec::new();
            for entry in fs::read_dir(dir).map_err(|e| format!("listing {}: {e}", dir.display()))? {
                names.push(entry.map_err(|e| format!("listing {}: {e}", dir.display()))?.file_name());
            }
            names.sort();
            Ok(names)
        };
        let (a, b) = (list(&src)?, list(&dst)?);
        if let Some(extra) = b.iter().find(|n| !a.contains(n)) {
            return Err(format!("{}: not in the source", rel.join(extra).display()));
        }
        for child in &a {
            verify(src_root, dst_root, &rel.join(child), strict)?;
        }
    }
    Ok(())
}

/// Compares two files of equal length, 1 MiB at a time.
fn same_content(a: &Path, b: &Path) -> Result<(), String> {
    let open = |p: &Path| fs::File::open(p).map_err(|e| format!("opening {}: {e}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let mut offset = 0u64;
    loop {
        let na = read_full(&mut fa, &mut ba).map_err(|e| format!("reading {}: {e}", a.display()))?;
        let nb = read_full(&mut fb, &mut bb).map_err(|e| format!("reading {}: {e}", b.display()))?;
        if ba[..na] != bb[..nb] {
            let at = ba[..na].iter().zip(&bb[..nb]).position(|(x, y)| x != y).unwrap_or(na.min(nb));
            return Err(format!("content differs at byte {}", offset + at as u64));
        }
        if na == 0 {
            return Ok(());
        }
        offset += na as u64;
    }
}

fn read_full(f: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

// ---------------------------------------------------------------------------
// Corpora

/// The scenario's corpus under `dir/<name>`, generated unless a stamp says
/// it already was, with this size factor.
fn corpus_for(scenario: &Scenario, dir: &Path, factor: f64) -> Result<corpora::Corpus, String> {
    let root = dir.join(scenario.name);
    let stamp = dir.join(format!("{}.stamp", scenario.name));
    let header =
        format!("stamp-version={STAMP_VERSION}\nscenario={}\nsize-factor={factor:?}\n", scenario.name);
    if let Ok(text) = fs::read_to_string(&stamp) {
        if let Some(rest) = text.strip_prefix(&header) {
            if let Some(corpus) = parse_stamp(rest, &root) {
                if corpus.inputs.iter().all(|i| fs::symlink_metadata(root.join(i)).is_ok()) {
                    return Ok(corpus);
                }
            }
        }
    }
    let _ = fs::remove_file(&stamp);
    if root.exists() {
        remove_tree(&root)?;
    }
    eprintln!("generating {} at size factor {factor} in {}", scenario.name, root.display());
    let start = Instant::now();
    let corpus =
        scenario.generate(&root, factor).map_err(|e| format!("generating {}: {e}", scenario.name))?;
    eprintln!("generated in {:.1} s", start.elapsed().as_secs_f64());
    let mut text = header;
    let _ = writeln!(text, "logical-bytes={}\nfiles={}", corpus.logical_bytes, corpus.files);
    for input in &corpus.inputs {
        let input = input.to_str().ok_or("a scenario input name is not UTF-8")?;
        let _ = writeln!(text, "input={input}");
    }
    write_atomic(&stamp, text.as_bytes())?;
    Ok(corpus)
}

fn parse_stamp(text: &str, root: &Path) -> Option<corpora::Corpus> {
    let (mut logical, mut files, mut inputs) = (None, None, Vec::new());
    for line in text.lines() {
        match line.split_once('=')? {
            ("logical-bytes", v) => logical = v.parse().ok(),
            ("files", v) => files = v.parse().ok(),
            ("input", v) => inputs.push(PathBuf::from(v)),
            _ => return None,
        }
    }
    (!inputs.is_empty()).then_some(())?;
    Some(corpora::Corpus { root: root.to_path_buf(), inputs, logical_bytes: logical?, files: files? })
}

// ---------------------------------------------------------------------------
// Report

fn render(args: &Args, env: &Env, root: &Path, reports: &[ScenarioReport]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# pgp_compare: lockbox vs gpg\n");
    let _ = writeln!(md, "- Date (UTC): {}", utc_now());
    let _ = writeln!(md, "- Machine: {}", machine());
    let _ = writeln!(md, "- OS: {}", os());
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let _ = writeln!(md, "- Load average at the end (1, 5, 15 min): {}", load.join(" "));
    let _ =
        writeln!(md, "- lockbox: revault_lockbox_api {} at commit {}", env!("CARGO_PKG_VERSION"), env.commit);
    for (_, v) in &env.versions {
        let _ = writeln!(md, "- Tool: {v}");
    }
    let mut cmd = String::from("cargo bench -p revault_lockbox_api --bench pgp_compare --");
    for a in &args.given {
        cmd.push(' ');
        cmd.push_str(&q(a));
    }
    let _ = writeln!(md, "- Command: `{cmd}`");
    let _ = writeln!(
        md,
        "- Settings: {} iteration(s) each, size factor {}, root `{}`, warm page cache",
        args.iterations,
        args.size_factor,
        root.display()
    );
    for note in &env.notes {
        let _ = writeln!(md, "- Note: {note}");
    }
    md.push('\n');

    let _ = writeln!(
        md,
        "| scenario | logical bytes | tool | output size | create s, median (min–max) | extract s, median (min–max) | peak RSS create | peak RSS extract |"
    );
    let _ = writeln!(md, "|---|--:|---|--:|--:|--:|--:|--:|");
    for r in reports {
        for t in &r.tools {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} ({:.1}%) | {} | {} | {} | {} |",
                r.name,
                human_bytes(r.logical_bytes),
                t.label.replace('|', "\\|"),
                human_bytes(t.size),
                100.0 * t.size as f64 / r.logical_bytes.max(1) as f64,
                timing(&t.create),
                timing(&t.extract),
                peak(&t.create),
                peak(&t.extract)
            );
        }
    }
    md.push('\n');

    let compared: Vec<_> = reports
        .iter()
        .filter_map(|r| {
            let l = r.tools.iter().find(|t| t.tool == Tool::Lockbox)?;
            let g = r.tools.iter().find(|t| t.tool == Tool::Gpg)?;
            Some((r, l, g))
        })
        .collect();
    if !compared.is_empty() {
        let _ = writeln!(md, "Ratios lockbox / GPG (below 1: lockbox smaller, faster or leaner):\n");
        let _ = writeln!(
            md,
            "| scenario | size | create time | extract time | peak RSS create | peak RSS extract |"
        );
        let _ = writeln!(md, "|---|--:|--:|--:|--:|--:|");
        for (r, l, g) in compared {
            let rss = |a: &[Sample], b: &[Sample]| match (max_rss(a), max_rss(b)) {
                (Some(x), Some(y)) if y > 0 => format!("{:.2}", x as f64 / y as f64),
                _ => "n/a".into(),
            };
            let _ = writeln!(
                md,
                "| {} | {:.3} | {} | {} | {} | {} |",
                r.name,
                l.size as f64 / g.size.max(1) as f64,
                ratio(&l.create, &g.create),
                ratio(&l.extract, &g.extract),
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
    md.push_str(
        "How to read this:\n\
         - Times are wall clock per run, including process start; every extraction was compared with the \
         source before its time was kept (content and symlink targets; for lockbox also modes and mtimes).\n\
         - lockbox: `create_archive` with `CreateOptions::new()` (Argon2id m=64 MiB, t=3, p=4; the archive \
         synced) and `Archive::open` + `extract` with `ExtractOptions::new()` (every file synced), in a \
         child process; its peak RSS is the child's VmHWM.\n\
         - gpg: `gpg --symmetric --cipher-algo AES256 --compress-algo ZLIB --compress-level 6` with a fresh \
         `--homedir` whose agent was started before timing; trees go through `tar -cf -` / `tar -xf -` in \
         the same pipeline. Nothing is synced.\n\
         - zstd|age uses an X25519 identity from `age-keygen` (`age -p` needs a terminal): no passphrase \
         KDF cost. 7zz is `7zz a -t7z -mhe=on -p...` at its default level (LZMA2 -mx5, all cores).\n\
         - Peak RSS of external tools is GNU time's maximum resident set size of each process of the \
         pipeline, summed over the stages (they run at once).\n\
         - Extractions are deleted at the end of the run, not between runs: creating files soon after \
         deleting many is slow on some file systems (ext4 without a journal), for every tool.\n",
    );
    md
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

fn human_bytes(n: u64) -> String {
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

fn commit() -> String {
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
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

// ---------------------------------------------------------------------------
// Small helpers

/// Shell-quotes anything path-like.
fn q(s: impl AsRef<std::ffi::OsStr>) -> String {
    let s = s.as_ref().to_string_lossy();
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c)) {
        return s.into_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn last_number(s: &str) -> Option<u64> {
    s.split_whitespace().rev().find_map(|w| w.parse().ok())
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

fn fresh_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        remove_tree(dir)?;
    }
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))
}

/// Removes a tree, first making its directories writable (corpora and
/// extractions contain read-only directories).
fn remove_tree(dir: &Path) -> Result<(), String> {
    if fs::remove_dir_all(dir).is_ok() {
        return Ok(());
    }
    fn open_up(dir: &Path) {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o755));
        if let Ok(entries) = fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    open_up(&e.path());
                }
            }
        }
    }
    open_up(dir);
    fs::remove_dir_all(dir).map_err(|e| format!("removing {}: {e}", dir.display()))
}

fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let _ = fs::remove_file(path);
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    fs::write(&tmp, bytes)
        .and_then(|()| fs::rename(&tmp, path))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

// ---------------------------------------------------------------------------
// Child mode: one lockbox create or extract, isolated for timing and RSS

mod child {
    use super::*;

    /// `--child create PASSFILE ARCHIVE BASE INPUT...` or
    /// `--child extract PASSFILE ARCHIVE DEST`; prints
    /// `elapsed_ns=… peak_rss_kib=… bytes=…` on success.
    pub(super) fn main(args: &[String]) -> ExitCode {
        match run(args) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        }
    }

    fn run(args: &[String]) -> Result<String, String> {
        let usage =
            "usage: --child create PASSFILE ARCHIVE BASE INPUT... | --child extract PASSFILE ARCHIVE DEST";
        let (mode, rest) = args.split_first().ok_or(usage)?;
        // Names the process (and the threads it starts) for perf reports.
        let _ = fs::write("/proc/self/comm", format!("lockbox-{mode}"));
        let pass = rest.first().ok_or(usage)?;
        let pass = fs::read(pass).map_err(|e| format!("reading {pass}: {e}"))?;
        let password = Password::new(pass);
        let start = Instant::now();
        let bytes = match (mode.as_str(), rest) {
            ("create", [_, archive, base, inputs @ ..]) if !inputs.is_empty() => {
                let inputs: Vec<PathBuf> = inputs.iter().map(PathBuf::from).collect();
                let archive = Path::new(archive);
                create_archive(archive, Path::new(base), &inputs, &password, CreateOptions::new())
                    .map_err(|e| format!("lockbox create of {}: {e}", archive.display()))?;
                fs::metadata(archive).map_err(|e| format!("{}: {e}", archive.display()))?.len()
            }
            ("extract", [_, archive, dest]) => {
                let file = fs::File::open(archive).map_err(|e| format!("opening {archive}: {e}"))?;
                let opened =
                    Archive::open(file, &password).map_err(|e| format!("lockbox open of {archive}: {e}"))?;
                let report = opened
                    .extract(Path::new(dest), &ExtractOptions::new())
                    .map_err(|e| format!("lockbox extract of {archive} to {dest}: {e}"))?;
                report.bytes
            }
            _ => return Err(usage.into()),
        };
        let elapsed = start.elapsed();
        let peak = fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| s.lines().find_map(|l| l.strip_prefix("VmHWM:").and_then(last_number)))
            .map_or_else(|| "n/a".into(), |k| k.to_string());
        Ok(format!("elapsed_ns={} peak_rss_kib={peak} bytes={bytes}", elapsed.as_nanos()))
    }
}
