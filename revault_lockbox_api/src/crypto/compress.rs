//! zstd for pages and index nodes: this thread's contexts, the probes that
//! skip incompressible pages, a window that covers the whole page, and
//! decompression to exactly the recorded length.

use std::cell::RefCell;

use crate::format::TAG_LEN;

/// Compression that saves less than 1/32 of a page is not worth the
/// decompression time: such pages are stored raw.
const MIN_SAVING_DIVISOR: usize = 32;
/// Bytes of each probe taken to detect incompressible pages.
const PROBE_LEN: usize = 4096;

thread_local! {
    /// One compression context per level used on this thread: creating
    /// one costs more than compressing a small probe.
    static COMPRESSORS: RefCell<Vec<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(Vec::new()) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    /// Where the probes compress to, reused so that a page costs no
    /// allocation.
    static PROBE_FRAME: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether three small probes (start, middle, end) of the page all fail to
/// compress at zstd's fastest level: random-looking data skips zstd
/// entirely, which costs a few microseconds instead of a full pass.
pub(crate) fn looks_incompressible(plain: &[u8]) -> bool {
    if plain.len() < 4 * PROBE_LEN {
        return false;
    }
    let starts = [0, plain.len() / 2 - PROBE_LEN / 2, plain.len() - PROBE_LEN];
    PROBE_FRAME.with(|frame| {
        let frame = &mut frame.borrow_mut();
        starts.iter().all(|&s| {
            let probe = &plain[s..s + PROBE_LEN];
            !zstd_compress_into(probe, 1, frame) || frame.len() + PROBE_LEN / MIN_SAVING_DIVISOR >= PROBE_LEN
        })
    })
}

/// Compresses `plain` into `frame` (replacing what it held) when that pays;
/// `false` leaves the page to be stored raw.
pub(super) fn compress_into(plain: &[u8], level: i32, frame: &mut Vec<u8>) -> bool {
    !looks_incompressible(plain)
        && zstd_compress_into(plain, level, frame)
        && frame.len() + plain.len() / MIN_SAVING_DIVISOR < plain.len()
}

/// Room for the sealed form of any `len`-byte plaintext, compressed or not.
pub(super) fn sealed_capacity(len: usize) -> usize {
    zstd::zstd_safe::compress_bound(len).max(len) + TAG_LEN
}

/// Compresses all of `plain` into `frame` with this thread's context for
/// `level`. `frame` grows only when it has less room than zstd's bound.
pub(super) fn zstd_compress_into(plain: &[u8], level: i32, frame: &mut Vec<u8>) -> bool {
    frame.clear();
    frame.reserve(sealed_capacity(plain.len()));
    COMPRESSORS.with(|cell| {
        let mut contexts = cell.borrow_mut();
        let i = match contexts.iter().position(|(l, _)| *l == level) {
            Some(i) => i,
            None => match zstd::bulk::Compressor::new(level) {
                Ok(context) => {
                    contexts.push((level, context));
                    contexts.len() - 1
                }
                Err(_) => return false,
            },
        };
        let context = &mut contexts[i].1;
        context.set_parameter(zstd::zstd_safe::CParameter::WindowLog(window_log(plain.len()))).is_ok()
            && context.compress_to_buffer(plain, frame).is_ok()
    })
}

/// The window that covers all of a `len`-byte input. zstd shrinks a
/// level's window to an input smaller than it, so this changes nothing
/// there; for larger inputs (level 3's window is 2 MiB, level 1's
/// 512 KiB) it lets a page of small files match across its whole length,
/// closer to one stream over them (docs/BENCHMARKS.md, "Larger pages for
/// runs of small files"). A decoder given the whole frame and an output
/// of its content size needs no window buffer of its own.
fn window_log(len: usize) -> u32 {
    const MIN_WINDOW_LOG: u32 = 10;
    len.next_power_of_two().trailing_zeros().max(MIN_WINDOW_LOG)
}

/// The bytes that start a zstd frame (RFC 8878 §3.1.1); a skippable
/// frame's differ.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// FORMAT.md §3.4's rule for a unit stored compressed: exactly one zstd
/// frame (not a skippable one), declaring a content size equal to the
/// unit's `plain_len`, and nothing after it. Checked from the frame's
/// header before anything is decompressed; `Err` says what is wrong.
pub(crate) fn check_form(frame: &[u8], len: usize) -> Result<(), &'static str> {
    if !frame.starts_with(&ZSTD_MAGIC) {
        return Err("it does not start with a zstd frame");
    }
    if !matches!(zstd::zstd_safe::find_frame_compressed_size(frame), Ok(n) if n == frame.len()) {
        return Err("it is not exactly one zstd frame");
    }
    if !matches!(zstd::zstd_safe::get_frame_content_size(frame), Ok(Some(n)) if n == len as u64) {
        return Err("its zstd frame does not declare its plain length");
    }
    Ok(())
}

/// What [`decompress_into`] and [`decompress`] say of a frame that
/// passes [`check_form`] and still does not give its length.
const WRONG_LENGTH: &str = "its zstd frame does not decompress to its plain length";

/// Decompresses exactly `len` bytes into `out` (replacing what it held);
/// `out` grows only when its capacity is below `len`.
pub(super) fn decompress_into(frame: &[u8], len: usize, out: &mut Vec<u8>) -> Result<(), &'static str> {
    check_form(frame, len)?;
    out.clear();
    out.reserve(len);
    DECOMPRESSOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            *cell = zstd::bulk::Decompressor::new().ok();
        }
        let Some(context) = cell.as_mut() else { return Err(WRONG_LENGTH) };
        // A frame that holds more than `len` fails or is refused.
        match context.decompress_to_buffer(frame, out) {
            Ok(n) if n == len => Ok(()),
            _ => Err(WRONG_LENGTH),
        }
    })
}

/// Decompresses exactly `len` bytes, never allocating more.
pub(crate) fn decompress(frame: &[u8], len: usize) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::new();
    decompress_into(frame, len, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `len` bytes from a xorshift generator, each mapped by `byte`.
    fn generated(seed: u64, len: usize, byte: impl Fn(u64) -> u8) -> Vec<u8> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                byte(state)
            })
            .collect()
    }

    #[test]
    fn incompressible_pages_skip_zstd() {
        let random = generated(0x9e3779b97f4a7c15, 65536, |x| x as u8);
        assert!(looks_incompressible(&random));
        let mut frame = Vec::new();
        assert!(!compress_into(&random, 3, &mut frame));
        let text = b"the quick brown fox jumps over the lazy dog. ".repeat(2000);
        assert!(!looks_incompressible(&text));
        assert!(compress_into(&text, 3, &mut frame));
        let c = frame;
        assert_eq!(decompress(&c, text.len()).unwrap(), text);
        assert!(decompress(&c, text.len() - 1).is_err());
    }

    #[test]
    fn a_page_matches_across_its_whole_length() {
        // Letters (compressible, never looking incompressible), then other
        // letters, then the first ones again 2.75 MiB later: beyond level
        // 3's 2 MiB window, inside a window that covers the page.
        let letter = |x: u64| b'a' + (x % 26) as u8;
        let first = generated(1, 1280 << 10, letter);
        let mut page = first.clone();
        page.extend(generated(2, 1536 << 10, letter));
        page.extend(&first);
        assert_eq!(page.len(), 4 << 20);
        let mut frame = Vec::new();
        assert!(compress_into(&page, 3, &mut frame));
        let unique = (page.len() - first.len()) as f64;
        assert!((frame.len() as f64) < unique * 0.7, "{} bytes for {unique} unique letters", frame.len());
        assert_eq!(decompress(&frame, page.len()).unwrap(), page);
        // Where the page is smaller than the level's window, zstd's own
        // choice stands: the same frame as without the parameter.
        let small = &page[..1 << 20];
        assert!(compress_into(small, 3, &mut frame));
        assert_eq!(frame, zstd::bulk::compress(small, 3).unwrap());
    }

    #[test]
    fn the_window_covers_the_input() {
        assert_eq!(window_log(0), 10);
        assert_eq!(window_log(1000), 10);
        assert_eq!(window_log(1 << 20), 20);
        assert_eq!(window_log((1 << 20) + 1), 21);
        assert_eq!(window_log(4 << 20), 22);
        assert_eq!(window_log(16 << 20), 24);
    }
}
