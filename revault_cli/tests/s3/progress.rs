//! Progress on `s3://` transfers, as a terminal shows it (`script`): the
//! opening stage (the round trips before the first entry) of reading
//! commands, a create's bar that ends "uploaded to s3://…", and none with
//! `-q`.

use super::server::ACCESS_KEY;
use super::{server, url};
use crate::progress_tty::on_terminal_with;
use crate::util::{ok, CHEAP};

/// What the terminal showed while `lockbox --endpoint ENDPOINT ARGS` ran
/// under `script` in `dir`, with the test credentials.
fn on_terminal(dir: &std::path::Path, endpoint: &str, args: &str) -> Option<String> {
    let env = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", "lockbox-test-secret"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_CONFIG_FILE", "/nonexistent/aws-config"),
        ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials"),
    ];
    on_terminal_with(dir, &format!("--endpoint {endpoint} --allow-http {args}"), &env)
}

#[test]
fn s3_transfers_draw_the_bar_and_quiet_draws_none() {
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::write(dir.join("note"), vec![5u8; 300_000]).unwrap();
    let target = url("progress.lbox");

    let made = format!("create {} -o {target} note", CHEAP.join(" "));
    let Some(shown) = on_terminal(dir, &ep, &made) else { return };
    assert!(shown.contains(&format!("uploaded to {target}")) && shown.contains("B/s"), "{shown:?}");
    assert!(shown.contains("1 entry"), "{shown:?}");

    for job in [format!("list {target}"), format!("verify {target}"), format!("export {target} -o out.tar")] {
        let Some(shown) = on_terminal(dir, &ep, &job) else { return };
        assert!(shown.contains(&format!("opening {target}")) && shown.contains('B'), "{job}: {shown:?}");
    }
    std::fs::create_dir(dir.join("out")).unwrap();
    let Some(shown) = on_terminal(dir, &ep, &format!("extract {target} -C out")) else { return };
    assert!(shown.contains(&format!("opening {target}")) && shown.contains("1 entry"), "{shown:?}");
    assert_eq!(std::fs::read(dir.join("out/note")).unwrap().len(), 300_000);

    for job in [format!("verify -q {target}"), format!("extract -q --overwrite {target} -C out")] {
        let Some(shown) = on_terminal(dir, &ep, &job) else { return };
        assert!(!shown.contains("opening") && !shown.contains("B/s"), "-q draws nothing: {job}: {shown:?}");
    }
    // Without a terminal (stderr a pipe), nothing either.
    let piped = super::bare_lockbox().args(["--endpoint", &ep, "--allow-http", "list", &target]).output();
    let piped = ok(piped.unwrap());
    assert!(piped.stderr.is_empty(), "{}", String::from_utf8_lossy(&piped.stderr));
}
