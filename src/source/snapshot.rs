//! Saved snapshots: what a `diff` side names (a snapshot to read, a tree or package to scan, or
//! neither), and reading a snapshot back, refusing anything that is not one.
//!
//! A snapshot may be plain UTF-8 (a byte-order mark allowed), UTF-16 with its byte-order mark
//! (what PowerShell's `>` writes), or compressed whole with gzip, zstd or xz. A regular file
//! that is none of these and that the scanner reads nothing from (text, unknown bytes) is
//! refused with a reason: scanning it would give an empty install, and a diff against an empty
//! install reads as "lost everything".

use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::Context;

use crate::model;
use crate::parse::magic::{classify, looks_like_text, Kind};
use crate::vocab::codec::Codec;

/// What one side of `diff` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideKind {
    /// A saved snapshot, to read.
    Snapshot,
    /// A folder, package, image or library, to scan.
    Scan,
    /// A file that is neither: why.
    Neither(String),
}

/// The most a compressed snapshot may inflate to (a snapshot of the largest ROCm trees is tens
/// of MB).
const MAX_SNAPSHOT: u64 = 2 << 30;

const UTF16_LE: &[u8] = b"\xff\xfe";
const UTF16_BE: &[u8] = b"\xfe\xff";

/// The codec a whole file is compressed with, by its magic.
fn whole_file_codec(head: &[u8]) -> Option<Codec> {
    classify(head).codec()
}

/// Up to `n` bytes of `path`, inflated when the file is compressed whole.
fn head_of(path: &Path, n: u64) -> std::io::Result<(Vec<u8>, Option<Codec>)> {
    let mut raw = Vec::new();
    File::open(path)?.take(n).read_to_end(&mut raw)?;
    let Some(codec) = whole_file_codec(&raw) else { return Ok((raw, None)) };
    let mut inflated = Vec::new();
    // A stream cut short after its first bytes still tells what it holds.
    let _ = crate::decode::reader(codec, Box::new(File::open(path)?))?.take(n).read_to_end(&mut inflated);
    Ok((inflated, Some(codec)))
}

/// What a side of `diff` is. A folder (or anything not a regular file) is scanned.
pub fn side_kind(path: &Path) -> SideKind {
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return SideKind::Scan;
    }
    let Ok((head, codec)) = head_of(path, 512) else { return SideKind::Scan };
    if head.starts_with(UTF16_LE) || head.starts_with(UTF16_BE) || looks_like_json(&head) {
        return SideKind::Snapshot;
    }
    if codec.is_some() {
        // A compressed tar (a package or an image) is scanned.
        return SideKind::Scan;
    }
    match classify(&head) {
        Kind::Other if looks_like_text(&head) => SideKind::Neither(
            "text, not a JSON snapshot (save one with `gfxscan scan --json -o FILE`)".into(),
        ),
        Kind::Other => SideKind::Neither(
            "neither a gfxscan snapshot nor a file gfxscan reads (a library, code object, bundle, package or image)"
                .into(),
        ),
        _ => SideKind::Scan,
    }
}

/// Reads a JSON snapshot written by `gfxscan scan --json` (plain, UTF-16, or compressed whole),
/// refusing anything that is not a snapshot of the schema this build reads.
pub fn read_snapshot(path: &Path) -> anyhow::Result<model::Snapshot> {
    let text = read_document(path)?;
    parse_snapshot(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// [`read_document`] of a regular file, for a look that must leave it to be read again; `None`
/// for anything else (a pipe gives its bytes once: they are for [`read_snapshot`]) or a file
/// that cannot be read.
pub fn read_regular_document(path: &Path) -> Option<Vec<u8>> {
    std::fs::metadata(path).ok().filter(std::fs::Metadata::is_file)?;
    read_document(path).ok()
}

/// The JSON text of a snapshot file, as [`read_snapshot`] reads it (inflated when compressed
/// whole, UTF-8 when it was UTF-16), not yet parsed.
pub fn read_document(path: &Path) -> anyhow::Result<Vec<u8>> {
    let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let bytes = match whole_file_codec(&raw) {
        Some(codec) => {
            let mut inflated = Vec::new();
            crate::decode::reader(codec, Box::new(raw.as_slice()))
                .and_then(|d| d.take(MAX_SNAPSHOT + 1).read_to_end(&mut inflated))
                .with_context(|| {
                    format!("{}: {} data that does not inflate", path.display(), codec.name())
                })?;
            if inflated.len() as u64 > MAX_SNAPSHOT {
                anyhow::bail!(
                    "{}: inflates past {MAX_SNAPSHOT} bytes: a decompression bomb, or no snapshot gfxscan reads",
                    path.display()
                );
            }
            inflated
        }
        None => raw,
    };
    utf8_of(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The UTF-8 bytes of a file that may be UTF-16 with a byte-order mark.
fn utf8_of(bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    let little = if bytes.starts_with(UTF16_LE) {
        true
    } else if bytes.starts_with(UTF16_BE) {
        false
    } else {
        return Ok(bytes);
    };
    let units = bytes.get(2..).unwrap_or_default().chunks_exact(2).map(|c| {
        let pair = [c[0], c[1]];
        if little {
            u16::from_le_bytes(pair)
        } else {
            u16::from_be_bytes(pair)
        }
    });
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map(String::into_bytes)
        .map_err(|e| format!("UTF-16 text that does not decode ({e}): not a gfxscan snapshot"))
}

/// A snapshot from JSON bytes (a UTF-8 byte-order mark allowed), or why it is not one.
pub fn parse_snapshot(text: &[u8]) -> Result<model::Snapshot, String> {
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err("empty: not a gfxscan snapshot".into());
    }
    // The common case in one pass: a snapshot of a version this build reads.
    if let Ok(snap) = serde_json::from_slice::<model::Snapshot>(text) {
        if snap.tool.name == "gfxscan" && model::READS.contains(&snap.schema_version) {
            return Ok(snap);
        }
    }
    // Anything else is said for what it is. The fields that say what the document is, read first without building a tree of the
    // whole (a snapshot of a large install is tens of MB: a `Value` of it costs several times
    // that); the tree is built only to explain a document that is not even an object.
    let head: Head = match serde_json::from_slice(text) {
        Ok(h) => h,
        Err(e) => {
            let value: serde_json::Value =
                serde_json::from_slice(text).map_err(|e| format!("not a JSON snapshot ({e})"))?;
            if !value.is_object() {
                return Err(format!("JSON {}, not a gfxscan snapshot (an object)", json_kind(&value)));
            }
            return Err(format!("not a JSON snapshot ({e})"));
        }
    };
    let name = head.tool.as_ref().and_then(|t| t.name.as_deref());
    let version = match (name, head.schema_version) {
        (Some("gfxscan"), Some(v)) => v,
        _ => {
            return Err(
                "JSON, but not a gfxscan snapshot (no tool.name \"gfxscan\" and schema_version)".into()
            )
        }
    };
    // A check, diff, merge or prune document has its own schema_version: say what it is first.
    if head.files.is_none() || head.summary.is_none() {
        let what = match (&head.installs, &head.losses, &head.sources, &head.keep) {
            (Some(_), ..) => "a `check` result",
            (_, Some(_), ..) => "a `diff` result",
            (_, _, Some(_), _) => "a `merge` result",
            (.., Some(_)) => "a `scan --keep` (prune) report",
            _ => "a gfxscan document, but not a scan snapshot",
        };
        return Err(format!("{what}: diff and merge take scan snapshots (`gfxscan scan --json -o FILE`)"));
    }
    if !model::READS.iter().any(|r| u64::from(*r) == version) {
        let reads: Vec<String> = model::READS.iter().map(u32::to_string).collect();
        return Err(format!(
            "snapshot schema_version {version}; this gfxscan reads schema_version {} — rescan with this version",
            reads.join(" and ")
        ));
    }
    serde_json::from_slice(text)
        .map_err(|e| format!("snapshot does not match schema_version {version} ({e})"))
}

/// What a document says it is; everything else is skipped unread.
#[derive(serde::Deserialize)]
struct Head {
    tool: Option<HeadTool>,
    schema_version: Option<u64>,
    files: Option<serde::de::IgnoredAny>,
    summary: Option<serde::de::IgnoredAny>,
    installs: Option<serde::de::IgnoredAny>,
    losses: Option<serde::de::IgnoredAny>,
    sources: Option<serde::de::IgnoredAny>,
    keep: Option<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct HeadTool {
    name: Option<String>,
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

/// The snapshot files of a folder (`*.json`, `*.json.zst`, `*.json.xz`), by name.
pub fn snapshots_in(dir: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let p = e.with_context(|| format!("cannot read {}", dir.display()))?.path();
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if [".json", ".json.zst", ".json.xz"].iter().any(|x| name.ends_with(x)) && p.is_file() {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// The inputs that name nothing at all (no file, folder or link by that name): a mistyped
/// argument, to be refused before any work, not a source that could not be read.
pub fn missing(inputs: &[std::path::PathBuf]) -> Vec<&std::path::PathBuf> {
    inputs
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound))
        .collect()
}
