//! Will the GPU come up at all: does the kernel's amdgpu driver know the target, and does the
//! root hold every firmware file the driver asks for it. Pure: a driver's `.modinfo`, the
//! target's firmware name prefixes (`targets.toml` `firmware`: a graphics IP version such as
//! `gc_11_5_1`, or an ASIC codename such as `vega10`) and a test of which firmware files exist
//! in, a judgement out.
//!
//! The driver declares the files it may request (`MODULE_FIRMWARE`); those named for the
//! target's prefixes are what it asks for that GPU. A driver that declares none for them does
//! not know the GPU (Linux 6.1 and gfx1151: no `gc_11_5_1_*`). Some declared files are asked
//! for only under a condition, or are optional (a missing one does not stop the probe); the
//! rules below are read from Linux 6.12's amdgpu (`drivers/gpu/drm/amd/amdgpu`, functions
//! named at each rule). Only files named for the target's prefixes are judged: an
//! IP-discovery GPU's other blocks (PSP, SDMA, SMU, VCN, display) have firmware named by their
//! own IP versions, which a gfx target does not determine.

use serde::Serialize;

use crate::model::DriverRecord;
use crate::parse::modinfo::ModInfo;
pub use crate::source::kernel::{version, Loader};

/// What a missing declared file costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The probe fails without it.
    Required,
    /// The driver goes on without it, or asks for it only under a condition that is not the
    /// default: why.
    Optional(&'static str),
}

/// What the driver does without `file` (a file name without its folder).
pub fn need(file: &str) -> Need {
    let stem = file.strip_suffix(".bin").unwrap_or(file);
    let ends = |s: &str| stem.ends_with(s);
    if ends("_cap") {
        return Need::Optional(
            "asked for under SR-IOV only, and optional there (amdgpu_psp.c psp_init_cap_microcode)",
        );
    }
    if stem.contains("kicker") || ends("_rlc_1") || ends("_rlc_am4") {
        return Need::Optional("asked for instead of the usual file on some boards only (amdgpu_ucode.c amdgpu_is_kicker_fw; gfx_v9_0.c, gfx_v11_0.c init_microcode)");
    }
    if ends("_ip_discovery") {
        return Need::Optional(
            "its absence is not fatal (amdgpu_discovery.c amdgpu_discovery_set_ip_blocks)",
        );
    }
    if stem.starts_with("gc_") && ends("_toc") {
        return Need::Optional(
            "asked for only with amdgpu.fw_load_type=3 (gfx_v11_0.c, gfx_v12_0.c init_toc_microcode)",
        );
    }
    if ends("_mec2") {
        return Need::Optional(
            "optional for gfx9 and gfx10 (gfx_v9_0.c, gfx_v10_0.c init_cp_compute_microcode)",
        );
    }
    if ["_pfp_2", "_me_2", "_ce_2", "_mec_2", "_mec2_2"].iter().any(|s| ends(s)) {
        return Need::Optional(
            "the newer of two files; the older is taken without it (gfx_v8_0.c gfx_v8_0_init_microcode)",
        );
    }
    // MES on GC 10 (the codename-named GPUs and gc_10_*) runs only with amdgpu.mes=1 (default 0):
    // 6.1's amdgpu_discovery.c amdgpu_discovery_set_mes_ip_blocks adds mes_v10_1 under
    // `if (amdgpu_mes)`; from GC 11 it is always added.
    let mes = ["_mes", "_mes1", "_mes_2"].iter().any(|s| ends(s));
    let gfx10 = stem.starts_with("gc_10_") || !stem.starts_with("gc_");
    if mes && gfx10 {
        return Need::Optional(
            "gfx10's MES runs only with amdgpu.mes=1 (amdgpu_discovery.c amdgpu_discovery_set_mes_ip_blocks)",
        );
    }
    if ends("_dmcu") {
        return Need::Optional(
            "display microcontroller firmware whose absence is ignored (amdgpu_dm.c load_dmcu_fw)",
        );
    }
    Need::Required
}

/// Declared files that stand in for one another: `gc_11_*_mes_2.bin` is asked for first and
/// `gc_11_*_mes.bin` taken without it (amdgpu_mes.c amdgpu_mes_init_microcode).
fn alternative(file: &str) -> Option<String> {
    file.strip_suffix("_mes_2.bin").map(|s| format!("{s}_mes.bin"))
}

/// What the driver and the root say for one target.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DriverOutcome {
    /// No amdgpu module in the roots: whether the GPU comes up is not known from here.
    Unknown,
    /// The driver asks for no firmware of the target's: it does not know the GPU.
    NotKnown,
    /// A file the probe needs is absent: the GPU does not come up.
    Missing,
    /// Every file the probe needs is there.
    Ok,
}

/// The judgement for one target.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct DriverJudgement {
    pub outcome: DriverOutcome,
    /// The kernel release the driver was built for.
    pub release: Option<String>,
    /// The files it asks for the target, as declared (`amdgpu/gc_11_5_1_pfp.bin`).
    pub asked: Vec<String>,
    /// Required files absent.
    pub missing: Vec<String>,
    /// Optional files absent, each with why it does not matter.
    pub optional_absent: Vec<(String, &'static str)>,
}

/// One GPU against one kernel module of the roots (`check`'s driver-and-firmware row).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DriverCheck {
    /// The GPU's target (`gfx1151`).
    pub gpu: String,
    /// The module, joined with its root.
    pub module: String,
    #[serde(flatten)]
    pub judgement: DriverJudgement,
    /// What `dmesg` says when a required file is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dmesg: Option<String>,
}

/// Every checked target against every amdgpu module the snapshot records.
pub fn check_drivers(
    drivers: &[DriverRecord],
    roots: &[String],
    gpus: &[(String, Vec<String>)],
) -> Vec<DriverCheck> {
    let mut out = Vec::new();
    for d in drivers {
        let info =
            ModInfo { vermagic: d.release.clone(), firmware: d.firmware.clone(), ..ModInfo::default() };
        let present = |name: &str| d.present.iter().any(|p| p == name);
        for (gpu, prefixes) in gpus {
            let judgement = judge(Some(&info), prefixes, &present);
            let dmesg = judgement.dmesg();
            out.push(DriverCheck { gpu: gpu.clone(), module: d.path.display(roots), judgement, dmesg });
        }
    }
    out
}

impl DriverJudgement {
    /// The line the kernel logs for the first missing file (drivers/base/firmware_loader/
    /// main.c `_request_firmware`), as `dmesg` shows it.
    pub fn dmesg(&self) -> Option<String> {
        self.missing
            .first()
            .map(|f| format!("amdgpu 0000:…: Direct firmware load for {f} failed with error -2"))
    }
}

/// Judges target `prefixes` (`targets.toml` `firmware`) against `driver` (none: no module in
/// the roots); `present` says whether a declared file (`amdgpu/x.bin`) is in the root, as the
/// kernel's loader would find it (see [`Loader::places`]).
pub fn judge(
    driver: Option<&ModInfo>,
    prefixes: &[String],
    present: &dyn Fn(&str) -> bool,
) -> DriverJudgement {
    let mut j = DriverJudgement {
        outcome: DriverOutcome::Unknown,
        release: None,
        asked: Vec::new(),
        missing: Vec::new(),
        optional_absent: Vec::new(),
    };
    let Some(driver) = driver else { return j };
    j.release = driver.release().map(str::to_string);
    let file_of = |name: &str| name.rsplit('/').next().unwrap_or(name).to_string();
    let ours = |name: &&String| {
        let file = file_of(name);
        prefixes.iter().any(|p| file.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with('_')))
    };
    j.asked = driver.firmware.iter().filter(ours).cloned().collect();
    if j.asked.is_empty() {
        j.outcome = DriverOutcome::NotKnown;
        return j;
    }
    for name in &j.asked {
        if present(name) {
            continue;
        }
        let stands_in = alternative(name).is_some_and(|alt| {
            let full = match name.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/{}", file_of(&alt)),
                None => alt,
            };
            j.asked.contains(&full) && present(&full)
        });
        match need(&file_of(name)) {
            _ if stands_in => j.optional_absent.push((
                name.clone(),
                "the older MES file is taken without it (amdgpu_mes.c amdgpu_mes_init_microcode)",
            )),
            Need::Required => j.missing.push(name.clone()),
            Need::Optional(why) => j.optional_absent.push((name.clone(), why)),
        }
    }
    j.outcome = if j.missing.is_empty() { DriverOutcome::Ok } else { DriverOutcome::Missing };
    j
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn driver(files: &[&str]) -> ModInfo {
        ModInfo {
            vermagic: Some("6.12.117+deb13-amd64 SMP preempt".into()),
            firmware: files.iter().map(|f| format!("amdgpu/{f}")).collect(),
            ..ModInfo::default()
        }
    }

    #[test]
    fn gfx10_mes_is_optional_gfx11_mes_is_not() {
        assert!(matches!(need("sienna_cichlid_mes1.bin"), Need::Optional(_)));
        assert!(matches!(need("navi10_mes.bin"), Need::Optional(_)));
        assert!(matches!(need("gc_10_3_6_mes.bin"), Need::Optional(_)));
        assert_eq!(need("gc_11_0_0_mes1.bin"), Need::Required);
        assert_eq!(need("gc_12_0_1_mes.bin"), Need::Required);
    }

    #[test]
    fn a_driver_without_the_targets_files_does_not_know_it() {
        let d = driver(&["gc_11_0_0_pfp.bin"]);
        let j = judge(Some(&d), &["gc_11_5_1".into()], &|_| true);
        assert_eq!(j.outcome, DriverOutcome::NotKnown);
        assert_eq!(judge(None, &["gc_11_5_1".into()], &|_| true).outcome, DriverOutcome::Unknown);
        // A prefix is a whole name part: gc_11_0_1 is not gc_11_0_10.
        let d = driver(&["gc_11_0_10_pfp.bin"]);
        assert_eq!(judge(Some(&d), &["gc_11_0_1".into()], &|_| true).outcome, DriverOutcome::NotKnown);
    }

    #[test]
    fn required_absent_is_missing_optional_absent_is_named() {
        let d = driver(&[
            "gc_11_5_1_pfp.bin",
            "gc_11_5_1_me.bin",
            "gc_11_5_1_toc.bin",
            "gc_11_5_1_mes_2.bin",
            "gc_11_5_1_mes.bin",
        ]);
        let have =
            |n: &str| !n.ends_with("_me.bin") && !n.ends_with("_toc.bin") && !n.ends_with("_mes_2.bin");
        let j = judge(Some(&d), &["gc_11_5_1".into()], &have);
        assert_eq!(j.outcome, DriverOutcome::Missing);
        assert_eq!(j.missing, ["amdgpu/gc_11_5_1_me.bin"]);
        let optional: Vec<&str> = j.optional_absent.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(optional, ["amdgpu/gc_11_5_1_toc.bin", "amdgpu/gc_11_5_1_mes_2.bin"]);
        assert_eq!(
            j.dmesg().unwrap(),
            "amdgpu 0000:…: Direct firmware load for amdgpu/gc_11_5_1_me.bin failed with error -2"
        );
        // Without the older MES file the newer one is required.
        let j = judge(Some(&d), &["gc_11_5_1".into()], &|n: &str| {
            !n.ends_with("_mes_2.bin") && !n.ends_with("_mes.bin")
        });
        assert_eq!(j.missing, ["amdgpu/gc_11_5_1_mes_2.bin", "amdgpu/gc_11_5_1_mes.bin"]);
    }
}
