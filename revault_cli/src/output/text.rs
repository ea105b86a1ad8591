//! Text shapes of `list -l` and `info`: mode strings, aligned columns and
//! timestamps.

use std::fmt::Write as _;
use std::io::{self, Write};

use revault_lockbox_api::civil::UtcTime;
use revault_lockbox_api::read::{ArchiveInfo, SessionSigners};
use revault_lockbox_api::{Entry, EntryKind, Quoted};

use crate::dates::Clock;

/// Writes a stored name quoted (as `ls -b` and GNU tar do, so that a hostile
/// name cannot send control sequences to a terminal), or its exact bytes
/// when `raw` (`list -0`, for scripts).
pub fn write_name(out: &mut impl Write, name: &[u8], raw: bool) -> io::Result<()> {
    if raw {
        out.write_all(name)
    } else {
        write!(out, "{}", Quoted::bytes(name))
    }
}

/// `list -l`'s lines, as GNU tar's `-tv` writes them: `MODE USER/GROUP
/// SIZE DATE PATH[ -> TARGET]`, owner and size padded to a width that
/// starts at tar's 19 and grows with the widest seen, so the columns line
/// up without holding the listing back.
pub struct LongLines {
    clock: Clock,
    owner_size_width: usize,
}

impl LongLines {
    /// Lines dated by `clock`.
    pub fn new(clock: Clock) -> LongLines {
        LongLines { clock, owner_size_width: 19 }
    }

    /// One line, without its end (owner ids where no name was stored).
    pub fn write(&mut self, out: &mut impl Write, e: &Entry, raw: bool) -> io::Result<()> {
        let (kind, size, target) = match &e.kind {
            EntryKind::Dir => ('d', 0, None),
            EntryKind::File { size, .. } => ('-', *size, None),
            EntryKind::Symlink { target, .. } => ('l', 0, Some(target)),
            EntryKind::Hardlink { target, size, .. } => ('h', *size, Some(target)),
            _ => ('?', 0, None),
        };
        let (owner, size) = (owner(e), size.to_string());
        let used = owner.chars().count() + 1 + size.len();
        self.owner_size_width = self.owner_size_width.max(used);
        let size_width = self.owner_size_width - used + size.len();
        let when = self.clock.show(e.meta.mtime_secs);
        write!(out, "{} {owner} {size:>size_width$} {when} ", mode_string(kind, e.meta.mode))?;
        write_name(out, &e.path, raw)?;
        if let Some(t) = target {
            out.write_all(b" -> ")?;
            write_name(out, t, raw)?;
        }
        Ok(())
    }
}

/// `USER/GROUP`: the stored names, quoted, or the ids where none is stored.
pub fn owner(e: &Entry) -> String {
    let name = |n: Option<&[u8]>, id: u32| n.map_or_else(|| id.to_string(), |n| Quoted::bytes(n).to_string());
    format!("{}/{}", name(e.meta.user.as_deref(), e.meta.uid), name(e.meta.group.as_deref(), e.meta.gid))
}

/// `ls`-style mode: kind character, then `rwx` triplets with setuid,
/// setgid and sticky bits shown as `s`/`S` and `t`/`T`.
pub fn mode_string(kind: char, mode: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(kind);
    let special = [(0o4000, 's', 'S'), (0o2000, 's', 'S'), (0o1000, 't', 'T')];
    for (i, (bit, on_x, off_x)) in special.into_iter().enumerate() {
        let shift = 6 - 3 * i;
        let perms = (mode >> shift) & 0o7;
        s.push(if perms & 4 != 0 { 'r' } else { '-' });
        s.push(if perms & 2 != 0 { 'w' } else { '-' });
        let x = perms & 1 != 0;
        s.push(match (mode & bit != 0, x) {
            (true, true) => on_x,
            (true, false) => off_x,
            (false, true) => 'x',
            (false, false) => '-',
        });
    }
    s
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM:SS` in UTC.
pub fn utc(secs: i64) -> String {
    let t = UtcTime::from_unix(secs);
    format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute, t.second)
}

/// The last state's content bytes per archive byte it uses: the archive
/// less its dead bytes, which replaced copies and earlier states hold (0
/// for an empty archive). The whole file's size would mix history in.
pub fn ratio(info: &ArchiveInfo) -> f64 {
    match info.archive_bytes.saturating_sub(info.dead_bytes) {
        0 => 0.0,
        used => info.content_bytes as f64 / used as f64,
    }
}

/// `info` as aligned text.
pub fn info_text(info: &ArchiveInfo) -> String {
    let mut s = String::new();
    let mut line = |k: &str, v: String| {
        let _ = writeln!(s, "{k:<18} {v}");
    };
    line("format version", info.version.to_string());
    for (i, k) in info.kdf.iter().enumerate() {
        let name =
            if info.kdf.len() > 1 { format!("password slot {}", i + 1) } else { "password slot".into() };
        line(&name, format!("Argon2id, {} MiB, {} passes, {} lanes", k.m_kib as f64 / 1024.0, k.t, k.p));
    }
    line("files", info.files.to_string());
    line("directories", info.dirs.to_string());
    line("symbolic links", info.symlinks.to_string());
    line("hard links", info.hardlinks.to_string());
    line("content", format!("{} ({} bytes)", indicatif::HumanBytes(info.content_bytes), info.content_bytes));
    line(
        "deduplicated",
        format!(
            "{} bytes (of the content: what its files reference more than once, stored once)",
            info.deduplicated_bytes
        ),
    );
    line(
        "archive size",
        format!("{} ({} bytes)", indicatif::HumanBytes(info.archive_bytes), info.archive_bytes),
    );
    line(
        "compression ratio",
        format!("{:.2} (of the last state: its content to the bytes it uses)", ratio(info)),
    );
    line(
        "data pages",
        format!("{} ({} stored uncompressed), {} bytes", info.pages, info.raw_pages, info.stored_page_bytes),
    );
    line("index", format!("{} bytes", info.index_bytes));
    line("write sessions", format!("{} ({} index runs)", info.sessions, info.runs));
    let started = utc(info.last_session_created_ns.div_euclid(1_000_000_000));
    let label = match info.last_session_label.as_str() {
        "" => String::new(),
        label => format!(", {}", Quoted::bytes(label.as_bytes())),
    };
    line("state", format!("{} (as lockbox log numbers it; --session {0} reads it)", info.state));
    line("last written", format!("{started} UTC{label}"));
    line("commit hash", info.commit_hash.iter().map(|b| format!("{b:02x}")).collect());
    let reclaims = match info.sessions {
        // Earlier states hold some of them: a plain compact removes those
        // states, which a retention compaction had just kept.
        0 | 1 => "lockbox compact reclaims them".to_owned(),
        _ => format!(
            "replaced copies and what only states before {} use: lockbox compact reclaims them and removes \
             those states; compact --keep-sessions N keeps the last N",
            info.state
        ),
    };
    line("dead bytes", format!("{} ({reclaims})", info.dead_bytes));
    if info.torn_tail_bytes > 0 {
        line(
            "torn tail",
            format!("{} bytes (an interrupted append; lockbox repair cuts them off)", info.torn_tail_bytes),
        );
    }
    line("key slots in use", info.key_slots.to_string());
    if info.signers.iter().any(|s| !s.signatures.is_empty()) {
        s.push_str(&signers_text(&info.signers));
    }
    s
}

/// Each session's signers, a line each: `state N  signed by lbsig1…` (a
/// signature that does not verify, or that adopts the sessions before it,
/// says so), or `unsigned`.
pub fn signers_text(signers: &[SessionSigners]) -> String {
    let mut s = String::new();
    for session in signers {
        let names: Vec<String> = session
            .signatures
            .iter()
            .map(|c| match (c.valid, c.adopts) {
                (false, _) => format!("{c} (does not verify)"),
                (true, true) => format!("{c} (adopting the sessions before it)"),
                (true, false) => c.to_string(),
            })
            .collect();
        let shown =
            if names.is_empty() { "unsigned".to_string() } else { format!("signed by {}", names.join(", ")) };
        let _ = writeln!(s, "{:<18} {shown}", session.session.to_string());
    }
    s
}

/// States as a phrase, runs shortened: `state 4`, `states 996 to 1000`,
/// `states 3, 7 and 10 to 12`.
pub fn state_ranges(states: &[u64]) -> String {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for &n in states {
        match runs.last_mut() {
            Some((_, last)) if last.checked_add(1) == Some(n) => *last = n,
            _ => runs.push((n, n)),
        }
    }
    let run = |&(first, last): &(u64, u64)| match first == last {
        true => first.to_string(),
        false => format!("{first} to {last}"),
    };
    match &runs[..] {
        [] => "no state".into(),
        [(first, last)] if first == last => format!("state {first}"),
        [only] => format!("states {}", run(only)),
        [init @ .., end] => {
            let init: Vec<String> = init.iter().map(run).collect();
            format!("states {} and {}", init.join(", "), run(end))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_like_ls() {
        assert_eq!(mode_string('-', 0o644), "-rw-r--r--");
        assert_eq!(mode_string('d', 0o755), "drwxr-xr-x");
        assert_eq!(mode_string('l', 0o777), "lrwxrwxrwx");
        assert_eq!(mode_string('-', 0o4755), "-rwsr-xr-x");
        assert_eq!(mode_string('-', 0o2644), "-rw-r-Sr--");
        assert_eq!(mode_string('d', 0o1777), "drwxrwxrwt");
        assert_eq!(mode_string('d', 0o1776), "drwxrwxrwT");
        assert_eq!(mode_string('h', 0), "h---------");
    }

    #[test]
    fn names_are_quoted_unless_raw() {
        let hostile = b"x\x1b]0;pwned\x07\x1b[2J\xff";
        let mut raw = Vec::new();
        write_name(&mut raw, hostile, true).unwrap();
        assert_eq!(raw, hostile, "-0 gets the exact bytes");
        let mut shown = Vec::new();
        write_name(&mut shown, hostile, false).unwrap();
        assert_eq!(String::from_utf8(shown).unwrap(), "x\\033]0;pwned\\a\\033[2J\\377");
    }

    #[test]
    fn utc_times_match_known_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_000_000_000), "2001-09-09 01:46:40");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc(4_102_444_799), "2099-12-31 23:59:59");
        assert_eq!(utc(-1), "1969-12-31 23:59:59");
        assert_eq!(utc(-86_400 * 365), "1969-01-01 00:00:00");
    }

    #[test]
    fn kept_states_read_as_runs() {
        assert_eq!(state_ranges(&[4]), "state 4");
        assert_eq!(state_ranges(&[996, 997, 998]), "states 996 to 998");
        assert_eq!(state_ranges(&[3, 7, 10, 11, 12]), "states 3, 7 and 10 to 12");
        assert_eq!(state_ranges(&[1, 2, 5]), "states 1 to 2 and 5");
        assert_eq!(state_ranges(&[]), "no state");
    }
}
