//! gfxscan: what AMD GPU code an installed ROCm stack really ships, per GPU target.
//!
//! The pipeline reads top to bottom:
//! `walk` (which files) → `classify` (what each is, by magic) → `parse` (raw facts from bytes,
//! pure) → `resolve` (facts to targets through `targets.toml`) → `aggregate` (per-target
//! totals) → `report` (table, JSON, Markdown, CSV). `scan` drives the first five in parallel;
//! only `walk` and `scan` touch files, only `report` and `main` print.

pub mod aggregate;
pub mod archive;
pub mod check;
pub mod cli;
pub mod diff;
pub mod exit;
pub mod families;
pub mod inspect;
pub mod model;
pub mod parse;
pub mod report;
pub mod scan;
pub mod source;
pub mod testing;
pub mod vocab;

use std::fs::File;

use anyhow::{bail, Context};

use cli::{CheckArgs, Cli, Command, DiffArgs, Format, ScanArgs, ScanOpts, TableArgs};
use exit::ExitStatus;
use report::output::Output;
use vocab::targets::Targets;

/// Loads the target table a command asked for.
fn load_targets(args: &TableArgs) -> anyhow::Result<Targets> {
    match &args.targets {
        None => Ok(Targets::builtin()),
        Some(p) => {
            Targets::load(p).map_err(|errs| anyhow::anyhow!("invalid targets file:\n  {}", errs.join("\n  ")))
        }
    }
}

/// Scans `roots` with the options of `opts`, with a progress bar.
fn scan_roots(
    roots: Vec<std::path::PathBuf>,
    opts: &ScanOpts,
    targets: &Targets,
) -> anyhow::Result<model::Snapshot> {
    let config = scan::ScanConfig { roots, threads: opts.threads, follow_links: opts.follow_links };
    let bar = report::progress::Bar::new(opts.quiet);
    let snap = scan::scan(&config, targets, &bar);
    bar.finish();
    snap
}

/// Scans what `opts` names (or the default roots), with a progress bar.
fn scan_for(opts: &ScanOpts, targets: &Targets) -> anyhow::Result<model::Snapshot> {
    let roots = if opts.roots.is_empty() {
        let found = source::walk::default_roots();
        if found.is_empty() {
            bail!(
                "none of the default roots exists ({}); name a ROOT, e.g. `gfxscan scan /path/to/rocm`",
                source::walk::DEFAULT_ROOTS.join(", ")
            );
        }
        found
    } else {
        opts.roots.clone()
    };
    scan_roots(roots, opts, targets)
}

fn known_targets(flag: &str, names: &[String], targets: &Targets) -> anyhow::Result<()> {
    for name in names {
        if targets.by_name(name).is_none() && !name.starts_with("unknown-") {
            bail!("{flag}: unknown target {name:?} (see `gfxscan targets`)");
        }
    }
    Ok(())
}

fn run_scan(args: ScanArgs) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    known_targets("--only", &args.only, &targets)?;
    known_targets("--compare", args.compare.as_deref().unwrap_or_default(), &targets)?;
    let out = Output::open(args.opts.output.as_deref())?;
    let snap = scan_for(&args.opts, &targets)?;
    let format = if args.json { Format::Json } else { args.format };
    let status = if snap.problems.is_empty() { ExitStatus::Clean } else { ExitStatus::Problems };
    out.deliver(status, |w| match &args.compare {
        Some(chosen) => report::write_compare(&snap, &targets, chosen, format, w),
        None => report::write_scan(&snap, &targets, &args.only, format, w),
    })
}

fn run_check(args: CheckArgs) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.opts.table)?;
    let env = check::devices::Env::from_process();
    let found = if args.gpus.is_empty() {
        let root = args.sysfs_root.clone().unwrap_or_else(|| "/".into());
        let found = check::devices::from_kfd(&root, &env, &targets).map_err(anyhow::Error::msg)?;
        if found.devices.is_empty() && found.unknown.is_empty() {
            bail!("no GPU in the KFD topology under {}: name one with --gpu TARGET_ID", root.display());
        }
        found
    } else {
        check::devices::from_args(&args.gpus, &env, &targets).map_err(anyhow::Error::msg)?
    };
    let out = Output::open(args.opts.output.as_deref())?;
    let (roots, not_checked) = if args.opts.roots.is_empty() {
        let (checked, not) = source::walk::check_roots_under(std::path::Path::new("/"));
        if checked.is_empty() {
            bail!(
                "no /opt/rocm and no Ollama folder here{}; name a ROOT, e.g. `gfxscan check /path/to/rocm`",
                if not.is_empty() {
                    String::new()
                } else {
                    let names: Vec<String> = not.iter().map(|p| p.display().to_string()).collect();
                    format!(" (other installs, not checked: {})", names.join(", "))
                }
            );
        }
        (checked, not.iter().map(|p| p.display().to_string()).collect())
    } else {
        (args.opts.roots.clone(), Vec::new())
    };
    let (roots, pending) = with_libpaths(roots, &env)?;
    let snap = scan_roots(roots.clone(), &args.opts, &targets)?;
    let libpaths = pending.into_iter().map(|p| p.place_in(&roots)).collect();
    let result = check::check(&snap, &found, &targets, check::CheckOptions { not_checked, libpaths });
    let format = if args.json { Format::Json } else { args.format.into() };
    out.deliver(result.exit_status(), |w| report::write_check(&result, format, w))
}

/// A Tensile folder named by the environment, before the scan places it among the roots.
struct PendingLibPath {
    variable: &'static str,
    component: &'static str,
    value: String,
    real: Option<std::path::PathBuf>,
}

impl PendingLibPath {
    /// Its root index and folder in the snapshot scanned from `roots`.
    fn place_in(self, roots: &[std::path::PathBuf]) -> check::LibPath {
        let place = self.real.as_ref().and_then(|real| {
            roots.iter().enumerate().find_map(|(i, r)| {
                let rel = real.strip_prefix(std::fs::canonicalize(r).ok()?).ok()?;
                let inside = rel.join("x");
                Some((i, check::tensile_dir(&inside.to_string_lossy())))
            })
        });
        check::LibPath {
            variable: self.variable.to_string(),
            component: self.component.to_string(),
            place,
            value: self.value,
        }
    }
}

/// Adds the Tensile folders `ROCBLAS_TENSILE_LIBPATH` and `HIPBLASLT_TENSILE_LIBPATH` name to
/// the roots of a check, unless a root already holds them.
fn with_libpaths(
    mut roots: Vec<std::path::PathBuf>,
    env: &check::devices::Env,
) -> anyhow::Result<(Vec<std::path::PathBuf>, Vec<PendingLibPath>)> {
    let mut pending = Vec::new();
    for (variable, component) in
        [("ROCBLAS_TENSILE_LIBPATH", "rocblas"), ("HIPBLASLT_TENSILE_LIBPATH", "hipblaslt")]
    {
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
    Ok((roots, pending))
}

/// Reads a JSON snapshot written by `gfxscan scan --json` (plain or gzipped), refusing
/// anything that is not a snapshot of the schema this build reads.
pub fn read_snapshot(path: &std::path::Path) -> anyhow::Result<model::Snapshot> {
    let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = if raw.starts_with(GZIP_MAGIC) {
        let mut inflated = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::MultiGzDecoder::new(raw.as_slice()), &mut inflated)
            .with_context(|| format!("{}: gzip data that does not inflate", path.display()))?;
        inflated
    } else {
        raw
    };
    parse_snapshot(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// A snapshot from JSON bytes (a UTF-8 byte-order mark allowed), or why it is not one.
pub fn parse_snapshot(text: &[u8]) -> Result<model::Snapshot, String> {
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err("empty: not a gfxscan snapshot".into());
    }
    let value: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("not a JSON snapshot ({e})"))?;
    if !value.is_object() {
        return Err(format!("JSON {}, not a gfxscan snapshot (an object)", json_kind(&value)));
    }
    let name = value.pointer("/tool/name").and_then(|v| v.as_str());
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    match (name, version) {
        (Some("gfxscan"), Some(v)) if v == u64::from(model::SCHEMA_VERSION) => {}
        (Some("gfxscan"), Some(v)) => {
            return Err(format!(
            "snapshot schema_version {v}; this gfxscan reads schema_version {} — rescan with this version",
            model::SCHEMA_VERSION
        ))
        }
        _ => {
            return Err(
                "JSON, but not a gfxscan snapshot (no tool.name \"gfxscan\" and schema_version)".into()
            )
        }
    }
    if value.get("files").is_none() || value.get("summary").is_none() {
        return Err("a gfxscan document, but not a scan snapshot (a check or diff result?)".into());
    }
    serde_json::from_value(value)
        .map_err(|e| format!("snapshot does not match schema_version {} ({e})", model::SCHEMA_VERSION))
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

const GZIP_MAGIC: &[u8] = b"\x1f\x8b";

/// What a side of `diff` is: a snapshot to read, or something to scan.
fn is_snapshot_file(path: &std::path::Path) -> bool {
    use std::io::Read;
    let Ok(f) = File::open(path) else { return false };
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = Vec::with_capacity(512);
    if f.take(512).read_to_end(&mut head).is_err() {
        return false;
    }
    let head = if head.starts_with(GZIP_MAGIC) {
        // A gzipped snapshot, or a gzipped tar to scan: the first inflated bytes tell.
        let mut inflated = Vec::with_capacity(512);
        let Ok(f) = File::open(path) else { return false };
        let _ = flate2::read::MultiGzDecoder::new(f).take(512).read_to_end(&mut inflated);
        if inflated.is_empty() {
            return false;
        }
        inflated
    } else {
        head
    };
    looks_like_json(&head)
}

/// True when the first bytes of a file are empty or begin a JSON value (object, array,
/// string, number, `true`, `false`, `null`), so that it is read, and refused with a reason when
/// it is no snapshot, rather than scanned as a tree with nothing in it. A tar header (whose
/// member name could begin with a digit or a letter) is not JSON.
fn looks_like_json(head: &[u8]) -> bool {
    if head.get(257..262) == Some(b"ustar") {
        return false;
    }
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
    let text = &text[start..];
    let ends_value = |rest: &[u8]| rest.first().is_none_or(|b| b.is_ascii_whitespace());
    match text.first() {
        None => true,
        Some(b'{' | b'[' | b'"') => true,
        Some(b'-' | b'0'..=b'9') => {
            let n = text.iter().take_while(|b| b"0123456789.eE+-".contains(b)).count();
            ends_value(&text[n..])
        }
        Some(_) => {
            ["true", "false", "null"].iter().any(|w| text.strip_prefix(w.as_bytes()).is_some_and(ends_value))
        }
    }
}

fn run_diff(args: DiffArgs) -> anyhow::Result<ExitStatus> {
    let targets = load_targets(&args.table)?;
    let out = Output::open(args.output.as_deref())?;
    let opts = |p: &std::path::Path| ScanOpts {
        roots: vec![p.to_path_buf()],
        output: None,
        threads: args.threads,
        follow_links: false,
        quiet: args.quiet,
        table: TableArgs { targets: args.table.targets.clone() },
    };
    // Both sides are checked before either is scanned: a bad snapshot fails at once.
    let old_is = is_snapshot_file(&args.old);
    let new_is = is_snapshot_file(&args.new);
    let old_snap = old_is.then(|| read_snapshot(&args.old)).transpose()?;
    let new_snap = new_is.then(|| read_snapshot(&args.new)).transpose()?;
    let side = |p: &std::path::Path,
                read: Option<model::Snapshot>|
     -> anyhow::Result<(model::Snapshot, diff::SideSource)> {
        match read {
            Some(s) => Ok((s, diff::SideSource::Snapshot)),
            None => Ok((scan_for(&opts(p), &targets)?, diff::SideSource::Scan)),
        }
    };
    let (old, so) = side(&args.old, old_snap)?;
    let (new, sn) = side(&args.new, new_snap)?;
    let d = diff::diff(&old, &new, (so, sn), &targets);
    let format = if args.json { Format::Json } else { args.format.into() };
    out.deliver(d.exit_status(args.fail_on_loss), |w| report::write_diff(&d, format, w))
}

/// Runs one command line.
pub fn run(cli: Cli) -> anyhow::Result<ExitStatus> {
    match cli.command {
        Command::Scan(args) => run_scan(args),
        Command::Check(args) => run_check(args),
        Command::Diff(args) => run_diff(args),
        Command::Targets(args) => {
            let targets = load_targets(&args.table)?;
            Output::Stdout.deliver(ExitStatus::Clean, |w| report::write_targets(&targets, args.json, w))
        }
    }
}
