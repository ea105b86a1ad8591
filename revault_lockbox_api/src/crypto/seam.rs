//! The fuzzing seam (feature `fuzzing`): the two places where the fuzz
//! harness bends crypto, owned here so that crypto never imports the
//! harness. The harness turns fixed randomness on for one thread and
//! installs the hook that swaps a plaintext before it is sealed, so that
//! the decoders behind the MAC get the fuzzer's bytes.

use std::cell::Cell;
use std::sync::OnceLock;

use super::Sealing;
use crate::format::ARCHIVE_ID_LEN;

/// Replaces the plaintext `what` of an archive before it is sealed.
pub(crate) type SwapHook = fn(&[u8; ARCHIVE_ID_LEN], Sealing, Vec<u8>) -> Vec<u8>;

static SWAP: OnceLock<SwapHook> = OnceLock::new();

std::thread_local! {
    /// Whether `random_bytes` gives fixed bytes on this thread.
    static FIXED_RANDOM: Cell<bool> = const { Cell::new(false) };
}

/// Makes `random_bytes` give fixed bytes on this thread (`true`), or random
/// ones again.
pub(crate) fn set_fixed_random(fixed: bool) {
    FIXED_RANDOM.with(|f| f.set(fixed));
}

/// Fills `buf` with fixed bytes when this thread asked for them; returns
/// whether it did.
pub(crate) fn fixed_random(buf: &mut [u8]) -> bool {
    let fixed = FIXED_RANDOM.with(|f| f.get());
    if fixed {
        buf.fill(0x5a);
    }
    fixed
}

/// The session time a writer takes while this thread asked for fixed
/// random bytes: a fixed one too, so that a seed's root, whose session
/// record repeats the header's time (FORMAT.md §3.7), fits any run.
pub(crate) fn fixed_time() -> Option<i64> {
    FIXED_RANDOM.with(|f| f.get()).then_some(1_700_000_000_000_000_000)
}

/// Installs the swap hook; the first one installed stays.
pub(crate) fn set_swap_hook(hook: SwapHook) {
    let _ = SWAP.set(hook);
}

/// `plain`, or what the installed hook puts in its place.
pub(crate) fn swap_plaintext(archive_id: &[u8; ARCHIVE_ID_LEN], what: Sealing, plain: Vec<u8>) -> Vec<u8> {
    match SWAP.get() {
        Some(hook) => hook(archive_id, what, plain),
        None => plain,
    }
}
