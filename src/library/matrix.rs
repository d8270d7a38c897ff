//! The library × target matrix: for each library of each install, which targets it has code
//! or data for, and which it serves only through a generic target.
//!
//! Its libraries are the ones `check` judges (host libraries and standalone bundles, Tensile
//! folders, MIOpen databases, firmware, bitcode, per-arch plugins), so the matrix and the
//! verdicts never disagree about what a library is. A mark says what is there, not whether a
//! GPU will run: that is `check`'s answer.

use std::collections::BTreeSet;

use serde::Serialize;

use super::install::Install;
use super::{plugins, registrable, Library, Model, Place};
use crate::families::cataloger;
use crate::model::{Container, Snapshot};
use crate::vocab::runtime::generic_of;
use crate::vocab::targets::Targets;

/// What one library holds for one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    /// Code or data built for the target itself.
    Own,
    /// Only code for the target's generic target (`gfx11-generic` for gfx1151).
    Generic,
    /// Nothing for it.
    None,
}

/// One library: where it is, what it is, and the processors it has code or data for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LibraryRow {
    /// The install it belongs to.
    pub install: Install,
    /// Its path inside the install (a folder ends in `/`).
    pub library: String,
    /// What it is: `code` (a host library or bundle), or the family of its folder.
    pub layer: String,
    /// Processors it has code or data for, in the natural order.
    pub targets: Vec<String>,
}

impl LibraryRow {
    /// What the library holds for `target`.
    pub fn mark(&self, target: &str, table: &Targets) -> Mark {
        if self.targets.iter().any(|t| t == target) {
            return Mark::Own;
        }
        // Generic code marks only a target the runtime would load it for (`vocab::runtime`).
        match generic_of(target, table) {
            Some(g) if self.targets.iter().any(|t| t == g) => Mark::Generic,
            _ => Mark::None,
        }
    }
}

/// Every library of the model with its targets, by install, then path.
pub fn library_matrix(model: &Model, table: &Targets) -> Vec<LibraryRow> {
    let snap = model.snapshot();
    let places = model.libraries().iter().map(|lib| {
        let (layer, held) = holdings(snap, lib);
        (lib.install.clone(), lib.shown.clone(), layer, held)
    });
    let mut rows: Vec<LibraryRow> = places
        .map(|(install, shown, layer, mut held)| {
            let library = install.inner(&shown).to_string();
            held.sort_by(|a, b| table.cmp(a, b));
            held.dedup();
            LibraryRow { install, library, layer, targets: held }
        })
        .filter(|r| !r.targets.is_empty())
        .collect();
    rows.sort_by(|a, b| (&a.install, &a.library).cmp(&(&b.install, &b.library)));
    rows
}

/// A library's layer, and the processors it holds.
fn holdings(snap: &Snapshot, lib: &Library) -> (String, Vec<String>) {
    match &lib.place {
        Place::Code(i) => {
            let f = &snap.files[*i];
            let mut held = f
                .code_objects
                .iter()
                .filter(|c| registrable(c))
                .map(|c| c.processor.clone())
                .collect::<BTreeSet<_>>();
            // A kpack-split library's code is in the archives under its key (`<name>#<index>`).
            if let Some(r) = &f.kpack_ref {
                let key = format!("{}#", r.kernel_name);
                held.extend(
                    snap.files
                        .iter()
                        .flat_map(|a| &a.code_objects)
                        .filter(|c| c.container() == Container::Kpack)
                        .filter(|c| c.stored_id().is_some_and(|id| id.starts_with(&key)))
                        .map(|c| c.processor.clone()),
                );
            }
            ("code".to_string(), held.into_iter().collect())
        }
        Place::Folder(_, _, fam) => {
            let held = lib
                .files
                .iter()
                .filter_map(|&i| snap.files.get(i))
                .flat_map(|f| {
                    // What a file adds to its library is its cataloger's say (an OpenCL find-DB
                    // adds nothing), the same as in `diff`.
                    let named: Vec<String> = f
                        .artifact
                        .as_ref()
                        .map(|a| {
                            cataloger(*fam)
                                .unit_targets(f, a)
                                .into_iter()
                                .map(|(t, _)| crate::vocab::target_id::processor_of(&t).to_string())
                                .collect()
                        })
                        .unwrap_or_default();
                    named.into_iter().chain(f.code_objects.iter().map(|c| c.processor.clone()))
                })
                .collect::<BTreeSet<_>>();
            (fam.name().to_string(), held.into_iter().collect())
        }
        Place::Plugins(root, dir, kind) => {
            let held = snap
                .files
                .iter()
                .filter(|f| f.path.root == *root && f.path.dir() == dir)
                .filter_map(|f| {
                    plugins::plugin_of(f.path.file_name())
                        .filter(|(k, _, _)| k == kind)
                        .map(|(_, arch, _)| arch.to_string())
                })
                .collect::<BTreeSet<_>>();
            ("plugins".to_string(), held.into_iter().collect())
        }
    }
}
