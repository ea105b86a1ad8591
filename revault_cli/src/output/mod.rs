//! Everything lockbox shows: on stdout, an entry, a report, key slots and
//! facts about an archive, in text ([`text`]) or as JSON lines ([`json`]);
//! on stderr, warnings, closing notes and errors, each one line starting
//! `lockbox: `. Commands hand their results here and never print.

mod change;
mod diff;
mod hint;
mod history;
pub mod json;
mod locks;
pub mod recovery;
pub mod text;
pub mod usage;
pub mod verbose;

use std::fmt::Display;
use std::fmt::Write as _;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};

pub use change::{compacted, repaired, updated, Change};
pub use diff::differences;
pub use hint::StopsAtDamage;
pub use history::log;
use revault_lockbox_api::create::CreateReport;
use revault_lockbox_api::read::{ArchiveInfo, ExtractReport, SessionSigners, VerifyReport};
use revault_lockbox_api::slots::SlotInfo;
use revault_lockbox_api::update::Reclaim;
use revault_lockbox_api::{Entry, Quoted};

/// The context of every failed write to stdout.
pub const STDOUT: &str = "writing to stdout";

/// A line on stderr: `lockbox: MESSAGE`.
pub fn say(message: impl Display) {
    eprintln!("lockbox: {message}");
}

/// A warning on stderr: `lockbox: warning: MESSAGE`.
pub fn warn(message: impl Display) {
    eprintln!("lockbox: warning: {message}");
}

/// A closing note on stderr that `-q` silences (no `lockbox: ` prefix: it
/// is not a complaint).
pub fn note(quiet: bool, message: impl Display) {
    if !quiet {
        eprintln!("{message}");
    }
}

/// tar's note, once, when input PATHs are absolute: they are stored
/// without their leading `/`. `-q` silences it.
pub fn leading_slash_note(paths: &[std::path::PathBuf], quiet: bool) {
    if !quiet && paths.iter().any(|p| p.is_absolute()) {
        say("Removing leading `/' from member names");
    }
}

pub use locks::locked_with;

/// `n` things, `one` or `many`: "1 entry", "2 entries".
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    match n.into() {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// A failure: its message and causes on one line, with a hint where the
/// error has one. `stops`: what the command does at damaged content.
pub fn error(err: &anyhow::Error, stops: StopsAtDamage) {
    let message = message(err);
    let hint = hint::for_error(err, stops).filter(|h| !message.contains(h.marker));
    match hint {
        Some(hint) => say(format_args!("{message} ({})", hint.text)),
        None => say(message),
    }
}

/// `err` and its causes joined by `: `, skipping a cause whose text an
/// outer message already includes (a context that quotes its cause; the
/// library's errors print each cause once).
fn message(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// `list`: every entry, then (JSON) a summary. `long`: `-l`; `raw`: `-0`.
pub fn entries(
    entries: impl Iterator<Item = Result<Entry>>,
    as_json: bool,
    mut long: Option<text::LongLines>,
    raw: bool,
) -> Result<()> {
    if as_json {
        let mut lines = json::Lines::stdout();
        let mut counts = json::ListCounts::default();
        for e in entries {
            let e = e?;
            counts.add(&e);
            lines.write(&json::entry(&e)).context(STDOUT)?;
        }
        return lines.write(&counts.summary()).and_then(|()| lines.flush()).context(STDOUT);
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for e in entries {
        let e = e?;
        match long.as_mut() {
            Some(lines) => lines.write(&mut out, &e, raw),
            None => text::write_name(&mut out, &e.path, raw),
        }
        .and_then(|()| out.write_all(if raw { b"\0" } else { b"\n" }))
        .context(STDOUT)?;
    }
    out.flush().context(STDOUT)
}

/// `create`'s warnings, and (JSON) its summary; in text, a closing line
/// when files were skipped or changed.
pub fn created(archive: &Path, report: &CreateReport, as_json: bool) -> Result<()> {
    create_report(archive, report, as_json, false)
}

/// `create -n`'s report: `created`'s, then what would have been written
/// (in JSON, `"dry_run": true` in the summary).
pub fn dry_run_created(archive: &Path, report: &CreateReport, as_json: bool) -> Result<()> {
    create_report(archive, report, as_json, true)?;
    if !as_json {
        eprintln!(
            "dry run: {} would be stored in {} ({} of content, an archive of about {}); nothing written",
            count(report.entries, "entry", "entries"),
            Quoted::path(archive),
            indicatif::HumanBytes(report.content_bytes),
            indicatif::HumanBytes(report.archive_bytes)
        );
    }
    Ok(())
}

fn create_report(archive: &Path, report: &CreateReport, as_json: bool, dry_run: bool) -> Result<()> {
    if as_json {
        let mut lines = json::Lines::stdout();
        for w in &report.warnings {
            lines.write(&json::warning(&w.to_string())).context(STDOUT)?;
        }
        let mut summary = json::create_summary(archive, report);
        if dry_run {
            summary["dry_run"] = true.into();
        }
        lines.write(&summary).context(STDOUT)?;
        return lines.flush().context(STDOUT);
    }
    for w in &report.warnings {
        say(w);
    }
    if report.has_failures() {
        say(format_args!(
            "creating {}: some files were skipped or changed while read",
            Quoted::path(archive)
        ));
    }
    Ok(())
}

/// `create`'s PATHs that do not exist, each a warning line (as GNU tar's
/// "Cannot stat"), on stderr or (JSON) as a warning line on stdout.
pub fn missing_paths(missing: &[(std::path::PathBuf, io::Error)], as_json: bool) -> Result<()> {
    let line = |path: &Path, err: &io::Error| format!("{}: cannot archive: {err}", Quoted::path(path));
    if as_json {
        let mut lines = json::Lines::stdout();
        for (path, err) in missing {
            lines.write(&json::warning(&line(path, err))).context(STDOUT)?;
        }
        return lines.flush().context(STDOUT);
    }
    for (path, err) in missing {
        say(line(path, err));
    }
    Ok(())
}

/// `extract`'s damaged entries and warnings, and (JSON) its summary;
/// `name` is how the archive is named.
pub fn extracted(name: &str, report: &ExtractReport, as_json: bool) -> Result<()> {
    if as_json {
        let mut lines = json::Lines::stdout();
        for d in &report.damaged {
            lines.write(&json::damaged(d)).context(STDOUT)?;
        }
        for w in &report.warnings {
            lines.write(&json::extract_warning(w)).context(STDOUT)?;
        }
        for l in &report.lost {
            lines.write(&json::lost(l)).context(STDOUT)?;
        }
        let summary = json::extract_summary(report);
        lines.write(&summary).and_then(|()| lines.flush()).context(STDOUT)?;
    } else {
        for w in &report.warnings {
            warn(format_args!("{}: {}", w.path, w.reason));
        }
    }
    if report.damaged.is_empty() && report.lost.is_empty() {
        return Ok(());
    }
    if !as_json {
        for l in &report.lost {
            say(format_args!("lost: {l}"));
        }
        for d in &report.damaged {
            say(format_args!("damaged, not restored: {}: {}", d.path, d.reason));
        }
    }
    let lost = match report.lost.len() {
        0 => String::new(),
        n => format!(", {n} other losses listed"),
    };
    say(format_args!(
        "extracting {name}: {} damaged entries not restored, {} restored{lost}",
        report.damaged.len(),
        report.entries
    ));
    Ok(())
}

/// `verify`'s findings: damaged entries and pages, a torn tail, and the
/// closing line (`-q` silences the one of an intact archive).
pub fn verified(archive: &Path, name: &str, report: &VerifyReport, as_json: bool, quiet: bool) -> Result<()> {
    if as_json {
        let mut lines = json::Lines::stdout();
        for d in &report.damaged {
            lines.write(&json::damaged(d)).context(STDOUT)?;
        }
        for p in &report.damaged_pages {
            lines.write(&json::damaged_page(p)).context(STDOUT)?;
        }
        for l in &report.lost {
            lines.write(&json::lost(l)).context(STDOUT)?;
        }
        lines.write(&json::verify_summary(report)).and_then(|()| lines.flush()).context(STDOUT)?;
    } else {
        for l in &report.lost {
            say(format_args!("lost: {l}"));
        }
        for d in &report.damaged {
            say(format_args!("damaged: {}: {}", d.path, d.reason));
        }
    }
    if report.torn_tail_bytes > 0 {
        warn(format_args!(
            "{}: {} bytes after the last committed trailer, ignored (an interrupted add, update or rm; \
             lockbox repair cuts them off)",
            Quoted::path(archive),
            report.torn_tail_bytes
        ));
    }
    if report.is_ok() {
        note(
            quiet || as_json,
            format_args!(
                "{name}: OK: {} files, {} bytes, {} pages authenticated",
                report.files, report.bytes, report.pages
            ),
        );
        return Ok(());
    }
    let lost = match report.lost.len() {
        0 => String::new(),
        n => format!(", {n} other losses; {} files proven", report.files),
    };
    say(format_args!(
        "verifying {name}: {} damaged entries, {} damaged pages{lost}",
        report.damaged.len(),
        report.damaged_pages.len()
    ));
    Ok(())
}

/// `verify --signer`: each session's signers, a line each, or a JSON line
/// each (`"type": "session"`).
pub fn signers(signers: &[SessionSigners], as_json: bool, quiet: bool) -> Result<()> {
    if as_json {
        let mut lines = json::Lines::stdout();
        for s in signers {
            let mut value = json::session_signers(s);
            value["type"] = "session".into();
            lines.write(&value).context(STDOUT)?;
        }
        return lines.flush().context(STDOUT);
    }
    if quiet {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.write_all(text::signers_text(signers).as_bytes()).and_then(|()| out.flush()).context(STDOUT)
}

/// `info`: aligned text, or one JSON summary; `reclaims`, when retention
/// flags were given: what `compact` with all of them would reclaim, then,
/// when more than one was given, each alone.
pub fn info(info: &ArchiveInfo, reclaims: &[(String, Reclaim)], as_json: bool) -> Result<()> {
    if as_json {
        let mut summary = json::info_summary(info);
        let reclaim = |(policy, r): &(String, Reclaim)| {
            serde_json::json!({
                "policy": policy,
                "first_state": r.states.0,
                "last_state": r.states.1,
                "kept_states": r.kept,
                "bytes": r.bytes,
            })
        };
        if let Some((all, rules)) = reclaims.split_first() {
            summary["reclaimable"] = reclaim(all);
            if !rules.is_empty() {
                summary["reclaimable_by_rule"] = rules.iter().map(reclaim).collect();
            }
        }
        let mut lines = json::Lines::stdout();
        return lines.write(&summary).and_then(|()| lines.flush()).context(STDOUT);
    }
    let mut text = text::info_text(info);
    for (policy, r) in reclaims {
        let kept = text::state_ranges(&r.kept);
        let _ = writeln!(
            text,
            "{:<18} at least {} bytes by compact {policy} (keeps {kept})",
            "reclaimable", r.bytes
        );
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context(STDOUT)
}

/// `key list`: one line per slot in use, or JSON lines and a summary.
pub fn slots(slots: &[SlotInfo], as_json: bool) -> Result<()> {
    if as_json {
        let mut lines = json::Lines::stdout();
        for slot in slots {
            lines.write(&json::slot(slot)).context(STDOUT)?;
        }
        let summary = json::slots_summary(slots.len());
        return lines.write(&summary).and_then(|()| lines.flush()).context(STDOUT);
    }
    let mut out = io::stdout().lock();
    for slot in slots {
        writeln!(out, "{:>2}  {}", slot.index, locks::slot_text(slot)).context(STDOUT)?;
    }
    Ok(())
}

/// Bytes as they are (`cat`, `keygen`, `completions`, `man`) on stdout.
pub fn raw(bytes: &[u8]) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).context(STDOUT)
}

/// `cat`: everything `reader` gives, to stdout; `what` names a failed read.
pub fn copy(reader: &mut dyn io::Read, what: impl Fn() -> String) -> Result<()> {
    let mut out = io::stdout().lock();
    let mut buf = vec![0u8; 256 << 10];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A checksum mismatch arrives as an `io::Error` wrapping the
            // library's error; `exit::library_error` finds it there.
            Err(e) => return Err(e).with_context(what),
        };
        out.write_all(&buf[..n]).context(STDOUT)?;
    }
    out.flush().context(STDOUT)
}

/// A line on stdout (`keygen -o`'s recipient).
pub fn line(text: &str) {
    println!("{text}");
}

/// Standard output for a generator that writes itself (`completions`);
/// the caller flushes it with [`flush`].
pub fn stdout() -> io::StdoutLock<'static> {
    io::stdout().lock()
}

pub fn flush(mut out: impl Write) -> Result<()> {
    out.flush().context(STDOUT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use revault_lockbox_api::Error;

    #[test]
    fn messages_do_not_repeat_causes() {
        let io = io::Error::from(io::ErrorKind::NotFound);
        let lib = Error::Stream { action: "seeking in the archive", source: io };
        let err = anyhow::Error::new(lib).context("opening a.lbox");
        let text = message(&err);
        assert!(text.starts_with("opening a.lbox: seeking in the archive: "), "{text}");
        assert_eq!(text.matches("not found").count(), 1, "{text}");
    }
}
