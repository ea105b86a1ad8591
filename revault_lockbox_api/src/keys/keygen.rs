//! New identities, written like `age-keygen` writes them.

use std::time::{SystemTime, UNIX_EPOCH};

use age::secrecy::ExposeSecret;
use zeroize::Zeroizing;

use super::hybrid::{HybridIdentity, SEED_LEN};
use super::{random_bytes, KeyError};
use crate::civil::UtcTime;

/// Generates a new identity: X25519, or with `pq` the ML-KEM-768 + X25519
/// hybrid. Returns the identity file's text (with `# created:` and
/// `# public key:` comments, as `age-keygen` writes) and the recipient
/// string to give to senders.
pub fn keygen(pq: bool) -> Result<(Zeroizing<String>, String), KeyError> {
    let (secret, public) = if pq {
        let mut seed = Zeroizing::new([0u8; SEED_LEN]);
        random_bytes(seed.as_mut())?;
        let id = HybridIdentity::from_seed(&seed);
        (id.to_secret_string(), id.to_public().to_string())
    } else {
        let id = age::x25519::Identity::generate();
        (Zeroizing::new(id.to_string().expose_secret().to_owned()), id.to_public().to_string())
    };
    let created = created_now();
    let text = Zeroizing::new(format!("# created: {created}\n# public key: {public}\n{}\n", secret.as_str()));
    Ok((text, public))
}

/// The time now, for a key file's `# created:` line.
pub(super) fn created_now() -> String {
    rfc3339_utc(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0))
}

/// `YYYY-MM-DDThh:mm:ssZ` for seconds since the Unix epoch.
fn rfc3339_utc(secs: u64) -> String {
    let t = UtcTime::from_unix(secs as i64);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", t.year, t.month, t.day, t.hour, t.minute, t.second)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Identity, Recipient, RecipientKind};

    #[test]
    fn dates() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(1_798_761_599), "2026-12-31T23:59:59Z");
    }

    #[test]
    fn generated_files_parse_back() {
        for (pq, kind, prefix) in [
            (false, RecipientKind::X25519, "AGE-SECRET-KEY-1"),
            (true, RecipientKind::Hybrid, "AGE-SECRET-KEY-PQ-1"),
        ] {
            let (text, public) = keygen(pq).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert!(lines[0].starts_with("# created: "));
            assert_eq!(lines[1], format!("# public key: {public}"));
            assert!(lines[2].starts_with(prefix));
            let ids = Identity::parse_file(text.as_bytes(), &mut |_| None).unwrap();
            assert_eq!(ids.len(), 1);
            assert_eq!(ids[0].kind(), kind);
            assert_eq!(ids[0].to_recipient().unwrap(), public.parse::<Recipient>().unwrap());
        }
    }
}
