//! Writing corpora to disk: single files and trees.
//!
//! Everything is streamed through one reusable 1 MiB buffer, so memory
//! stays bounded whatever the corpus size. All choices (names, sizes,
//! kinds, modes, mtimes, link targets) come from one seeded [`Rng`] drawn
//! in a fixed order; each file's content has its own derived seed.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::{self, File, FileTimes, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::rng::derive_seed;
use crate::text::{Flavor, WORDS};
use crate::{RandomReader, Rng, TextReader};

/// Files in `small-tree` at size factor 1.0.
pub(crate) const SMALL_TREE_FILES: u64 = 2000;
/// Mean file size in `small-tree` (sizes are uniform in 512..=1536).
pub(crate) const SMALL_TREE_MEAN_SIZE: u64 = 1024;
const SMALL_TREE_DIRS: u64 = 32;

/// Files in `scale-many-files` at size factor 1.0.
pub(crate) const MANY_FILES_COUNT: u64 = 1_000_000;
/// Mean file size in `scale-many-files` (sizes are uniform in 0..=256).
pub(crate) const MANY_FILES_MEAN_SIZE: u64 = 128;
const MANY_FILES_PER_DIR: u64 = 1000;

/// Trees never shrink below this many regular files.
const MIN_TREE_FILES: u64 = 8;

/// Copy buffer size: large enough for full-speed writes.
const BUF_SIZE: usize = 1 << 20;

/// Region length of the huge single files at full size.
const HUGE_REGION: u64 = 8 << 20;

/// Seeded mtimes fall in 2020-01-01 .. 2025-01-01 (UTC).
const MTIME_BASE: u64 = 1_577_836_800;
const MTIME_SPAN: u64 = 5 * 365 * 86_400;

/// Counts reported in a [`crate::Corpus`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    pub(crate) logical_bytes: u64,
    pub(crate) files: u64,
}

/// The reusable copy buffer.
pub(crate) struct Sink {
    buf: Vec<u8>,
}

impl Sink {
    pub(crate) fn new() -> Self {
        Sink { buf: vec![0; BUF_SIZE] }
    }
}

/// Copies all of `reader` into `out` through `buf`; returns the byte count.
pub(crate) fn copy_through(reader: &mut dyn Read, out: &mut dyn Write, buf: &mut [u8]) -> io::Result<u64> {
    let mut total = 0;
    loop {
        let n = match reader.read(buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        out.write_all(&buf[..n])?;
        total += n as u64;
    }
}

/// Adds the path to an I/O error, keeping its kind.
pub(crate) fn at(path: &Path) -> impl FnOnce(io::Error) -> io::Error + '_ {
    move |e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Creates `path` (it must not exist) and streams `reader` into it.
pub(crate) fn create_from(path: &Path, reader: &mut dyn Read, buf: &mut [u8]) -> io::Result<File> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path).map_err(at(path))?;
    copy_through(reader, &mut file, buf).map_err(at(path))?;
    Ok(file)
}

/// A seeded time in [`MTIME_BASE`] + [`MTIME_SPAN`], with nanoseconds.
fn seeded_time(rng: &mut Rng) -> SystemTime {
    let secs = MTIME_BASE + rng.below(MTIME_SPAN);
    let nanos = rng.below(1_000_000_000) as u32;
    SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
}

fn set_meta(file: &File, mode: u32, time: SystemTime) -> io::Result<()> {
    file.set_permissions(Permissions::from_mode(mode))?;
    file.set_times(FileTimes::new().set_accessed(time).set_modified(time))
}

/// What a regular file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    Text(Flavor),
    Random,
}

fn write_content(
    path: &Path,
    content: Content,
    seed: u64,
    len: u64,
    mode: u32,
    time: SystemTime,
    sink: &mut Sink,
) -> io::Result<()> {
    let file = match content {
        Content::Text(flavor) => {
            create_from(path, &mut TextReader::with_flavor(seed, len, flavor), &mut sink.buf)?
        }
        Content::Random => create_from(path, &mut RandomReader::new(seed, len), &mut sink.buf)?,
    };
    set_meta(&file, mode, time).map_err(at(path))
}

pub(crate) fn single_text(path: &Path, seed: u64, len: u64, sink: &mut Sink) -> io::Result<Stats> {
    single(path, seed, len, Content::Text(Flavor::Mixed), sink)
}

pub(crate) fn single_random(path: &Path, seed: u64, len: u64, sink: &mut Sink) -> io::Result<Stats> {
    single(path, seed, len, Content::Random, sink)
}

fn single(path: &Path, seed: u64, len: u64, content: Content, sink: &mut Sink) -> io::Result<Stats> {
    let mut rng = Rng::new(seed);
    let time = seeded_time(&mut rng);
    write_content(path, content, derive_seed(seed, 1), len, 0o644, time, sink)?;
    Ok(Stats { logical_bytes: len, files: 1 })
}

/// One file of alternating text and random regions (text first); regions
/// are 8 MiB, or a quarter of the file when that is smaller (at least
/// 64 KiB), so shrunken files still alternate.
pub(crate) fn single_huge(path: &Path, seed: u64, len: u64, sink: &mut Sink) -> io::Result<Stats> {
    let mut rng = Rng::new(seed);
    let time = seeded_time(&mut rng);
    let region = (len / 4).clamp(64 << 10, HUGE_REGION);
    let mut file = create_from(path, &mut io::empty(), &mut sink.buf)?;
    let mut written = 0;
    let mut index = 0;
    while written < len {
        let n = region.min(len - written);
        let region_seed = derive_seed(seed, index);
        written += if index % 2 == 0 {
            copy_through(&mut TextReader::new(region_seed, n), &mut file, &mut sink.buf).map_err(at(path))?
        } else {
            copy_through(&mut RandomReader::new(region_seed, n), &mut file, &mut sink.buf)
                .map_err(at(path))?
        };
        index += 1;
    }
    set_meta(&file, 0o644, time).map_err(at(path))?;
    Ok(Stats { logical_bytes: len, files: 1 })
}

/// Builds a tree under `top`, tracking names, dirs and counts.
struct Tree<'a> {
    top: PathBuf,
    seed: u64,
    rng: Rng,
    sink: &'a mut Sink,
    stats: Stats,
    /// Every directory made, relative to `top` (`""` is `top`), for mtimes.
    all_dirs: Vec<PathBuf>,
    /// Directories that receive generated files.
    dirs: Vec<PathBuf>,
    /// Every relative path in use.
    taken: HashSet<PathBuf>,
    /// Next content sub-stream.
    next_stream: u64,
}

impl<'a> Tree<'a> {
    fn new(top: &Path, seed: u64, sink: &'a mut Sink) -> io::Result<Self> {
        let mut tree = Tree {
            top: top.to_path_buf(),
            seed,
            rng: Rng::new(seed),
            sink,
            stats: Stats::default(),
            all_dirs: Vec::new(),
            dirs: Vec::new(),
            taken: HashSet::new(),
            next_stream: 0,
        };
        fs::create_dir(top).map_err(at(top))?;
        fs::set_permissions(top, Permissions::from_mode(0o755)).map_err(at(top))?;
        tree.all_dirs.push(PathBuf::new());
        tree.dirs.push(PathBuf::new());
        Ok(tree)
    }

    fn depth(rel: &Path) -> usize {
        rel.components().count()
    }

    /// Reserves `name` in `dir`, or `stem_2.ext`, `stem_3.ext`, ... if taken.
    fn unique(&mut self, dir: &Path, stem: &str, ext: &str) -> PathBuf {
        let dot = if ext.is_empty() { "" } else { "." };
        let mut candidate = dir.join(format!("{stem}{dot}{ext}"));
        let mut n = 2;
        while self.taken.contains(&candidate) {
            candidate = dir.join(format!("{stem}_{n}{dot}{ext}"));
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }

    fn mkdir(&mut self, rel: &Path, mode: u32) -> io::Result<()> {
        let path = self.top.join(rel);
        fs::create_dir(&path).map_err(at(&path))?;
        fs::set_permissions(&path, Permissions::from_mode(mode)).map_err(at(&path))?;
        self.all_dirs.push(rel.to_path_buf());
        Ok(())
    }

    fn dir_mode(&mut self) -> u32 {
        if self.rng.chance(1, 20) {
            0o750
        } else {
            0o755
        }
    }

    /// Writes a regular file with the next content stream and a seeded mtime.
    fn file(&mut self, rel: &Path, content: Content, len: u64, mode: u32) -> io::Result<()> {
        let time = seeded_time(&mut self.rng);
        let seed = derive_seed(self.seed, self.next_stream);
        self.next_stream += 1;
        write_content(&self.top.join(rel), content, seed, len, mode, time, self.sink)?;
        self.stats.logical_bytes += len;
        self.stats.files += 1;
        Ok(())
    }

    fn name_stem(&mut self) -> String {
        let mut stem = self.rng.pick(WORDS).to_string();
        if self.rng.chance(1, 3) {
            stem.push('_');
            stem.push_str(self.rng.pick(WORDS));
        }
        stem
    }

    fn random_dir(&mut self) -> PathBuf {
        let i = self.rng.below(self.dirs.len() as u64) as usize;
        self.dirs[i].clone()
    }

    /// Gives every directory its seeded mtime; run last, since adding
    /// entries changes a directory's mtime.
    fn finish(mut self) -> io::Result<Stats> {
        for rel in std::mem::take(&mut self.all_dirs) {
            let time = seeded_time(&mut self.rng);
            let path = self.top.join(&rel);
            File::open(&path)
                .and_then(|dir| dir.set_times(FileTimes::new().set_accessed(time).set_modified(time)))
                .map_err(at(&path))?;
        }
        Ok(self.stats)
    }
}

/// `small-tree`: `budget / 1024` files (at least [`MIN_TREE_FILES`]) of
/// 512..=1536 bytes, spread over up to 32 directories `dir-NN`, about 62 per
/// directory; nine in ten are text.
pub(crate) fn small_tree(top: &Path, seed: u64, budget: u64, sink: &mut Sink) -> io::Result<Stats> {
    let mut tree = Tree::new(top, seed, sink)?;
    let count = (budget / SMALL_TREE_MEAN_SIZE).max(MIN_TREE_FILES);
    let ndirs = count.saturating_mul(SMALL_TREE_DIRS).div_ceil(SMALL_TREE_FILES).clamp(1, SMALL_TREE_DIRS);
    for d in 0..ndirs {
        let mode = tree.dir_mode();
        tree.mkdir(Path::new(&format!("dir-{d:02}")), mode)?;
    }
    for i in 0..count {
        let dir = format!("dir-{:02}", i % ndirs);
        let len = 512 + tree.rng.below(1025);
        let (content, ext, mode) = match tree.rng.below(100) {
            0..=9 => (Content::Random, "bin", 0o644),
            10..=14 => (Content::Text(Flavor::Source), "sh", 0o755),
            15..=18 => (Content::Text(Flavor::Prose), "txt", 0o600),
            19..=49 => (Content::Text(Flavor::Source), "rs", 0o644),
            50..=79 => (Content::Text(Flavor::Prose), "md", 0o644),
            _ => (Content::Text(Flavor::Mixed), "txt", 0o644),
        };
        let rel = PathBuf::from(format!("{dir}/file-{i:04}.{ext}"));
        tree.file(&rel, content, len, mode)?;
    }
    tree.finish()
}

/// Media files to a directory in `media-1g`.
const MEDIA_PER_DIR: u64 = 16;

/// `media-1g`: incompressible files of 1 to 8 MiB (uniform), as photos,
/// video and already compressed archives are, 16 to a directory
/// `album-NNN`, until `budget` is spent (the last file takes what is left;
/// at least one file).
pub(crate) fn media(top: &Path, seed: u64, budget: u64, sink: &mut Sink) -> io::Result<Stats> {
    const MIB: u64 = 1 << 20;
    let mut tree = Tree::new(top, seed, sink)?;
    let (mut left, mut i) = (budget, 0u64);
    while left > 0 || i == 0 {
        let dir = format!("album-{:03}", i / MEDIA_PER_DIR);
        if i % MEDIA_PER_DIR == 0 {
            let mode = tree.dir_mode();
            tree.mkdir(Path::new(&dir), mode)?;
        }
        let len = (MIB + tree.rng.below(7 * MIB + 1)).min(left);
        let ext = ["jpg", "mp4", "zip", "flac"][tree.rng.below(4) as usize];
        tree.file(&PathBuf::from(format!("{dir}/media-{i:04}.{ext}")), Content::Random, len, 0o644)?;
        left -= len;
        i += 1;
    }
    tree.finish()
}

/// `scale-many-files`: `budget / 128` files (at least [`MIN_TREE_FILES`])
/// of 0..=256 bytes, 1,000 a directory `dNNNN/fNNN.txt`, all mode 0644.
/// Built for speed (a million entries): the files take consecutive slices
/// of one text stream, and no names are kept.
pub(crate) fn many_files(top: &Path, seed: u64, budget: u64) -> io::Result<Stats> {
    let mut sink = Sink::new();
    let mut tree = Tree::new(top, seed, &mut sink)?;
    let count = (budget / MANY_FILES_MEAN_SIZE).max(MIN_TREE_FILES);
    let mut text = TextReader::new(derive_seed(seed, 1), u64::MAX);
    let mut buf = [0u8; 256];
    for i in 0..count {
        let (d, f) = (i / MANY_FILES_PER_DIR, i % MANY_FILES_PER_DIR);
        let dir = PathBuf::from(format!("d{d:04}"));
        if f == 0 {
            tree.mkdir(&dir, 0o755)?;
        }
        let path = tree.top.join(dir.join(format!("f{f:03}.txt")));
        let len = tree.rng.below(257) as usize;
        let time = seeded_time(&mut tree.rng);
        text.read_exact(&mut buf[..len])?;
        let mut file = OpenOptions::new().write(true).create_new(true).open(&path).map_err(at(&path))?;
        file.write_all(&buf[..len]).map_err(at(&path))?;
        set_meta(&file, 0o644, time).map_err(at(&path))?;
        tree.stats.logical_bytes += len as u64;
        tree.stats.files += 1;
    }
    tree.finish()
}

/// A class of files in the mixed tree: its share of the byte budget, and
/// sizes `base + below(base)` with `base = lo << below(buckets)` (roughly
/// log-uniform from `lo` to `lo << buckets`, in integers only).
struct Class {
    share_pct: u64,
    lo: u64,
    buckets: u64,
    min_count: u64,
}

/// Source files, docs, configs: many, 128 B .. 32 KiB (mean about 6 KiB).
const SMALL: Class = Class { share_pct: 38, lo: 128, buckets: 8, min_count: MIN_TREE_FILES };
/// Bigger sources, logs, tables: 64 KiB .. 1 MiB.
const MEDIUM: Class = Class { share_pct: 25, lo: 64 << 10, buckets: 4, min_count: 1 };
/// A few multi-MiB logs, tables and documents: 2 .. 8 MiB.
const LARGE: Class = Class { share_pct: 23, lo: 2 << 20, buckets: 2, min_count: 1 };
/// Incompressible binaries: 32 KiB .. 8 MiB.
const BINARY: Class = Class { share_pct: 14, lo: 32 << 10, buckets: 8, min_count: 2 };

fn class_sizes(rng: &mut Rng, budget: u64, class: &Class) -> Vec<u64> {
    let share = budget / 100 * class.share_pct + budget % 100 * class.share_pct / 100;
    let first_cap = (share / class.min_count).max(1);
    let mut remaining = share;
    let mut sizes = Vec::new();
    while remaining > 0 || (sizes.len() as u64) < class.min_count {
        let base = class.lo << rng.below(class.buckets);
        let mut size = base + rng.below(base);
        size = if (sizes.len() as u64) < class.min_count { size.min(first_cap) } else { size.min(remaining) };
        remaining = remaining.saturating_sub(size);
        sizes.push(size);
    }
    sizes
}

/// Directory names at the top of every mixed tree.
const TOP_DIRS: &[&str] = &["src", "docs", "tests", "assets", "scripts", "vendor", "data", "examples"];
const EMPTY_FILE_NAMES: &[&str] = &["__init__.py", ".gitkeep", "EMPTY", ".keep", "placeholder.txt", "NOTICE"];
const EMPTY_DIR_NAMES: &[&str] = &["tmp", "cache", "out", "empty", "fixtures", "generated"];
const BINARY_EXTS: &[&str] = &["bin", "so", "png", "jpg", "gz", "zst", "o", "db", "woff2", ""];

/// The only directory (with its subdirectories) that directory symlinks
/// point to; no directory symlink is placed inside it.
const LINKED_DIRS: &str = "assets";

/// The deep chain is this many directories below `vendor` (depth 10).
const DEEP_CHAIN: usize = 9;

/// Picks flavor, extension and mode for a text file of a size class.
fn text_kind(rng: &mut Rng, class: &Class) -> (Flavor, &'static str, u32) {
    let roll = rng.below(100);
    let (flavor, ext) = if class.lo == SMALL.lo {
        match roll {
            0..=34 => {
                (Flavor::Source, rng.pick(&["rs", "rs", "rs", "c", "h", "go", "py", "js", "ts", "java"]))
            }
            35..=39 => (Flavor::Source, "sh"),
            40..=59 => (Flavor::Prose, rng.pick(&["md", "txt", "rst", "html"])),
            60..=74 => (Flavor::Mixed, rng.pick(&["md", "txt"])),
            75..=87 => (Flavor::Table, rng.pick(&["csv", "tsv"])),
            _ => (Flavor::Log, "log"),
        }
    } else if class.lo == MEDIUM.lo {
        match roll {
            0..=34 => (Flavor::Source, rng.pick(&["rs", "c", "py"])),
            35..=49 => (Flavor::Prose, "md"),
            50..=74 => (Flavor::Log, "log"),
            _ => (Flavor::Table, "csv"),
        }
    } else {
        match roll {
            0..=39 => (Flavor::Log, "log"),
            40..=69 => (Flavor::Table, "csv"),
            70..=84 => (Flavor::Prose, "txt"),
            _ => (Flavor::Mixed, "txt"),
        }
    };
    let mode = if ext == "sh" || (ext == "py" && rng.chance(1, 3)) {
        0o755
    } else if rng.chance(1, 40) {
        0o600
    } else {
        0o644
    };
    (flavor, ext, mode)
}

/// `mixed-tree` and `scale-mixed-*`: a source-like tree whose byte budget
/// is split 38/25/23/14 between small, medium and large text files and
/// binaries. File counts, not file sizes, grow with the budget (about 4,000
/// files per 64 MiB); the special entries are always present and links grow
/// slowly with the file count.
pub(crate) fn mixed_tree(top: &Path, seed: u64, budget: u64, sink: &mut Sink) -> io::Result<Stats> {
    let mut tree = Tree::new(top, seed, sink)?;

    let small = class_sizes(&mut tree.rng, budget, &SMALL);
    let medium = class_sizes(&mut tree.rng, budget, &MEDIUM);
    let large = class_sizes(&mut tree.rng, budget, &LARGE);
    let binary = class_sizes(&mut tree.rng, budget, &BINARY);
    let total_files = (small.len() + medium.len() + large.len() + binary.len()) as u64;

    // Directories: fixed top-level ones, then a random recursive tree of
    // about 40 files per directory.
    for name in TOP_DIRS {
        let rel = tree.unique(Path::new(""), name, "");
        let mode = tree.dir_mode();
        tree.mkdir(&rel, mode)?;
        tree.dirs.push(rel);
    }
    let ndirs = (total_files / 40).max(TOP_DIRS.len() as u64 + 4);
    while (tree.dirs.len() as u64) < ndirs {
        let mut parent = tree.random_dir();
        if Tree::depth(&parent) >= 8 {
            parent = PathBuf::new();
        }
        let name = tree.rng.pick(WORDS);
        let rel = tree.unique(&parent, name, "");
        let mode = tree.dir_mode();
        tree.mkdir(&rel, mode)?;
        tree.dirs.push(rel);
    }

    // Regular files.
    let readme = tree.unique(Path::new(""), "README", "md");
    tree.file(&readme, Content::Text(Flavor::Prose), 3000, 0o644)?;
    let mut small_files = Vec::with_capacity(small.len());
    for (class, sizes) in [(&SMALL, &small), (&MEDIUM, &medium), (&LARGE, &large)] {
        for &len in sizes.iter() {
            let (flavor, ext, mode) = text_kind(&mut tree.rng, class);
            let dir = tree.random_dir();
            let stem = tree.name_stem();
            let rel = tree.unique(&dir, &stem, ext);
            tree.file(&rel, Content::Text(flavor), len, mode)?;
            if class.lo == SMALL.lo {
                small_files.push(rel);
            }
        }
    }
    for &len in &binary {
        let ext = tree.rng.pick(BINARY_EXTS);
        let mode = if ext.is_empty() || ext == "so" { 0o755 } else { 0o644 };
        let dir = tree.random_dir();
        let stem = tree.name_stem();
        let rel = tree.unique(&dir, &stem, ext);
        tree.file(&rel, Content::Random, len, mode)?;
    }

    // A deep path: vendor/w1/.../w9/, with files half-way and at the bottom.
    let mut deep = PathBuf::from("vendor");
    for level in 1..=DEEP_CHAIN {
        let name = tree.rng.pick(WORDS);
        deep = tree.unique(&deep, name, "");
        tree.mkdir(&deep, 0o755)?;
        if level == DEEP_CHAIN / 2 || level == DEEP_CHAIN {
            let stem = tree.name_stem();
            let rel = tree.unique(&deep, &stem, "rs");
            let len = 200 + tree.rng.below(4000);
            tree.file(&rel, Content::Text(Flavor::Source), len, 0o644)?;
        }
    }

    // Names that trip up archivers: not UTF-8 (Latin-1 "café"), and
    // non-ASCII UTF-8 with spaces and parentheses.
    let latin1 = PathBuf::from("docs").join(OsStr::from_bytes(b"caf\xe9-menu.txt"));
    tree.taken.insert(latin1.clone());
    tree.file(&latin1, Content::Text(Flavor::Prose), 1500, 0o644)?;
    let fancy = tree.unique(Path::new("docs"), "r\u{e9}sum\u{e9} draft (final)", "md");
    tree.file(&fancy, Content::Text(Flavor::Prose), 2500, 0o644)?;

    // Empty files.
    for i in 0..4 + total_files / 500 {
        let name = EMPTY_FILE_NAMES[i as usize % EMPTY_FILE_NAMES.len()];
        let dir = tree.random_dir();
        let rel = tree.unique(&dir, name, "");
        tree.file(&rel, Content::Random, 0, 0o644)?;
    }

    // Empty directories (one private).
    for i in 0..3 + total_files / 4000 {
        let name = EMPTY_DIR_NAMES[i as usize % EMPTY_DIR_NAMES.len()];
        let dir = tree.random_dir();
        let rel = tree.unique(&dir, name, "");
        tree.mkdir(&rel, if i == 0 { 0o700 } else { 0o755 })?;
    }

    // Hard links: a second name for some small files, elsewhere.
    let mut linked = HashSet::new();
    for _ in 0..(2 + total_files / 2000).min(small_files.len() as u64 / 2) {
        let mut i = tree.rng.below(small_files.len() as u64) as usize;
        while !linked.insert(i) {
            i = tree.rng.below(small_files.len() as u64) as usize;
        }
        let src = small_files[i].clone();
        let dir = tree.random_dir();
        let stem = src.file_stem().and_then(OsStr::to_str).unwrap_or("file");
        let ext = src.extension().and_then(OsStr::to_str).unwrap_or("");
        let rel = tree.unique(&dir, &format!("{stem}-link"), ext);
        let link = tree.top.join(&rel);
        fs::hard_link(tree.top.join(&src), &link).map_err(at(&link))?;
        tree.stats.files += 1;
    }

    // Symlinks, all relative and inside the tree: one dangling, one to a
    // file in the same directory, then files and directories elsewhere.
    let symlinks = 4 + total_files / 1000;
    let assets_dirs: Vec<PathBuf> =
        tree.dirs.iter().filter(|d| d.starts_with(LINKED_DIRS)).cloned().collect();
    for i in 0..symlinks {
        let (rel, target) = match i {
            0 => {
                let dir = tree.random_dir();
                let rel = tree.unique(&dir, "dangling", "");
                (rel, PathBuf::from("no-such-dir/missing.txt"))
            }
            1 => {
                let file = small_files[tree.rng.below(small_files.len() as u64) as usize].clone();
                let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
                let rel = tree.unique(&dir, "current", "");
                (rel, PathBuf::from(file.file_name().unwrap_or_default()))
            }
            _ if i % 2 == 0 => {
                // Directory links point into `assets/` and live outside it,
                // and nothing links out of `assets/`: following links can
                // never loop.
                let mut from = tree.random_dir();
                if from.starts_with(LINKED_DIRS) {
                    from = PathBuf::new();
                }
                let targets = &assets_dirs;
                let target = targets[tree.rng.below(targets.len() as u64) as usize].clone();
                let name = target.file_name().and_then(OsStr::to_str).unwrap_or("dir");
                let rel = tree.unique(&from, &format!("{name}-dir-link"), "");
                (rel, up(Tree::depth(&from)).join(&target))
            }
            _ => {
                let from = tree.random_dir();
                let file = small_files[tree.rng.below(small_files.len() as u64) as usize].clone();
                let stem = file.file_stem().and_then(OsStr::to_str).unwrap_or("file");
                let rel = tree.unique(&from, &format!("link-to-{stem}"), "");
                (rel, up(Tree::depth(&from)).join(&file))
            }
        };
        let link = tree.top.join(&rel);
        symlink(&target, &link).map_err(at(&link))?;
        tree.stats.files += 1;
    }

    tree.finish()
}

/// `../` repeated `levels` times (empty for 0).
fn up(levels: usize) -> PathBuf {
    (0..levels).map(|_| "..").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_sizes_fill_the_share_and_respect_minimums() {
        let mut rng = Rng::new(1);
        let sizes = class_sizes(&mut rng, 64 << 20, &SMALL);
        let sum: u64 = sizes.iter().sum();
        assert_eq!(sum, (64 << 20) * 38 / 100);
        assert!(sizes.len() > 2000, "{}", sizes.len());
        assert!(sizes.iter().all(|&s| (1..=32 << 10).contains(&s)));

        let tiny = class_sizes(&mut rng, 1000, &BINARY);
        assert_eq!(tiny.len(), 2);
        assert!(tiny.iter().sum::<u64>() <= 140);

        let large = class_sizes(&mut rng, 64 << 20, &LARGE);
        assert!((2..=8).contains(&large.len()), "{large:?}");
    }

    #[test]
    fn up_builds_relative_prefixes() {
        assert_eq!(up(0), PathBuf::new());
        assert_eq!(up(2), PathBuf::from("../.."));
    }
}
