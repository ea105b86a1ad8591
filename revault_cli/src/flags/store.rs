//! How to reach an object store, for the commands that read or create
//! `s3://` archives.

use clap::builder::TypedValueParser;
use clap::Args;
use revault_lockbox_api::s3::DEFAULT_REQUESTS_IN_FLIGHT;

use super::Given;

/// How to reach an object store; used only with `s3://` archives.
#[derive(Debug, Args)]
pub struct ObjectStoreArgs {
    /// S3 endpoint URL for s3:// archives, overriding AWS_ENDPOINT_URL and
    /// the profile's endpoint_url (MinIO, Ceph RGW, Garage, R2, ...).
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Allow a plain-HTTP (unencrypted, unauthenticated transport) endpoint.
    #[arg(long)]
    pub allow_http: bool,
    /// Ranged GETs (reading) or part uploads (create) in flight at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REQUESTS_IN_FLIGHT,
          value_parser = clap::value_parser!(u16).range(1..=256).map(usize::from))]
    pub s3_requests: usize,
    /// Seconds a failing S3 request is retried, with backoff, before the
    /// command fails.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    pub s3_retry_timeout: u64,
}

impl ObjectStoreArgs {
    pub(super) fn inherit(&mut self, before: &ObjectStoreArgs, given: &Given<'_>) {
        given.take("endpoint", &mut self.endpoint, &before.endpoint);
        given.take("allow_http", &mut self.allow_http, &before.allow_http);
        given.take("s3_requests", &mut self.s3_requests, &before.s3_requests);
        given.take("s3_retry_timeout", &mut self.s3_retry_timeout, &before.s3_retry_timeout);
    }
}
