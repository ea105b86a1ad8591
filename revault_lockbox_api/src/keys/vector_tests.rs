//! Every `x25519*` and `hybrid*` vector of the C2SP age test suite
//! (`tests/vectors/age-cctv/`), run through the stanza parser and the
//! identities the slots use, then cross-checked by decrypting the whole
//! file with `age::Decryptor` and the same identities.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use age_core::secrecy::ExposeSecret;
use sha2::{Digest, Sha256};

use super::slot::{parse_stanzas, unwrap_file_key, Unwrapped};
use super::Identity;

#[derive(Debug, PartialEq)]
enum Outcome {
    FileKey(Vec<u8>),
    NoMatch,
    HeaderFailure,
}

struct Vector {
    name: String,
    expect: String,
    file_key: Vec<u8>,
    payload_sha256: Option<Vec<u8>>,
    identities: Vec<Identity>,
    age_file: Vec<u8>,
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn load(path: &std::path::Path) -> Vector {
    let raw = std::fs::read(path).unwrap();
    let split = raw.windows(2).position(|w| w == b"\n\n").expect("blank line after the vector header");
    let header = std::str::from_utf8(&raw[..split]).unwrap();
    let mut age_file = raw[split + 2..].to_vec();
    let mut v = Vector {
        name: path.file_name().unwrap().to_string_lossy().into_owned(),
        expect: String::new(),
        file_key: vec![],
        payload_sha256: None,
        identities: vec![],
        age_file: vec![],
    };
    for line in header.lines() {
        let (key, value) = line.split_once(": ").unwrap();
        match key {
            "expect" => v.expect = value.to_owned(),
            "file key" => v.file_key = hex(value),
            "payload" => v.payload_sha256 = Some(hex(value)),
            "identity" => v.identities.extend(Identity::parse_file(value.as_bytes(), &mut |_| None).unwrap()),
            "compressed" => {
                assert_eq!(value, "zlib");
                let mut out = Vec::new();
                flate2::read::ZlibDecoder::new(&age_file[..]).read_to_end(&mut out).unwrap();
                age_file = out;
            }
            "comment" | "armored" | "passphrase" => {}
            other => panic!("{}: unknown vector key {other}", path.display()),
        }
    }
    v.age_file = age_file;
    v
}

/// The header through the slot code: age's stanza parser (with the slot
/// limits) and the identities' unwrapping.
fn unwrap_header(v: &Vector) -> Outcome {
    let Some(rest) = v.age_file.strip_prefix(b"age-encryption.org/v1\n") else {
        return Outcome::HeaderFailure;
    };
    let Ok((stanzas, rest)) = parse_stanzas(rest) else {
        return Outcome::HeaderFailure;
    };
    if !rest.starts_with(b"--- ") {
        return Outcome::HeaderFailure;
    }
    match unwrap_file_key(&v.identities, &stanzas, |_| true) {
        Err(_) => Outcome::HeaderFailure,
        Ok(Unwrapped::NoMatch) => Outcome::NoMatch,
        Ok(Unwrapped::Key(k)) => Outcome::FileKey(k.expose_secret().to_vec()),
    }
}

/// The whole file through age's decryptor with the same identities:
/// the payload's SHA-256, or None if age refused the file.
fn age_decrypt(v: &Vector) -> Option<Vec<u8>> {
    let decryptor = age::Decryptor::new(&v.age_file[..]).ok()?;
    let ids = v.identities.iter().filter_map(|i| i.native());
    let mut reader = decryptor.decrypt(ids).ok()?;
    let mut payload = Vec::new();
    reader.read_to_end(&mut payload).ok()?;
    Some(Sha256::digest(&payload).to_vec())
}

#[test]
fn every_x25519_and_hybrid_vector_gives_its_expected_outcome() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/age-cctv/testdata");
    let mut passed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let v = load(&path);
        let family = if v.name.starts_with("x25519") {
            "x25519"
        } else if v.name.starts_with("hybrid") {
            "hybrid"
        } else {
            continue;
        };
        let got = unwrap_header(&v);
        let want = match v.expect.as_str() {
            "success" => Outcome::FileKey(v.file_key.clone()),
            "no match" => Outcome::NoMatch,
            "header failure" => Outcome::HeaderFailure,
            other => panic!("{}: expectation {other} not handled", v.name),
        };
        let decrypted = age_decrypt(&v);
        let age_agrees = match v.expect.as_str() {
            "success" => decrypted.is_some() && decrypted == v.payload_sha256,
            _ => decrypted.is_none(),
        };
        if got == want && age_agrees {
            *passed.entry(family).or_default() += 1;
        } else {
            failures.push(format!(
                "{}: expected {want:?}, slot code gave {got:?}, age::Decryptor agrees: {age_agrees}",
                v.name
            ));
        }
    }
    println!("age vectors passed: {passed:?}");
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(passed.get("x25519"), Some(&14), "every x25519 vector ran");
    assert_eq!(passed.get("hybrid"), Some(&18), "every hybrid vector ran");
}

/// FORMAT.md §3.3b's recipient slot, byte for byte: a body built by a
/// second implementation (Python's `cryptography`) from the spec, on the
/// C2SP `x25519` vector's stanza and file key, for the archive id
/// `00 01 … 0f` and the content key `40 41 … 5f`. The slot code opens it
/// with that vector's identity; under another archive's AAD it does not.
#[test]
fn a_recipient_slot_body_is_a_known_answer() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/age-cctv/testdata");
    let v = load(&dir.join("x25519"));
    let body = concat!(
        "lockbox-recipient-slot/v1\n",
        "-> X25519 TEiF0ypqr+bpvcqXNyCVJpL7OuwPdVwPL7KQEbFDOCc\n",
        "hjabGXwSLQ9c3S6Lw2i+S2Tu2fiwQHHslbBN6B41FLE\n",
        "--- hc9Fm92GFKDX+eNrREIjG3i1X1tcLAuf8X7U7LzhP50WBoWAntfpn1799nobzzuG\n",
    );
    assert_eq!(body.len(), 193);
    let mut id: [u8; 16] = std::array::from_fn(|i| i as u8);
    let content: [u8; 32] = std::array::from_fn(|i| 0x40 + i as u8);
    let aad = crate::format::recipient_slot_aad(&id);
    let opened = super::slot::unwrap_content_key(&v.identities, body.as_bytes(), &aad).unwrap();
    assert_eq!(opened.as_deref(), Some(&content));
    id[0] ^= 1;
    let elsewhere = crate::format::recipient_slot_aad(&id);
    assert!(super::slot::unwrap_content_key(&v.identities, body.as_bytes(), &elsewhere).unwrap().is_none());
}
