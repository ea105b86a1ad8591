//! What a failed extraction takes back: the directories it created that
//! are still empty, deepest first, so that a full disk or a damaged page
//! leaves no tree of empty directories. Files already placed stay, and so
//! do the directories holding them (`rmdir` removes only empty ones).

use rustix::fs::AtFlags;

use super::dirs::Walker;

impl Walker {
    /// Removes the directories this extraction created, newest first, that
    /// are empty. Best effort: one that cannot be reached or removed stays.
    pub(super) fn remove_made_dirs(&mut self) {
        let made = std::mem::take(&mut self.made);
        for (path, len) in made.iter().rev() {
            if let Ok((parent, name)) = self.parent(&path[..*len], false) {
                let _ = rustix::fs::unlinkat(&parent.fd, name, AtFlags::REMOVEDIR);
            }
        }
    }
}
