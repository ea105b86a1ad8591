//! How an archive is locked, in words: each key slot's kind for `key
//! list`, and the whole table in one phrase for a refused unlock.

use revault_lockbox_api::slots::{SlotInfo, SlotKind};

use super::count;

/// One slot as `key list` shows it: the label its owner gave it, if any,
/// then its kind and what can be known of its key without the secret.
pub fn slot_text(slot: &SlotInfo) -> String {
    match slot.label.as_str() {
        "" => kind_text(slot),
        label => format!("{label}  ({})", kind_text(slot)),
    }
}

fn kind_text(slot: &SlotInfo) -> String {
    match &slot.kind {
        SlotKind::Password(k) => {
            format!("password   Argon2id {} MiB, {} passes, {} lanes", k.m_kib as f64 / 1024.0, k.t, k.p)
        }
        SlotKind::Recipient(types) => format!("recipient  {}", types.join(", ")),
        SlotKind::KeyFile => "key file".into(),
        _ => "unknown".into(),
    }
}

/// The slots in one phrase: "a password and 2 recipients (X25519,
/// ssh-ed25519)".
pub fn locked_with(slots: &[SlotInfo]) -> String {
    let passwords = slots.iter().filter(|s| matches!(s.kind, SlotKind::Password(_))).count();
    let key_files = slots.iter().filter(|s| matches!(s.kind, SlotKind::KeyFile)).count();
    let mut types: Vec<&str> = Vec::new();
    let mut recipients = 0u64;
    for slot in slots {
        if let SlotKind::Recipient(stanzas) = &slot.kind {
            recipients += 1;
            for t in stanzas {
                if !types.contains(&t.as_str()) {
                    types.push(t);
                }
            }
        }
    }
    let mut parts = Vec::new();
    match passwords {
        0 => {}
        1 => parts.push("a password".to_owned()),
        n => parts.push(format!("{n} passwords")),
    }
    if recipients > 0 {
        parts.push(format!("{} ({})", count(recipients, "recipient", "recipients"), types.join(", ")));
    }
    match key_files {
        0 => {}
        1 => parts.push("a key file".to_owned()),
        n => parts.push(format!("{n} key files")),
    }
    parts.join(" and ")
}
