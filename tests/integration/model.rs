//! The library model is built once and every view reads it (issue 33, item 1): `check`,
//! `diff`, the library matrix, prune and `explain` asked of one model in one order and of
//! another in the reverse order give the same documents, and none of them changes the
//! snapshot the model holds.

use std::path::Path;

use gfxscan::check::devices::{from_args, Env};
use gfxscan::library::Model;
use gfxscan::vocab::targets::Targets;

/// One view of the model, as JSON.
type View = fn(&Model, &Targets) -> String;

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("JSON")
}

fn check_view(m: &Model, t: &Targets) -> String {
    let gpus: Vec<String> = ["gfx1031", "gfx900", "gfx1100"].map(String::from).to_vec();
    let gpus = from_args(&gpus, &Env::default(), t).expect("GPUs");
    json(&gfxscan::check::check(m, &gpus, t, gfxscan::check::CheckOptions::default()))
}

fn override_view(m: &Model, t: &Targets) -> String {
    let env = Env { vars: vec![("HSA_OVERRIDE_GFX_VERSION".into(), "10.3.0".into())] };
    let gpus = from_args(&["gfx1031".to_string()], &env, t).expect("GPUs");
    json(&gfxscan::check::check(m, &gpus, t, gfxscan::check::CheckOptions::default()))
}

fn diff_view(m: &Model, t: &Targets) -> String {
    let sides = (gfxscan::diff::SideSource::Scan, gfxscan::diff::SideSource::Scan);
    json(&gfxscan::diff::diff(m, m, sides, t))
}

fn matrix_view(m: &Model, t: &Targets) -> String {
    json(&gfxscan::library::matrix::library_matrix(m, t))
}

fn prune_view(m: &Model, t: &Targets) -> String {
    json(&gfxscan::check::prune::prune(m, &["gfx1100".to_string()], t))
}

fn explain_view(m: &Model, t: &Targets) -> String {
    let target = t.by_name("gfx1031").expect("gfx1031");
    let gpus = from_args(&["gfx1031".to_string()], &Env::default(), t).expect("GPUs");
    let (e, _) = gfxscan::cmd::explain::explain_scanned(m, target, "gfx1031", &gpus, t, Default::default());
    // The tool's version line aside, the whole explanation.
    json(&e)
}

fn model_of_sample(t: &Targets) -> Model {
    crate::pipeline::model_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("sample"), None, t)
}

#[test]
fn every_view_reads_one_model_whatever_the_order() {
    let t = Targets::builtin();
    let views: [(&str, View); 6] = [
        ("check", check_view),
        ("override", override_view),
        ("diff", diff_view),
        ("matrix", matrix_view),
        ("prune", prune_view),
        ("explain", explain_view),
    ];
    let first = model_of_sample(&t);
    let before = json(first.snapshot());
    let forward: Vec<String> = views.iter().map(|(_, v)| v(&first, &t)).collect();
    assert_eq!(json(first.snapshot()), before, "no view writes into the snapshot");
    let second = model_of_sample(&t);
    let mut backward: Vec<String> = views.iter().rev().map(|(_, v)| v(&second, &t)).collect();
    backward.reverse();
    for ((name, _), (a, b)) in views.iter().zip(forward.iter().zip(&backward)) {
        assert_eq!(a, b, "{name}: the same answer in either order");
    }
    // Asked again of the same model, the same answers (verdicts are judged once and kept).
    let again: Vec<String> = views.iter().map(|(_, v)| v(&first, &t)).collect();
    assert_eq!(again, forward);
    // The findings are the model's, made once: scan's JSON holds them.
    assert!(!first.snapshot().findings.is_empty(), "the sample's findings");
}
