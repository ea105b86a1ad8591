//! Every Wycheproof Ed25519 and ML-DSA-65 case (`tests/vectors/wycheproof/`),
//! one test per file, through the code the archive uses: public keys
//! decoded by [`VerifyingKey::from_bytes`] (the other half a fixed valid
//! key), secret seeds read by [`SigningKey::parse_file`], and the halves'
//! own sign and verify functions that `sign_commit` and `verify_commit`
//! call. A case marked `invalid` must be refused; one that gives only
//! `mu` (external-μ signing, an interface the archive does not use) is
//! counted and listed as not applicable.

use std::path::PathBuf;

use serde_json::Value;

use super::halves::{ml_dsa_sign, ED25519_PUBLIC_LEN, SEED_LEN};
use super::{SigningKey, VerifyingKey};

fn load(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/wycheproof").join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex {s}");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn field(v: &Value, name: &str) -> Vec<u8> {
    v.get(name).and_then(Value::as_str).map(hex).unwrap_or_default()
}

/// A fixed valid key whose halves complete a one-algorithm vector key.
fn other_half() -> SigningKey {
    SigningKey::from_seeds(&[7; 2 * SEED_LEN])
}

/// Every case of a file: the count of each outcome, after checking it
/// matches the file's own `numberOfTests`.
struct Tally {
    total: usize,
    agreed: usize,
    refused_invalid: usize,
    not_applicable: Vec<u64>,
    disagreements: Vec<String>,
}

impl Tally {
    fn new() -> Tally {
        Tally { total: 0, agreed: 0, refused_invalid: 0, not_applicable: vec![], disagreements: vec![] }
    }

    /// One case: `accepted` is whether the code took it; the file's
    /// `result` says whether it should have.
    fn case(&mut self, test: &Value, accepted: bool) {
        self.total += 1;
        let want = match test["result"].as_str().unwrap() {
            "valid" => true,
            "invalid" => false,
            other => panic!("tcId {}: result {other} not handled (none in these files)", test["tcId"]),
        };
        if accepted == want {
            self.agreed += 1;
            self.refused_invalid += usize::from(!want);
        } else {
            self.disagreements.push(format!(
                "tcId {} ({}, {:?}): expected {}, got {}",
                test["tcId"],
                test["comment"],
                test["flags"],
                if want { "accepted" } else { "refused" },
                if accepted { "accepted" } else { "refused" }
            ));
        }
    }

    fn not_applicable(&mut self, test: &Value) {
        self.total += 1;
        self.not_applicable.push(test["tcId"].as_u64().unwrap());
    }

    fn finish(self, file: &str, doc: &Value) {
        println!(
            "{file}: {} cases, {} agreed ({} invalid refused), {} not applicable (external μ): tcId {:?}",
            self.total,
            self.agreed,
            self.refused_invalid,
            self.not_applicable.len(),
            self.not_applicable
        );
        assert!(self.disagreements.is_empty(), "{file}: {:#?}", self.disagreements);
        assert_eq!(self.total as u64, doc["numberOfTests"].as_u64().unwrap(), "{file}: every case ran");
        assert_eq!(self.agreed + self.not_applicable.len(), self.total);
    }
}

fn tests(doc: &Value) -> impl Iterator<Item = (&Value, &Value)> {
    doc["testGroups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["tests"].as_array().unwrap().iter().map(move |t| (g, t)))
}

#[test]
fn wycheproof_ed25519() {
    let doc = load("ed25519_test.json");
    let other = other_half();
    let mut tally = Tally::new();
    for (group, test) in tests(&doc) {
        let mut bytes = hex(group["publicKey"]["pk"].as_str().unwrap());
        bytes.extend_from_slice(&other.verifying_key().as_bytes()[ED25519_PUBLIC_LEN..]);
        let accepted = VerifyingKey::from_bytes(&bytes)
            .is_ok_and(|key| key.ed25519().verify(&field(test, "msg"), &field(test, "sig")));
        tally.case(test, accepted);
    }
    assert_eq!(tally.refused_invalid, 63);
    tally.finish("ed25519_test.json", &doc);
}

#[test]
fn wycheproof_ml_dsa_65_verify() {
    let doc = load("mldsa_65_verify_test.json");
    let other = other_half();
    let mut tally = Tally::new();
    for (group, test) in tests(&doc) {
        let mut bytes = other.verifying_key().as_bytes()[..ED25519_PUBLIC_LEN].to_vec();
        bytes.extend_from_slice(&field(group, "publicKey"));
        let accepted = VerifyingKey::from_bytes(&bytes).is_ok_and(|key| {
            key.ml_dsa().verify(&field(test, "msg"), &field(test, "ctx"), &field(test, "sig"))
        });
        tally.case(test, accepted);
    }
    assert_eq!(tally.refused_invalid, 131);
    tally.finish("mldsa_65_verify_test.json", &doc);
}

/// Key generation from the seed (its public key must be the vector's),
/// then signing (the signature must be the vector's, byte for byte, and
/// verify); a seed of the wrong length must be refused by the key file
/// parser, a context over 255 bytes by the signer.
#[test]
fn wycheproof_ml_dsa_65_sign_seed() {
    let doc = load("mldsa_65_sign_seed_test.json");
    let mut tally = Tally::new();
    for (group, test) in tests(&doc) {
        if test.get("msg").is_none() {
            assert!(test.get("mu").is_some(), "tcId {}: neither msg nor mu", test["tcId"]);
            tally.not_applicable(test);
            continue;
        }
        // The secret as a key file holds it: an Ed25519 seed, then ξ.
        let line = format!(
            "LOCKBOX-SIGNING-KEY-1 {}{}",
            "07".repeat(SEED_LEN),
            group["privateSeed"].as_str().unwrap()
        );
        let Ok(key) = SigningKey::parse_file(line.as_bytes(), &mut |_| None) else {
            tally.case(test, false);
            continue;
        };
        let public = &key.verifying_key().as_bytes()[ED25519_PUBLIC_LEN..];
        assert_eq!(public, &field(group, "publicKey")[..], "tcId {}: key generation", test["tcId"]);
        let seed: &[u8; SEED_LEN] = key.seeds()[SEED_LEN..].try_into().unwrap();
        let mut rnd = [0u8; 32];
        if let Some(given) = test.get("rnd").and_then(Value::as_str) {
            rnd.copy_from_slice(&hex(given));
        }
        let (msg, ctx) = (field(test, "msg"), field(test, "ctx"));
        let accepted = match ml_dsa_sign(seed, &msg, &ctx, &rnd) {
            None => false,
            Some(sig) => {
                assert_eq!(sig, field(test, "sig"), "tcId {}: the signature differs", test["tcId"]);
                assert!(key.verifying_key().ml_dsa().verify(&msg, &ctx, &sig), "tcId {}", test["tcId"]);
                true
            }
        };
        tally.case(test, accepted);
    }
    assert_eq!(tally.not_applicable.len(), 17);
    assert_eq!(tally.refused_invalid, 4);
    tally.finish("mldsa_65_sign_seed_test.json", &doc);
}
