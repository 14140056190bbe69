//! The bridge documents in data/: one directory per executorch version that exported them
//! (data/README.md), listed here once for every test and bench that reads them all.

use std::path::{Path, PathBuf};

/// data/ in this checkout.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// The executorch versions data/ holds documents of, oldest first.
pub const VERSIONS: [&str; 2] = ["1.4.0", "1.5.1"];

/// Every document of data/executorch-`version`/, sorted by path.
pub fn documents(version: &str) -> Vec<PathBuf> {
    let dir = data_dir().join(format!("executorch-{version}"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// Every document of data/, each with its executorch version, versions oldest first.
pub fn all_documents() -> Vec<(&'static str, PathBuf)> {
    VERSIONS
        .iter()
        .flat_map(|&v| documents(v).into_iter().map(move |p| (v, p)))
        .collect()
}
