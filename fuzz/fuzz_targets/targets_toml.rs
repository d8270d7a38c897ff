//! targets.toml: TOML parsing and the table's validation; lookups on a table that validated.
#![no_main]

use gfxscan::vocab::targets::Targets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(t) = Targets::from_toml(&text, "fuzz") else { return };
    let _ = (t.len(), t.is_empty());
    for target in t.iter() {
        let _ = (target.is_generic(), target.supports("xnack"), target.supports("sramecc"));
        let _ = t.by_name(&target.name);
        let _ = t.rank(&target.name);
        let _ = t.longest_prefix_of(&target.name);
        let _ = t.members_of(&target.name);
    }
    for m in 0..0x80u32 {
        let _ = t.by_mach(m);
    }
    for p in t.firmware_prefixes() {
        let _ = t.by_firmware(p);
    }
    let _ = t.by_v2_isa((9, 0, 10));
    let _ = t.longest_prefix_of("gfx90a_110");
});
