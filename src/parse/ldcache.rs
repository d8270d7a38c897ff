//! `/etc/ld.so.cache`, the index `ldconfig` writes and `ld.so` reads to find a library by name
//! (glibc `sysdeps/generic/dl-cache.h`, `elf/dl-cache.c` `_dl_load_cache_lookup`): the new
//! format (`glibc-ld.so.cache` 1.1, alone since glibc 2.32), and the old `ld.so-1.7.0` one, alone
//! or followed by the new.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use super::{le32, le64, ParseError, Result};

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
/// `sizeof (struct cache_file_new)` and `sizeof (struct file_entry_new)`.
const NEW_HEADER: usize = 48;
const NEW_ENTRY: usize = 24;
/// `sizeof (struct cache_file)` and `sizeof (struct file_entry)`.
const OLD_HEADER: usize = 16;
const OLD_ENTRY: usize = 12;
/// Most entries read.
const MAX_ENTRIES: usize = 1 << 20;

/// `FLAG_ELF_LIBC6`, the type of every glibc library entry.
const FLAG_ELF_LIBC6: i32 = 0x0003;
/// `FLAG_X8664_LIB64`: an x86-64 library.
const FLAG_X8664_LIB64: i32 = 0x0300;
/// `DL_CACHE_HWCAP_EXTENSION`: an entry of a `glibc-hwcaps` subfolder, whose low 32 bits index
/// the extension's subfolder names.
const HWCAP_EXTENSION: u64 = 1 << 62;
/// `cache_extension_magic` and `cache_extension_tag_glibc_hwcaps`.
const EXTENSION_MAGIC: u32 = 0xeaa4_2174;
const TAG_GLIBC_HWCAPS: u32 = 1;

/// One library the cache knows: the name it is asked for by, and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// `flags`: type and architecture.
    pub flags: i32,
    /// The name looked up (a soname, `libfoo.so.1`).
    pub key: String,
    /// The path it leads to.
    pub value: String,
    /// `hwcap`: 0 for a plain entry.
    pub hwcap: u64,
    /// For an entry of a `glibc-hwcaps` subfolder (`DL_CACHE_HWCAP_EXTENSION`), its name
    /// (`x86-64-v3`), from the cache's extension section.
    pub hwcaps: Option<String>,
}

impl CacheEntry {
    /// True when a loader of this class and machine takes it: `_dl_cache_check_flags` (the
    /// machine's own ID, or a plain `FLAG_ELF`), and a plain entry, not one for a `glibc-hwcaps`
    /// subfolder or a legacy hwcap (which need that CPU).
    pub fn matches(&self, class64: bool, machine: u16) -> bool {
        let own = match (class64, machine) {
            (true, 62) => FLAG_X8664_LIB64 | FLAG_ELF_LIBC6,
            (false, 3) => FLAG_ELF_LIBC6,
            _ => return false,
        };
        self.flags == own || self.flags == 1
    }
}

/// The path the loader takes for `name` (`dl-cache.c` `search_cache`): of the entries for a
/// loader of this class and machine, the one of the best `glibc-hwcaps` subfolder `active`
/// lists (best first), else the first plain one; legacy hwcap entries are skipped (glibc 2.37+).
pub fn pick_cached<'c>(
    entries: &'c [CacheEntry],
    name: &str,
    class64: bool,
    machine: u16,
    active: &[&str],
) -> Option<&'c str> {
    let of = entries.iter().filter(|e| e.key == name && e.matches(class64, machine));
    let best = of
        .clone()
        .filter_map(|e| Some((active.iter().position(|a| Some(*a) == e.hwcaps.as_deref())?, e)))
        .min_by_key(|(rank, _)| *rank)
        .map(|(_, e)| e);
    best.or_else(|| of.clone().find(|e| e.hwcap == 0)).map(|e| e.value.as_str())
}

/// The entries of a cache file, in its order (sorted as `ldconfig` sorts them, which is the
/// order the loader's binary search honours for equal keys).
pub fn parse_ld_cache(bytes: &[u8]) -> Result<Vec<CacheEntry>> {
    if bytes.starts_with(NEW_MAGIC) {
        return new_format(bytes);
    }
    if !bytes.starts_with(OLD_MAGIC) {
        return Err(ParseError::Malformed { what: "ld.so.cache magic", offset: 0 });
    }
    let nlibs =
        le32(bytes, 12).ok_or(ParseError::Truncated { what: "ld.so.cache header", offset: 12 })? as usize;
    let end = nlibs.min(MAX_ENTRIES).saturating_mul(OLD_ENTRY).saturating_add(OLD_HEADER);
    // The new format follows the old, aligned as `struct cache_file_new` is.
    let new_at = end.next_multiple_of(8);
    if let Some(new) = bytes.get(new_at..).filter(|b| b.starts_with(NEW_MAGIC)) {
        return new_format(new);
    }
    let strings =
        bytes.get(end..).ok_or(ParseError::Truncated { what: "ld.so.cache entries", offset: 16 })?;
    (0..nlibs.min(MAX_ENTRIES))
        .map(|i| {
            let at = OLD_HEADER + i * OLD_ENTRY;
            let field = |k: usize| {
                le32(bytes, at + 4 * k)
                    .ok_or(ParseError::Truncated { what: "ld.so.cache entry", offset: at as u64 })
            };
            Ok(CacheEntry {
                flags: field(0)? as i32,
                key: string(strings, field(1)?)?,
                value: string(strings, field(2)?)?,
                hwcap: 0,
                hwcaps: None,
            })
        })
        .collect()
}

/// The new format's entries; their strings are counted from its header's start.
fn new_format(bytes: &[u8]) -> Result<Vec<CacheEntry>> {
    let nlibs =
        le32(bytes, 20).ok_or(ParseError::Truncated { what: "ld.so.cache header", offset: 20 })? as usize;
    if nlibs > MAX_ENTRIES || nlibs.saturating_mul(NEW_ENTRY).saturating_add(NEW_HEADER) > bytes.len() {
        return Err(ParseError::Malformed {
            what: "ld.so.cache entry count larger than the file",
            offset: 20,
        });
    }
    let subfolders = hwcaps_names(bytes);
    (0..nlibs)
        .map(|i| {
            let at = NEW_HEADER + i * NEW_ENTRY;
            let cut = ParseError::Truncated { what: "ld.so.cache entry", offset: at as u64 };
            let field = |k: usize| le32(bytes, at + 4 * k).ok_or(cut.clone());
            let hwcap = le64(bytes, at + 16).ok_or(cut.clone())?;
            let hwcaps = (hwcap & HWCAP_EXTENSION != 0)
                .then(|| subfolders.get((hwcap & 0xffff_ffff) as usize).cloned())
                .flatten();
            Ok(CacheEntry {
                flags: field(0)? as i32,
                key: string(bytes, field(1)?)?,
                value: string(bytes, field(2)?)?,
                hwcap,
                hwcaps,
            })
        })
        .collect()
}

/// The `glibc-hwcaps` subfolder names of a new-format cache's extension section (`dl-cache.h`
/// `struct cache_extension`: magic, count, then tag, flags, offset, size per section); none when
/// it has no such section or it does not read.
fn hwcaps_names(bytes: &[u8]) -> Vec<String> {
    let Some(at) = le32(bytes, 32).map(|a| a as usize).filter(|&a| a != 0) else { return Vec::new() };
    if le32(bytes, at) != Some(EXTENSION_MAGIC) {
        return Vec::new();
    }
    let count = le32(bytes, at + 4).unwrap_or(0).min(64) as usize;
    for k in 0..count {
        let s = at + 8 + 16 * k;
        let (Some(tag), Some(off), Some(size)) = (le32(bytes, s), le32(bytes, s + 8), le32(bytes, s + 12))
        else {
            break;
        };
        if tag == TAG_GLIBC_HWCAPS {
            return (0..(size / 4).min(1024))
                .map_while(|i| le32(bytes, off as usize + 4 * i as usize))
                .map_while(|o| string(bytes, o).ok())
                .collect();
        }
    }
    Vec::new()
}

/// The NUL-terminated string at `at` of `strings`.
fn string(strings: &[u8], at: u32) -> Result<String> {
    let s = strings
        .get(at as usize..)
        .ok_or(ParseError::Malformed { what: "ld.so.cache string offset", offset: u64::from(at) })?;
    let end = s
        .iter()
        .position(|&b| b == 0)
        .ok_or(ParseError::Truncated { what: "ld.so.cache string", offset: u64::from(at) })?;
    Ok(String::from_utf8_lossy(s.get(..end).unwrap_or_default()).into_owned())
}

/// Builds a new-format cache of `(flags, key, value)` entries, as `ldconfig` writes it.
#[cfg(any(test, feature = "fixtures"))]
pub fn fixture(entries: &[(i32, &str, &str)]) -> Vec<u8> {
    let mut strings = Vec::new();
    let base = NEW_HEADER + entries.len() * NEW_ENTRY;
    let mut table = Vec::new();
    for (flags, key, value) in entries {
        let k = base + strings.len();
        strings.extend_from_slice(key.as_bytes());
        strings.push(0);
        let v = base + strings.len();
        strings.extend_from_slice(value.as_bytes());
        strings.push(0);
        table.extend_from_slice(&flags.to_le_bytes());
        table.extend_from_slice(&(k as u32).to_le_bytes());
        table.extend_from_slice(&(v as u32).to_le_bytes());
        table.extend_from_slice(&0u32.to_le_bytes());
        table.extend_from_slice(&0u64.to_le_bytes());
    }
    let mut out = NEW_MAGIC.to_vec();
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    out.extend_from_slice(&[2, 0, 0, 0]);
    out.extend_from_slice(&[0; 16]);
    out.extend(table);
    out.extend(strings);
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn new_format_entries_and_their_flags() {
        let bytes = fixture(&[
            (0x0303, "librocblas.so.4", "/usr/lib/x86_64-linux-gnu/librocblas.so.4"),
            (0x0003, "libc.so.6", "/usr/lib32/libc.so.6"),
        ]);
        let got = parse_ld_cache(&bytes).unwrap();
        assert_eq!(got[0].key, "librocblas.so.4");
        assert_eq!(got[0].value, "/usr/lib/x86_64-linux-gnu/librocblas.so.4");
        assert!(got[0].matches(true, 62) && !got[1].matches(true, 62) && got[1].matches(false, 3));
        assert_eq!(
            pick_cached(&got, "librocblas.so.4", true, 62, &[]),
            Some("/usr/lib/x86_64-linux-gnu/librocblas.so.4")
        );
        for n in 0..bytes.len() {
            let _ = parse_ld_cache(&bytes[..n]);
        }
    }

    /// This machine's own cache, when it has one, reads and knows its C library.
    #[test]
    fn the_systems_cache_reads() {
        let Ok(bytes) = std::fs::read("/etc/ld.so.cache") else {
            eprintln!("skipped: no /etc/ld.so.cache here");
            return;
        };
        let got = parse_ld_cache(&bytes).unwrap();
        assert!(got.iter().any(|e| e.key == "libc.so.6"), "{} entries", got.len());
    }
}
