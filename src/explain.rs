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
use crate::check::{missing_count, CheckReport, GpuReport, Status};
use crate::library::install::Install;
use crate::library::release::{release_of, InstallRelease, ReleaseSource};
use crate::library::Model;
use crate::model::{IndexMap, Problem, Snapshot, Tool};
use crate::vocab::policy::{spans, BuildFilter, Kept, Level, Platform, Policy, Release};
use crate::vocab::runtime::generic_of;
use crate::vocab::targets::{Target, Targets};
use crate::vocab::units::{count, thousands};

/// Version of the explain JSON document.
pub const EXPLAIN_SCHEMA_VERSION: u32 = 1;

pub use crate::vocab::verdict::{all_of, Gate};
use crate::vocab::verdict::{gate, GapRule};

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
    /// For a library: check's status (its gate is the verdict's, `vocab::verdict::gate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

impl GateRow {
    /// A row without a count or a status.
    pub fn new(
        section: Section,
        gate: impl Into<String>,
        says: impl Into<String>,
        verdict: Gate,
        source: impl Into<String>,
    ) -> GateRow {
        GateRow {
            section,
            gate: gate.into(),
            says: says.into(),
            verdict,
            source: source.into(),
            count: None,
            status: None,
        }
    }
}

/// What a support list's word does for a target: supported or deprecated allows; listed as
/// unsupported or not listed blocks; runtime only (Windows: the HIP runtime, not the HIP SDK's
/// libraries) and unknown are unknown.
pub fn gate_of_level(l: Level) -> Gate {
    match l {
        Level::Supported | Level::Deprecated => Gate::Allows,
        Level::Unsupported | Level::NotListed => Gate::Blocks,
        Level::RuntimeOnly | Level::Unknown => Gate::Unknown,
    }
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

impl InstallGates {
    /// What its vendor rows (its release's list, its declared targets) say together.
    pub fn vendor(&self) -> Gate {
        all_of(self.rows.iter().filter(|r| r.section == Section::Vendor).map(|r| r.verdict))
    }

    /// Its libraries by check's status: (OK, WARN, MISSING).
    pub fn statuses(&self) -> (usize, usize, usize) {
        let n = |s: Status| self.check.verdicts.iter().filter(|v| v.status == s).count();
        (n(Status::Ok), n(Status::Warn), n(Status::Missing))
    }
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
    pub model: Option<&'a Model>,
    pub check: Option<&'a CheckReport>,
    pub with_override: Option<&'a CheckReport>,
}

/// The gate matrix for `target` (a processor in `targets`).
pub fn explain(target: &Target, targets: &Targets, inputs: Inputs) -> Explanation {
    let policy = targets.policy();
    let snap = inputs.model.map(Model::snapshot);
    let (mut ships, layer_counts) = snap.map(|s| shipped(s, target, targets)).unwrap_or_default();
    ships.extend(inputs.check.map(|c| driver_rows(c, &target.name)).unwrap_or_default());
    let installs = match (inputs.model, inputs.check) {
        (Some(model), Some(check)) => install_gates(model, check, inputs.with_override, target, targets),
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
        roots: snap.map(|s| s.roots.clone()).unwrap_or_default(),
        policy: policy_rows(policy, &target.name),
        ships,
        layers: layer_counts,
        installs,
        not_checked: inputs.check.map(|c| c.not_checked.clone()).unwrap_or_default(),
        problems: snap.map(|s| s.problems.clone()).unwrap_or_default(),
    }
}

/// The kernel's gate: check's driver-and-firmware judgement of the target against each amdgpu
/// module in the roots, as check gives it (`check::driver`).
fn driver_rows(check: &CheckReport, target: &str) -> Vec<GateRow> {
    use crate::check::driver::DriverOutcome;
    check
        .drivers
        .iter()
        .filter(|d| d.gpu == target)
        .map(|d| {
            let j = &d.judgement;
            let (says, verdict) = match j.outcome {
                DriverOutcome::Ok => (
                    format!("knows it; the {} firmware files it asks for are there", j.asked.len()),
                    Gate::Allows,
                ),
                DriverOutcome::Missing => {
                    (format!("knows it; absent: {}", j.missing.join(", ")), Gate::Blocks)
                }
                DriverOutcome::NotKnown => {
                    ("asks for no firmware of it: does not know it".to_string(), Gate::Blocks)
                }
                DriverOutcome::NoDriver => ("this kernel has no amdgpu driver".to_string(), Gate::Blocks),
                DriverOutcome::Unknown => (
                    format!("not judged: {}", d.unjudged.map_or("", crate::check::driver::Unjudged::words)),
                    Gate::Unknown,
                ),
            };
            let gate = match (&d.module, &j.release) {
                (_, Some(r)) => format!("amdgpu driver, Linux {r}"),
                (None, None) => "amdgpu driver".to_string(),
                (Some(_), None) => "amdgpu driver, Linux of unknown release".to_string(),
            };
            GateRow::new(Section::Ships, gate, says, verdict, "check (driver and firmware)")
        })
        .collect()
}

/// The gates that hold whatever is installed. Each list is held against the newest release
/// the table knows: an older one never blocks by leaving a target out.
pub fn policy_rows(policy: &Policy, target: &str) -> Vec<GateRow> {
    let mut rows = Vec::new();
    let newest = policy.newest_release().cloned();
    for platform in [Platform::Linux, Platform::Windows] {
        if let Some(r) = policy.newest(platform) {
            let gate = format!("{} support list (newest known)", r.label());
            rows.push(support_row(policy, &[r], target, &gate, newest.as_deref()));
        }
    }
    rows.extend(therock_row(policy, target));
    rows.extend(build_rows(policy, target));
    rows
}

/// A support list's row for `releases` (one list, or the several a HIP version stands for),
/// each held against `reference` (the install's release, else the newest known): a list older
/// than it says "unknown" where it leaves the target out, with its age.
fn support_row(
    policy: &Policy,
    releases: &[&Release],
    target: &str,
    gate: &str,
    reference: Option<&str>,
) -> GateRow {
    let level = |r: &&Release| match policy.level(r, target) {
        Level::NotListed if reference.is_some_and(|v| policy.outdated_for(r, v)) => Level::Unknown,
        l => l,
    };
    let levels: Vec<Level> = releases.iter().map(level).collect();
    let stale: Vec<&&Release> = releases
        .iter()
        .filter(|r| policy.level(r, target) == Level::NotListed && level(r) == Level::Unknown)
        .collect();
    let (says, verdict) = match levels.as_slice() {
        [] => ("no release list".to_string(), Gate::Unknown),
        [Level::Unknown, rest @ ..] if rest.iter().all(|x| *x == Level::Unknown) && !stale.is_empty() => {
            let newest = stale.iter().map(|r| format!("{} ({})", r.label(), r.dated())).collect::<Vec<_>>();
            let says = format!(
                "unknown: the newest recorded list is {}, older than {}; it does not name the target, and a newer list may",
                newest.join(", "),
                reference.unwrap_or("the install")
            );
            (says, Gate::Unknown)
        }
        [l, rest @ ..] if rest.iter().all(|x| x == l) => {
            let matrix_only = releases.iter().all(|r| !r.levels);
            let partial = releases.iter().any(|r| !r.complete);
            (level_words(*l, matrix_only, partial), gate_of_level(*l))
        }
        _ => {
            let each: Vec<String> =
                releases.iter().zip(&levels).map(|(r, l)| format!("{}: {}", r.label(), l.words())).collect();
            (each.join("; "), Gate::Unknown)
        }
    };
    let platform = releases.first().map_or(Platform::Linux, |r| r.platform);
    let mut dates: Vec<String> = releases.iter().map(|r| r.dated()).collect();
    dates.dedup();
    let mut says = format!("{says}; {}; list of {}", history(policy, platform, target), dates.join(", "));
    if let Some(n) = releases.iter().filter_map(|r| r.note.as_deref()).find(|n| n.contains(target)) {
        says.push_str(&format!(" ({n})"));
    }
    let sources: Vec<&str> = releases.iter().map(|r| r.source.as_str()).collect();
    GateRow::new(Section::Vendor, gate, says, verdict, sources.join("; "))
}

/// A level as a row says it, with why an unknown one is unknown, and where a list read from
/// the compatibility matrix alone got its "not listed".
fn level_words(l: Level, matrix_only: bool, partial: bool) -> String {
    match l {
        Level::Unknown if partial => {
            "unknown: the list was read only in part (the page's rows the record holds do not name it)".to_string()
        }
        Level::NotListed if matrix_only => {
            "not in the compatibility matrix, and listed as unsupported on the last per-GPU page".to_string()
        }
        Level::Unknown => "unknown: the compatibility matrix does not list it, and it does not say that a GPU it leaves out is unsupported (a per-GPU page would; none is recorded for this release, nor AMD's Radeon and Ryzen pages)".to_string(),
        l => l.words().to_string(),
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
            format!("{} in {}", l.words(), spans(&these))
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

/// TheRock's newest release: can it build the target, since when, under which families, and
/// without which projects.
fn therock_row(policy: &Policy, target: &str) -> Option<GateRow> {
    let newest = policy.therock.first()?;
    let builds = newest.targets.iter().any(|t| t == target);
    let since = policy.therock.iter().rev().find(|r| r.targets.iter().any(|t| t == target));
    let has = |list: &[String]| list.iter().any(|t| t == target);
    let without: Vec<&str> = policy
        .therock_exclusions
        .iter()
        .filter(|x| has(&x.targets))
        .flat_map(|x| x.projects.iter().map(String::as_str))
        .collect();
    let families: Vec<&str> =
        policy.therock_families.iter().filter(|f| has(&f.targets)).map(|f| f.name.as_str()).collect();
    let mut says = match (builds, since) {
        (true, Some(s)) => format!("can build it (since {})", s.tag),
        _ => "does not build it".to_string(),
    };
    if builds && !families.is_empty() {
        says.push_str(&format!("; families {}", families.join(", ")));
    }
    if builds && !without.is_empty() {
        says.push_str(&format!("; without {}", without.join(", ")));
    }
    let mut sources = vec![newest.source.clone()];
    sources.extend(
        policy.therock_exclusions.iter().filter(|x| has(&x.targets)).map(|x| x.source.clone()).take(1),
    );
    let verdict = if builds { Gate::Allows } else { Gate::Blocks };
    Some(GateRow::new(Section::Vendor, format!("TheRock {}", newest.tag), says, verdict, sources.join("; ")))
}

/// One row per project build: the filter in force, else the newest with when it ended; and
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

/// A build's row. A filter no longer in force says what it did and that none replaced it:
/// unknown, as is a build for the build machine's own GPUs.
fn build_row(shown: &BuildFilter, entries: &[&BuildFilter], target: &str) -> GateRow {
    let kept = shown.keeps(target);
    let rule = match (&shown.regex, shown.build_host) {
        (Some(r), _) => format!("{} {r}", shown.name),
        (None, true) => shown.name.clone(),
        (None, false) => format!("{} ({} targets)", shown.name, shown.targets.len()),
    };
    let span = match shown.span() {
        s if s.is_empty() => String::new(),
        s => format!(", {s}"),
    };
    let mut says = match kept {
        Kept::Yes => format!("kept by {rule}{span}"),
        Kept::No => format!("not kept by {rule}{span}"),
        Kept::OnBuildHost => format!("built for the GPUs of the machine that builds it ({rule}{span})"),
        Kept::XnackOnly => {
            format!("kept for XNACK on only by {rule}{span}: a GPU in the default mode loads none")
        }
    };
    if kept == Kept::No {
        let kept_in = kept_spans(entries, target);
        if !kept_in.is_empty() {
            says.push_str(&format!("; kept in {kept_in}"));
        }
    }
    let in_force = shown.until.is_none();
    if let (false, Some(until)) = (in_force, &shown.until) {
        says.push_str(&format!("; no filter since {until}"));
    }
    let verdict = match (kept, in_force) {
        (Kept::Yes, true) => Gate::Allows,
        (Kept::No, true) => Gate::Blocks,
        _ => Gate::Unknown,
    };
    GateRow::new(
        Section::Build,
        format!("{} {}", shown.project, shown.what),
        says,
        verdict,
        shown.source.clone(),
    )
}

/// The tags of one build's history that kept `target`, adjacent spans joined: entries are
/// newest first, each `since` the `until` of the one before it (`Policy::errors` holds it).
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

/// A GPU report's WARN libraries: those whose gate is unknown (their users may fail), and how
/// many only run slower.
pub fn warned(report: &GpuReport) -> (Vec<&str>, usize) {
    let warns = report.verdicts.iter().filter(|v| v.status == Status::Warn);
    let unknown = warns.clone().filter(|v| v.gate() == Gate::Unknown).map(|v| v.library.as_str()).collect();
    (unknown, warns.filter(|v| v.gate() == Gate::Allows).count())
}

/// The layers, with the scan's counts for the target (`aggregate::layer_count`, as `scan`'s
/// per-target table counts them); a row for each layer a run reads that the roots hold.
fn shipped(snap: &Snapshot, target: &Target, targets: &Targets) -> (Vec<GateRow>, Vec<LayerCount>) {
    let mut rows = Vec::new();
    let mut counts = Vec::new();
    for layer in layers() {
        let count = layer_count(snap, &layer, &target.name);
        let of = |key: &str| snap.families.get(key).and_then(|m| m.get(&target.name)).copied().unwrap_or(0);
        let families = layer.rows.iter().map(|r| (r.key.to_string(), of(r.key))).collect();
        counts.push(LayerCount { layer: layer.header.to_string(), count, families });
        let present = snap.families.keys().any(|k| layer.rows.iter().any(|r| r.key == k));
        // Only layers a run reads gate it; the others are counted above all the same.
        if present && layer.rows.iter().any(|r| r.gap.is_some()) {
            rows.push(layer_row(snap, &layer, target, count, targets));
        }
    }
    (rows, counts)
}

/// One layer's row: what the roots hold for the target. None of its own, but code for its
/// generic target: whether the runtime loads that for this GPU is check's answer, not a
/// layer's (Tensile and MIOpen look up by the GPU's own name).
fn layer_row(
    snap: &Snapshot,
    layer: &crate::aggregate::Layer,
    target: &Target,
    count: u64,
    targets: &Targets,
) -> GateRow {
    let generic = crate::vocab::runtime::fallback_generic(&target.name, targets);
    let via = generic.map(|g| (g, layer_count(snap, layer, g))).filter(|(_, n)| *n > 0);
    let (says, verdict) = match (count, via) {
        (0, Some((g, n))) => (
            format!(
                "none of its own; {} for {g} (whether a GPU loads it: the runtime's verdicts below)",
                thousands(n)
            ),
            Gate::Unknown,
        ),
        (0, None) => absent(layer, &target.name, targets),
        (n, _) => (thousands(n), Gate::Allows),
    };
    GateRow { count: Some(count), ..GateRow::new(Section::Ships, layer.header, says, verdict, "scan") }
}

/// A layer the roots hold for other targets only: its gate is what that absence costs, by the
/// rule `check` judges it with (the layer's rows' gap rules, `vocab::verdict::gate`): rocBLAS's
/// Tensile files or host code absent blocks, hipBLASLt's or the bitcode's is unknown (the
/// programs taking that path fail), MIOpen's databases allow (slower, nothing fails).
fn absent(layer: &crate::aggregate::Layer, target: &str, targets: &Targets) -> (String, Gate) {
    use crate::families::tensile::{hipblaslt_gap, HIPBLASLT_GAP};
    // hipBLASLt's gap costs more where PyTorch sends the GPU's GEMMs to it by default: the rule
    // check judges that GPU by.
    let for_target =
        |r: &'static GapRule| if *r == HIPBLASLT_GAP { hipblaslt_gap(target, targets) } else { r };
    let rules: Vec<&GapRule> = layer.rows.iter().filter_map(|r| r.gap).map(for_target).collect();
    let verdict = all_of(rules.iter().map(|r| gate(r.status(), Some(r.cost))));
    let worst = rules.iter().max_by_key(|r| r.status());
    let says = match worst {
        Some(r) => format!(
            "none (the roots hold this layer for other targets): {}",
            r.consequence.replace("<arch>", target)
        ),
        None => "none (the roots hold this layer for other targets)".to_string(),
    };
    (says, verdict)
}

/// Per install checked: its release's support list (and TheRock's declared targets), check's
/// verdicts, the override's.
fn install_gates(
    model: &Model,
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
            let release = release_of(model, &inst.install, targets.policy());
            let mut rows = vec![release_row(targets.policy(), release.as_ref(), &inst.install, &target.name)];
            rows.extend(declared_row(model.snapshot(), &inst.install, target, targets));
            rows.extend(gpu.verdicts.iter().map(|v| verdict_row(v, &inst.install)));
            rows.push(override_row(target, &gpu, over.as_ref(), &inst.install));
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

/// The support list of the install's own release: AMD's, else TheRock's for a TheRock
/// release; unknown when the install does not tell or the table has no such release.
fn release_row(
    policy: &Policy,
    release: Option<&InstallRelease>,
    install: &Install,
    target: &str,
) -> GateRow {
    let gate = "this install's ROCm release";
    let Some(r) = release else {
        let says = format!(
            "not stated (no .info/version, rocm_version.h, librocm-core, AMD package version or versioned libamdhip64); {}",
            history(policy, Platform::Linux, target)
        );
        return GateRow::new(Section::Vendor, gate, says, Gate::Unknown, "the install's files");
    };
    let stated = match r.source {
        ReleaseSource::HipRuntime => format!("HIP {}", r.stated),
        _ => r.stated.clone(),
    };
    let source = |of: &str| format!("{of}; release: {stated} in {}", r.path);
    if r.platform == Platform::Windows {
        let says = format!("a Windows install (release {stated}): the Windows lists are by documentation branch, and which HIP SDK release a branch describes is not said");
        return GateRow::new(Section::Vendor, gate, says, Gate::Unknown, source("windows-gpus"));
    }
    let mut lists: Vec<&Release> = Vec::new();
    for l in r.releases.iter().filter_map(|v| policy.release(Platform::Linux, v)) {
        if !lists.iter().any(|u| std::ptr::eq(*u, l)) {
            lists.push(l);
        }
    }
    if !lists.is_empty() {
        let gate = format!("ROCm {} support list (this install's release)", r.releases.join(" or "));
        // The install is one of these releases: none of its own lists is older than it.
        let oldest = r.releases.iter().min_by_key(|v| crate::vocab::policy::version_key(v));
        let mut row = support_row(policy, &lists, target, &gate, oldest.map(String::as_str));
        if let Some(line) = &r.line {
            row.says = format!("{}; {line}", row.says);
        }
        return GateRow { source: source(&row.source), ..not_amds(row, install) };
    }
    if let Some(rock) = r.releases.first().and_then(|v| policy.therock_release(v)) {
        return therock_release_row(rock, target, source(&rock.source));
    }
    let says = format!(
        "{stated} ({}) is no release in targets.toml's table; {}",
        r.path,
        history(policy, Platform::Linux, target)
    );
    GateRow::new(Section::Vendor, gate, says, Gate::Unknown, r.path.clone())
}

/// AMD's list is for AMD's packages: a distribution's build, a Python package or an Ollama
/// bundle chose its own targets, so AMD listing the target allows nothing there (not listing
/// it still means AMD supports it nowhere).
fn not_amds(row: GateRow, install: &Install) -> GateRow {
    use crate::library::install::InstallKind;
    match (install.kind, row.verdict) {
        (InstallKind::Rocm | InstallKind::Root, _) | (_, Gate::Blocks | Gate::Unknown) => row,
        (kind, _) => GateRow {
            says: format!(
                "{}; AMD's list is for AMD's packages, and this {} install is built by others, with targets of its own (the runtime's verdicts below)",
                row.says,
                kind.word()
            ),
            verdict: Gate::Unknown,
            ..row
        },
    }
}

/// A TheRock release's targets: the release can build the target, but one TheRock tarball or
/// wheel holds one family, so what this install holds is its declared targets' answer.
fn therock_release_row(rock: &crate::vocab::policy::TheRockRelease, target: &str, source: String) -> GateRow {
    let gate = format!("{} targets (this install's release)", rock.tag);
    match rock.targets.iter().any(|t| t == target) {
        true => {
            let says = "can build it; whether this install holds it: its declared targets and the runtime's verdicts";
            GateRow::new(Section::Vendor, gate, says, Gate::Unknown, source)
        }
        false => GateRow::new(Section::Vendor, gate, "does not build it", Gate::Blocks, source),
    }
}

/// A TheRock install's own word (`share/therock/dist_info.json`): was it built for the target
/// (or for its generic target, whose code the runtime may load for it: check's verdicts say)?
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
        (false, Some(g)) => {
            (format!("{g} declared (whether a GPU loads it: the runtime's verdicts below)"), Gate::Unknown)
        }
        (false, None) => (format!("not declared (declares {})", d.targets.join(", ")), Gate::Blocks),
    };
    let source = format!("{} (dist_amdgpu_targets)", d.path.display(&snap.roots));
    Some(GateRow::new(Section::Vendor, "this install's declared targets", says, verdict, source))
}

/// A library's verdict as a gate: the verdict's own (`vocab::verdict::gate`), with check's status.
fn verdict_row(v: &crate::check::Verdict, install: &Install) -> GateRow {
    let mut says = format!("{}: {}", v.status.word(), v.detail);
    if let Some(c) = &v.consequence {
        says.push_str(&format!(": {c}"));
    }
    let row = GateRow::new(Section::Runtime, install.inner(&v.library), says, v.gate(), "check");
    GateRow { status: Some(v.status), ..row }
}

/// What the override `targets.toml` records would give, as check judges it: every library's
/// verdict under it, through the one gate function (`vocab::verdict::gate`: a WARN that only
/// slows allows, one that fails a library's users is unknown and is named).
fn override_row(target: &Target, gpu: &GpuReport, over: Option<&GpuReport>, install: &Install) -> GateRow {
    let source = "targets.toml isa_compatible; check";
    let variable = "HSA_OVERRIDE_GFX_VERSION";
    let Some(alt) = &target.isa_compatible else {
        let says =
            format!("no ISA-compatible target recorded for {}: no override is known to help", target.name);
        return GateRow::new(Section::Override, variable, says, Gate::Unknown, source);
    };
    let Some(o) = over else {
        let says = format!(
            "{} runs {alt}'s ISA, but no override value for {alt} is one the runtime takes",
            target.name
        );
        return GateRow::new(Section::Override, variable, says, Gate::Unknown, source);
    };
    let value = o.device.r#override.as_ref().map_or(String::new(), |x| x.value.clone());
    let gate = format!("{variable}={value} (runs as {alt})");
    let (before, after) = (missing_count(&gpu.verdicts), missing_count(&o.verdicts));
    let mut says = match (before, after) {
        (0, 0) => format!("not needed: {} finds its own code; as {alt} too", target.name),
        (b, 0) => {
            format!("{} missing → none; a widely used workaround, not support", count(b as u64, "library"))
        }
        (b, a) => format!("{} missing → {a} still missing", count(b as u64, "library")),
    };
    let (unknown, slower) = warned(o);
    if !unknown.is_empty() {
        let names: Vec<&str> = unknown.iter().map(|l| install.inner(l)).collect();
        says.push_str(&format!(
            "; under it, WARN where the programs taking a path fail: {}",
            names.join(", ")
        ));
    }
    if slower > 0 {
        says.push_str(&format!("; {} WARN under it only slower", count(slower as u64, "library")));
    }
    let verdict = all_of(o.verdicts.iter().map(|v| v.gate()));
    GateRow::new(Section::Override, gate, says, verdict, source)
}
