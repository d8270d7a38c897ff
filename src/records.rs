//! The JSON Lines contract (`--format jsonl`): the records a scan or a check is written as,
//! one a line, `{"type": "...", "data": {...}}` as ripgrep's `--json` writes a search. They
//! borrow the snapshot's and the check document's own types; `report::jsonl` writes them, and
//! `gfxscan schema record` gives their JSON Schema.

use serde::Serialize;

use crate::check::devices::{Device, UnknownGpu};
use crate::check::program::ProgramReport;
use crate::check::{Outcome, Status, Verdict};
use crate::model::{Artifact, CodeObjectRecord, Finding, KpackRef, Problem, RelPath, Summary, Tool};
use crate::parse::magic::Kind;

/// One line of `--format jsonl`.
#[derive(Serialize, schemars::JsonSchema)]
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
    /// `check --exe`, `--pid`: what the program loads and whether it starts (the check
    /// document's `program`).
    Program(&'a ProgramReport),
    /// `check`: a GPU of the KFD topology whose ISA the target table does not know: not checked.
    UnknownGpu(&'a UnknownGpu),
    /// `check --gpu all`: one GPU in one row (the check document's `summary`).
    GpuSummary(&'a crate::check::summary::GpuRow),
    /// `check`: one GPU against one amdgpu driver (the check document's `drivers`).
    Driver(&'a crate::check::driver::DriverCheck),
    /// `check`: an install that exists but was not checked.
    NotChecked(NotChecked<'a>),
    /// Last: the totals (`scan`) or the outcome (`check`).
    End(End<'a>),
}

/// The first record.
#[derive(Serialize, schemars::JsonSchema)]
pub struct Begin<'a> {
    /// `scan` or `check`.
    pub command: &'static str,
    /// The version of the JSON document the records come from (`scan`: the snapshot's).
    pub schema_version: u32,
    pub tool: &'a Tool,
    pub roots: &'a [String],
}

/// A file, as the snapshot records it, less its code objects.
#[derive(Serialize, schemars::JsonSchema)]
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
    /// With `--digests`: the file's SHA-256, lower-case hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<&'a String>,
}

/// A code object and the file it is in.
#[derive(Serialize, schemars::JsonSchema)]
pub struct CodeObjectLine<'a> {
    pub file: &'a RelPath,
    #[serde(flatten)]
    pub object: &'a CodeObjectRecord,
    /// `file://PATH#offset=N&size=M` when a range of a file on disk is the object (`uris`).
    pub uri: Option<String>,
}

/// A GPU of a check, in one install.
#[derive(Serialize, schemars::JsonSchema)]
pub struct GpuLine<'a> {
    pub install: &'a str,
    pub device: &'a Device,
    pub status: Status,
    pub hints: &'a [String],
    pub warnings: &'a [String],
}

/// One verdict, with the install and GPU it is for.
#[derive(Serialize, schemars::JsonSchema)]
pub struct VerdictLine<'a> {
    pub install: &'a str,
    /// The GPU's index among those checked.
    pub gpu: u32,
    /// The target ID the runtime treats the GPU as.
    pub target: &'a str,
    #[serde(flatten)]
    pub verdict: &'a Verdict,
}

/// An install left out of a check.
#[derive(Serialize, schemars::JsonSchema)]
pub struct NotChecked<'a> {
    pub install: &'a str,
}

/// The last record.
#[derive(Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum End<'a> {
    /// `scan`: the snapshot's totals.
    Scan { summary: &'a Summary },
    /// `check`: the overall outcome.
    Check { outcome: Outcome },
}
