//! `compact`: the archive rewritten without what later sessions replaced
//! or removed, and without the states the retention flags (`--keep-*`)
//! do not keep, beside the old one, synced and renamed over it; with `-n`,
//! the whole rewrite counted instead of written.

use std::num::NonZeroU64;

use anyhow::{Context, Result};
use revault_lockbox_api::update::{Period, Retention};
use revault_lockbox_api::{ArchiveUpdater, Quoted, UpdateOptions};

use super::{in_place, Outcome};
use crate::dates::{self, parse_duration};
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
        .retention(retention.map_or_else(Retention::latest, |(r, _)| r));
    let mut options = signing::update_options(options, &c.sign)?;
    if let Some(threads) = a.threads.count() {
        options = options.threads(threads);
    }
    if let Some(percent) = a.recovery.recovery {
        options = options.recovery(percent);
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

/// The policy the retention flags ask for and how to name it
/// (`--keep-sessions 5 --keep-daily 7`), or `None` for the default (the
/// last state); one line and exit 2 for a bad value.
pub fn retention(keep: &RetentionArgs) -> Result<Option<(Retention, String)>> {
    let rules = rules(keep)?;
    if rules.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = rules.iter().map(|(name, _)| name.as_str()).collect();
    let policy = rules.iter().fold(Retention::latest(), |policy, (_, rule)| rule.add_to(policy));
    Ok(Some((policy.zone(dates::local_zone()), names.join(" "))))
}

/// Each retention flag given alone, in the order of `--help`, with how to
/// name it: what `info` reports each rule's reclaim for.
pub fn each_rule(keep: &RetentionArgs) -> Result<Vec<(Retention, String)>> {
    let zone = dates::local_zone();
    Ok(rules(keep)?
        .into_iter()
        .map(|(name, rule)| (rule.add_to(Retention::latest()).zone(zone.clone()), name))
        .collect())
}

/// One retention flag's rule.
#[derive(Clone, Copy)]
enum Rule {
    Last(NonZeroU64),
    Since(i64),
    Per(Period, NonZeroU64),
}

impl Rule {
    fn add_to(self, policy: Retention) -> Retention {
        match self {
            Rule::Last(n) => policy.last_states(n),
            Rule::Since(at_ns) => policy.since(at_ns),
            Rule::Per(period, n) => policy.per(period, n),
        }
    }
}

fn rules(keep: &RetentionArgs) -> Result<Vec<(String, Rule)>> {
    let usage = |why: String| anyhow::Error::new(UsageError(why));
    let count = |flag: &str, n: &str, what: &str| {
        let bad = || usage(format!("invalid {flag} '{n}': expected a number of {what}, 1 or more"));
        n.trim().parse::<u64>().ok().and_then(NonZeroU64::new).ok_or_else(bad)
    };
    let mut rules = Vec::new();
    if let Some(n) = &keep.keep_sessions {
        let n = count("--keep-sessions", n, "states")?;
        rules.push((format!("--keep-sessions {n}"), Rule::Last(n)));
    }
    if let Some(d) = &keep.keep_within {
        let secs = parse_duration(d).map_err(|e| usage(format!("--keep-within: {e}")))?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let window = i128::from(secs) * 1_000_000_000;
        let since = (now.as_nanos() as i128 - window).clamp(i128::from(i64::MIN), i128::from(i64::MAX));
        rules.push((format!("--keep-within {}", d.trim()), Rule::Since(since as i64)));
    }
    for ((flag, n), period) in keep.calendar().into_iter().zip(Period::ALL) {
        if let Some(n) = n {
            let n = count(flag, n, &format!("{}s", period_name(period)))?;
            rules.push((format!("{flag} {n}"), Rule::Per(period, n)));
        }
    }
    Ok(rules)
}

fn period_name(period: Period) -> &'static str {
    match period {
        Period::Hour => "hour",
        Period::Day => "day",
        Period::Week => "week",
        Period::Month => "month",
        Period::Year => "year",
    }
}
