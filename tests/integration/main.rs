//! Integration tests: the real `gfxscan` binary (and `gfxscan::scan::scan`) over trees built
//! in a temporary folder from the fixture builders of `gfxscan::testing`.

mod aotriton;
mod archives;
mod check;
mod commands;
mod cyclonedx;
mod deploy;
mod determinism;
mod diff;
#[path = "../documents.rs"]
mod documents;
mod drivers;
mod examples;
mod explain;
#[path = "../explain_agrees.rs"]
mod explain_agrees;
mod families;
mod findings;
mod fixtures;
mod formats;
mod fuzz_regressions;
mod hardening;
mod hostile;
mod layout;
mod layouts;
mod loader;
mod merge;
mod model;
mod new_containers;
mod outputs;
#[path = "../pipeline.rs"]
mod pipeline;
mod prune;
mod real_files;
mod registry;
mod registry_real;
mod report;
mod rescan;
mod scan_cli;
mod schema;
mod signals;
mod util;
mod verdicts;
mod views;
