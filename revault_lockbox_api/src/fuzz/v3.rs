//! The decoders format v3 added, one entry point each: the session header
//! (FORMAT.md §3.9), the unit frame (§3.4), the signature block with its
//! signatures checked (§3.10), the sessions-tree nodes (§3.7), and the
//! salvage scanner over a whole byte string (§6.6); and the seeds for
//! them, cut from a real (signed) archive.

use std::io::Cursor;

use super::{cheap_slots, Seed, PASSWORD};
use crate::archive::{Archive, OpenOptions, Salvage};
use crate::crypto::Password;
use crate::error::{Error, Result};
use crate::format::{
    decode_internal, decode_leaf, decode_signatures, encode_internal, encode_leaf, Child, Codec, Frame,
    HeaderClear, SessionInfo, SessionKind, SessionsChild, Trailer, ARCHIVE_ID_LEN, FRAME_LEN,
    SESSIONS_PER_NODE, SESSION_HEADER_CLEAR_LEN, TRAILER_LEN,
};
use crate::keys::check_signatures;

/// Length of a unit's frame, the input of [`frame`].
pub const FRAME_INPUT_LEN: usize = FRAME_LEN;
/// Length of a session header's clear part, which starts a
/// [`session_header`] input.
pub const SESSION_HEADER_CLEAR: usize = SESSION_HEADER_CLEAR_LEN;
/// First byte of a [`sessions`] input that decodes the rest as a leaf.
pub const SESSIONS_LEAF: u8 = 0;
/// First byte of a [`sessions`] input that decodes the rest as an internal node.
pub const SESSIONS_INTERNAL: u8 = 1;
/// What starts a [`signature_block`] input before the block: the archive
/// id and the commit hash the signatures are checked against.
pub const SIGNED_PREFIX_LEN: usize = ARCHIVE_ID_LEN + 32;

/// A session header: its clear part, then its body's plaintext (as after
/// opening).
pub fn session_header(data: &[u8]) {
    let Some((clear, body)) = data.split_first_chunk::<SESSION_HEADER_CLEAR_LEN>() else { return };
    let _ = HeaderClear::decode(clear);
    let _ = SessionInfo::decode(body);
}

/// A unit's frame.
pub fn frame(data: &[u8]) {
    if let Ok(bytes) = <&[u8; FRAME_LEN]>::try_from(data) {
        let _ = Frame::decode(bytes);
    }
}

/// A signature block after the archive id and commit hash it is checked
/// against ([`SIGNED_PREFIX_LEN`] bytes): decoded, then every signature
/// checked as a reader checks it (key id, public key, both halves).
pub fn signature_block(data: &[u8]) {
    let Some((id, rest)) = data.split_first_chunk::<ARCHIVE_ID_LEN>() else { return };
    let Some((commit, block)) = rest.split_first_chunk::<32>() else { return };
    if let Ok(signatures) = decode_signatures(block) {
        let _ = check_signatures(id, commit, &signatures);
    }
}

/// A sessions-tree node's plaintext after its selector byte (`% 2`:
/// [`SESSIONS_LEAF`], [`SESSIONS_INTERNAL`]).
pub fn sessions(data: &[u8]) {
    let Some((&which, node)) = data.split_first() else { return };
    if which % 2 == SESSIONS_LEAF {
        drop(decode_leaf(node));
    } else {
        drop(decode_internal(node));
    }
}

/// A whole byte string scanned for what it proves, as `repair` and
/// `extract --keep-going` scan a damaged archive, with [`PASSWORD`]; the
/// proven entries verified. Skipped, as [`archive`](super::archive), when
/// a password slot is dear.
pub fn salvage(data: &[u8]) {
    if !cheap_slots(data) {
        return;
    }
    let options = OpenOptions::new().threads(1);
    if let Ok(s) = Salvage::scan(Cursor::new(data), &Password::from(PASSWORD), options) {
        let _ = s.verify();
    }
}

/// Seeds for the targets above, each `(target, name, input)`, from
/// `archive` (opened with `password`), whose last session should be signed
/// for a [`signature_block`] seed that verifies: its first session's
/// header (clear part, and the body of its last session's description),
/// the first unit's and the root's frames, the last block with its id and
/// commit, and a sessions leaf and internal node of its own records.
pub fn v3_seeds(archive: &[u8], password: &Password) -> Result<Vec<(&'static str, Seed)>> {
    let opened = Archive::open(Cursor::new(archive), password)?;
    let bad = |why: &'static str| Error::malformed("seed archive", why);
    let start = opened.data_start() as usize;
    let clear = archive.get(start..start + SESSION_HEADER_CLEAR_LEN).ok_or_else(|| bad("cut"))?;
    let info = SessionInfo {
        number: 0,
        created_ns: 1_700_000_000_123_456_789,
        kind: SessionKind::Change,
        label: "seed".into(),
        tool: "revault_lockbox_api 0.1.0".into(),
        walk: None,
    };
    let mut out = vec![("session_header", ("first".into(), [clear, &info.encode()].concat()))];

    let at = archive.len() - TRAILER_LEN;
    let trailer_bytes: &[u8; TRAILER_LEN] = archive[at..].try_into().expect("trailer length");
    let trailer = Trailer::decode(trailer_bytes, at as u64).map_err(|_| bad("trailer"))?;
    let body_len = u32::from_le_bytes(clear[60..64].try_into().expect("4 bytes")) as usize;
    let first_unit = start + SESSION_HEADER_CLEAR_LEN + body_len;
    let root = trailer.root_offset as usize;
    for (name, offset) in [("first-unit", first_unit), ("root", root)] {
        let frame = archive.get(offset..offset + FRAME_LEN).ok_or_else(|| bad("frame"))?;
        out.push(("frame", (name.into(), frame.to_vec())));
    }
    let block_at = trailer.signature_offset() as usize;
    let block = &archive[block_at..block_at + trailer.signature_len as usize];
    let signed = [&trailer.archive_id[..], &trailer.commit_hash(), block].concat();
    out.push(("signature_block", ("last".into(), signed)));

    let record = opened.root().sessions.last().clone();
    let leaf = encode_leaf(&vec![record.clone(); SESSIONS_PER_NODE]);
    let child = Child {
        first_key: record.key(),
        offset: trailer.root_offset,
        stored_len: trailer.root_stored_len,
        plain_len: trailer.root_plain_len,
        codec: opened.root().runs[0].top.children.first().map_or(Codec::Zstd, |c| c.codec),
        hash: trailer.root_hash,
    };
    let children = vec![SessionsChild { child, salt: record.salt }; SESSIONS_PER_NODE];
    let internal = encode_internal(&children);
    out.push(("sessions", ("leaf".into(), [&[SESSIONS_LEAF][..], &leaf].concat())));
    out.push(("sessions", ("internal".into(), [&[SESSIONS_INTERNAL][..], &internal].concat())));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::crypto::KdfParams;
    use crate::keys::SigningKey;
    use crate::session::{ArchiveWriter, CreateOptions, Metadata};

    #[test]
    fn v3_seeds_decode_and_the_signature_seed_verifies() {
        let password = Password::from(PASSWORD);
        let key = Arc::new(SigningKey::generate().unwrap());
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS).sign(Arc::clone(&key));
        let mut w = ArchiveWriter::new(Vec::new(), &password, options).unwrap();
        w.add_file("a", &Metadata::new(0o644, 0, 0, 0, 0), 3, &b"abc"[..]).unwrap();
        let archive = w.finish().unwrap();
        let seeds = v3_seeds(&archive, &password).unwrap();
        let targets: Vec<&str> = seeds.iter().map(|(t, _)| *t).collect();
        assert_eq!(targets, ["session_header", "frame", "frame", "signature_block", "sessions", "sessions"]);
        for (target, (name, input)) in &seeds {
            let ok = match *target {
                "session_header" => {
                    let (clear, body) = input.split_first_chunk::<SESSION_HEADER_CLEAR_LEN>().unwrap();
                    HeaderClear::decode(clear).is_ok() && SessionInfo::decode(body).is_ok()
                }
                "frame" => Frame::decode(input[..].try_into().unwrap()).is_ok(),
                "signature_block" => {
                    let (id, rest) = input.split_first_chunk::<ARCHIVE_ID_LEN>().unwrap();
                    let (commit, block) = rest.split_first_chunk::<32>().unwrap();
                    let checks = check_signatures(id, commit, &decode_signatures(block).unwrap());
                    checks.len() == 1 && checks[0].valid && checks[0].signer == Some(key.fingerprint())
                }
                _ if input[0] == SESSIONS_LEAF => decode_leaf(&input[1..]).is_ok(),
                _ => decode_internal(&input[1..]).is_ok(),
            };
            assert!(ok, "{target}/{name} decodes");
        }
        // The scanner over the archive, whole and cut, returns.
        salvage(&archive);
        salvage(&archive[..archive.len() / 2]);
    }
}
