//! What a mount shows: one state of the archive (the last, or `--session
//! N`), or every state side by side (`--all-sessions`): `@1` (the create)
//! to `@N` at the top, numbered as `lockbox log` numbers them, each the
//! archive as it was right after that state, opened on first use from the
//! content key already unlocked (no KDF again), a few kept open.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use revault_lockbox_api::read::{AsOf, Bounded, Browser};
use revault_lockbox_api::storage::ReadAt;
use revault_lockbox_api::{Archive, Error, OpenOptions};

use super::attr::MAX_VIEWS;

/// States kept open at once; another is opened again when looked at.
const OPEN_STATES: usize = 4;

/// One state's directory at the top of an `--all-sessions` mount.
pub struct StateDir {
    /// Its name, `@N`.
    pub name: String,
    /// When its session was committed.
    pub committed: SystemTime,
    /// The state's number (after a compaction, the first may be past 1).
    pub state: u64,
}

pub enum Views<S> {
    One(Arc<Browser<S>>),
    AllStates {
        latest: Arc<Browser<S>>,
        states: Vec<StateDir>,
        options: OpenOptions,
        open: Bounded<u64, Arc<Browser<S>>>,
    },
}

impl<S: ReadAt + Clone + 'static> Views<S> {
    /// Every state of `archive` side by side, each opened with `options`.
    pub fn all_states(archive: Archive<S>, options: OpenOptions) -> Result<Views<S>, Error> {
        let states: Vec<StateDir> = archive
            .history()?
            .iter()
            .filter_map(|s| {
                let n = s.state?;
                let since = Duration::from_nanos(s.created_ns.max(0) as u64);
                Some(StateDir { name: format!("@{n}"), committed: UNIX_EPOCH + since, state: n })
            })
            .take(MAX_VIEWS as usize)
            .collect();
        Ok(Views::AllStates {
            latest: Arc::new(Browser::new(archive)),
            states,
            options,
            open: Bounded::new(OPEN_STATES),
        })
    }

    /// Whether the top shows states rather than one state's entries.
    pub fn all(&self) -> bool {
        matches!(self, Views::AllStates { .. })
    }

    /// The states at the top (none with one view).
    pub fn states(&self) -> &[StateDir] {
        match self {
            Views::One(_) => &[],
            Views::AllStates { states, .. } => states,
        }
    }

    /// The state a top-level name names (its view), if it is one.
    pub fn view_named(&self, name: &[u8]) -> Option<u64> {
        self.states().iter().position(|s| s.name.as_bytes() == name).map(|i| i as u64 + 1)
    }

    /// The archive as the mount's totals describe it: the last state.
    pub fn latest(&self) -> &Archive<S> {
        match self {
            Views::One(b) | Views::AllStates { latest: b, .. } => b.archive(),
        }
    }

    /// The browser of `view` (0 with one view, else the state from 1).
    pub fn browser(&self, view: u64) -> Result<Arc<Browser<S>>, Error> {
        let (latest, options, open, states) = match self {
            Views::One(b) => return Ok(Arc::clone(b)),
            Views::AllStates { latest, options, open, states } => (latest, options, open, states),
        };
        open.get_or_open(view, || {
            // Views are at most MAX_VIEWS (2^20 - 1), counted from 1.
            let state = states.get((view as usize).wrapping_sub(1)).map_or(view, |s| s.state);
            let archive = latest.archive().open_state(AsOf::State(state as i64), options.clone())?;
            Ok(Arc::new(Browser::new(archive)))
        })
    }
}
