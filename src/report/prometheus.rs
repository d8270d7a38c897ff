//! Prometheus text exposition of a check or a scan, for node-exporter's textfile collector.
//!
//! The text format is Prometheus' 0.0.4 exposition (what node-exporter's textfile collector
//! reads and `promtool check metrics` lints): a `# HELP` and a `# TYPE` line per metric family,
//! then its samples, no timestamps (the collector stamps them when it reads the file). Every
//! metric is a gauge. A status is a state set, as Prometheus' own `*_state` metrics are: one
//! sample per possible status, 1 for the one in force and 0 for the others, so an alert is
//! `gfxscan_check_outcome{outcome="missing"} == 1` and a status that clears is seen to clear.
//! GPUs carry their PCI address and ROCr UUID when detected, to join with amd-smi and AMD's
//! device-metrics-exporter. The output is a function of the result: same result, same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use crate::aggregate::{layer_count, layers};
use crate::check::devices::Device;
use crate::check::driver::DriverOutcome;
use crate::check::{CheckReport, Outcome, Status};
use crate::model::{IndexMap, Snapshot};
use crate::vocab::targets::Targets;

use super::json_word;
use super::views::shown_targets;

/// One metric family: its name, its help, its samples in the order written.
struct Family {
    name: &'static str,
    help: &'static str,
    samples: Vec<(Labels, u64)>,
}

/// A sample's labels, in the order written.
type Labels = Vec<(&'static str, String)>;

impl Family {
    fn new(name: &'static str, help: &'static str) -> Family {
        Family { name, help, samples: Vec::new() }
    }

    fn add(&mut self, labels: Labels, value: u64) {
        self.samples.push((labels, value));
    }

    /// A state set: one sample per state, 1 for `current`, 0 for the others.
    fn states<S: Copy + PartialEq>(
        &mut self,
        labels: &Labels,
        key: &'static str,
        all: &[S],
        current: S,
        word: impl Fn(S) -> String,
    ) {
        for &s in all {
            let mut l = labels.clone();
            l.push((key, word(s)));
            self.add(l, u64::from(s == current));
        }
    }

    /// The family as exposition text; nothing for a family without samples.
    fn write(&self, out: &mut String) {
        if self.samples.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {} {}", self.name, escape_help(self.help));
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
        for (labels, value) in &self.samples {
            out.push_str(self.name);
            if !labels.is_empty() {
                let pairs: Vec<String> =
                    labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
                let _ = write!(out, "{{{}}}", pairs.join(","));
            }
            let _ = writeln!(out, " {value}");
        }
    }
}

/// A label value as the exposition format quotes it: control characters a name brought shown
/// as text first (`report::safe::shown`: the format has no escape for them), then backslash,
/// double quote and line feed escaped.
fn escape_label(v: &str) -> String {
    super::safe::shown_lines(v).replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Help text as the exposition format takes it: control characters shown as text, backslash
/// and line feed escaped.
fn escape_help(v: &str) -> String {
    super::safe::shown_lines(v).replace('\\', "\\\\").replace('\n', "\\n")
}

/// `gfxscan_scan_info` or `gfxscan_check_info`: which gfxscan wrote the file. Each command has
/// its own, so the two files in one textfile folder never repeat a series (node-exporter
/// refuses a series collected twice).
fn info(name: &'static str) -> Family {
    let mut f = Family::new(name, "The gfxscan that wrote these metrics (always 1).");
    f.add(vec![("version", env!("CARGO_PKG_VERSION").to_string())], 1);
    f
}

const OUTCOMES: [Outcome; 4] = [Outcome::Ok, Outcome::Missing, Outcome::Incomplete, Outcome::NothingToCheck];
const STATUSES: [Status; 3] = [Status::Ok, Status::Warn, Status::Missing];
const DRIVER_OUTCOMES: [DriverOutcome; 5] = [
    DriverOutcome::Ok,
    DriverOutcome::Missing,
    DriverOutcome::NoDriver,
    DriverOutcome::NotKnown,
    DriverOutcome::Unknown,
];

/// A GPU's labels: its index, KFD node, target ID as the runtime treats it, and where
/// detected, its PCI address and UUID.
fn gpu_labels(d: &Device) -> Labels {
    let mut l = vec![("gpu", d.index.to_string())];
    if let Some(n) = d.node {
        l.push(("node", n.to_string()));
    }
    l.push(("target", d.effective.target_id.clone()));
    if let Some(p) = &d.pci_address {
        l.push(("pci_address", p.clone()));
    }
    if let Some(u) = &d.uuid {
        l.push(("uuid", u.clone()));
    }
    l
}

/// Writes a check as Prometheus text: the overall outcome, each GPU's status per install,
/// each library's status per GPU, and files not read.
pub fn write_check_metrics(report: &CheckReport, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut outcome =
        Family::new("gfxscan_check_outcome", "The check's overall answer: 1 for the outcome in force.");
    outcome.states(&Vec::new(), "outcome", &OUTCOMES, report.outcome, json_word);
    let mut gpu = Family::new(
        "gfxscan_check_gpu_status",
        "Per install and GPU, the worst status of its libraries: 1 for the status in force.",
    );
    let mut library = Family::new(
        "gfxscan_check_library_status",
        "Per install, library and GPU, whether the GPU finds its code: 1 for the status in force.",
    );
    let mut unread = Family::new(
        "gfxscan_check_unread_files",
        "Per install, files that could not be read in full: an OK holds only for what was read.",
    );
    for install in &report.installs {
        let at = vec![("install", install.install.path.clone())];
        unread.add(at.clone(), install.unread);
        for g in &install.gpus {
            let mut labels = at.clone();
            labels.extend(gpu_labels(&g.device));
            gpu.states(&labels, "status", &STATUSES, g.status(), json_word);
            // One series per library: where a library has two verdicts (two Tensile folders
            // of one component), the worse one is its status.
            let mut worst: IndexMap<(&str, String), Status> = IndexMap::new();
            for v in &g.verdicts {
                let s = worst.entry((v.library.as_str(), json_word(v.kind))).or_insert(v.status);
                *s = (*s).max(v.status);
            }
            for ((lib, kind), status) in worst {
                let mut l = labels.clone();
                l.push(("library", lib.to_string()));
                l.push(("kind", kind));
                library.states(&l, "status", &STATUSES, status, json_word);
            }
        }
    }
    let mut driver = Family::new(
        "gfxscan_check_driver_outcome",
        "Per GPU target and amdgpu driver, whether the kernel's driver knows it and finds its firmware: 1 for the outcome in force.",
    );
    for d in &report.drivers {
        let labels = vec![
            ("target", d.gpu.clone()),
            ("release", d.judgement.release.clone().unwrap_or_default()),
            ("module", d.module.clone().unwrap_or_default()),
        ];
        driver.states(&labels, "outcome", &DRIVER_OUTCOMES, d.judgement.outcome, json_word);
    }
    let mut problems =
        Family::new("gfxscan_check_problems", "Files the check could not read in full, over every install.");
    problems.add(Vec::new(), report.problems.len() as u64);
    let mut text = String::new();
    for f in [info("gfxscan_check_info"), outcome, gpu, library, unread, driver, problems] {
        f.write(&mut text);
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// Writes a scan as Prometheus text: per target, each layer's count as the per-target table
/// shows it, and code objects, kernels and bytes; files, findings and problems.
pub fn write_scan_metrics(
    snap: &Snapshot,
    targets: &Targets,
    only: &[String],
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let shown: Vec<String> = shown_targets(snap, targets, only).into_iter().map(|(t, _)| t).collect();
    let mut layer = Family::new(
        "gfxscan_scan_layer_items",
        "Per GPU target and layer of the install, what the per-target table counts: code objects, \
         Tensile files, MIOpen records, firmware files, bitcode files.",
    );
    for t in &shown {
        for l in layers() {
            layer.add(vec![("target", t.clone()), ("layer", l.header.to_string())], layer_count(snap, &l, t));
        }
    }
    let mut objects = Family::new("gfxscan_scan_code_objects", "Per GPU target, the code objects found.");
    let mut kernels = Family::new("gfxscan_scan_kernels", "Per GPU target, the kernels in its code objects.");
    let mut bytes =
        Family::new("gfxscan_scan_code_object_bytes", "Per GPU target, bytes of device code (uncompressed).");
    for t in &shown {
        let c = snap.targets.get(t).cloned().unwrap_or_default();
        let at = vec![("target", t.clone())];
        objects.add(at.clone(), c.code_objects);
        kernels.add(at.clone(), c.kernels);
        bytes.add(at, c.bytes);
    }
    let mut files = Family::new("gfxscan_scan_files", "Files holding device code or GPU data.");
    files.add(Vec::new(), snap.files.len() as u64);
    let mut findings =
        Family::new("gfxscan_scan_findings", "Ways the install is broken as shipped, per kind.");
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for f in &snap.findings {
        *kinds.entry(json_word(f.kind)).or_default() += 1;
    }
    for (k, n) in kinds {
        findings.add(vec![("kind", k)], n);
    }
    let mut problems = Family::new("gfxscan_scan_problems", "Files that could not be read in full.");
    problems.add(Vec::new(), snap.problems.len() as u64);
    let mut text = String::new();
    for f in [info("gfxscan_scan_info"), layer, objects, kernels, bytes, files, findings, problems] {
        f.write(&mut text);
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exposition format's escapes (Prometheus docs, "Text format details").
    #[test]
    fn label_values_and_help_are_escaped() {
        assert_eq!(escape_label("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escape_help("a\\b\nc\"d"), "a\\\\b\\nc\"d");
    }

    #[test]
    fn a_state_set_marks_only_the_state_in_force() {
        let mut f = Family::new("x_state", "help");
        f.states(&vec![("gpu", "0".into())], "status", &STATUSES, Status::Warn, json_word);
        let mut text = String::new();
        f.write(&mut text);
        assert_eq!(
            text,
            "# HELP x_state help\n# TYPE x_state gauge\nx_state{gpu=\"0\",status=\"ok\"} 0\n\
             x_state{gpu=\"0\",status=\"warn\"} 1\nx_state{gpu=\"0\",status=\"missing\"} 0\n"
        );
    }

    #[test]
    fn a_family_without_samples_writes_nothing() {
        let mut text = String::new();
        Family::new("x", "h").write(&mut text);
        assert!(text.is_empty());
    }
}
