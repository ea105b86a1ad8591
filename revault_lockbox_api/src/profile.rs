//! Workload profiles: named presets, so callers pick a job rather than a
//! dozen knobs. What a profile bakes into an archive when it is created
//! ([`CreateTuning`]: page size, compression) is kept apart from how an
//! archive is read ([`ReadTuning`]: threads, read-ahead, cache), which any
//! reader may choose afresh.

use std::num::NonZeroUsize;

use crate::error::{Error, Result};

/// What the archive is being used for. Each preset tunes the same knobs;
/// none of them weakens the cryptography.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WorkloadProfile {
    /// 1 MiB pages (4 MiB for runs of small files), zstd level 3, all
    /// cores: a good ratio at high speed.
    #[default]
    Balanced,
    /// Importing a lot of data fast: 4 MiB pages, zstd level 1, a deeper
    /// queue of pages in flight. Larger archives than `Balanced` on text.
    BulkImport,
    /// Extracting many files: deep read-ahead and a large page cache when
    /// reading; creates like `Balanced`.
    ExtractMany,
    /// Reading single files from large archives: 64 KiB pages, so that one
    /// small read touches little data (costs some ratio), and a cache of
    /// recently read pages when reading.
    RandomRead,
    /// Smallest archives: 8 MiB pages, zstd level 19. Creating is slow.
    Archival,
}

/// The zstd levels a [`CreateTuning`] accepts.
pub fn zstd_levels() -> std::ops::RangeInclusive<i32> {
    zstd::compression_level_range()
}

/// The recovery record of the `archival` preset, in percent.
const ARCHIVAL_RECOVERY_PERCENT: u8 = 5;

/// How an archive is written: page size and level are baked into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CreateTuning {
    /// Plaintext bytes per data page that holds part of a large file (half
    /// a page or more).
    pub page_size: usize,
    /// Plaintext bytes per data page that holds only smaller files: pages of
    /// a run of small files compress closer to one zstd stream, at the cost
    /// of opening more bytes to read one of them. At least `page_size`.
    pub small_files_page_size: usize,
    /// zstd level for data pages.
    pub zstd_level: i32,
    /// Worker threads compressing and sealing pages.
    pub threads: usize,
    /// Pages queued or being sealed at once; bounds memory to about
    /// `pages_in_flight * small_files_page_size * 2`.
    pub pages_in_flight: usize,
    /// The percentage of the recovery record each session ends with
    /// (FORMAT.md §3.12, docs/RECOVERY.md); 0: none.
    pub recovery_percent: u8,
}

/// How an archive is read; chosen by each reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadTuning {
    /// Worker threads opening pages and index nodes. An extraction or an
    /// export opens data pages on one worker more when this is 2 or more:
    /// while it writes files or its stream, a worker waiting for its turn
    /// at a file's hash uses no core, and the spare keeps opening.
    pub threads: usize,
    /// Pages (and index nodes) read ahead and being opened at once; a
    /// data page over 1 MiB counts as its size in MiB.
    pub pages_in_flight: usize,
    /// Opened pages kept for random reads.
    pub page_cache: usize,
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
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

    /// The write knobs this preset sets on this machine.
    pub fn create_tuning(self) -> CreateTuning {
        self.create_tuning_for(cores())
    }

    /// The write knobs this preset sets for `threads` worker threads: the
    /// pages in flight follow the threads.
    pub fn create_tuning_for(self, threads: usize) -> CreateTuning {
        let base = CreateTuning {
            page_size: 1 << 20,
            small_files_page_size: 4 << 20,
            zstd_level: 3,
            threads,
            pages_in_flight: 2 * threads + 2,
            recovery_percent: 0,
        };
        match self {
            WorkloadProfile::Balanced | WorkloadProfile::ExtractMany => base,
            WorkloadProfile::BulkImport => {
                CreateTuning { page_size: 4 << 20, zstd_level: 1, pages_in_flight: 3 * threads + 2, ..base }
            }
            WorkloadProfile::RandomRead => CreateTuning {
                page_size: 64 << 10,
                small_files_page_size: 64 << 10,
                pages_in_flight: 8 * threads,
                ..base
            },
            WorkloadProfile::Archival => {
                // Kept for years: parity against the bit rot of its medium.
                CreateTuning {
                    page_size: 8 << 20,
                    small_files_page_size: 8 << 20,
                    zstd_level: 19,
                    recovery_percent: ARCHIVAL_RECOVERY_PERCENT,
                    ..base
                }
            }
        }
    }

    /// The read knobs this preset sets on this machine.
    pub fn read_tuning(self) -> ReadTuning {
        self.read_tuning_for(cores())
    }

    /// The read knobs this preset sets for `threads` worker threads: the
    /// pages in flight follow the threads.
    pub fn read_tuning_for(self, threads: usize) -> ReadTuning {
        let base = ReadTuning { threads, pages_in_flight: 2 * threads + 2, page_cache: 4 };
        match self {
            WorkloadProfile::Balanced | WorkloadProfile::Archival => base,
            WorkloadProfile::BulkImport => ReadTuning { pages_in_flight: 3 * threads + 2, ..base },
            WorkloadProfile::ExtractMany => {
                ReadTuning { pages_in_flight: 4 * threads + 4, page_cache: 16, ..base }
            }
            WorkloadProfile::RandomRead => {
                ReadTuning { pages_in_flight: 8 * threads, page_cache: 64, ..base }
            }
        }
    }
}

impl CreateTuning {
    /// Checks knobs a caller may have overridden.
    pub(crate) fn validate(&self) -> Result<()> {
        let page_ok = (4096..=crate::format::MAX_PAGE_PLAIN_LEN as usize).contains(&self.page_size)
            && (self.page_size..=crate::format::MAX_PAGE_PLAIN_LEN as usize)
                .contains(&self.small_files_page_size);
        if !page_ok
            || !zstd_levels().contains(&self.zstd_level)
            || self.threads == 0
            || self.pages_in_flight == 0
        {
            return Err(Error::InvalidTuning {
                page_size: self.page_size,
                small_files_page_size: self.small_files_page_size,
                zstd_level: self.zstd_level,
                zstd_levels: zstd_levels(),
                threads: self.threads,
                pages_in_flight: self.pages_in_flight,
            });
        }
        if self.recovery_percent > crate::format::MAX_PERCENT {
            return Err(Error::InvalidRecovery { percent: self.recovery_percent });
        }
        Ok(())
    }
}

impl ReadTuning {
    /// Checks knobs a caller may have overridden.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.threads == 0 || self.pages_in_flight == 0 {
            return Err(Error::InvalidReadTuning {
                threads: self.threads,
                pages_in_flight: self.pages_in_flight,
            });
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
            p.create_tuning().validate().unwrap();
            p.read_tuning().validate().unwrap();
            assert_eq!(WorkloadProfile::from_name(p.name()), Some(p));
        }
        assert_eq!(WorkloadProfile::from_name("fast"), None);
    }

    #[test]
    fn fewer_threads_hold_fewer_pages_in_flight() {
        use crate::archive::OpenOptions;
        use crate::session::CreateOptions;
        for (threads, create, read) in [(1, 4, 4), (3, 8, 8), (64, 130, 130)] {
            let options = CreateOptions::new().threads(threads);
            assert_eq!((options.tuning().threads, options.tuning().pages_in_flight), (threads, create));
            let options = OpenOptions::new().threads(threads);
            assert_eq!((options.tuning.threads, options.tuning.pages_in_flight), (threads, read));
        }
        // The profile's ratio, whichever profile; an explicit count after
        // the threads stands.
        let random = CreateOptions::new().profile(WorkloadProfile::RandomRead).threads(2);
        assert_eq!(random.tuning().pages_in_flight, 16);
        let open = OpenOptions::new().profile(WorkloadProfile::ExtractMany).threads(1).pages_in_flight(3);
        assert_eq!(open.tuning.pages_in_flight, 3);
        let extract_many = OpenOptions::new().profile(WorkloadProfile::ExtractMany).threads(2);
        assert_eq!(extract_many.tuning.pages_in_flight, 12);
    }
}
