//! `--strip-components N`: stored names shortened before extraction, as
//! tar shortens them. Only the extraction's names change; NAMEs and
//! excludes match the stored ones.

use crate::error::Result;
use crate::format::{Entry, EntryKind};

/// `entries` with `n` leading components dropped from each name and each
/// hard link's target; entries with no component left are dropped.
pub(super) fn entries<'i>(
    entries: impl Iterator<Item = Result<Entry>> + 'i,
    n: usize,
) -> impl Iterator<Item = Result<Entry>> + 'i {
    entries.filter_map(move |e| match e {
        Ok(e) if n > 0 => strip_entry(e, n).map(Ok),
        other => Some(other),
    })
}

fn strip_entry(mut e: Entry, n: usize) -> Option<Entry> {
    e.path = strip(&e.path, n)?.to_vec();
    if let EntryKind::Hardlink { target, .. } = &mut e.kind {
        // A target stripped away names nothing extracted: the link becomes
        // a copy of its content (no stripped name is empty).
        *target = strip(target, n).map_or_else(Vec::new, <[u8]>::to_vec);
    }
    Some(e)
}

/// `path` without its first `n` components, `None` when nothing is left.
fn strip(path: &[u8], n: usize) -> Option<&[u8]> {
    let mut rest = path;
    for _ in 0..n {
        let slash = rest.iter().position(|&b| b == b'/')?;
        rest = &rest[slash + 1..];
    }
    (!rest.is_empty()).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::strip;

    #[test]
    fn leading_components_go_and_short_names_vanish() {
        assert_eq!(strip(b"a/b/c", 0), Some(&b"a/b/c"[..]));
        assert_eq!(strip(b"a/b/c", 1), Some(&b"b/c"[..]));
        assert_eq!(strip(b"a/b/c", 2), Some(&b"c"[..]));
        assert_eq!(strip(b"a/b/c", 3), None);
        assert_eq!(strip(b"a", 1), None);
    }
}
