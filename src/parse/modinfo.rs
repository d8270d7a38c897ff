//! Linux kernel modules: what a module's `.modinfo` section says of it.
//!
//! `MODULE_FIRMWARE(x)` is `MODULE_INFO(firmware, x)`, and `__MODULE_INFO` puts one
//! NUL-terminated `tag=value` string per use into the `.modinfo` section (linux
//! include/linux/module.h, include/linux/moduleparam.h `__MODULE_INFO`); modpost adds `alias=`
//! per device-table entry (scripts/mod/file2alias.c `do_pci_entry`: `pci:v%08Xd%08Xsv…`),
//! `vermagic=` (`VERMAGIC_STRING`, starting with the kernel release) and `name=`. This is what
//! `modinfo -F firmware` prints. The section is found through the section table; nothing else
//! of the module is read.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use super::host::parse_sections;
use super::{ByteSource, ParseError, Result};

/// The largest `.modinfo` read (amdgpu's is 46 KB in Linux 6.12).
pub const MAX_MODINFO: u64 = 4 << 20;

/// What a module's `.modinfo` says, each list in section order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModInfo {
    /// `name=`: the module's name (`amdgpu`).
    pub name: Option<String>,
    /// `vermagic=`: the kernel it was built for (`6.12.117+deb13-amd64 SMP preempt …`).
    pub vermagic: Option<String>,
    /// `firmware=`: the firmware files it declares it may request, relative to the firmware
    /// folder (`amdgpu/gc_11_5_1_pfp.bin`).
    pub firmware: Vec<String>,
    /// `alias=`: the devices it binds (`pci:v00001002d0000744Csv*sd*bc*sc*i*`).
    pub aliases: Vec<String>,
}

impl ModInfo {
    /// The kernel release it was built for: `vermagic`'s first word.
    pub fn release(&self) -> Option<&str> {
        self.vermagic.as_deref().and_then(|v| v.split_whitespace().next())
    }
}

/// Reads the `.modinfo` section of a kernel module (an ELF relocatable object).
pub fn parse_modinfo(src: &dyn ByteSource) -> Result<ModInfo> {
    let sections = parse_sections(src)?;
    let s = sections
        .iter()
        .find(|s| s.name == ".modinfo")
        .ok_or(ParseError::Malformed { what: "kernel module without a .modinfo section", offset: 0 })?;
    if s.size > MAX_MODINFO {
        return Err(ParseError::TooLarge { what: ".modinfo section", claimed: s.size, limit: MAX_MODINFO });
    }
    let bytes = src.read_at(s.offset, s.size as usize)?;
    Ok(modinfo_of(&bytes))
}

/// The `tag=value` strings of a `.modinfo` section's bytes.
pub fn modinfo_of(bytes: &[u8]) -> ModInfo {
    let mut out = ModInfo::default();
    for entry in bytes.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let text = String::from_utf8_lossy(entry);
        let Some((tag, value)) = text.split_once('=') else { continue };
        let value = value.to_string();
        match tag {
            "firmware" => out.firmware.push(value),
            "alias" => out.aliases.push(value),
            "vermagic" => out.vermagic = Some(value),
            "name" => out.name = Some(value),
            _ => {}
        }
    }
    out
}

/// The `.modinfo` of built-in module `module` from a kernel's `modules.builtin.modinfo`: the
/// `.modinfo` sections of every built-in module, each string prefixed with its module's name
/// and a dot (`amdgpu.firmware=amdgpu/…`; linux scripts/Makefile.vmlinux_o, `modinfo` reads it
/// for built-in modules: kmod libkmod-builtin.c). It names no `vermagic`.
pub fn builtin_modinfo(bytes: &[u8], module: &str) -> ModInfo {
    let prefix = format!("{module}.");
    let ours: Vec<u8> = bytes
        .split(|&b| b == 0)
        .filter_map(|e| e.strip_prefix(prefix.as_bytes()))
        .flat_map(|e| e.iter().copied().chain([0]))
        .collect();
    let mut info = modinfo_of(&ours);
    info.name.get_or_insert_with(|| module.to_string());
    info
}

/// The PCI vendor and device an `alias=pci:v…d…` names, when it names one device (a class
/// match, `d*`, names none).
pub fn pci_device(alias: &str) -> Option<(u32, u32)> {
    let rest = alias.strip_prefix("pci:v")?;
    let vendor = u32::from_str_radix(rest.get(..8)?, 16).ok()?;
    let device = u32::from_str_radix(rest.get(8..)?.strip_prefix('d')?.get(..8)?, 16).ok()?;
    Some((vendor, device))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tags_in_section_order() {
        let m = modinfo_of(
            b"firmware=amdgpu/gc_11_5_1_pfp.bin\0\0alias=pci:v00001002d0000743Fsv*sd*bc*sc*i*\0\
              license=GPL and additional rights\0firmware=amdgpu/vega10_me.bin\0noequals\0\
              vermagic=6.12.117+deb13-amd64 SMP preempt mod_unload modversions \0name=amdgpu\0",
        );
        assert_eq!(m.firmware, ["amdgpu/gc_11_5_1_pfp.bin", "amdgpu/vega10_me.bin"]);
        assert_eq!(m.aliases.len(), 1);
        assert_eq!(m.release(), Some("6.12.117+deb13-amd64"));
        assert_eq!(m.name.as_deref(), Some("amdgpu"));
    }

    #[test]
    fn pci_aliases() {
        assert_eq!(pci_device("pci:v00001002d0000743Fsv*sd*bc*sc*i*"), Some((0x1002, 0x743f)));
        assert_eq!(pci_device("pci:v00001002d*sv*sd*bc03sc00i00*"), None);
        assert_eq!(pci_device("usb:v1234"), None);
    }

    #[test]
    fn a_module_without_modinfo_is_an_error_not_a_panic() {
        assert!(parse_modinfo(&b"\x7fELF garbage".as_slice()).is_err());
        assert!(parse_modinfo(&b"".as_slice()).is_err());
    }

    /// `modules.builtin.modinfo`: every built-in module's strings, each prefixed with its name.
    #[test]
    fn builtin_modinfo_takes_the_modules_own_strings() {
        let bytes = b"drm.firmware=x.bin\0amdgpu.firmware=amdgpu/a.bin\0amdgpuX.firmware=y\0amdgpu.alias=pci:v00001002d*sv*sd*bc03sc00i00*\0\0amdgpu.firmware=amdgpu/b.bin";
        let m = builtin_modinfo(bytes, "amdgpu");
        assert_eq!(m.firmware, ["amdgpu/a.bin", "amdgpu/b.bin"]);
        assert_eq!(m.aliases.len(), 1);
        assert_eq!(m.name.as_deref(), Some("amdgpu"));
        assert_eq!(m.vermagic, None);
    }
}
