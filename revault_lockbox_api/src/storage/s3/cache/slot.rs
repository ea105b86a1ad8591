//! Where a fetched range's bytes arrive: filled once by the GET that
//! fetches them, waited on by every read that needs them, so a read never
//! issues a second GET for bytes already on their way.

use std::io;
use std::sync::{Condvar, Mutex};

use bytes::Bytes;

/// A fetched (or fetching) range's bytes, filled once by the fetch.
#[derive(Default)]
pub(in crate::storage::s3) struct Slot {
    state: Mutex<Option<Result<Bytes, (io::ErrorKind, String)>>>,
    ready: Condvar,
}

impl Slot {
    pub(in crate::storage::s3) fn fill(&self, result: io::Result<Bytes>) {
        let value = result.map_err(|e| (e.kind(), e.to_string()));
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        *state = Some(value);
        self.ready.notify_all();
    }

    /// The bytes, once they arrive.
    pub(in crate::storage::s3) fn wait(&self) -> io::Result<Bytes> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            match &*state {
                Some(Ok(bytes)) => return Ok(bytes.clone()),
                Some(Err((kind, text))) => return Err(io::Error::new(*kind, text.clone())),
                None => state = self.ready.wait(state).unwrap_or_else(|p| p.into_inner()),
            }
        }
    }

    /// `None` until the bytes (or an error) arrive; then whether they did.
    pub(in crate::storage::s3) fn state(&self) -> Option<bool> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.as_ref().map(|r| r.is_ok())
    }
}
