//! The public key API from outside the crate: recipient strings and files,
//! identity files, keygen and the mixing rule.

use std::process::Command;

use revault_lockbox_api::error::KeyError;
use revault_lockbox_api::keys::{
    check_recipient_mix, keygen, parse_recipients, read_recipients_file, Identity, Recipient, RecipientKind,
};

use crate::util::{skip, Need};

#[test]
fn keygen_output_round_trips_through_files() {
    let dir = tempfile::tempdir().unwrap();
    let (x_text, x_public) = keygen(false).unwrap();
    let (pq_text, pq_public) = keygen(true).unwrap();
    std::fs::write(dir.path().join("x.txt"), x_text.as_bytes()).unwrap();
    let ids = Identity::read_file(&dir.path().join("x.txt"), &mut |_| None).unwrap();
    assert_eq!(ids[0].to_recipient().unwrap().to_string(), x_public);
    let pq_ids = Identity::parse_file(pq_text.as_bytes(), &mut |_| None).unwrap();
    assert_eq!(pq_ids[0].kind(), RecipientKind::Hybrid);

    let list = dir.path().join("recipients.txt");
    std::fs::write(&list, format!("# both\n{x_public}\n\n{pq_public}\n")).unwrap();
    let rs = read_recipients_file(&list).unwrap();
    assert_eq!(
        rs.iter().map(Recipient::kind).collect::<Vec<_>>(),
        [RecipientKind::X25519, RecipientKind::Hybrid]
    );
    assert!(matches!(check_recipient_mix(&rs, false), Err(KeyError::MixedRecipients { .. })));
    assert!(check_recipient_mix(&rs, true).is_ok());
}

#[test]
fn recipients_file_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (_, public) = keygen(false).unwrap();
    let list = dir.path().join("team.txt");
    std::fs::write(&list, format!("{public}\n# ok so far\nage1notakey\n")).unwrap();
    let err = read_recipients_file(&list).unwrap_err().to_string();
    assert!(err.contains("team.txt, line 3:"), "{err}");
    let missing = read_recipients_file(&dir.path().join("absent")).unwrap_err();
    assert!(matches!(missing, KeyError::Io { .. }), "{missing}");
    std::fs::write(&list, vec![b'#'; (1 << 20) + 1]).unwrap();
    assert!(read_recipients_file(&list).is_err(), "files over 1 MiB are refused");
    assert!(matches!(parse_recipients("\n", "empty"), Err(KeyError::Empty(_))));
}

#[test]
fn unsupported_ssh_key_types_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("id_ecdsa");
    let made = Command::new("ssh-keygen").args(["-q", "-t", "ecdsa", "-N", "", "-f"]).arg(&path).status();
    let Ok(made) = made else {
        return skip(Need::Tools, "ssh-keygen is not installed (scripts/test.sh installs openssh-client)");
    };
    assert!(made.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    let err = public.parse::<Recipient>().unwrap_err().to_string();
    assert!(err.contains("unsupported SSH key type"), "{err}");
    let err = Identity::read_file(&path, &mut |_| None).unwrap_err().to_string();
    assert!(err.contains("unsupported SSH key"), "{err}");
}
