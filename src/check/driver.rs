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
pub use crate::source::kernel::{version, Loader, RunningKernel};

/// What a missing declared file costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// The probe fails without it.
    Required,
    /// The driver goes on without it, or asks for it only under a condition that is not the
    /// default: why.
    Optional(&'static str),
}

/// The driver's parameters that change which files it asks for (amdgpu_drv.c
/// `module_param_named`): their defaults, or those a loaded driver runs with
/// (`/sys/module/amdgpu/parameters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Settings {
    /// `amdgpu.mes` (default 0): not 0 runs MES on GC 10 too (Linux 6.1), and asks for its
    /// `_mes.bin`.
    pub mes: i64,
    /// `amdgpu.mes_kiq` (default 0): with `mes`, GC 10 also asks for its `_mes1.bin`.
    pub mes_kiq: i64,
    /// `amdgpu.uni_mes` (default 1): on GPUs for which the driver declares `_uni_mes.bin`, that
    /// file is asked for in place of `_mes.bin` and `_mes1.bin` (amdgpu_discovery.c
    /// `amdgpu_discovery_set_mes_ip_blocks`, amdgpu_mes.c `amdgpu_mes_init_microcode`).
    pub uni_mes: i64,
    /// `amdgpu.fw_load_type` (default -1): 3 loads GC 11 and 12 firmware through the RLC
    /// backdoor, which asks for `gc_*_toc.bin` (amdgpu_ucode.c `amdgpu_ucode_get_load_type`).
    pub fw_load_type: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { mes: 0, mes_kiq: 0, uni_mes: 1, fw_load_type: -1 }
    }
}

impl Settings {
    /// The settings of a loaded driver: its parameters by name (`mes`, `uni_mes`,
    /// `fw_load_type`), each as sysfs shows it; an absent or unreadable one keeps its default.
    pub fn from_parameters(params: &[(String, String)]) -> Settings {
        let mut s = Settings::default();
        for (name, value) in params {
            let Ok(v) = value.trim().parse::<i64>() else { continue };
            match name.as_str() {
                "mes" => s.mes = v,
                "mes_kiq" => s.mes_kiq = v,
                "uni_mes" => s.uni_mes = v,
                "fw_load_type" => s.fw_load_type = v,
                _ => {}
            }
        }
        s
    }
}

/// What the driver of kernel `version` (`major.minor`) does without `file` (a file name without
/// its folder), run with `settings`.
pub fn need(file: &str, settings: &Settings, version: (u32, u32)) -> Need {
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
    // 6.1 maps fw_load_type=3 to PSP loading: the RLC backdoor (and its TOC) came later, held
    // here to start at 6.2 (6.12's amdgpu_ucode_get_load_type has it).
    let backdoor = settings.fw_load_type == 3 && version >= (6, 2);
    if stem.starts_with("gc_") && ends("_toc") && !backdoor {
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
    // MES on GC 10 (the codename-named GPUs and gc_10_*): 6.1's amdgpu_discovery.c
    // amdgpu_discovery_set_mes_ip_blocks adds mes_v10_1 under `if (amdgpu_mes)` (default 0),
    // and asks for the KIQ pipe's `_mes1` only `if (amdgpu_mes_kiq)` too; 6.12 adds it for GC 10
    // never. From GC 11 it is always added.
    let gfx10 = stem.starts_with("gc_10_") || !stem.starts_with("gc_");
    let runs = settings.mes != 0 && version < (6, 12);
    let mes1 = ends("_mes1") && !(runs && settings.mes_kiq != 0);
    if gfx10 && (mes1 || ((ends("_mes") || ends("_mes_2")) && !runs)) {
        return Need::Optional(
            "gfx10's MES runs only with amdgpu.mes=1 before Linux 6.12, its KIQ file only with amdgpu.mes_kiq=1 too (amdgpu_discovery.c amdgpu_discovery_set_mes_ip_blocks)",
        );
    }
    // navi12 and cyan_skillfish read their IP discovery table from the GPU and ask for gpu_info
    // only without one (amdgpu_device.c amdgpu_device_parse_gpu_info_fw: 6.1 returns first
    // thing when there is one, 6.12 per chip); older kernels asked navi12's always: before 6.1
    // it is held required.
    let navi12 = stem == "navi12_gpu_info" && version >= (6, 1);
    if navi12 || stem == "cyan_skillfish_gpu_info" {
        return Need::Optional(
            "asked for only when the GPU's IP discovery table cannot be read (amdgpu_device.c amdgpu_device_parse_gpu_info_fw)",
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

/// Why declared file `name` is not asked for under `settings`, given every file the driver
/// declares and which are present: MES files of one of the two schemes a GPU may run
/// (amdgpu_mes.c `amdgpu_mes_init_microcode`: `_uni_mes.bin` with `amdgpu.uni_mes=1` where the
/// driver has it, else `_mes.bin` and `_mes1.bin`), and GC 11's older `_mes.bin` beside a
/// present `_mes_2.bin`.
fn not_asked(
    name: &str,
    declared: &[String],
    settings: &Settings,
    present: &dyn Fn(&str) -> bool,
) -> Option<&'static str> {
    let uni = |prefix: &str| declared.iter().any(|d| d == &format!("{prefix}_uni_mes.bin"));
    // GC 11 asks for `_mes_2.bin` first and for `_mes.bin` only without it.
    if let Some(prefix) = name.strip_suffix("_mes.bin") {
        let newer = format!("{prefix}_mes_2.bin");
        if declared.contains(&newer) && present(&newer) {
            return Some(
                "asked for only when the _mes_2 file is absent (amdgpu_mes.c amdgpu_mes_init_microcode)",
            );
        }
    }
    if let Some(prefix) = name.strip_suffix("_mes.bin").or_else(|| name.strip_suffix("_mes1.bin")) {
        if uni(prefix) && settings.uni_mes != 0 {
            return Some("asked for only with amdgpu.uni_mes=0: by default the driver asks for the _uni_mes file (amdgpu_mes.c amdgpu_mes_init_microcode)");
        }
    }
    if let Some(prefix) = name.strip_suffix("_uni_mes.bin") {
        if settings.uni_mes == 0 && uni(prefix) {
            return Some("not asked for with amdgpu.uni_mes=0: the _mes and _mes1 files are (amdgpu_mes.c amdgpu_mes_init_microcode)");
        }
    }
    None
}

/// What the driver and the root say for one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DriverOutcome {
    /// No amdgpu module in the roots: whether the GPU comes up is not known from here.
    Unknown,
    /// The kernel has no amdgpu driver at all.
    NoDriver,
    /// The driver asks for no firmware of the target's: it does not know the GPU.
    NotKnown,
    /// A file the probe needs is absent: the GPU does not come up.
    Missing,
    /// Every file the probe needs is there.
    Ok,
}

impl DriverOutcome {
    /// The GPU does not come up: the driver does not know it, or lacks a file it needs.
    pub fn down(&self) -> bool {
        matches!(self, DriverOutcome::NoDriver | DriverOutcome::NotKnown | DriverOutcome::Missing)
    }
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

/// Why a GPU's driver and firmware were not judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Unjudged {
    /// No amdgpu module in the roots (an install such as /opt/rocm holds none).
    NoModuleInRoots,
    /// The running kernel's `lib/modules/<release>` holds no amdgpu driver (in a container,
    /// the host's modules are not there).
    NoModuleForRunningKernel,
    /// The amdgpu module could not be read.
    ModuleUnreadable,
    /// A built-in driver asks for its firmware before the root is mounted: from the initramfs
    /// or the kernel image (`CONFIG_EXTRA_FIRMWARE`); the root's files, all there, are copies
    /// gfxscan cannot tell are in the initramfs (firmware_loader/main.c
    /// `fw_get_filesystem_firmware` waits for the initramfs only).
    BuiltInNeedsInitramfs,
    /// The target table names no firmware for the target (`targets.toml` `firmware`).
    NoFirmwareNames,
}

impl Unjudged {
    /// Why, in words.
    pub fn words(self) -> &'static str {
        match self {
            Unjudged::NoModuleInRoots => "no amdgpu kernel module in the roots (check without ROOT judges this machine's kernel; a ROOT that holds lib/modules is judged too)",
            Unjudged::NoModuleForRunningKernel => "no amdgpu driver for the running kernel under lib/modules (in a container the host's modules are not visible)",
            Unjudged::ModuleUnreadable => "its amdgpu module could not be read",
            Unjudged::BuiltInNeedsInitramfs => "amdgpu is built into this kernel: it loads its firmware from the initramfs before the root is mounted, and the initramfs is not read here (every file it asks for is in the root)",
            Unjudged::NoFirmwareNames => "the target table names no firmware for this target",
        }
    }
}

/// One GPU against one amdgpu driver (`check`'s driver-and-firmware row).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DriverCheck {
    /// The GPU's target (`gfx1151`).
    pub gpu: String,
    /// The module, joined with its root (or the running system's); none when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Built into the kernel: `module` is its `modules.builtin.modinfo`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub built_in: bool,
    #[serde(flatten)]
    pub judgement: DriverJudgement,
    /// For `unknown`: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unjudged: Option<Unjudged>,
    /// What stopped the module's reading, for `module-unreadable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The driver parameters the judgement follows: the defaults, as the system sets them
    /// (`modprobe.d`, the kernel's command line), or the running driver's.
    pub settings: Settings,
    /// The parameters are the running driver's (`/sys/module/amdgpu/parameters`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
    /// What `dmesg` says when a required file is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dmesg: Option<String>,
}

/// The kernel a check judges GPUs against.
#[derive(Debug, Clone, Copy)]
pub enum Kernel<'a> {
    /// The amdgpu drivers of the roots (a snapshot's `drivers`), shown under their roots.
    Roots { drivers: &'a [DriverRecord], roots: &'a [String] },
    /// The running system's (`check` without ROOT).
    Running(&'a RunningKernel),
}

impl Kernel<'_> {
    /// Its amdgpu drivers.
    fn drivers(&self) -> &[DriverRecord] {
        match self {
            Kernel::Roots { drivers, .. } => drivers,
            Kernel::Running(k) => &k.drivers,
        }
    }

    /// A driver's module as shown: under its root, or the running system's.
    fn shown(&self, d: &DriverRecord) -> String {
        match self {
            Kernel::Roots { roots, .. } => d.path.display(roots),
            Kernel::Running(k) => k.system.join(&d.path.path).display().to_string(),
        }
    }

    /// Why there is no driver to judge against.
    fn unjudged(&self) -> Unjudged {
        match self {
            Kernel::Roots { .. } => Unjudged::NoModuleInRoots,
            Kernel::Running(_) => Unjudged::NoModuleForRunningKernel,
        }
    }
}

/// Every target of `gpus` (name, `targets.toml` firmware prefixes) against every amdgpu driver
/// of `kernel`; a target with no driver to judge it against gets one `unknown` row, with why.
pub fn check_drivers(kernel: Kernel, gpus: &[(String, Vec<String>)]) -> Vec<DriverCheck> {
    let row = |gpu: &str, module: Option<&DriverRecord>, judgement: DriverJudgement| DriverCheck {
        gpu: gpu.to_string(),
        module: module.map(|d| kernel.shown(d)),
        built_in: module.is_some_and(|d| d.built_in),
        dmesg: judgement.dmesg(),
        judgement,
        unjudged: None,
        problem: None,
        settings: module.map(|d| Settings::from_parameters(&d.parameters)).unwrap_or_default(),
        running: module.is_some_and(|d| d.parameters_running),
    };
    let settings = Settings::default();
    if kernel.drivers().is_empty() {
        let why = kernel.unjudged();
        let release = match kernel {
            Kernel::Running(k) => k.release.clone(),
            Kernel::Roots { .. } => None,
        };
        let unknown = |(gpu, _): &(String, Vec<String>)| {
            let mut judgement = judge(None, &[], &|_| false, &settings);
            judgement.release = release.clone();
            DriverCheck { unjudged: Some(why), ..row(gpu, None, judgement) }
        };
        return gpus.iter().map(unknown).collect();
    }
    let mut out = Vec::new();
    for d in kernel.drivers() {
        let settings = Settings::from_parameters(&d.parameters);
        for (gpu, prefixes) in gpus {
            out.push(judge_record(d, gpu, prefixes, &settings, &row));
        }
    }
    out
}

/// One GPU (`gpu`, its firmware `prefixes`) against one driver record.
fn judge_record(
    d: &DriverRecord,
    gpu: &str,
    prefixes: &[String],
    settings: &Settings,
    row: &dyn Fn(&str, Option<&DriverRecord>, DriverJudgement) -> DriverCheck,
) -> DriverCheck {
    let info = ModInfo { vermagic: d.release.clone(), firmware: d.firmware.clone(), ..ModInfo::default() };
    let present = |name: &str| d.present.iter().any(|p| p == name);
    let mut judgement = judge(Some(&info), prefixes, &present, settings);
    let mut unjudged = prefixes.is_empty().then_some(Unjudged::NoFirmwareNames);
    if d.absent {
        judgement =
            DriverJudgement { outcome: DriverOutcome::NoDriver, ..judge(None, &[], &present, settings) };
        judgement.release = d.release.clone();
        unjudged = None;
    } else if d.unreadable.is_some() {
        judgement = DriverJudgement { release: d.release.clone(), ..judge(None, &[], &present, settings) };
        unjudged = Some(Unjudged::ModuleUnreadable);
    } else if d.built_in
        && judgement.outcome == DriverOutcome::Ok
        && !judgement.asked.iter().all(|a| d.built_in_firmware.contains(a))
    {
        judgement.outcome = DriverOutcome::Unknown;
        unjudged = Some(Unjudged::BuiltInNeedsInitramfs);
    }
    DriverCheck { unjudged, problem: d.unreadable.clone(), ..row(gpu, Some(d), judgement) }
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
    settings: &Settings,
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
    if prefixes.is_empty() {
        return j;
    }
    let file_of = |name: &str| name.rsplit('/').next().unwrap_or(name).to_string();
    let ours = |name: &&String| {
        let file = file_of(name);
        prefixes.iter().any(|p| file.strip_prefix(p.as_str()).is_some_and(|r| r.starts_with('_')))
    };
    let declared: Vec<String> = driver.firmware.iter().filter(ours).cloned().collect();
    // What it asks for under `settings`; a declared file of the other MES scheme is not.
    let mut skipped = Vec::new();
    for name in declared.iter() {
        match not_asked(name, &declared, settings, present) {
            Some(why) if !present(name) => skipped.push((name.clone(), why)),
            Some(_) => {}
            None => j.asked.push(name.clone()),
        }
    }
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
        match need(&file_of(name), settings, version(driver.release().unwrap_or_default())) {
            _ if stands_in => j.optional_absent.push((
                name.clone(),
                "the older MES file is taken without it (amdgpu_mes.c amdgpu_mes_init_microcode)",
            )),
            Need::Required => j.missing.push(name.clone()),
            Need::Optional(why) => j.optional_absent.push((name.clone(), why)),
        }
    }
    j.optional_absent.extend(skipped);
    j.outcome = if j.missing.is_empty() { DriverOutcome::Ok } else { DriverOutcome::Missing };
    j
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A driver record of 6.12 declaring gc_11_0_0_pfp.bin, present, changed by `edit`.
    fn record(edit: impl Fn(&mut DriverRecord)) -> DriverRecord {
        let mut r = DriverRecord {
            path: crate::model::RelPath::new(0, std::ffi::OsStr::new("lib/modules/6.12.0/amdgpu.ko")),
            release: Some("6.12.0".into()),
            built_in: false,
            absent: false,
            unreadable: None,
            built_in_firmware: Vec::new(),
            firmware_zstd: true,
            firmware_xz: true,
            firmware: vec!["amdgpu/gc_11_0_0_pfp.bin".into()],
            present: vec!["amdgpu/gc_11_0_0_pfp.bin".into()],
            parameters: Vec::new(),
            parameters_running: false,
        };
        edit(&mut r);
        r
    }

    /// A built-in driver whose files are all in the root is not OK: it reads them from the
    /// initramfs; those in the kernel image (`CONFIG_EXTRA_FIRMWARE`) are there for certain.
    #[test]
    fn a_built_in_driver_is_ok_only_with_its_firmware_in_the_kernel() {
        let gpus = vec![("gfx1100".to_string(), vec!["gc_11_0_0".to_string()])];
        let roots = ["/".to_string()];
        let judged = |r: DriverRecord| check_drivers(Kernel::Roots { drivers: &[r], roots: &roots }, &gpus);
        let rows = judged(record(|r| r.built_in = true));
        assert_eq!(
            (rows[0].judgement.outcome, rows[0].unjudged),
            (DriverOutcome::Unknown, Some(Unjudged::BuiltInNeedsInitramfs))
        );
        let rows = judged(record(|r| {
            r.built_in = true;
            r.built_in_firmware = vec!["amdgpu/gc_11_0_0_pfp.bin".into()];
        }));
        assert_eq!(rows[0].judgement.outcome, DriverOutcome::Ok);
        let rows = judged(record(|r| {
            r.built_in = true;
            r.present.clear();
        }));
        assert_eq!(rows[0].judgement.outcome, DriverOutcome::Missing);
    }

    /// Linux 6.1 runs gfx10's MES only with amdgpu.mes set (any value but 0), and its KIQ file
    /// only with amdgpu.mes_kiq too; 6.12 never; navi12's gpu_info is required before 6.1.
    #[test]
    fn gfx10_mes_and_navi12_gpu_info_follow_the_kernel() {
        let mes = Settings { mes: 2, ..Settings::default() };
        assert_eq!(need("navi10_mes.bin", &mes, (6, 1)), Need::Required);
        assert!(matches!(need("sienna_cichlid_mes1.bin", &mes, (6, 1)), Need::Optional(_)));
        let kiq = Settings { mes: 1, mes_kiq: 1, ..Settings::default() };
        assert_eq!(need("sienna_cichlid_mes1.bin", &kiq, (6, 1)), Need::Required);
        assert!(matches!(need("navi10_mes.bin", &kiq, (6, 12)), Need::Optional(_)));
        assert_eq!(need("navi12_gpu_info.bin", &Settings::default(), (5, 15)), Need::Required);
        assert!(matches!(need("navi12_gpu_info.bin", &Settings::default(), (6, 1)), Need::Optional(_)));
        // 6.1 has no RLC backdoor: fw_load_type=3 asks for no TOC there.
        let backdoor = Settings { fw_load_type: 3, ..Settings::default() };
        assert!(matches!(need("gc_11_0_0_toc.bin", &backdoor, (6, 1)), Need::Optional(_)));
    }

    fn driver(files: &[&str]) -> ModInfo {
        ModInfo {
            vermagic: Some("6.12.117+deb13-amd64 SMP preempt".into()),
            firmware: files.iter().map(|f| format!("amdgpu/{f}")).collect(),
            ..ModInfo::default()
        }
    }

    #[test]
    fn gfx10_mes_is_optional_gfx11_mes_is_not() {
        assert!(matches!(need("sienna_cichlid_mes1.bin", &Settings::default(), (6, 12)), Need::Optional(_)));
        assert!(matches!(need("navi10_mes.bin", &Settings::default(), (6, 12)), Need::Optional(_)));
        assert!(matches!(need("gc_10_3_6_mes.bin", &Settings::default(), (6, 12)), Need::Optional(_)));
        assert_eq!(need("gc_11_0_0_mes1.bin", &Settings::default(), (6, 12)), Need::Required);
        assert_eq!(need("gc_12_0_1_mes.bin", &Settings::default(), (6, 12)), Need::Required);
    }

    #[test]
    fn a_driver_without_the_targets_files_does_not_know_it() {
        let d = driver(&["gc_11_0_0_pfp.bin"]);
        let j = judge(Some(&d), &["gc_11_5_1".into()], &|_| true, &Settings::default());
        assert_eq!(j.outcome, DriverOutcome::NotKnown);
        assert_eq!(
            judge(None, &["gc_11_5_1".into()], &|_| true, &Settings::default()).outcome,
            DriverOutcome::Unknown
        );
        // A prefix is a whole name part: gc_11_0_1 is not gc_11_0_10.
        let d = driver(&["gc_11_0_10_pfp.bin"]);
        assert_eq!(
            judge(Some(&d), &["gc_11_0_1".into()], &|_| true, &Settings::default()).outcome,
            DriverOutcome::NotKnown
        );
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
        let j = judge(Some(&d), &["gc_11_5_1".into()], &have, &Settings::default());
        assert_eq!(j.outcome, DriverOutcome::Missing);
        assert_eq!(j.missing, ["amdgpu/gc_11_5_1_me.bin"]);
        let optional: Vec<&str> = j.optional_absent.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(optional, ["amdgpu/gc_11_5_1_toc.bin", "amdgpu/gc_11_5_1_mes_2.bin"]);
        assert_eq!(
            j.dmesg().unwrap(),
            "amdgpu 0000:…: Direct firmware load for amdgpu/gc_11_5_1_me.bin failed with error -2"
        );
        // Without the older MES file the newer one is required.
        let j = judge(
            Some(&d),
            &["gc_11_5_1".into()],
            &|n: &str| !n.ends_with("_mes_2.bin") && !n.ends_with("_mes.bin"),
            &Settings::default(),
        );
        assert_eq!(j.missing, ["amdgpu/gc_11_5_1_mes_2.bin", "amdgpu/gc_11_5_1_mes.bin"]);
    }

    /// amdgpu_drv.c: `mes` 0, `uni_mes` 1, `fw_load_type` -1 by default; a loaded driver's
    /// values as sysfs prints them, garbage keeping the default.
    #[test]
    fn settings_are_the_drivers_defaults_or_a_running_drivers() {
        assert_eq!(Settings::default(), Settings { mes: 0, mes_kiq: 0, uni_mes: 1, fw_load_type: -1 });
        let p = |n: &str, v: &str| (n.to_string(), v.to_string());
        let s = Settings::from_parameters(&[p("mes", "1\n"), p("uni_mes", "x"), p("fw_load_type", "3")]);
        assert_eq!(s, Settings { mes: 1, mes_kiq: 0, uni_mes: 1, fw_load_type: 3 });
    }

    /// gfx10's MES (amdgpu.mes=1, Linux 6.1) and the GC 11/12 RLC backdoor's TOC (amdgpu.fw_load_type=3)
    /// are required when the running driver is set so.
    #[test]
    fn parameters_make_conditional_files_required() {
        let on = Settings { mes: 1, fw_load_type: 3, ..Settings::default() };
        assert_eq!(need("navi10_mes.bin", &on, (6, 1)), Need::Required);
        assert_eq!(need("gc_11_0_0_toc.bin", &on, (6, 12)), Need::Required);
        assert!(matches!(need("gc_11_0_0_toc.bin", &Settings::default(), (6, 12)), Need::Optional(_)));
    }

    /// GC 12 with `_uni_mes.bin` declared asks for it alone by default; with amdgpu.uni_mes=0 for
    /// `_mes.bin` and `_mes1.bin` alone (amdgpu_mes.c amdgpu_mes_init_microcode). A driver that
    /// declares no `_uni_mes.bin` asks for `_mes` and `_mes1`.
    #[test]
    fn the_mes_scheme_follows_uni_mes() {
        let d = driver(&[
            "gc_12_0_1_pfp.bin",
            "gc_12_0_1_uni_mes.bin",
            "gc_12_0_1_mes.bin",
            "gc_12_0_1_mes1.bin",
        ]);
        let prefixes = ["gc_12_0_1".to_string()];
        let only =
            |have: &'static [&str]| move |n: &str| have.iter().any(|h| n == format!("amdgpu/gc_12_0_1{h}"));
        let uni = judge(Some(&d), &prefixes, &only(&["_pfp.bin", "_uni_mes.bin"]), &Settings::default());
        assert_eq!(uni.outcome, DriverOutcome::Ok);
        assert_eq!(uni.asked, ["amdgpu/gc_12_0_1_pfp.bin", "amdgpu/gc_12_0_1_uni_mes.bin"]);
        let split = Settings { uni_mes: 0, ..Settings::default() };
        let j = judge(Some(&d), &prefixes, &only(&["_pfp.bin", "_uni_mes.bin"]), &split);
        assert_eq!(j.missing, ["amdgpu/gc_12_0_1_mes.bin", "amdgpu/gc_12_0_1_mes1.bin"]);
        let j = judge(Some(&d), &prefixes, &only(&["_pfp.bin", "_mes.bin", "_mes1.bin"]), &split);
        assert_eq!(j.outcome, DriverOutcome::Ok);
        let j =
            judge(Some(&d), &prefixes, &only(&["_pfp.bin", "_mes.bin", "_mes1.bin"]), &Settings::default());
        assert_eq!(j.missing, ["amdgpu/gc_12_0_1_uni_mes.bin"]);
        let older = driver(&["gc_12_0_1_pfp.bin", "gc_12_0_1_mes.bin", "gc_12_0_1_mes1.bin"]);
        let j = judge(Some(&older), &prefixes, &only(&["_pfp.bin"]), &Settings::default());
        assert_eq!(j.missing, ["amdgpu/gc_12_0_1_mes.bin", "amdgpu/gc_12_0_1_mes1.bin"]);
    }

    /// No driver: one unknown row a GPU, with why; a target the table names no firmware for
    /// is unknown beside a driver, never "not known".
    #[test]
    fn rows_without_a_driver_or_firmware_names_are_unknown() {
        let gpus =
            vec![("gfx1100".to_string(), vec!["gc_11_0_0".to_string()]), ("gfx1170".to_string(), vec![])];
        let rows = check_drivers(Kernel::Roots { drivers: &[], roots: &[] }, &gpus);
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|r| r.judgement.outcome == DriverOutcome::Unknown
            && r.unjudged == Some(Unjudged::NoModuleInRoots)
            && r.module.is_none()));
        let rows = check_drivers(Kernel::Running(&RunningKernel::default()), &gpus);
        assert_eq!(rows[0].unjudged, Some(Unjudged::NoModuleForRunningKernel));
        let cut = record(|r| r.unreadable = Some("amdgpu.ko: cut".into()));
        let running = RunningKernel { drivers: vec![cut], ..RunningKernel::default() };
        let rows = check_drivers(Kernel::Running(&running), &gpus);
        assert_eq!(rows[0].unjudged, Some(Unjudged::ModuleUnreadable));
        assert_eq!(rows[0].judgement.outcome, DriverOutcome::Unknown);
        assert_eq!(rows[0].problem.as_deref(), Some("amdgpu.ko: cut"));
        let none = record(|r| r.absent = true);
        let rows = check_drivers(Kernel::Roots { drivers: &[none], roots: &["/".into()] }, &gpus);
        assert!(rows.iter().all(|r| r.judgement.outcome == DriverOutcome::NoDriver), "{rows:?}");
        let d = driver(&["gc_11_0_0_pfp.bin"]);
        assert_eq!(judge(Some(&d), &[], &|_| true, &Settings::default()).outcome, DriverOutcome::Unknown);
    }

    /// GC 11 asks for `_mes.bin` only when `_mes_2.bin` is absent; navi12 and cyan_skillfish
    /// ask for gpu_info only without an IP discovery table (Debian's 20250410 firmware has
    /// neither `gc_11_0_3_mes.bin` nor `cyan_skillfish_gpu_info.bin`, and serves both GPUs).
    #[test]
    fn fallbacks_absent_beside_what_is_asked_first_are_harmless() {
        let d = driver(&["gc_11_0_3_pfp.bin", "gc_11_0_3_mes_2.bin", "gc_11_0_3_mes.bin"]);
        let j = judge(
            Some(&d),
            &["gc_11_0_3".into()],
            &|n: &str| !n.ends_with("3_mes.bin"),
            &Settings::default(),
        );
        assert_eq!(j.outcome, DriverOutcome::Ok, "{j:?}");
        assert_eq!(j.optional_absent[0].0, "amdgpu/gc_11_0_3_mes.bin");
        assert!(matches!(
            need("cyan_skillfish_gpu_info.bin", &Settings::default(), (6, 12)),
            Need::Optional(_)
        ));
        assert_eq!(need("vega10_gpu_info.bin", &Settings::default(), (6, 12)), Need::Required);
    }

    /// Every optional or conditional rule of [`need`], one file each, and files it must leave
    /// required.
    #[test]
    fn each_rule_names_its_files() {
        let d = Settings::default();
        for optional in [
            "vega10_cap.bin",
            "gc_11_0_0_rlc_kicker.bin",
            "gc_11_0_0_rlc_1.bin",
            "picasso_rlc_am4.bin",
            "vega10_ip_discovery.bin",
            "gc_11_5_1_toc.bin",
            "vega10_mec2.bin",
            "polaris10_pfp_2.bin",
            "polaris10_mec2_2.bin",
            "navi12_gpu_info.bin",
            "raven_dmcu.bin",
            "navi10_mes.bin",
        ] {
            assert!(matches!(need(optional, &d, (6, 12)), Need::Optional(_)), "{optional}");
        }
        for required in [
            "gc_11_5_1_pfp.bin",
            "gc_11_5_1_imu.bin",
            "vega10_gpu_info.bin",
            "gc_12_0_1_uni_mes.bin",
            "psp_14_0_1_toc.bin",
            "polaris10_pfp.bin",
            "vega10_mec.bin",
        ] {
            assert_eq!(need(required, &d, (6, 12)), Need::Required, "{required}");
        }
    }
}
