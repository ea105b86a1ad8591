//! The `cat` budget on a large remote archive, counted by the S3 reader's
//! own counters (every GET it sends and every body byte it receives).
//! Ignored: `scripts/s3_scale.sh` runs it against the 1 GiB archive it
//! uploads, with the environment below.
//!
//! - `LOCKBOX_S3_ENDPOINT`: a plain-HTTP endpoint (the script's moto);
//! - `LOCKBOX_S3_ARCHIVE`: `s3://bucket/key`, opened with `LOCKBOX_PASSWORD`;
//! - `LOCKBOX_S3_CAT`: stored path of a small file, `LOCKBOX_S3_CAT_SOURCE`:
//!   its original, to compare.

use std::io::Read;

use revault_lockbox_api::s3::{S3Location, S3Options, S3Store};
use revault_lockbox_api::{Archive, OpenOptions, Password, WorkloadProfile};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set (see scripts/s3_scale.sh)"))
}

#[test]
#[ignore = "needs the 1 GiB remote archive of scripts/s3_scale.sh"]
fn cat_of_one_small_file_stays_within_six_gets_and_two_mib() {
    let location = S3Location::parse(&env("LOCKBOX_S3_ARCHIVE")).unwrap();
    let options = S3Options::new().endpoint(env("LOCKBOX_S3_ENDPOINT")).allow_http(true);
    let reader = S3Store::new(&location, options).unwrap().open().unwrap();
    let password = Password::from(env("LOCKBOX_PASSWORD").as_str());
    let open = OpenOptions::new().profile(WorkloadProfile::RandomRead);
    let archive = Archive::open_with(reader, &password, open).unwrap();
    let path = env("LOCKBOX_S3_CAT");
    let mut content = Vec::new();
    archive.open_file(path.as_bytes()).unwrap().read_to_end(&mut content).unwrap();
    assert_eq!(content, std::fs::read(env("LOCKBOX_S3_CAT_SOURCE")).unwrap());
    let stats = archive.source().stats();
    println!(
        "cat {path} from {location} ({} entries): {} GETs, {} bytes",
        archive.entry_count(),
        stats.gets,
        stats.bytes
    );
    assert!(stats.gets <= 6, "{stats:?}");
    assert!(stats.bytes <= 2 << 20, "{stats:?}");
}
