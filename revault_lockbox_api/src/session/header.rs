//! The session header a session writes before its first unit: the salt in
//! the clear, then its number, time, kind, label and this library's
//! version, and the walk rules it was written with, sealed (FORMAT.md §3.9,
//! §3.9b).

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use super::output::Output;
use super::{CreateOptions, SessionStart};
use crate::crypto::seal_session_body;
use crate::error::{Error, Result};
use crate::format::{
    check_label, session_header_hash, Hash, HeaderClear, SessionInfo, SESSION_SALT_LEN, TAG_LEN,
};

/// The writing tool a session header names.
const TOOL: &str = concat!("revault_lockbox_api ", env!("CARGO_PKG_VERSION"));

/// Now, in UTC nanoseconds since 1970 (0 for a clock before 1970; the
/// `i64` lasts until 2262).
fn now_ns() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
}

/// Refuses a label the format cannot hold.
pub(super) fn checked_label(label: &str) -> Result<()> {
    check_label(label).map_err(|reason| Error::BadLabel { reason })
}

/// Writes the header of the session `start` describes, with salt `salt`,
/// the label and walk rules of `options`; returns its hash, for the
/// trailer, and what it says.
pub(super) fn write_header<W: Write>(
    out: &mut Output<W>,
    start: &SessionStart,
    salt: &[u8; SESSION_SALT_LEN],
    options: &CreateOptions,
) -> Result<(Hash, SessionInfo)> {
    let info = SessionInfo {
        number: start.number,
        created_ns: start.created_ns.unwrap_or_else(now_ns),
        kind: start.kind,
        label: options.label.clone(),
        tool: TOOL.into(),
        walk: options.walk_record()?,
    };
    let body = info.encode();
    let clear = HeaderClear {
        archive_id: out.archive_id,
        salt: *salt,
        body_stored_len: (body.len() + TAG_LEN) as u32,
    };
    let clear = clear.encode();
    let sealed = seal_session_body(&out.keys, &clear, body);
    let header = [&clear[..], &sealed].concat();
    out.write(&header, "writing the session header")?;
    Ok((session_header_hash(&header), info))
}
