//! Regressions found by the fuzz targets in `fuzz/` (see fuzz/README.md): each feeds the
//! minimized input to the function the target drives and asserts it returns, Ok or Err,
//! without panicking. Larger inputs live in `tests/data/fuzz/`.

use std::path::PathBuf;

use gfxscan::parse::bundle::parse_bundles;
use gfxscan::parse::elf::parse_code_object;
use gfxscan::parse::firmware::inflate_firmware;
use gfxscan::parse::host::parse_host_elf;
use gfxscan::vocab::codec::Codec;

fn fuzz_input(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Used to panic with "attempt to add with overflow" in `count_kernel_symbols`
/// (src/parse/elf.rs, building the `TooLarge` error as `size + str_size`): a `.symtab` whose
/// linked `.strtab` claims `sh_size` 0xffff_ffff_ffff_ffff (fuzz target `code_object`).
#[test]
fn code_object_symtab_plus_strtab_size_overflow() {
    let data = fuzz_input("code_object-symtab-strtab-size-overflow.bin");
    let _ = parse_code_object(&data, Some(data.len() as u64));
    let _ = parse_code_object(&data, None);
}

/// Used to panic with "attempt to add with overflow" in `read_note_range` (src/parse/elf.rs,
/// `while pos + 12 <= end`), from `parse_notes`: a 120-byte ELF whose one `PT_NOTE` segment has
/// `p_offset` 0xffff_ffff_ffff_ffff and `p_filesz` 0, so the note range ends where it starts,
/// at u64::MAX (fuzz target `code_object`, minimized by `cargo fuzz tmin`).
#[test]
fn code_object_note_segment_at_u64_max() {
    const NOTE_AT_U64_MAX: &[u8] = b"\x7f\x45\x4c\x46\x02\x01\x01\x40\x00\x00\x00\x00\x05\x00\x00\x00\
        \x03\x00\xe0\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
        \x40\x00\x00\x00\x00\x00\x00\x00\xe8\x03\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x40\x00\x32\x00\x01\x00\x40\x00\x07\x00\x06\x00\
        \x04\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
        \xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\
        \x00\x00\x00\x00\x00\x20\x00\x00";
    let _ = parse_code_object(&NOTE_AT_U64_MAX, Some(NOTE_AT_U64_MAX.len() as u64));
    let _ = parse_code_object(&NOTE_AT_U64_MAX, None);
}

/// The `count_kernel_symbols` overflow of `code_object_symtab_plus_strtab_size_overflow`, reached
/// through a host ELF: `parse_host_elf` (src/parse/host.rs) parses
/// a code object in a `__CLANG_OFFLOAD_BUNDLE__hipv4-…` section whose `.strtab` `sh_size`
/// is near u64::MAX, and `count_kernel_symbols` panicked adding it (fuzz target `host_elf`).
#[test]
fn host_elf_embedded_symtab_plus_strtab_size_overflow() {
    let data = fuzz_input("host_elf-embedded-symtab-strtab-size-overflow.o");
    let _ = parse_host_elf(&data);
}

/// Both `src/parse/elf.rs` overflows above, reached through plain offload bundles whose device
/// entry is a mutated code object (`read_entries` in src/parse/bundle.rs parses each entry):
/// the first panicked in `read_note_range` (`pos + 12`), the second in `count_kernel_symbols`
/// (`size + str_size`) (fuzz target `bundles`, inputs as found).
#[test]
fn bundles_entry_code_object_overflows() {
    for name in
        ["bundles-entry-note-walk-overflow.bundle", "bundles-entry-symtab-strtab-size-overflow.bundle"]
    {
        let data = fuzz_input(name);
        let _ = parse_bundles(&data.as_slice());
    }
}

/// Used to panic with "attempt to add with overflow" inside lzma-rs 0.3.0
/// (`decode/xz.rs:52`, `backward_size + 1`), called from `inflate_firmware(.., true)`: an xz
/// stream whose footer Backward Size is 0xffff_ffff (fuzz target `firmware`). The literal is the
/// shortest such stream: stream header, an empty index, a footer with Backward Size u32::MAX.
#[test]
fn firmware_xz_footer_backward_size_overflow() {
    const EMPTY_INDEX_MAX_BACKWARD_SIZE: &[u8] = b"\xfd\x37\x7a\x58\x5a\x00\x00\x00\xff\x12\xd9\x41\
        \x00\x00\x00\x00\x1c\xdf\x44\x21\
        \x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x59\x5a";
    assert!(inflate_firmware(EMPTY_INDEX_MAX_BACKWARD_SIZE, Codec::Xz).is_err());
    // The input the fuzzer found (minimized by `cargo fuzz tmin`).
    let found = fuzz_input("firmware-xz-backward-size-overflow.xz");
    let _ = inflate_firmware(&found, Codec::Xz);
}

/// Used to panic with "attempt to add with overflow" in `ParseError::rebased` (src/parse/mod.rs),
/// moving an error that names an offset near u64::MAX to the file's coordinates: an
/// OffloadBinary whose second binary's entry table claims such an offset (fuzz target
/// `offload`). Offsets in errors now saturate.
#[test]
fn offload_error_offset_rebased_past_u64_max() {
    let data = fuzz_input("offload-rebased-offset-overflow.bin");
    let found = gfxscan::parse::offload::parse_offload_binaries(&data);
    let stopped = found.stopped.expect("the walk stops at the broken binary");
    assert!(stopped.to_string().contains("0xffff"), "{stopped}");
}

/// Used to panic with "attempt to add with overflow" when a zstd decoder took its share of the
/// window budget (src/parse/bundle.rs `ZstdInflate::step`, window + overhead): a CCOB whose zstd
/// frame header states a content size near 2^64 (fuzz target `bundles`).
#[test]
fn bundles_zstd_window_charge_overflow() {
    let data = fuzz_input("bundles-zstd-window-charge-overflow.bin");
    let _ = parse_bundles(&data);
}
