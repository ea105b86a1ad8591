//! What the commands that change an archive in place report: `add`,
//! `update`, `rm`, `compact` and `repair`, as text on stderr (a dry run's
//! closing line, a torn tail cut, warnings) or as JSON lines ending in the
//! command's summary (docs/JSON.md).

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::{Context, Result};
use indicatif::HumanBytes;
use revault_lockbox_api::update::{RepairReport, UpdateReport};
use revault_lockbox_api::Quoted;
use serde_json::{json, Value};

use super::{count, json, note, say, STDOUT};

/// The change a report is of: the command, its archive and how to show it.
pub struct Change<'a> {
    pub command: &'static str,
    pub archive: &'a Path,
    pub json: bool,
    pub dry_run: bool,
    pub quiet: bool,
}

impl Change<'_> {
    /// The summary's first fields: its type, the command, the archive.
    fn summary(&self) -> serde_json::Map<String, Value> {
        let mut map = serde_json::Map::new();
        map.insert("type".into(), "summary".into());
        map.insert("command".into(), self.command.into());
        json::put_name(&mut map, "archive", self.archive.as_os_str().as_bytes());
        map
    }

    /// Writes `lines`, then the summary with `fields` added.
    fn write_json(&self, lines: &[Value], fields: Value) -> Result<()> {
        let mut out = json::Lines::stdout();
        for line in lines {
            out.write(line).context(STDOUT)?;
        }
        let mut summary = self.summary();
        if let Value::Object(fields) = fields {
            summary.extend(fields);
        }
        out.write(&Value::Object(summary)).and_then(|()| out.flush()).context(STDOUT)
    }
}

/// What `add`, `update` and `rm` did, or with `-n` would do.
pub fn updated(c: &Change<'_>, r: &UpdateReport) -> Result<()> {
    if c.json {
        let warnings: Vec<Value> = r.warnings.iter().map(|w| json::warning(&w.to_string())).collect();
        let mut fields = json!({
            "stored": r.stored,
            "replaced": r.replaced,
            "removed": r.deleted,
            "kept_missing": r.kept_missing,
            "content_bytes": r.content_bytes,
            "bytes_written": r.bytes_written,
            "torn_tail_cut": r.torn_tail_cut,
            "runs_merged": r.runs_merged,
            "warnings": r.warnings.len(),
            "dry_run": c.dry_run,
        });
        // A dry run does not count the archive's entries afterwards.
        if !c.dry_run {
            fields["entries"] = r.entries.into();
        }
        return c.write_json(&warnings, fields);
    }
    let would = if c.dry_run { "would cut" } else { "cut" };
    if r.torn_tail_cut > 0 {
        say(format_args!("{would} off {} bytes an interrupted change had left", r.torn_tail_cut));
    }
    for w in &r.warnings {
        say(w);
    }
    if r.kept_missing > 0 && !c.quiet {
        let (paths, are) = match r.kept_missing {
            1 => ("1 stored path".to_string(), "is no longer on disk; it stays"),
            n => (format!("{n} stored paths"), "are no longer on disk; they stay"),
        };
        say(format_args!(
            "{paths} under the inputs {are} in the archive's latest state (--delete-missing removes them)"
        ));
    }
    if c.dry_run {
        say(format_args!("dry run: {}; nothing written", would_change(c, r)));
    }
    Ok(())
}

/// A dry run's account: "add would store 3 entries in "a.lbox" (…)".
fn would_change(c: &Change<'_>, r: &UpdateReport) -> String {
    let archive = Quoted::path(c.archive);
    if r.stored == 0 && r.deleted == 0 {
        return format!("{} would change nothing in {archive}", c.command);
    }
    let mut parts = Vec::new();
    if r.stored > 0 {
        let replacing = match r.replaced {
            0 => String::new(),
            n => format!(", {n} replacing stored ones"),
        };
        parts.push(format!(
            "store {}{replacing} ({} of content)",
            count(r.stored, "entry", "entries"),
            HumanBytes(r.content_bytes)
        ));
    }
    if r.deleted > 0 {
        parts.push(format!("remove {}", count(r.deleted, "path", "paths")));
    }
    let merged = if r.runs_merged { ", after merging its index runs" } else { "" };
    format!(
        "{} would {} in {archive}, appending about {}{merged}",
        c.command,
        parts.join(" and "),
        HumanBytes(r.bytes_written)
    )
}

/// What `compact` did (`before` and `after` are the archive's lengths),
/// or with `-n` would do.
pub fn compacted(c: &Change<'_>, before: u64, after: u64) -> Result<()> {
    let reclaimed = before.saturating_sub(after);
    if c.json {
        let fields = json!({
            "bytes_before": before,
            "bytes_after": after,
            "reclaimed": reclaimed,
            "dry_run": c.dry_run,
        });
        return c.write_json(&[], fields);
    }
    let archive = Quoted::path(c.archive);
    if c.dry_run {
        say(format_args!(
            "dry run: compacting {archive} would leave {after} bytes of {before} ({} reclaimed); nothing \
             written",
            HumanBytes(reclaimed)
        ));
    } else {
        note(c.quiet, format_args!("{archive}: {before} bytes before, {after} after"));
    }
    Ok(())
}

/// What `repair` did: a torn tail cut, or a salvage's losses.
pub fn repaired(c: &Change<'_>, r: &RepairReport) -> Result<()> {
    let archive = Quoted::path(c.archive);
    if c.json {
        let mut lines: Vec<Value> = r.lost.iter().map(|l| json::lost(l)).collect();
        lines.extend(r.damaged.iter().map(json::damaged));
        let fields = json!({
            "ok": r.salvaged.is_none(),
            "torn_tail_cut": r.torn_tail_bytes,
            "header_rewritten": r.header_rewritten,
            "salvaged": r.salvaged,
            "entries": r.entries,
            "damaged_entries": r.damaged.len(),
            "lost": r.lost.len(),
            "rebuilt_shards": r.rebuilt.iter().map(|run| run.found.rebuilt).sum::<u64>(),
            "rebuilt_bytes": r.rebuilt.iter().map(|run| run.rebuilt_bytes()).sum::<u64>(),
            "not_rebuilt": r.not_rebuilt,
        });
        return c.write_json(&lines, fields);
    }
    for run in &r.rebuilt {
        say(format_args!("{archive}: {}: written again byte for byte", super::recovery::rebuilt(run)));
    }
    if let Some(why) = &r.not_rebuilt {
        say(format_args!("{archive}: {why}: salvaging instead"));
    }
    let Some(damage) = &r.salvaged else {
        if let Some(damage) = &r.header_rewritten {
            say(format_args!("{archive}: {damage}"));
        }
        match r.torn_tail_bytes {
            0 if !r.rebuilt.is_empty() => {}
            0 => note(c.quiet, format_args!("{archive}: whole, nothing to cut")),
            n => note(c.quiet, format_args!("{archive}: cut off a torn tail of {n} bytes")),
        }
        return Ok(());
    };
    for l in &r.lost {
        say(format_args!("lost: {l}"));
    }
    for d in &r.damaged {
        say(format_args!("damaged, left out: {}: {}", d.path, d.reason));
    }
    say(format_args!(
        "{archive}: {damage}: rewritten from what a scan proves: {} entries kept, {} left out",
        r.entries,
        r.damaged.len()
    ));
    Ok(())
}
