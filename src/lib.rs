//! pisa: exact, fast token and cost analytics for Pi coding-agent session files.
//!
//! Data flows one way: [`scan`] finds files, [`parse`] turns bytes into typed entries the
//! way Pi's loader does, [`tree`] migrates and indexes them, [`project`] computes what the
//! model saw and Pi's token estimate, [`usage`] collects every billed usage record, and
//! [`report`] renders. [`analyze`] runs one file through every stage into plain data
//! ([`analyze::SessionFacts`]); [`corpus`] runs a whole directory in parallel and adds the
//! cross-session figures (forks counted once), through a cache that keeps what was learnt of
//! each file so that a re-scan parses only what changed; [`frame`] makes Polars frames of it.
//!
//! The reference for every rule is Pi's own code (`@earendil-works/pi-coding-agent` 1.6.0);
//! [`js`] holds the JavaScript semantics that code relies on.

pub mod analyze;

pub mod config;
pub mod corpus;
pub mod error;
pub mod export;
pub mod frame;
pub mod js;
#[cfg(feature = "live")]
pub mod live;
pub mod parse;
pub mod paths;
pub mod pricing;
pub mod project;
pub mod report;
pub mod scan;
pub mod tree;
pub mod usage;

pub use analyze::{FileAnalysis, SessionAnalysis, analyze_bytes};
pub use corpus::{Corpus, scan as scan_corpus};
pub use error::Error;
