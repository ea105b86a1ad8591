//! `lseek(2)`'s `SEEK_DATA` and `SEEK_HOLE` over a stored file: its data
//! segments (a sparse file's map, or the whole file), so `cp
//! --sparse=always`, `tar --sparse` and `du`-like tools see the holes the
//! archive keeps instead of reading zeros.

use fuser::Errno;
use revault_lockbox_api::read::SparseMap;

/// Linux's `whence` values for the two seeks the kernel passes on (it
/// answers `SEEK_SET`, `SEEK_CUR` and `SEEK_END` itself).
const SEEK_DATA: i32 = 3;
const SEEK_HOLE: i32 = 4;

/// Where `SEEK_DATA` or `SEEK_HOLE` from `offset` lands in a file of
/// `size` bytes whose data lies in `map`'s segments (all of it without a
/// map); `ENXIO` past the end or when no data follows, as lseek(2) says.
pub fn seek(size: u64, map: Option<&SparseMap>, offset: i64, whence: i32) -> Result<u64, Errno> {
    let offset = u64::try_from(offset).map_err(|_| Errno::EINVAL)?;
    if offset >= size {
        return Err(Errno::ENXIO);
    }
    let whole = [(0, size)];
    let segments = map.map_or(&whole[..], SparseMap::segments);
    // The first segment ending after `offset` (segments ascend, apart).
    let next = segments.get(segments.partition_point(|&(at, len)| at + len <= offset));
    match whence {
        SEEK_DATA => next.map(|&(at, _)| at.max(offset)).ok_or(Errno::ENXIO),
        SEEK_HOLE => Ok(match next {
            Some(&(at, len)) if at <= offset => at + len,
            _ => offset,
        }),
        _ => Err(Errno::EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_and_holes_of_a_sparse_file() {
        // 0..4 hole, 4..6 data, 6..10 hole, 10..12 data, 12..20 hole.
        let map = SparseMap::new(vec![(4, 2), (10, 2)], 20).unwrap();
        let s = |offset, whence| seek(20, Some(&map), offset, whence);
        assert_eq!(s(0, SEEK_DATA), Ok(4));
        assert_eq!(s(5, SEEK_DATA), Ok(5));
        assert_eq!(s(6, SEEK_DATA), Ok(10));
        assert_eq!(s(12, SEEK_DATA), Err(Errno::ENXIO), "only a hole follows");
        assert_eq!(s(0, SEEK_HOLE), Ok(0));
        assert_eq!(s(4, SEEK_HOLE), Ok(6));
        assert_eq!(s(11, SEEK_HOLE), Ok(12));
        assert_eq!(s(20, SEEK_HOLE), Err(Errno::ENXIO), "at the end");
        assert_eq!(s(-1, SEEK_DATA), Err(Errno::EINVAL));
    }

    #[test]
    fn a_file_without_a_map_is_data_to_its_end() {
        assert_eq!(seek(10, None, 3, SEEK_DATA), Ok(3));
        assert_eq!(seek(10, None, 3, SEEK_HOLE), Ok(10), "the hole at the end");
        assert_eq!(seek(0, None, 0, SEEK_DATA), Err(Errno::ENXIO));
        assert_eq!(seek(10, None, 0, 0), Err(Errno::EINVAL));
    }
}
