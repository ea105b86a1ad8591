//! Argon2id: password to key-wrapping key.

use zeroize::Zeroizing;

use super::kdf_memory::KdfMemory;

use crate::error::{Error, KdfError};
use crate::format::{KDF_SALT_LEN, KEY_LEN, MAX_KDF_LANES, MAX_KDF_MEMORY_KIB, MAX_KDF_PASSES, MAX_KDF_WORK};

/// The Argon2id work (memory in KiB × passes) one open may spend trying
/// password slots, by default: 1 GiB × 1 pass, about 0.8 s here. The
/// default slot costs 192 MiB × passes, so four of them (the most a reader
/// tries) fit with room; a table an attacker raised to the caps (four
/// slots of 1 GiB × 4 passes, 12.5 s) costs at most this before the open
/// stops. Archives whose own slot costs more open with a larger budget
/// ([`OpenOptions::kdf_budget`](crate::OpenOptions::kdf_budget)).
pub const DEFAULT_KDF_BUDGET: u64 = 1 << 20;

/// Argon2id cost parameters, stored in each password slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KdfParams {
    /// Memory in KiB.
    pub m_kib: u32,
    /// Passes over memory.
    pub t: u32,
    /// Lanes (computed in parallel).
    pub p: u32,
}

impl Default for KdfParams {
    /// RFC 9106's second recommended option: m = 64 MiB, t = 3, p = 4.
    fn default() -> Self {
        KdfParams { m_kib: 64 * 1024, t: 3, p: 4 }
    }
}

impl KdfParams {
    /// The cheapest parameters Argon2id accepts. For tests only: they give
    /// a password no protection against guessing.
    pub const INSECURE_FOR_TESTS: KdfParams = KdfParams { m_kib: 8, t: 1, p: 1 };

    /// Whether a reader accepts these parameters: a hostile archive must not
    /// make it allocate or compute without bound.
    pub fn within_limits(&self) -> bool {
        self.m_kib <= MAX_KDF_MEMORY_KIB
            && self.t <= MAX_KDF_PASSES
            && self.p <= MAX_KDF_LANES
            && self.work() <= MAX_KDF_WORK
    }

    /// The work one derivation costs: memory in KiB × passes (lanes share
    /// the memory and run in parallel, so they do not add to it).
    pub fn work(&self) -> u64 {
        u64::from(self.m_kib) * u64::from(self.t)
    }

    /// Whether Argon2id accepts these parameters and a reader would too:
    /// the one check, for the writer and for a caller that wants to refuse
    /// them before any work (the CLI's flags).
    pub fn check(&self) -> Result<(), KdfError> {
        if !self.within_limits() {
            return Err(KdfError::AboveLimits);
        }
        if argon2::Params::new(self.m_kib, self.t, self.p, Some(KEY_LEN)).is_err() {
            return Err(KdfError::Refused);
        }
        Ok(())
    }

    /// The library error for these parameters, refused for `reason`.
    pub(crate) fn invalid(&self, reason: KdfError) -> Error {
        Error::InvalidKdf { m_kib: self.m_kib, t: self.t, p: self.p, reason }
    }

    /// Derives a 256-bit key from `password` and `salt`. Fails with
    /// [`KdfFailure::Params`] when Argon2 or the reader's limits reject the
    /// parameters (e.g. memory below 8 KiB per lane), and with
    /// [`KdfFailure::Memory`] when the system refuses the memory.
    pub(crate) fn derive(
        &self,
        password: &[u8],
        salt: &[u8; KDF_SALT_LEN],
    ) -> Result<Zeroizing<[u8; KEY_LEN]>, KdfFailure> {
        if !self.within_limits() {
            return Err(KdfFailure::Params);
        }
        let params =
            argon2::Params::new(self.m_kib, self.t, self.p, Some(KEY_LEN)).map_err(|_| KdfFailure::Params)?;
        let blocks = params.block_count();
        let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        let mut out = Zeroizing::new([0u8; KEY_LEN]);
        // The matrix on huge pages, wiped when dropped (see `kdf_memory`).
        let mut matrix = KdfMemory::new(blocks).map_err(KdfFailure::Memory)?;
        argon
            .hash_password_into_with_memory(password, salt, out.as_mut(), matrix.blocks())
            .map_err(|_| KdfFailure::Params)?;
        Ok(out)
    }
}

/// Why [`KdfParams::derive`] gave no key.
#[derive(Debug)]
pub(crate) enum KdfFailure {
    /// Argon2id, or a reader's limits, refuse the parameters.
    Params,
    /// The system refused the Argon2id memory.
    Memory(std::io::Error),
}

impl From<KdfFailure> for std::io::Error {
    fn from(failure: KdfFailure) -> std::io::Error {
        match failure {
            KdfFailure::Params => {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "invalid Argon2id parameters")
            }
            KdfFailure::Memory(e) => {
                std::io::Error::new(e.kind(), format!("allocating the Argon2id memory: {e}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivation_is_deterministic_and_salted() {
        let p = KdfParams { m_kib: 64, t: 1, p: 2 };
        let a = p.derive(b"pw", &[1; KDF_SALT_LEN]).unwrap();
        assert_eq!(*a, *p.derive(b"pw", &[1; KDF_SALT_LEN]).unwrap());
        assert_ne!(*a, *p.derive(b"pw", &[2; KDF_SALT_LEN]).unwrap());
        assert_ne!(*a, *p.derive(b"pX", &[1; KDF_SALT_LEN]).unwrap());
    }

    #[test]
    fn hostile_parameters_are_refused() {
        let huge = KdfParams { m_kib: u32::MAX, t: 1, p: 1 };
        assert!(matches!(huge.derive(b"pw", &[0; KDF_SALT_LEN]), Err(KdfFailure::Params)));
        let long = KdfParams { m_kib: 1 << 20, t: 5, p: 1 };
        assert!(!long.within_limits(), "memory times passes is capped too");
        assert!(KdfParams::default().within_limits());
        let zero = KdfParams { m_kib: 8, t: 0, p: 1 };
        assert!(matches!(zero.derive(b"pw", &[0; KDF_SALT_LEN]), Err(KdfFailure::Params)));
    }
}
