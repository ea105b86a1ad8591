//! What the machine has, found once before any scenario: this binary and
//! GNU time (the runner), each external tool's path and version, the
//! passphrase file and keys every tool is given, and the source's commit.
//!
//! A tool that is missing is a note in the results, not an error: only
//! lockbox and gpg are required, and `measure` decides that.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::args::{Args, Mode};
use crate::host::commit;
use crate::process::Runner;
use crate::util::{find_tool, last_number, write_private};

/// Used for every tool. It is not secret: the archives are throw-away.
pub const PASSPHRASE: &str = "pgp_compare: correct horse battery staple";

/// Everything about the machine and the tools, found once.
pub struct Env {
    /// This binary (lockbox's child) and GNU time (external tools' peak RSS).
    pub runner: Runner,
    pub mode: Mode,
    pub passfile: PathBuf,
    /// What lockbox's child is given: the passphrase file, or (key mode)
    /// an age identity file whose X25519 recipient locks the archives.
    pub lockbox_key: PathBuf,
    pub gpg: Option<PathBuf>,
    pub gpgconf: Option<PathBuf>,
    /// `(age identity file, recipient)` when age, age-keygen and zstd exist.
    pub age: Option<(PathBuf, String)>,
    pub sevenzip: Option<PathBuf>,
    pub restic: Option<PathBuf>,
    /// The rows `--skip` leaves out, by their `Tool::skip_name`.
    pub skip: Vec<String>,
    pub versions: Vec<(String, String)>,
    /// The source's commit, read when the run starts.
    pub commit: String,
    pub notes: Vec<String>,
}

impl Env {
    pub fn probe(args: &Args, work: &Path) -> Result<Env> {
        let exe = std::env::current_exe().context("finding this executable")?;
        let passfile = work.join("passphrase");
        write_private(&passfile, PASSPHRASE.as_bytes())?;
        let lockbox_key = match args.mode {
            Mode::Password => passfile.clone(),
            Mode::Key => {
                let (identity, _) =
                    revault_lockbox_api::keys::keygen(false).context("making an X25519 identity")?;
                let path = work.join("lockbox-identity.txt");
                write_private(&path, identity.as_bytes())?;
                path
            }
        };
        let mut env = Env {
            runner: Runner { exe, time: None },
            mode: args.mode,
            passfile,
            lockbox_key,
            gpg: None,
            gpgconf: None,
            age: None,
            sevenzip: None,
            restic: None,
            skip: args.skip.clone(),
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
            env.runner.time = Some(time.to_path_buf());
            env.versions.push(("time".into(), "GNU time (/usr/bin/time)".into()));
        } else {
            env.notes.push(
                "/usr/bin/time (GNU time, apt package `time`) not found: peak RSS of external tools is n/a"
                    .into(),
            );
        }
        if !args.skip.is_empty() {
            env.notes.push(format!("--skip: {} left out", args.skip.join(", ")));
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
        match find_tool("restic") {
            Some(restic) => {
                env.version("restic", &restic, &["version"]);
                env.restic = Some(restic);
            }
            None => env.notes.push("restic not installed (apt package `restic`): restic skipped".into()),
        }
        match find_tool("7zz") {
            Some(_) if args.mode == Mode::Key => {
                env.notes.push("key mode: 7zz has no public keys, skipped".into())
            }
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
