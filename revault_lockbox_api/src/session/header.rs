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
    #[cfg(feature = "fuzzing")]
    if let Some(fixed) = crate::crypto::seam::fixed_time() {
        return fixed;
    }
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
        version: out.version,
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

#[cfg(test)]
mod tests {
    use super::TOOL;
    use crate::crypto::{KdfParams, Password};
    use crate::format::{HeaderPrefix, HEADER_PREFIX_LEN, SESSION_HEADER_CLEAR_LEN};
    use crate::session::{ArchiveWriter, CreateOptions};

    /// FORMAT.md §3.9's cost: `102 + len(label) + len(tool)` bytes, 127
    /// without a label for this library's tool name.
    #[test]
    fn a_session_header_without_a_label_costs_127_bytes() {
        assert_eq!(TOOL, concat!("revault_lockbox_api ", env!("CARGO_PKG_VERSION")));
        let password = Password::from("cost");
        let options = CreateOptions::new().kdf(KdfParams::INSECURE_FOR_TESTS);
        let bytes = ArchiveWriter::new(Vec::new(), &password, options).unwrap().finish().unwrap();
        let prefix = HeaderPrefix::decode(bytes[..HEADER_PREFIX_LEN].try_into().unwrap()).unwrap();
        let at = prefix.data_start() as usize;
        assert_eq!(&bytes[at..at + 8], b"LBOXSESS");
        let field = at + SESSION_HEADER_CLEAR_LEN - 4;
        let body_stored_len = u32::from_le_bytes(bytes[field..field + 4].try_into().unwrap()) as usize;
        assert_eq!(SESSION_HEADER_CLEAR_LEN + body_stored_len, 102 + TOOL.len());
        let said =
            "FORMAT.md §3.9 gives 127 bytes for `revault_lockbox_api 0.1.0`: update it with the version";
        assert_eq!(SESSION_HEADER_CLEAR_LEN + body_stored_len, 127, "{said}");
    }
}
