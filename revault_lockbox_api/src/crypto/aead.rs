//! The AEAD of pages, index nodes, session headers and trailers:
//! ChaCha20-Poly1305 (RFC 8439), from `ring` unless told otherwise. Both
//! implementations here give the same bytes (every Wycheproof case goes
//! through both, `wycheproof_tests`, and each reads what the other wrote);
//! only the speed differs, and `lockbox --version` names the one that runs.
//!
//! ring runs ChaCha20 and Poly1305 in one pass over the page (BoringSSL's
//! integrated AVX2 assembly); RustCrypto's `chacha20poly1305` makes two,
//! with chacha20's AVX-512 or AVX2 backend and poly1305's AVX2 one. In
//! isolation ring seals 1 MiB at 1.65 GiB/s on the AVX2 machine against
//! RustCrypto's 1.21, and RustCrypto's AVX-512 path is level with ring
//! (2.9 / 2.8 GB/s). In the pipeline, where the page is no longer in the
//! core's cache, the second pass costs more: on the AVX-512 machine a
//! 1 GiB create took 1.46x the CPU and 1.28x the wall time on RustCrypto,
//! a verify 1.54x and 1.50x (docs/BENCHMARKS.md, "The page AEAD on
//! ring"). So ring runs on every CPU.
//!
//! `LOCKBOX_AEAD=rustcrypto` (or `ring`) in the environment forces one:
//! the A/B of one build on one CPU, and a second implementation to check
//! the first against. Any other value is ignored.

use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::OnceLock;

use chacha20poly1305::aead::inout::InOutBuf;
use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use ring::aead::{Aad, LessSafeKey, Nonce as RingNonce, UnboundKey, CHACHA20_POLY1305};

use super::{AuthFailed, ChaChaBackend};
use crate::format::{KEY_LEN, NONCE_LEN, TAG_LEN};

/// The implementation of ChaCha20-Poly1305 that runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AeadBackend {
    /// RustCrypto's `chacha20poly1305` on this chacha20 backend.
    RustCrypto(ChaChaBackend),
    /// `ring`'s integrated ChaCha20-Poly1305.
    Ring,
}

/// The environment variable that forces a backend.
pub const AEAD_ENV: &str = "LOCKBOX_AEAD";

impl AeadBackend {
    /// The backend this process uses: the one forced by `LOCKBOX_AEAD`,
    /// else ring. Decided once per process.
    pub fn detect() -> AeadBackend {
        static CHOSEN: OnceLock<AeadBackend> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let forced = std::env::var(AEAD_ENV).ok();
            AeadBackend::choose(forced.as_deref(), ChaChaBackend::detect())
        })
    }

    /// The choice for a forced value (`ring`, `rustcrypto`; others are
    /// ignored) and the chacha20 backend this CPU and build run.
    fn choose(forced: Option<&str>, chacha: ChaChaBackend) -> AeadBackend {
        match forced {
            Some("rustcrypto") => AeadBackend::RustCrypto(chacha),
            _ => AeadBackend::Ring,
        }
    }

    /// Both backends, with the chacha20 backend this CPU runs (tests).
    #[cfg(test)]
    pub(crate) fn all() -> [AeadBackend; 2] {
        [AeadBackend::RustCrypto(ChaChaBackend::detect()), AeadBackend::Ring]
    }
}

impl fmt::Display for AeadBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AeadBackend::RustCrypto(chacha) => write!(f, "chacha20poly1305 ({chacha})"),
            AeadBackend::Ring => f.write_str(ring_path()),
        }
    }
}

/// Which of ring's code paths runs here (its own run-time choice).
fn ring_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("bmi2") {
            return "ring (avx2)";
        }
        if std::arch::is_x86_feature_detected!("sse4.1") {
            return "ring (sse4.1)";
        }
    }
    #[cfg(target_arch = "aarch64")]
    return "ring (neon)";
    #[allow(unreachable_code)]
    "ring (portable)"
}

/// ChaCha20-Poly1305 under one key, on the backend chosen for it.
pub(crate) struct Cipher(Inner);

enum Inner {
    RustCrypto(ChaCha20Poly1305),
    /// Boxed: ring's key type has room for an AES key schedule.
    Ring(Box<WipedRingKey>),
}

impl Cipher {
    /// A cipher under `key` on [`AeadBackend::detect`]'s backend.
    pub(crate) fn new(key: &[u8; KEY_LEN]) -> Cipher {
        Cipher::on(AeadBackend::detect(), key)
    }

    /// A cipher under `key` on `backend`.
    pub(crate) fn on(backend: AeadBackend, key: &[u8; KEY_LEN]) -> Cipher {
        Cipher(match backend {
            AeadBackend::RustCrypto(_) => Inner::RustCrypto(ChaCha20Poly1305::new(&Key::from(*key))),
            AeadBackend::Ring => Inner::Ring(Box::new(WipedRingKey::new(key))),
        })
    }

    /// Encrypts `buf` in place; returns the tag.
    pub(crate) fn seal(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], buf: &mut [u8]) -> [u8; TAG_LEN] {
        const LIMITS: &str = "a unit within ChaCha20-Poly1305's message limits";
        match &self.0 {
            Inner::RustCrypto(c) => {
                c.encrypt_inout_detached(&Nonce::from(*nonce), aad, buf.into()).expect(LIMITS).into()
            }
            Inner::Ring(k) => {
                let tag = k.key().seal_in_place_separate_tag(ring_nonce(nonce), Aad::from(aad), buf);
                tag.expect(LIMITS).as_ref().try_into().expect("16-byte tag")
            }
        }
    }

    /// Checks `tag` and decrypts `body` in place.
    pub(crate) fn open(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        body: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), AuthFailed> {
        self.open_within(nonce, aad, body, 0, tag).map(|_| ())
    }

    /// Checks `tag` and decrypts `buf[from..]`, writing the plaintext to
    /// the start of `buf` (shifted by `from`); returns its length. Only
    /// ring decrypts with a shift in one pass: see
    /// [`open_shifts`](Self::open_shifts).
    fn open_within(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
        from: usize,
        tag: &[u8; TAG_LEN],
    ) -> Result<usize, AuthFailed> {
        match &self.0 {
            Inner::RustCrypto(c) => {
                assert_eq!(from, 0, "RustCrypto's chacha20poly1305 decrypts in place or into another buffer");
                c.decrypt_inout_detached(&Nonce::from(*nonce), aad, buf.into(), &Tag::from(*tag))
                    .map_err(|_| AuthFailed)?;
                Ok(buf.len())
            }
            Inner::Ring(k) => {
                let tag = ring::aead::Tag::from(*tag);
                let plain = k
                    .key()
                    .open_in_place_separate_tag(ring_nonce(nonce), Aad::from(aad), tag, buf, from..)
                    .map_err(|_| AuthFailed)?;
                Ok(plain.len())
            }
        }
    }

    /// Whether [`open_out`](Self::open_out) decrypts into the sealed
    /// bytes' own buffer, shifted to its start.
    fn open_shifts(&self) -> bool {
        matches!(self.0, Inner::Ring(_))
    }

    /// Checks and decrypts the body and tag held in `framed[from..]` into
    /// a buffer of their own, without a copy beyond the decryption: into
    /// `framed` itself, shifted to its start (ring), or into `spare`
    /// (RustCrypto), whose old bytes, of any length, are overwritten.
    /// Returns the plaintext's buffer, or the failure, and the buffer not
    /// needed.
    pub(crate) fn open_out(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        mut framed: Vec<u8>,
        from: usize,
        mut spare: Vec<u8>,
    ) -> (Result<Vec<u8>, AuthFailed>, Vec<u8>) {
        let Some(body_len) = framed.len().checked_sub(from + TAG_LEN) else {
            return (Err(AuthFailed), spare);
        };
        let tag: [u8; TAG_LEN] = framed[from + body_len..].try_into().expect("16 bytes");
        if self.open_shifts() {
            let end = from + body_len;
            return match self.open_within(nonce, aad, &mut framed[..end], from, &tag) {
                Ok(len) => {
                    framed.truncate(len);
                    (Ok(framed), spare)
                }
                Err(e) => (Err(e), spare),
            };
        }
        let Inner::RustCrypto(c) = &self.0 else { unreachable!("only ring shifts") };
        // The decryption writes every byte: a recycled `spare` that
        // already has the length is not zeroed first.
        spare.resize(body_len, 0);
        let sealed = &framed[from..from + body_len];
        let opened = InOutBuf::new(sealed, &mut spare).map_err(|_| AuthFailed).and_then(|buf| {
            c.decrypt_inout_detached(&Nonce::from(*nonce), aad, buf, &Tag::from(tag)).map_err(|_| AuthFailed)
        });
        match opened {
            Ok(()) => (Ok(spare), framed),
            Err(e) => (Err(e), framed),
        }
    }
}

fn ring_nonce(nonce: &[u8; NONCE_LEN]) -> RingNonce {
    // Every nonce comes from `PageNonce`, which never repeats one under a
    // key (`schedule`): ring's name for what the caller promises.
    RingNonce::assume_unique_for_key(*nonce)
}

/// ring's key, wiped when dropped: ring keeps the expanded key in the
/// `LessSafeKey` and has no zeroize support, while every other key of the
/// library is wiped on drop (docs/SECURITY.md, "Wiped on drop").
struct WipedRingKey(ManuallyDrop<LessSafeKey>);

impl WipedRingKey {
    fn new(key: &[u8; KEY_LEN]) -> WipedRingKey {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, key).expect("a 32-byte ChaCha20-Poly1305 key");
        WipedRingKey(ManuallyDrop::new(LessSafeKey::new(unbound)))
    }

    fn key(&self) -> &LessSafeKey {
        &self.0
    }
}

impl WipedRingKey {
    /// Overwrites the key's bytes where they lie, inside this value.
    #[allow(unsafe_code)]
    fn wipe(&mut self) {
        let at = std::ptr::addr_of_mut!(self.0).cast::<u8>();
        for i in 0..std::mem::size_of::<ManuallyDrop<LessSafeKey>>() {
            // SAFETY: `at + i` lies inside `self.0`, which this value owns.
            // After a wipe the key is never used as a key again: `wipe`
            // runs only from `drop` (and in a test that reads the bytes
            // back), `ManuallyDrop` runs no drop of its own, and ring's
            // key has no drop logic (plain words and a static reference).
            // Volatile writes are not optimised away as dead stores.
            unsafe { std::ptr::write_volatile(at.add(i), 0) };
        }
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for WipedRingKey {
    fn drop(&mut self) {
        self.wipe();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_unless_rustcrypto_is_forced() {
        for chacha in
            [ChaChaBackend::Avx512, ChaChaBackend::Avx2, ChaChaBackend::Sse2, ChaChaBackend::Portable]
        {
            assert_eq!(AeadBackend::choose(None, chacha), AeadBackend::Ring);
            assert_eq!(AeadBackend::choose(Some("ring"), chacha), AeadBackend::Ring);
            assert_eq!(AeadBackend::choose(Some("nonsense"), chacha), AeadBackend::Ring);
            assert_eq!(AeadBackend::choose(Some("rustcrypto"), chacha), AeadBackend::RustCrypto(chacha));
        }
    }

    /// Each backend opens what the other sealed, by every opening path,
    /// and refuses a changed byte, at lengths around the SIMD block sizes.
    #[test]
    fn the_backends_agree_byte_for_byte() {
        let key = [9u8; KEY_LEN];
        let [rust, ring] = AeadBackend::all().map(|b| Cipher::on(b, &key));
        for len in [0, 1, 63, 64, 255, 256, 257, 511, 4096, 65_537] {
            let plain: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let nonce = [len as u8; NONCE_LEN];
            let (mut a, mut b) = (plain.clone(), plain.clone());
            let tags = (rust.seal(&nonce, b"aad", &mut a), ring.seal(&nonce, b"aad", &mut b));
            assert_eq!((&a, tags.0), (&b, tags.1), "length {len}");
            for (opener, name) in [(&rust, "rustcrypto"), (&ring, "ring")] {
                let framed = [&[0xee; 5][..], &a, &tags.0].concat();
                let (opened, _) = opener.open_out(&nonce, b"aad", framed.clone(), 5, vec![1; 3]);
                assert_eq!(opened.as_deref(), Ok(&plain[..]), "{name}, length {len}");
                let mut in_place = a.clone();
                opener.open(&nonce, b"aad", &mut in_place, &tags.0).unwrap();
                assert_eq!(in_place, plain);
                let mut bad = framed;
                let last = bad.len() - 1 - (len % TAG_LEN);
                bad[last] ^= 1;
                assert!(opener.open_out(&nonce, b"aad", bad, 5, Vec::new()).0.is_err(), "{name}");
                assert!(opener.open(&nonce, b"aaX", &mut a.clone(), &tags.0).is_err(), "{name}");
            }
        }
        let short = rust.open_out(&[0; NONCE_LEN], b"", vec![0; 20], 5, Vec::new());
        assert!(short.0.is_err());
        assert!(ring.open_out(&[0; NONCE_LEN], b"", vec![0; 20], 5, Vec::new()).0.is_err());
    }

    /// ring holds the key inside the `LessSafeKey` itself (not on a heap
    /// of its own), and the wipe leaves none of it there.
    #[test]
    #[allow(unsafe_code)]
    fn the_ring_key_is_wiped_where_it_lies() {
        let key: [u8; KEY_LEN] = std::array::from_fn(|i| 0x80 | i as u8);
        let mut wiped = WipedRingKey::new(&key);
        let bytes = |k: &WipedRingKey| -> Vec<u8> {
            let len = std::mem::size_of::<ManuallyDrop<LessSafeKey>>();
            // SAFETY: reads the value's own bytes as bytes, through a
            // shared reference that lives for the read.
            unsafe { std::slice::from_raw_parts(std::ptr::addr_of!(k.0).cast::<u8>(), len) }.to_vec()
        };
        assert!(bytes(&wiped).windows(KEY_LEN).any(|w| w == key), "the key lies inside the value");
        wiped.wipe();
        assert!(bytes(&wiped).iter().all(|&b| b == 0));
    }
}
