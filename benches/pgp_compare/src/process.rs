//! Running one timed command: lockbox's child process or an external
//! pipeline, with its wall time, CPU time, peak RSS and peak thread count.
//!
//! CPU time (user + system) is what the kernel charged to this process's
//! waited-for children while the command ran (`cutime` + `cstime` of
//! `/proc/self/stat`): the command and every process it waited for, so a
//! pipeline's stages count and the harness's own work does not. Linux
//! gives it in clock ticks (100 a second): 10 ms resolution.
//!
//! Threads are sampled from `/proc/PID/stat` every [`SAMPLE_EVERY`] on a
//! thread of the harness, never inside the measured process: for lockbox
//! the child itself, for a pipeline every process below its `bash` except
//! the `bash` and GNU `time` wrappers, summed over the stages running at
//! once (like their RSS).

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::util::{last_number, q};

/// How often thread counts are read.
const SAMPLE_EVERY: Duration = Duration::from_millis(2);
/// Scans of `/proc` for a pipeline's processes at every sample at first.
const FULL_SCANS: u32 = 50;

/// One timed run.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub secs: f64,
    /// User + system CPU seconds, when `/proc/self/stat` could be read.
    pub cpu_secs: Option<f64>,
    pub rss_kib: Option<u64>,
    pub threads: Option<u32>,
}

/// One command to time.
pub enum Job {
    /// This binary's `--child` mode with these arguments (lockbox).
    Child(Vec<OsString>),
    /// A `bash` pipeline run in `cwd`, one string a stage.
    Pipeline { cwd: PathBuf, stages: Vec<String> },
}

/// What runs the jobs: this binary (for lockbox's child) and GNU time (for
/// the pipelines' peak RSS, when installed).
pub struct Runner {
    pub exe: PathBuf,
    pub time: Option<PathBuf>,
}

impl Runner {
    /// Runs `job`.
    pub fn run(&self, job: &Job) -> Result<Sample> {
        match job {
            Job::Child(args) => run_child(&self.exe, args),
            Job::Pipeline { cwd, stages } => run_pipeline(self.time.as_deref(), cwd, stages),
        }
    }
}

/// Runs this binary's `--child` mode; returns the wall time seen from here
/// and the child's own peak RSS.
fn run_child(exe: &Path, args: &[OsString]) -> Result<Sample> {
    let cpu_before = children_cpu();
    let start = Instant::now();
    let child = Command::new(exe)
        .arg("--child")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    let watch = Watch::start(Watched::Process(child.id()));
    let out = child.wait_with_output().with_context(|| format!("waiting for {}", exe.display()))?;
    let secs = start.elapsed().as_secs_f64();
    let cpu_secs = cpu_since(cpu_before);
    let threads = watch.finish();
    if !out.status.success() {
        bail!("{} ({})", String::from_utf8_lossy(&out.stderr).trim(), out.status);
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rss_kib = stdout
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("peak_rss_kib="))
        .and_then(|v| v.parse().ok());
    Ok(Sample { secs, cpu_secs, rss_kib, threads })
}

/// Runs `stages` as a `bash` pipeline in `cwd`, each stage under GNU `time`
/// when given; returns the wall time and the sum of the stages' peaks.
fn run_pipeline(time: Option<&Path>, cwd: &Path, stages: &[String]) -> Result<Sample> {
    let rss_files: Vec<PathBuf> = (0..stages.len())
        .map(|i| std::env::temp_dir().join(format!("lockbox-bench-rss-{}-{i}", std::process::id())))
        .collect();
    let script = stages
        .iter()
        .zip(&rss_files)
        .map(|(stage, rss)| match time {
            Some(time) => format!("{} -f %M -o {} {stage}", q(time), q(rss)),
            None => stage.clone(),
        })
        .collect::<Vec<_>>()
        .join(" | ");
    let cpu_before = children_cpu();
    let start = Instant::now();
    let child = Command::new("bash")
        .arg("-c")
        .arg(format!("set -o pipefail; {script}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting bash")?;
    let watch = Watch::start(Watched::Pipeline { shell: child.id(), stages: stages.len() });
    let out = child.wait_with_output().context("waiting for bash")?;
    let secs = start.elapsed().as_secs_f64();
    let cpu_secs = cpu_since(cpu_before);
    let threads = watch.finish();
    let mut total = Some(0u64);
    for rss in &rss_files {
        let peak = fs::read_to_string(rss).ok().and_then(|s| last_number(&s));
        total = match (total, peak, time) {
            (Some(t), Some(p), Some(_)) => Some(t + p),
            _ => None,
        };
        let _ = fs::remove_file(rss);
    }
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!("`{}` failed ({}): {}", stages.join(" | "), out.status, tail.join(" / "));
    }
    Ok(Sample { secs, cpu_secs, rss_kib: total, threads })
}

/// Linux's clock ticks a second in `/proc` times (USER_HZ, fixed by its ABI).
const TICKS_PER_SEC: f64 = 100.0;

/// CPU seconds charged so far to this process's waited-for children.
fn children_cpu() -> Option<f64> {
    let text = fs::read_to_string("/proc/self/stat").ok()?;
    let rest = text.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 3 (state) and on: cutime is field 16, cstime field 17.
    let ticks: u64 = fields.get(13)?.parse::<u64>().ok()? + fields.get(14)?.parse::<u64>().ok()?;
    Some(ticks as f64 / TICKS_PER_SEC)
}

/// The children's CPU seconds since `before`.
fn cpu_since(before: Option<f64>) -> Option<f64> {
    Some(children_cpu()? - before?)
}

/// What a [`Watch`] counts the threads of.
#[derive(Clone, Copy)]
enum Watched {
    /// One process.
    Process(u32),
    /// The processes below `shell`, but for wrappers: `stages` of them.
    Pipeline { shell: u32, stages: usize },
}

/// Samples thread counts on its own thread until [`Watch::finish`].
struct Watch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Option<u32>>,
}

impl Watch {
    fn start(what: Watched) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut peak: Option<u32> = None;
            // The pipeline's tool processes, once all have been seen.
            let mut tools: Vec<u32> = Vec::new();
            let mut round = 0u32;
            while !flag.load(Ordering::Relaxed) {
                round += 1;
                let now = match what {
                    Watched::Process(pid) => stat(pid).map(|s| s.threads),
                    Watched::Pipeline { shell, stages } => {
                        // A scan reads every process's stat: it runs at every
                        // sample for the first FULL_SCANS samples, then at one
                        // in FULL_SCANS (a stage that exited is never found).
                        if tools.len() < stages && (round <= FULL_SCANS || round % FULL_SCANS == 0) {
                            tools = tools_below(shell);
                        }
                        let counts: Vec<u32> =
                            tools.iter().filter_map(|&p| stat(p)).map(|s| s.threads).collect();
                        (!counts.is_empty()).then(|| counts.iter().sum())
                    }
                };
                peak = peak.max(now);
                std::thread::sleep(SAMPLE_EVERY);
            }
            peak
        });
        Watch { stop, thread }
    }

    /// Stops sampling; the peak seen, if any sample was taken.
    fn finish(self) -> Option<u32> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().ok().flatten()
    }
}

/// Fields of `/proc/PID/stat`.
struct Stat {
    comm: String,
    ppid: u32,
    threads: u32,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    let (head, rest) = text.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_string();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 3 (state) and on; ppid is field 4, num_threads field 20.
    Some(Stat { comm, ppid: fields.get(1)?.parse().ok()?, threads: fields.get(17)?.parse().ok()? })
}

/// Processes below `shell` (and `shell` itself, once it has `exec`ed a
/// tool), leaving out the `bash` and `time` wrappers.
fn tools_below(shell: u32) -> Vec<u32> {
    let all: Vec<(u32, Stat)> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect();
    let mut family = vec![shell];
    let mut grew = true;
    while grew {
        grew = false;
        for (pid, s) in &all {
            if family.contains(&s.ppid) && !family.contains(pid) {
                family.push(*pid);
                grew = true;
            }
        }
    }
    family
        .into_iter()
        .filter(|pid| all.iter().any(|(p, s)| p == pid && s.comm != "bash" && s.comm != "time"))
        .collect()
}
