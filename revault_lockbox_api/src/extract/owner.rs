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
            return (e.uid, e.gid);
        }
        let uid = e.user().and_then(|n| self.names.uid(n)).unwrap_or(e.uid);
        let gid = e.group().and_then(|n| self.names.gid(n)).unwrap_or(e.gid);
        (uid, gid)
    }
}
