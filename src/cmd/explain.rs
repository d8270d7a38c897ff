//! `gfxscan explain TARGET [ROOT…]`: the target as `--gpu` takes it, the roots as `check`
//! takes them (none found: vendor policy alone), one whole scan and its model for scan's counts,
//! and check's verdicts for a GPU of the target, without and with the override `targets.toml`
//! records. This process's environment is not read: the matrix is about the target, not this
//! shell.

use anyhow::bail;

use super::{default_installs, load_targets, memory_aim, open_outputs, scan_roots};
use crate::check::devices::{self, Env, Gpus};
use crate::cli::{self, ExplainArgs, OutputFormat};
use crate::exit::ExitStatus;
use crate::library::{Context, Model};
use crate::report::output::deliver_all;
use crate::scan::Recording;
use crate::vocab::targets::{Target, Targets};
use crate::{check, explain, report};

/// Runs `gfxscan explain`.
pub fn run(mut args: ExplainArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    let gpus = devices::from_args(std::slice::from_ref(&args.target), &Env::default(), &targets)
        .map_err(anyhow::Error::msg)?;
    let processor = gpus.devices.first().map(|d| d.native.processor.clone()).unwrap_or_default();
    let Some(target) = targets.by_name(&processor).cloned() else {
        bail!("{}: not a target in the table", args.target);
    };
    let outputs = open_outputs(color, args.json, args.format, &args.opts.outputs, OutputFormat::EXPLAIN)?;
    let (roots, not_checked) =
        if args.opts.roots.is_empty() { default_installs() } else { (args.opts.roots.clone(), Vec::new()) };
    let (e, status) = if roots.is_empty() {
        let none = explain::Inputs { model: None, check: None, with_override: None };
        (explain::explain(&target, &targets, none), ExitStatus::Clean)
    } else {
        args.opts.resources.max_memory = Some(memory_aim(&args.opts.resources, false));
        let snap = scan_roots(roots, &args.opts, &targets, None, None, false, Recording::Off)?;
        let model = Model::build(snap, &targets, Context::default());
        // Without ROOT, this machine's installs: and its running kernel, as `check` judges it.
        let running_kernel =
            args.opts.roots.is_empty().then(|| crate::source::kernel::running(std::path::Path::new("/")));
        let opts = check::CheckOptions { not_checked, running_kernel };
        let (e, report) = explain_scanned(&model, &target, &args.target, &gpus, &targets, opts);
        (e, report.exit_status())
    };
    deliver_all(outputs, status, |format, style, w| {
        report::explain::write_explain(&e, format, args.verbose, style, w)
    })
}

/// `explain`'s matrix for a GPU of `target` (`gpus`, as `--gpu given` makes it) over a model:
/// check's report for it and for it under the override, and the gates read from them; with
/// that report, whose exit status `explain` gives.
pub fn explain_scanned(
    model: &Model,
    target: &Target,
    given: &str,
    gpus: &Gpus,
    targets: &Targets,
    opts: check::CheckOptions,
) -> (explain::Explanation, check::CheckReport) {
    // The same kernel under the override: it changes the code looked for, not the GPU.
    let same_kernel =
        check::CheckOptions { running_kernel: opts.running_kernel.clone(), ..Default::default() };
    let report = check::check(model, gpus, targets, opts);
    let over = override_gpus(given, target, targets).map(|g| check::check(model, &g, targets, same_kernel));
    let inputs = explain::Inputs { model: Some(model), check: Some(&report), with_override: over.as_ref() };
    (explain::explain(target, targets, inputs), report)
}

/// The GPU of `given` with HSA_OVERRIDE_GFX_VERSION set to its ISA-compatible target's
/// version (`targets.toml` isa_compatible), as `check` would see it; `None` without one, or
/// when the runtime would refuse that value (the override is then unknown).
fn override_gpus(given: &str, target: &Target, targets: &Targets) -> Option<Gpus> {
    let alt = target.isa_compatible.as_deref().and_then(|a| targets.by_name(a))?;
    let value = check::override_value(alt)?;
    let env = Env { vars: vec![("HSA_OVERRIDE_GFX_VERSION".to_string(), value)] };
    devices::from_args(&[given.to_string()], &env, targets).ok()
}
