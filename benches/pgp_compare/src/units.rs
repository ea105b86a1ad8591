//! How sizes, times, memory and thread counts read in the tables and the
//! progress lines: one place, so a cell and a progress line of the same
//! number never disagree.

use crate::process::Sample;

/// `n` bytes in binary units with two decimals (`61.04 KiB`), or `n B`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.2} {}", UNITS[unit])
}

/// The median time and the range of `samples`, or `n/a`.
pub fn timing(samples: &[Sample]) -> String {
    spread(samples.iter().map(|s| s.secs).collect())
}

/// The median CPU time (user + system) and its range, or `n/a` unless
/// every run measured it.
pub fn cpu_timing(samples: &[Sample]) -> String {
    match samples.iter().map(|s| s.cpu_secs).collect::<Option<Vec<f64>>>() {
        Some(cpu) => spread(cpu),
        None => "n/a".into(),
    }
}

/// `median (min–max)` of `s`, or `n/a`.
fn spread(mut s: Vec<f64>) -> String {
    if s.is_empty() {
        return "n/a".into();
    }
    s.sort_by(f64::total_cmp);
    let (min, max) = (s[0], s[s.len() - 1]);
    if s.len() == 1 {
        return format!("{min:.3}");
    }
    format!("{:.3} ({min:.3}–{max:.3})", median(&s))
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The ratio of the median wall times, or `n/a`.
pub fn ratio(a: &[Sample], b: &[Sample]) -> String {
    let wall = |x: &[Sample]| x.iter().map(|s| Some(s.secs)).collect();
    median_ratio(wall(a), wall(b))
}

/// The ratio of the median CPU times, or `n/a`.
pub fn cpu_ratio(a: &[Sample], b: &[Sample]) -> String {
    let cpu = |x: &[Sample]| x.iter().map(|s| s.cpu_secs).collect();
    median_ratio(cpu(a), cpu(b))
}

fn median_ratio(a: Option<Vec<f64>>, b: Option<Vec<f64>>) -> String {
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        median(&v)
    };
    match (a, b) {
        (Some(a), Some(b)) if !a.is_empty() && !b.is_empty() => format!("{:.3}", med(a) / med(b)),
        _ => "n/a".into(),
    }
}

/// The largest peak RSS, if every run measured one.
pub fn max_rss(samples: &[Sample]) -> Option<u64> {
    samples.iter().map(|s| s.rss_kib).collect::<Option<Vec<u64>>>()?.into_iter().max()
}

/// The largest peak RSS in bytes, or `n/a`.
pub fn peak(samples: &[Sample]) -> String {
    max_rss(samples).map_or_else(|| "n/a".into(), |k| human_bytes(k * 1024))
}

/// The most threads over the runs.
pub fn threads(samples: &[Sample]) -> String {
    let max =
        samples.iter().map(|s| s.threads).collect::<Option<Vec<u32>>>().and_then(|t| t.into_iter().max());
    max.map_or_else(|| "n/a".into(), |n| n.to_string())
}
