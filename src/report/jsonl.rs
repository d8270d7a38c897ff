//! JSON Lines: a scan or a check as one typed record per line, as ripgrep's `--json` writes a
//! search: `{"type": "...", "data": {...}}`, a `begin` record first and an `end` record last.
//!
//! Each record is a whole JSON document on one line, so a stream can be filtered with `jq -c
//! 'select(.type == "code_object")'` or `grep '"type":"verdict"'` without reading a whole
//! snapshot into memory. The records carry the snapshot's and the check document's own types
//! (docs/schema.md): a file (without its code objects), each code object with its file's path
//! and its URI, each finding and problem; a check's program (`--exe`, `--pid`), unknown GPUs,
//! GPUs and each verdict with its install and GPU, with `--gpu all` a row per GPU, installs not checked. Records come in the documents' order, so the same result gives the same bytes.

use std::io::Write;

use crate::check::{CheckReport, GpuReport};
use crate::model::{FileRecord, Snapshot};
use crate::records::{Begin, CodeObjectLine, End, FileLine, GpuLine, NotChecked, Record, VerdictLine};

use super::uris::code_object_uri;

/// Writes records, one JSON document a line.
fn write_records<'a>(records: impl Iterator<Item = Record<'a>>, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut text = Vec::new();
    for r in records {
        serde_json::to_writer(&mut text, &r)?;
        text.push(b'\n');
        // Written in pieces: a big tree's stream is not held whole.
        if text.len() > 1 << 16 {
            out.write_all(&text)?;
            text.clear();
        }
    }
    out.write_all(&text)?;
    Ok(())
}

/// Writes a scan as JSON Lines.
pub fn write_scan_jsonl(snap: &Snapshot, out: &mut dyn Write) -> anyhow::Result<()> {
    let begin = Record::Begin(Begin {
        command: "scan",
        schema_version: snap.schema_version,
        tool: &snap.tool,
        roots: &snap.roots,
    });
    let files = snap.files.iter().flat_map(|f| file_records(snap, f));
    let findings = snap.findings.iter().map(Record::Finding);
    let problems = snap.problems.iter().map(Record::Problem);
    let end = Record::End(End::Scan { summary: &snap.summary });
    let all = std::iter::once(begin).chain(files).chain(findings).chain(problems).chain(std::iter::once(end));
    write_records(all, out)
}

/// A file's record and its code objects' records.
fn file_records<'a>(snap: &'a Snapshot, f: &'a FileRecord) -> impl Iterator<Item = Record<'a>> {
    let line = Record::File(FileLine {
        path: &f.path,
        kind: f.kind,
        size: f.size,
        bundles: f.bundles,
        code_objects: f.code_objects.len(),
        artifact: f.artifact.as_ref(),
        kpack_ref: f.kpack_ref.as_ref(),
        hard_link_of: f.hard_link_of.as_ref(),
        sha256: f.sha256.as_ref(),
    });
    let objects = f.code_objects.iter().map(move |o| {
        Record::CodeObject(CodeObjectLine { file: &f.path, object: o, uri: code_object_uri(snap, f, o) })
    });
    std::iter::once(line).chain(objects)
}

/// Writes a check as JSON Lines: per install, each GPU and then its verdicts.
pub fn write_check_jsonl(report: &CheckReport, out: &mut dyn Write) -> anyhow::Result<()> {
    let begin = Record::Begin(Begin {
        command: "check",
        schema_version: report.schema_version,
        tool: &report.tool,
        roots: &report.roots,
    });
    let gpus = report.installs.iter().flat_map(|i| {
        let at = i.install.path.as_str();
        i.gpus.iter().flat_map(move |g| gpu_records(at, g))
    });
    let unknown = report.unknown_gpus.iter().map(Record::UnknownGpu);
    let program = report.program.iter().map(Record::Program);
    let summary = report.summary.iter().map(Record::GpuSummary);
    let drivers = report.drivers.iter().map(Record::Driver);
    let not_checked = report.not_checked.iter().map(|i| Record::NotChecked(NotChecked { install: i }));
    let problems = report.problems.iter().map(Record::Problem);
    let end = Record::End(End::Check { outcome: report.outcome });
    let all = std::iter::once(begin)
        .chain(unknown)
        .chain(program)
        .chain(gpus)
        .chain(summary)
        .chain(drivers)
        .chain(not_checked)
        .chain(problems)
        .chain(std::iter::once(end));
    write_records(all, out)
}

/// A GPU's record and its verdicts' records.
fn gpu_records<'a>(install: &'a str, g: &'a GpuReport) -> impl Iterator<Item = Record<'a>> {
    let line = Record::Gpu(GpuLine {
        install,
        device: &g.device,
        status: g.status(),
        hints: &g.hints,
        warnings: &g.warnings,
    });
    let verdicts = g.verdicts.iter().map(move |v| {
        Record::Verdict(VerdictLine {
            install,
            gpu: g.device.index,
            target: &g.device.effective.target_id,
            verdict: v,
        })
    });
    std::iter::once(line).chain(verdicts)
}
