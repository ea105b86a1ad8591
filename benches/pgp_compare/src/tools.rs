//! The tools compared and their command lines: each tool's row labels and
//! extraction variants, how it creates and extracts, gpg's home and agent.
//!
//! This module says *what* runs; `env` found it installed, `measure` and
//! `process` time it.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use corpora::{Corpus, Shape};

use crate::args::Mode;
use crate::env::{Env, PASSPHRASE};
use crate::process::Job;
use crate::util::{q, write_private};

/// The tools compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Tool {
    Lockbox,
    /// Lockbox's `add` of the whole corpus into an empty archive: an append
    /// session, timed beside `create` of the same tree.
    LockboxAdd,
    Gpg,
    ZstdAge,
    /// `age -r` alone (with `tar` for trees): the peer on incompressible data.
    Age,
    /// `restic backup` into a fresh repository and `restic restore`.
    Restic,
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
            (Tool::Age, Shape::SingleFile, _) => "age -r (key)",
            (Tool::Age, Shape::Tree, _) => "tar | age -r (key)",
            (Tool::Restic, _, _) => "restic backup/restore",
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
            Tool::Age => "out.age",
            Tool::Restic => "out.restic",
            Tool::SevenZip => "out.7z",
        }
    }

    /// The name `--skip` takes; lockbox's own row has none.
    pub fn skip_name(self) -> Option<&'static str> {
        match self {
            Tool::Lockbox => None,
            Tool::LockboxAdd => Some("add"),
            Tool::Gpg => Some("gpg"),
            Tool::ZstdAge => Some("zstd-age"),
            Tool::Age => Some("age"),
            Tool::Restic => Some("restic"),
            Tool::SevenZip => Some("7zz"),
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

/// What a scenario's commands need.
pub struct Ctx<'a> {
    pub env: &'a Env,
    pub shape: Shape,
    pub corpus: &'a Corpus,
    pub gpg_home: Option<&'a GpgHome>,
}

impl Ctx<'_> {
    /// What must exist before the timed create, made untimed: the empty
    /// archive lockbox's `add` row appends to, restic's fresh repository.
    pub fn seed(&self, tool: Tool, archive: &Path) -> Option<Job> {
        match tool {
            Tool::LockboxAdd => {
                Some(Job::Child(vec!["seed".into(), self.env.passfile.clone().into(), archive.into()]))
            }
            Tool::Restic => Some(Job::Pipeline {
                cwd: self.corpus.root.clone(),
                stages: vec![format!("{} init -q", self.restic(archive).ok()?)],
            }),
            _ => None,
        }
    }

    /// `restic` on repository `repo` with the passphrase file, no cache
    /// (each repository is fresh; a cache would only add writes).
    fn restic(&self, repo: &Path) -> Result<String> {
        let restic = self.env.restic.as_ref().context("no restic")?;
        Ok(format!("{} --repo {} --password-file {} --no-cache", q(restic), q(repo), q(&self.env.passfile)))
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
            Tool::Age => {
                let (_, recipient) = env.age.as_ref().context("no age")?;
                let age = format!("age -r {} -o {out}", q(recipient));
                if tree {
                    pipeline(vec![format!("tar -cf - {}", inputs.join(" ")), age])
                } else {
                    pipeline(vec![format!("{age} {input}")])
                }
            }
            Tool::Restic => {
                pipeline(vec![format!("{} backup -q {}", self.restic(archive)?, inputs.join(" "))])
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
            Tool::Age => {
                let (identity, _) = env.age.as_ref().context("no age")?;
                let age = format!("age -d -i {}", q(identity));
                if tree {
                    pipeline(vec![format!("{age} {src}"), "tar -xf -".into()])
                } else {
                    // A redirect, not `-o`: age opens `-o` only when it first
                    // writes, so an empty file would never be made.
                    pipeline(vec![format!("{age} {src} > {single_out}")])
                }
            }
            Tool::Restic => {
                pipeline(vec![format!("{} restore -q latest --target {}", self.restic(archive)?, q(dest))])
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
            env.runner.run(&shell(work, keygen)).context("gpg key generation")?;
        }
        let warm = work.join("gpg-warmup");
        write_private(&warm, b"warm-up")?;
        let sealed = q(work.join("gpg-warmup.gpg"));
        let cmd = format!("{} -o {sealed} {}", home.command(env, &[encrypt_op(env.mode)]), q(&warm));
        env.runner.run(&shell(work, cmd)).context("gpg warm-up")?;
        let open =
            format!("{} -o {} {sealed}", home.command(env, &["--decrypt"]), q(work.join("gpg-warmup.out")));
        env.runner.run(&shell(work, open)).context("gpg warm-up")?;
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

/// One untimed command of the gpg home's set-up, run in `cwd`.
fn shell(cwd: &Path, command: String) -> Job {
    Job::Pipeline { cwd: cwd.to_path_buf(), stages: vec![command] }
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
