//! Which owner an extracted entry gets, when owners are restored (tar's
//! `--same-owner`): the local ids of its stored user and group names,
//! falling back to the stored ids where a name is absent or unknown here;
//! with `numeric`, the stored ids only (`--numeric-owner`).

use crate::format::Entry;
use crate::owners::OwnerNames;

pub(super) struct Owners {
    numeric: bool,
    names: OwnerNames,
}

impl Owners {
    pub(super) fn new(numeric: bool) -> Owners {
        Owners { numeric, names: OwnerNames::default() }
    }

    /// The uid and gid to give `e`.
    pub(super) fn of(&mut self, e: &Entry) -> (u32, u32) {
        if self.numeric {
            return (e.meta.uid, e.meta.gid);
        }
        let uid = e.meta.user.as_deref().and_then(|n| self.names.uid(n)).unwrap_or(e.meta.uid);
        let gid = e.meta.group.as_deref().and_then(|n| self.names.gid(n)).unwrap_or(e.meta.gid);
        (uid, gid)
    }
}
