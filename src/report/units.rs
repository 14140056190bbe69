//! Figures as the reports write them: bytes precisely in text and JSON (`byte_size`), compactly in
//! pictures (`human_bytes`).

/// Bytes as people read them: `2.00 GiB (2147483648 bytes)`, exact bytes below 1 KiB.
pub fn byte_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match UNITS.iter().find(|(_, size)| bytes >= *size) {
        Some((unit, size)) => format!("{:.2} {unit} ({bytes} bytes)", bytes as f64 / *size as f64),
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
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::{byte_size, human_bytes};

    #[test]
    fn bytes_read_in_the_largest_unit_they_reach_with_the_exact_count() {
        assert_eq!(byte_size(1023), "1023 bytes");
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
        assert_eq!(human_bytes(u64::MAX), "16777216.0 TiB");
    }
}
