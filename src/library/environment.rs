//! The Tensile folders a program's environment names (`ROCBLAS_TENSILE_LIBPATH`,
//! `HIPBLASLT_TENSILE_LIBPATH`), standing in for an install's own; and with them in place,
//! every library's verdict for a device, by install: the per-install answer `check`, `merge`
//! and `explain` read ([`library_verdicts`]).

use std::collections::{BTreeMap, BTreeSet};

use super::install::Install;
use super::{family_library, placeholders, Model, Place};
use crate::families::{tensile, Library};
use crate::model::{Component, Family};
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::verdict::{LibraryKind, Verdict};

/// A Tensile library folder an environment variable names (`ROCBLAS_TENSILE_LIBPATH`,
/// `HIPBLASLT_TENSILE_LIBPATH`): the library loads it instead of the folder beside it
/// (rocBLAS tensile_host.cpp `determine_tensile_base_path` uses the variable verbatim, then its
/// `<arch>` subfolder when one exists; hipBLASLt tensile_host.cpp `initialize` likewise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibPath {
    pub variable: String,
    /// The library that loads the folder.
    pub component: Component,
    /// The folder as scanned (root index and path inside it), or `None` when it does not exist.
    pub place: Option<(usize, String)>,
    /// The value as set.
    pub value: String,
}

/// The verdict for a Tensile folder an environment variable puts in place of an install's own.
fn libpath_verdict(model: &Model, lp: &LibPath, own: &str, dev: &DeviceTarget, targets: &Targets) -> Verdict {
    let mut v = match &lp.place {
        Some((root, dir)) => {
            let lib = Library { component: Some(lp.component), ..family_library(model, *root, dir, targets) };
            placeholders::held_to_index(tensile::verdict(&lib, dev), *root, &model.snapshot().findings)
        }
        None => {
            let rule = tensile::missing_folder_gap(lp.component, &dev.processor, targets);
            let mut v = Verdict::judged(
                format!("{}/", lp.value.trim_end_matches('/')),
                LibraryKind::Family(Family::Tensile),
                Some(rule),
                format!("{}={} does not exist", lp.variable, lp.value),
                &dev.processor,
            );
            v.component = Some(lp.component);
            v
        }
    };
    v.detail = format!("{} (set by {}, in place of {own}); {}", v.library, lp.variable, v.detail);
    v
}

/// The Tensile folders the environment's libpaths stand in for, by component: those of a
/// component some libpath names, other than the libpath folders themselves.
struct Stand<'a> {
    model: &'a Model,
    libpaths: &'a [LibPath],
    targets: &'a Targets,
}

impl Stand<'_> {
    /// The libpaths that name the folder `(root, dir)`.
    fn named_for<'s>(&'s self, root: usize, dir: &'s str) -> impl Iterator<Item = &'s LibPath> + 's {
        self.libpaths.iter().filter(move |lp| lp.place.as_ref().is_some_and(|(r, d)| *r == root && d == dir))
    }

    /// True when `(root, dir)` is a folder an environment variable names.
    fn is_libpath(&self, root: usize, dir: &str) -> bool {
        self.named_for(root, dir).next().is_some()
    }

    /// The libpath standing in for the install's own Tensile folder `(root, dir)`, if any.
    fn for_folder(&self, root: usize, dir: &str) -> Option<&LibPath> {
        let component = tensile::component_of(&family_library(self.model, root, dir, self.targets));
        self.libpaths.iter().find(|lp| lp.component == component && !self.is_libpath(root, dir))
    }
}

/// Every library's verdict for one target, by install, in a stable order. A Tensile folder
/// an environment variable names stands in for the install's own folder of that component.
pub fn library_verdicts(
    model: &Model,
    dev: &DeviceTarget,
    targets: &Targets,
) -> BTreeMap<Install, Vec<Verdict>> {
    let mut out: BTreeMap<Install, Vec<Verdict>> = BTreeMap::new();
    let listed = model.libraries();
    let libpaths = model.context().libpaths.as_slice();
    let stand = Stand { model, libpaths, targets };
    // Components whose install folder some libpath replaces.
    let replaced: BTreeSet<Component> = listed
        .iter()
        .filter_map(|l| match &l.place {
            Place::Folder(r, d, Family::Tensile) => stand.for_folder(*r, d).map(|lp| lp.component),
            _ => None,
        })
        .collect();
    for lib in listed {
        let v = match &lib.place {
            Place::Folder(root, dir, Family::Tensile) if !libpaths.is_empty() => {
                if stand.named_for(*root, dir).any(|lp| replaced.contains(&lp.component)) {
                    // A folder named by the environment is judged where it stands in.
                    continue;
                }
                match stand.for_folder(*root, dir) {
                    Some(lp) => Some(libpath_verdict(model, lp, &lib.shown, dev, targets)),
                    None => model.judge(lib, dev, targets),
                }
            }
            _ => model.judge(lib, dev, targets),
        };
        let Some(v) = v else { continue };
        out.entry(lib.install.clone()).or_default().push(v);
    }
    for verdicts in out.values_mut() {
        verdicts.sort_by_key(|v| (v.kind, v.library.clone()));
    }
    out
}
