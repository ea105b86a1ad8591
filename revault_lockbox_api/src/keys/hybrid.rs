//! age v1.3's post-quantum hybrid recipient type, `mlkem768x25519`, which
//! the `age` crate does not implement yet: the recipient and identity
//! behind `age1pq1…` and `AGE-SECRET-KEY-PQ-1…`, plugged into age through
//! its `Recipient` and `Identity` traits.
//!
//! The stanza (C2SP age spec) seals the 16-byte file key with HPKE
//! (RFC 9180) in base mode: KEM MLKEM768-X25519 (X-Wing, id 0x647a), KDF
//! HKDF-SHA256 (0x0001), AEAD ChaCha20-Poly1305 (0x0003), `info` =
//! `age-encryption.org/mlkem768x25519`, empty AAD. Its one argument is the
//! 1120-byte encapsulation (ML-KEM ciphertext || X25519 share) in canonical
//! unpadded base64; its body is the 32-byte sealed file key. A recipient is
//! the 1216-byte X-Wing public key (ML-KEM-768 encapsulation key || X25519
//! point) in Bech32 under `age1pq`; an identity is the 32-byte X-Wing seed
//! in Bech32 under `AGE-SECRET-KEY-PQ-`, upper case.
//!
//! The `hpke` crate's X-Wing needs ML-KEM 0.3, which cannot build beside
//! the ML-KEM 0.2 age depends on, so the KEM combiner and the HPKE key
//! schedule are written here (a few lines each) over the crates age uses;
//! the published age vectors pin them down (`vector_tests`).

use std::collections::HashSet;
use std::fmt;

use age::{DecryptError, EncryptError};
use age_core::format::{FileKey, Stanza, FILE_KEY_BYTES};
use age_core::primitives::{bech32_decode, bech32_encode};
use age_core::secrecy::ExposeSecret;
use base64::prelude::{Engine, BASE64_STANDARD_NO_PAD};
use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use hkdf::{Hkdf, HkdfExtract};
use ml_kem::kem::Decapsulate;
use ml_kem::{EncapsulateDeterministic, EncodedSizeUser, KemCore, MlKem768, B32};
use sha2::Sha256;
use sha3::digest::{ExtendableOutput, Update, XofReader};
use sha3::{Digest, Sha3_256, Shake256};
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use super::random_bytes;

/// Stanza type of the hybrid recipient.
pub(crate) const STANZA_TAG: &str = "mlkem768x25519";
/// HPKE `info`: binds the stanza to its type.
const HPKE_INFO: &[u8] = b"age-encryption.org/mlkem768x25519";
/// HPKE suite: "HPKE" || KEM 0x647a || KDF 0x0001 || AEAD 0x0003.
const HPKE_SUITE_ID: &[u8] = b"HPKE\x64\x7a\x00\x01\x00\x03";
/// X-Wing's domain separator, last input of its combiner.
const XWING_LABEL: &[u8] = b"\\.//^\\";
/// Label that keeps post-quantum stanzas away from classical ones in an age file.
pub(crate) const POSTQUANTUM_LABEL: &str = "postquantum";
/// Bech32 prefix of a hybrid recipient.
const RECIPIENT_HRP: bech32::Hrp = bech32::Hrp::parse_unchecked("age1pq");
/// Bech32 prefix of a hybrid identity (written in upper case).
const IDENTITY_HRP: bech32::Hrp = bech32::Hrp::parse_unchecked("age-secret-key-pq-");

/// ML-KEM-768 encapsulation key length.
const MLKEM_EK_LEN: usize = 1184;
/// ML-KEM-768 ciphertext length.
const MLKEM_CT_LEN: usize = 1088;
/// X-Wing public key: ML-KEM-768 encapsulation key || X25519 point.
const PUBLIC_KEY_LEN: usize = MLKEM_EK_LEN + 32;
/// Encapsulation: ML-KEM-768 ciphertext || X25519 share.
const ENC_LEN: usize = MLKEM_CT_LEN + 32;
/// Length of the encapsulation in unpadded base64.
const ENC_B64_LEN: usize = (ENC_LEN * 4).div_ceil(3);
/// The sealed file key: 16 bytes and a 16-byte tag.
const BODY_LEN: usize = FILE_KEY_BYTES + 16;
/// Identity seed length.
pub(crate) const SEED_LEN: usize = 32;

type EncapsulationKey = <MlKem768 as KemCore>::EncapsulationKey;
type DecapsulationKey = <MlKem768 as KemCore>::DecapsulationKey;

/// Whether an X25519 output is the all-zero value of a small-order share,
/// which age refuses. Constant time.
fn is_all_zero(x: &[u8; 32]) -> bool {
    x.ct_eq(&[0u8; 32]).into()
}

/// A hybrid ML-KEM-768 + X25519 recipient (`age1pq1…`).
#[derive(Clone)]
pub(crate) struct HybridRecipient {
    ek_m: EncapsulationKey,
    pk_x: [u8; 32],
}

impl HybridRecipient {
    /// Parses `age1pq1…`, with FIPS 203's encapsulation key check.
    pub(crate) fn parse(s: &str) -> Result<HybridRecipient, &'static str> {
        bech32_decode(
            s,
            |_| "invalid Bech32 encoding",
            |hrp| if hrp == RECIPIENT_HRP { Ok(()) } else { Err("not an age1pq1 recipient") },
            |_, bytes| HybridRecipient::from_bytes(&bytes.collect::<Vec<u8>>()),
        )
    }

    fn from_bytes(bytes: &[u8]) -> Result<HybridRecipient, &'static str> {
        if bytes.len() != PUBLIC_KEY_LEN {
            return Err("public key has the wrong length");
        }
        let encoded = ml_kem::Encoded::<EncapsulationKey>::try_from(&bytes[..MLKEM_EK_LEN])
            .map_err(|_| "public key has the wrong length")?;
        let ek_m = EncapsulationKey::from_bytes(&encoded);
        // FIPS 203 7.2, modulus check: every coefficient must be below q,
        // that is, decoding then encoding gives the same bytes.
        if ek_m.as_bytes() != encoded {
            return Err("invalid ML-KEM-768 encapsulation key");
        }
        let pk_x: [u8; 32] = bytes[MLKEM_EK_LEN..].try_into().expect("32 bytes");
        if is_all_zero(&x25519_dalek::x25519([0x5a; 32], pk_x)) {
            return Err("invalid X25519 public key (small order)");
        }
        Ok(HybridRecipient { ek_m, pk_x })
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.ek_m.as_bytes().to_vec();
        out.extend_from_slice(&self.pk_x);
        out
    }
}

impl PartialEq for HybridRecipient {
    fn eq(&self, other: &HybridRecipient) -> bool {
        self.to_bytes() == other.to_bytes()
    }
}

impl Eq for HybridRecipient {}

impl fmt::Display for HybridRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&bech32_encode(RECIPIENT_HRP, &self.to_bytes()))
    }
}

impl fmt::Debug for HybridRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HybridRecipient({self})")
    }
}

/// X-Wing's combiner: SHA3-256(ss_M || ss_X || ct_X || pk_X || label).
fn combine(ss_m: &[u8], ss_x: &[u8; 32], ct_x: &[u8; 32], pk_x: &[u8; 32]) -> Zeroizing<[u8; 32]> {
    let mut h = Sha3_256::new();
    Digest::update(&mut h, ss_m);
    Digest::update(&mut h, ss_x);
    Digest::update(&mut h, ct_x);
    Digest::update(&mut h, pk_x);
    Digest::update(&mut h, XWING_LABEL);
    Zeroizing::new(h.finalize().into())
}

/// RFC 9180 LabeledExtract, as an HKDF ready to expand.
fn labeled_extract(salt: &[u8], label: &[u8], ikm: &[u8]) -> Hkdf<Sha256> {
    let mut e = HkdfExtract::<Sha256>::new(Some(salt));
    for part in [b"HPKE-v1".as_slice(), HPKE_SUITE_ID, label, ikm] {
        e.input_ikm(part);
    }
    e.finalize().1
}

/// RFC 9180 LabeledExpand.
fn labeled_expand(prk: &Hkdf<Sha256>, label: &[u8], info: &[u8], out: &mut [u8]) {
    let len = (out.len() as u16).to_be_bytes();
    prk.expand_multi_info(&[&len, b"HPKE-v1", HPKE_SUITE_ID, label, info], out)
        .expect("HPKE key and nonce lengths are valid HKDF lengths");
}

/// RFC 9180 base-mode key schedule for the age stanza: the AEAD key and
/// nonce of the first (only) message.
fn key_schedule(shared_secret: &[u8; 32]) -> (Zeroizing<[u8; 32]>, Nonce) {
    let psk_id_hash = extract_prk(b"", b"psk_id_hash", b"");
    let info_hash = extract_prk(b"", b"info_hash", HPKE_INFO);
    let mut context = [0u8; 65];
    context[1..33].copy_from_slice(&psk_id_hash);
    context[33..].copy_from_slice(&info_hash);
    let secret = labeled_extract(shared_secret, b"secret", b"");
    let mut key = Zeroizing::new([0u8; 32]);
    labeled_expand(&secret, b"key", &context, key.as_mut());
    let mut nonce = [0u8; 12];
    labeled_expand(&secret, b"base_nonce", &context, &mut nonce);
    (key, Nonce::from(nonce))
}

/// LabeledExtract's output itself (the hashes in the key schedule context).
fn extract_prk(salt: &[u8], label: &[u8], ikm: &[u8]) -> [u8; 32] {
    let mut e = HkdfExtract::<Sha256>::new(Some(salt));
    for part in [b"HPKE-v1".as_slice(), HPKE_SUITE_ID, label, ikm] {
        e.input_ikm(part);
    }
    e.finalize().0.into()
}

impl age::Recipient for HybridRecipient {
    fn wrap_file_key(&self, file_key: &FileKey) -> Result<(Vec<Stanza>, HashSet<String>), EncryptError> {
        let rng_err = |_| EncryptError::Io(std::io::Error::other("random generator failed"));
        let mut ek_x = Zeroizing::new([0u8; 32]);
        random_bytes(ek_x.as_mut()).map_err(rng_err)?;
        let mut m = Zeroizing::new([0u8; 32]);
        random_bytes(m.as_mut()).map_err(rng_err)?;

        let ct_x = x25519_dalek::x25519(*ek_x, x25519_dalek::X25519_BASEPOINT_BYTES);
        let ss_x = Zeroizing::new(x25519_dalek::x25519(*ek_x, self.pk_x));
        let (ct_m, mut ss_m) = self
            .ek_m
            .encapsulate_deterministic(&B32::from(*m))
            .map_err(|_| EncryptError::Io(std::io::Error::other("ML-KEM encapsulation failed")))?;
        let ss = combine(&ss_m, &ss_x, &ct_x, &self.pk_x);
        ss_m.zeroize();

        let (key, nonce) = key_schedule(&ss);
        let mut body = file_key.expose_secret().to_vec();
        let tag = ChaCha20Poly1305::new(&Key::from(*key))
            .encrypt_inout_detached(&nonce, b"", body.as_mut_slice().into())
            .expect("16-byte message");
        body.extend_from_slice(&tag);

        let mut enc = ct_m.to_vec();
        enc.extend_from_slice(&ct_x);
        let stanza =
            Stanza { tag: STANZA_TAG.to_owned(), args: vec![BASE64_STANDARD_NO_PAD.encode(&enc)], body };
        Ok((vec![stanza], HashSet::from([POSTQUANTUM_LABEL.to_owned()])))
    }
}

/// A hybrid ML-KEM-768 + X25519 identity (`AGE-SECRET-KEY-PQ-1…`): the
/// seed, zeroized on drop, and the keys expanded from it. `Debug` shows
/// the recipient only.
#[derive(Clone)]
pub(crate) struct HybridIdentity {
    seed: Zeroizing<[u8; SEED_LEN]>,
    dk_m: DecapsulationKey,
    sk_x: Zeroizing<[u8; 32]>,
    public: HybridRecipient,
}

impl HybridIdentity {
    /// X-Wing key generation: SHAKE256(seed) gives the ML-KEM-768 key
    /// generation seeds d and z and the X25519 secret.
    pub(crate) fn from_seed(seed: &[u8; SEED_LEN]) -> HybridIdentity {
        let mut expanded = Zeroizing::new([0u8; 96]);
        let mut xof = Shake256::default();
        Update::update(&mut xof, seed);
        xof.finalize_xof().read(expanded.as_mut());
        let mut d = Zeroizing::new([0u8; 32]);
        let mut z = Zeroizing::new([0u8; 32]);
        let mut sk_x = Zeroizing::new([0u8; 32]);
        d.copy_from_slice(&expanded[..32]);
        z.copy_from_slice(&expanded[32..64]);
        sk_x.copy_from_slice(&expanded[64..]);
        let (dk_m, ek_m) = MlKem768::generate_deterministic(&B32::from(*d), &B32::from(*z));
        let pk_x = x25519_dalek::x25519(*sk_x, x25519_dalek::X25519_BASEPOINT_BYTES);
        HybridIdentity { seed: Zeroizing::new(*seed), dk_m, sk_x, public: HybridRecipient { ek_m, pk_x } }
    }

    /// Parses `AGE-SECRET-KEY-PQ-1…` (one line of an identity file).
    pub(crate) fn parse(s: &str) -> Result<HybridIdentity, &'static str> {
        bech32_decode(
            s,
            |_| "invalid Bech32 encoding",
            |hrp| if hrp == IDENTITY_HRP { Ok(()) } else { Err("not an AGE-SECRET-KEY-PQ-1 identity") },
            |_, bytes| {
                let mut seed = Zeroizing::new([0u8; SEED_LEN]);
                let mut n = 0;
                for b in bytes {
                    if n == SEED_LEN {
                        return Err("identity is longer than 32 bytes");
                    }
                    seed[n] = b;
                    n += 1;
                }
                if n != SEED_LEN {
                    return Err("identity is shorter than 32 bytes");
                }
                Ok(HybridIdentity::from_seed(&seed))
            },
        )
    }

    /// The matching recipient.
    pub(crate) fn to_public(&self) -> HybridRecipient {
        self.public.clone()
    }

    /// The identity in its file form, upper case.
    pub(crate) fn to_secret_string(&self) -> Zeroizing<String> {
        let mut lower = bech32_encode(IDENTITY_HRP, self.seed.as_ref());
        let upper = Zeroizing::new(lower.to_ascii_uppercase());
        lower.zeroize();
        upper
    }
}

impl fmt::Debug for HybridIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HybridIdentity({})", self.public)
    }
}

impl age::Identity for HybridIdentity {
    fn unwrap_stanza(&self, stanza: &Stanza) -> Option<Result<FileKey, DecryptError>> {
        if stanza.tag != STANZA_TAG {
            return None;
        }
        // Canonical form only: one argument of exactly the right length in
        // canonical base64 (no trailing bits), a body of exactly 32 bytes.
        let [arg] = stanza.args.as_slice() else {
            return Some(Err(DecryptError::InvalidHeader));
        };
        if arg.len() != ENC_B64_LEN || stanza.body.len() != BODY_LEN {
            return Some(Err(DecryptError::InvalidHeader));
        }
        let Ok(enc) = BASE64_STANDARD_NO_PAD.decode(arg) else {
            return Some(Err(DecryptError::InvalidHeader));
        };
        let (Ok(ct_m), Ok(ct_x)) = (
            ml_kem::Ciphertext::<MlKem768>::try_from(&enc[..MLKEM_CT_LEN]),
            <[u8; 32]>::try_from(&enc[MLKEM_CT_LEN..]),
        ) else {
            return Some(Err(DecryptError::InvalidHeader));
        };

        let ss_x = Zeroizing::new(x25519_dalek::x25519(*self.sk_x, ct_x));
        if is_all_zero(&ss_x) {
            return Some(Err(DecryptError::InvalidHeader));
        }
        // ML-KEM rejects implicitly: a stanza for another key decapsulates
        // to an unrelated secret and the seal below fails: "not ours".
        let Ok(mut ss_m) = self.dk_m.decapsulate(&ct_m) else {
            return Some(Err(DecryptError::InvalidHeader));
        };
        let ss = combine(&ss_m, &ss_x, &ct_x, &self.public.pk_x);
        ss_m.zeroize();

        let (key, nonce) = key_schedule(&ss);
        let mut file_key = Zeroizing::new([0u8; FILE_KEY_BYTES]);
        file_key.copy_from_slice(&stanza.body[..FILE_KEY_BYTES]);
        let tag = Tag::try_from(&stanza.body[FILE_KEY_BYTES..]).expect("16-byte tag");
        ChaCha20Poly1305::new(&Key::from(*key))
            .decrypt_inout_detached(&nonce, b"", file_key.as_mut_slice().into(), &tag)
            .ok()?;
        Some(Ok(FileKey::init_with_mut(|k| k.copy_from_slice(file_key.as_ref()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use age::{Identity as _, Recipient as _};

    const VECTOR_IDENTITY: &str =
        "AGE-SECRET-KEY-PQ-1HZLGZUPT4ETPKDEV8HSGFDCYZ4E522W0A7PU2LHT8EH9W6YLNC3SW78XKG";

    #[test]
    fn identity_string_round_trips() {
        let id = HybridIdentity::parse(VECTOR_IDENTITY).unwrap();
        assert_eq!(id.to_secret_string().as_str(), VECTOR_IDENTITY);
        let r = id.to_public().to_string();
        assert!(r.starts_with("age1pq1"));
        assert_eq!(HybridRecipient::parse(&r).unwrap(), id.to_public());
        assert!(!format!("{id:?}").contains("SECRET"));
    }

    #[test]
    fn bad_strings_are_refused() {
        assert!(HybridIdentity::parse(
            "AGE-SECRET-KEY-1EGTZVFFV20835NWYV6270LXYVK2VKNX2MMDKWYKLMGR48UAWX40Q2P2LM0"
        )
        .is_err());
        let mut flipped = VECTOR_IDENTITY.to_owned();
        flipped.replace_range(30..31, "Q");
        assert!(HybridIdentity::parse(&flipped).is_err());
        let r = HybridIdentity::parse(VECTOR_IDENTITY).unwrap().to_public().to_string();
        assert!(HybridRecipient::parse(&r[..r.len() - 1]).is_err());
        assert!(HybridRecipient::parse("age1pq1").is_err());
    }

    #[test]
    fn encapsulation_key_check_refuses_coefficients_above_q() {
        let mut bytes = HybridIdentity::from_seed(&[9; 32]).to_public().to_bytes();
        assert!(HybridRecipient::from_bytes(&bytes).is_ok());
        // The first 12-bit coefficient set to 4095 (q is 3329).
        bytes[0] = 0xff;
        bytes[1] |= 0x0f;
        assert!(HybridRecipient::from_bytes(&bytes).is_err());
    }

    #[test]
    fn wrap_then_unwrap() {
        let id = HybridIdentity::parse(VECTOR_IDENTITY).unwrap();
        let fk = FileKey::new(Box::new([7; 16]));
        let (stanzas, labels) = id.to_public().wrap_file_key(&fk).unwrap();
        assert!(labels.contains(POSTQUANTUM_LABEL));
        assert_eq!(stanzas[0].args[0].len(), ENC_B64_LEN);
        let got = id.unwrap_stanzas(&stanzas).unwrap().unwrap();
        assert_eq!(got.expose_secret(), &[7; 16]);
        let other = HybridIdentity::from_seed(&[1; 32]);
        assert!(other.unwrap_stanzas(&stanzas).is_none());
    }
}
