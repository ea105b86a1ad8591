//! What a holder of the content key can do to a signed session without the
//! signing key, below what the CLI tests reach: re-seal the trailer without
//! the block (a strip), or with a shortened one. The trailer's tag then
//! authenticates, so only the trust policy refuses it (FORMAT.md §3.10).

use std::io::Cursor;
use std::sync::Arc;

use crate::archive::{Archive, OpenOptions};
use crate::crypto::{KdfParams, Password};
use crate::error::{Error, SignatureError};
use crate::format::{decode_signatures, encode_signatures, Trailer, TRAILER_LEN};
use crate::keys::SigningKey;
use crate::quote::SessionName;
use crate::session::{ArchiveWriter, CreateOptions, Metadata};

/// The create, named as `log` numbers it: state 1.
const FIRST: SessionName = SessionName { number: 0, state: Some(1) };

/// A one-file archive signed by `key`.
fn signed(key: &Arc<SigningKey>) -> Vec<u8> {
    let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).sign(Arc::clone(key));
    let mut w = ArchiveWriter::new(Vec::new(), &Password::from("k"), options).unwrap();
    w.add_file("f", &Metadata::new(0o644, 0, 0, 0, 0), 5, &b"hello"[..]).unwrap();
    w.finish().unwrap()
}

/// `bytes` with its last session's block replaced by `block` and the
/// trailer re-sealed by a key holder (its tag recomputed).
fn reblocked(bytes: &[u8], block: &[u8]) -> Vec<u8> {
    let archive = Archive::open(Cursor::new(bytes.to_vec()), &Password::from("k")).unwrap();
    let at = bytes.len() - TRAILER_LEN;
    let mut trailer = Trailer::decode(bytes[at..].try_into().unwrap(), at as u64).unwrap();
    let start = trailer.signature_offset() as usize;
    let copy = &bytes[trailer.header_copy_offset() as usize..at];
    trailer.signature_len = block.len() as u32;
    trailer.tag = archive.run_keys[0].trailer_tag(&trailer.body());
    [&bytes[..start], block, copy, &trailer.encode()].concat()
}

fn open_trusting(bytes: Vec<u8>, key: &SigningKey) -> crate::error::Result<Archive<Cursor<Vec<u8>>>> {
    let options = OpenOptions::new().trust([key.fingerprint()]);
    Archive::open_with(Cursor::new(bytes), &Password::from("k"), options)
}

#[test]
fn a_signed_archive_opens_for_its_signer_only() {
    let (alice, bob) = (Arc::new(SigningKey::generate().unwrap()), SigningKey::generate().unwrap());
    let bytes = signed(&alice);
    let archive = open_trusting(bytes.clone(), &alice).unwrap();
    // The sessions tree's summary names the signer by the same key id.
    let record = archive.root().sessions.pending.last().unwrap();
    assert_eq!(record.summary.signers, [alice.fingerprint().0.to_vec()]);
    let signers = archive.check_signers(&[alice.fingerprint()]).unwrap();
    assert_eq!(signers.len(), 1);
    assert_eq!(signers[0].signatures[0].signer, Some(alice.fingerprint()));
    let err = open_trusting(bytes, &bob).unwrap_err();
    assert!(matches!(err, Error::Signature(SignatureError::Untrusted { session: FIRST, .. })), "{err}");
    assert!(err.is_authentication());
}

#[test]
fn a_key_holder_stripping_the_block_leaves_an_unsigned_session() {
    let alice = Arc::new(SigningKey::generate().unwrap());
    let stripped = reblocked(&signed(&alice), &[]);
    let plain = Archive::open(Cursor::new(stripped.clone()), &Password::from("k")).unwrap();
    assert!(plain.verify().unwrap().is_ok(), "the trailer authenticates and the content is whole");
    assert_eq!(plain.signature_count(), 0);
    let err = open_trusting(stripped, &alice).unwrap_err();
    assert!(matches!(err, Error::Signature(SignatureError::Unsigned { session: FIRST })), "{err}");
}

#[test]
fn a_truncated_signature_is_refused() {
    let alice = Arc::new(SigningKey::generate().unwrap());
    let bytes = signed(&alice);
    let at = bytes.len() - TRAILER_LEN;
    let trailer = Trailer::decode(bytes[at..].try_into().unwrap(), at as u64).unwrap();
    let block = &bytes[trailer.signature_offset() as usize..trailer.header_copy_offset() as usize];
    // Framing kept, the value cut short: present, names Alice, does not verify.
    let mut signatures = decode_signatures(block).unwrap();
    signatures[0].value.truncate(1000);
    let short = reblocked(&bytes, &encode_signatures(&signatures));
    let err = open_trusting(short, &alice).unwrap_err();
    assert!(matches!(err, Error::Signature(SignatureError::Invalid { session: FIRST, .. })), "{err}");
    // The block itself cut short: its framing fails, for every reader.
    let cut = reblocked(&bytes, &block[..block.len() - 1]);
    assert!(matches!(Archive::open(Cursor::new(cut), &Password::from("k")), Err(Error::Malformed(_))));
}
