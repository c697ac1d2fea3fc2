//! The one integration-test binary: oracle agreement, the command line, property tests.

mod support;

mod alloc;
mod analytics;
mod cache;
mod cli;
mod hostile;
mod html;
mod live;
mod notebooks;
mod oracle;
mod pricing;
mod properties;
mod robust;
mod subagents;
