//! Code object URIs: `file://PATH#offset=N&size=M`, the form the HIP runtime and the ROCm
//! debugger name loaded code objects with, and `roc-obj-ls` prints.
//!
//! The syntax is LLVM's AMDGPU usage document, "Code Object URI": `file://` and the absolute
//! path, URI-encoded (RFC 3986), then a range `#offset=N&size=M` in decimal. A code object has a
//! URI when its bytes are a range of a file on disk: not one stored compressed (a compressed
//! bundle or OffloadBinary, which the runtime inflates and names by a `memory://` URI), not a
//! kernel of a kpack archive, not a member of an archive read as a tree.

use std::io::Write;
use std::path::Path;

use crate::model::{CodeObjectRecord, FileRecord, Snapshot};

/// The URI of `object` in `file`, or none when no range of a file on disk is the object. A
/// root given as a relative path is made absolute against the current folder, as the runtime's
/// URIs are always absolute.
pub fn code_object_uri(snap: &Snapshot, file: &FileRecord, object: &CodeObjectRecord) -> Option<String> {
    if snap.is_archive_member(&file.path) {
        return None;
    }
    let (offset, size) = object.file_range()?;
    let mut path = std::path::absolute(snap.root_given(file.path.root)).ok()?;
    if !file.path.path.is_empty() {
        use std::os::unix::ffi::OsStrExt;
        path.push(std::ffi::OsStr::from_bytes(&file.path.bytes()));
    }
    Some(format!("file://{}#offset={offset}&size={size}", encode_path(&path)))
}

/// An absolute path as a URI path: bytes other than unreserved characters and `/`
/// percent-encoded (RFC 3986 section 2), so spaces, `#` and `?` cannot end the path early.
fn encode_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Writes one URI per code object that has one, in the snapshot's file order.
pub fn write_uris(snap: &Snapshot, only: &[String], out: &mut dyn Write) -> anyhow::Result<()> {
    let mut text = String::new();
    for file in &snap.files {
        for object in &file.code_objects {
            if !only.is_empty() && !only.contains(&object.processor) {
                continue;
            }
            if let Some(uri) = code_object_uri(snap, file, object) {
                text.push_str(&uri);
                text.push('\n');
            }
        }
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::encode_path;

    #[test]
    fn paths_are_percent_encoded_past_unreserved_characters() {
        let p = std::path::PathBuf::from("/opt/rocm 6.4/lib/a#b?c%d/libx.so");
        assert_eq!(encode_path(&p), "/opt/rocm%206.4/lib/a%23b%3Fc%25d/libx.so");
        use std::os::unix::ffi::OsStrExt;
        let raw = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b"/x/\xff.so"));
        assert_eq!(encode_path(&raw), "/x/%FF.so");
    }
}
