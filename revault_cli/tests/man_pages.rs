//! `lockbox man`: every page (lockbox's, each command's, each
//! subcommand's), installed with `--install`, renders clean under `groff
//! -ww` and `man -l`, with the written sections; unknown pages and typos
//! are usage errors that point the right way.

use std::process::{Command as Process, Stdio};

use crate::util::{code, lockbox, ok, run, stderr};

const SECTIONS: [&str; 8] =
    ["SYNOPSIS", "DESCRIPTION", "EXAMPLES", "ENVIRONMENT", "FILES", "EXIT STATUS", "SEE ALSO", "VERSION"];

fn have(tool: &str) -> bool {
    Process::new(tool).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

#[test]
fn every_page_installs_and_renders_clean() {
    assert!(
        have("groff") && have("man"),
        "groff and man are needed (.ci/run installs groff-base and man-db)"
    );
    let dir = tempfile::tempdir().unwrap();
    ok(run(lockbox().args(["man", "--install"]).arg(dir.path())));
    let man1 = dir.path().join("man1");
    let mut pages: Vec<String> =
        std::fs::read_dir(&man1).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    pages.sort();
    for expected in
        ["lockbox.1", "lockbox-create.1", "lockbox-key-add.1", "lockbox-key-remove.1", "lockbox-man.1"]
    {
        assert!(pages.iter().any(|p| p == expected), "{expected} missing from {pages:?}");
    }
    for page in &pages {
        let path = man1.join(page);
        let groff =
            Process::new("groff").args(["-k", "-man", "-Tutf8", "-ww", "-z"]).arg(&path).output().unwrap();
        assert!(
            groff.status.success() && groff.stderr.is_empty(),
            "{page}: {}",
            String::from_utf8_lossy(&groff.stderr)
        );
        let shown =
            Process::new("man").arg("-l").arg(&path).env("MANPAGER", "cat").env("MANWIDTH", "80").output();
        let shown = shown.unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.status.success(), "man -l {page}: {}", String::from_utf8_lossy(&shown.stderr));
        for section in SECTIONS {
            assert!(text.contains(section), "{page} has no {section}:\n{text}");
        }
        let name = page.trim_end_matches(".1");
        // The page of `key add` is what `lockbox man key add` prints.
        let words: Vec<&str> = name.split('-').skip(1).collect();
        let printed = ok(run(lockbox().arg("man").args(&words)));
        assert_eq!(printed.stdout, std::fs::read(&path).unwrap(), "{name}");
    }
    let top = String::from_utf8(std::fs::read(man1.join("lockbox.1")).unwrap()).unwrap();
    assert!(top.contains("\\fBlockbox\\-create\\fR(1)"), "lockbox(1) names the command pages");
    // Every lockbox page a page names is one `--install` wrote (clap's
    // `help` command has none: lockbox(1) once named lockbox-help(1)).
    for page in &pages {
        let text = String::from_utf8(std::fs::read(man1.join(page)).unwrap()).unwrap();
        for named in named_pages(&text) {
            assert!(pages.contains(&format!("{named}.1")), "{page} names {named}(1), which is not installed");
        }
    }
}

/// The lockbox pages a page refers to: `\fBlockbox\-NAME\fR(1)` in roff.
fn named_pages(roff: &str) -> Vec<String> {
    roff.split("\\fB")
        .skip(1)
        .filter_map(|s| s.split_once("\\fR").filter(|(_, after)| after.starts_with("(1)")))
        .map(|(name, _)| name.replace("\\-", "-"))
        .filter(|name| name.starts_with("lockbox"))
        .collect()
}

#[test]
fn an_unknown_page_or_a_typo_is_a_usage_error_that_points_the_way() {
    let out = run(lockbox().args(["man", "key", "nope"]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("no command \"key nope\""), "{}", stderr(&out));
    let out = run(lockbox().args(["man", "--install", "/tmp", "create"]));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let out = run(lockbox().arg("creat"));
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("'create', 'repair'"), "the likeliest first: {}", stderr(&out));
}
