//! Endpoint, region and credentials as the AWS tools find them: the `AWS_*`
//! environment variables first (object_store reads those), then the
//! profile named by `AWS_PROFILE` (else `default`) in the shared
//! credentials and config files, which object_store does not read.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::quote::Quoted;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};

/// A builder with every setting the environment and the profile give.
pub(super) fn builder_from_env_and_files() -> Result<AmazonS3Builder, String> {
    let mut builder = AmazonS3Builder::from_env();
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let explicit = std::env::var_os("AWS_PROFILE").is_some();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, name: &str| {
        std::env::var_os(var).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
    };
    // The credentials file names sections `[name]`; the config file
    // `[profile name]`, except `[default]`.
    let config_section = if profile == "default" { profile.clone() } else { format!("profile {profile}") };
    let mut settings = HashMap::new();
    let mut found = false;
    for (path, section) in [
        (file("AWS_CONFIG_FILE", "config"), config_section),
        (file("AWS_SHARED_CREDENTIALS_FILE", "credentials"), profile.clone()),
    ] {
        let Some(path) = path else { continue };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("reading {}: {e}", Quoted::path(&path))),
        };
        if let Some(values) = ini_section(&text, &section) {
            found = true;
            settings.extend(values);
        }
    }
    if explicit && !found {
        return Err(format!(
            "AWS_PROFILE names profile {profile:?}, which no AWS config or credentials file holds"
        ));
    }
    let keys = [
        ("aws_access_key_id", AmazonS3ConfigKey::AccessKeyId),
        ("aws_secret_access_key", AmazonS3ConfigKey::SecretAccessKey),
        ("aws_session_token", AmazonS3ConfigKey::Token),
        ("region", AmazonS3ConfigKey::Region),
        ("endpoint_url", AmazonS3ConfigKey::Endpoint),
    ];
    // Credentials come as a pair: a key id from the environment is never
    // joined with a secret from a file.
    let env_has_keys = builder.get_config_value(&AmazonS3ConfigKey::AccessKeyId).is_some();
    for (name, key) in keys {
        let is_credential = name.starts_with("aws_");
        if (is_credential && env_has_keys) || builder.get_config_value(&key).is_some() {
            continue;
        }
        if let Some(value) = settings.get(name) {
            builder = builder.with_config(key, value);
        }
    }
    Ok(builder)
}

/// The `key = value` pairs of section `[name]` of an INI file as the AWS
/// tools write it (`#` and `;` comments; keys lower-cased).
fn ini_section(text: &str, name: &str) -> Option<HashMap<String, String>> {
    let mut in_section = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_section = header.trim() == name;
            if in_section {
                found.get_or_insert_with(HashMap::new);
            }
            continue;
        }
        if let (true, Some((key, value))) = (in_section, line.split_once('=')) {
            let map = found.as_mut().expect("set when the section started");
            map.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_are_read_as_the_aws_tools_write_them() {
        let text = "[default]\nregion = eu-west-1\n\n# a comment\n[profile backup]\nregion=us-east-2\n\
                    Endpoint_URL = http://127.0.0.1:9000\n; another\n[other]\nregion = x\n";
        let default = ini_section(text, "default").unwrap();
        assert_eq!(default["region"], "eu-west-1");
        let backup = ini_section(text, "profile backup").unwrap();
        assert_eq!(backup["region"], "us-east-2");
        assert_eq!(backup["endpoint_url"], "http://127.0.0.1:9000");
        assert!(ini_section(text, "missing").is_none());
    }
}
