//! JSON snapshot reader (`source::snapshot::parse_snapshot`, the pure step of
//! `gfxscan::read_snapshot`), the read-back check (`library::readback`), then what reads a
//! snapshot through its library model: `diff`, `check` and the report writers.
#![no_main]

use std::sync::OnceLock;

use gfxscan::cli::{OutputFormat, View};
use gfxscan::report::ScanView;
use gfxscan::check::devices::{from_args, Env, Gpus};
use gfxscan::check::CheckOptions;
use gfxscan::diff::SideSource;
use gfxscan::library::{Context, Model};
use gfxscan::model::Snapshot;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fn devices() -> &'static Gpus {
    static D: OnceLock<Gpus> = OnceLock::new();
    D.get_or_init(|| {
        let gpus: Vec<String> =
            ["gfx90a:xnack-", "gfx942:sramecc+:xnack-", "gfx1100", "gfx906"].map(String::from).to_vec();
        from_args(&gpus, &Env { vars: Vec::new() }, common::targets()).expect("fixed GPU list is valid")
    })
}

fuzz_target!(|data: &[u8]| {
    // What read_snapshot does after decoding: refuse what is no snapshot, else the snapshot.
    let _ = gfxscan::source::snapshot::parse_snapshot(data);
    let Ok(s) = serde_json::from_slice::<Snapshot>(data) else { return };
    let targets = common::targets();
    let Ok(s) = gfxscan::library::readback::read_back(s, targets) else { return };
    let model = |s: Snapshot| Model::build(s, targets, Context::default());
    let empty = model(Snapshot { files: Vec::new(), targets: Default::default(), ..s.clone() });
    let m = model(s);

    let d = gfxscan::diff::diff(&m, &m, (SideSource::Scan, SideSource::Snapshot), targets);
    let _ = d.is_empty();
    let d2 = gfxscan::diff::diff(&m, &empty, (SideSource::Snapshot, SideSource::Scan), targets);
    let d3 = gfxscan::diff::diff(&empty, &m, (SideSource::Scan, SideSource::Snapshot), targets);

    let c0 = gfxscan::check::check(&m, &Gpus::default(), targets, CheckOptions::default());
    let c = gfxscan::check::check(&m, devices(), targets, CheckOptions::default());
    let _ = c.exit_status();

    let matrix = gfxscan::library::matrix::library_matrix(&m, targets);
    let s = m.snapshot();
    let style = gfxscan::report::Style::PLAIN;
    let mut sink = Vec::new();
    for f in [OutputFormat::Table, OutputFormat::Json, OutputFormat::Markdown, OutputFormat::Csv, OutputFormat::Html] {
        for view in [View::Target, View::Layer, View::Library] {
            sink.clear();
            let v = ScanView { view, ..ScanView::default() };
            let _ = gfxscan::report::write_scan(s, targets, &matrix, &v, f, style, &mut sink);
        }
        if f != OutputFormat::Csv {
            let _ = gfxscan::report::write_diff(&d2, targets, f, false, style, &mut sink);
            let _ = gfxscan::report::write_diff(&d3, targets, f, true, style, &mut sink);
            let _ = gfxscan::report::write_check(&c, targets, f, style, &mut sink);
            let _ = gfxscan::report::write_check(&c0, targets, f, style, &mut sink);
        }
    }
    // The SBOM of any snapshot, dated by the latest SOURCE_DATE_EPOCH there is.
    let v = ScanView { view: View::Target, created: Some(u64::MAX), ..ScanView::default() };
    let _ = gfxscan::report::write_scan(s, targets, &matrix, &v, OutputFormat::Cyclonedx, style, &mut sink);
});
