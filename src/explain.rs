//! Explain: one target's gate matrix — every gate between a GPU of that target and a run, side
//! by side, each saying whether it blocks, allows or is unknown, and where its fact comes from.
//!
//! Vendor policy (`vocab::policy`: the ROCm release's support list, TheRock, projects' build
//! filters) sits beside what the scanned install ships (the scan's own per-layer counts,
//! `aggregate::layer_count`), what serves a GPU of the target per library (check's verdicts,
//! given whole, from the one library model), and the override `targets.toml` records with the
//! verdicts it would give. Nothing here judges a library or counts a layer itself: it reads
//! the answers those places give, so the matrix cannot disagree with `scan` or `check`.

use serde::Serialize;

use crate::aggregate::{layer_count, layers};
use crate::check::{CheckReport, GpuReport, Status};
use crate::library::install::Install;
use crate::library::release::{release_of, InstallRelease};
use crate::model::{IndexMap, Problem, Snapshot, Tool};
use crate::vocab::policy::{BuildFilter, Kept, Level, Platform, Policy, Release};
use crate::vocab::runtime::generic_of;
use crate::vocab::targets::{Target, Targets};

/// Version of the explain JSON document.
pub const EXPLAIN_SCHEMA_VERSION: u32 = 1;

/// What a gate does for the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    Allows,
    Blocks,
    /// No source says, or the install does not tell.
    Unknown,
}

impl Gate {
    pub fn word(self) -> &'static str {
        match self {
            Gate::Allows => "allows",
            Gate::Blocks => "blocks",
            Gate::Unknown => "unknown",
        }
    }
}

/// The kind of gate a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Section {
    /// AMD's support lists, TheRock's targets.
    Vendor,
    /// A project's default build.
    Build,
    /// What the scanned roots ship, layer by layer.
    Ships,
    /// Whether a GPU of the target finds its code, library by library.
    Runtime,
    /// What an override would change.
    Override,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Section::Vendor => "Vendor policy",
            Section::Build => "Default builds",
            Section::Ships => "What the roots ship",
            Section::Runtime => "What the runtime finds",
            Section::Override => "Override",
        }
    }
}

/// One gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GateRow {
    pub section: Section,
    /// The gate: a support list, a build, a layer, a library, an override.
    pub gate: String,
    /// What it says for the target.
    pub says: String,
    pub verdict: Gate,
    /// Where the fact comes from: a `targets.toml` source, `scan` or `check`.
    pub source: String,
    /// For a layer: the scan's count for the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
}

/// The target explained.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TargetFacts {
    pub name: String,
    pub family: String,
    pub products: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generic: Option<String>,
    /// The target whose code an override would load instead (`targets.toml` isa_compatible).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isa_compatible: Option<String>,
}

/// The gates of one install.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct InstallGates {
    #[serde(flatten)]
    pub install: Install,
    /// Its ROCm release, as its files tell; absent when they do not.
    pub release: Option<InstallRelease>,
    pub rows: Vec<GateRow>,
    /// `check`'s report for a GPU of the target, as `check --gpu TARGET` gives it.
    pub check: GpuReport,
    /// `check`'s report with the override in force, when one is recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with_override: Option<GpuReport>,
}

/// The `families` rows of one layer, with the scan's counts for the target.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LayerCount {
    pub layer: String,
    pub count: u64,
    /// Per `families` key of the snapshot (`scan --json`): the target's count.
    pub families: IndexMap<String, u64>,
}

/// The result of `gfxscan explain`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Explanation {
    pub schema_version: u32,
    pub tool: Tool,
    pub target: TargetFacts,
    pub roots: Vec<String>,
    /// Gates that hold whatever is installed: support lists, TheRock, default builds.
    pub policy: Vec<GateRow>,
    /// What the roots ship for the target, layer by layer.
    pub ships: Vec<GateRow>,
    pub layers: Vec<LayerCount>,
    pub installs: Vec<InstallGates>,
    /// Installs found and not checked.
    pub not_checked: Vec<String>,
    /// Files not read in full: gates read from them may be wrong.
    pub problems: Vec<Problem>,
}

/// What explain is given: the scan, and check's reports for the target (and with the override).
pub struct Inputs<'a> {
    pub snap: Option<&'a Snapshot>,
    pub check: Option<&'a CheckReport>,
    pub with_override: Option<&'a CheckReport>,
}

/// The gate matrix for `target` (a processor in `targets`).
pub fn explain(target: &Target, targets: &Targets, inputs: Inputs) -> Explanation {
    let policy = targets.policy();
    let (ships, layer_counts) = inputs.snap.map(|s| shipped(s, target, targets)).unwrap_or_default();
    let installs = match (inputs.snap, inputs.check) {
        (Some(snap), Some(check)) => install_gates(snap, check, inputs.with_override, target, targets),
        _ => Vec::new(),
    };
    Explanation {
        schema_version: EXPLAIN_SCHEMA_VERSION,
        tool: Tool::current(),
        target: TargetFacts {
            name: target.name.clone(),
            family: target.family.clone(),
            products: target.products.clone(),
            generic: target.generic.clone(),
            isa_compatible: target.isa_compatible.clone(),
        },
        roots: inputs.snap.map(|s| s.roots.clone()).unwrap_or_default(),
        policy: policy_rows(policy, &target.name),
        ships,
        layers: layer_counts,
        installs,
        not_checked: inputs.check.map(|c| c.not_checked.clone()).unwrap_or_default(),
        problems: inputs.snap.map(|s| s.problems.clone()).unwrap_or_default(),
    }
}

/// The gates that hold whatever is installed.
pub fn policy_rows(policy: &Policy, target: &str) -> Vec<GateRow> {
    let mut rows = Vec::new();
    for platform in [Platform::Linux, Platform::Windows] {
        if let Some(r) = policy.newest(platform) {
            rows.push(support_row(
                policy,
                &[r],
                target,
                &format!("{} support list (newest known)", r.label()),
            ));
        }
    }
    rows.extend(therock_row(policy, target));
    rows.extend(build_rows(policy, target));
    rows
}

/// A support list's row for `releases` (one list, or several a HIP version stands for).
fn support_row(policy: &Policy, releases: &[&Release], target: &str, gate: &str) -> GateRow {
    let levels: Vec<Level> = releases.iter().map(|r| r.level(target)).collect();
    let (says, verdict) = match levels.as_slice() {
        [] => ("no release list".to_string(), Gate::Unknown),
        [l, rest @ ..] if rest.iter().all(|x| x == l) => {
            (l.words().to_string(), if l.supported() { Gate::Allows } else { Gate::Blocks })
        }
        _ => {
            let each: Vec<String> =
                releases.iter().map(|r| format!("{}: {}", r.label(), r.level(target).words())).collect();
            (each.join("; "), Gate::Unknown)
        }
    };
    let platform = releases.first().map_or(Platform::Linux, |r| r.platform);
    let notes: Vec<&str> = releases.iter().filter_map(|r| r.note.as_deref()).take(1).collect();
    let history = history(policy, platform, target);
    let mut says = format!("{says}; {history}");
    if let Some(n) = notes.first().filter(|n| n.contains(target)) {
        says.push_str(&format!(" ({n})"));
    }
    let sources: Vec<&str> = releases.iter().map(|r| r.source.as_str()).collect();
    GateRow {
        section: Section::Vendor,
        gate: gate.to_string(),
        says,
        verdict,
        source: sources.join("; "),
        count: None,
    }
}

/// Which releases of `platform` list `target`, and how (`Policy::runs`), level by level:
/// `Linux listed as unsupported in 6.0.0–6.1.2, 6.2.0–6.3.0`.
pub fn history(policy: &Policy, platform: Platform, target: &str) -> String {
    let runs = policy.runs(platform, target);
    let mut levels: Vec<Level> = Vec::new();
    for (l, _, _) in &runs {
        if *l != Level::NotListed && !levels.contains(l) {
            levels.push(*l);
        }
    }
    let told: Vec<String> = levels
        .iter()
        .map(|l| {
            let these: Vec<(String, String)> =
                runs.iter().filter(|(x, _, _)| x == l).map(|(_, a, b)| (a.clone(), b.clone())).collect();
            format!("{} in {}", l.words(), crate::vocab::policy::spans(&these))
        })
        .collect();
    match (told.is_empty(), runs.first(), runs.last()) {
        (true, Some((_, first, _)), Some((_, _, last))) => {
            format!("listed by none of {} {first}–{last}", platform.name())
        }
        (true, _, _) => format!("no {} lists recorded", platform.name()),
        (false, _, _) => format!("{} {}", platform.name(), told.join("; ")),
    }
}

/// TheRock's newest release: does it build the target, since when, and without what.
fn therock_row(policy: &Policy, target: &str) -> Option<GateRow> {
    let newest = policy.therock.first()?;
    let builds = newest.targets.iter().any(|t| t == target);
    let since = policy.therock.iter().rev().find(|r| r.targets.iter().any(|t| t == target));
    let without: Vec<&str> = policy
        .therock_exclusions
        .iter()
        .filter(|x| x.targets.iter().any(|t| t == target))
        .flat_map(|x| x.projects.iter().map(String::as_str))
        .collect();
    let says = match (builds, since) {
        (true, Some(s)) if without.is_empty() => format!("built (since {})", s.tag),
        (true, Some(s)) => format!("built (since {}), without {}", s.tag, without.join(", ")),
        _ => "not built".to_string(),
    };
    let mut source = newest.source.clone();
    if let Some(x) = policy.therock_exclusions.iter().find(|x| x.targets.iter().any(|t| t == target)) {
        source.push_str(&format!("; {}", x.source));
    }
    Some(GateRow {
        section: Section::Vendor,
        gate: format!("TheRock {}", newest.tag),
        says,
        verdict: if builds { Gate::Allows } else { Gate::Blocks },
        source,
        count: None,
    })
}

/// One row per project build: the filter in force (else the newest, with when it ended), and
/// the spans of that build's history that kept the target.
fn build_rows(policy: &Policy, target: &str) -> Vec<GateRow> {
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for f in &policy.build_filters {
        if !groups.contains(&(f.project.as_str(), f.what.as_str())) {
            groups.push((&f.project, &f.what));
        }
    }
    groups
        .into_iter()
        .filter_map(|(project, what)| {
            let entries: Vec<&BuildFilter> =
                policy.build_filters.iter().filter(|f| f.project == project && f.what == what).collect();
            let shown = entries.iter().find(|f| f.until.is_none()).or(entries.first())?;
            Some(build_row(shown, &entries, target))
        })
        .collect()
}

fn build_row(shown: &BuildFilter, entries: &[&BuildFilter], target: &str) -> GateRow {
    let kept = shown.keeps(target);
    let rule = match (&shown.regex, shown.build_host) {
        (Some(r), _) => format!("{} {r}", shown.name),
        (None, true) => shown.name.clone(),
        (None, false) => format!("{} ({} targets)", shown.name, shown.targets.len()),
    };
    let span = shown.span();
    let span = if span.is_empty() { String::new() } else { format!(", {span}") };
    let mut says = match kept {
        Kept::Yes => format!("kept by {rule}{span}"),
        Kept::No => format!("not kept by {rule}{span}"),
        Kept::OnBuildHost => format!("built for the GPUs of the machine that builds it ({rule}{span})"),
    };
    if kept == Kept::No {
        let kept_in = kept_spans(entries, target);
        if !kept_in.is_empty() {
            says.push_str(&format!("; kept in {kept_in}"));
        }
    }
    let verdict = match kept {
        Kept::Yes | Kept::OnBuildHost => Gate::Allows,
        Kept::No => Gate::Blocks,
    };
    GateRow {
        section: Section::Build,
        gate: format!("{} {}", shown.project, shown.what),
        says,
        verdict,
        source: shown.source.clone(),
        count: None,
    }
}

/// The tags of one build's history that kept `target`, adjacent spans joined: entries are
/// newest first, each `since` the `until` of the one before it.
fn kept_spans(entries: &[&BuildFilter], target: &str) -> String {
    let mut runs: Vec<(String, String)> = Vec::new();
    for f in entries.iter().rev().filter(|f| f.keeps(target) == Kept::Yes) {
        let (since, until) = (f.since.clone().unwrap_or_default(), f.until.clone().unwrap_or_default());
        match runs.last_mut() {
            Some((_, end)) if *end == since && !since.is_empty() => *end = until,
            _ => runs.push((since, until)),
        }
    }
    let told: Vec<String> = runs.iter().map(|(a, b)| format!("{a}–{b}")).collect();
    told.join(", ")
}

/// The layers, with the scan's counts for the target (`aggregate::layer_count`, as `scan`'s
/// per-target table counts them).
fn shipped(snap: &Snapshot, target: &Target, targets: &Targets) -> (Vec<GateRow>, Vec<LayerCount>) {
    let generic = generic_of(&target.name, targets);
    let mut rows = Vec::new();
    let mut counts = Vec::new();
    for layer in layers() {
        let present = snap.families.keys().any(|k| layer.rows.iter().any(|r| r.key == k));
        let count = layer_count(snap, &layer, &target.name);
        let families = layer
            .rows
            .iter()
            .map(|r| {
                (
                    r.key.to_string(),
                    snap.families.get(r.key).and_then(|m| m.get(&target.name)).copied().unwrap_or(0),
                )
            })
            .collect();
        counts.push(LayerCount { layer: layer.header.to_string(), count, families });
        // Only layers a run reads gate it; the others are counted above all the same.
        if !present || !layer.rows.iter().any(|r| r.needed) {
            continue;
        }
        let via = generic.map(|g| (g, layer_count(snap, &layer, g))).filter(|(_, n)| *n > 0);
        let (says, verdict) = match (count, via) {
            (0, Some((g, n))) => (
                format!(
                    "none of its own; {} for {g}, which the runtime loads for it",
                    crate::vocab::units::thousands(n)
                ),
                Gate::Allows,
            ),
            (0, None) => ("none (the roots have this layer for other targets)".to_string(), Gate::Blocks),
            (n, _) => (crate::vocab::units::thousands(n), Gate::Allows),
        };
        rows.push(GateRow {
            section: Section::Ships,
            gate: layer.header.to_string(),
            says,
            verdict,
            source: "scan".to_string(),
            count: Some(count),
        });
    }
    (rows, counts)
}

/// Per install checked: its release's support list, check's verdicts, the override's.
fn install_gates(
    snap: &Snapshot,
    check: &CheckReport,
    with_override: Option<&CheckReport>,
    target: &Target,
    targets: &Targets,
) -> Vec<InstallGates> {
    check
        .installs
        .iter()
        .filter_map(|inst| {
            let gpu = inst.gpus.first()?.clone();
            let over = with_override
                .and_then(|o| o.installs.iter().find(|i| i.install == inst.install))
                .and_then(|i| i.gpus.first().cloned());
            let release = release_of(snap, &inst.install, targets.policy());
            let mut rows = vec![release_row(targets.policy(), release.as_ref(), &target.name)];
            rows.extend(declared_row(snap, &inst.install, target, targets));
            rows.extend(gpu.verdicts.iter().map(|v| verdict_row(v, &inst.install)));
            rows.push(override_row(target, &gpu, over.as_ref()));
            Some(InstallGates {
                install: inst.install.clone(),
                release,
                rows,
                check: gpu,
                with_override: over,
            })
        })
        .collect()
}

/// The support list of the install's own release.
fn release_row(policy: &Policy, release: Option<&InstallRelease>, target: &str) -> GateRow {
    let unknown = |says: String, source: String| GateRow {
        section: Section::Vendor,
        gate: "this install's ROCm release".to_string(),
        says,
        verdict: Gate::Unknown,
        source,
        count: None,
    };
    let Some(r) = release else {
        return unknown(
            format!(
                "not stated (no .info/version, rocm_version.h, librocm-core or versioned libamdhip64); {}",
                history(policy, Platform::Linux, target)
            ),
            "the install's files".to_string(),
        );
    };
    let lists: Vec<&Release> = r.releases.iter().filter_map(|v| policy.release(Platform::Linux, v)).collect();
    if let (true, Some(rock)) = (lists.is_empty(), r.releases.first().and_then(|v| policy.therock_release(v)))
    {
        let builds = rock.targets.iter().any(|t| t == target);
        return GateRow {
            section: Section::Vendor,
            gate: format!("{} targets (this install's release)", rock.tag),
            says: if builds { "built".to_string() } else { "not built".to_string() },
            verdict: if builds { Gate::Allows } else { Gate::Blocks },
            source: format!("{}; release: {} in {}", rock.source, r.stated, r.path),
            count: None,
        };
    }
    if lists.is_empty() {
        return unknown(
            format!(
                "{} ({}) is not in targets.toml's release table; {}",
                r.stated,
                r.path,
                history(policy, Platform::Linux, target)
            ),
            r.path.clone(),
        );
    }
    let mut lists_unique: Vec<&Release> = Vec::new();
    for l in lists {
        if !lists_unique.iter().any(|u| std::ptr::eq(*u, l)) {
            lists_unique.push(l);
        }
    }
    let gate = format!("ROCm {} support list (this install's release)", r.releases.join(" or "));
    let mut row = support_row(policy, &lists_unique, target, &gate);
    let stated = match r.source {
        crate::library::release::ReleaseSource::HipRuntime => format!("HIP {}", r.stated),
        _ => r.stated.clone(),
    };
    row.source = format!("{}; release: {stated} in {}", row.source, r.path);
    row
}

/// A TheRock install's own word (`share/therock/dist_info.json`): was it built for the target
/// (or for a target whose generic code the runtime loads for it)?
fn declared_row(snap: &Snapshot, install: &Install, target: &Target, targets: &Targets) -> Option<GateRow> {
    let d = snap.declared_targets.iter().find(|d| {
        &crate::library::install::install_of(snap.root_given(d.path.root), &d.path.display(&snap.roots))
            == install
    })?;
    let processors: Vec<&str> = d.targets.iter().map(|t| t.split(':').next().unwrap_or(t)).collect();
    let own = processors.contains(&target.name.as_str());
    let generic = generic_of(&target.name, targets).filter(|g| processors.contains(g));
    let (says, verdict) = match (own, generic) {
        (true, _) => ("declared".to_string(), Gate::Allows),
        (false, Some(g)) => (format!("{g} declared, whose code the runtime loads for it"), Gate::Allows),
        (false, None) => (format!("not declared (declares {})", d.targets.join(", ")), Gate::Blocks),
    };
    Some(GateRow {
        section: Section::Vendor,
        gate: "this install's declared targets".to_string(),
        says,
        verdict,
        source: format!("{} (dist_amdgpu_targets)", d.path.display(&snap.roots)),
        count: None,
    })
}

/// A library's verdict as a gate.
fn verdict_row(v: &crate::check::Verdict, install: &Install) -> GateRow {
    let mut says = format!("{}: {}", v.status.word(), v.detail);
    if let Some(c) = &v.consequence {
        says.push_str(&format!(": {c}"));
    }
    GateRow {
        section: Section::Runtime,
        gate: install.inner(&v.library).to_string(),
        says,
        verdict: if v.status == Status::Missing { Gate::Blocks } else { Gate::Allows },
        source: "check".to_string(),
        count: None,
    }
}

fn missing(g: &GpuReport) -> usize {
    g.verdicts.iter().filter(|v| v.status == Status::Missing).count()
}

/// What the override `targets.toml` records would give, as check judges it.
fn override_row(target: &Target, gpu: &GpuReport, over: Option<&GpuReport>) -> GateRow {
    let row = |gate: String, says: String, verdict: Gate| GateRow {
        section: Section::Override,
        gate,
        says,
        verdict,
        source: "targets.toml isa_compatible; check".to_string(),
        count: None,
    };
    let (Some(alt), Some(o)) = (&target.isa_compatible, over) else {
        return row(
            "HSA_OVERRIDE_GFX_VERSION".to_string(),
            format!("no ISA-compatible target recorded for {}: no override is known to help", target.name),
            Gate::Unknown,
        );
    };
    let value = o.device.r#override.as_ref().map_or(String::new(), |x| x.value.clone());
    let gate = format!("HSA_OVERRIDE_GFX_VERSION={value} (runs as {alt})");
    let (before, after) = (missing(gpu), missing(o));
    let says = match (before, after) {
        (0, 0) => format!("not needed: {} finds its own code; as {alt} too", target.name),
        (b, 0) => format!(
            "{} missing → none; a widely used workaround, not support",
            crate::vocab::units::count(b as u64, "library")
        ),
        (b, a) => format!("{} missing → {a} still missing", crate::vocab::units::count(b as u64, "library")),
    };
    row(gate, says, if after == 0 { Gate::Allows } else { Gate::Blocks })
}
