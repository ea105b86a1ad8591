//! age plugins: recipients `age1NAME1…` and identities
//! `AGE-PLUGIN-NAME-1…`, wrapped and unwrapped by the program
//! `age-plugin-NAME` found on `PATH` (the age crate's plugin client, C2SP's
//! age-plugin protocol). That is how age reaches hardware keys (YubiKey,
//! TPM, Secure Enclave, FIDO2): the key never leaves the plugin.
//!
//! A plugin may talk to the user: show a message ("touch your key"), ask
//! for a confirmation, a value or a secret (a PIN). The library draws no
//! terminal: those go to the caller's [`PluginUi`], as the age crate's
//! `Callbacks`; without one ([`NoPluginUi`]) messages are dropped and
//! requests refused.
//!
//! The plugin is found when it is needed (a slot is wrapped or tried), so
//! parsing a recipient or an identity file never runs anything; a plugin
//! that is not on `PATH` is [`KeyError::MissingPlugin`], naming its binary.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use age::plugin::ResolveError;
use age::secrecy::SecretString;
use age::{DecryptError, EncryptError};
use age_core::format::{FileKey, Stanza};

use super::KeyError;
use crate::crypto::Password;

/// How an age plugin talks to the user; the caller implements it (the CLI
/// on its terminal). `plugin` names the plugin's binary (`age-plugin-NAME`)
/// so the user knows who asks. Calls come from the thread that wraps or
/// opens a slot, one at a time per plugin.
pub trait PluginUi: Send + Sync {
    /// Shows `message` (for example: touch the key, insert it).
    fn message(&self, plugin: &str, message: &str);
    /// Asks the user to choose between `yes` and `no` (or a default
    /// negative answer when `no` is `None`): `Some(true)` for `yes`,
    /// `Some(false)` for `no`, `None` when no one can answer.
    fn confirm(&self, plugin: &str, message: &str, yes: &str, no: Option<&str>) -> Option<bool>;
    /// Asks for a value that is not secret; `None` when no one can answer.
    fn request_public(&self, plugin: &str, message: &str) -> Option<String>;
    /// Asks for a secret (a PIN, a passphrase); `None` when no one can
    /// answer.
    fn request_secret(&self, plugin: &str, message: &str) -> Option<Password>;
}

/// No user: messages are dropped and every request is refused, so a plugin
/// that needs a PIN fails (with its own message). The default.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPluginUi;

impl PluginUi for NoPluginUi {
    fn message(&self, _: &str, _: &str) {}
    fn confirm(&self, _: &str, _: &str, _: &str, _: Option<&str>) -> Option<bool> {
        None
    }
    fn request_public(&self, _: &str, _: &str) -> Option<String> {
        None
    }
    fn request_secret(&self, _: &str, _: &str) -> Option<Password> {
        None
    }
}

/// A plugin's user interface, shared by the recipients and identities that
/// were given it.
pub(super) type SharedUi = Arc<dyn PluginUi>;

pub(super) fn no_ui() -> SharedUi {
    Arc::new(NoPluginUi)
}

/// The age crate's callbacks, sent to the caller's [`PluginUi`] with the
/// plugin's binary name.
#[derive(Clone)]
struct Callbacks {
    binary: String,
    ui: SharedUi,
}

impl age::Callbacks for Callbacks {
    fn display_message(&self, message: &str) {
        self.ui.message(&self.binary, message);
    }

    fn confirm(&self, message: &str, yes: &str, no: Option<&str>) -> Option<bool> {
        self.ui.confirm(&self.binary, message, yes, no)
    }

    fn request_public_string(&self, description: &str) -> Option<String> {
        self.ui.request_public(&self.binary, description)
    }

    fn request_passphrase(&self, description: &str) -> Option<SecretString> {
        let secret = self.ui.request_secret(&self.binary, description)?;
        let text = std::str::from_utf8(secret.expose()).ok()?;
        Some(SecretString::from(text.to_owned()))
    }
}

/// The binary age runs for plugin `name`.
fn binary_name(name: &str) -> String {
    format!("age-plugin-{name}")
}

fn resolve_error(name: &str, e: ResolveError) -> KeyError {
    match e {
        ResolveError::MissingPlugin { binary_name } => KeyError::MissingPlugin { binary: binary_name },
        other => KeyError::InvalidIdentity { line: None, reason: format!("age plugin {name}: {other}") },
    }
}

/// What a plugin said went wrong, one line, its text quoted (a plugin's
/// message is shown, never obeyed by the terminal).
fn plugin_said(errors: &[impl fmt::Display]) -> String {
    let text: Vec<String> = errors.iter().map(|e| e.to_string().replace('\n', " ")).collect();
    crate::quote::Quoted::bytes(text.join("; ").as_bytes()).to_string()
}

/// A plugin recipient (`age1NAME1…`).
#[derive(Clone)]
pub(super) struct PluginRecipient {
    recipient: age::plugin::Recipient,
    ui: SharedUi,
}

impl PluginRecipient {
    pub(super) fn parse(s: &str) -> Result<PluginRecipient, String> {
        let recipient =
            age::plugin::Recipient::from_str(s).map_err(|e| format!("age plugin recipient: {e}"))?;
        Ok(PluginRecipient { recipient, ui: no_ui() })
    }

    /// The plugin's name (`yubikey` for `age-plugin-yubikey`).
    pub(super) fn name(&self) -> &str {
        self.recipient.plugin()
    }

    pub(super) fn with_ui(mut self, ui: SharedUi) -> PluginRecipient {
        self.ui = ui;
        self
    }

    /// The plugin's stanzas wrapping `file_key` (it runs the plugin).
    pub(super) fn wrap(&self, file_key: &FileKey) -> Result<Vec<Stanza>, KeyError> {
        let name = self.name();
        let callbacks = Callbacks { binary: binary_name(name), ui: self.ui.clone() };
        let plugin =
            age::plugin::RecipientPluginV1::new(name, std::slice::from_ref(&self.recipient), &[], callbacks)
                .map_err(|e| resolve_error(name, e))?;
        match age::Recipient::wrap_file_key(&plugin, file_key) {
            Ok((stanzas, _labels)) => Ok(stanzas),
            Err(EncryptError::Plugin(errors)) => {
                Err(KeyError::Wrap(format!("{}: {}", binary_name(name), plugin_said(&errors))))
            }
            Err(e) => Err(KeyError::Wrap(format!("{}: {}", binary_name(name), plugin_said(&[e])))),
        }
    }
}

impl fmt::Display for PluginRecipient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.recipient.fmt(f)
    }
}

/// A plugin identity (`AGE-PLUGIN-NAME-1…`): what the plugin needs to find
/// its key (often a handle to a hardware slot, not the key itself).
#[derive(Clone)]
pub(super) struct PluginIdentity {
    identity: age::plugin::Identity,
    ui: SharedUi,
}

impl PluginIdentity {
    pub(super) fn parse(line: &str) -> Result<PluginIdentity, String> {
        let identity =
            age::plugin::Identity::from_str(line).map_err(|e| format!("age plugin identity: {e}"))?;
        Ok(PluginIdentity { identity, ui: no_ui() })
    }

    /// The plugin's name.
    pub(super) fn name(&self) -> &str {
        self.identity.plugin()
    }

    pub(super) fn with_ui(&mut self, ui: SharedUi) {
        self.ui = ui;
    }

    /// Runs the plugin on one slot's stanzas, age's way (`None`: not this
    /// identity). A plugin that reports an error for its identity (a wrong
    /// PIN, an absent key) is [`KeyError::PluginRefused`].
    pub(super) fn unwrap(
        &self,
        stanzas: &[Stanza],
    ) -> Result<Option<Result<FileKey, DecryptError>>, KeyError> {
        let name = self.name();
        let callbacks = Callbacks { binary: binary_name(name), ui: self.ui.clone() };
        let plugin =
            age::plugin::IdentityPluginV1::new(name, std::slice::from_ref(&self.identity), callbacks)
                .map_err(|e| resolve_error(name, e))?;
        match age::Identity::unwrap_stanzas(&plugin, stanzas) {
            Some(Err(DecryptError::Plugin(errors))) => {
                Err(KeyError::PluginRefused { binary: binary_name(name), message: plugin_said(&errors) })
            }
            Some(Err(DecryptError::Io(e))) => {
                Err(KeyError::PluginRefused { binary: binary_name(name), message: plugin_said(&[e]) })
            }
            other => Ok(other),
        }
    }
}
