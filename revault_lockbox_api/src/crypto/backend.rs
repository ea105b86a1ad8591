//! Which ChaCha20 implementation seals and opens pages: chacha20 0.10
//! picks one at run time from what the CPU offers and what the build
//! allowed. Its AVX-512 backend is compiled in only with `--cfg
//! chacha20_avx512` (the workspace's `.cargo/config.toml` sets it; a
//! `RUSTFLAGS` in the environment replaces that file's flags). The cfg
//! reaches every crate of a build alike, so this crate sees the one
//! chacha20 was built with, and mirrors chacha20's own choice below.

use std::fmt;

/// The ChaCha20 backend that runs for this build on this CPU, fastest
/// first. All give the same bytes; only the speed differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChaChaBackend {
    /// AVX-512 (`avx512f` and `avx512vl`): built with `--cfg chacha20_avx512`.
    Avx512,
    /// AVX2: the default on x86-64 CPUs that have it.
    Avx2,
    /// SSE2.
    Sse2,
    /// NEON (aarch64).
    Neon,
    /// Portable code.
    Portable,
}

impl ChaChaBackend {
    /// Whether this build has the AVX-512 backend compiled in (it then
    /// runs where the CPU has `avx512f` and `avx512vl`).
    pub const BUILT_WITH_AVX512: bool = cfg!(chacha20_avx512);

    /// The backend chacha20 picks here: the order and CPU features of its
    /// run-time detection (chacha20 0.10 `src/lib.rs`).
    pub fn detect() -> ChaChaBackend {
        if cfg!(chacha20_backend = "soft") {
            return ChaChaBackend::Portable;
        }
        #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
        {
            if Self::BUILT_WITH_AVX512
                && std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                return ChaChaBackend::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return ChaChaBackend::Avx2;
            }
            if std::arch::is_x86_feature_detected!("sse2") {
                return ChaChaBackend::Sse2;
            }
        }
        if cfg!(all(target_arch = "aarch64", target_feature = "neon")) {
            return ChaChaBackend::Neon;
        }
        ChaChaBackend::Portable
    }

    /// Its short name: `avx512`, `avx2`, `sse2`, `neon`, `portable`.
    pub fn name(self) -> &'static str {
        match self {
            ChaChaBackend::Avx512 => "avx512",
            ChaChaBackend::Avx2 => "avx2",
            ChaChaBackend::Sse2 => "sse2",
            ChaChaBackend::Neon => "neon",
            ChaChaBackend::Portable => "portable",
        }
    }
}

impl fmt::Display for ChaChaBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace's builds keep the AVX-512 backend: a `RUSTFLAGS`
    /// without `--cfg chacha20_avx512` (scripts/cargo-env.sh adds it back)
    /// fails here, and so does a CPU with the features that does not get it.
    #[test]
    // The constant is the build's cfg: asserting it is the test.
    #[allow(clippy::assertions_on_constants)]
    fn workspace_builds_have_the_avx512_backend() {
        assert!(
            ChaChaBackend::BUILT_WITH_AVX512,
            "built without --cfg chacha20_avx512: a RUSTFLAGS in the environment replaced \
             .cargo/config.toml's flags (source scripts/cargo-env.sh)"
        );
        #[cfg(target_arch = "x86_64")]
        {
            let cpu_has = std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl");
            let want = match (cpu_has, std::arch::is_x86_feature_detected!("avx2")) {
                (true, _) => ChaChaBackend::Avx512,
                (false, true) => ChaChaBackend::Avx2,
                (false, false) => ChaChaBackend::Sse2,
            };
            assert_eq!(ChaChaBackend::detect(), want);
        }
    }
}
