//! The flight recorder's segments as data: their names (number, first and last snapshot's
//! wall-clock second), which of them to drop for `--keep` and `--max-size`, and a
//! segment's two gzip members — the recording's header, then its lines — split without
//! decompressing the lines (a dump copies them as they are). Pure functions and readers
//! over bytes: unit-tested without a directory.

use std::io::{self, BufRead, Read};

/// `seg-NNNNNNNNNN-FIRST-LAST.jsonl.gz`: the segment's number (one more than the last
/// kept, across restarts) and the wall clock (Unix seconds) at the end of its first and
/// last snapshot.
const SEG: &str = "seg-";
const EXT: &str = ".jsonl.gz";
/// A segment being written: `.seg-NNNNNNNNNN.part` (hidden, never read as a segment).
pub const PART: &str = ".seg-";
pub const PART_EXT: &str = ".part";

/// A segment on disk, as its name and size say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Kept {
    pub n: u64,
    pub first_s: u64,
    pub last_s: u64,
    pub bytes: u64,
}

pub fn name(n: u64, first_s: u64, last_s: u64) -> String {
    format!("{SEG}{n:010}-{first_s}-{last_s}{EXT}")
}

pub fn part_name(n: u64) -> String {
    format!("{PART}{n:010}{PART_EXT}")
}

/// (number, first, last) of a segment's name; `None` for any other name.
pub fn parse(name: &str) -> Option<(u64, u64, u64)> {
    let rest = name.strip_prefix(SEG)?.strip_suffix(EXT)?;
    let mut f = rest.split('-');
    let n = f.next()?;
    if n.len() != 10 {
        return None;
    }
    let (n, a, b) = (
        n.parse().ok()?,
        f.next()?.parse().ok()?,
        f.next()?.parse().ok()?,
    );
    (f.next().is_none() && a <= b).then_some((n, a, b))
}

/// The number of a part's name.
pub fn parse_part(name: &str) -> Option<u64> {
    name.strip_prefix(PART)?
        .strip_suffix(PART_EXT)?
        .parse()
        .ok()
}

/// The segments to drop, oldest first: those whose last snapshot is older than `keep_s`
/// at `now_s`, then more of the oldest until the rest and `extra` bytes (the segment being
/// written) fit in `max_bytes`. `kept` in any order.
pub fn to_drop(kept: &[Kept], now_s: u64, keep_s: u64, max_bytes: u64, extra: u64) -> Vec<u64> {
    let mut k = kept.to_vec();
    k.sort();
    let mut total: u64 = k.iter().map(|s| s.bytes).sum::<u64>() + extra;
    let mut out = Vec::new();
    for s in &k {
        let old = s.last_s.saturating_add(keep_s) < now_s;
        if !old && total <= max_bytes {
            break;
        }
        total -= s.bytes;
        out.push(s.n);
    }
    out
}

/// How long one segment spans: an eighth of `--keep` (so the history kept is within an
/// eighth of what was asked), at least one interval, at most 5 minutes.
pub fn span_ns(keep_ns: u64, interval_ns: u64) -> u64 {
    (keep_ns / 8).clamp(interval_ns.max(1), 300_000_000_000.max(interval_ns))
}

/// The most one segment may hold: an eighth of `--max-size` (dropping one segment frees
/// room for the next), at least 64 KiB.
pub fn max_segment_bytes(max_bytes: u64) -> u64 {
    (max_bytes / 8).max(64 << 10)
}

/// A [`BufRead`] that counts what its reader consumed.
struct Counted<R> {
    inner: R,
    used: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.used += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.used += amt as u64;
        self.inner.consume(amt);
    }
}

/// The header line of a segment (its first gzip member, at most `limit` bytes once
/// decompressed) and where its second member — the lines — begins.
pub fn header_member<R: BufRead>(r: R, limit: u64) -> io::Result<(String, u64)> {
    let mut c = Counted { inner: r, used: 0 };
    let mut text = String::new();
    {
        let mut d = flate2::bufread::GzDecoder::new(&mut c);
        (&mut d).take(limit + 1).read_to_string(&mut text)?;
        if text.len() as u64 > limit {
            return Err(io::Error::other(
                "the header is larger than a header can be",
            ));
        }
        // The member's end (its trailer checked).
        let mut rest = Vec::new();
        d.read_to_end(&mut rest)?;
    }
    if !text.ends_with('\n') || text.trim_end().contains('\n') {
        return Err(io::Error::other("the first member is not one header line"));
    }
    Ok((text, c.used))
}

/// Read a whole segment (each gzip member checked to its trailer), each line given to
/// `each` as it comes (none kept: a start reads up to --max-size of them): how many, or
/// why not — a segment is whole or it is not kept.
pub fn check<R: Read>(r: R, limit: u64, mut each: impl FnMut(&str)) -> io::Result<u64> {
    let d = flate2::read::MultiGzDecoder::new(r);
    let (mut n, mut total) = (0u64, 0u64);
    for l in io::BufReader::new(d).lines() {
        let l = l?;
        total += l.len() as u64 + 1;
        if total > limit {
            return Err(io::Error::other(
                "larger decompressed than a segment can be",
            ));
        }
        each(&l);
        n += 1;
    }
    if n == 0 {
        return Err(io::Error::other("empty"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(parts: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(p.as_bytes()).unwrap();
            out.extend(e.finish().unwrap());
        }
        out
    }

    #[test]
    fn names_round_trip_and_others_are_not_segments() {
        let n = name(12, 1_700_000_000, 1_700_000_060);
        assert_eq!(n, "seg-0000000012-1700000000-1700000060.jsonl.gz");
        assert_eq!(parse(&n), Some((12, 1_700_000_000, 1_700_000_060)));
        assert_eq!(parse_part(&part_name(7)), Some(7));
        for bad in [
            "seg-12-1-2.jsonl.gz",
            "seg-0000000012-5-2.jsonl.gz",
            "seg-0000000012-1-2-3.jsonl.gz",
            "seg-0000000012-1-2.jsonl",
            ".seg-0000000012.part",
            "dump-x.jsonl.gz",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn dropped_for_age_then_for_size_oldest_first() {
        let k = |n, last_s, bytes| Kept {
            n,
            first_s: last_s - 5,
            last_s,
            bytes,
        };
        let kept = [k(3, 130, 10), k(1, 110, 10), k(2, 120, 10)];
        // Keep 25 s at 140: segment 1 (last at 110) is too old, 2 (at 120) is not.
        assert_eq!(to_drop(&kept, 140, 25, 1000, 0), vec![1]);
        assert_eq!(to_drop(&kept, 140, 15, 1000, 0), vec![1, 2]);
        // Within age, 30 bytes and 5 being written against a cap of 24: two go.
        assert_eq!(to_drop(&kept, 130, 100, 24, 5), vec![1, 2]);
        // All fits: nothing.
        assert!(to_drop(&kept, 130, 100, 35, 5).is_empty());
        // The cap below the part alone: everything kept goes.
        assert_eq!(to_drop(&kept, 130, 100, 1, 5), vec![1, 2, 3]);
    }

    #[test]
    fn spans_and_sizes_are_bounded() {
        let s = 1_000_000_000;
        assert_eq!(span_ns(1800 * s, 10 * s), 225 * s, "30 min: 8 segments");
        assert_eq!(span_ns(20 * s, s), 2_500_000_000);
        assert_eq!(span_ns(4 * s, 10 * s), 10 * s, "at least an interval");
        assert_eq!(span_ns(86_400 * s, s), 300 * s, "at most 5 min");
        assert_eq!(max_segment_bytes(256 << 20), 32 << 20);
        assert_eq!(max_segment_bytes(1000), 64 << 10);
    }

    #[test]
    fn the_header_member_is_split_from_the_lines() {
        let bytes = gz(&["{\"format\":\"x\"}\n", "a\nb\n", "c\n"]);
        let (h, at) = header_member(&bytes[..], 1 << 20).unwrap();
        assert_eq!(h, "{\"format\":\"x\"}\n");
        // What follows the header member is the lines' members, whole.
        let mut got = Vec::new();
        let n = check(&bytes[at as usize..], 1 << 20, |l| got.push(l.to_string())).unwrap();
        assert_eq!((n, got), (3, vec!["a".to_string(), "b".into(), "c".into()]));
        assert_eq!(check(&bytes[..], 1 << 20, |_| ()).unwrap(), 4);
        // Two lines in the first member: not a header.
        assert!(header_member(&gz(&["a\nb\n"])[..], 1 << 20).is_err());
        assert!(header_member(&bytes[..], 4).is_err(), "over the limit");
    }

    #[test]
    fn a_torn_segment_is_refused_whole() {
        let bytes = gz(&["h\n", "a\nb\n"]);
        for cut in [bytes.len() - 3, bytes.len() / 2, 5] {
            assert!(
                check(&bytes[..cut], 1 << 20, |_| ()).is_err(),
                "cut at {cut}"
            );
        }
        let mut bad = bytes.clone();
        let i = bad.len() - 6; // inside the trailer's CRC
        bad[i] ^= 0xff;
        assert!(check(&bad[..], 1 << 20, |_| ()).is_err(), "a bad CRC");
        assert!(check(&b""[..], 1 << 20, |_| ()).is_err(), "empty");
    }
}
