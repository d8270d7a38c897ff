//! `gfxscan check`: the GPUs (named, or the machine's KFD topology with the runtime's
//! environment applied), the installs or the one program to judge, a scan that reads what
//! their verdicts need, the model built with the run's context, and the verdicts delivered.

use std::path::{Path, PathBuf};

use anyhow::bail;

use super::{default_installs, load_targets, memory_aim, open_outputs, scan_roots};
use crate::check::summary;
use crate::cli::{self, CheckArgs, OutputFormat};
use crate::exit::ExitStatus;
use crate::library::{Context, LibPath, Model};
use crate::report::output::deliver_all;
use crate::scan::Recording;
use crate::{check, families, model, report, source};

/// Runs `gfxscan check`.
pub fn run(mut args: CheckArgs, color: cli::ColorChoice) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    // A running process, read first: its environment is the one its GPUs and libraries see.
    let process = match args.pid {
        Some(pid) => Some(source::process::read_process(pid).map_err(anyhow::Error::msg)?),
        None => None,
    };
    if !args.env.is_empty() && args.exe.is_none() && process.is_none() {
        bail!("--env sets the environment of the program --exe or --pid names: give one");
    }
    // The program's environment: this process's (or the process's), with --env on top.
    let vars = program_env(process.as_ref().map(|p| p.env.clone()), &args.env)?;
    let env = check::devices::Env::from_vars(vars.iter().map(|(k, v)| (k.clone(), v.clone())));
    // `--gpu all`: the GPUs come from what the scan finds, besides the machine's and any named.
    let all = args.gpus.iter().any(|g| g.eq_ignore_ascii_case("all"));
    args.gpus.retain(|g| !g.eq_ignore_ascii_case("all"));
    let found = match all {
        true => machine_and_named(&args, &env, &targets)?,
        false => gpus(&args, &env, &targets)?,
    };
    let outputs = open_outputs(color, args.json, args.format, &args.opts.outputs, OutputFormat::CHECK)?;
    // With --exe: what the program loads, found as the loader finds it, is what is read; with
    // --pid, what the process has mapped.
    let program = match (&process, &args.exe) {
        (Some(p), _) => {
            let label = format!("process {} ({})", p.pid, p.exe);
            Some((check::program::from_process(p), p.root.clone(), p.root.clone(), label))
        }
        (None, Some(exe)) => {
            let (loads, real, label) = load_program(exe, args.root.as_deref(), &vars)?;
            // The root as given: paths in the report read as the user wrote them.
            Some((loads, args.root.clone().unwrap_or_else(|| "/".into()), real, label))
        }
        (None, None) => None,
    };
    let (roots, not_checked) = match &program {
        Some((_, root, _, _)) => (vec![root.clone()], Vec::new()),
        None => roots_to_check(&args.opts.roots)?,
    };
    // A program's Tensile folders are its data folders, resolved inside its root; without a
    // program, the environment's are placed among the roots.
    let (roots, pending) = match &program {
        Some(_) => (roots, Vec::new()),
        None => with_libpaths(roots, &env),
    };
    // Verdicts need a compressed bundle's table, not its code objects: the runtime picks by
    // entry ID (clr hip_fatbin.cpp, comgr lookUpCodeObject); the entries the checked GPUs
    // would load are read all the same.
    let mut processors: Vec<String> = found.devices.iter().map(|d| d.effective.processor.clone()).collect();
    processors.sort();
    processors.dedup();
    args.opts.resources.max_memory = Some(memory_aim(&args.opts.resources, false));
    let parts = program.as_ref().map(|(loads, _, real, _)| loads.files(real));
    // Every GPU the code is for is checked with `all`: everything is read.
    let read_for = (!all).then_some(processors);
    let snap =
        scan_roots(roots.clone(), &args.opts, &targets, read_for.clone(), parts, false, Recording::Off)?;
    let found = match all {
        true => summary::every_gpu(found, summary::code_gpus(&snap, &targets)),
        false => found,
    };
    let context = Context {
        one_program: program.is_some(),
        read_for,
        libpaths: pending.into_iter().map(|p| p.place_in(&roots)).collect(),
    };
    let model = Model::build(snap, &targets, context);
    // Without ROOT the check is of a system — this machine, a process's or a program's root —
    // and so is the kernel judged: the one it runs, with its driver's parameters.
    let system = match (&args.sysfs_root, &process, &args.root) {
        (Some(s), _, _) => s.clone(),
        (None, Some(p), _) => p.root.clone(),
        (None, None, Some(r)) => r.clone(),
        (None, None, None) => "/".into(),
    };
    let running_kernel = args.opts.roots.is_empty().then(|| source::kernel::running(&system));
    let mut result =
        check::check(&model, &found, &targets, check::CheckOptions { not_checked, running_kernel });
    if let Some((loads, shown, real, label)) = &program {
        result = result.with_program(loads.report(label, shown, real));
    }
    if all {
        result = result.with_summary();
    }
    deliver_all(outputs, result.exit_status(), |format, style, w| {
        report::write_check(&result, &targets, format, style, w)
    })
}

/// The GPUs to check: those `--gpu` names, else the KFD topology's under `--sysfs-root` (or
/// `/`) as the runtime's environment leaves them visible.
fn gpus(
    args: &CheckArgs,
    env: &check::devices::Env,
    targets: &crate::vocab::targets::Targets,
) -> anyhow::Result<check::devices::Gpus> {
    if !args.gpus.is_empty() {
        return check::devices::from_args(&args.gpus, env, targets).map_err(anyhow::Error::msg);
    }
    let root = args.sysfs_root.clone().unwrap_or_else(|| "/".into());
    let found = check::devices::from_kfd(&root, env, targets).map_err(anyhow::Error::msg)?;
    if found.devices.is_empty() && found.unknown.is_empty() {
        if let Some(v) = env.get("ROCR_VISIBLE_DEVICES") {
            bail!("ROCR_VISIBLE_DEVICES={v:?} leaves no GPU of the KFD topology under {} visible: the runtime would see none", root.display());
        }
        bail!("no GPU in the KFD topology under {}: name one with --gpu TARGET_ID", root.display());
    }
    Ok(found)
}

/// `--gpu all`'s GPUs known before the scan: this machine's (KFD topology under
/// `--sysfs-root`, else `/`, where a machine without one has none), then those named beside
/// `all`.
fn machine_and_named(
    args: &CheckArgs,
    env: &check::devices::Env,
    targets: &crate::vocab::targets::Targets,
) -> anyhow::Result<check::devices::Gpus> {
    let machine = match &args.sysfs_root {
        Some(root) => check::devices::from_kfd(root, env, targets).map_err(anyhow::Error::msg)?,
        None => check::devices::from_kfd(Path::new("/"), env, targets).unwrap_or_default(),
    };
    let named = check::devices::from_args(&args.gpus, env, targets).map_err(anyhow::Error::msg)?;
    Ok(summary::every_gpu(machine, named))
}

/// The roots a check without a program reads: those named, else the installs found under `/`
/// (with those not checked, by name); none found is an error that says what to do.
fn roots_to_check(named: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, Vec<String>)> {
    if !named.is_empty() {
        return Ok((named.to_vec(), Vec::new()));
    }
    let (checked, not) = default_installs();
    if checked.is_empty() {
        let others = match not.is_empty() {
            true => String::new(),
            false => format!(" (other installs, not checked: {})", not.join(", ")),
        };
        bail!(
            "no /opt/rocm and no Ollama folder here{others}; name a ROOT, e.g. `gfxscan check /path/to/rocm`"
        );
    }
    Ok((checked, not))
}

/// The program's environment — `base` (a process's), else this process's — with `--env
/// NAME=VALUE` settings on top, sorted by name.
fn program_env(
    base: Option<Vec<(String, String)>>,
    settings: &[String],
) -> anyhow::Result<Vec<(String, String)>> {
    let mut vars: std::collections::BTreeMap<String, String> = match base {
        Some(b) => b.into_iter().collect(),
        None => std::env::vars().collect(),
    };
    for s in settings {
        let Some((k, v)) = s.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            bail!("--env {s:?}: give NAME=VALUE");
        };
        vars.insert(k.to_string(), v.to_string());
    }
    Ok(vars.into_iter().collect())
}

/// What `exe` loads inside `root` (`/` by default) under `vars`: the loads, the root, and the
/// program as given.
fn load_program(
    exe: &str,
    root: Option<&Path>,
    vars: &[(String, String)],
) -> anyhow::Result<(check::program::ProgramLoads, PathBuf, String)> {
    let root = root.unwrap_or(Path::new("/"));
    let root =
        anyhow::Context::with_context(std::fs::canonicalize(root), || format!("--root {}", root.display()))?;
    let var = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let env = source::loader::LoaderEnv { root, ld_library_path: var("LD_LIBRARY_PATH"), path: var("PATH") };
    let loads = check::program::load(exe, &env, &var).map_err(anyhow::Error::msg)?;
    Ok((loads, env.root, exe.to_string()))
}

/// A Tensile folder named by the environment, before the scan places it among the roots.
struct PendingLibPath {
    variable: &'static str,
    component: model::Component,
    value: String,
    real: Option<PathBuf>,
}

impl PendingLibPath {
    /// Its root index and folder in the snapshot scanned from `roots`.
    fn place_in(self, roots: &[PathBuf]) -> LibPath {
        let place = self.real.as_ref().and_then(|real| {
            roots.iter().enumerate().find_map(|(i, r)| {
                let rel = real.strip_prefix(std::fs::canonicalize(r).ok()?).ok()?;
                let inside = rel.join("x");
                Some((i, families::tensile::tensile_dir(&inside.to_string_lossy())))
            })
        });
        LibPath { variable: self.variable.to_string(), component: self.component, place, value: self.value }
    }
}

/// Adds the Tensile folders `ROCBLAS_TENSILE_LIBPATH` and `HIPBLASLT_TENSILE_LIBPATH` name to
/// the roots of a check, unless a root already holds them.
fn with_libpaths(mut roots: Vec<PathBuf>, env: &check::devices::Env) -> (Vec<PathBuf>, Vec<PendingLibPath>) {
    let mut pending = Vec::new();
    for (variable, component) in [
        ("ROCBLAS_TENSILE_LIBPATH", model::Component::Rocblas),
        ("HIPBLASLT_TENSILE_LIBPATH", model::Component::Hipblaslt),
    ] {
        let Some(value) = env.get(variable).filter(|v| !v.is_empty()) else { continue };
        let real = std::fs::canonicalize(value).ok().filter(|p| p.is_dir());
        if let Some(real) = &real {
            let inside = roots.iter().any(|r| std::fs::canonicalize(r).is_ok_and(|r| real.starts_with(r)));
            if !inside {
                roots.push(real.clone());
            }
        }
        pending.push(PendingLibPath { variable, component, value: value.to_string(), real });
    }
    (roots, pending)
}
