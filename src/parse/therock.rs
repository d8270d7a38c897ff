//! TheRock's `share/therock/dist_info.json`: the GPU targets a TheRock install was built for.
//!
//! TheRock writes the file from its CMake variable `THEROCK_DIST_AMDGPU_TARGETS`
//! (cmake/therock_amdgpu_targets.cmake `therock_validate_amdgpu_targets`), a CMake list, so the
//! nightly tarballs join the targets with `;`; a local build writes the list as given, comma or
//! space separated. A configuration without dist targets writes CMake's
//! `THEROCK_DIST_AMDGPU_TARGETS-NOTFOUND`, which declares nothing. TheRock's own reader
//! (build_tools `check_profile_arch`) splits on all three.

/// Where a TheRock install declares the targets it was built for, from the install's top.
pub const DIST_INFO: &str = "share/therock/dist_info.json";

/// The most of the file read: a real one is a few hundred bytes.
pub const MAX_DIST_INFO: u64 = 64 << 10;

/// The targets `dist_amdgpu_targets` declares, in its order without repeats; an error names
/// what is wrong with a file that is not such a document.
pub fn dist_info_targets(bytes: &[u8]) -> Result<Vec<String>, String> {
    let doc: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| format!("TheRock dist_info.json is not JSON: {e}"))?;
    let Some(list) = doc.get("dist_amdgpu_targets") else {
        return Err("TheRock dist_info.json has no dist_amdgpu_targets".into());
    };
    let Some(list) = list.as_str() else {
        return Err("TheRock dist_info.json: dist_amdgpu_targets is not a string".into());
    };
    let mut out: Vec<String> = Vec::new();
    for t in list.split([';', ',', ' ', '\t', '\n']).filter(|t| !t.is_empty() && !t.ends_with("-NOTFOUND")) {
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::dist_info_targets;

    #[test]
    fn each_separator_therock_writes_is_read() {
        let read = |s: &str| dist_info_targets(s.as_bytes());
        assert_eq!(
            read(r#"{"dist_amdgpu_targets": "gfx1100;gfx1101;gfx1102"}"#).expect("read"),
            ["gfx1100", "gfx1101", "gfx1102"]
        );
        assert_eq!(
            read(r#"{"dist_amdgpu_targets": "gfx942, gfx950 gfx942"}"#).expect("read"),
            ["gfx942", "gfx950"]
        );
        assert!(read(r#"{"dist_amdgpu_targets": "THEROCK_DIST_AMDGPU_TARGETS-NOTFOUND"}"#)
            .expect("read")
            .is_empty());
        assert!(read(r#"["gfx942"]"#).is_err());
        assert!(read(r#"{"dist_amdgpu_targets": 3}"#).is_err());
        assert!(read("{ not json").is_err());
    }
}
