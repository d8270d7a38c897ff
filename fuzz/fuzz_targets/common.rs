//! Helpers shared by the fuzz targets (included with `#[path]`, not a target itself).
#![allow(dead_code)]

use std::sync::OnceLock;

use gfxscan::parse::bundle::{parse_entry_id, Bundles};
use gfxscan::parse::elf::CodeObject;
use gfxscan::parse::ParseError;
use gfxscan::inspect::resolve::resolve_code_object;
use gfxscan::vocab::targets::Targets;

/// The built-in target table, built once per process.
pub fn targets() -> &'static Targets {
    static T: OnceLock<Targets> = OnceLock::new();
    T.get_or_init(Targets::builtin)
}

/// Touches every fact of a parsed code object and resolves it, as the scanner does.
pub fn drive_code_object(co: &CodeObject) {
    let _ = co.kernels();
    let _ = co.header.code_object_version();
    std::hint::black_box(format!("{co:?}"));
    let r = resolve_code_object(co, targets());
    std::hint::black_box(format!("{r:?}"));
}

/// Same, for a code object that may have failed to parse.
pub fn drive_co_result(r: &Result<CodeObject, ParseError>) {
    match r {
        Ok(co) => drive_code_object(co),
        Err(e) => {
            std::hint::black_box(e.to_string());
        }
    }
}

/// Walks every bundle and entry of a region and resolves every code object in it.
pub fn drive_bundles(b: &Bundles) {
    for bundle in &b.bundles {
        if let Some(e) = &bundle.error {
            std::hint::black_box(e.to_string());
        }
        for entry in &bundle.entries {
            let id = parse_entry_id(&entry.table.id);
            let _ = (id.is_host(), id.is_amdgcn());
            if let Some(co) = &entry.code_object {
                drive_co_result(co);
            }
        }
    }
    if let Some(e) = &b.stopped {
        std::hint::black_box(e.to_string());
    }
    std::hint::black_box(format!("{b:?}"));
}
