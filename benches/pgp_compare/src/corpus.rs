//! Corpora on disk: generated once per scenario and size, then reused.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use corpora::Scenario;

use crate::util::{remove_tree, write_atomic};

/// Bumped when the stamp format or the generation recipe changes.
const STAMP_VERSION: u32 = 2;

/// The scenario to generate and the name it is reported and stored under:
/// `scale-many-files` with `--scale-entries N` is `scale-many-files-N`.
pub fn sized(scenario: &Scenario, entries: Option<u64>) -> (Scenario, String) {
    match (scenario.name, entries) {
        ("scale-many-files", Some(n)) => match scenario.with_files(n) {
            Some(copy) => (copy, format!("{}-{n}", scenario.name)),
            None => (scenario.clone(), scenario.name.to_string()),
        },
        _ => (scenario.clone(), scenario.name.to_string()),
    }
}

/// The scenario's corpus under `dir/<name>`, generated unless a stamp says
/// it already was, with this size factor and nominal size.
pub fn corpus_for(scenario: &Scenario, name: &str, dir: &Path, factor: f64) -> Result<corpora::Corpus> {
    let root = dir.join(name);
    let stamp = dir.join(format!("{name}.stamp"));
    let header = format!(
        "stamp-version={STAMP_VERSION}\nscenario={}\nsize-factor={factor:?}\nnominal-bytes={}\n",
        scenario.name, scenario.logical_bytes
    );
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
    eprintln!("generating {name} at size factor {factor} in {}", root.display());
    let start = Instant::now();
    let corpus = scenario.generate(&root, factor).with_context(|| format!("generating {name}"))?;
    eprintln!("generated in {:.1} s", start.elapsed().as_secs_f64());
    let mut text = header;
    let _ = writeln!(text, "logical-bytes={}\nfiles={}", corpus.logical_bytes, corpus.files);
    for input in &corpus.inputs {
        let input = input.to_str().context("a scenario input name is not UTF-8")?;
        let _ = writeln!(text, "input={input}");
    }
    write_atomic(&stamp, text.as_bytes())?;
    Ok(corpus)
}

/// An existing tree `dir` as a corpus: its parent is the root, its name
/// the one input; regular files (each hard-link name counts, its bytes
/// once) and symlinks are counted.
pub fn existing_tree(dir: &Path) -> Result<(String, corpora::Corpus)> {
    use std::collections::HashSet;
    use std::os::unix::fs::MetadataExt;

    let dir = fs::canonicalize(dir).with_context(|| format!("--tree {}", dir.display()))?;
    let (Some(root), Some(name)) = (dir.parent(), dir.file_name()) else {
        anyhow::bail!("--tree {}: not a directory below another", dir.display());
    };
    if !dir.is_dir() {
        anyhow::bail!("--tree {}: not a directory", dir.display());
    }
    let (mut logical, mut files, mut seen) = (0u64, 0u64, HashSet::new());
    let mut todo = vec![dir.clone()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let entry = entry.with_context(|| format!("reading {}", d.display()))?;
            let meta = entry.metadata().with_context(|| format!("{}", entry.path().display()))?;
            if meta.is_dir() {
                todo.push(entry.path());
            } else {
                files += 1;
                if meta.is_file() && seen.insert((meta.dev(), meta.ino())) {
                    logical += meta.len();
                }
            }
        }
    }
    let name = name.to_string_lossy().into_owned();
    let corpus = corpora::Corpus {
        root: root.to_path_buf(),
        inputs: vec![PathBuf::from(&name)],
        logical_bytes: logical,
        files,
    };
    Ok((name, corpus))
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
