use std::io::{self, Cursor};

use super::*;
use crate::test_data::random;

/// A run's parity kept in memory, as a reader would find it stored.
#[derive(Default)]
pub(super) struct Stored {
    pub(super) original_sums: Vec<Vec<ShardSum>>,
    pub(super) recovery: Vec<Vec<Option<Vec<u8>>>>,
    pub(super) recovery_sums: Vec<Vec<ShardSum>>,
}

impl ParitySource for Stored {
    fn original_sums(&mut self, group: u32) -> io::Result<Vec<ShardSum>> {
        Ok(self.original_sums[group as usize].clone())
    }

    fn recovery(&mut self, group: u32) -> io::Result<RecoveryShards> {
        let g = group as usize;
        Ok(RecoveryShards { shards: self.recovery[g].clone(), sums: self.recovery_sums[g].clone() })
    }
}

/// Small enough that the tests' runs span several batches.
const WINDOW: usize = 1 << 20;

pub(super) fn protect(data: &[u8], percent: u8) -> (Layout, Stored) {
    let layout = Layout::new(data.len() as u64, percent).unwrap();
    let mut stored = Stored::default();
    encode(&Cursor::new(data), 0, &layout, WINDOW, |g| {
        assert_eq!(g.group as usize, stored.original_sums.len(), "groups in order");
        stored.original_sums.push(g.original_sums.to_vec());
        stored.recovery.push(g.recovery.chunks(SHARD_LEN).map(|s| Some(s.to_vec())).collect());
        stored.recovery_sums.push(g.recovery_sums.to_vec());
        Ok(())
    })
    .unwrap();
    assert_eq!(stored.original_sums.len(), layout.groups as usize);
    (layout, stored)
}

/// Repairs `damaged` in place from `stored`; the report.
fn repair_in_place(damaged: &mut Vec<u8>, layout: &Layout, stored: &mut Stored) -> io::Result<Repaired> {
    let mut fixes = Vec::new();
    let report = repair(&Cursor::new(damaged.clone()), 0, layout, WINDOW, stored, |index, bytes| {
        fixes.push((index, bytes.to_vec()));
        Ok(())
    })?;
    damaged.resize(layout.len as usize, 0);
    for (index, bytes) in fixes {
        let at = index as usize * SHARD_LEN;
        damaged[at..at + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(report)
}

#[test]
fn layouts_cover_their_percentage_of_contiguous_damage() {
    for len in [1u64, 4095, 4096, 4097, 1 << 20, (4 << 20) + 1, 100 << 20, 1 << 30, 3 << 40] {
        for percent in [1u8, 5, 10, 50] {
            let layout = Layout::new(len, percent).unwrap();
            assert_eq!(layout.checked(), Ok(layout));
            assert!(layout.originals <= MAX_GROUP_SHARDS);
            assert!(u64::from(layout.groups) * u64::from(layout.originals) >= layout.shards());
            assert!(layout.contiguous_repairable() >= len * u64::from(percent) / 100, "{layout:?}");
            // Parity costs the percentage, plus up to two shards a group
            // (the rounding up and the `+ 1`: 0.2 % of a 4 MiB group) and
            // a checksum a shard (0.2 %).
            if len >= 100 << 20 {
                let share = layout.parity_len() as f64 / len as f64;
                let bound = f64::from(percent) / 100.0 + 0.004;
                assert!(share <= bound, "{layout:?}: {share}");
            }
        }
    }
    assert_eq!(Layout::new(100, 0), Err(LayoutError::Percent(0)));
    assert_eq!(Layout::new(100, 51), Err(LayoutError::Percent(51)));
    assert_eq!(Layout::new(0, 5), Err(LayoutError::Empty));
}

#[test]
fn layouts_no_writer_makes_are_refused() {
    let good = Layout::new(10 << 20, 5).unwrap();
    for bad in [
        Layout { groups: 0, ..good },
        Layout { originals: 0, ..good },
        Layout { originals: MAX_GROUP_SHARDS + 1, ..good },
        Layout { originals: good.originals - 1, ..good },
        Layout { groups: good.groups + 1, ..good },
        Layout { recovery: 0, ..good },
        Layout { recovery: good.originals, ..good },
        Layout { len: 0, ..good },
    ] {
        assert!(bad.checked().is_err(), "{bad:?}");
    }
}

#[test]
fn one_contiguous_run_of_the_percentage_is_repaired_wherever_it_falls() {
    let original = random((3 << 20) + 12_345, 1);
    let (layout, mut stored) = protect(&original, 5);
    let run = original.len() * 5 / 100;
    for start in [0, 1, 4095, 777_777, original.len() / 2, original.len() - run] {
        let mut damaged = original.clone();
        damaged[start..start + run].fill(0xA5);
        let report = repair_in_place(&mut damaged, &layout, &mut stored).unwrap();
        assert!(report.unrepairable.is_empty(), "at {start}: {report:?}");
        assert!(report.damaged > 0 && report.rebuilt == report.damaged, "at {start}: {report:?}");
        assert!(damaged == original, "at {start}");
    }
}

#[test]
fn scattered_bad_sectors_are_repaired() {
    let original = random(8 << 20, 2);
    let (layout, mut stored) = protect(&original, 5);
    let mut damaged = original.clone();
    // 1 % of the sectors, spread by a fixed stride prime to the groups.
    let sectors = original.len() / SHARD_LEN;
    for k in 0..sectors / 100 {
        let sector = (k * 7919) % sectors;
        damaged[sector * SHARD_LEN + 100] ^= 1;
    }
    let report = repair_in_place(&mut damaged, &layout, &mut stored).unwrap();
    assert_eq!(report.damaged, (sectors / 100) as u64);
    assert!(report.unrepairable.is_empty(), "{report:?}");
    assert!(damaged == original);
}

#[test]
fn a_cut_run_is_rebuilt_up_to_its_end() {
    let original = random(2 << 20, 3);
    let (layout, mut stored) = protect(&original, 5);
    let mut cut = original[..original.len() - 50_000].to_vec();
    let report = repair_in_place(&mut cut, &layout, &mut stored).unwrap();
    assert!(report.unrepairable.is_empty(), "{report:?}");
    assert!(cut == original);
}

#[test]
fn damage_past_the_parity_is_reported_and_nothing_wrong_is_handed_out() {
    let original = random(2 << 20, 4);
    let (layout, mut stored) = protect(&original, 5);
    let mut damaged = original.clone();
    let run = original.len() * 12 / 100;
    damaged[1000..1000 + run].fill(0);
    let mut handed = Vec::new();
    let report = repair(&Cursor::new(&damaged), 0, &layout, WINDOW, &mut stored, |index, bytes| {
        handed.push((index, bytes.to_vec()));
        Ok(())
    })
    .unwrap();
    assert!(!report.unrepairable.is_empty());
    assert!(report.unrepairable.iter().all(|d| d.lost > d.usable));
    for (index, bytes) in handed {
        let at = index as usize * SHARD_LEN;
        assert_eq!(bytes, original[at..at + bytes.len()]);
    }
}

#[test]
fn damaged_recovery_shards_are_left_out() {
    let original = random(1 << 20, 5);
    let (layout, mut stored) = protect(&original, 10);
    // Every group's first recovery shard is damaged, another unreadable.
    for g in 0..layout.groups as usize {
        stored.recovery[g][0].as_mut().unwrap()[9] ^= 0x40;
        stored.recovery[g][1] = None;
    }
    let mut damaged = original.clone();
    damaged[5000..5000 + 40_000].fill(1);
    let report = repair_in_place(&mut damaged, &layout, &mut stored).unwrap();
    assert!(report.unrepairable.is_empty(), "{report:?}");
    assert!(damaged == original);
}

#[test]
fn parity_that_lies_is_refused() {
    let original = random(1 << 20, 6);
    let (layout, mut stored) = protect(&original, 5);
    // Someone rewrote every recovery shard of group 0 and their
    // checksums to match: the rebuilt shard cannot match the original's
    // checksum, and repair refuses rather than hand it out.
    for (r, shard) in stored.recovery[0].iter_mut().enumerate() {
        let shard = shard.as_mut().unwrap();
        shard.fill(r as u8);
        stored.recovery_sums[0][r] = shard_sum(shard);
    }
    let mut damaged = original.clone();
    damaged[0] ^= 1;
    let e = repair(&Cursor::new(&damaged), 0, &layout, WINDOW, &mut stored, |_, _| Ok(())).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(e.to_string().contains("parity lies"), "{e}");
    // Parity of the wrong shape is refused too.
    stored.original_sums[0].pop();
    let e = repair(&Cursor::new(&damaged), 0, &layout, WINDOW, &mut stored, |_, _| Ok(())).unwrap_err();
    assert!(e.to_string().contains("does not match the layout"), "{e}");
}

#[test]
fn encoding_needs_every_protected_byte() {
    let data = random(100_000, 7);
    let layout = Layout::new(200_000, 5).unwrap();
    let e = encode(&Cursor::new(&data), 0, &layout, WINDOW, |_| Ok(())).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
}

#[test]
fn a_run_inside_a_larger_source_is_protected_where_it_starts() {
    let source = random(1 << 20, 8);
    let (start, len) = (12_345usize, 600_000usize);
    let layout = Layout::new(len as u64, 5).unwrap();
    let (_, direct) = protect(&source[start..start + len], 5);
    let mut sums = Vec::new();
    encode(&Cursor::new(&source), start as u64, &layout, WINDOW, |g| {
        sums.push(g.original_sums.to_vec());
        Ok(())
    })
    .unwrap();
    assert_eq!(sums, direct.original_sums);
}
