//! A usage error that clap found while parsing, as every other failure is
//! shown: one line `lockbox: …`, with clap's tip on a second line when it
//! has one (clap prints a block: the error, a tip, the usage line and "For
//! more information, try '--help'").

use clap::error::ErrorKind;

/// Shows `e` and exits with its code (2); help and version, which clap
/// reports as errors too, are printed as clap prints them.
pub fn exit(e: clap::Error) -> ! {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            eprint!("{}", lines(&e.render().to_string()));
            std::process::exit(e.exit_code())
        }
    }
}

/// clap's rendered error as one line, and its first tip as a second.
fn lines(rendered: &str) -> String {
    let mut paragraphs = rendered.split("\n\n").map(str::trim).filter(|p| !p.is_empty());
    let first = paragraphs.next().unwrap_or("invalid arguments");
    let first = first.strip_prefix("error:").unwrap_or(first);
    // A list on the lines below ("the following required arguments were
    // not provided:\n  <ARCHIVE>") joins the message.
    let mut out = format!("lockbox: {}", first.split('\n').map(str::trim).collect::<Vec<_>>().join(" "));
    let tip = paragraphs.flat_map(str::lines).map(str::trim).find(|l| l.starts_with("tip:"));
    if let Some(tip) = tip {
        out.push_str(&format!("\nlockbox: {tip}"));
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::lines;

    #[test]
    fn a_list_joins_the_line_and_usage_goes() {
        let rendered = "error: the following required arguments were not provided:\n  <ARCHIVE>\n\n\
                        Usage: lockbox list <ARCHIVE>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            lines(rendered),
            "lockbox: the following required arguments were not provided: <ARCHIVE>\n"
        );
        let rendered = "error: unexpected argument '--frce' found\n\n  tip: a similar argument exists: \
                        '--force'\n\nUsage: x\n\nFor more information, try '--help'.\n";
        assert_eq!(
            lines(rendered),
            "lockbox: unexpected argument '--frce' found\nlockbox: tip: a similar argument exists: '--force'\n"
        );
    }
}
