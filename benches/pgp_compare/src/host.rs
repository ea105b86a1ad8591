//! The record of where a run ran: the date, the machine, its load, the OS,
//! the source's commit and the size of the `lockbox` binary, for the
//! results' header (figures mean little without them).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use revault_lockbox_api::civil::UtcTime;
use revault_lockbox_api::{AeadBackend, ChaChaBackend};

use crate::units::human_bytes;
use crate::util::last_number;

/// `YYYY-MM-DD HH:MM:SS` in UTC.
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs();
    let t = UtcTime::from_unix(secs as i64);
    format!("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", t.year, t.month, t.day, t.hour, t.minute, t.second)
}

/// The load average over 1, 5 and 15 minutes, as `/proc/loadavg` says.
pub fn load_average() -> String {
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    load.join(" ")
}

/// The CPU model, its logical CPUs (all and usable) and the RAM.
pub fn machine() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let logical = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:").and_then(last_number)))
        .map_or_else(String::new, |kib| format!(", {} RAM", human_bytes(kib * 1024)));
    format!("{model}, {logical} logical CPU(s), {usable} usable{mem}")
}

/// The ChaCha20 backend lockbox's pages ran on (the harness runs the
/// library in its own child process, so this build's backend is the one
/// measured), and whether this build has the AVX-512 one.
pub fn chacha_backend() -> String {
    let built = if ChaChaBackend::BUILT_WITH_AVX512 {
        "with"
    } else {
        "WITHOUT (RUSTFLAGS replaced .cargo/config.toml's)"
    };
    format!(
        "ChaCha20-Poly1305 on {}; chacha20 backend {} (built {built} the AVX-512 backend)",
        AeadBackend::detect(),
        ChaChaBackend::detect()
    )
}

/// The distribution and the kernel.
pub fn os() -> String {
    let pretty = fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        })
        .unwrap_or_else(|| "unknown OS".into());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string());
    format!("{pretty}, kernel {}", kernel.unwrap_or_else(|_| "unknown".into()))
}

/// The source's commit, and the files changed since when there are any.
pub fn commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let hash = Command::new("git").args(["-C", dir, "log", "-1", "--format=%h"]).output();
    let Ok(hash) = hash else { return "unknown (no git)".into() };
    let hash = String::from_utf8_lossy(&hash.stdout).trim().to_string();
    if hash.is_empty() {
        return "unknown".into();
    }
    let status =
        Command::new("git").args(["-C", dir, "status", "--porcelain", "--untracked-files=no"]).output();
    let changed: Vec<String> = status
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.get(3..))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    match changed.len() {
        0 => hash,
        n if n <= 6 => format!("{hash} + uncommitted changes to {}", changed.join(", ")),
        n => format!("{hash} + uncommitted changes to {n} files"),
    }
}

/// The size of the `lockbox` binary built beside this one (the same
/// profile's directory, `target/release/lockbox` for a release build), or
/// else of the workspace's release build, or "not built".
pub fn binary_size(exe: &Path) -> String {
    let beside = exe.parent().map(|profile| profile.join("lockbox"));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/lockbox");
    let found: Option<(PathBuf, u64)> = beside
        .into_iter()
        .chain([workspace])
        .find_map(|p| fs::metadata(&p).ok().filter(|m| m.is_file()).map(|m| (p, m.len())));
    match found {
        Some((path, len)) => format!("{} ({len} bytes, `{}`)", human_bytes(len), path.display()),
        None => "not built (`cargo build --release -p revault_cli`)".into(),
    }
}
