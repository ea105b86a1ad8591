//! `compact`: the archive rewritten without what later sessions replaced
//! or removed, and without the states `--keep-sessions`/`--keep-within`
//! do not keep, beside the old one, synced and renamed over it; with `-n`,
//! the whole rewrite counted instead of written.

use std::num::NonZeroU64;

use anyhow::{Context, Result};
use revault_lockbox_api::update::Retention;
use revault_lockbox_api::{ArchiveUpdater, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::dates::parse_duration;
use crate::exit::UsageError;
use crate::flags::{CompactArgs, RetentionArgs};
use crate::output::Change;
use crate::progress;
use crate::{keys, output, signing};

pub fn run(c: CompactArgs) -> Result<Outcome> {
    let a = c.maintain;
    in_place(&a.archive, "compact")?;
    let retention = retention(&c.keep)?;
    let options = UpdateOptions::new()
        .wait(a.lock.wait)
        .label(c.label.message.unwrap_or_default())
        .kdf_budget(a.unlock.kdf_budget())
        .dry_run(c.dry_run)
        .retention(retention.map_or(Retention::Latest, |(r, _)| r));
    let mut options = signing::update_options(options, &c.sign)?;
    if let Some(threads) = a.threads.count() {
        options = options.threads(threads);
    }
    let counters = progress::counters(a.quiet.quiet);
    if let Some(counters) = &counters {
        options = options.progress(std::sync::Arc::clone(counters));
    }
    let before = std::fs::metadata(&a.archive).map(|m| m.len()).unwrap_or(0);
    let name = Quoted::path(&a.archive).to_string();
    let after = keys::with_key(&a.unlock, keys::Target::file(&a.archive, &name), |key| {
        // The key is read (a prompt is done) by now.
        progress::during(counters.as_ref(), || ArchiveUpdater::compact(&a.archive, key, options))
    })
    .with_context(|| format!("compacting {}", Quoted::path(&a.archive)))?;
    let what = Change {
        command: "compact",
        archive: &a.archive,
        json: a.format.json,
        dry_run: c.dry_run,
        quiet: a.quiet.quiet,
    };
    output::compacted(&what, before, after)?;
    Ok(Outcome::Success)
}

/// The policy `--keep-sessions`/`--keep-within` ask for and how to name
/// it (`--keep-sessions 5`), or `None` for the default (the last state);
/// one line and exit 2 for a bad value or both flags.
pub fn retention(keep: &RetentionArgs) -> Result<Option<(Retention, String)>> {
    let usage = |why: String| anyhow::Error::new(UsageError(why));
    match (&keep.keep_sessions, &keep.keep_within) {
        (Some(_), Some(_)) => {
            Err(usage("--keep-sessions and --keep-within cannot be given together: choose one policy".into()))
        }
        (Some(n), None) => {
            let bad =
                || usage(format!("invalid --keep-sessions '{n}': expected a number of states, 1 or more"));
            let n = n.trim().parse::<u64>().ok().and_then(NonZeroU64::new).ok_or_else(bad)?;
            Ok(Some((Retention::LastStates(n), format!("--keep-sessions {n}"))))
        }
        (None, Some(d)) => {
            let secs = parse_duration(d).map_err(|e| usage(format!("--keep-within: {e}")))?;
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let window = i128::from(secs) * 1_000_000_000;
            let since = (now.as_nanos() as i128 - window).clamp(i128::from(i64::MIN), i128::from(i64::MAX));
            Ok(Some((Retention::Since(since as i64), format!("--keep-within {}", d.trim()))))
        }
        (None, None) => Ok(None),
    }
}
