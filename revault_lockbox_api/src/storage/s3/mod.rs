//! Archives on S3-compatible object storage (feature `s3`).
//!
//! An [`S3Location`] names one object; an [`S3Store`] is a client for its
//! bucket, built from the standard AWS environment variables and files
//! (`aws_config`), with a small runtime of its own so that callers stay
//! synchronous. [`S3Reader`] serves the reader's positioned reads with
//! ranged GETs through a range cache that merges small reads and reads
//! ahead of sequential ones; [`S3Writer`] streams a multipart upload that
//! appears under the key only when it completes, and is aborted otherwise.

mod append;
mod aws_config;
mod cache;
mod joined;
mod reader;
mod trace;
mod writer;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3ConfigKey, S3CopyIfNotExists};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};

pub use joined::S3Reader;
pub use reader::S3Stats;
pub use writer::S3Writer;

/// Smallest part S3 accepts in a multipart upload (all but the last).
pub const MIN_PART_SIZE: usize = 5 << 20;
/// How long one request may take before it is retried.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Ranged GETs (or part uploads) in flight unless told otherwise.
pub const DEFAULT_REQUESTS_IN_FLIGHT: usize = 8;

/// What went wrong with an object store, before any archive byte was read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum S3Error {
    /// The text is not an `s3://bucket/key` location.
    #[error("not an object location: {text}: {reason}")]
    BadLocation {
        /// What was given.
        text: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// The client could not be configured (endpoint, region, credentials).
    #[error("configuring the S3 client for {location}: {reason}")]
    Config {
        /// The object.
        location: S3Location,
        /// What is wrong.
        reason: String,
    },
    /// A request failed (after the client's retries). The message names
    /// the store's error code where it sent one, on one line.
    #[error("{action} {location}: {}", one_line(error))]
    Request {
        /// What was being done.
        action: &'static str,
        /// The object.
        location: S3Location,
        /// The client's error (its text holds the whole response body).
        error: Box<object_store::Error>,
    },
    /// `create` found an object under the key and was not asked to replace it.
    #[error("{location} already exists")]
    AlreadyExists {
        /// The object.
        location: S3Location,
    },
    /// The archive's parts (the objects of the sessions appended to it)
    /// are not a run numbered from 1, or one is empty.
    #[error("{location}: its parts are damaged: {reason}")]
    Parts {
        /// The archive.
        location: S3Location,
        /// What is wrong.
        reason: String,
    },
    /// Another writer created the part an append was about to commit:
    /// its session came first.
    #[error("another writer committed the next session first (part {number}, {location})")]
    Raced {
        /// The part both wrote.
        location: S3Location,
        /// Its number.
        number: u64,
    },
    /// The object was replaced while it was being read.
    #[error("{location} changed while it was being read")]
    Changed {
        /// The object.
        location: S3Location,
    },
}

/// One object: `s3://bucket/key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Location {
    /// The bucket.
    pub bucket: String,
    /// The object's key inside the bucket.
    pub key: String,
}

impl S3Location {
    /// Whether `text` is meant as an object location (starts with `s3://`).
    pub fn is_object_url(text: &str) -> bool {
        text.starts_with("s3://")
    }

    /// Parses `s3://bucket/key`. The key keeps its slashes; empty path
    /// segments, `.` and `..` are refused (S3 would store them, but they
    /// read as a mistake).
    pub fn parse(text: &str) -> Result<S3Location, S3Error> {
        let bad = |reason| S3Error::BadLocation { text: text.to_string(), reason };
        let rest = text.strip_prefix("s3://").ok_or_else(|| bad("it does not start with s3://"))?;
        let (bucket, key) = rest.split_once('/').ok_or_else(|| bad("it names no key after the bucket"))?;
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b));
        if !bucket_ok {
            return Err(bad("a bucket name is 3 to 63 lower-case letters, digits, '-' and '.'"));
        }
        if key.is_empty() || key.ends_with('/') {
            return Err(bad("it names no key after the bucket"));
        }
        if key.split('/').any(|s| s.is_empty() || s == "." || s == "..") {
            return Err(bad("the key has an empty, '.' or '..' segment"));
        }
        if key.len() > 1024 || key.chars().any(char::is_control) {
            return Err(bad("the key is longer than 1024 bytes or holds control characters"));
        }
        Ok(S3Location { bucket: bucket.to_string(), key: key.to_string() })
    }

    fn object_path(&self) -> ObjectPath {
        ObjectPath::from(self.key.as_str())
    }

    /// The "directory" of the objects an archive has beside its first,
    /// `KEY.parts` (a listing by this prefix sees nothing of `KEY2`).
    fn parts_prefix(&self) -> S3Location {
        S3Location { bucket: self.bucket.clone(), key: format!("{}.parts", self.key) }
    }

    /// The object `name` among the archive's parts: `KEY.parts/NAME`.
    fn beside(&self, name: &str) -> S3Location {
        let prefix = self.parts_prefix();
        S3Location { key: format!("{}/{name}", prefix.key), ..prefix }
    }
}

impl fmt::Display for S3Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// How to reach the store. Every setter's doc states its default.
#[derive(Debug, Clone)]
pub struct S3Options {
    endpoint: Option<String>,
    allow_http: bool,
    requests_in_flight: usize,
    retry_timeout: Duration,
}

impl Default for S3Options {
    fn default() -> Self {
        S3Options::new()
    }
}

impl S3Options {
    /// Endpoint, region and credentials from the environment and AWS files.
    pub fn new() -> S3Options {
        S3Options {
            endpoint: None,
            allow_http: false,
            requests_in_flight: DEFAULT_REQUESTS_IN_FLIGHT,
            retry_timeout: Duration::from_secs(60),
        }
    }

    /// The endpoint URL, overriding `AWS_ENDPOINT_URL` and the profile's
    /// `endpoint_url`. Default: those, else AWS itself.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Allow a plain-HTTP endpoint. Default: `false` (also allowed when
    /// `AWS_ALLOW_HTTP=true`).
    pub fn allow_http(mut self, allow: bool) -> Self {
        self.allow_http = allow;
        self
    }

    /// Ranged GETs, or part uploads, in flight at once. Default: 8.
    pub fn requests_in_flight(mut self, n: usize) -> Self {
        self.requests_in_flight = n.max(1);
        self
    }

    /// How long a failing request is retried (with exponential backoff)
    /// before its error is reported. Default: 60 s.
    pub fn retry_timeout(mut self, timeout: Duration) -> Self {
        self.retry_timeout = timeout;
        self
    }
}

/// A client for one object's bucket, with the runtime its requests run on.
#[derive(Clone)]
pub struct S3Store {
    inner: Arc<StoreInner>,
}

struct StoreInner {
    store: AmazonS3,
    location: S3Location,
    options: S3Options,
    // Declared last: dropped after the store whose connections it drives.
    runtime: tokio::runtime::Runtime,
}

impl fmt::Debug for S3Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Store").field("location", &self.inner.location).finish_non_exhaustive()
    }
}

impl S3Store {
    /// A client for `location`'s bucket. Sends no request yet.
    pub fn new(location: &S3Location, options: S3Options) -> Result<S3Store, S3Error> {
        let config = |reason: String| S3Error::Config { location: location.clone(), reason };
        let mut builder = aws_config::builder_from_env_and_files().map_err(config)?;
        if let Some(endpoint) = &options.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        let env_allows_http = builder
            .get_config_value(&AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp))
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
        if endpoint.as_deref().is_some_and(|e| e.starts_with("http://"))
            && !options.allow_http
            && !env_allows_http
        {
            return Err(config("the endpoint is plain HTTP; pass --allow-http to use it".into()));
        }
        let retry = RetryConfig {
            backoff: BackoffConfig::default(),
            max_retries: 10,
            retry_timeout: options.retry_timeout,
        };
        // Completing a large upload can take a store minutes (moto: 30 s
        // for 1 GiB); a request timed out and retried then finds the upload
        // gone although it completed.
        let timeout = format!("{}s", REQUEST_TIMEOUT.as_secs());
        let store = builder
            .with_config(AmazonS3ConfigKey::Client(ClientConfigKey::Timeout), timeout)
            // An append larger than a part commits by a copy-if-absent
            // (`append.rs`): an `UploadPartCopy` completed with
            // `If-None-Match: *`.
            .with_copy_if_not_exists(S3CopyIfNotExists::Multipart)
            .with_bucket_name(&location.bucket)
            .with_allow_http(options.allow_http || env_allows_http)
            .with_retry(retry)
            .build()
            .map_err(|e| config(e.to_string()))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lockbox-s3")
            .enable_all()
            .build()
            .map_err(|e| config(format!("starting its runtime: {e}")))?;
        Ok(S3Store { inner: Arc::new(StoreInner { store, location: location.clone(), options, runtime }) })
    }

    /// The object this client reads and writes.
    pub fn location(&self) -> &S3Location {
        &self.inner.location
    }

    /// Opens the archive for positioned reads: one ranged GET of the
    /// object's tail (trailer and index root; it also learns the length)
    /// and, sent with it, one LIST of the parts appended since.
    pub fn open(&self) -> Result<S3Reader, S3Error> {
        S3Reader::open(self.clone())
    }

    /// Starts writing the object. Without `overwrite`, an existing object
    /// is refused now and again before the upload completes (a conditional
    /// put for archives smaller than one part).
    ///
    /// Replacing an archive deletes the parts its appends added once the
    /// new object is complete ([`S3Writer::finish`]): a create that fails
    /// leaves the old archive whole.
    pub fn create(&self, overwrite: bool, part_size: usize) -> Result<S3Writer, S3Error> {
        S3Writer::start(self.clone(), overwrite, part_size)
    }

    /// Whether an object exists under the key.
    pub fn exists(&self) -> Result<bool, S3Error> {
        let path = self.inner.location.object_path();
        match self.block_on(self.inner.store.head(&path)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(source) => Err(self.request_error("looking up", source)),
        }
    }

    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.inner.runtime.block_on(future)
    }

    fn request_error(&self, action: &'static str, error: object_store::Error) -> S3Error {
        S3Error::Request { action, location: self.inner.location.clone(), error: Box::new(error) }
    }

    fn object_store(&self) -> &AmazonS3 {
        &self.inner.store
    }

    fn handle(&self) -> &tokio::runtime::Handle {
        self.inner.runtime.handle()
    }

    fn requests_in_flight(&self) -> usize {
        self.inner.options.requests_in_flight
    }
}

/// The client's error in one line: the S3 error code and message when the
/// response body has them (`NoSuchBucket: The specified bucket does not
/// exist`), else its text with line breaks folded.
fn one_line(error: &object_store::Error) -> String {
    let text = error.to_string();
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = text.find(&open)? + open.len();
        let len = text[start..].find(&format!("</{name}>"))?;
        Some(text[start..start + len].to_string())
    };
    let kind = match error {
        object_store::Error::NotFound { .. } => "not found",
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            "access denied"
        }
        _ => "request failed",
    };
    match (tag("Code"), tag("Message")) {
        (Some(code), Some(message)) => format!("{kind}: {code}: {message}"),
        (Some(code), None) => format!("{kind}: {code}"),
        _ => text.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// Whether `error` is an append's [`S3Error::Raced`]: another writer
/// committed first.
pub fn is_raced(error: &std::io::Error) -> bool {
    let inner = error.get_ref().and_then(|e| e.downcast_ref::<S3Error>());
    matches!(inner, Some(S3Error::Raced { .. }))
}

/// An [`S3Error`] as the `io::Error` a `Read`/`Write`/`ReadAt` returns, its
/// kind matching what went wrong.
fn io_error(error: S3Error) -> std::io::Error {
    use std::io::ErrorKind;
    let kind = match &error {
        S3Error::Request { error, .. } => match error.as_ref() {
            object_store::Error::NotFound { .. } => ErrorKind::NotFound,
            object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
                ErrorKind::PermissionDenied
            }
            _ => ErrorKind::Other,
        },
        S3Error::AlreadyExists { .. } => ErrorKind::AlreadyExists,
        _ => ErrorKind::Other,
    };
    std::io::Error::new(kind, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_print() {
        let l = S3Location::parse("s3://my-bucket/backups/2026/home.lbox").unwrap();
        assert_eq!((l.bucket.as_str(), l.key.as_str()), ("my-bucket", "backups/2026/home.lbox"));
        assert_eq!(l.to_string(), "s3://my-bucket/backups/2026/home.lbox");
        for bad in [
            "s3://",
            "s3://bucket",
            "s3://bucket/",
            "s3://Bucket/key",
            "s3://b/key",
            "s3://bucket/a//b",
            "s3://bucket/a/../b",
            "s3://bucket/dir/",
            "s3://bucket/a\nb",
            "http://bucket/key",
        ] {
            assert!(S3Location::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plain_http_endpoints_need_asking() {
        let l = S3Location::parse("s3://bucket/key").unwrap();
        let refused = S3Store::new(&l, S3Options::new().endpoint("http://127.0.0.1:9"));
        if std::env::var("AWS_ALLOW_HTTP").is_err() {
            assert!(matches!(refused, Err(S3Error::Config { .. })), "{refused:?}");
        }
        assert!(S3Store::new(&l, S3Options::new().endpoint("http://127.0.0.1:9").allow_http(true)).is_ok());
    }
}
