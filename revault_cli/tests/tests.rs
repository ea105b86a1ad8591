//! The CLI's integration tests, in one binary (one link, one process):
//! each runs the real `lockbox` binary on temporary trees. Helpers they
//! share are in `util`; tests that change process-wide state (the umask,
//! resource limits, the user) do it in the child they start, never here.

mod util;

mod append_cli;
mod atomic_cli;
mod changes_cli;
mod chunked_cli;
mod cli;
mod conformance_cli;
mod cut_hint_cli;
mod daily_traps_cli;
mod exit_codes;
mod habits_cli;
mod header_copy_cli;
mod history_cli;
mod hostile_tree;
mod key_labels_cli;
mod keys_cli;
mod late_slots;
mod man_pages;
mod modes_cli;
mod mount_cli;
mod mount_dots_cli;
mod mount_views_cli;
mod plugins_cli;
mod progress_tty;
mod prompt_tty;
mod recovery_cli;
mod recovery_repair_cli;
mod retention_cli;
mod reuse_cli;
mod s3;
mod salvage_cli;
mod secrets_cli;
mod sessions_cli;
mod signed_rewrites_cli;
mod signed_sessions_cli;
mod signers_file_cli;
mod signing_keys_cli;
mod state_numbers_cli;
mod surprises_cli;
mod threads_cli;
mod toolbox;
mod trust_cli;
mod usage_errors_cli;
mod version_cli;
mod walk_rules_cli;
