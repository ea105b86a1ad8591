//! Workload profiles: named presets for page size, compression, threads and
//! caches, so callers pick a job rather than a dozen knobs.

use std::num::NonZeroUsize;

/// What the archive is being used for. Each preset tunes the same
/// [`Tuning`] knobs; none of them weakens the cryptography.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WorkloadProfile {
    /// 1 MiB pages, zstd level 3, all cores: a good ratio at high speed.
    #[default]
    Balanced,
    /// Importing a lot of data fast: 4 MiB pages, zstd level 1, all cores,
    /// a deeper queue of pages in flight. Larger archives than `Balanced`
    /// on text; best when the input is large and the time matters most.
    BulkImport,
    /// Extracting many files: large page cache and deep read-ahead; the
    /// same pages and level as `Balanced` when creating.
    ExtractMany,
    /// Reading single files from large archives: 64 KiB pages so that one
    /// small read touches little data, and a cache of recently read pages.
    /// Costs some compression ratio.
    RandomRead,
    /// Smallest archives: 8 MiB pages, zstd level 19. Creating is slow.
    Archival,
}

/// The zstd levels a [`Tuning`] accepts.
pub fn zstd_levels() -> std::ops::RangeInclusive<i32> {
    zstd::compression_level_range()
}

/// The knobs a profile sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Plaintext bytes per data page.
    pub page_size: usize,
    /// zstd level for data pages.
    pub zstd_level: i32,
    /// Worker threads for compression, sealing and opening pages.
    pub threads: usize,
    /// Pages queued or being processed at once; bounds memory to about
    /// `pages_in_flight * page_size * 2`.
    pub pages_in_flight: usize,
    /// Opened pages kept for random reads.
    pub page_cache: usize,
}

impl WorkloadProfile {
    /// Every preset, for listings and the CLI.
    pub const ALL: [WorkloadProfile; 5] = [
        WorkloadProfile::Balanced,
        WorkloadProfile::BulkImport,
        WorkloadProfile::ExtractMany,
        WorkloadProfile::RandomRead,
        WorkloadProfile::Archival,
    ];

    /// The preset's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadProfile::Balanced => "balanced",
            WorkloadProfile::BulkImport => "bulk-import",
            WorkloadProfile::ExtractMany => "extract-many",
            WorkloadProfile::RandomRead => "random-read",
            WorkloadProfile::Archival => "archival",
        }
    }

    /// Looks a preset up by [`name`](Self::name).
    pub fn from_name(name: &str) -> Option<WorkloadProfile> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The knobs this preset sets on this machine.
    pub fn tuning(self) -> Tuning {
        let threads = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let base = Tuning {
            page_size: 1 << 20,
            zstd_level: 3,
            threads,
            pages_in_flight: 2 * threads + 2,
            page_cache: 4,
        };
        match self {
            WorkloadProfile::Balanced => base,
            WorkloadProfile::BulkImport => {
                Tuning { page_size: 4 << 20, zstd_level: 1, pages_in_flight: 3 * threads + 2, ..base }
            }
            WorkloadProfile::ExtractMany => {
                Tuning { pages_in_flight: 4 * threads + 4, page_cache: 16, ..base }
            }
            WorkloadProfile::RandomRead => {
                Tuning { page_size: 64 << 10, pages_in_flight: 8 * threads, page_cache: 64, ..base }
            }
            WorkloadProfile::Archival => Tuning { page_size: 8 << 20, zstd_level: 19, ..base },
        }
    }
}

impl Tuning {
    /// Checks the knobs a caller may have overridden.
    pub(crate) fn validate(&self) -> crate::Result<()> {
        let page_ok = (4096..=crate::format::MAX_PAGE_PLAIN_LEN as usize).contains(&self.page_size);
        let level_ok = (zstd::compression_level_range()).contains(&self.zstd_level);
        if !page_ok || !level_ok || self.threads == 0 || self.pages_in_flight == 0 {
            return Err(crate::Error::InvalidInput(format!(
                "invalid tuning: page size {} (4 KiB..16 MiB), zstd level {} ({:?}), threads {}, pages in flight {}",
                self.page_size,
                self.zstd_level,
                zstd::compression_level_range(),
                self.threads,
                self.pages_in_flight
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid_and_named() {
        for p in WorkloadProfile::ALL {
            p.tuning().validate().unwrap();
            assert_eq!(WorkloadProfile::from_name(p.name()), Some(p));
        }
        assert_eq!(WorkloadProfile::from_name("fast"), None);
    }
}
