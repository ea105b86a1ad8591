//! Owner and group names: looked up once per id at `create` (tar's
//! uname/gname), and once per name at `extract` when owners are restored.
//! Lookups go through the system's databases (NSS), so they are cached:
//! a tree of a million files has a handful of owners.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

/// Names of ids, and ids of names, each looked up once.
#[derive(Debug, Default)]
pub(crate) struct OwnerNames {
    users: HashMap<u32, Option<Vec<u8>>>,
    groups: HashMap<u32, Option<Vec<u8>>>,
    uids: HashMap<Vec<u8>, Option<u32>>,
    gids: HashMap<Vec<u8>, Option<u32>>,
}

impl OwnerNames {
    /// The user name of `uid`, if the system has one.
    pub(crate) fn user(&mut self, uid: u32) -> Option<Vec<u8>> {
        self.users
            .entry(uid)
            .or_insert_with(|| uzers::get_user_by_uid(uid).map(|u| u.name().as_bytes().to_vec()))
            .clone()
    }

    /// The group name of `gid`, if the system has one.
    pub(crate) fn group(&mut self, gid: u32) -> Option<Vec<u8>> {
        self.groups
            .entry(gid)
            .or_insert_with(|| uzers::get_group_by_gid(gid).map(|g| g.name().as_bytes().to_vec()))
            .clone()
    }

    /// The local uid of the user `name`.
    pub(crate) fn uid(&mut self, name: &[u8]) -> Option<u32> {
        *self
            .uids
            .entry(name.to_vec())
            .or_insert_with(|| uzers::get_user_by_name(OsStr::from_bytes(name)).map(|u| u.uid()))
    }

    /// The local gid of the group `name`.
    pub(crate) fn gid(&mut self, name: &[u8]) -> Option<u32> {
        *self
            .gids
            .entry(name.to_vec())
            .or_insert_with(|| uzers::get_group_by_name(OsStr::from_bytes(name)).map(|g| g.gid()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_root_both_ways_and_unknown_names_are_none() {
        let mut names = OwnerNames::default();
        assert_eq!(names.user(0).as_deref(), Some(&b"root"[..]));
        assert_eq!(names.group(0).as_deref(), Some(&b"root"[..]));
        assert_eq!(names.uid(b"root"), Some(0));
        assert_eq!(names.gid(b"root"), Some(0));
        assert_eq!(names.uid(b"no-such-user-lockbox"), None);
        assert_eq!(names.user(3_999_999_999), None);
    }
}
