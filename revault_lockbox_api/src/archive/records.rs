//! The recovery records a reader checks (FORMAT.md §3.12): opening reads
//! the last session's footer and the trailer's second copy, `verify` every
//! session's footer and the hash of its record. Using the parity to
//! repair is `recovery`'s, and the caller's.

use crate::crypto::ContentKey;
use crate::error::Result;
use crate::format::{record_hasher, Footer, HeaderPrefix, Trailer, FOOTER_LEN, TRAILER_LEN};
use crate::index::read_sealed;
use crate::storage::ReadAt;

use super::session::check_previous;

/// Bytes of a record hashed at a time.
const HASH_CHUNK: u64 = 1 << 20;

/// Why the recovery record after `trailer` (authenticated, and committed
/// where the file holds its whole session) cannot be used, if it cannot:
/// its footer does not decode or disagrees with the trailer, or the
/// trailer's two copies differ. Reads 166 + 216 bytes; `None` without a
/// record.
pub(crate) fn record_damage(src: &dyn ReadAt, trailer: &Trailer) -> Result<Option<String>> {
    Ok(checked_footer(src, trailer)?.err())
}

/// The footer of the record after `trailer`, decoded and checked against
/// it, and the trailer's second copy checked against the first: `Ok(None)`
/// without a record, `Err` the one line saying what is wrong.
fn checked_footer(
    src: &dyn ReadAt,
    trailer: &Trailer,
) -> Result<std::result::Result<Option<Footer>, String>> {
    if trailer.recovery_percent == 0 {
        return Ok(Ok(None));
    }
    let end = trailer.session_end();
    let footer_at = end - (FOOTER_LEN + TRAILER_LEN) as u64;
    let bytes =
        read_sealed(src, footer_at, (FOOTER_LEN + TRAILER_LEN) as u32, || "recovery record footer".into())?;
    let (footer, second) = bytes.split_at(FOOTER_LEN);
    let what = |why: String| format!("the recovery record footer at byte {footer_at} {why}");
    if second != trailer.encode() {
        let at = footer_at + FOOTER_LEN as u64;
        return Ok(Err(format!("the trailer's second copy at byte {at} differs from its first (damaged)")));
    }
    let footer = match Footer::decode(footer.try_into().expect("a footer"), footer_at) {
        Ok(footer) => footer,
        Err(e) => return Ok(Err(what(format!("is not usable ({})", e.why)))),
    };
    if let Err(e) = footer.check_against(trailer) {
        return Ok(Err(what(format!("is not usable ({})", e.why))));
    }
    Ok(Ok(Some(footer)))
}

/// What `verify` finds wrong with the recovery records of the sessions
/// from the one `last` commits back along the hash chain (to the first, or
/// to a damaged link, which the chain's own check reports): one line a
/// record whose footer is not usable or whose bytes do not hash to its
/// footer's `record_hash`. Reads every record once.
pub(crate) fn records_damage(
    src: &dyn ReadAt,
    header: &HeaderPrefix,
    content_key: &ContentKey,
    last: &Trailer,
) -> Result<Vec<String>> {
    let mut damage = Vec::new();
    let mut trailer = last.clone();
    loop {
        match checked_footer(src, &trailer)? {
            Ok(Some(footer)) => {
                let footer_at = trailer.session_end() - (FOOTER_LEN + TRAILER_LEN) as u64;
                let record_at = footer.record_at(footer_at);
                debug_assert_eq!(record_at, trailer.record_offset());
                if record_hash(src, record_at, footer.record_len)? != footer.record_hash {
                    damage.push(format!(
                        "the recovery record at byte {record_at} ({} bytes) does not match its footer's hash (damaged)",
                        footer.record_len
                    ));
                }
            }
            Ok(None) => {}
            Err(why) => damage.push(why),
        }
        if trailer.previous_trailer == 0 {
            break;
        }
        match check_previous(src, header, content_key, &trailer) {
            Ok(previous) => trailer = previous,
            Err(_) => break,
        }
    }
    damage.reverse();
    Ok(damage)
}

/// The hash of the `len` bytes of a record at `at`.
fn record_hash(src: &dyn ReadAt, at: u64, len: u64) -> Result<[u8; 32]> {
    let mut hasher = record_hasher();
    let mut done = 0;
    while done < len {
        let n = (len - done).min(HASH_CHUNK);
        hasher.update(&read_sealed(src, at + done, n as u32, || "recovery record".into())?);
        done += n;
    }
    Ok(*hasher.finalize().as_bytes())
}
