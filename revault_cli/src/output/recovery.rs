//! What reading through recovery records found (docs/RECOVERY.md): a line
//! on stderr for each session whose protected bytes had damage.

use revault_lockbox_api::recovery::RunRepair;

use super::{count, say};

/// Readers: one line for each damaged session, what its record rebuilt in
/// memory or why it could not.
pub fn read_through(name: &str, runs: &[RunRepair]) {
    for run in runs.iter().filter(|r| r.is_damaged()) {
        match run.is_repaired() {
            true => say(format_args!("{name}: {}", rebuilt(run))),
            false => say(format_args!("{name}: {}; read as it is", damage(run))),
        }
    }
}

/// `verify`: one line for each damaged session, repairable or not.
pub fn verified(name: &str, runs: &[RunRepair]) {
    for run in runs.iter().filter(|r| r.is_damaged()) {
        say(format_args!("{name}: {}", damage(run)));
    }
}

/// "rebuilt N shards (X bytes) of the session at byte S from its recovery
/// record (bytes A to B, ...)".
pub fn rebuilt(run: &RunRepair) -> String {
    let mut ranges: Vec<String> =
        run.rebuilt.iter().take(3).map(|r| format!("{} to {}", r.start, r.end - 1)).collect();
    if run.rebuilt.len() > 3 {
        ranges.push(format!("{} more", run.rebuilt.len() - 3));
    }
    format!(
        "rebuilt {} ({} bytes) of the session at byte {} from its recovery record (bytes {})",
        count(run.found.rebuilt, "shard", "shards"),
        run.rebuilt_bytes(),
        run.start,
        ranges.join(", ")
    )
}

/// "damage: N shards in the session at byte S, repairable" or "..., not
/// repairable (group G lost L shards, U recovery shards intact)".
pub fn damage(run: &RunRepair) -> String {
    let shards = count(run.found.damaged, "shard", "shards");
    match run.unrepairable() {
        [] => format!("damage: {shards} in the session at byte {}, repairable", run.start),
        [worst, rest @ ..] => {
            let more = match rest.len() {
                0 => String::new(),
                n => format!("; {} more", count(n as u64, "group", "groups")),
            };
            format!(
                "damage: {shards} in the session at byte {}, not repairable (group {} lost {}, {} recovery shards intact{more})",
                run.start,
                worst.group,
                count(worst.lost, "shard", "shards"),
                worst.usable
            )
        }
    }
}
