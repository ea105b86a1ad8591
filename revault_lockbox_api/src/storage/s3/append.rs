//! Committing one append session to an archive on object storage: its
//! bytes become the archive's next part, created only if no other writer
//! created that part first (docs/SCALE.md, "Appends on an object store").
//!
//! The commit point is a conditional create (`If-None-Match: *`): a single
//! `PutObject` when the session fits one part; a larger one is uploaded
//! to a staging name by a multipart upload and copied to the part's name
//! by the client's copy-if-absent (an `UploadPartCopy` completed with
//! `If-None-Match: *`), because the client sends no condition on the
//! completion of its own uploads. The staging object is deleted whatever
//! happens; one left by a writer that died is deleted by a later writer
//! once it is a day old (never sooner: it may be another writer's, in
//! flight).

use std::fs::File;
use std::io::{self, BufReader, Seek, SeekFrom};

use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};

use super::joined::{part_location, STAGING_PART};
use super::writer::S3Writer;
use super::{io_error, S3Error, S3Location, S3Store};

impl S3Store {
    /// Creates session part `number` of the archive from the bytes of
    /// `session` (all of them, read from its start), unless it exists:
    /// then [`S3Error::Raced`]. Parts of `part_size` bytes (a session of
    /// at most one part is a single PUT): memory holds a few of them.
    pub fn create_part(&self, number: u64, session: &mut File, part_size: usize) -> io::Result<()> {
        let part = part_location(self.location(), number);
        let raced = || io_error(S3Error::Raced { location: part.clone(), number });
        let len = session.seek(SeekFrom::End(0))?;
        session.seek(SeekFrom::Start(0))?;
        let path = part.object_path();
        if len <= part_size as u64 {
            let mut bytes = Vec::with_capacity(len as usize);
            io::Read::read_to_end(session, &mut bytes)?;
            let options = PutOptions { mode: PutMode::Create, ..PutOptions::default() };
            return match self.block_on(self.object_store().put_opts(&path, PutPayload::from(bytes), options))
            {
                Ok(_) => Ok(()),
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                    Err(raced())
                }
                Err(e) => Err(io_error(self.error_at("writing", &part, e))),
            };
        }
        let name = format!("{STAGING_PART}{:016x}", getrandom::u64().map_err(io::Error::other)?);
        let staging = self.location().beside(&name);
        let mut upload = S3Writer::to(self.clone(), staging.clone(), part_size);
        io::copy(&mut BufReader::with_capacity(1 << 20, session), &mut upload)?;
        upload.finish()?;
        let copied = self.block_on(self.object_store().copy_if_not_exists(&staging.object_path(), &path));
        // Whatever the copy did, the staged bytes are not the archive's.
        self.delete(&staging);
        match copied {
            Ok(()) => Ok(()),
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                Err(raced())
            }
            Err(e) => Err(io_error(self.error_at("committing", &part, e))),
        }
    }

    /// Deletes every object under the archive's parts prefix, newest
    /// first.
    pub(super) fn delete_parts(&self) -> Result<(), S3Error> {
        let base = self.location();
        let prefix = base.parts_prefix().object_path();
        let listed = self.block_on(self.object_store().list_with_delimiter(Some(&prefix)));
        let listed = listed.map_err(|e| self.error_at("listing the parts of", base, e))?;
        let mut names: Vec<_> = listed.objects.into_iter().map(|meta| meta.location).collect();
        names.sort_by(|a, b| b.as_ref().cmp(a.as_ref()));
        for name in names {
            let deleted = self.block_on(self.object_store().delete(&name));
            deleted.map_err(|e| self.error_at("deleting the old parts of", base, e))?;
        }
        Ok(())
    }

    /// Deletes `location`, best effort: a staging object a delete missed
    /// is deleted by a later writer once a day old.
    pub(super) fn delete(&self, location: &S3Location) {
        let _ = self.block_on(self.object_store().delete(&location.object_path()));
    }

    pub(super) fn error_at(
        &self,
        action: &'static str,
        location: &S3Location,
        error: object_store::Error,
    ) -> S3Error {
        S3Error::Request { action, location: location.clone(), error: Box::new(error) }
    }
}
