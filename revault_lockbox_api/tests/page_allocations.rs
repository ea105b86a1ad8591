//! The page pipelines allocate nothing per page in their steady state:
//! page buffers are recycled, jobs travel by value, associated data is a
//! fixed array. A counting global allocator (this test binary's alone)
//! compares archives of one file that differ only in their number of
//! pages: writing them, and reading them back (verify, extract).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};

use revault_lockbox_api::create::Metadata;
use revault_lockbox_api::keys::KeyFile;
use revault_lockbox_api::{Archive, ArchiveWriter, CreateOptions, ExtractOptions, KeySet};

struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const PAGE_SIZE: usize = 64 << 10;

/// The counter is global: tests that read it run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Content made on the fly, without allocating: text-like (zstd at work)
/// or pseudo-random (stored raw).
struct Generated {
    left: u64,
    random: bool,
    state: u64,
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.left as usize);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            *b = if self.random {
                self.state as u8
            } else {
                b"lockbox pages "[(self.state % 14) as usize] + (i % 3) as u8
            };
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Writes an archive of one file of `pages` pages to `out`; returns the
/// allocations made meanwhile and the output.
fn write_archive<W: io::Write>(out: W, pages: u64, random: bool, keys: &KeySet) -> (u64, W) {
    let size = pages * PAGE_SIZE as u64;
    let options = CreateOptions::new().page_size(PAGE_SIZE).threads(2);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut writer = ArchiveWriter::new(out, keys.clone(), options).unwrap();
    let content = Generated { left: size, random, state: 0x9e37_79b9_7f4a_7c15 };
    let meta = Metadata::new(0o644, 0, 0, 0, 0);
    assert_eq!(writer.add_file("big", &meta, size, content).unwrap(), size);
    let out = writer.finish().unwrap();
    (ALLOCATIONS.load(Ordering::Relaxed) - before, out)
}

/// Allocations made while writing an archive of one file of `pages` pages.
fn allocations_for(pages: u64, random: bool, keys: &KeySet) -> u64 {
    write_archive(io::sink(), pages, random, keys).0
}

/// Allocations made while verifying, then extracting (without syncing),
/// an archive of one file of `pages` pages.
fn read_allocations_for(pages: u64, random: bool, key: &KeyFile) -> (u64, u64) {
    let keys = KeySet::new().key_file(key);
    let (_, bytes) = write_archive(Vec::new(), pages, random, &keys);
    let archive = Archive::open(io::Cursor::new(bytes), key).unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    assert!(archive.verify().unwrap().is_ok());
    let verify = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let dest = tempfile::tempdir().unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    archive.extract(dest.path(), &ExtractOptions::new().sync(false)).unwrap();
    let extract = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(std::fs::metadata(dest.path().join("big")).unwrap().len(), pages * PAGE_SIZE as u64);
    (verify, extract)
}

#[test]
fn no_allocation_per_page_when_reading() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let key = KeyFile::generate().unwrap();
    for random in [false, true] {
        let (verify_small, extract_small) = read_allocations_for(200, random, &key);
        let (verify_large, extract_large) = read_allocations_for(1000, random, &key);
        let kind = if random { "random" } else { "text" };
        for (what, small, large) in
            [("verify", verify_small, verify_large), ("extract", extract_small, extract_large)]
        {
            assert!(
                large.saturating_sub(small) < 800 / 20,
                "{what}, {kind} content: {small} allocations for 200 pages, {large} for 1000"
            );
        }
    }
}

#[test]
fn no_allocation_per_page_in_the_steady_state() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A key file: no KDF, so the counts are the pipeline's.
    let keys = KeySet::new().key_file(&KeyFile::generate().unwrap());
    for random in [false, true] {
        let small = allocations_for(200, random, &keys);
        let large = allocations_for(1000, random, &keys);
        let extra_pages = 800;
        // The 800 extra pages may cost a few allocations (page records grow
        // by doubling, a page-table leaf every ~2,900 pages), never one each.
        assert!(
            large.saturating_sub(small) < extra_pages / 20,
            "{} content: {small} allocations for 200 pages, {large} for 1000",
            if random { "random" } else { "text" }
        );
    }
}
