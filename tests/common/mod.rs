//! What the integration tests share: random exported-program-shaped graphs (`random`) and the
//! listing of data/'s documents (`data`).

#![allow(dead_code, unused_imports)] // each test uses its own part

pub mod data;
mod random;

pub use random::*;
