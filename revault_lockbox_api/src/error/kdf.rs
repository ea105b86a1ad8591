//! Why Argon2id parameters are refused: one owner of the reason, for the
//! writer's error and the CLI's refusal alike.

use crate::format::{MAX_KDF_LANES, MAX_KDF_MEMORY_KIB, MAX_KDF_PASSES};

/// Why Argon2id parameters are refused
/// ([`KdfParams::check`](crate::KdfParams::check) decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KdfError {
    /// Above what every reader accepts: a hostile archive must not make a
    /// reader allocate or compute without bound, so an archive above the
    /// limits could never be opened.
    #[error(
        "above what readers accept: at most {} MiB, {MAX_KDF_PASSES} passes, {MAX_KDF_LANES} lanes",
        MAX_KDF_MEMORY_KIB / 1024
    )]
    AboveLimits,
    /// Argon2id itself refuses them (less than 8 KiB of memory per lane,
    /// no pass or no lane).
    #[error("Argon2id refuses them (at least 8 KiB of memory per lane, 1 pass, 1 lane)")]
    Refused,
}
