//! Every Wycheproof ChaCha20-Poly1305 case
//! (`tests/vectors/wycheproof/chacha20_poly1305_test.json`) through the
//! page AEAD layer the codec uses, on both AEAD backends (RustCrypto on
//! whichever chacha20 backend runs here, and ring: [`AeadBackend`]): a
//! valid case must seal to the vector's ciphertext and tag and open back,
//! into a buffer of its own ([`SessionKeys::open_page_out`], raw pages,
//! behind a frame's bytes) and in place
//! ([`SessionKeys::open_page_in_place`], zstd pages; `open_index`, index
//! nodes); an invalid one must be refused by every opening path. Nonces
//! of other than 96 bits cannot be given to the layer at all
//! ([`PageNonce`] holds 12 bytes): they count as refused.

use std::path::PathBuf;

use serde_json::Value;

use super::{AeadBackend, PageNonce, SessionKeys};
use crate::format::{KEY_LEN, NONCE_LEN};

fn hex(v: &Value, name: &str) -> Vec<u8> {
    let s = v[name].as_str().unwrap_or_else(|| panic!("field {name}"));
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Whether every opening path accepts `ct || tag`, each giving `msg`.
fn opens(keys: &SessionKeys, nonce: PageNonce, aad: &[u8], sealed: &[u8], msg: &[u8]) -> [bool; 3] {
    let framed = [&[0xa5; 7][..], sealed].concat();
    let to = keys.open_page_out(nonce, aad, framed, 7, vec![0x5a; 3]).0.is_ok_and(|out| out == msg);
    let mut in_place = sealed.to_vec();
    let place = keys.open_page_in_place(nonce, aad, &mut in_place).is_ok_and(|n| in_place[..n] == *msg);
    let mut vec = sealed.to_vec();
    let index = keys.open_index(nonce, aad, &mut vec).is_ok() && vec == msg;
    [to, place, index]
}

#[test]
fn wycheproof_chacha20_poly1305_through_the_page_aead() {
    for backend in AeadBackend::all() {
        wycheproof_on(backend);
    }
}

fn wycheproof_on(backend: AeadBackend) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/wycheproof/chacha20_poly1305_test.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let (mut total, mut valid, mut refused, mut odd_nonces) = (0, 0, 0, 0);
    let mut disagreements = Vec::new();
    for group in doc["testGroups"].as_array().unwrap() {
        for test in group["tests"].as_array().unwrap() {
            total += 1;
            let id = &test["tcId"];
            let key: [u8; KEY_LEN] = hex(test, "key").try_into().expect("256-bit keys only in this file");
            let keys = SessionKeys::from_raw_key(&key, backend);
            let (aad, msg) = (hex(test, "aad"), hex(test, "msg"));
            let sealed = [hex(test, "ct"), hex(test, "tag")].concat();
            let want = match test["result"].as_str().unwrap() {
                "valid" => true,
                "invalid" => false,
                other => panic!("tcId {id}: result {other} not in this file"),
            };
            let Ok(nonce) = <[u8; NONCE_LEN]>::try_from(hex(test, "iv")) else {
                // The layer takes only 96-bit nonces: refused by its type.
                if want {
                    disagreements
                        .push(format!("tcId {id}: a valid case with a {}-bit nonce", group["ivSize"]));
                }
                odd_nonces += 1;
                refused += 1;
                continue;
            };
            let nonce = PageNonce::from_raw(nonce);
            let opened = opens(&keys, nonce, &aad, &sealed, &msg);
            if want {
                let mut buf = msg.clone();
                keys.seal_page(nonce, &aad, &mut buf);
                if buf != sealed || opened != [true; 3] {
                    disagreements.push(format!(
                        "tcId {id} ({}): sealed equal {}, opened {opened:?}",
                        test["comment"],
                        buf == sealed
                    ));
                }
                valid += 1;
            } else if opened != [false; 3] {
                disagreements.push(format!("tcId {id} ({}): invalid, opened {opened:?}", test["comment"]));
            } else {
                refused += 1;
            }
        }
    }
    println!(
        "chacha20_poly1305_test.json on {backend}: {total} cases, {valid} valid sealed and opened, \
         {refused} invalid refused ({odd_nonces} by the nonce type)"
    );
    assert!(disagreements.is_empty(), "{disagreements:#?}");
    assert_eq!(total as u64, doc["numberOfTests"].as_u64().unwrap(), "every case ran");
    assert_eq!((valid, refused, odd_nonces), (256, 69, 9));
}
