//! Per-arch plugin libraries: host libraries a library loads only on the GPU they are named for,
//! so one is judged per device — the plugin for the device's processor, or its absence — never
//! the plugins of other GPUs. Today one kind: MIOpen's Composable Kernel grouped-convolution
//! plugins, `libMIOpenCKGroupedConv_<processor>.so` (about 370 MB each).
//!
//! MIOpen `src/solver/ck_grouped_conv_lib_loader.cpp` `CKGroupedConvLibLoader::LoadLibrary`
//! builds the name from the device name without its features (`MakeLibraryFilename`), tries
//! `MIOPEN_CK_LIB_PATH`, then the folder of the MIOpen library, then the default search path; a
//! missing plugin is a warning ("CK grouped conv library not found for device …") and its
//! solvers are not applicable (`IsApplicable` is false), so MIOpen picks other solvers.

use crate::model::{FileRecord, Snapshot};
use crate::vocab::target_id::DeviceTarget;
use crate::vocab::verdict::{Cost, GapRule, LibraryKind, Verdict};

/// A kind of per-arch plugin: its file-name prefix, what it is, and what its absence costs.
pub struct PluginKind {
    /// The name between the platform's library prefix and the arch (`MIOpenCKGroupedConv_`).
    pub name: &'static str,
    pub what: &'static str,
    pub gap: GapRule,
}

/// Every kind of per-arch plugin gfxscan knows.
pub const PLUGINS: &[PluginKind] = &[PluginKind {
    name: "MIOpenCKGroupedConv_",
    what: "MIOpen's CK grouped-convolution plugin",
    gap: GapRule {
        cost: Cost::Slower,
        consequence: "MIOpen logs \"CK grouped conv library not found for device <arch>\"; its CK grouped-convolution solvers do not apply and other (often slower) solvers run",
    },
}];

/// The plugin kind and processor of a file of a plugin's name, and whether it is exactly the
/// name the loader opens, `library_prefix + name + arch + dynamic_library_postfix`
/// (`MakeLibraryFilename`): `libMIOpenCKGroupedConv_gfx942.so` on Linux,
/// `MIOpenCKGroupedConv_gfx942.dll` on Windows; a versioned file (`….so.1`) is not.
pub fn plugin_of(file_name: &str) -> Option<(usize, &str, bool)> {
    PLUGINS.iter().enumerate().find_map(|(k, p)| {
        let rest = file_name.strip_prefix("lib").unwrap_or(file_name).strip_prefix(p.name)?;
        let (arch, suffix) = rest.split_once('.')?;
        let exact = match file_name.starts_with("lib") {
            true => suffix == "so",
            false => suffix == "dll",
        };
        arch.starts_with("gfx").then_some((k, arch, exact))
    })
}

/// The verdict for plugins of kind `kind` in folder `dir` of root `root` for `dev`: the plugin
/// named for its processor, judged by `judge` (its code for the device), or a warning.
pub fn verdict(
    snap: &Snapshot,
    root: usize,
    dir: &str,
    kind: usize,
    dev: &DeviceTarget,
    judge: &dyn Fn(&FileRecord) -> Verdict,
) -> Option<Verdict> {
    let p = PLUGINS.get(kind)?;
    let here: Vec<&FileRecord> = snap
        .files
        .iter()
        .filter(|f| f.path.root == root && f.path.path.rsplit_once('/').map_or("", |(d, _)| d) == dir)
        .filter(|f| plugin_of(file_name(&f.path.path)).is_some_and(|(k, _, _)| k == kind))
        .collect();
    let mine: Vec<(&FileRecord, bool)> = here
        .iter()
        .filter_map(|f| {
            let (_, arch, exact) = plugin_of(file_name(&f.path.path))?;
            (arch == dev.processor).then_some((*f, exact))
        })
        .collect();
    if let Some((f, exact)) = mine.iter().find(|(_, e)| *e).or(mine.first()) {
        let mut v = judge(f);
        if !exact {
            // Links are not read: the name MIOpen opens may be a link to this file, or missing.
            let opens = format!("lib{}{}.so", p.name, dev.processor);
            v.detail = format!("{}; MIOpen opens {opens}, which must be a link to this file", v.detail);
        }
        return Some(v);
    }
    let shown = crate::model::RelPath { root, path: dir.to_string(), path_hex: None }.display(&snap.roots);
    let name = format!("lib{}{}.so", p.name, dev.processor);
    let mut v = Verdict::judged(
        format!("{shown}/{name}"),
        LibraryKind::HostLibrary,
        Some(&p.gap),
        format!("{} for {} ({name}) is not installed", p.what, dev.processor),
        &dev.processor,
    );
    v.available = here
        .iter()
        .filter_map(|f| plugin_of(file_name(&f.path.path)).map(|(_, a, _)| a.to_string()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Some(v)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_names_give_their_processor() {
        assert_eq!(plugin_of("libMIOpenCKGroupedConv_gfx942.so"), Some((0, "gfx942", true)));
        assert_eq!(plugin_of("MIOpenCKGroupedConv_gfx1151.dll"), Some((0, "gfx1151", true)));
        // MIOpen opens only the unversioned name.
        assert_eq!(plugin_of("libMIOpenCKGroupedConv_gfx1151.so.1.0"), Some((0, "gfx1151", false)));
        assert_eq!(plugin_of("libMIOpen.so.1"), None);
    }
}
