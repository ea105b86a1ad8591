//! One flipped bit in the header prefix, the password slot or the first
//! session header (issue 50: each left `list` and `extract` with 0 files)
//! through the real binary: every file comes back, a warning on stderr
//! names the damage and where, `extract` exits 0 and `verify` exits 3
//! (FORMAT.md §3.11, §6.1 steps 4 and 6).

use std::fs;
use std::path::Path;

use crate::util::{code, create_cmd, lockbox, ok, run, stderr};

const FILES: [(&str, &str); 3] = [("d/a", "alpha"), ("d/b", "bravo"), ("d/c", "charlie")];

fn create(work: &Path) -> Vec<u8> {
    let src = work.join("src");
    fs::create_dir_all(src.join("d")).unwrap();
    for (name, content) in FILES {
        fs::write(src.join(name), content).unwrap();
    }
    let archive = work.join("a.lbox");
    ok(run(&mut create_cmd(&archive, &src, "d", &[])));
    fs::read(&archive).unwrap()
}

#[test]
fn a_flipped_bit_in_the_header_a_slot_or_the_session_header_warns_and_loses_no_file() {
    let work = tempfile::tempdir().unwrap();
    let bytes = create(work.path());
    let data_start = 32 + 16 * usize::from(u16::from_le_bytes([bytes[30], bytes[31]]));
    // (what, byte, the warning's words)
    let cases = [
        ("header flags", 10, "the header and key-slot table at byte 0 are damaged (malformed header: unknown flags); read from their copy at byte"),
        ("password slot", 32 + 3 + 40, "the header and key-slot table at byte 0 are damaged (no key slot opens with the key given); read from their copy at byte"),
        ("session header", data_start + 64 + 3, &format!("the session header at byte {data_start} failed authentication")),
    ];
    for (what, at, warning) in cases {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        let archive = work.path().join(format!("{}.lbox", what.replace(' ', "-")));
        fs::write(&archive, &damaged).unwrap();

        let listed = run(lockbox().arg("list").arg(&archive));
        assert_eq!(code(&listed), 0, "{what}: {}", stderr(&listed));
        let names = String::from_utf8_lossy(&listed.stdout).into_owned();
        for (name, _) in FILES {
            assert!(names.contains(name), "{what}: list lost {name}: {names}");
        }
        let said = stderr(&listed);
        assert!(said.contains("lockbox: warning: ") && said.contains(warning), "{what}: {said}");
        assert_eq!(said.lines().count(), 1, "{what}: one line: {said}");

        let out = work.path().join(format!("out-{}", what.replace(' ', "-")));
        fs::create_dir(&out).unwrap();
        let extracted = run(lockbox().args(["extract", "-C"]).arg(&out).arg(&archive));
        assert_eq!(code(&extracted), 0, "{what}: {}", stderr(&extracted));
        assert!(stderr(&extracted).contains(warning), "{what}: {}", stderr(&extracted));
        for (name, content) in FILES {
            assert_eq!(fs::read_to_string(out.join(name)).unwrap(), content, "{what}: {name}");
        }

        let verified = run(lockbox().arg("verify").arg(&archive));
        assert_eq!(code(&verified), 3, "{what}: verify of a damaged archive");
        let all = format!("{}{}", String::from_utf8_lossy(&verified.stdout), stderr(&verified));
        assert!(all.contains(warning), "{what}: {all}");
    }
    // repair writes the damaged header again from its copy, in place.
    let damaged = work.path().join("header-flags.lbox");
    let repaired = ok(run(lockbox().arg("repair").arg(&damaged)));
    assert!(stderr(&repaired).contains("written again from that copy"), "{}", stderr(&repaired));
    assert_eq!(fs::read(&damaged).unwrap(), bytes, "byte for byte the archive before the flip");
    ok(run(lockbox().arg("verify").arg(&damaged)));
    let whole = work.path().join("a.lbox");
    let verified = ok(run(lockbox().arg("verify").arg(&whole)));
    assert!(!stderr(&verified).contains("warning"), "{}", stderr(&verified));
}
