//! The tools compared and their command lines: what is installed (probed
//! once), how each tool creates and extracts, gpg's home and agent.
//!
//! This module says *what* runs; `measure` and `process` time it.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use corpora::{Corpus, Shape};

use crate::args::{Args, Mode};
use crate::process::run_pipeline;
use crate::report::commit;
use crate::util::{find_tool, last_number, q, write_private};
use crate::PASSPHRASE;

/// Everything about the machine and the tools, found once.
pub struct Env {
    pub exe: PathBuf,
    pub mode: Mode,
    pub passfile: PathBuf,
    /// What lockbox's child is given: the passphrase file, or (key mode)
    /// an age identity file whose X25519 recipient locks the archives.
    pub lockbox_key: PathBuf,
    /// GNU time, for external tools' peak RSS.
    pub time: Option<PathBuf>,
    pub gpg: Option<PathBuf>,
    pub gpgconf: Option<PathBuf>,
    /// `(age identity file, recipient)` when age, age-keygen and zstd exist.
    pub age: Option<(PathBuf, String)>,
    pub sevenzip: Option<PathBuf>,
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
                    revault_lockbox_api::keygen(false).context("making an X25519 identity")?;
                let path = work.join("lockbox-identity.txt");
                write_private(&path, identity.as_bytes())?;
                path
            }
        };
        let mut env = Env {
            exe,
            mode: args.mode,
            passfile,
            lockbox_key,
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

/// The tools compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Tool {
    Lockbox,
    /// Lockbox's `add` of the whole corpus into an empty archive: an append
    /// session, timed beside `create` of the same tree.
    LockboxAdd,
    Gpg,
    ZstdAge,
    SevenZip,
}

/// How an extraction is run: lockbox both syncs every file (its default)
/// and not; the other tools never sync, so `zstd | age` also runs followed
/// by `sync -f` of the destination, like against lockbox's default.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Extract {
    /// The tool's default.
    Default,
    /// Lockbox with `ExtractOptions::new().sync(false)`.
    NoSync,
    /// The tool, then `sync -f .` in the destination (one `syncfs`).
    ThenSync,
}

impl Tool {
    pub fn label(self, shape: Shape, mode: Mode) -> &'static str {
        match (self, shape, mode) {
            (Tool::Lockbox, _, Mode::Password) => "lockbox",
            (Tool::Lockbox, _, Mode::Key) => "lockbox -r (X25519)",
            (Tool::LockboxAdd, _, _) => "lockbox add (append)",
            (Tool::Gpg, Shape::SingleFile, Mode::Password) => "gpg -c",
            (Tool::Gpg, Shape::Tree, Mode::Password) => "tar | gpg -c",
            (Tool::Gpg, Shape::SingleFile, Mode::Key) => "gpg -e (key)",
            (Tool::Gpg, Shape::Tree, Mode::Key) => "tar | gpg -e (key)",
            (Tool::ZstdAge, Shape::SingleFile, _) => "zstd -3 | age (key)",
            (Tool::ZstdAge, Shape::Tree, _) => "tar | zstd -3 | age (key)",
            (Tool::SevenZip, _, _) => "7zz -mhe=on",
        }
    }

    /// The row label of an extraction variant.
    pub fn variant_label(self, how: Extract, shape: Shape, mode: Mode) -> &'static str {
        match (how, shape) {
            (Extract::Default, _) => self.label(shape, mode),
            (Extract::NoSync, _) => "lockbox, sync off",
            (Extract::ThenSync, Shape::SingleFile) => "zstd -3 | age (key), then sync",
            (Extract::ThenSync, Shape::Tree) => "tar | zstd -3 | age (key), then sync",
        }
    }

    pub fn archive_name(self) -> &'static str {
        match self {
            Tool::Lockbox => "out.lbox",
            Tool::LockboxAdd => "out-add.lbox",
            Tool::Gpg => "out.gpg",
            Tool::ZstdAge => "out.zst.age",
            Tool::SevenZip => "out.7z",
        }
    }

    /// Lockbox and gpg are the comparison; failures of the others are noted.
    pub fn required(self) -> bool {
        matches!(self, Tool::Lockbox | Tool::LockboxAdd | Tool::Gpg)
    }

    /// Lockbox restores modes and mtimes too; extractions check them.
    pub fn is_lockbox(self) -> bool {
        matches!(self, Tool::Lockbox | Tool::LockboxAdd)
    }

    /// The extraction variants measured, each its own row.
    pub fn extracts(self) -> &'static [Extract] {
        match self {
            Tool::Lockbox => &[Extract::Default, Extract::NoSync],
            Tool::ZstdAge => &[Extract::Default, Extract::ThenSync],
            _ => &[Extract::Default],
        }
    }
}

/// One command to time.
pub enum Job {
    /// This binary's `--child` mode with these arguments (lockbox).
    Child(Vec<OsString>),
    /// A `bash` pipeline run in `cwd`, one string a stage.
    Pipeline { cwd: PathBuf, stages: Vec<String> },
}

/// What a scenario's commands need.
pub struct Ctx<'a> {
    pub env: &'a Env,
    pub shape: Shape,
    pub corpus: &'a Corpus,
    pub gpg_home: Option<&'a GpgHome>,
}

impl Ctx<'_> {
    /// What must exist before the timed create, made untimed: the empty
    /// archive lockbox's `add` row appends to.
    pub fn seed(&self, tool: Tool, archive: &Path) -> Option<Job> {
        (tool == Tool::LockboxAdd)
            .then(|| Job::Child(vec!["seed".into(), self.env.passfile.clone().into(), archive.into()]))
    }

    /// The command that makes `archive` from the corpus.
    pub fn create(&self, tool: Tool, archive: &Path) -> Result<Job> {
        let env = self.env;
        let root = &self.corpus.root;
        let input = q(&self.corpus.inputs[0]);
        let inputs: Vec<String> = self.corpus.inputs.iter().map(q).collect();
        let out = q(archive);
        let tree = self.shape == Shape::Tree;
        let pipeline = |stages: Vec<String>| Ok(Job::Pipeline { cwd: root.clone(), stages });
        match tool {
            Tool::Lockbox | Tool::LockboxAdd => {
                let mode = if tool == Tool::Lockbox { "create" } else { "append" };
                let mut child: Vec<OsString> =
                    vec![mode.into(), env.lockbox_key.clone().into(), archive.into(), root.into()];
                child.extend(self.corpus.inputs.iter().map(|p| p.clone().into_os_string()));
                Ok(Job::Child(child))
            }
            Tool::Gpg => {
                let gpg = self.gpg_home.context("no gpg home")?.command(env, &[encrypt_op(env.mode)]);
                let gpg =
                    format!("{gpg} --cipher-algo AES256 --compress-algo ZLIB --compress-level 6 -o {out}");
                if tree {
                    pipeline(vec![format!("tar -cf - {}", inputs.join(" ")), gpg])
                } else {
                    pipeline(vec![format!("{gpg} {input}")])
                }
            }
            Tool::ZstdAge => {
                let (_, recipient) = env.age.as_ref().context("no age")?;
                let age = format!("age -r {} -o {out}", q(recipient));
                if tree {
                    let tar = format!("tar -cf - {}", inputs.join(" "));
                    pipeline(vec![tar, "zstd -3 -T0 -q".into(), age])
                } else {
                    pipeline(vec![format!("zstd -3 -T0 -q -c {input}"), age])
                }
            }
            Tool::SevenZip => {
                let sz = q(env.sevenzip.as_ref().context("no 7zz")?);
                pipeline(vec![format!(
                    "{sz} a -t7z -bd -bso0 -bsp0 -snl -snh -mhe=on -p{} {out} {}",
                    q(PASSPHRASE),
                    inputs.join(" ")
                )])
            }
        }
    }

    /// The command that extracts `archive` into the existing directory `dest`.
    pub fn extract(&self, tool: Tool, how: Extract, archive: &Path, dest: &Path) -> Result<Job> {
        let env = self.env;
        let src = q(archive);
        let tree = self.shape == Shape::Tree;
        let single_out = q(dest.join(&self.corpus.inputs[0]));
        let pipeline = |stages: Vec<String>| Ok(Job::Pipeline { cwd: dest.to_path_buf(), stages });
        match tool {
            Tool::Lockbox | Tool::LockboxAdd => {
                let mode = match how {
                    Extract::NoSync => "nosync",
                    _ => "extract",
                };
                Ok(Job::Child(vec![mode.into(), env.lockbox_key.clone().into(), archive.into(), dest.into()]))
            }
            Tool::Gpg => {
                let gpg = self.gpg_home.context("no gpg home")?.command(env, &["--decrypt"]);
                if tree {
                    pipeline(vec![format!("{gpg} {src}"), "tar -xf -".into()])
                } else {
                    pipeline(vec![format!("{gpg} -o {single_out} {src}")])
                }
            }
            Tool::ZstdAge => {
                let (identity, _) = env.age.as_ref().context("no age")?;
                let age = format!("age -d -i {} {src}", q(identity));
                let sync = if how == Extract::ThenSync { " && sync -f ." } else { "" };
                if tree {
                    pipeline(vec![age, "zstd -d -q".into(), format!("tar -xf -{sync}")])
                } else {
                    pipeline(vec![age, format!("zstd -d -q -o {single_out}{sync}")])
                }
            }
            Tool::SevenZip => {
                let sz = q(env.sevenzip.as_ref().context("no 7zz")?);
                // `-snld`: restore symlinks that point up (`../`); the corpora have them.
                pipeline(vec![format!(
                    "{sz} x -bd -bso0 -bsp0 -snl -snh -snld -p{} -o{} {src}",
                    q(PASSPHRASE),
                    q(dest)
                )])
            }
        }
    }
}

/// The user id of the key made in key mode.
const GPG_KEY_UID: &str = "pgp_compare <pgp-compare@example.invalid>";

/// gpg's encryption operation: symmetric, or (key mode) to the fresh key.
fn encrypt_op(mode: Mode) -> &'static str {
    match mode {
        Mode::Password => "--symmetric",
        Mode::Key => "--encrypt --trust-model always -r pgp-compare@example.invalid",
    }
}

/// A fresh gpg home directory (mode 0700) with its agent already running,
/// as it is for someone who uses gpg, and in key mode a fresh key pair
/// without passphrase (gpg's `future-default`: ed25519 and cv25519); the
/// agent is stopped and the directory removed on drop.
pub struct GpgHome {
    dir: PathBuf,
    gpgconf: Option<PathBuf>,
}

impl GpgHome {
    pub fn new(env: &Env, scenario: &str, work: &Path) -> Result<GpgHome> {
        // Short, because the agent's socket path has a length limit.
        let dir = std::env::temp_dir().join(format!("lockbox-bench-gpg-{}-{scenario}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        let home = GpgHome { dir, gpgconf: env.gpgconf.clone() };
        if env.mode == Mode::Key {
            let keygen = format!(
                "{} --passphrase '' --quick-generate-key {} future-default default never",
                home.command(env, &[]),
                q(GPG_KEY_UID)
            );
            run_pipeline(env, work, &[keygen]).context("gpg key generation")?;
        }
        let warm = work.join("gpg-warmup");
        write_private(&warm, b"warm-up")?;
        let sealed = q(work.join("gpg-warmup.gpg"));
        let cmd = format!("{} -o {sealed} {}", home.command(env, &[encrypt_op(env.mode)]), q(&warm));
        run_pipeline(env, work, &[cmd]).context("gpg warm-up")?;
        let open =
            format!("{} -o {} {sealed}", home.command(env, &["--decrypt"]), q(work.join("gpg-warmup.out")));
        run_pipeline(env, work, &[open]).context("gpg warm-up")?;
        Ok(home)
    }

    /// `gpg` with this home (and in password mode the passphrase options),
    /// then `extra`.
    fn command(&self, env: &Env, extra: &[&str]) -> String {
        let passphrase = match env.mode {
            Mode::Password => format!("--no-symkey-cache --passphrase-file {} ", q(&env.passfile)),
            Mode::Key => String::new(),
        };
        format!(
            "{} --homedir {} --batch --yes --pinentry-mode loopback {passphrase}{}",
            q(env.gpg.as_deref().unwrap_or(Path::new("gpg"))),
            q(&self.dir),
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
