//! Round trips, refusals, and the known-answer vectors of docs/KEYS.md
//! (`tests/vectors/signing/hybrid-v1.txt`, made by another implementation:
//! `scripts/gen-signing-vectors.py`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::prelude::{Engine, BASE64_STANDARD};
use sha2::{Digest, Sha256};

use super::*;
use crate::crypto::{KdfParams, Password};
use crate::format::signed_message;
use crate::keys::KeyError;

fn vectors() -> BTreeMap<String, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/signing/hybrid-v1.txt");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_once(": ").unwrap())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

const ID: [u8; 16] = [3; 16];
const COMMIT: [u8; 32] = [9; 32];

#[test]
fn known_answers_from_another_implementation() {
    let v = vectors();
    let key = SigningKey::parse_file(v["key line"].as_bytes(), &mut |_| None).unwrap();
    let public = key.verifying_key();
    assert_eq!(public.as_bytes(), &BASE64_STANDARD.decode(&v["public key"]).unwrap()[..]);
    assert_eq!(hex(&v["public key sha256"]), Sha256::digest(public.as_bytes()).to_vec());
    assert_eq!(key.fingerprint().to_string(), v["fingerprint"]);
    assert_eq!(v["fingerprint"].parse::<Fingerprint>().unwrap(), key.fingerprint());

    let id: [u8; 16] = hex(&v["archive id"]).try_into().unwrap();
    let commit: [u8; 32] = hex(&v["commit hash"]).try_into().unwrap();
    let flags: u8 = v["flags"].parse().unwrap();
    assert_eq!(signed_message(&id, &commit, flags), hex(&v["message"]));
    let signature = SessionSignature::from_bytes(&hex(&v["signature"])).unwrap();
    assert!(public.verify_commit(&id, &commit, flags, &signature));
    assert!(!public.verify_commit(&id, &commit, flags ^ 1, &signature), "other flags");
    // Ed25519 is deterministic: lockbox's half is the vector's byte for byte.
    let ours = key.sign_commit(&id, &commit, flags).unwrap().to_bytes();
    assert_eq!(ours[..64], hex(&v["signature"])[..64]);

    let passphrase = v["passphrase"].clone();
    let protected = SigningKey::parse_file(v["protected key line"].as_bytes(), &mut |_| {
        Some(Password::from(passphrase.as_str()))
    })
    .unwrap();
    assert_eq!(protected.verifying_key(), public);
}

#[test]
fn a_signature_verifies_only_for_its_archive_commit_flags_and_key() {
    let key = SigningKey::generate().unwrap();
    let public = key.verifying_key();
    let signature = key.sign_commit(&ID, &COMMIT, 0).unwrap();
    assert!(public.verify_commit(&ID, &COMMIT, 0, &signature));
    assert!(!public.verify_commit(&[4; 16], &COMMIT, 0, &signature), "copied to another archive");
    assert!(!public.verify_commit(&ID, &COMMIT, 1, &signature), "other flags");
    assert!(!public.verify_commit(&ID, &[8; 32], 0, &signature), "another commit");
    let other = SigningKey::generate().unwrap();
    assert!(!other.verifying_key().verify_commit(&ID, &COMMIT, 0, &signature), "another key");
    assert_ne!(other.fingerprint(), key.fingerprint());
    // Hedged: two signatures of one message differ, and both verify.
    let again = key.sign_commit(&ID, &COMMIT, 0).unwrap();
    assert_ne!(again, signature);
    assert!(public.verify_commit(&ID, &COMMIT, 0, &again));
}

/// Hybrid: a signature is valid only when both halves verify, so a good
/// half beside a bad (or another signature's) one is refused.
#[test]
fn both_halves_must_verify() {
    let key = SigningKey::generate().unwrap();
    let public = key.verifying_key();
    let good = key.sign_commit(&ID, &COMMIT, 0).unwrap().to_bytes();
    let elsewhere = key.sign_commit(&ID, &[1; 32], 0).unwrap().to_bytes();
    for (what, at) in [("Ed25519", 10), ("ML-DSA-65", 64 + 1000), ("ML-DSA-65's hint", SIGNATURE_LEN - 1)] {
        let mut bad = good.clone();
        bad[at] ^= 1;
        let bad = SessionSignature::from_bytes(&bad).unwrap();
        assert!(!public.verify_commit(&ID, &COMMIT, 0, &bad), "a flipped bit in the {what} half");
    }
    let mixed = [&good[..64], &elsewhere[64..]].concat();
    assert!(!public.verify_commit(&ID, &COMMIT, 0, &SessionSignature::from_bytes(&mixed).unwrap()));
    let mixed = [&elsewhere[..64], &good[64..]].concat();
    assert!(!public.verify_commit(&ID, &COMMIT, 0, &SessionSignature::from_bytes(&mixed).unwrap()));
    for len in [0, 64, SIGNATURE_LEN - 1, SIGNATURE_LEN + 1] {
        let bytes = vec![0u8; len];
        assert!(matches!(SessionSignature::from_bytes(&bytes), Err(KeyError::InvalidSignature(_))), "{len}");
    }
    assert!(!public.verify_commit(
        &ID,
        &COMMIT,
        0,
        &SessionSignature::from_bytes(&[0; SIGNATURE_LEN]).unwrap()
    ));
}

/// A signature over another label (the same archive and commit)
/// is refused: the label is part of what is signed.
#[test]
fn a_signature_over_another_label_is_refused() {
    let key = SigningKey::generate().unwrap();
    let mut message = signed_message(&ID, &COMMIT, 0);
    message[..28].copy_from_slice(b"revault-lockbox v3 signaturX");
    let (ed, ml) = key.seeds().split_at(32);
    let ed = super::halves::ed25519_sign(ed.try_into().unwrap(), &message);
    let ml = super::halves::ml_dsa_sign(ml.try_into().unwrap(), &message, b"", &[0; 32]).unwrap();
    let forged = SessionSignature::from_bytes(&[&ed[..], &ml].concat()).unwrap();
    assert!(!key.verifying_key().verify_commit(&ID, &COMMIT, 0, &forged));
}

#[test]
fn key_files_round_trip() {
    let key = SigningKey::generate().unwrap();
    let text = key.to_file_text(None).unwrap();
    assert!(text.contains(&format!("# fingerprint: {}\n", key.fingerprint())));
    let back = SigningKey::parse_file(text.as_bytes(), &mut |_| panic!("no passphrase asked")).unwrap();
    assert_eq!(back.seeds(), key.seeds());

    let pass = Password::from("hunter2");
    let text = key.to_file_text(Some((&pass, KdfParams::INSECURE_FOR_TESTS))).unwrap();
    assert!(text.contains("LOCKBOX-SIGNING-KEY-ARGON2ID-1 8 1 1 "), "{}", text.as_str());
    assert!(!text.contains(super::file::hex(key.seeds()).as_str()));
    let back = SigningKey::parse_file(text.as_bytes(), &mut |_| Some(pass.clone())).unwrap();
    assert_eq!(back.seeds(), key.seeds());
    let wrong = SigningKey::parse_file(text.as_bytes(), &mut |_| Some(Password::from("hunter3")));
    assert!(matches!(wrong, Err(KeyError::WrongPassphrase)), "{wrong:?}");
    let none = SigningKey::parse_file(text.as_bytes(), &mut |_| None);
    assert!(matches!(none, Err(KeyError::PassphraseRequired)), "{none:?}");
    // The parameters are bound: a cheaper cost written in fails the seal.
    let cheaper = text.replace("ARGON2ID-1 8 1 1 ", "ARGON2ID-1 8 2 1 ");
    let cheaper = SigningKey::parse_file(cheaper.as_bytes(), &mut |_| Some(pass.clone()));
    assert!(matches!(cheaper, Err(KeyError::WrongPassphrase)), "{cheaper:?}");

    let public = key.verifying_key().to_file_text();
    assert_eq!(&VerifyingKey::parse_file(public.as_bytes()).unwrap(), key.verifying_key());
    assert_eq!(format!("{key:?}"), format!("SigningKey({})", key.fingerprint()));
}

#[test]
fn bad_key_files_are_named_and_refused() {
    let key = SigningKey::generate().unwrap();
    let clear = key.to_file_text(None).unwrap();
    let line = clear.lines().last().unwrap().to_owned();
    for bad in [
        String::new(),
        "# only a comment\n".into(),
        format!("{line}\n{line}\n"),
        line[..line.len() - 2].to_owned(),
        line.to_uppercase(),
        line.replace("LOCKBOX-SIGNING-KEY-1", "LOCKBOX-KEY-1"),
        "LOCKBOX-SIGNING-KEY-ARGON2ID-1 8 1 1\n".into(),
        format!("LOCKBOX-SIGNING-KEY-ARGON2ID-1 4294967295 1 1 {} {}\n", "00".repeat(16), "00".repeat(80)),
        format!("LOCKBOX-SIGNING-KEY-ARGON2ID-1 8 x 1 {} {}\n", "00".repeat(16), "00".repeat(80)),
        format!("LOCKBOX-SIGNING-KEY-ARGON2ID-1 8 1 1 {} {}\n", "00".repeat(15), "00".repeat(80)),
    ] {
        let got = SigningKey::parse_file(bad.as_bytes(), &mut |_| panic!("no passphrase before the checks"));
        assert!(matches!(got, Err(KeyError::InvalidSigningKey(_))), "{bad:?}: {got:?}");
    }
    assert!(matches!(
        SigningKey::parse_file(b"\xff\xfe", &mut |_| None),
        Err(KeyError::InvalidSigningKey(_))
    ));

    let public = key.verifying_key().to_file_text();
    let b64 = public.lines().last().unwrap().split_once(' ').unwrap().1.to_owned();
    let short = BASE64_STANDARD.encode(&key.verifying_key().as_bytes()[1..]);
    // y = 2 has no x on edwards25519: not a point, so not a key.
    let mut not_a_point = key.verifying_key().as_bytes().to_vec();
    not_a_point[..32].copy_from_slice(&[2; 32]);
    not_a_point[1..32].fill(0);
    for bad in [
        public.replace("LOCKBOX-SIGNING-PUBLIC-KEY-1", "LOCKBOX-SIGNING-KEY-1"),
        public.replace(&b64, &b64[..b64.len() - 4]),
        public.replace(&b64, &short),
        public.replace(&b64, &BASE64_STANDARD.encode(&not_a_point)),
        format!("{public}{public}"),
    ] {
        let got = VerifyingKey::parse_file(bad.as_bytes());
        assert!(matches!(got, Err(KeyError::InvalidSigningPublicKey(_))), "{got:?}");
    }
}

#[test]
fn fingerprints_parse_back_and_bad_ones_are_named() {
    let fp = SigningKey::generate().unwrap().fingerprint();
    let text = fp.to_string();
    assert!(text.starts_with("lbsig1") && text.len() == 64, "{text}");
    assert_eq!(text.parse::<Fingerprint>().unwrap(), fp);
    assert_eq!(text.to_uppercase().parse::<Fingerprint>().unwrap(), fp);
    let mut typo = text.clone().into_bytes();
    typo[20] = if typo[20] == b'q' { b'p' } else { b'q' };
    let age = "age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq";
    for bad in [String::from_utf8(typo).unwrap(), text[..40].to_owned(), age.to_owned(), "lbsig1".into()] {
        let err = bad.parse::<Fingerprint>().unwrap_err();
        assert!(matches!(err, KeyError::InvalidFingerprint { .. }), "{bad}: {err}");
        assert!(err.to_string().starts_with("invalid signer fingerprint"), "{err}");
    }
}
