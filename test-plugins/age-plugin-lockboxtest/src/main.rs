//! `age-plugin-lockboxtest`: a small but real age plugin, for lockbox's
//! tests (no hardware here). It speaks age's plugin protocol through the
//! `age-plugin` crate, so `lockbox` and the `age` binary run it as they
//! would `age-plugin-yubikey`.
//!
//! Inside it is age's X25519: a recipient `age1lockboxtest1…` carries an
//! X25519 public key, an identity `AGE-PLUGIN-LOCKBOXTEST-1…` its secret
//! key, and a stanza is the X25519 stanza under the tag `lockboxtest`. A
//! wrong identity therefore really fails to unwrap.
//!
//! - `age-plugin-lockboxtest --generate` prints a new identity file (with
//!   its `# recipient:` line), as plugins' own key generators do.
//! - `LOCKBOXTEST_MESSAGE=TEXT`: sends TEXT as a message to the user
//!   while wrapping and unwrapping (the protocol's `msg`).
//! - `LOCKBOXTEST_PIN=PIN`: unwrapping asks the user for a secret (the
//!   protocol's `request-secret`, as a hardware key asks for its PIN) and
//!   refuses to unwrap unless it is PIN.
#![forbid(unsafe_code)]

use std::collections::{HashMap, HashSet};
use std::io;
use std::str::FromStr;

use age::{Identity as _, Recipient as _};
use age_core::format::{FileKey, Stanza};
use age_core::secrecy::ExposeSecret;
use age_plugin::identity::{self, IdentityPluginV1};
use age_plugin::recipient::{self, RecipientPluginV1};
use age_plugin::{print_new_identity, run_state_machine, Callbacks, PluginHandler};
use bech32::{Bech32, Hrp};

const PLUGIN_NAME: &str = "lockboxtest";
/// The tag of this plugin's stanzas.
const TAG: &str = "lockboxtest";
/// The tag of the X25519 stanza inside.
const X25519_TAG: &str = "X25519";

/// The 32 data bytes of an age Bech32 string.
fn data_of(bech: &str) -> Result<Vec<u8>, String> {
    let (_, data) = bech32::decode(bech).map_err(|e| e.to_string())?;
    Ok(data)
}

/// An age Bech32 string of `data` under `hrp`.
fn bech_of(hrp: &str, data: &[u8]) -> String {
    bech32::encode::<Bech32>(Hrp::parse(hrp).expect("valid HRP"), data).expect("short data")
}

fn x25519_recipient(bytes: &[u8]) -> Result<age::x25519::Recipient, String> {
    age::x25519::Recipient::from_str(&bech_of("age", bytes)).map_err(str::to_owned)
}

fn x25519_identity(bytes: &[u8]) -> Result<age::x25519::Identity, String> {
    age::x25519::Identity::from_str(&bech_of("age-secret-key-", bytes).to_uppercase()).map_err(str::to_owned)
}

/// Sends `LOCKBOXTEST_MESSAGE` to the user, if set.
fn send_message<E>(callbacks: &mut impl Callbacks<E>) -> io::Result<()> {
    if let Ok(text) = std::env::var("LOCKBOXTEST_MESSAGE") {
        let _ = callbacks.message(&text)?;
    }
    Ok(())
}

struct Handler;

impl PluginHandler for Handler {
    type RecipientV1 = Wrapping;
    type IdentityV1 = Unwrapping;

    fn recipient_v1(self) -> io::Result<Wrapping> {
        Ok(Wrapping { recipients: Vec::new() })
    }

    fn identity_v1(self) -> io::Result<Unwrapping> {
        Ok(Unwrapping { identities: Vec::new() })
    }
}

struct Wrapping {
    recipients: Vec<age::x25519::Recipient>,
}

impl RecipientPluginV1 for Wrapping {
    fn add_recipient(
        &mut self,
        index: usize,
        plugin_name: &str,
        bytes: &[u8],
    ) -> Result<(), recipient::Error> {
        match x25519_recipient(bytes) {
            Ok(r) if plugin_name == PLUGIN_NAME => {
                self.recipients.push(r);
                Ok(())
            }
            Ok(_) => {
                Err(recipient::Error::Recipient { index, message: "not a lockboxtest recipient".into() })
            }
            Err(why) => {
                Err(recipient::Error::Recipient { index, message: format!("invalid recipient: {why}") })
            }
        }
    }

    fn add_identity(&mut self, index: usize, _: &str, _: &[u8]) -> Result<(), recipient::Error> {
        Err(recipient::Error::Identity { index, message: "wrapping to an identity is not supported".into() })
    }

    fn labels(&mut self) -> HashSet<String> {
        HashSet::new()
    }

    fn wrap_file_keys(
        &mut self,
        file_keys: Vec<FileKey>,
        mut callbacks: impl Callbacks<recipient::Error>,
    ) -> io::Result<Result<Vec<Vec<Stanza>>, Vec<recipient::Error>>> {
        send_message(&mut callbacks)?;
        let mut out = Vec::with_capacity(file_keys.len());
        for file_key in &file_keys {
            let mut stanzas = Vec::with_capacity(self.recipients.len());
            for (index, r) in self.recipients.iter().enumerate() {
                match r.wrap_file_key(file_key) {
                    Ok((wrapped, _)) => {
                        stanzas.extend(wrapped.into_iter().map(|s| Stanza { tag: TAG.into(), ..s }))
                    }
                    Err(e) => {
                        return Ok(Err(vec![recipient::Error::Recipient { index, message: e.to_string() }]))
                    }
                }
            }
            out.push(stanzas);
        }
        Ok(Ok(out))
    }
}

struct Unwrapping {
    identities: Vec<age::x25519::Identity>,
}

impl IdentityPluginV1 for Unwrapping {
    fn add_identity(&mut self, index: usize, plugin_name: &str, bytes: &[u8]) -> Result<(), identity::Error> {
        match x25519_identity(bytes) {
            Ok(i) if plugin_name == PLUGIN_NAME => {
                self.identities.push(i);
                Ok(())
            }
            Ok(_) => Err(identity::Error::Identity { index, message: "not a lockboxtest identity".into() }),
            Err(why) => Err(identity::Error::Identity { index, message: format!("invalid identity: {why}") }),
        }
    }

    fn unwrap_file_keys(
        &mut self,
        files: Vec<Vec<Stanza>>,
        mut callbacks: impl Callbacks<identity::Error>,
    ) -> io::Result<HashMap<usize, Result<FileKey, Vec<identity::Error>>>> {
        let mut keys = HashMap::new();
        for (file, stanzas) in files.into_iter().enumerate() {
            let ours: Vec<Stanza> = stanzas
                .into_iter()
                .filter(|s| s.tag == TAG)
                .map(|s| Stanza { tag: X25519_TAG.into(), ..s })
                .collect();
            if ours.is_empty() {
                continue;
            }
            send_message(&mut callbacks)?;
            if let Some(refused) = check_pin(&mut callbacks)? {
                keys.insert(file, Err(vec![refused]));
                continue;
            }
            let found = self.identities.iter().find_map(|i| match i.unwrap_stanzas(&ours) {
                Some(Ok(key)) => Some(key),
                _ => None,
            });
            if let Some(key) = found {
                keys.insert(file, Ok(key));
            }
        }
        Ok(keys)
    }
}

/// With `LOCKBOXTEST_PIN` set, asks the user for it: `Some(error)` when
/// none is given or it is wrong.
fn check_pin(callbacks: &mut impl Callbacks<identity::Error>) -> io::Result<Option<identity::Error>> {
    let Ok(pin) = std::env::var("LOCKBOXTEST_PIN") else { return Ok(None) };
    let refused = |message: &str| Some(identity::Error::Identity { index: 0, message: message.into() });
    Ok(match callbacks.request_secret("Enter the lockboxtest PIN")? {
        Ok(given) if given.expose_secret() == pin => None,
        Ok(_) => refused("wrong PIN"),
        Err(_) => refused("no PIN was given"),
    })
}

fn generate() {
    let secret = age::x25519::Identity::generate();
    let public = data_of(&secret.to_public().to_string()).expect("age's own recipient");
    let secret = data_of(&age_core::secrecy::ExposeSecret::expose_secret(&secret.to_string()).to_lowercase())
        .expect("age's own identity");
    print_new_identity(PLUGIN_NAME, &secret, &public);
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [state] if state.starts_with("--age-plugin=") => {
            run_state_machine(&state["--age-plugin=".len()..], Handler)
        }
        ["--age-plugin", state] => run_state_machine(state, Handler),
        ["--generate"] => {
            generate();
            Ok(())
        }
        _ => {
            eprintln!(
                "usage: age-plugin-lockboxtest --generate (age and lockbox run --age-plugin=STATE_MACHINE)"
            );
            std::process::exit(2)
        }
    }
}
