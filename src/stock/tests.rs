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
    // A caller's version must be one reproduced here: a later release is not taken for 1.5.
    assert_eq!(
        ExecutorchVersion::parse_supported("1.4.0"),
        Ok(ExecutorchVersion::V1_4)
    );
    assert_eq!(
        ExecutorchVersion::parse_supported("1.5"),
        Ok(ExecutorchVersion::V1_5)
    );
    for asked in [
        "1.5.1",
        "1.5.0rc2",
        "1.5.0.dev20261201+cpu",
        "1.4.0.post1",
        "1.5+cu126",
    ] {
        assert!(
            ExecutorchVersion::parse_supported(asked).is_ok(),
            "{asked} refused"
        );
    }
    // Not a version at all: refused, not read as far as it makes sense.
    let not_versions = ["1.5x", "1.5.", "1..5", "1.5rc", "1.5+", "1.5 ", "1.5.1-1"];
    for refused in ["9.9", "1.6.0", "1.3", "2.0", "1.50", "x"]
        .into_iter()
        .chain(not_versions)
    {
        let error = ExecutorchVersion::parse_supported(refused).unwrap_err();
        assert!(
            error.to_string().ends_with("(supported: 1.4, 1.5)"),
            "{error}"
        );
    }
}
