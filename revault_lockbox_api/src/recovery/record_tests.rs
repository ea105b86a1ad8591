use std::io::{self, Cursor};

use crate::storage::ReadAt;

use super::*;
use crate::format::{header_copy_len, TRAILER_LEN};
use crate::test_data::random;

const WINDOW: usize = 1 << 20;
const DATA_START: u64 = 4128;

fn owner(first_session: bool) -> RecordOwner {
    RecordOwner { version: 4, archive_id: [7; 16], session_salt: [9; 32], first_session }
}

/// Appends a session of `len` random bytes to `file` as a writer lays it
/// out (protected bytes, a header copy of slot size 256, the trailer, the
/// record and footer, the trailer again); returns the protected range and
/// the footer.
fn add_session(file: &mut Vec<u8>, len: usize, seed: u64, percent: u8) -> (std::ops::Range<u64>, Footer) {
    let first = file.is_empty();
    if first {
        file.extend(random(DATA_START as usize, seed + 1000));
    }
    let start = file.len() as u64;
    file.extend(random(len, seed));
    let protected = start..file.len() as u64;
    file.extend(random(header_copy_len(256) as usize, seed + 2000));
    let trailer = random(TRAILER_LEN, seed + 3000);
    file.extend(&trailer);
    let mut record = Vec::new();
    let footer = write_record(
        &Cursor::new(file.clone()),
        protected.clone(),
        percent,
        WINDOW,
        owner(first),
        &mut record,
    )
    .unwrap();
    assert_eq!(record.len() as u64, footer.record_len + FOOTER_LEN as u64);
    file.extend(record);
    file.extend(&trailer);
    (protected, footer)
}

fn footer_at(file: &[u8]) -> (u64, [u8; FOOTER_LEN]) {
    let at = file.len() - FOOTER_LEN - TRAILER_LEN;
    (at as u64, file[at..at + FOOTER_LEN].try_into().unwrap())
}

/// Repairs `file`'s protected bytes in a copy, through the stored record.
fn repaired(
    damaged: &[u8],
    protected: &std::ops::Range<u64>,
    located: &LocatedRecord,
) -> io::Result<Vec<u8>> {
    let source = Cursor::new(damaged.to_vec());
    let mut parity = StoredParity::new(&source, located.record_at(), &located.footer);
    let mut out = damaged.to_vec();
    let report =
        repair(&source, protected.start, &located.footer.layout, WINDOW, &mut parity, |index, bytes| {
            let at = protected.start as usize + index as usize * SHARD_LEN;
            out[at..at + bytes.len()].copy_from_slice(bytes);
            Ok(())
        })?;
    assert!(report.unrepairable.is_empty(), "{report:?}");
    Ok(out)
}

#[test]
fn a_record_round_trips_and_repairs_a_damaged_run_of_its_percentage() {
    let mut file = Vec::new();
    let (protected, footer) = add_session(&mut file, (3 << 20) + 12_345, 1, 5);
    let (at, bytes) = footer_at(&file);
    assert_eq!(Footer::decode(&bytes, at).unwrap(), footer);
    assert_eq!(footer.protected_start, DATA_START);
    assert_eq!(footer.layout, Layout::new(protected.end - protected.start, 5).unwrap());
    let hash = *crate::format::record_hasher()
        .update(&file[footer.record_at(at) as usize..at as usize])
        .finalize()
        .as_bytes();
    assert_eq!(footer.record_hash, hash, "the footer holds the record's hash");
    let located = locate_records(&Cursor::new(&file), file.len() as u64).unwrap();
    assert_eq!(located, vec![LocatedRecord { footer_at: at, footer }]);

    let run = (protected.end - protected.start) as usize * 5 / 100;
    for start in [protected.start as usize, protected.end as usize - run, 1_000_000] {
        let mut damaged = file.clone();
        damaged[start..start + run].fill(0x5a);
        assert!(repaired(&damaged, &protected, &located[0]).unwrap() == file, "at {start}");
    }
}

#[test]
fn a_run_from_the_protected_bytes_into_the_record_is_repaired() {
    // Five groups: a run reaching into the record costs each group about
    // as many recovery shards as its share of the run (the shards are
    // dealt over the groups), not all of the first group's.
    let mut file = Vec::new();
    let (protected, footer) = add_session(&mut file, 20 << 20, 4, 5);
    assert_eq!(footer.layout.groups, 5);
    let located = locate_records(&Cursor::new(&file), file.len() as u64).unwrap()[0];
    let (record_at, record_end) = (located.record_at() as usize, located.footer_at as usize);
    let run = (record_end - DATA_START as usize) * 45 / 1000;
    let (p, end) = (protected.start as usize, protected.end as usize);
    for start in [end - run / 2, end - run / 5, record_at, record_end - run] {
        let mut damaged = file.clone();
        damaged[start..start + run].fill(0x5a);
        let out = repaired(&damaged, &protected, &located).unwrap();
        assert!(out[p..end] == file[p..end], "run at {start}");
    }
}

#[test]
fn a_checksum_list_is_taken_from_the_copy_that_passes_its_check() {
    let mut file = Vec::new();
    let (protected, footer) = add_session(&mut file, 2 << 20, 2, 5);
    let located = locate_records(&Cursor::new(&file), file.len() as u64).unwrap()[0];
    let (record_at, layout) = (located.record_at() as usize, footer.record_layout());
    let mut damaged = file.clone();
    damaged[protected.start as usize + 10] ^= 1;
    // The block's copy of group 0's list damaged: the table's is used.
    damaged[record_at + layout.first_sums(0) as usize + 3] ^= 1;
    let range = protected.start as usize..protected.end as usize;
    assert!(repaired(&damaged, &protected, &located).unwrap()[range.clone()] == file[range]);
    // Both copies damaged: refused, never guessed.
    damaged[record_at + layout.second_sums(0) as usize + 3] ^= 1;
    let e = repaired(&damaged, &protected, &located).unwrap_err();
    assert!(e.to_string().contains("both copies of its checksum list are damaged"), "{e}");
    // Two copies that each pass their check and differ: the record lies.
    let mut lying = file.clone();
    lying[protected.start as usize] ^= 1;
    let len = layout.sums_len() as usize;
    let table = record_at + layout.second_sums(0) as usize;
    let mut sums = lying[table..table + len - 8].to_vec();
    sums[0] ^= 1;
    let check = sums_check(0, &sums);
    lying[table..table + len - 8].copy_from_slice(&sums);
    lying[table + len - 8..table + len].copy_from_slice(&check);
    let e = repaired(&lying, &protected, &located).unwrap_err();
    assert!(e.to_string().contains("the record lies"), "{e}");
}

#[test]
fn records_are_found_backwards_session_by_session_until_one_has_none() {
    let mut file = Vec::new();
    add_session(&mut file, 100_000, 3, 5);
    // A session without a record: the walk stops after it.
    file.extend(random(50_000, 4));
    let (_, second) = add_session(&mut file, 700_000, 5, 10);
    let (_, third) = add_session(&mut file, 5 << 20, 6, 1);
    let located = locate_records(&Cursor::new(&file), file.len() as u64).unwrap();
    assert_eq!(located.iter().map(|r| r.footer).collect::<Vec<_>>(), vec![second, third]);
    assert_eq!(located[1].footer.previous_end(), Some(located[0].session_end()));
    assert_eq!(located[1].session_end(), file.len() as u64);
    // A damaged last footer: nothing is found from the end (the trailer,
    // with a key, still gives the record's place).
    let (at, _) = footer_at(&file);
    file[at as usize + 40] ^= 1;
    assert!(locate_records(&Cursor::new(&file), file.len() as u64).unwrap().is_empty());
    assert!(locate_records(&Cursor::new(&file[..100]), 100).unwrap().is_empty());
}

#[test]
fn hostile_footers_are_refused() {
    let mut file = Vec::new();
    add_session(&mut file, 1 << 20, 7, 5);
    let (at, good) = footer_at(&file);
    let footer = Footer::decode(&good, at).unwrap();
    let resealed = |f: Footer| f.encode();
    // Any changed byte fails the footer's checksum.
    for i in [0, 9, 12, 30, 60, 100, 140, FOOTER_LEN - 1] {
        let mut bad = good;
        bad[i] ^= 0x10;
        assert!(Footer::decode(&bad, at).is_err(), "byte {i}");
    }
    // Fields that a checksum does not save.
    let shapes = [
        Footer { percent: 6, ..footer },
        Footer { record_len: footer.record_len + 1, ..footer },
        Footer { layout: Layout { groups: 2, ..footer.layout }, ..footer },
        Footer { layout: Layout { recovery: footer.layout.recovery + 1, ..footer.layout }, ..footer },
        Footer { layout: Layout { len: footer.layout.len + 4096, ..footer.layout }, ..footer },
        Footer { protected_start: footer.protected_start + 1, ..footer },
        Footer { owner: RecordOwner { first_session: false, ..footer.owner }, ..footer },
        Footer { owner: RecordOwner { version: 3, ..footer.owner }, ..footer },
    ];
    for bad in shapes {
        assert!(Footer::decode(&resealed(bad), at).is_err(), "{bad:?}");
    }
    for percent in [0u8, MAX_PERCENT + 1] {
        let mut bytes = resealed(footer);
        bytes[12..14].copy_from_slice(&u16::from(percent).to_le_bytes());
        let sum = *blake3::Hasher::new_derive_key("revault-lockbox v4 recovery footer")
            .update(&bytes[..FOOTER_LEN - 32])
            .finalize()
            .as_bytes();
        bytes[FOOTER_LEN - 32..].copy_from_slice(&sum);
        let e = Footer::decode(&bytes, at).unwrap_err();
        assert_eq!(e.why, "percentage out of range", "{percent}");
    }
    // At another place the record and protected range do not fit.
    for other in [at - 1, at + 4096, 10] {
        assert!(Footer::decode(&good, other).is_err(), "at {other}");
    }
    // A layout of too many originals cannot even be asked for.
    let huge = Layout { originals: MAX_GROUP_SHARDS + 1, ..footer.layout };
    assert!(huge.checked().is_err());
}

#[test]
fn a_record_needs_its_protected_bytes() {
    let data = random(10_000, 8);
    let mut out = Vec::new();
    let e = write_record(&Cursor::new(&data), 5000..20_000, 5, WINDOW, owner(false), &mut out).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    let e = write_record(&Cursor::new(&data), 5000..5000, 5, WINDOW, owner(false), &mut out).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
}

/// FORMAT.md §10: the record of 5 % over the 152 bytes `00 01 … 97` at
/// 4128 (a first session), for the archive id `00 01 … 0f` and the salt
/// `20`×32. One original shard, so its two recovery shards are copies of
/// it (any MDS code's), and every byte was computed again by Python's
/// `blake3` from this description.
#[test]
fn a_tiny_record_is_a_known_answer() {
    let mut file = vec![0u8; 4128];
    file.extend((0..152u32).map(|i| i as u8));
    let owner = RecordOwner {
        version: 4,
        archive_id: core::array::from_fn(|i| i as u8),
        session_salt: [0x20; 32],
        first_session: true,
    };
    let mut out = Vec::new();
    let footer = write_record(&Cursor::new(file.clone()), 4128..4280, 5, WINDOW, owner, &mut out).unwrap();
    let mut shard = file[4128..].to_vec();
    shard.resize(SHARD_LEN, 0);
    let sums = hex_bytes("9a213dde8aaf256a9a213dde8aaf256a9a213dde8aaf256afce9419841a01cd4");
    let record = [&sums[..], &shard, &shard, &sums].concat();
    assert_eq!(out.len(), 8256 + FOOTER_LEN);
    assert!(out[..8256] == record[..], "sums || shard || shard || sums");
    // Its footer's bytes: `format::known_answers::trailer_with_a_recovery_record`.
    assert_eq!(
        footer.record_hash.to_vec(),
        hex_bytes("b04213fa26ff86db323510de9b54ed0519ed294ffdd21f685bdb4d8bfa5d3cd0")
    );
    assert_eq!(Footer::decode(&out[8256..].try_into().unwrap(), 16880).unwrap(), footer);
}

fn hex_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect()
}

/// A source that counts the bytes read from it.
struct Counted {
    inner: Cursor<Vec<u8>>,
    read: std::sync::atomic::AtomicU64,
}

impl crate::storage::ReadAt for Counted {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.read.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        self.inner.read_exact_at(buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
}

fn read_at(view: &dyn crate::storage::ReadAt, at: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    view.read_exact_at(&mut buf, at).unwrap();
    buf
}

#[test]
fn a_lazy_view_reads_only_near_what_is_asked_and_rebuilds_the_group_of_a_damaged_shard() {
    let mut file = Vec::new();
    let (first, _) = add_session(&mut file, (3 << 20) + 777, 21, 5);
    let (second, _) = add_session(&mut file, (2 << 20) + 5, 22, 5);
    let mut damaged = file.clone();
    // A run in the first session, a sector in the second.
    let run = first.start as usize + (2 << 20)..first.start as usize + (2 << 20) + 40_000;
    damaged[run.clone()].fill(0x5A);
    let sector = second.start as usize + (1 << 20) + 100;
    damaged[sector..sector + 4096].fill(0xC3);
    let source = Counted { inner: Cursor::new(damaged.clone()), read: 0.into() };
    let view = lazy_records_view(&source).unwrap().unwrap();
    let opened = source.read.swap(0, std::sync::atomic::Ordering::Relaxed);
    assert!(opened < 4096, "opening reads the footers only: {opened}");

    // A read far from the damage: its shards and their lists, nothing else.
    let at = first.start + 5000;
    assert_eq!(read_at(&view, at, 100_000), file[at as usize..at as usize + 100_000]);
    let read = source.read.swap(0, std::sync::atomic::Ordering::Relaxed);
    assert!(read < 100_000 + 2 * 4096 + 64 * 1024, "read {read} bytes");
    assert!(view.runs().iter().all(|r| !r.is_damaged()), "{:?}", view.runs());
    // Read again: checked once, so only the bytes asked for.
    read_at(&view, at, 100_000);
    assert_eq!(source.read.swap(0, std::sync::atomic::Ordering::Relaxed), 100_000);

    // A read of a few bytes under the sector: its group rebuilt.
    assert_eq!(read_at(&view, sector as u64 + 10, 7), file[sector + 10..sector + 17]);
    let runs = view.runs();
    assert!(!runs[0].is_damaged() && runs[1].is_damaged() && runs[1].is_repaired(), "{runs:?}");
    assert!(runs[1].rebuilt.iter().any(|r| r.contains(&(sector as u64 + 10))), "{runs:?}");

    // Everything protected reads as written; the run's shards rebuilt.
    let all = read_at(&view, 0, file.len());
    assert_eq!(all[first.start as usize..first.end as usize], file[first.start as usize..first.end as usize]);
    assert_eq!(
        all[second.start as usize..second.end as usize],
        file[second.start as usize..second.end as usize]
    );
    let runs = view.runs();
    assert!(runs.iter().all(|r| r.is_damaged() && r.is_repaired()), "{runs:?}");
    assert!(runs[0].found.rebuilt >= 40_000 / SHARD_LEN as u64, "{runs:?}");
    assert!(view.refused().is_empty());
}

/// Group 0's checksum lists changed in both copies, each with a valid
/// check: honest parity then rebuilds shards that do not match them.
fn lists_that_lie(file: &mut [u8], footer: &Footer) {
    let (footer_at, _) = footer_at(file);
    let record_at = footer.record_at(footer_at) as usize;
    let shape = footer.record_layout();
    let sums_len = shape.sums_len() as usize;
    for list in [shape.first_sums(0), shape.second_sums(0)] {
        let list = record_at + list as usize;
        file[list] ^= 0xFF;
        let check = sums_check(0, &file[list..list + sums_len - 8]);
        file[list + sums_len - 8..list + sums_len].copy_from_slice(&check);
    }
}

#[test]
fn a_lazy_view_refuses_lists_that_lie_and_reads_the_bytes_as_they_are() {
    let mut file = Vec::new();
    let (protected, footer) = add_session(&mut file, 1 << 20, 23, 5);
    lists_that_lie(&mut file, &footer);
    let view = lazy_records_view(Cursor::new(file.clone())).unwrap().unwrap();
    let at = protected.start as usize;
    assert_eq!(read_at(&view, at as u64, 4096), file[at..at + 4096]);
    let refused = view.refused();
    assert!(refused.len() == 1 && refused[0].contains("the parity lies"), "{refused:?}");
    assert_eq!(view.runs()[0].found.rebuilt, 0);
}

fn read_unit(view: &dyn crate::storage::ReadAt, at: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    view.read_unit_at(&mut buf, at).unwrap();
    buf
}

#[test]
fn a_lazy_view_hands_units_through_and_checks_them_only_when_they_fail() {
    let mut file = Vec::new();
    let (protected, _) = add_session(&mut file, (2 << 20) + 300, 24, 5);
    let mut damaged = file.clone();
    let bad = protected.start as usize + (1 << 20) + 77;
    damaged[bad..bad + 5000].fill(0xA5);
    let source = Counted { inner: Cursor::new(damaged.clone()), read: 0.into() };
    let view = lazy_records_view(&source).unwrap().unwrap();
    source.read.swap(0, std::sync::atomic::Ordering::Relaxed);

    // A unit read is the bytes as they are, and only those: no shard
    // checked, no list read, even over the damage.
    let unit = (bad as u64 - 40_000, 100_000);
    assert_eq!(read_unit(&view, unit.0, unit.1), damaged[unit.0 as usize..][..unit.1]);
    assert_eq!(source.read.swap(0, std::sync::atomic::Ordering::Relaxed), unit.1 as u64);
    assert!(view.runs().iter().all(|r| !r.is_damaged()), "{:?}", view.runs());

    // A unit away from the damage that failed its check (as a wrong key
    // would make it): nothing rebuilt, reading it again is pointless.
    let away = protected.start + 4096 * 10;
    assert!(!view.recheck(away, 50_000).unwrap());
    assert!(view.runs().iter().all(|r| !r.is_damaged()), "{:?}", view.runs());

    // The unit over the damage failed: its shards checked, their group
    // rebuilt, and the unit read again as written.
    assert!(view.recheck(unit.0, unit.1 as u64).unwrap());
    assert_eq!(read_unit(&view, unit.0, unit.1), file[unit.0 as usize..][..unit.1]);
    let runs = view.runs();
    assert!(runs[0].is_damaged() && runs[0].is_repaired(), "{runs:?}");
    assert!(runs[0].rebuilt.iter().any(|r| r.contains(&(bad as u64))), "{runs:?}");
    // A unit read elsewhere under the rebuilt shards gets them too.
    assert_eq!(read_unit(&view, bad as u64, 10), file[bad..bad + 10]);
}

#[test]
fn a_unit_that_passes_its_check_never_consults_lists_that_lie() {
    let mut file = Vec::new();
    let (protected, footer) = add_session(&mut file, 1 << 20, 25, 5);
    lists_that_lie(&mut file, &footer);
    let view = lazy_records_view(Cursor::new(file.clone())).unwrap().unwrap();
    let at = protected.start as usize;
    // Read as units whose checks pass: the lying list is never read, so
    // it can neither be refused nor turn good bytes into others.
    assert_eq!(read_unit(&view, at as u64, 1 << 20), file[at..at + (1 << 20)]);
    assert!(view.refused().is_empty(), "{:?}", view.refused());
    assert!(view.runs().iter().all(|r| !r.is_damaged()), "{:?}", view.runs());
    // Asked to recheck (a unit failed for another reason), the lie is
    // found and refused, and nothing is rebuilt.
    assert!(!view.recheck(at as u64, 4096).unwrap());
    let refused = view.refused();
    assert!(refused.len() == 1 && refused[0].contains("the parity lies"), "{refused:?}");
    assert_eq!(read_unit(&view, at as u64, 4096), file[at..at + 4096]);
}
