//! Why a session's signatures do not satisfy a trust policy: the session
//! is always named, since a signature is per session, and named by its
//! state as `log` shows it ([`SessionName`]).

use crate::quote::SessionName;

/// A session's signatures against the trusted signers
/// ([`OpenOptions::trust`](crate::OpenOptions::trust),
/// [`Archive::check_signers`](crate::Archive::check_signers), and a writer's
/// chain rule).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The session carries no signature.
    #[error("{session} is not signed")]
    Unsigned {
        /// The session.
        session: SessionName,
    },
    /// A trusted signer's signature is there, but does not verify over
    /// this session (damaged, or copied from another session or archive).
    #[error("{session}: the signature by {signer} does not verify")]
    Invalid {
        /// The session.
        session: SessionName,
        /// The trusted signer it names.
        signer: String,
    },
    /// Only keys outside the trusted set signed the session.
    #[error("{session} is signed only by keys not trusted: {signers}")]
    Untrusted {
        /// The session.
        session: SessionName,
        /// The signers' fingerprints, comma-separated.
        signers: String,
    },
}

impl SignatureError {
    /// The session named.
    pub fn session(&self) -> SessionName {
        match self {
            SignatureError::Unsigned { session }
            | SignatureError::Invalid { session, .. }
            | SignatureError::Untrusted { session, .. } => *session,
        }
    }
}
