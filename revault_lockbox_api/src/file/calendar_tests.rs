//! Compaction under calendar retention, on an archive whose sessions have
//! chosen times: the kept states, with gaps between them, keep their
//! numbers, times, labels and content; the others are refused; a change
//! after the compaction counts on from the last.

use std::num::NonZeroU64;
use std::path::Path;

use super::chain_tests::{password, shaped};
use super::{ArchiveUpdater, UpdateOptions};
use crate::archive::{Archive, AsOf, Period, Retention};
use crate::civil::utc_ns;
use crate::error::Error;
use crate::session::SessionStart;

std::thread_local! {
    /// The time the next shaped session takes.
    static NEXT_NS: std::cell::Cell<i64> = const { std::cell::Cell::new(0) };
}

fn dated(start: SessionStart) -> SessionStart {
    SessionStart { created_ns: Some(NEXT_NS.get()), ..start }
}

/// UTC nanoseconds of 2030-`month`-`day` `hour`:`minute`.
fn utc(month: u32, day: u32, hour: i64, minute: i64) -> i64 {
    utc_ns(2030, month, day, hour, minute)
}

/// Writes `f` as `text` and adds it in a session at `at_ns`, labelled.
fn change(path: &Path, at_ns: i64, text: &str) {
    let src = path.with_extension("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("f"), text).unwrap();
    std::fs::write(src.join(text), text).unwrap();
    NEXT_NS.set(at_ns);
    super::update::SHAPE_NEXT_SESSION.set(Some(dated));
    let updater = ArchiveUpdater::open(path, &password(), UpdateOptions::new().label(text)).unwrap();
    updater.add(&src, &["f".into(), text.into()]).unwrap();
}

fn read_f(a: &Archive<std::fs::File>, state: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let at = a.at(AsOf::State(state as i64)).unwrap();
    std::io::Read::read_to_end(&mut at.open_file("f").unwrap(), &mut out).unwrap();
    out
}

fn open(path: &Path) -> Archive<std::fs::File> {
    Archive::open(std::fs::File::open(path).unwrap(), &password()).unwrap()
}

#[test]
fn calendar_retention_keeps_states_with_gaps_under_their_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    // 2029-12-31, a Monday: the week of 2030-01-06, the year before.
    let made = utc_ns(2029, 12, 31, 8, 0);
    std::fs::write(&path, shaped(|s| SessionStart { created_ns: Some(made), ..s })).unwrap();
    // 2030-01-06 is a Sunday, -07 a Monday, -20 a Sunday, 02-01 a Friday.
    let times = [
        utc(1, 6, 10, 0),
        utc(1, 6, 20, 0),
        utc(1, 7, 9, 0),
        utc(1, 9, 9, 0),
        utc(1, 9, 9, 0),
        utc(1, 20, 12, 0),
        utc(2, 1, 0, 30),
        utc(2, 1, 23, 0),
    ];
    for (i, &t) in times.iter().enumerate() {
        change(&path, t, &format!("state {}", i + 2));
    }
    let a = open(&path);
    let before = a.history().unwrap();
    assert_eq!(before.iter().rev().find_map(|s| s.state), Some(9));
    let n = |c| NonZeroU64::new(c).unwrap();

    // Days: 02-01 (9), 01-20 (7), 01-09 (6: the later of two at one
    // instant). Weeks (Monday to Sunday): 9, 7, 6, then the week ending
    // on Sunday 01-06 (3). Months: 9, 7.
    let daily = Retention::latest().per(Period::Day, n(3));
    let kept = |r: &Retention| a.kept_states(r).unwrap().iter().map(|s| s.state.unwrap()).collect::<Vec<_>>();
    assert_eq!(kept(&daily), [6, 7, 9]);
    assert_eq!(kept(&Retention::latest().per(Period::Week, n(4))), [3, 6, 7, 9]);
    assert_eq!(kept(&Retention::latest().per(Period::Month, n(2))), [7, 9]);
    assert_eq!(kept(&Retention::latest().per(Period::Year, n(5))), [1, 9], "2029-12-31 is not 2030");
    let policy = daily.per(Period::Week, n(4)).per(Period::Month, n(2));
    let expected = [3, 6, 7, 9];
    assert_eq!(kept(&policy), expected);
    let contents: Vec<Vec<u8>> = expected.iter().map(|&s| read_f(&a, s)).collect();
    let predicted = a.reclaimable(&policy).unwrap();
    assert_eq!((predicted.states, predicted.kept.clone()), ((3, 9), expected.to_vec()));
    drop(a);
    let len_before = std::fs::metadata(&path).unwrap().len();
    let len = ArchiveUpdater::compact(&path, &password(), UpdateOptions::new().retention(policy)).unwrap();
    assert!(len_before - len >= predicted.bytes, "reclaimed {} < {}", len_before - len, predicted.bytes);

    let a = open(&path);
    let after = a.history().unwrap();
    let was = |state: u64| before.iter().find(|s| s.state == Some(state)).unwrap();
    for (s, &state) in after.iter().filter(|s| s.state.is_some()).zip(&expected) {
        assert_eq!(s.state, Some(state));
        assert_eq!((s.created_ns, &s.label), (was(state).created_ns, &was(state).label), "state {state}");
    }
    assert_eq!(after.iter().filter(|s| s.state.is_some()).count(), expected.len());
    for (&state, content) in expected.iter().zip(&contents) {
        assert_eq!(&read_f(&a, state), content, "state {state}");
        assert_eq!(content, format!("state {state}").as_bytes());
        let named = format!("state {state}");
        assert!(a.at(AsOf::State(state as i64)).unwrap().find(named.as_bytes()).unwrap().is_some());
    }
    for removed in [1, 2, 4, 5, 8] {
        let err = a.at(AsOf::State(removed)).map(drop).unwrap_err();
        assert!(matches!(err, Error::NoSuchState { .. }), "state {removed}: {err:?}");
    }
    let gap = a.at(AsOf::State(4)).map(drop).unwrap_err().to_string();
    let said = "state 4 was removed by a compaction: the archive holds states 3 to 9 with gaps (lockbox log lists them)";
    assert_eq!(gap, said);
    assert!(a.verify().unwrap().is_ok());
    drop(a);

    // A change after it is state 10, and a plain compaction keeps it.
    change(&path, utc(2, 2, 8, 0), "state 10");
    assert_eq!(open(&path).history().unwrap().last().unwrap().state, Some(10));
    ArchiveUpdater::compact(&path, &password(), UpdateOptions::new()).unwrap();
    let a = open(&path);
    assert_eq!(a.history().unwrap().iter().map(|s| s.state).collect::<Vec<_>>(), [Some(10)]);
    assert_eq!(read_f(&a, 10), b"state 10");
}

/// A change naming a state not after the one before it (which only a
/// forged session can write) is refused wherever the sessions are read;
/// one naming a later state is a gap, as a compaction leaves.
#[test]
fn a_change_naming_a_state_not_after_the_last_is_refused() {
    fn names_two(start: SessionStart) -> SessionStart {
        SessionStart { state: 2, ..start }
    }
    fn names_five(start: SessionStart) -> SessionStart {
        SessionStart { state: 5, ..start }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.lbox");
    std::fs::write(&path, shaped(|s| s)).unwrap();
    change(&path, utc(1, 1, 0, 0), "state 2");
    let src = path.with_extension("src");
    super::update::SHAPE_NEXT_SESSION.set(Some(names_five));
    let updater = ArchiveUpdater::open(&path, &password(), UpdateOptions::new()).unwrap();
    updater.add(&src, &["f".into()]).unwrap();
    let a = open(&path);
    let states: Vec<_> = a.history().unwrap().iter().map(|s| s.state).collect();
    assert_eq!(states, [Some(1), Some(2), Some(5)]);
    assert!(a.verify().unwrap().is_ok());
    drop(a);
    super::update::SHAPE_NEXT_SESSION.set(Some(names_two));
    let updater = ArchiveUpdater::open(&path, &password(), UpdateOptions::new()).unwrap();
    updater.add(&src, &["f".into()]).unwrap();
    let a = open(&path);
    let err = a.history().unwrap_err();
    assert!(matches!(err, Error::Malformed(_)), "{err:?}");
    assert!(err.to_string().contains("a change naming a state not after the last"), "{err}");
    assert!(a.verify().is_err(), "verify refuses it too");
}
