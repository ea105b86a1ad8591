//! Where an archive lives. Every command's ARCHIVE argument goes through
//! [`ArchiveLocation::parse`], the one place that tells a local path from
//! an object (`s3://bucket/key`); opening for reading, creating, and the
//! refusals of commands that need a local file sit beside it.

use std::fmt;
use std::fs::File;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use revault_lockbox_api::s3::{S3Location, S3Options, S3Store, S3Writer, MIN_PART_SIZE};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::WorkloadProfile;

use crate::exit::UsageError;
use crate::flags::ObjectStoreArgs;

/// An archive argument: a local path or an object.
#[derive(Debug, Clone)]
pub enum ArchiveLocation {
    Local(PathBuf),
    Object(S3Location),
}

impl fmt::Display for ArchiveLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArchiveLocation::Local(path) => write!(f, "{}", path.display()),
            ArchiveLocation::Object(location) => write!(f, "{location}"),
        }
    }
}

impl ArchiveLocation {
    /// `s3://bucket/key` is an object (a local file whose name starts so is
    /// reached as `./s3:/...`); anything else a local path.
    pub fn parse(arg: &Path) -> Result<ArchiveLocation> {
        match arg.to_str() {
            Some(text) if S3Location::is_object_url(text) => {
                Ok(ArchiveLocation::Object(S3Location::parse(text).map_err(|e| UsageError(e.to_string()))?))
            }
            _ => Ok(ArchiveLocation::Local(arg.to_path_buf())),
        }
    }

    /// The local path, for commands that rewrite an archive in place;
    /// an object is refused (exit 2).
    pub fn local_only(arg: &Path, command: &str) -> Result<PathBuf> {
        match ArchiveLocation::parse(arg)? {
            ArchiveLocation::Local(path) => Ok(path),
            ArchiveLocation::Object(location) => Err(UsageError(format!(
                "{command} rewrites an archive in place, which an object store cannot do: {location} \
                 (on s3:// lockbox can create, add, update, rm, list, cat, extract, verify, info, log, \
                 diff, export, mount and key list; \
                 copy the object to a local file, run {command}, and upload the result)"
            ))
            .into()),
        }
    }

    /// Opens the archive's bytes for positioned reads.
    pub fn open_reader(&self, s3: &ObjectStoreArgs) -> Result<Box<dyn ReadAt>> {
        match self {
            ArchiveLocation::Local(path) => {
                let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
                let kind =
                    file.metadata().with_context(|| format!("opening {}", path.display()))?.file_type();
                if kind.is_fifo() || kind.is_socket() || kind.is_char_device() {
                    anyhow::bail!("opening {}: not a seekable file; lockbox reads archives from files (save a piped archive to a file first)", path.display());
                }
                Ok(Box::new(file))
            }
            ArchiveLocation::Object(location) => {
                let reader = store(location, s3)?.open()?;
                Ok(Box::new(reader))
            }
        }
    }
}

/// Starts writing `location`: refused when it exists, unless `overwrite`.
/// Parts are at least S3's minimum and four pages of `profile`.
pub fn create_object(
    location: &S3Location,
    s3: &ObjectStoreArgs,
    overwrite: bool,
    profile: WorkloadProfile,
) -> Result<S3Writer> {
    let part_size = MIN_PART_SIZE.max(4 * profile.create_tuning().page_size);
    Ok(store(location, s3)?.create(overwrite, part_size)?)
}

/// A client for `location`'s bucket as the flags `s3` say.
pub fn store(location: &S3Location, s3: &ObjectStoreArgs) -> Result<S3Store> {
    let mut options = S3Options::new()
        .allow_http(s3.allow_http)
        .requests_in_flight(s3.s3_requests)
        .retry_timeout(Duration::from_secs(s3.s3_retry_timeout));
    if let Some(endpoint) = &s3.endpoint {
        options = options.endpoint(endpoint);
    }
    // A refused or unusable configuration is a usage error (exit 2); the
    // library's error stays in the chain for the hints.
    S3Store::new(location, options).map_err(|e| {
        let usage = UsageError(e.to_string());
        anyhow::Error::new(e).context(usage)
    })
}
