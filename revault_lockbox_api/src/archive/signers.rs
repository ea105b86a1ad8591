//! Who signed which session (FORMAT.md §3.10), and the trust policy. Each
//! session's block is read before its trailer along the hash chain and
//! checked against that trailer's commit hash. The policy has two
//! strengths: the last session signed by a trusted key (one check covers
//! the whole state, since its commit hash chains back to the first
//! session: what `list`, `cat`, `extract` check), or every session signed
//! by a trusted key or adopted by a later trusted signer (`verify`).

use super::session::{check_previous, read_signatures};
use super::Archive;
use crate::error::{Error, Result, SignatureError};
use crate::keys::{check_signatures, Fingerprint, SignatureCheck};
use crate::quote::SessionName;
use crate::storage::ReadAt;

/// A session, named by its state, and its signatures, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSigners {
    /// The session: its number and the state it holds.
    pub session: SessionName,
    /// Its signatures, in block order (none: unsigned).
    pub signatures: Vec<SignatureCheck>,
}

impl SessionSigners {
    /// The first valid signature by a key of `trusted`, or why there is none.
    pub fn trusted_by(&self, trusted: &[Fingerprint]) -> Result<&SignatureCheck, SignatureError> {
        let is_trusted = |c: &&SignatureCheck| c.signer.is_some_and(|s| trusted.contains(&s));
        if let Some(good) = self.signatures.iter().filter(is_trusted).find(|c| c.valid) {
            return Ok(good);
        }
        let session = self.session;
        if let Some(bad) = self.signatures.iter().find(is_trusted) {
            return Err(SignatureError::Invalid { session, signer: bad.to_string() });
        }
        if self.signatures.is_empty() {
            return Err(SignatureError::Unsigned { session });
        }
        let signers: Vec<String> = self.signatures.iter().map(ToString::to_string).collect();
        Err(SignatureError::Untrusted { session, signers: signers.join(", ") })
    }
}

impl<S: ReadAt> Archive<S> {
    /// What opening checks with a trust policy: the last session's
    /// signatures. Opening reads only the root, so the sessions tree that
    /// numbers the states is read only to name a session it refuses.
    pub(super) fn check_last(&self, trusted: Option<&[Fingerprint]>) -> Result<()> {
        let Some(trusted) = trusted else { return Ok(()) };
        let (number, signatures) = self.last_checked();
        let unnamed = SessionSigners { session: SessionName { number, state: None }, signatures };
        if unnamed.trusted_by(trusted).is_ok() {
            return Ok(());
        }
        let named = SessionSigners { session: self.session_name(number)?, ..unnamed };
        named.trusted_by(trusted).map(drop).map_err(Error::from)
    }

    /// Signatures the last session carries (framing checked, not verified).
    pub fn signature_count(&self) -> usize {
        self.last.signatures.len()
    }

    /// The last session's number and its signatures, as opening read them,
    /// checked.
    fn last_checked(&self) -> (u32, Vec<SignatureCheck>) {
        let last = &self.last;
        (last.info.number, check_signatures(&self.archive_id, &last.commit, &last.signatures))
    }

    /// The last session's signatures, as opening read them.
    pub fn last_signers(&self) -> Result<SessionSigners> {
        let (number, signatures) = self.last_checked();
        Ok(SessionSigners { session: self.session_name(number)?, signatures })
    }

    /// Every session's signatures, oldest first: one trailer and one block
    /// read per earlier session, back along the hash chain.
    pub fn signers(&self) -> Result<Vec<SessionSigners>> {
        let header = self.header;
        let mut all = vec![self.last_checked()];
        let (mut trailer, mut number) = (self.last.trailer.clone(), self.last.info.number);
        while trailer.previous_trailer != 0 {
            trailer = check_previous(&self.src, &header, &self.content_key, &trailer)?;
            number = number
                .checked_sub(1)
                .ok_or_else(|| Error::malformed("trailer", "more sessions than numbers"))?;
            let signatures = check_signatures(
                &self.archive_id,
                &trailer.commit_hash(),
                &read_signatures(&self.src, &trailer)?,
            );
            all.push((number, signatures));
        }
        all.into_iter()
            .rev()
            .map(|(number, signatures)| {
                Ok(SessionSigners { session: self.session_name(number)?, signatures })
            })
            .collect()
    }

    /// Checks every session against `trusted`: each must carry a valid
    /// signature by a trusted key, unless a later session's trusted signer
    /// adopted the sessions before it. Returns every session's signatures,
    /// oldest first; the error names the newest session that fails.
    pub fn check_signers(&self, trusted: &[Fingerprint]) -> Result<Vec<SessionSigners>> {
        let all = self.signers()?;
        let mut adopted = false;
        for session in all.iter().rev() {
            match session.trusted_by(trusted) {
                Ok(good) => adopted |= good.adopts,
                Err(_) if adopted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(all)
    }
}

#[cfg(test)]
#[path = "sign_tests.rs"]
mod tests;
