//! What the integration tests share: random exported-program-shaped graphs (`random`), the
//! listing of data/'s documents (`data`) and running the binary (`cli`).

#![allow(dead_code, unused_imports)] // each test uses its own part

pub mod cli;
pub mod data;
mod random;

pub use random::*;
