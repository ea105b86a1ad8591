//! `diff`: one line (or JSON object) per path that differs, in index
//! order, as `restic diff` shows them: `+` added, `-` removed, `M` changed
//! (what changed after the name), `T` a kind changed (what it was and is).

use std::io::{BufWriter, Write};

use anyhow::{Context, Result};
use revault_lockbox_api::diff::{Changes, Difference};
use revault_lockbox_api::{Entry, EntryKind, Quoted};
use serde_json::json;

use super::{json, STDOUT};

/// How many paths were added, removed and changed.
#[derive(Default)]
struct Tally {
    added: u64,
    removed: u64,
    changed: u64,
}

impl Tally {
    fn count(&mut self, d: &Difference) {
        match d {
            Difference::Added(_) => self.added += 1,
            Difference::Removed(_) => self.removed += 1,
            _ => self.changed += 1,
        }
    }

    fn total(&self) -> u64 {
        self.added + self.removed + self.changed
    }
}

/// Shows `differences` (`on_disk`: the new side is a directory) as text or
/// JSON lines with a summary; returns how many there were.
pub fn differences(
    differences: impl Iterator<Item = Result<Difference>>,
    as_json: bool,
    on_disk: bool,
) -> Result<u64> {
    let mut tally = Tally::default();
    if as_json {
        let mut lines = json::Lines::stdout();
        for d in differences {
            let d = d?;
            tally.count(&d);
            lines.write(&json::difference(&d, on_disk)).context(STDOUT)?;
        }
        let summary = json!({
            "type": "summary",
            "command": "diff",
            "added": tally.added,
            "removed": tally.removed,
            "changed": tally.changed,
            "equal": tally.total() == 0,
        });
        lines.write(&summary).and_then(|()| lines.flush()).context(STDOUT)?;
        return Ok(tally.total());
    }
    let mut out = BufWriter::new(std::io::stdout().lock());
    for d in differences {
        let d = d?;
        tally.count(&d);
        writeln!(out, "{}", line(&d)).context(STDOUT)?;
    }
    out.flush().context(STDOUT)?;
    Ok(tally.total())
}

/// `+ a/new`, `- a/old`, `M a/file  content, mtime`, `T a/x  file -> symbolic link`.
fn line(d: &Difference) -> String {
    let path = Quoted::bytes(d.path());
    match d {
        Difference::Added(_) => format!("+ {path}"),
        Difference::Removed(_) => format!("- {path}"),
        Difference::Changed { old, new, changes } if changes.kind => {
            format!("T {path}  {} -> {}", kind(old), kind(new))
        }
        Difference::Changed { changes, .. } => format!("M {path}  {}", changed(changes).join(", ")),
        _ => format!("? {path}"),
    }
}

/// The names of what changed, as JSON's `changes` lists them.
pub fn changed(c: &Changes) -> Vec<&'static str> {
    let all = [
        (c.kind, "kind"),
        (c.content, "content"),
        (c.mode, "mode"),
        (c.owner, "owner"),
        (c.mtime, "mtime"),
        (c.target, "target"),
    ];
    all.into_iter().filter(|(on, _)| *on).map(|(_, name)| name).collect()
}

fn kind(e: &Entry) -> &'static str {
    match e.kind {
        EntryKind::Dir => "directory",
        EntryKind::Symlink { .. } => "symbolic link",
        _ => "file",
    }
}
