//! Kpack-split host libraries (TheRock): will the runtime find the device code a library's
//! `.rocm_kpack_ref` points at, as the kpack loader looks for it.
//!
//! ROCm/clr `hip_code_object.cpp` `StatCO::digestFatBinary` sends a `HIPK` wrapper to the kpack
//! loader with the wrapper's code-object index; rocm-kpack `runtime/src/loader.cpp` resolves
//! each search path against the library's folder (`resolve_path`), expands `@GFXARCH@` for each
//! architecture clr asks for — the device's ISA, then its generic target (clr
//! `FatBinaryInfo::ExtractKpackBinary` passes `TargetToGeneric` of the ISA second) — with every
//! less specific form of it (`for_each_compatible_target`: features dropped), opens the archives
//! that exist, picks — target by target, in that order — the first archive listing that target,
//! and fetches
//! `<kernel_name>#<index>` from it; a missing archive is `KPACK_ERROR_ARCHIVE_NOT_FOUND`, a
//! missing kernel in the chosen archive is an error too (no other archive is tried).

use std::path::{Component, Path};

use crate::model::{Container, FileRecord, KpackRef, Snapshot};
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::targets::Targets;
use crate::vocab::verdict::{Cost, GapRule, LibraryKind, Verdict};

/// clr `StatCO::digestFatBinary` → kpack loader: no archive, or no kernel in it, for the GPU.
pub const KPACK_GAP: GapRule = GapRule {
    cost: Cost::Fails,
    consequence: "the HIP runtime finds no kpack code for the GPU (kpack loader: archive or kernel not found): registering the library's code fails (clr hip_code_object.cpp: hipErrorInvalidImage, or hipErrorInvalidKernelFile when no device loaded it) and its kernels cannot launch",
};

/// The archives are outside what was scanned: nothing is known of them.
pub const KPACK_OUTSIDE: GapRule = GapRule {
    cost: Cost::NotChecked,
    consequence:
        "not checked: the kpack archives this library loads its device code from lie outside the scanned root",
};

/// The target strings the loader tries for a device: its ISA, then its generic target (with the
/// same features), each most specific first (`for_each_compatible_target`).
pub fn loader_targets(dev: &DeviceTarget, targets: &Targets) -> Vec<String> {
    let mut out = compatible_targets(&dev.target_id);
    // clr passes `TargetToGeneric` of the ISA: only processors its map lists (targets.toml
    // `hip_generic`); the kpack loader then drops features itself, so no feature is refused.
    if let Some(g) = crate::vocab::runtime::fallback_generic(&dev.processor, targets) {
        let features = dev.target_id.split_once(':').map_or(String::new(), |(_, f)| format!(":{f}"));
        out.extend(compatible_targets(&format!("{g}{features}")));
    }
    out
}

/// Every subset of a target ID's features, most features first, in their order
/// (`for_each_compatible_target`).
pub fn compatible_targets(target_id: &str) -> Vec<String> {
    let processor = target_id.split(':').next().unwrap_or(target_id);
    let features: Vec<String> = target_id.split(':').skip(1).map(str::to_string).collect();
    let n = features.len();
    let mut subsets: Vec<Vec<&String>> = (0..1u32 << n)
        .map(|mask| (0..n).filter(|i| mask & (1 << i) != 0).filter_map(|i| features.get(i)).collect())
        .collect();
    // Most features first; among equals, the earlier features kept (sramecc before xnack).
    subsets.sort_by_key(|s| {
        (
            std::cmp::Reverse(s.len()),
            s.iter().map(|f| features.iter().position(|x| x == *f)).collect::<Vec<_>>(),
        )
    });
    subsets
        .into_iter()
        .map(|s| std::iter::once(processor).chain(s.iter().map(|f| f.as_str())).collect::<Vec<_>>().join(":"))
        .collect()
}

/// `dir/rel` with `.` and `..` folded lexically; `None` for an absolute path or one that leaves
/// the root.
fn resolve(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?),
            Component::ParentDir => {
                parts.pop()?;
            }
            _ => {}
        }
    }
    Some(parts.join("/"))
}

/// The archive paths the loader would try for `dev`, in its order.
/// The archive paths under the root the loader would try, in its order, and whether a search
/// path leads out of the root (where the scan cannot see).
fn candidates(r: &KpackRef, dir: &str, tries: &[String]) -> (Vec<String>, bool) {
    let mut out: Vec<String> = Vec::new();
    let mut outside = false;
    for p in &r.search_paths {
        let expanded: Vec<String> = match p.contains("@GFXARCH@") {
            true => tries.iter().map(|t| p.replace("@GFXARCH@", t)).collect(),
            false => vec![p.clone()],
        };
        for e in expanded {
            match resolve(dir, &e) {
                Some(path) if !out.contains(&path) => out.push(path),
                Some(_) => {}
                None => outside = true,
            }
        }
    }
    (out, outside)
}

/// True when a kpack kernel is for `target` as the loader compares a TOC architecture: the
/// same string (its target ID as the code object states it).
fn kernel_for(k: &crate::model::CodeObjectRecord, target: &str) -> bool {
    k.target_id == target
}

/// The verdict for a kpack-split host library `f` shown as `display`.
pub fn verdict(
    snap: &Snapshot,
    f: &FileRecord,
    r: &KpackRef,
    display: String,
    dev: &DeviceTarget,
    targets: &Targets,
) -> Verdict {
    let dir = f.path.path.rsplit_once('/').map_or("", |(d, _)| d);
    let tries = loader_targets(dev, targets);
    let (tried, outside) = candidates(r, dir, &tries);
    let archives: Vec<&FileRecord> = tried
        .iter()
        .filter_map(|p| snap.files.iter().find(|g| g.path.root == f.path.root && &g.path.path == p))
        .filter(|g| g.code_objects.iter().any(|c| c.container() == Container::Kpack))
        .collect();
    let chosen = tries.iter().cloned().find_map(|t| {
        archives.iter().find(|a| a.code_objects.iter().any(|k| kernel_for(k, &t))).map(|a| (*a, t))
    });
    let judged = |rule: Option<&GapRule>, detail: String| {
        Verdict::judged(display.clone(), LibraryKind::HostLibrary, rule, detail, &dev.processor)
    };
    let Some((archive, target)) = chosen else {
        if outside {
            // The archives may lie above the scanned root: not seen is not missing.
            return judged(
                Some(&KPACK_OUTSIDE),
                format!("device code split out to kpack archives outside the scanned root ({}): not checked; scan the install's root", r.search_paths.join(", ")),
            );
        }
        let looked =
            if tried.is_empty() { "its reference names no archive".to_string() } else { tried.join(", ") };
        let mut v = judged(
            Some(&KPACK_GAP),
            format!(
                "device code split out to kpack archives; none for {} is installed (looked for {looked})",
                dev.target_id
            ),
        );
        v.available = archives
            .iter()
            .flat_map(|a| a.code_objects.iter().map(|c| c.target_id.clone()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        return v;
    };
    let key = |i: u64| format!("{}#{i}", r.kernel_name);
    let missing: Vec<String> = r
        .code_objects
        .iter()
        .filter(|&&i| {
            !archive
                .code_objects
                .iter()
                .any(|k| kernel_for(k, &target) && k.stored_id() == Some(key(i).as_str()))
        })
        .map(|&i| key(i))
        .collect();
    let name = archive.path.path.rsplit('/').next().unwrap_or(&archive.path.path);
    let mut v = match missing.first() {
        None => judged(
            None,
            format!(
                "{} code is in {name} ({})",
                dev.processor,
                crate::vocab::units::count(r.code_objects.len() as u64, "code object")
            ),
        ),
        Some(first) => judged(
            Some(&KPACK_GAP),
            format!(
                "{name} holds {target} code, but not {first} ({} of {} code objects missing)",
                missing.len(),
                r.code_objects.len()
            ),
        ),
    };
    v.loads = Some(archive.path.path.clone());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::target_id::Setting;

    #[test]
    fn targets_are_tried_most_specific_first_as_the_loader_does() {
        let dev = DeviceTarget::new("gfx942", Setting::On, Setting::Off);
        // rocm-kpack runtime/src/isa_target_match.h `for_each_compatible_target`.
        assert_eq!(
            compatible_targets(&dev.target_id),
            ["gfx942:sramecc+:xnack-", "gfx942:sramecc+", "gfx942:xnack-", "gfx942"]
        );
        let plain = DeviceTarget::new("gfx1151", Setting::Any, Setting::Any);
        assert_eq!(compatible_targets(&plain.target_id), ["gfx1151"]);
        // clr asks for the device's generic target second (`ExtractKpackBinary`).
        assert_eq!(loader_targets(&plain, &Targets::builtin()), ["gfx1151", "gfx11-generic"]);
    }

    #[test]
    fn search_paths_resolve_against_the_library_folder() {
        assert_eq!(
            resolve("lib", "../.kpack/blas_lib_gfx1151.kpack").as_deref(),
            Some(".kpack/blas_lib_gfx1151.kpack")
        );
        assert_eq!(resolve("", "../x.kpack"), None);
        assert_eq!(resolve("lib", "/opt/x.kpack"), None);
    }
}
