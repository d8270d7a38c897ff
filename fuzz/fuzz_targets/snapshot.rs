//! JSON snapshot reader (the pure steps of `gfxscan::read_snapshot`), then what reads a
//! snapshot: `diff`, `check` and the report writers.
#![no_main]

use std::sync::OnceLock;

use gfxscan::cli::OutputFormat;
use gfxscan::check::devices::{from_args, Device, Env};
use gfxscan::model::Snapshot;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fn devices() -> &'static [Device] {
    static D: OnceLock<Vec<Device>> = OnceLock::new();
    D.get_or_init(|| {
        let gpus: Vec<String> =
            ["gfx90a:xnack-", "gfx942:sramecc+:xnack-", "gfx1100", "gfx906"].map(String::from).to_vec();
        from_args(&gpus, &Env { vars: Vec::new() }, common::targets()).expect("fixed GPU list is valid")
    })
}

fuzz_target!(|data: &[u8]| {
    // read_snapshot: a JSON value first, then the typed snapshot.
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = v.pointer("/tool/name").and_then(|v| v.as_str());
        let _ = v.get("schema_version").and_then(|v| v.as_u64());
        let _ = serde_json::from_value::<Snapshot>(v);
    }
    let Ok(s) = serde_json::from_slice::<Snapshot>(data) else { return };
    let targets = common::targets();

    let d = gfxscan::diff::diff(&s, &s, ("a", "b"), targets);
    let _ = d.is_empty();
    let empty = Snapshot { files: Vec::new(), targets: Default::default(), ..s.clone() };
    let d2 = gfxscan::diff::diff(&s, &empty, ("snapshot", "scan"), targets);
    let d3 = gfxscan::diff::diff(&empty, &s, ("scan", "snapshot"), targets);

    let c0 = gfxscan::check::check(&s, &[], targets);
    let c = gfxscan::check::check(&s, devices(), targets);
    let _ = c.missing();

    let mut sink = Vec::new();
    for f in [OutputFormat::Table, OutputFormat::Json, OutputFormat::Markdown, OutputFormat::Csv] {
        sink.clear();
        let _ = gfxscan::report::write_scan(&s, targets, &[], f, &mut sink);
        let _ = gfxscan::report::write_compare(&s, targets, &[], f, &mut sink);
        if f != OutputFormat::Csv {
            let _ = gfxscan::report::write_diff(&d2, f, &mut sink);
            let _ = gfxscan::report::write_diff(&d3, f, &mut sink);
            let _ = gfxscan::report::write_check(&c, f, &mut sink);
            let _ = gfxscan::report::write_check(&c0, f, &mut sink);
        }
    }
});
