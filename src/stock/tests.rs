use super::*;

#[test]
fn versions_parse_by_major_and_minor() {
    assert_eq!(
        ExecutorchVersion::parse("1.4.0"),
        Ok(ExecutorchVersion::V1_4)
    );
    assert_eq!(
        ExecutorchVersion::parse("1.5.1"),
        Ok(ExecutorchVersion::V1_5)
    );
    assert_eq!(
        ExecutorchVersion::parse("1.6.0.dev20261201+cpu"),
        Ok(ExecutorchVersion::V1_5)
    );
    assert!(ExecutorchVersion::parse("0.7.0").is_err());
    assert!(ExecutorchVersion::parse("1.3.0").is_err());
    assert!(ExecutorchVersion::parse("one").is_err());
}
