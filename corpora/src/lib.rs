//! Deterministic, seeded corpora for benchmarks and tests.
//!
//! The benchmark harness, the criterion benches and the tests must all
//! measure the same bytes, on every machine and in every future version, or
//! their numbers cannot be compared. So every corpus here is a pure function
//! of a seed (or a scenario name) and a size:
//!
//! - [`Rng`]: xoshiro256** written out in this crate (not `rand`, whose
//!   streams may change between versions), pinned by known-answer tests.
//! - [`TextReader`] and [`RandomReader`]: `io::Read` streams of text that
//!   compresses like prose and source, and of incompressible bytes.
//! - [`scenarios`]: the named corpora the benchmarks publish numbers for,
//!   generated on disk by [`Scenario::generate`].
//!
//! Generation streams through a 1 MiB buffer and never holds a whole file
//! in memory; a tree keeps only its names (about 17 MiB of memory for the
//! 68,000 entries of `scale-mixed-1g`). Only Unix is supported (trees use symlinks, modes and
//! non-UTF-8 names).
//!
//! ```no_run
//! let scenario = corpora::find("mixed-tree").unwrap();
//! let corpus = scenario.generate(std::path::Path::new("/tmp/corpus"), 0.01)?;
//! println!("{} files, {} bytes", corpus.files, corpus.logical_bytes);
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::io;
use std::path::Path;

mod random;
mod rng;
mod scenario;
mod text;
mod tree;

pub use random::RandomReader;
pub use rng::Rng;
pub use scenario::{find, scenarios, Corpus, Scenario, Shape};
pub use text::TextReader;

/// Writes `len` bytes of [`TextReader`] text from `seed` to a new file.
///
/// # Errors
///
/// Fails if `path` already exists (it is created with `create_new`) or on
/// any write error.
pub fn write_text_file(path: &Path, seed: u64, len: u64) -> io::Result<()> {
    write_new(path, &mut TextReader::new(seed, len), len)
}

/// Writes `len` incompressible bytes ([`RandomReader`]) from `seed` to a
/// new file.
///
/// # Errors
///
/// Fails if `path` already exists (it is created with `create_new`) or on
/// any write error.
pub fn write_random_file(path: &Path, seed: u64, len: u64) -> io::Result<()> {
    write_new(path, &mut RandomReader::new(seed, len), len)
}

fn write_new(path: &Path, reader: &mut dyn io::Read, len: u64) -> io::Result<()> {
    let mut buf = vec![0; len.clamp(1, 1 << 20) as usize];
    tree::create_from(path, reader, &mut buf)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::SystemTime;

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!("corpora-test-{}-{tag}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&path);
            TempDir(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn fnv1a(data: &[u8]) -> u64 {
        data.iter()
            .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
    }

    /// Every entry under `root`, sorted, with its kind, size, mode, mtime
    /// (seconds.nanoseconds), link target and content hash: a fingerprint
    /// of a generated tree in a format that does not depend on `Debug`.
    fn fingerprint(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let meta = fs::symlink_metadata(&path).unwrap();
                let rel = path.strip_prefix(root).unwrap().as_os_str().as_bytes();
                let rel = rel.escape_ascii();
                let mode = meta.mode() & 0o7777;
                let line = if meta.file_type().is_symlink() {
                    let target = fs::read_link(&path).unwrap();
                    format!("L {rel} -> {}", target.as_os_str().as_bytes().escape_ascii())
                } else {
                    let mtime = format!("{}.{:09}", meta.mtime(), meta.mtime_nsec());
                    if meta.is_dir() {
                        stack.push(path.clone());
                        format!("D {rel} {mode:o} {mtime}")
                    } else {
                        let data = fs::read(&path).unwrap();
                        let sum = fnv1a(&data);
                        format!("F {rel} {} {mode:o} {mtime} {sum:016x}", data.len())
                    }
                };
                out.push(line);
            }
        }
        out.sort();
        out
    }

    struct Census {
        regular: u64,
        bytes: u64,
        symlinks: u64,
        dangling: u64,
        dir_symlinks: u64,
        hard_linked: u64,
        empty_files: u64,
        empty_dirs: u64,
        max_depth: usize,
        non_utf8: u64,
        modes: Vec<u32>,
    }

    fn census(top: &Path) -> Census {
        let mut c = Census {
            regular: 0,
            bytes: 0,
            symlinks: 0,
            dangling: 0,
            dir_symlinks: 0,
            hard_linked: 0,
            empty_files: 0,
            empty_dirs: 0,
            max_depth: 0,
            non_utf8: 0,
            modes: Vec::new(),
        };
        let mut inodes = std::collections::HashSet::new();
        let mut stack = vec![top.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let mut entries = 0;
            for entry in fs::read_dir(&dir).unwrap() {
                entries += 1;
                let entry = entry.unwrap();
                let path = entry.path();
                let depth = path.strip_prefix(top).unwrap().components().count();
                c.max_depth = c.max_depth.max(depth);
                if entry.file_name().to_str().is_none() {
                    c.non_utf8 += 1;
                }
                let meta = fs::symlink_metadata(&path).unwrap();
                if meta.file_type().is_symlink() {
                    c.symlinks += 1;
                    let target = fs::read_link(&path).unwrap();
                    assert!(target.is_relative(), "{path:?} -> {target:?}");
                    match fs::metadata(&path) {
                        Err(_) => c.dangling += 1,
                        Ok(m) if m.is_dir() => c.dir_symlinks += 1,
                        Ok(_) => {}
                    }
                    // Resolves inside the tree.
                    if let Ok(real) = fs::canonicalize(&path) {
                        assert!(real.starts_with(fs::canonicalize(top).unwrap()), "{path:?}");
                    }
                } else if meta.is_dir() {
                    stack.push(path);
                } else {
                    c.regular += 1;
                    c.modes.push(meta.mode() & 0o7777);
                    if meta.nlink() > 1 {
                        c.hard_linked += 1;
                    }
                    if meta.len() == 0 {
                        c.empty_files += 1;
                    }
                    if inodes.insert(meta.ino()) {
                        c.bytes += meta.len();
                    }
                }
            }
            if entries == 0 {
                c.empty_dirs += 1;
            }
        }
        c
    }

    /// Walks `dir` following symlinks; panics if that goes deeper than
    /// `limit` (a symlink loop).
    fn walk_following_links(dir: &Path, depth: usize, limit: usize) -> u64 {
        assert!(depth < limit, "symlink loop at {dir:?}");
        let mut entries = 0;
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            entries += 1;
            if fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                entries += walk_following_links(&path, depth + 1, limit);
            }
        }
        entries
    }

    #[test]
    fn write_files_have_exact_contents() {
        let tmp = TempDir::new("write");
        fs::create_dir(&tmp.0).unwrap();
        let text = tmp.0.join("t.txt");
        write_text_file(&text, 5, 12_345).unwrap();
        let mut expect = Vec::new();
        io::Read::read_to_end(&mut TextReader::new(5, 12_345), &mut expect).unwrap();
        assert_eq!(fs::read(&text).unwrap(), expect);

        let random = tmp.0.join("r.bin");
        write_random_file(&random, 5, 3 << 20).unwrap();
        let data = fs::read(&random).unwrap();
        assert_eq!(data.len(), 3 << 20);
        let mut expect = vec![0; 3 << 20];
        Rng::new(5).fill(&mut expect);
        assert!(data == expect);

        let empty = tmp.0.join("e");
        write_random_file(&empty, 5, 0).unwrap();
        assert_eq!(fs::metadata(&empty).unwrap().len(), 0);

        let err = write_text_file(&text, 5, 10).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
    }

    #[test]
    fn mixed_tree_has_every_kind_of_entry() {
        let tmp = TempDir::new("mixed");
        let corpus = find("mixed-tree").unwrap().generate(&tmp.0, 0.02).unwrap();
        assert_eq!(corpus.root, tmp.0);
        assert_eq!(corpus.inputs, [PathBuf::from("mixed-tree")]);
        let top = tmp.0.join("mixed-tree");
        let c = census(&top);

        let target = (64u64 << 20) / 50;
        assert!(
            corpus.logical_bytes >= target && corpus.logical_bytes < target + target / 20,
            "{} bytes",
            corpus.logical_bytes
        );
        assert_eq!(c.bytes, corpus.logical_bytes);
        assert_eq!(c.regular + c.symlinks, corpus.files);
        assert!(c.regular >= 40, "{} regular files", c.regular);
        assert!(c.symlinks >= 4 && c.dangling == 1 && c.dir_symlinks >= 1);
        assert!(c.hard_linked >= 4, "{} hard-linked names", c.hard_linked);
        assert!(c.empty_files >= 4 && c.empty_dirs >= 3);
        assert!(c.max_depth >= 9, "depth {}", c.max_depth);
        assert!(walk_following_links(&top, 0, 30) > corpus.files);
        assert_eq!(c.non_utf8, 1);
        assert!(top.join("docs").join(std::ffi::OsStr::from_bytes(b"caf\xe9-menu.txt")).is_file());
        for mode in [0o644, 0o755, 0o600] {
            assert!(c.modes.contains(&mode), "no {mode:o} in {:?}", c.modes);
        }
        assert!(c.modes.iter().filter(|&&m| m == 0o644).count() * 2 > c.modes.len());

        // Mtimes are seeded, not "now".
        let meta = fs::metadata(top.join("README.md")).unwrap();
        let year_2025 = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_735_689_600);
        assert!(meta.modified().unwrap() < year_2025);
        assert!(fs::metadata(&top).unwrap().modified().unwrap() < year_2025);
    }

    #[test]
    fn generation_is_deterministic_and_scenarios_differ() {
        let a = TempDir::new("det-a");
        let b = TempDir::new("det-b");
        let scenario = find("mixed-tree").unwrap();
        scenario.generate(&a.0, 0.01).unwrap();
        scenario.generate(&b.0, 0.01).unwrap();
        let fa = fingerprint(&a.0);
        assert_eq!(fa, fingerprint(&b.0));
        assert!(fa.len() > 40);

        let c = TempDir::new("det-c");
        let mut other = scenario.clone();
        other.name = "scale-mixed-1g";
        other.logical_bytes = scenario.logical_bytes;
        other.generate(&c.0, 0.01).unwrap();
        let fc = fingerprint(&c.0.join("scale-mixed-1g"));
        let fa = fingerprint(&a.0.join("mixed-tree"));
        assert_ne!(fa, fc, "different scenarios use different seeds");
    }

    /// Pins the bytes of every generator: if this fails, published corpora
    /// changed and benchmark results are no longer comparable.
    #[test]
    fn golden_outputs_never_change() {
        let mut text = Vec::new();
        io::Read::read_to_end(&mut TextReader::new(1, 1 << 20), &mut text).unwrap();
        let mut random = Vec::new();
        io::Read::read_to_end(&mut RandomReader::new(1, 1 << 20), &mut random).unwrap();
        let tmp = TempDir::new("golden");
        find("mixed-tree").unwrap().generate(&tmp.0, 0.01).unwrap();
        let tree = fingerprint(&tmp.0).join("\n");
        let got = [fnv1a(&text), fnv1a(&random), fnv1a(tree.as_bytes())];
        assert_eq!(
            got,
            [0x60d9_58ac_a735_6bbf, 0x695e_2d9d_70ec_f2bd, 0x8a97_0773_38e4_43d6],
            "generated bytes changed"
        );
    }

    #[test]
    fn small_tree_file_counts() {
        let tmp = TempDir::new("small");
        let small = find("small-tree").unwrap();
        let corpus = small.generate(&tmp.0, 1.0).unwrap();
        assert_eq!(corpus.files, 2000);
        let top = tmp.0.join("small-tree");
        let dirs = fs::read_dir(&top).unwrap().count();
        assert_eq!(dirs, 32);
        let c = census(&top);
        assert_eq!(c.regular, 2000);
        assert_eq!(c.bytes, corpus.logical_bytes);
        let mean = corpus.logical_bytes / 2000;
        assert!((980..1070).contains(&mean), "mean size {mean}");

        let tiny = TempDir::new("small-tiny");
        let corpus = small.generate(&tiny.0, 0.01).unwrap();
        assert_eq!(corpus.files, 20);
        let c = census(&tiny.0.join("small-tree"));
        assert_eq!(c.regular, 20);
        for entry in fs::read_dir(tiny.0.join("small-tree")).unwrap() {
            let entry = entry.unwrap();
            for file in fs::read_dir(entry.path()).unwrap() {
                let len = file.unwrap().metadata().unwrap().len();
                assert!((512..=1536).contains(&len));
            }
        }
        let floor = TempDir::new("small-floor");
        assert_eq!(small.generate(&floor.0, 1e-9).unwrap().files, 8);
    }

    #[test]
    fn many_files_tree() {
        let tmp = TempDir::new("many");
        let many = find("scale-many-files").unwrap().with_files(2500).unwrap();
        let corpus = many.generate(&tmp.0, 1.0).unwrap();
        assert_eq!(corpus.files, 2500);
        let top = tmp.0.join("scale-many-files");
        assert_eq!(fs::read_dir(&top).unwrap().count(), 3);
        let c = census(&top);
        assert_eq!((c.regular, c.bytes, c.max_depth), (2500, corpus.logical_bytes, 2));
        assert!(c.empty_files >= 1 && c.modes.iter().all(|&m| m == 0o644));
        let mean = corpus.logical_bytes / 2500;
        assert!((118..138).contains(&mean), "mean size {mean}");
        // Deterministic.
        let again = TempDir::new("many-again");
        many.generate(&again.0, 1.0).unwrap();
        assert_eq!(fingerprint(&tmp.0), fingerprint(&again.0));
        // Files of the default size factor: a million.
        let full = find("scale-many-files").unwrap();
        assert_eq!(full.logical_bytes / 128, 1_000_000);
    }

    #[test]
    fn fixed_cost_is_one_empty_file() {
        let tmp = TempDir::new("fixed");
        let corpus = find("fixed-cost").unwrap().generate(&tmp.0, 0.01).unwrap();
        assert_eq!((corpus.files, corpus.logical_bytes), (1, 0));
        assert_eq!(fs::metadata(tmp.0.join(&corpus.inputs[0])).unwrap().len(), 0);
    }

    #[test]
    fn single_file_scenarios() {
        let tmp = TempDir::new("single");
        let corpus = find("large-text").unwrap().generate(&tmp.0, 0.01).unwrap();
        assert_eq!(corpus.inputs, [PathBuf::from("large-text.txt")]);
        let len = ((16u64 << 20) as f64 * 0.01) as u64;
        assert_eq!(corpus.logical_bytes, len);
        assert_eq!(corpus.files, 1);
        let path = tmp.0.join("large-text.txt");
        let meta = fs::metadata(&path).unwrap();
        assert_eq!(meta.len(), len);
        assert_eq!(meta.permissions().mode() & 0o777, 0o644);

        let tmp = TempDir::new("huge");
        let corpus = find("scale-huge-1g").unwrap().generate(&tmp.0, 0.001).unwrap();
        let data = fs::read(tmp.0.join(&corpus.inputs[0])).unwrap();
        assert_eq!(data.len() as u64, (1u64 << 30) / 1000);
        // Four regions: text, random, text, random.
        let q = data.len() / 4;
        let ratio = |part: &[u8]| zstd::bulk::compress(part, 3).unwrap().len() * 100 / part.len();
        assert!(ratio(&data[..q]) < 45);
        assert!(ratio(&data[q..2 * q]) > 98);
        assert!(ratio(&data[2 * q..3 * q]) < 45);
        assert!(ratio(&data[3 * q..]) > 98);
    }

    #[test]
    fn generate_rejects_bad_arguments() {
        let tmp = TempDir::new("bad");
        let s = find("large-text").unwrap();
        for factor in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = s.generate(&tmp.0, factor).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
        fs::create_dir_all(tmp.0.join("occupied")).unwrap();
        let err = s.generate(&tmp.0, 0.001).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert!(err.to_string().contains(&*tmp.0.to_string_lossy()), "{err}");

        let mut unknown = s.clone();
        unknown.name = "no-such-scenario";
        let fresh = TempDir::new("bad-name");
        let err = unknown.generate(&fresh.0, 1.0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
