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

/// An age plugin asking for its PIN while the opening of an `s3://`
/// archive is drawn: the prompt gets the terminal (the line moved aside),
/// the PIN typed there opens the archive.
#[test]
fn a_plugin_pin_asked_during_an_s3_opening_gets_the_terminal() {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_lockbox")).parent().unwrap().to_owned();
    if !bin.join("age-plugin-lockboxtest").is_file() {
        let why = "age-plugin-lockboxtest is not built (`cargo test --workspace` builds it)";
        return crate::util::skip(crate::util::Need::Tools, why);
    }
    let Some(moto) = server() else { return };
    let ep = moto.endpoint();
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let generated = std::process::Command::new(bin.join("age-plugin-lockboxtest")).arg("--generate").output();
    let text = String::from_utf8(generated.unwrap().stdout).unwrap();
    std::fs::write(dir.join("id.txt"), &text).unwrap();
    let recipient = text.lines().find_map(|l| l.strip_prefix("# recipient: ")).unwrap();
    std::fs::write(dir.join("note"), b"pinned in s3\n").unwrap();
    let target = url("pinned.lbox");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let made = super::lockbox(&ep)
        .args(["create", "-o", &target, "-r", recipient, "-C"])
        .arg(dir)
        .arg("note")
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let script = format!(
        "PATH='{path}' LOCKBOXTEST_PIN=2468 AWS_ACCESS_KEY_ID={ACCESS_KEY} \
         AWS_SECRET_ACCESS_KEY=lockbox-test-secret AWS_REGION=us-east-1 \
         AWS_CONFIG_FILE=/nonexistent AWS_SHARED_CREDENTIALS_FILE=/nonexistent \
         exec \"$LOCKBOX\" --endpoint {ep} --allow-http -i id.txt cat {target} note < /dev/null 2> /dev/tty"
    );
    let Some(mut on) = crate::prompt_tty::OnTerminal::start(dir, &script) else { return };
    // stderr is the terminal too: the opening is drawn, then steps aside.
    on.wait_for(&format!("opening {target}"));
    on.wait_for("age-plugin-lockboxtest: Enter the lockboxtest PIN: ");
    // While the PIN is asked, the bar stays away (it would redraw every
    // 100 ms over the prompt).
    let meanwhile = on.shown_within(std::time::Duration::from_millis(600));
    assert!(!meanwhile.contains("opening"), "the bar drew over the prompt: {meanwhile:?}");
    on.type_line("2468");
    assert_eq!(on.finish(), (Some(0), "pinned in s3\n".to_owned()));
}
