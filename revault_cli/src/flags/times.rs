//! How listings show times: local to the minute (GNU tar's `-tv`), or in
//! UTC, or in full ISO 8601.

use clap::Args;

/// `--utc` and `--full-time`, for `list -l`.
#[derive(Debug, Args)]
pub struct TimeArgs {
    /// Show times in UTC instead of the local time zone (TZ).
    #[arg(long)]
    pub utc: bool,
    /// Show times to the second as ISO 8601 with the zone's offset
    /// (2024-05-01T13:04:05+02:00), instead of to the minute.
    #[arg(long)]
    pub full_time: bool,
}
