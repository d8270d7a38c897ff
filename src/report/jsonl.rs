//! JSON Lines: a scan or a check as one typed record per line, as ripgrep's `--json` writes a
//! search: `{"type": "...", "data": {...}}`, a `begin` record first and an `end` record last.
//!
//! Each record is a whole JSON document on one line, so a stream can be filtered with `jq -c
//! 'select(.type == "code_object")'` or `grep '"type":"verdict"'` without reading a whole
//! snapshot into memory. The records carry the snapshot's and the check document's own types
//! (docs/schema.md): a file (without its code objects), each code object with its file's path
//! and its URI, each finding and problem; a check's GPUs and each verdict with its install and
//! GPU. Records come in the documents' order, so the same result gives the same bytes.

use std::io::Write;

use serde::Serialize;

use crate::check::devices::Device;
use crate::check::{CheckReport, GpuReport, Outcome, Status, Verdict};
use crate::model::{
    Artifact, CodeObjectRecord, FileRecord, Finding, KpackRef, Problem, RelPath, Snapshot, Summary, Tool,
};

use crate::parse::magic::Kind;

use super::uris::code_object_uri;

/// One line of `--format jsonl`.
#[derive(Serialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Record<'a> {
    /// First: what wrote the stream and what it covers.
    Begin(Begin<'a>),
    /// A file holding device code or GPU data (its code objects follow as their own records).
    File(FileLine<'a>),
    /// A code object, with its file's path.
    CodeObject(CodeObjectLine<'a>),
    /// A way the install is broken as shipped.
    Finding(&'a Finding),
    /// A file that could not be read in full.
    Problem(&'a Problem),
    /// `check`: a GPU in an install, with its worst status.
    Gpu(GpuLine<'a>),
    /// `check`: one library's verdict for one GPU.
    Verdict(VerdictLine<'a>),
    /// Last: the totals (`scan`) or the outcome (`check`).
    End(End<'a>),
}

/// The first record.
#[derive(Serialize)]
pub struct Begin<'a> {
    /// `scan` or `check`.
    pub command: &'static str,
    /// The version of the JSON document the records come from (`scan`: the snapshot's).
    pub schema_version: u32,
    pub tool: &'a Tool,
    pub roots: &'a [String],
}

/// A file, as the snapshot records it, less its code objects.
#[derive(Serialize)]
pub struct FileLine<'a> {
    #[serde(flatten)]
    pub path: &'a RelPath,
    pub kind: Kind,
    pub size: u64,
    pub bundles: u64,
    /// How many code object records follow for it.
    pub code_objects: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<&'a Artifact>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kpack_ref: Option<&'a KpackRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hard_link_of: Option<&'a RelPath>,
}

/// A code object and the file it is in.
#[derive(Serialize)]
pub struct CodeObjectLine<'a> {
    pub file: &'a RelPath,
    #[serde(flatten)]
    pub object: &'a CodeObjectRecord,
    /// `file://PATH#offset=N&size=M` when a range of a file on disk is the object (`uris`).
    pub uri: Option<String>,
}

/// A GPU of a check, in one install.
#[derive(Serialize)]
pub struct GpuLine<'a> {
    pub install: &'a str,
    pub device: &'a Device,
    pub status: Status,
    pub hints: &'a [String],
    pub warnings: &'a [String],
}

/// One verdict, with the install and GPU it is for.
#[derive(Serialize)]
pub struct VerdictLine<'a> {
    pub install: &'a str,
    /// The GPU's index among those checked.
    pub gpu: u32,
    /// The target ID the runtime treats the GPU as.
    pub target: &'a str,
    #[serde(flatten)]
    pub verdict: &'a Verdict,
}

/// The last record.
#[derive(Serialize)]
#[serde(untagged)]
pub enum End<'a> {
    /// `scan`: the snapshot's totals.
    Scan { summary: &'a Summary },
    /// `check`: the overall outcome.
    Check { outcome: Outcome },
}

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
    let problems = report.problems.iter().map(Record::Problem);
    let end = Record::End(End::Check { outcome: report.outcome });
    let all = std::iter::once(begin).chain(gpus).chain(problems).chain(std::iter::once(end));
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
