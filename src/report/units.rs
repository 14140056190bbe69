//! Figures as the reports write them.

/// Bytes as people read them: `2.00 GiB (2147483648 bytes)`, exact bytes below 1 KiB.
pub fn byte_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    match UNITS.iter().find(|(_, size)| bytes >= *size) {
        Some((unit, size)) => format!("{:.2} {unit} ({bytes} bytes)", bytes as f64 / *size as f64),
        None => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::byte_size;

    #[test]
    fn bytes_read_in_the_largest_unit_they_reach_with_the_exact_count() {
        assert_eq!(byte_size(1023), "1023 bytes");
        assert_eq!(byte_size(1024), "1.00 KiB (1024 bytes)");
        assert_eq!(byte_size(1_500_000), "1.43 MiB (1500000 bytes)");
        assert_eq!(byte_size(2 << 30), "2.00 GiB (2147483648 bytes)");
    }
}
