//! `log`: one line (or JSON object) per write session, oldest first, then
//! a torn tail if there is one.

use std::fmt::Write as _;
use std::io::{self, Write};

use anyhow::{Context, Result};
use revault_lockbox_api::keys::Fingerprint;
use revault_lockbox_api::read::{SessionKind, SessionSummary};
use revault_lockbox_api::Quoted;
use serde_json::{json, Value};

use super::{json::Lines, STDOUT};
use crate::dates::Clock;

/// Prints `sessions` and the archive's torn tail (`torn` bytes), as text
/// with times in local time (`utc`: in UTC) or as JSON lines; with
/// `reused` (`--stats`), each session's reused bytes beside it (`None` for
/// a merge).
pub fn log(
    sessions: &[SessionSummary],
    reused: Option<&[Option<u64>]>,
    torn: u64,
    as_json: bool,
    utc: bool,
) -> Result<()> {
    let clock = Clock::new(utc, true);
    let time = |s: &SessionSummary| clock.show(s.created_ns.div_euclid(1_000_000_000));
    let reused_by = |i: usize| reused.map(|r| r.get(i).copied().flatten());
    if as_json {
        let mut lines = Lines::stdout();
        for (i, s) in sessions.iter().enumerate() {
            let mut line = session(s, &time(s));
            if let Some(bytes) = reused_by(i) {
                line["reused_bytes"] = json!(bytes);
            }
            lines.write(&line).context(STDOUT)?;
        }
        let states = sessions.iter().filter(|s| s.state.is_some()).count();
        let summary = json!({
            "type": "summary",
            "command": "log",
            "sessions": sessions.len(),
            "states": states,
            "torn_tail_bytes": torn,
        });
        return lines.write(&summary).and_then(|()| lines.flush()).context(STDOUT);
    }
    let mut text = String::new();
    let mut previous = Some(0);
    for (i, s) in sessions.iter().enumerate() {
        if let Some(gone) = removed_before(previous, s.state) {
            let _ = writeln!(text, "   -  {gone} removed by a compaction");
        }
        previous = s.state.or(previous);
        let _ = writeln!(text, "{}", line(s, &time(s), reused_by(i).flatten()));
    }
    if torn > 0 {
        let _ =
            writeln!(text, "torn tail: {torn} bytes after the last commit (`lockbox repair` cuts them off)");
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).context(STDOUT)
}

/// `state 1 was`, `states 4 to 5 were`.
/// The states a compaction removed between the state before (0 before
/// the first) and `state`: those before the first kept one, or, after
/// calendar retention, those between two kept ones (`states 4 to 5 were`).
fn removed_before(before: Option<u64>, state: Option<u64>) -> Option<String> {
    let (first, last) = (before? + 1, state?.checked_sub(1)?);
    match first.cmp(&last) {
        std::cmp::Ordering::Greater => None,
        std::cmp::Ordering::Equal => Some(format!("state {first} was")),
        std::cmp::Ordering::Less => Some(format!("states {first} to {last} were")),
    }
}

fn kind(kind: SessionKind) -> &'static str {
    match kind {
        SessionKind::Merge => "merge",
        SessionKind::Compaction => "compaction",
        _ => "change",
    }
}

/// A signer's key id as `--signer` takes it: a fingerprint `lbsig1…`
/// (hex only for an id that is no fingerprint, which no writer makes).
fn signer(id: &[u8]) -> String {
    match <[u8; 32]>::try_from(id) {
        Ok(bytes) => Fingerprint(bytes).to_string(),
        Err(_) => id.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// `   3  2026-12-02T03:04:05+01:00  stored 1, removed 0, 40 entries, 2812 bytes  "nightly"`
/// (with `--stats`: `2812 bytes (reused 1048576)`);
/// a merge has `-` for its state; a compaction holds the state it kept
/// (the earliest of a compacted archive's), under that state's number.
fn line(s: &SessionSummary, time: &str, reused: Option<u64>) -> String {
    let state = s.state.map_or_else(|| "-".to_string(), |n| n.to_string());
    let what = match s.kind {
        SessionKind::Merge => format!("merge of index runs (session {})", s.number),
        SessionKind::Compaction => {
            format!("compaction (session {}) holding this state, {} entries", s.number, s.entries)
        }
        _ => format!("stored {}, removed {}, {} entries", s.stored, s.removed, s.entries),
    };
    let mut line = format!("{state:>4}  {time}  {what}, {} bytes", s.bytes_written);
    if let Some(reused) = reused {
        let _ = write!(line, " (reused {reused})");
    }
    if !s.signers.is_empty() {
        let ids: Vec<String> = s.signers.iter().map(|id| signer(id)).collect();
        let _ = write!(line, ", signed by {}", ids.join(", "));
    }
    if !s.label.is_empty() {
        let _ = write!(line, "  {}", Quoted::bytes(s.label.as_bytes()));
    }
    line
}

fn session(s: &SessionSummary, time: &str) -> Value {
    json!({
        "type": "session",
        "number": s.number,
        "state": s.state,
        "kind": kind(s.kind),
        "created_ns": s.created_ns,
        "time": time,
        "label": s.label,
        "stored": s.stored,
        "removed": s.removed,
        "entries": s.entries,
        "bytes_written": s.bytes_written,
        "signers": s.signers.iter().map(|id| signer(id)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::removed_before;

    #[test]
    fn states_removed_before_the_first_and_between_kept_ones_are_named() {
        assert_eq!(removed_before(Some(0), Some(1)), None);
        assert_eq!(removed_before(Some(0), Some(2)).as_deref(), Some("state 1 was"));
        assert_eq!(removed_before(Some(0), Some(996)).as_deref(), Some("states 1 to 995 were"));
        assert_eq!(removed_before(Some(3), Some(6)).as_deref(), Some("states 4 to 5 were"));
        assert_eq!(removed_before(Some(6), Some(7)), None);
        assert_eq!(removed_before(Some(6), None), None, "a merge holds no state");
    }
}
