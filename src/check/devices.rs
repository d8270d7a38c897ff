//! GPUs to check: from `--gpu`, or from the kernel's KFD topology, with HSA_OVERRIDE_GFX_VERSION.
//!
//! KFD (`/sys/class/kfd/kfd/topology/nodes/<n>/properties`) lists one node per agent; a line
//! `gfx_target_version N` gives the ISA (0 for CPU nodes): major = N/10000, minor = N/100 % 100,
//! stepping = N % 100, named `gfx` + decimal major + hex minor + hex stepping (libhsakmt,
//! rocm_agent_enumerator). `capability` bit `HSA_CAP_SRAM_EDCSUPPORTED` (0x04000000, linux
//! `kfd_sysfs.h`) says whether SRAM ECC is on. XNACK is a per-process mode, not a topology fact:
//! `HSA_XNACK=1`/`0` states it, otherwise it stays unknown.
//!
//! `HSA_OVERRIDE_GFX_VERSION` and its per-node form `HSA_OVERRIDE_GFX_VERSION_<node>` (which wins)
//! are read as libhsakmt does (`topology.c` `topology_sysfs_get_node_props`: `snprintf(…,
//! "HSA_OVERRIDE_GFX_VERSION_%d", node_id)` with the KFD node number, then
//! `sscanf(envvar, "%u.%u.%u%c", …) != 3 || major > 63 || minor > 255 || step > 255` fails the
//! node with "HSA_OVERRIDE_GFX_VERSION %s is invalid").
//! Reading sysfs is this module's only IO; the parsers are pure.

use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::vocab::target_id::{parse_target_id, DeviceTarget, Setting};
use crate::vocab::targets::Targets;
use crate::vocab::targets::{split_version, version_name};

/// KFD's capability bit for SRAM ECC enabled.
pub const HSA_CAP_SRAM_EDCSUPPORTED: u64 = 0x0400_0000;

/// Reads one `%u` as C's `sscanf` does: leading white space, an optional sign, decimal digits
/// (a minus wraps, as `strtoul` does). Returns the value and the rest.
fn scan_unsigned(s: &str) -> Option<(u64, &str)> {
    let s = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let value =
        s[..digits].bytes().fold(0u64, |v, d| v.saturating_mul(10).saturating_add(u64::from(d - b'0')));
    let value =
        if negative { u64::from((value.min(u64::from(u32::MAX)) as u32).wrapping_neg()) } else { value };
    Some((value, &s[digits..]))
}

/// Parses an `HSA_OVERRIDE_GFX_VERSION` value as libhsakmt does: `sscanf(value, "%u.%u.%u%c")`
/// must fill exactly three fields (so white space may lead each number, nothing may follow the
/// last), then major <= 63, minor and stepping <= 255.
pub fn parse_override(value: &str) -> Result<(u32, u32, u32), String> {
    let three = || -> Option<(u64, u64, u64)> {
        let (a, rest) = scan_unsigned(value)?;
        let (b, rest) = scan_unsigned(rest.strip_prefix('.')?)?;
        let (c, rest) = scan_unsigned(rest.strip_prefix('.')?)?;
        rest.is_empty().then_some((a, b, c))
    };
    let Some((major, minor, step)) = three() else {
        return Err(format!("{value:?} is not major.minor.stepping (three decimal numbers, nothing after)"));
    };
    if major > 63 || minor > 255 || step > 255 {
        return Err(format!("{value:?}: out of range (major <= 63, minor and stepping <= 255)"));
    }
    Ok((major as u32, minor as u32, step as u32))
}

/// The facts of one KFD node's `properties` file that gfxscan uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KfdNode {
    pub gfx_target_version: u32,
    pub capability: u64,
    pub simd_count: u64,
    /// The GPU's unique ID (ROCr's UUID `GPU-<hex>`), 0 when the driver gives none.
    pub unique_id: u64,
    /// PCI bus, device and function: `(bus << 8) | devfn` (the kernel's kfd_topology.c
    /// `location_id`, from `pci_dev_id`); absent from a `properties` file without it.
    pub location_id: Option<u32>,
    /// PCI domain (kfd_topology.c `domain`, `pci_domain_nr`).
    pub domain: u32,
}

impl KfdNode {
    /// The PCI address as lspci, amd-smi and sysfs write it (`0000:03:00.0`).
    pub fn pci_address(&self) -> Option<String> {
        let (bus, devfn) = (self.location_id? >> 8, self.location_id? & 0xff);
        Some(format!("{:04x}:{:02x}:{:02x}.{:x}", self.domain, bus & 0xff, devfn >> 3, devfn & 7))
    }

    /// The GPU's UUID as ROCr names it (see [`rocr_uuid`]).
    pub fn uuid(&self) -> Option<String> {
        rocr_uuid(self.unique_id)
    }
}

/// Parses a KFD `properties` file (`name value` lines).
pub fn parse_kfd_properties(text: &str) -> KfdNode {
    let mut n = KfdNode::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else { continue };
        let v: u64 = v.parse().unwrap_or(0);
        match k {
            "gfx_target_version" => n.gfx_target_version = u32::try_from(v).unwrap_or(0),
            "capability" => n.capability = v,
            "simd_count" => n.simd_count = v,
            "unique_id" => n.unique_id = v,
            "location_id" => n.location_id = u32::try_from(v).ok(),
            "domain" => n.domain = u32::try_from(v).unwrap_or(0),
            _ => {}
        }
    }
    n
}

/// An override in force on a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Override {
    /// The variable that set it (`HSA_OVERRIDE_GFX_VERSION` or `HSA_OVERRIDE_GFX_VERSION_<node>`).
    pub variable: String,
    pub value: String,
}

/// Where a GPU to check came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceSource {
    /// The kernel's KFD topology.
    Kfd,
    /// `--gpu TARGET_ID`.
    #[serde(rename = "--gpu")]
    Gpu,
}

/// A GPU to check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Device {
    /// Its number among the GPUs checked (the device index the application sees, after
    /// `ROCR_VISIBLE_DEVICES` and `HIP_VISIBLE_DEVICES`).
    pub index: u32,
    /// KFD node number, for detected GPUs.
    pub node: Option<u32>,
    pub source: DeviceSource,
    /// What the hardware is.
    pub native: DeviceTarget,
    /// The override in force, if any.
    pub r#override: Option<Override>,
    /// What the runtime will treat it as.
    pub effective: DeviceTarget,
    /// For detected GPUs: the PCI address (`0000:03:00.0`), to join with amd-smi and lspci.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_address: Option<String>,
    /// For detected GPUs with a unique ID: ROCr's UUID (`GPU-0123456789abcdef`), as rocminfo
    /// shows it and `ROCR_VISIBLE_DEVICES` takes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
}

/// A GPU in the KFD topology whose ISA the target table does not know: reported, not checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct UnknownGpu {
    pub node: u32,
    pub gfx_target_version: u32,
    /// The name the runtime would give it (`gfx` + major + hex minor + hex stepping).
    pub name: String,
}

impl std::fmt::Display for UnknownGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KFD node {} · {} (gfx_target_version {})", self.node, self.name, self.gfx_target_version)
    }
}

/// The GPUs of a check.
#[derive(Debug, Clone, Default)]
pub struct Gpus {
    pub devices: Vec<Device>,
    pub unknown: Vec<UnknownGpu>,
}

/// The environment variables that decide what the runtime sees, as read by the caller.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub vars: Vec<(String, String)>,
}

/// Variables read besides every `HSA_*` one.
const RUNTIME_VARS: [&str; 5] = [
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "ROCBLAS_TENSILE_LIBPATH",
    "HIPBLASLT_TENSILE_LIBPATH",
];

impl Env {
    /// The runtime variables among `vars` (a program's environment).
    pub fn from_vars(vars: impl Iterator<Item = (String, String)>) -> Self {
        Env {
            vars: vars.filter(|(k, _)| k.starts_with("HSA_") || RUNTIME_VARS.contains(&k.as_str())).collect(),
        }
    }

    /// A variable's value.
    pub fn get(&self, k: &str) -> Option<&str> {
        self.vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
}

/// Applies the override in force to a native target: for a KFD GPU its node's own variable
/// (`HSA_OVERRIDE_GFX_VERSION_<node>`, which wins), else the global one.
///
/// The effective target's features are its own: sramecc as KFD reports it for a node
/// (`sram_ecc`), else as the native target states it; xnack as stated, else `HSA_XNACK`; and
/// neither where the effective target lacks the feature (ROCr builds the agent's ISA from the
/// overridden version and the node's modes).
pub fn apply_override(
    native: DeviceTarget,
    node: Option<u32>,
    sram_ecc: Option<bool>,
    env: &Env,
    targets: &Targets,
) -> Result<(Option<Override>, DeviceTarget), String> {
    let per_node = node.map(|n| format!("HSA_OVERRIDE_GFX_VERSION_{n}"));
    let chosen = per_node
        .as_ref()
        .and_then(|k| env.get(k).map(|v| (k.clone(), v)))
        .or_else(|| env.get("HSA_OVERRIDE_GFX_VERSION").map(|v| ("HSA_OVERRIDE_GFX_VERSION".to_string(), v)));
    let Some((variable, value)) = chosen else { return Ok((None, native)) };
    let v = parse_override(value).map_err(|e| format!("{variable}: {e}; the runtime refuses the GPU"))?;
    let version = v.0 * 10000 + v.1 * 100 + v.2;
    let name = targets
        .iter()
        .find(|t| t.gfx_target_version == Some(version))
        .map(|t| t.name.clone())
        .ok_or_else(|| format!("{variable}={value}: no GPU target has ISA version {}.{}.{} ({}); the runtime reports an unrecognized id", v.0, v.1, v.2, version_name(v)))?;
    let t = targets.by_name(&name);
    let supports = |f: &str| t.is_some_and(|t| t.supports(f));
    let sramecc = match (supports("sramecc"), sram_ecc) {
        (false, _) => Setting::Any,
        (true, Some(on)) => {
            if on {
                Setting::On
            } else {
                Setting::Off
            }
        }
        (true, None) => native.sramecc,
    };
    let xnack = match (supports("xnack"), native.xnack) {
        (false, _) => Setting::Any,
        (true, Setting::Any) => xnack_from_env(env),
        (true, stated) => stated,
    };
    let effective = DeviceTarget::new(&name, sramecc, xnack);
    Ok((Some(Override { variable, value: value.to_string() }), effective))
}

/// The XNACK mode stated by `HSA_XNACK`.
pub fn xnack_from_env(env: &Env) -> Setting {
    match env.get("HSA_XNACK") {
        Some("1") => Setting::On,
        Some("0") => Setting::Off,
        _ => Setting::Any,
    }
}

/// GPUs named on the command line. `HSA_XNACK` states the XNACK mode of those that have one
/// and do not state it; only the global `HSA_OVERRIDE_GFX_VERSION` applies (the per-node form
/// names a KFD node, which a `--gpu` is not).
pub fn from_args(gpus: &[String], env: &Env, targets: &Targets) -> Result<Gpus, String> {
    let mut devices = Vec::new();
    for (i, g) in gpus.iter().enumerate() {
        let mut native = parse_target_id(g, targets)?;
        let supports_xnack = targets.by_name(&native.processor).is_some_and(|t| t.supports("xnack"));
        if supports_xnack && native.xnack == Setting::Any {
            native = DeviceTarget::new(&native.processor, native.sramecc, xnack_from_env(env));
        }
        let (r#override, effective) = apply_override(native.clone(), None, None, env, targets)?;
        devices.push(Device {
            index: i as u32,
            node: None,
            source: DeviceSource::Gpu,
            native,
            r#override,
            effective,
            pci_address: None,
            uuid: None,
        });
    }
    Ok(Gpus { devices, unknown: Vec::new() })
}

/// The positions `HIP_VISIBLE_DEVICES` (or `CUDA_VISIBLE_DEVICES`) keeps of `count` devices, in
/// its order: indices (or, with `uuids`, `GPU-<hex>` IDs) up to the first entry that names no
/// device, which ends the list. `None` when the variable is unset.
pub fn visible(list: Option<&str>, count: usize, uuids: &[u64]) -> Option<Vec<usize>> {
    let list = list?;
    let mut out = Vec::new();
    for token in list.split(',') {
        let token = token.trim();
        let index = if let Some(hex) = token.strip_prefix("GPU-").or_else(|| token.strip_prefix("gpu-")) {
            u64::from_str_radix(hex, 16).ok().and_then(|id| uuids.iter().position(|u| *u == id && id != 0))
        } else {
            token.parse::<usize>().ok().filter(|i| *i < count)
        };
        match index {
            Some(i) if !out.contains(&i) => out.push(i),
            Some(_) => {}
            None => break,
        }
    }
    Some(out)
}

/// `strtol(token, &end, 0)` that must consume the whole token: an optional sign, then `0x`
/// hex, `0` octal or decimal digits. Values past `i64` saturate, as `strtol` clamps.
fn strtol_whole(token: &str) -> Option<i64> {
    let (negative, rest) = match token.as_bytes().first() {
        Some(b'-') => (true, &token[1..]),
        Some(b'+') => (false, &token[1..]),
        _ => (false, token),
    };
    let (radix, digits) = match rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
        Some(hex) if hex.starts_with(|c: char| c.is_ascii_hexdigit()) => (16, hex),
        _ if rest.len() > 1 && rest.starts_with('0') => (8, &rest[1..]),
        _ => (10, rest),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = i64::from_str_radix(digits, radix).unwrap_or(i64::MAX);
    Some(if negative { -magnitude } else { magnitude })
}

/// A GPU's UUID as ROCr gives it and rocminfo prints it: `GPU-` and its KFD unique ID in 16
/// lower-case hex digits (amd_gpu_agent.cpp `GpuAgent::GetInfo`, `HSA_AMD_AGENT_INFO_UUID`,
/// `std::hex`); none for a unique ID of 0 (the driver gives none: ROCr says `GPU-XX`, and
/// `ROCR_VISIBLE_DEVICES` matches nothing).
pub fn rocr_uuid(unique_id: u64) -> Option<String> {
    (unique_id != 0).then(|| format!("GPU-{unique_id:016x}"))
}

/// The GPUs `ROCR_VISIBLE_DEVICES` keeps, in its order, as ROCr reads it (rocr-runtime
/// `runtime/hsa-runtime/core/runtime/amd_filter_device.cpp` `RvdFilter`): an empty value keeps
/// no GPU, and so does an empty entry (`token.at(0)` throws inside `hsa_init`); tokens are
/// trimmed and upper-cased; at most as many tokens as GPUs are read; a token starting with `G`
/// is a prefix (5 to 20 characters) of one GPU's `GPU-<16 upper-case hex digits>` UUID
/// (`ProcessUuidToken`; a UUID of 0 matches nothing, a prefix of several GPUs names none);
/// any other is an index read by `strtol(…, 0)` into an `int32_t` (so it wraps); the first token that names no GPU, or one
/// already named, ends the list (`BuildUsrDeviceList`). `None` when the variable is unset.
pub fn rocr_visible(list: Option<&str>, uuids: &[u64]) -> Option<Vec<usize>> {
    let list = list?;
    // Tokens are upper-cased before they are matched, and so are the UUIDs.
    let names: Vec<Option<String>> =
        uuids.iter().map(|&u| rocr_uuid(u).map(|n| n.to_ascii_uppercase())).collect();
    let mut out = Vec::new();
    if list.is_empty() {
        return Some(out);
    }
    // `getline` on ',' yields no empty token after a final comma.
    let tokens = list.strip_suffix(',').unwrap_or(list).split(',');
    let tokens: Vec<String> = tokens.map(|t| t.trim().to_ascii_uppercase()).collect();
    if tokens.iter().any(String::is_empty) {
        return Some(Vec::new());
    }
    for token in tokens.into_iter().take(uuids.len()) {
        let index = if token.starts_with('G') {
            let hits: Vec<usize> = (5..=20)
                .contains(&token.len())
                .then(|| {
                    names
                        .iter()
                        .enumerate()
                        .filter(|(_, n)| n.as_ref().is_some_and(|n| n.starts_with(&token)))
                })
                .into_iter()
                .flatten()
                .map(|(i, _)| i)
                .collect();
            (hits.len() == 1).then(|| hits[0])
        } else {
            strtol_whole(&token).and_then(|i| usize::try_from(i as i32).ok()).filter(|&i| i < uuids.len())
        };
        match index {
            Some(i) if !out.contains(&i) => out.push(i),
            _ => break,
        }
    }
    Some(out)
}

/// Reads every KFD node's properties under `sysfs_root`, in node order.
fn read_nodes(sysfs_root: &Path) -> Result<Vec<(u32, KfdNode)>, String> {
    let nodes_dir = sysfs_root.join("sys/class/kfd/kfd/topology/nodes");
    let entries = fs::read_dir(&nodes_dir)
        .map_err(|e| {
            format!(
                "no GPU found: {}: {e} (is the amdgpu driver loaded?); name the GPU to check with --gpu, e.g. --gpu gfx1100 or --gpu \"RX 7900 XTX\" (`gfxscan targets` lists them)",
                nodes_dir.display()
            )
        })?;
    let mut nodes: Vec<(u32, KfdNode)> = Vec::new();
    for e in entries.flatten() {
        let Some(n) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let text = fs::read_to_string(e.path().join("properties"))
            .map_err(|err| format!("{}: {err}", e.path().display()))?;
        nodes.push((n, parse_kfd_properties(&text)));
    }
    nodes.sort_by_key(|(n, _)| *n);
    Ok(nodes)
}

/// The native target of a KFD GPU node, or `None` when the table does not know its ISA.
fn node_target(props: &KfdNode, env: &Env, targets: &Targets) -> Option<DeviceTarget> {
    let name = version_name(split_version(props.gfx_target_version));
    let t = targets
        .iter()
        .find(|t| t.gfx_target_version == Some(props.gfx_target_version))
        .or_else(|| targets.by_name(&name))?;
    let sramecc = match (t.supports("sramecc"), props.capability & HSA_CAP_SRAM_EDCSUPPORTED != 0) {
        (true, true) => Setting::On,
        (true, false) => Setting::Off,
        _ => Setting::Any,
    };
    let xnack = if t.supports("xnack") { xnack_from_env(env) } else { Setting::Any };
    Some(DeviceTarget::new(&t.name, sramecc, xnack))
}

/// GPUs from a KFD topology under `sysfs_root` (`/` on a live system), in node order, as the
/// application sees them: `ROCR_VISIBLE_DEVICES` picks among the GPU nodes, then
/// `HIP_VISIBLE_DEVICES` (or `CUDA_VISIBLE_DEVICES`) among those. A GPU whose ISA the table
/// lacks is listed as unknown; the others are still checked.
pub fn from_kfd(sysfs_root: &Path, env: &Env, targets: &Targets) -> Result<Gpus, String> {
    let gpus: Vec<(u32, KfdNode)> =
        read_nodes(sysfs_root)?.into_iter().filter(|(_, p)| p.gfx_target_version != 0).collect();
    let uuids: Vec<u64> = gpus.iter().map(|(_, p)| p.unique_id).collect();
    let mut order: Vec<usize> =
        rocr_visible(env.get("ROCR_VISIBLE_DEVICES"), &uuids).unwrap_or_else(|| (0..gpus.len()).collect());
    let hip = env.get("HIP_VISIBLE_DEVICES").or_else(|| env.get("CUDA_VISIBLE_DEVICES"));
    let seen: Vec<u64> = order.iter().map(|&i| uuids[i]).collect();
    if let Some(keep) = visible(hip, order.len(), &seen) {
        order = keep.into_iter().map(|i| order[i]).collect();
    }
    let mut out = Gpus::default();
    for i in order {
        let (node, props) = gpus[i];
        let name = version_name(split_version(props.gfx_target_version));
        // libhsakmt applies an override to any GPU node, known or not (topology.c
        // `topology_sysfs_get_node_props`): a GPU the table lacks runs as the override says.
        let native = node_target(&props, env, targets)
            .unwrap_or_else(|| DeviceTarget::new(&name, Setting::Any, Setting::Any));
        let sram_ecc = props.capability & HSA_CAP_SRAM_EDCSUPPORTED != 0;
        let (r#override, effective) =
            apply_override(native.clone(), Some(node), Some(sram_ecc), env, targets)?;
        if r#override.is_none() && targets.by_name(&native.processor).is_none() {
            out.unknown.push(UnknownGpu { node, gfx_target_version: props.gfx_target_version, name });
            continue;
        }
        let index = (out.devices.len() + out.unknown.len()) as u32;
        out.devices.push(Device {
            index,
            node: Some(node),
            source: DeviceSource::Kfd,
            native,
            r#override,
            effective,
            pci_address: props.pci_address(),
            uuid: props.uuid(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_as_libhsakmt_does() {
        assert_eq!(parse_override("10.3.0"), Ok((10, 3, 0)));
        assert_eq!(parse_override("9.0.10"), Ok((9, 0, 10)));
        // sscanf's %u skips white space and takes a sign before each number.
        assert_eq!(parse_override(" 10.3.0"), Ok((10, 3, 0)));
        assert_eq!(parse_override("+11. 0.0"), Ok((11, 0, 0)));
        assert_eq!(parse_override("-0.0.0"), Ok((0, 0, 0)));
        for bad in [
            "10.3", "10.3.0.1", "gfx1030", "10.3.x", "64.0.0", "11.0.256", "", "1..0", "10.3.0 ", "-1.0.0",
            "10 .3.0", "0x10.3.0",
        ] {
            assert!(parse_override(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn versions_name_processors() {
        assert_eq!(version_name(split_version(90010)), "gfx90a");
        assert_eq!(version_name(split_version(90012)), "gfx90c");
        assert_eq!(version_name(split_version(110501)), "gfx1151");
    }

    #[test]
    fn target_ids_from_users() {
        let t = Targets::builtin();
        assert_eq!(parse_target_id("gfx90a:xnack+", &t).map(|d| d.target_id), Ok("gfx90a:xnack+".into()));
        assert_eq!(
            parse_target_id("gfx906:xnack-:sramecc+", &t).map(|d| d.target_id),
            Ok("gfx906:sramecc+:xnack-".into())
        );
        assert!(parse_target_id("gfx1100:xnack+", &t).is_err());
        assert!(parse_target_id("gfx9999", &t).is_err());
    }

    #[test]
    fn kfd_properties() {
        let p = parse_kfd_properties(
            "cpu_cores_count 0\nsimd_count 192\ngfx_target_version 90010\ncapability 67113600\n",
        );
        assert_eq!((p.gfx_target_version, p.simd_count), (90010, 192));
        assert_ne!(p.capability & HSA_CAP_SRAM_EDCSUPPORTED, 0);
        assert_eq!((p.pci_address(), p.uuid()), (None, None), "no location_id, no unique_id");
    }

    /// A node as the kernel writes it (kfd_topology.c `node_show`): `location_id` is
    /// `pci_dev_id` = bus << 8 | devfn, `domain` the PCI domain; the UUID is ROCr's.
    #[test]
    fn a_node_gives_its_pci_address_and_uuid() {
        // Bus 0xc3, device 0x1f, function 2; domain 1.
        let location = (0xc3 << 8) | (0x1f << 3) | 2;
        let text = format!("gfx_target_version 110000\nlocation_id {location}\ndomain 1\nunique_id 17\n");
        let p = parse_kfd_properties(&text);
        assert_eq!(p.pci_address().as_deref(), Some("0001:c3:1f.2"));
        assert_eq!(p.uuid().as_deref(), Some("GPU-0000000000000011"));
        let p = parse_kfd_properties("gfx_target_version 110000\nunique_id 16045690984503098046\n");
        assert_eq!(p.uuid().as_deref(), Some("GPU-deadbeefcafebabe"), "lower case, as rocminfo prints");
    }
}
