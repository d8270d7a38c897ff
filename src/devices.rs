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
//! are parsed as libhsakmt does (`topology.c`): exactly three decimal fields `major.minor.step`,
//! major <= 63, minor and step <= 255; anything else makes the runtime fail the node.
//! Reading sysfs is this module's only IO; the parsers are pure.

use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::resolve::{target_id, Setting};
use crate::targets::Targets;

/// KFD's capability bit for SRAM ECC enabled.
pub const HSA_CAP_SRAM_EDCSUPPORTED: u64 = 0x0400_0000;

/// A GPU target with feature settings as far as known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceTarget {
    pub processor: String,
    #[serde(skip)]
    pub sramecc: Setting,
    #[serde(skip)]
    pub xnack: Setting,
    /// Canonical target ID (`gfx90a:sramecc+:xnack-`); unknown features are left out.
    pub target_id: String,
}

impl DeviceTarget {
    fn new(processor: &str, sramecc: Setting, xnack: Setting) -> Self {
        DeviceTarget {
            processor: processor.to_string(),
            sramecc,
            xnack,
            target_id: target_id(processor, sramecc, xnack),
        }
    }
}

/// Parses a target ID as users write it (`gfx1151`, `gfx90a:xnack+`, `gfx906:sramecc-:xnack+`).
pub fn parse_target_id(s: &str, targets: &Targets) -> Result<DeviceTarget, String> {
    let mut parts = s.split(':');
    let processor = parts.next().unwrap_or("");
    let t = targets
        .by_name(processor)
        .ok_or_else(|| format!("unknown GPU target {processor:?} (see `gfxscan targets`)"))?;
    let (mut sramecc, mut xnack) = (Setting::Any, Setting::Any);
    for f in parts {
        let (name, setting) = match (f.strip_suffix('+'), f.strip_suffix('-')) {
            (Some(n), _) => (n, Setting::On),
            (_, Some(n)) => (n, Setting::Off),
            _ => return Err(format!("{s}: feature {f:?} needs + or -")),
        };
        if !t.supports(name) {
            return Err(format!("{s}: {processor} has no {name:?} feature"));
        }
        match name {
            "sramecc" => sramecc = setting,
            _ => xnack = setting,
        }
    }
    Ok(DeviceTarget::new(&t.name, sramecc, xnack))
}

/// A `gfx_target_version` as its `(major, minor, stepping)`.
pub fn split_version(v: u32) -> (u32, u32, u32) {
    (v / 10000, v / 100 % 100, v % 100)
}

/// The processor name of an ISA version: `gfx` + decimal major + hex minor + hex stepping.
pub fn version_name((major, minor, step): (u32, u32, u32)) -> String {
    format!("gfx{major}{minor:x}{step:x}")
}

/// Parses an `HSA_OVERRIDE_GFX_VERSION` value as libhsakmt does.
pub fn parse_override(value: &str) -> Result<(u32, u32, u32), String> {
    let fields: Vec<&str> = value.split('.').collect();
    let [a, b, c] = fields.as_slice() else {
        return Err(format!("{value:?} is not major.minor.stepping (three numbers)"));
    };
    let num =
        |s: &str| s.parse::<u32>().ok().filter(|_| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    let (Some(major), Some(minor), Some(step)) = (num(a), num(b), num(c)) else {
        return Err(format!("{value:?}: each of major.minor.stepping must be a decimal number"));
    };
    if major > 63 || minor > 255 || step > 255 {
        return Err(format!("{value:?}: out of range (major <= 63, minor and stepping <= 255)"));
    }
    Ok((major, minor, step))
}

/// The facts of one KFD node's `properties` file that gfxscan uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KfdNode {
    pub gfx_target_version: u32,
    pub capability: u64,
    pub simd_count: u64,
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
            _ => {}
        }
    }
    n
}

/// An override in force on a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Override {
    /// The variable that set it (`HSA_OVERRIDE_GFX_VERSION` or `HSA_OVERRIDE_GFX_VERSION_<n>`).
    pub variable: String,
    pub value: String,
}

/// A GPU to check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Device {
    /// KFD node number, for detected GPUs.
    pub node: Option<u32>,
    /// Where it came from: `kfd` or `--gpu`.
    pub source: String,
    /// What the hardware is.
    pub native: DeviceTarget,
    /// The override in force, if any.
    pub r#override: Option<Override>,
    /// What the runtime will treat it as.
    pub effective: DeviceTarget,
}

/// The environment variables that matter, as read by the caller.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub vars: Vec<(String, String)>,
}

impl Env {
    /// The current process environment's HSA variables.
    pub fn from_process() -> Self {
        Env { vars: std::env::vars().filter(|(k, _)| k.starts_with("HSA_")).collect() }
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
}

/// Applies the override in force for `index` (the per-index variable wins) to a native target.
pub fn apply_override(
    native: DeviceTarget,
    index: u32,
    env: &Env,
    targets: &Targets,
) -> Result<Device, String> {
    let per_node = format!("HSA_OVERRIDE_GFX_VERSION_{index}");
    let chosen = env
        .get(&per_node)
        .map(|v| (per_node.clone(), v))
        .or_else(|| env.get("HSA_OVERRIDE_GFX_VERSION").map(|v| ("HSA_OVERRIDE_GFX_VERSION".to_string(), v)));
    let Some((variable, value)) = chosen else {
        return Ok(Device {
            node: None,
            source: String::new(),
            effective: native.clone(),
            native,
            r#override: None,
        });
    };
    let v = parse_override(value).map_err(|e| format!("{variable}: {e}; the runtime refuses the GPU"))?;
    let version = v.0 * 10000 + v.1 * 100 + v.2;
    let name = targets
        .iter()
        .find(|t| t.gfx_target_version == Some(version))
        .map(|t| t.name.clone())
        .ok_or_else(|| format!("{variable}={value}: no GPU target has ISA version {value} ({}); the runtime reports an unrecognized id", version_name(v)))?;
    let effective = DeviceTarget::new(&name, native.sramecc, native.xnack);
    Ok(Device {
        node: None,
        source: String::new(),
        native,
        r#override: Some(Override { variable, value: value.to_string() }),
        effective,
    })
}

/// The XNACK mode stated by `HSA_XNACK`.
pub fn xnack_from_env(env: &Env) -> Setting {
    match env.get("HSA_XNACK") {
        Some("1") => Setting::On,
        Some("0") => Setting::Off,
        _ => Setting::Any,
    }
}

/// GPUs named on the command line, each with the override that applies to its position.
pub fn from_args(gpus: &[String], env: &Env, targets: &Targets) -> Result<Vec<Device>, String> {
    gpus.iter()
        .enumerate()
        .map(|(i, g)| {
            let native = parse_target_id(g, targets)?;
            let mut d = apply_override(native, i as u32, env, targets)?;
            d.source = "--gpu".into();
            Ok(d)
        })
        .collect()
}

/// GPUs from a KFD topology under `sysfs_root` (`/` on a live system), in node order.
pub fn from_kfd(sysfs_root: &Path, env: &Env, targets: &Targets) -> Result<Vec<Device>, String> {
    let nodes_dir = sysfs_root.join("sys/class/kfd/kfd/topology/nodes");
    let entries = fs::read_dir(&nodes_dir)
        .map_err(|e| format!("{}: {e} (is the amdgpu driver loaded?)", nodes_dir.display()))?;
    let mut nodes: Vec<(u32, KfdNode)> = Vec::new();
    for e in entries.flatten() {
        let Some(n) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let text = fs::read_to_string(e.path().join("properties"))
            .map_err(|err| format!("{}: {err}", e.path().display()))?;
        nodes.push((n, parse_kfd_properties(&text)));
    }
    nodes.sort_by_key(|(n, _)| *n);
    let mut out = Vec::new();
    for (node, props) in nodes.into_iter().filter(|(_, p)| p.gfx_target_version != 0) {
        let name = version_name(split_version(props.gfx_target_version));
        let t = targets
            .iter()
            .find(|t| t.gfx_target_version == Some(props.gfx_target_version))
            .or_else(|| targets.by_name(&name))
            .ok_or_else(|| {
                format!(
                    "KFD node {node}: gfx_target_version {} ({name}) is not in the target table",
                    props.gfx_target_version
                )
            })?;
        let sramecc = match (t.supports("sramecc"), props.capability & HSA_CAP_SRAM_EDCSUPPORTED != 0) {
            (true, true) => Setting::On,
            (true, false) => Setting::Off,
            _ => Setting::Any,
        };
        let xnack = if t.supports("xnack") { xnack_from_env(env) } else { Setting::Any };
        let native = DeviceTarget::new(&t.name, sramecc, xnack);
        let mut d = apply_override(native, node, env, targets)?;
        d.node = Some(node);
        d.source = "kfd".into();
        out.push(d);
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
        for bad in ["10.3", "10.3.0.1", "gfx1030", "10.3.x", "64.0.0", "11.0.256", "", "1..0", "+1.0.0"] {
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
    }
}
