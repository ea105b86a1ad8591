//! Which permission bits an extracted entry gets: tar's rules, apart from
//! the file system so they can be tested alone.
//!
//! By default the process umask applies and the setuid, setgid and sticky
//! bits are dropped (`tar` without `-p`); with `same_permissions` the
//! stored `mode & 0o7777` is restored exactly (`tar -p`).

use rustix::fs::Mode;

/// How stored permission bits become the modes of extracted entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Modes {
    same_permissions: bool,
    umask: u32,
}

/// Permission bits proper; the setuid, setgid and sticky bits lie above.
const PERMISSION_BITS: u32 = 0o777;
/// Everything `chmod` sets.
const ALL_MODE_BITS: u32 = 0o7777;

impl Modes {
    /// The rules for this process: its umask, read once.
    pub(super) fn for_process(same_permissions: bool) -> Modes {
        Modes { same_permissions, umask: process_umask() }
    }

    #[cfg(test)]
    fn with_umask(same_permissions: bool, umask: u32) -> Modes {
        Modes { same_permissions, umask }
    }

    /// The mode an entry stored with `stored` ends up with.
    pub(super) fn final_mode(&self, stored: u32) -> u32 {
        if self.same_permissions {
            stored & ALL_MODE_BITS
        } else {
            stored & PERMISSION_BITS & !self.umask
        }
    }

    /// The mode to create a file with (the kernel applies the umask to it),
    /// and the mode a `fchmod` must set afterwards, if creating with it
    /// does not give the final mode: only with `same_permissions`, whose
    /// modes the umask must not touch.
    pub(super) fn file_creation(&self, stored: u32) -> (u32, Option<u32>) {
        let fin = self.final_mode(stored);
        let chmod = self.same_permissions && (fin & !PERMISSION_BITS != 0 || fin & self.umask != 0);
        (fin & PERMISSION_BITS, chmod.then_some(fin))
    }
}

/// The process umask. Read from `/proc/self/status` (Linux 4.7 on), since
/// reading it with `umask(2)` means setting it, which races with other
/// threads creating files; the fallback sets a strict mask for that moment.
fn process_umask() -> u32 {
    let from_proc = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| {
        let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
        u32::from_str_radix(line.trim(), 8).ok()
    });
    from_proc.unwrap_or_else(|| {
        let old = rustix::process::umask(Mode::from_raw_mode(0o077));
        rustix::process::umask(old);
        old.bits()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn umask_applies_and_special_bits_drop_by_default() {
        let m = Modes::with_umask(false, 0o022);
        assert_eq!(m.final_mode(0o4755), 0o755);
        assert_eq!(m.final_mode(0o2777), 0o755);
        assert_eq!(m.final_mode(0o1777), 0o755);
        assert_eq!(m.final_mode(0o666), 0o644);
        assert_eq!(m.file_creation(0o4755), (0o755, None));
        assert_eq!(Modes::with_umask(false, 0o077).final_mode(0o755), 0o700);
    }

    #[test]
    fn same_permissions_restores_every_bit() {
        let m = Modes::with_umask(true, 0o022);
        assert_eq!(m.final_mode(0o4755), 0o4755);
        assert_eq!(m.final_mode(0o1777), 0o1777);
        assert_eq!(m.file_creation(0o4755), (0o755, Some(0o4755)));
        // The umask would take bits the archive gave: set them again.
        assert_eq!(m.file_creation(0o666), (0o666, Some(0o666)));
        assert_eq!(m.file_creation(0o640), (0o640, None));
    }

    #[test]
    fn the_umask_is_read_without_changing_it() {
        let before = process_umask();
        assert_eq!(process_umask(), before);
        assert_eq!(before & !0o777, 0);
    }
}
