//! Recipient slot bodies: wrapping the content key to one recipient and
//! unwrapping it with identities. `docs/KEYS.md` gives the layout:
//!
//! ```text
//! body   = MAGIC || stanza+ || "---" || " " || base64(sealed) || "\n"
//! sealed = ChaCha20-Poly1305(key = HKDF-SHA256(ikm = file key, info = SEAL_INFO),
//!                            nonce = 0, aad = u32be(len(prefix)) || prefix || aad,
//!                            plaintext = content key)
//! ```
//! where `prefix` is every byte before the space after `---`.

use age_core::format::{read::age_stanza, write, FileKey, Stanza, FILE_KEY_BYTES};
use age_core::secrecy::ExposeSecret;
use base64::prelude::{Engine, BASE64_STANDARD_NO_PAD};
use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce, Tag};
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use super::{
    random_bytes, Identity, KeyError, Recipient, MAX_SLOT_BODY_LEN, MAX_SLOT_LINE_LEN, MAX_SLOT_STANZAS,
};

/// First line of every recipient slot body: kind and version.
pub(crate) const MAGIC: &[u8] = b"lockbox-recipient-slot/v1\n";
/// HKDF `info` for the key that seals the content key.
const SEAL_INFO: &[u8] = b"revault-lockbox recipient slot v1: content key";
/// Ends the stanzas, as in an age header.
const END: &[u8] = b"---";
/// Content key length.
const CONTENT_KEY_LEN: usize = 32;
/// Sealed content key: key and tag.
const SEALED_LEN: usize = CONTENT_KEY_LEN + 16;
/// Its unpadded base64 length.
const SEALED_B64_LEN: usize = (SEALED_LEN * 4).div_ceil(3);

/// The sealing key is used once (it derives from a fresh random file key),
/// so the nonce is fixed.
struct SealNonce;

impl SealNonce {
    fn get() -> Nonce {
        Nonce::from([0u8; 12])
    }
}

fn seal_key(file_key: &FileKey) -> Zeroizing<[u8; 32]> {
    let mut key = Zeroizing::new([0u8; 32]);
    Hkdf::<Sha256>::new(None, file_key.expose_secret())
        .expand(SEAL_INFO, key.as_mut())
        .expect("32 bytes is a valid HKDF-SHA256 length");
    key
}

fn seal_aad(prefix: &[u8], aad: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + prefix.len() + aad.len());
    out.extend_from_slice(&(prefix.len() as u32).to_be_bytes());
    out.extend_from_slice(prefix);
    out.extend_from_slice(aad);
    out
}

/// Wraps `content_key` to `recipient`: a self-contained slot body of at
/// most [`MAX_SLOT_BODY_LEN`] bytes, bound to `aad` (the archive id and
/// whatever else the format binds).
pub(crate) fn wrap_content_key(
    recipient: &Recipient,
    content_key: &[u8; 32],
    aad: &[u8],
) -> Result<Vec<u8>, KeyError> {
    let mut random = Zeroizing::new([0u8; FILE_KEY_BYTES]);
    random_bytes(random.as_mut())?;
    let file_key = FileKey::init_with_mut(|k| k.copy_from_slice(random.as_ref()));
    let stanzas = recipient.wrap_file_key(&file_key)?;
    if stanzas.is_empty() || stanzas.len() > MAX_SLOT_STANZAS {
        return Err(KeyError::Wrap(format!("recipient made {} stanzas", stanzas.len())));
    }

    let mut body = MAGIC.to_vec();
    for s in &stanzas {
        body = cookie_factory::gen_simple(write::age_stanza(&s.tag, &s.args, &s.body), body)
            .map_err(|e| KeyError::Wrap(format!("encoding stanza: {e:?}")))?;
    }
    body.extend_from_slice(END);

    let cipher = ChaCha20Poly1305::new(&Key::from(*seal_key(&file_key)));
    let mut sealed = Zeroizing::new([0u8; SEALED_LEN]);
    sealed[..CONTENT_KEY_LEN].copy_from_slice(content_key);
    let tag = cipher
        .encrypt_inout_detached(
            &SealNonce::get(),
            &seal_aad(&body, aad),
            (&mut sealed[..CONTENT_KEY_LEN]).into(),
        )
        .expect("32-byte message");
    sealed[CONTENT_KEY_LEN..].copy_from_slice(&tag);
    body.push(b' ');
    body.extend_from_slice(BASE64_STANDARD_NO_PAD.encode(&sealed[..]).as_bytes());
    body.push(b'\n');

    if body.len() > MAX_SLOT_BODY_LEN {
        return Err(KeyError::SlotTooLarge { len: body.len(), max: MAX_SLOT_BODY_LEN });
    }
    Ok(body)
}

/// A parsed slot body.
struct SlotBody<'a> {
    /// Everything the seal's AAD covers: magic, stanzas, `---`.
    prefix: &'a [u8],
    stanzas: Vec<Stanza>,
    sealed: [u8; SEALED_LEN],
}

fn parse_body(body: &[u8]) -> Result<SlotBody<'_>, KeyError> {
    if body.len() > MAX_SLOT_BODY_LEN {
        return Err(KeyError::MalformedSlot("body longer than 4096 bytes"));
    }
    let rest = body.strip_prefix(MAGIC).ok_or(KeyError::MalformedSlot("unknown slot kind or version"))?;
    let (stanzas, rest) = parse_stanzas(rest)?;
    if stanzas.is_empty() {
        return Err(KeyError::MalformedSlot("no recipient stanza"));
    }
    let prefix = &body[..body.len() - rest.len() + END.len()];
    let encoded = rest
        .strip_prefix(b"--- ")
        .and_then(|r| r.strip_suffix(b"\n"))
        .ok_or(KeyError::MalformedSlot("bad end line"))?;
    if encoded.len() != SEALED_B64_LEN {
        return Err(KeyError::MalformedSlot("sealed key has the wrong length"));
    }
    let mut sealed = [0u8; SEALED_LEN];
    match BASE64_STANDARD_NO_PAD.decode_slice(encoded, &mut sealed) {
        Ok(SEALED_LEN) => {}
        _ => return Err(KeyError::MalformedSlot("sealed key is not canonical base64")),
    }
    Ok(SlotBody { prefix, stanzas, sealed })
}

/// The stanza types of a slot body (`X25519`, `mlkem768x25519`,
/// `ssh-ed25519` ...), for listings; `None` for a malformed body.
pub(crate) fn stanza_types(body: &[u8]) -> Option<Vec<String>> {
    parse_body(body).ok().map(|b| b.stanzas.iter().map(|s| s.tag.clone()).collect())
}

/// Parses age stanzas (age's own strict parser) up to a line starting with
/// `---`, which is left in the returned rest. At most
/// [`MAX_SLOT_STANZAS`] stanzas, lines of at most [`MAX_SLOT_LINE_LEN`].
pub(super) fn parse_stanzas(mut input: &[u8]) -> Result<(Vec<Stanza>, &[u8]), KeyError> {
    let mut stanzas = Vec::new();
    while !input.starts_with(END) {
        if stanzas.len() == MAX_SLOT_STANZAS {
            return Err(KeyError::MalformedSlot("too many stanzas"));
        }
        let Ok((rest, stanza)) = age_stanza(input) else {
            return Err(KeyError::MalformedSlot("malformed stanza"));
        };
        let consumed = &input[..input.len() - rest.len()];
        if consumed.split(|&b| b == b'\n').any(|line| line.len() > MAX_SLOT_LINE_LEN) {
            return Err(KeyError::MalformedSlot("line too long"));
        }
        stanzas.push(Stanza::from(stanza));
        input = rest;
    }
    Ok((stanzas, input))
}

/// What the identities made of a slot's stanzas.
pub(super) enum Unwrapped {
    /// An identity unwrapped a file key (the vector tests compare it).
    Key(#[cfg_attr(not(test), allow(dead_code))] FileKey),
    /// No identity matched.
    NoMatch,
}

/// Runs every identity over the stanzas, age's way: the first that
/// unwraps a file key wins, a stanza that is not well formed is an error,
/// and a failed decryption only means "not this identity". `accept` can
/// refuse a file key (the content key's seal did not open), and the next
/// identity is tried. A plugin that refused (a wrong PIN) is reported when
/// no other identity matched; a plugin not on `PATH` at once.
pub(super) fn unwrap_file_key(
    identities: &[Identity],
    stanzas: &[Stanza],
    mut accept: impl FnMut(&FileKey) -> bool,
) -> Result<Unwrapped, KeyError> {
    let mut refused = None;
    for identity in identities {
        let answer = match identity.unwrap_stanzas(stanzas) {
            Err(e @ KeyError::PluginRefused { .. }) => {
                refused.get_or_insert(e);
                continue;
            }
            other => other?,
        };
        match answer {
            None => {}
            Some(Ok(file_key)) if accept(&file_key) => return Ok(Unwrapped::Key(file_key)),
            Some(Ok(_)) => {}
            Some(Err(age::DecryptError::InvalidHeader)) => {
                return Err(KeyError::MalformedSlot("invalid recipient stanza"));
            }
            Some(Err(_)) => {}
        }
    }
    refused.map_or(Ok(Unwrapped::NoMatch), Err)
}

/// Unwraps the content key from a slot body with any of `identities`.
/// `Ok(None)`: no identity matched, or the slot does not authenticate under
/// `aad` (the two are not told apart); an error only for a malformed body.
pub(crate) fn unwrap_content_key(
    identities: &[Identity],
    body: &[u8],
    aad: &[u8],
) -> Result<Option<Zeroizing<[u8; 32]>>, KeyError> {
    let slot = parse_body(body)?;
    let full_aad = seal_aad(slot.prefix, aad);
    let mut content_key = Zeroizing::new([0u8; CONTENT_KEY_LEN]);
    let tag = Tag::try_from(&slot.sealed[CONTENT_KEY_LEN..]).expect("16-byte tag");
    let found = unwrap_file_key(identities, &slot.stanzas, |file_key| {
        let cipher = ChaCha20Poly1305::new(&Key::from(*seal_key(file_key)));
        content_key.copy_from_slice(&slot.sealed[..CONTENT_KEY_LEN]);
        let opened = cipher.decrypt_inout_detached(
            &SealNonce::get(),
            &full_aad,
            content_key.as_mut_slice().into(),
            &tag,
        );
        opened.is_ok()
    })?;
    Ok(match found {
        Unwrapped::Key(_) => Some(content_key),
        Unwrapped::NoMatch => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::keygen;
    use std::path::Path;
    use std::process::Command;

    const AAD: &[u8] = b"archive id 0123456789abcdef";
    const CONTENT_KEY: [u8; 32] = [0x42; 32];

    fn generated(pq: bool) -> (Identity, Recipient) {
        let (text, public) = keygen(pq).unwrap();
        let id = Identity::parse_file(text.as_bytes(), &mut |_| None).unwrap().remove(0);
        (id, public.parse().unwrap())
    }

    /// A fresh identity of each age kind and a body wrapped to it.
    fn wrapped_bodies() -> Vec<([Identity; 1], Vec<u8>)> {
        [false, true]
            .map(|pq| {
                let (id, r) = generated(pq);
                ([id], wrap_content_key(&r, &CONTENT_KEY, AAD).unwrap())
            })
            .into()
    }

    /// Runs the real `ssh-keygen` to make `dir/id_{kind}`; false (with a
    /// note) when it is not installed.
    fn ssh_keygen(dir: &Path, kind: &str, bits: Option<&str>, passphrase: &str) -> bool {
        let path = dir.join(format!("id_{kind}"));
        let mut cmd = Command::new("ssh-keygen");
        cmd.args(["-q", "-t", kind, "-N", passphrase, "-C", "test", "-f"]).arg(&path);
        if let Some(bits) = bits {
            cmd.args(["-b", bits]);
        }
        match cmd.status() {
            Ok(s) if s.success() => true,
            Ok(s) => panic!("ssh-keygen failed: {s}"),
            Err(e) => {
                let why = format!("ssh-keygen cannot be run ({e})");
                assert!(
                    std::env::var_os("LOCKBOX_REQUIRE_TOOLS").is_none(),
                    "LOCKBOX_REQUIRE_TOOLS is set and {why}"
                );
                eprintln!("skipped: the {kind} SSH key test, {why}; set LOCKBOX_REQUIRE_TOOLS to make this a failure");
                false
            }
        }
    }

    /// An SSH key without passphrase made by `ssh-keygen`, or None.
    fn ssh_key(dir: &Path, kind: &str, bits: Option<&str>) -> Option<(Identity, Recipient)> {
        if !ssh_keygen(dir, kind, bits, "") {
            return None;
        }
        let path = dir.join(format!("id_{kind}"));
        let id = Identity::read_file(&path, &mut |_| None).unwrap().remove(0);
        let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
        let r: Recipient = public.parse().unwrap();
        assert_eq!(id.to_recipient(), Some(r.clone()));
        Some((id, r))
    }

    fn all_kinds() -> Vec<(Identity, Recipient)> {
        let dir = tempfile::tempdir().unwrap();
        let mut out = vec![generated(false), generated(true)];
        out.extend(ssh_key(dir.path(), "ed25519", None));
        out.extend(ssh_key(dir.path(), "rsa", Some("4096")));
        out
    }

    #[test]
    fn round_trip_for_every_kind_within_the_slot_room() {
        let kinds = all_kinds();
        for (id, r) in &kinds {
            let body = wrap_content_key(r, &CONTENT_KEY, AAD).unwrap();
            assert!(body.len() <= MAX_SLOT_BODY_LEN, "{}: {} bytes", r.kind(), body.len());
            println!("{} slot body: {} bytes", r.kind(), body.len());
            let got = unwrap_content_key(std::slice::from_ref(id), &body, AAD).unwrap().unwrap();
            assert_eq!(*got, CONTENT_KEY);
            // Every identity given, the right one found among them.
            let all: Vec<Identity> = kinds.iter().map(|(i, _)| i.clone()).collect();
            assert_eq!(*unwrap_content_key(&all, &body, AAD).unwrap().unwrap(), CONTENT_KEY);
            // The others do not match; the wrong AAD does not open it.
            let others: Vec<Identity> =
                kinds.iter().filter(|(_, o)| o != r).map(|(i, _)| i.clone()).collect();
            assert!(unwrap_content_key(&others, &body, AAD).unwrap().is_none(), "{}", r.kind());
            assert!(unwrap_content_key(std::slice::from_ref(id), &body, b"another archive")
                .unwrap()
                .is_none());
            assert!(unwrap_content_key(&[], &body, AAD).unwrap().is_none());
        }
    }

    #[test]
    fn wrong_identity_of_the_same_kind_does_not_match() {
        for pq in [false, true] {
            let (_, r) = generated(pq);
            let (other, _) = generated(pq);
            let body = wrap_content_key(&r, &CONTENT_KEY, AAD).unwrap();
            assert!(unwrap_content_key(&[other], &body, AAD).unwrap().is_none());
        }
    }

    #[test]
    fn every_flipped_byte_fails_cleanly() {
        for (ids, body) in wrapped_bodies() {
            for i in 0..body.len() {
                for bit in [0x01, 0x20, 0x80] {
                    let mut bad = body.clone();
                    bad[i] ^= bit;
                    match unwrap_content_key(&ids, &bad, AAD) {
                        Ok(None) | Err(KeyError::MalformedSlot(_)) => {}
                        Ok(Some(_)) => panic!("byte {i} ^ {bit:#x} still opened"),
                        Err(e) => panic!("byte {i}: unexpected error {e}"),
                    }
                }
            }
        }
    }

    #[test]
    fn truncated_and_extended_bodies_fail_cleanly() {
        for (ids, body) in wrapped_bodies() {
            for n in 0..body.len() {
                assert!(!matches!(unwrap_content_key(&ids, &body[..n], AAD), Ok(Some(_))), "prefix {n}");
            }
            let mut longer = body.clone();
            longer.push(b'\n');
            assert!(unwrap_content_key(&ids, &longer, AAD).is_err());
        }
    }

    #[test]
    fn hostile_bodies_are_refused_by_the_limits() {
        let (id, _) = generated(false);
        let ids = [id];
        let huge = vec![b'A'; MAX_SLOT_BODY_LEN + 1];
        assert!(matches!(unwrap_content_key(&ids, &huge, AAD), Err(KeyError::MalformedSlot(_))));
        let mut many = MAGIC.to_vec();
        for _ in 0..=MAX_SLOT_STANZAS {
            many.extend_from_slice(b"-> grease\n\n");
        }
        many.extend_from_slice(b"--- AAAA\n");
        assert!(matches!(
            unwrap_content_key(&ids, &many, AAD),
            Err(KeyError::MalformedSlot("too many stanzas"))
        ));
        let mut long_line = MAGIC.to_vec();
        long_line.extend_from_slice(b"-> grease ");
        long_line.extend(std::iter::repeat_n(b'x', MAX_SLOT_LINE_LEN));
        long_line.extend_from_slice(b"\n\n--- AAAA\n");
        assert!(matches!(
            unwrap_content_key(&ids, &long_line, AAD),
            Err(KeyError::MalformedSlot("line too long"))
        ));
        let mut no_stanza = MAGIC.to_vec();
        no_stanza.extend_from_slice(b"--- AAAA\n");
        assert!(unwrap_content_key(&ids, &no_stanza, AAD).is_err());
        assert!(unwrap_content_key(&ids, b"", AAD).is_err());
        assert!(unwrap_content_key(&ids, b"lockbox-recipient-slot/v2\n", AAD).is_err());
    }

    proptest::proptest! {
        /// Any bytes after the magic, and any mutation of a real body:
        /// an answer or a clean error, never a panic or an opened slot.
        #[test]
        fn arbitrary_bodies_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..4200),
                                        at in 0usize..2000, byte in proptest::num::u8::ANY) {
            let (id, r) = generated(false);
            let ids = [id];
            let mut body = MAGIC.to_vec();
            body.extend_from_slice(&tail);
            proptest::prop_assert!(!matches!(unwrap_content_key(&ids, &body, AAD), Ok(Some(_))));
            let mut real = wrap_content_key(&r, &CONTENT_KEY, AAD).unwrap();
            let at = at % real.len();
            if real[at] != byte {
                real[at] = byte;
                proptest::prop_assert!(!matches!(unwrap_content_key(&ids, &real, AAD), Ok(Some(_))));
            }
        }
    }

    #[test]
    fn passphrase_protected_ssh_key_asks_the_callback() {
        let dir = tempfile::tempdir().unwrap();
        if !ssh_keygen(dir.path(), "ed25519", None, "open sesame") {
            return;
        }
        let path = dir.path().join("id_ed25519");
        let mut asked = Vec::new();
        let ids = Identity::read_file(&path, &mut |what| {
            asked.push(what.to_owned());
            Some(crate::crypto::Password::from("open sesame"))
        })
        .unwrap();
        assert_eq!(asked.len(), 1);
        assert!(asked[0].contains("id_ed25519"), "{asked:?}");
        let r: Recipient = std::fs::read_to_string(path.with_extension("pub")).unwrap().parse().unwrap();
        let body = wrap_content_key(&r, &CONTENT_KEY, AAD).unwrap();
        assert_eq!(*unwrap_content_key(&ids, &body, AAD).unwrap().unwrap(), CONTENT_KEY);

        let wrong = Identity::read_file(&path, &mut |_| Some(crate::crypto::Password::from("nope")));
        assert!(matches!(wrong, Err(KeyError::WrongPassphrase)), "{wrong:?}");
        let none = Identity::read_file(&path, &mut |_| None);
        assert!(matches!(none, Err(KeyError::PassphraseRequired)), "{none:?}");
    }
}
