//! Package metadata: a Debian binary package's `control` file and a wheel's
//! `*.dist-info/METADATA`, read for the package's name, version and architecture.
//!
//! Both are a block of `Name: value` header fields, a line starting with a space or a tab
//! continuing the field before it, ended by a blank line: Debian's deb822 (Debian Policy 5.1,
//! "Syntax of control files") and Python's core metadata (packaging.python.org, "Core metadata
//! specifications", read as RFC 822 headers). Field names are matched without case, as both
//! define them. Input is hostile: any bytes give an identity or an error, never a panic.

use serde::{Deserialize, Serialize};

/// The packaging system a [`Package`] belongs to.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Ecosystem {
    /// A Debian binary package (`.deb`).
    Deb,
    /// A Python wheel.
    Pypi,
}

/// A package's identity, as its metadata states it (not normalised: `purl`s are made from it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Package {
    pub ecosystem: Ecosystem,
    /// `Package:` of a `.deb`, `Name:` of a wheel.
    pub name: String,
    /// `Version:`.
    pub version: String,
    /// A `.deb`'s `Architecture:` (`amd64`, `all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
}

/// Most bytes of a metadata file read: a control file is a few KiB; a wheel's METADATA puts
/// its header fields before a description that may run long.
pub const MAX_METADATA: u64 = 1 << 20;

/// Longest name, version or architecture taken (Debian and PyPI names are far shorter).
const MAX_VALUE: usize = 256;

/// The header fields of the block at the start of `text`, up to its first blank line, in
/// order: (name, value with continuation lines joined by `\n`).
fn header_fields(text: &str) -> Result<Vec<(&str, String)>, String> {
    let mut fields: Vec<(&str, String)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            let (_, value) =
                fields.last_mut().ok_or(format!("line {}: a continuation before any field", n + 1))?;
            value.push('\n');
            value.push_str(line.trim());
            continue;
        }
        let (name, value) =
            line.split_once(':').ok_or(format!("line {}: not a `Name: value` field", n + 1))?;
        fields.push((name.trim(), value.trim().to_string()));
    }
    Ok(fields)
}

/// The one-word value of field `name` (any case), checked: present, not empty, within
/// [`MAX_VALUE`], without spaces or control characters.
fn word(fields: &[(&str, String)], name: &str) -> Result<String, String> {
    let value = fields
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .ok_or(format!("no {name} field"))?;
    if value.is_empty() || value.len() > MAX_VALUE {
        return Err(format!("{name}: empty or over {MAX_VALUE} bytes"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{name}: {value:?} is not one word"));
    }
    Ok(value.to_string())
}

/// The text of a metadata file: UTF-8, as both formats are.
fn text(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text (at byte {})", e.valid_up_to()))
}

/// A `.deb`'s identity from its `control` file: `Package`, `Version`, `Architecture`, all
/// required in a binary package's control file (Debian Policy 5.3).
pub fn parse_deb_control(bytes: &[u8]) -> Result<Package, String> {
    let fields = header_fields(text(bytes)?)?;
    Ok(Package {
        ecosystem: Ecosystem::Deb,
        name: word(&fields, "Package")?,
        version: word(&fields, "Version")?,
        arch: Some(word(&fields, "Architecture")?),
    })
}

/// A wheel's identity from its `METADATA`: `Name` and `Version`, required by every core
/// metadata version.
pub fn parse_wheel_metadata(bytes: &[u8]) -> Result<Package, String> {
    let fields = header_fields(text(bytes)?)?;
    Ok(Package {
        ecosystem: Ecosystem::Pypi,
        name: word(&fields, "Name")?,
        version: word(&fields, "Version")?,
        arch: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_file_with_a_long_description_and_lowercase_names() {
        let control = b"package: rocblas\nVersion: 4.4.0-1\nArchitecture: amd64\nDescription: BLAS\n on ROCm\n .\n more\n";
        let p = parse_deb_control(control).expect("read");
        assert_eq!(
            (p.name.as_str(), p.version.as_str(), p.arch.as_deref()),
            ("rocblas", "4.4.0-1", Some("amd64"))
        );
    }

    #[test]
    fn metadata_stops_at_the_blank_line_before_the_description() {
        let meta = b"Metadata-Version: 2.1\nName: Torch_ROCm\nVersion: 2.5.1+rocm6.2\n\nName: not-this\n";
        let p = parse_wheel_metadata(meta).expect("read");
        assert_eq!((p.name.as_str(), p.version.as_str()), ("Torch_ROCm", "2.5.1+rocm6.2"));
    }

    #[test]
    fn hostile_metadata_is_an_error() {
        for bad in [
            &b""[..],
            b"Package: a\n",
            b" continued\nPackage: a\nVersion: 1\nArchitecture: all\n",
            b"Package a\n",
            b"Package: two words\nVersion: 1\nArchitecture: all\n",
            b"Package: a\x00b\nVersion: 1\nArchitecture: all\n",
            b"Package: \xff\nVersion: 1\nArchitecture: all\n",
        ] {
            assert!(parse_deb_control(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let long = format!("Name: {}\nVersion: 1\n", "a".repeat(MAX_VALUE + 1));
        assert!(parse_wheel_metadata(long.as_bytes()).is_err());
    }
}
