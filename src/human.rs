//! Figures and names as people read them: sizes in IEC units, precisely (`byte_size`) or compactly
//! (`human_bytes`); counts with the noun agreeing (`count`); names with numbers in numeric order
//! (`natural_cmp`: `layers.2` before `layers.10`).

use std::cmp::Ordering;

/// Bytes as people read them: `2.00 GiB (2147483648 bytes)`, exact bytes below 1 KiB.
pub fn byte_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match UNITS.iter().find(|(_, size)| bytes >= *size) {
        Some((unit, size)) => format!("{:.2} {unit} ({bytes} bytes)", bytes as f64 / *size as f64),
        None if bytes == 1 => "1 byte".to_string(),
        None => format!("{bytes} bytes"),
    }
}

/// Bytes as a person reads them: `812 B`, `1.5 KiB`, `2.3 MiB`, `1.1 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    // 1023.96 KiB would print as 1024.0 KiB: it is 1.0 MiB.
    while value >= 1023.95 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `1 node`, `2 nodes`, `0 nodes`: `noun` for one, `plural` otherwise.
pub fn count(n: usize, noun: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { noun } else { plural })
}

/// Orders names as a person sorts them: runs of digits by their value, everything else by
/// character, so `layers.2` comes before `layers.10`. Equal values with different zero padding
/// fall back to plain order, so distinct names never compare equal.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let (m, n) = (digit_run(x), digit_run(y));
                let (p, q) = (trim_zeros(&x[..m]), trim_zeros(&y[..n]));
                let by_value = p.len().cmp(&q.len()).then_with(|| p.cmp(q));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                (x, y) = (&x[m..], &y[n..]);
            }
            (Some(c), Some(d)) => {
                if c != d {
                    return c.cmp(d);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn digit_run(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

fn trim_zeros(digits: &[u8]) -> &[u8] {
    let zeros = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[zeros..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(count(1, "node", "nodes"), "1 node");
        assert_eq!(count(0, "node", "nodes"), "0 nodes");
        assert_eq!(count(2, "partition", "partitions"), "2 partitions");
    }

    #[test]
    fn names_with_numbers_sort_by_value() {
        let mut names = vec![
            "layers.10",
            "layers.2",
            "layers.1",
            "layers.100",
            "layer",
            "layers.02",
        ];
        names.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            names,
            [
                "layer",
                "layers.1",
                "layers.02",
                "layers.2",
                "layers.10",
                "layers.100"
            ]
        );
        assert_eq!(natural_cmp("tag9", "tag10"), Ordering::Less);
        assert_eq!(natural_cmp("a", "a"), Ordering::Equal);
        assert_eq!(natural_cmp("b1", "a2"), Ordering::Greater);
    }

    #[test]
    fn bytes_read_in_the_largest_unit_they_reach_with_the_exact_count() {
        assert_eq!(byte_size(1023), "1023 bytes");
        assert_eq!(byte_size(1), "1 byte");
        assert_eq!(byte_size(1024), "1.00 KiB (1024 bytes)");
        assert_eq!(byte_size(1_500_000), "1.43 MiB (1500000 bytes)");
        assert_eq!(byte_size(2 << 30), "2.00 GiB (2147483648 bytes)");
    }

    #[test]
    fn pictures_read_sizes_compactly() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
        assert_eq!(human_bytes((1 << 20) - 1), "1.0 MiB");
        assert_eq!(human_bytes(u64::MAX), "16777216.0 TiB");
    }
}
