//! Verdict words: a library's status for a GPU (OK, WARN, MISSING), what kind of library it is,
//! and a gap rule — what a library does when the code for a device is not there, as its source
//! shows. The rules themselves live with the library they describe (`check` for host code, each
//! artifact family for its own).

use serde::Serialize;

use crate::vocab::library::{Component, Family};

/// A library's verdict for one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Missing,
}

impl Status {
    /// The word shown in tables.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Missing => "MISSING",
        }
    }
}

/// What kind of library a verdict is about; in JSON `host-library`, `bundle`, or the family's
/// name (`tensile`, `miopen`, `bitcode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LibraryKind {
    /// A host library with device code (`.hip_fatbin`, embedded code objects).
    HostLibrary,
    /// A standalone offload bundle.
    Bundle,
    /// A folder of an artifact family (a Tensile library, MIOpen's databases, the bitcode).
    Family(Family),
}

impl LibraryKind {
    /// Its name in JSON.
    pub fn name(self) -> &'static str {
        match self {
            LibraryKind::HostLibrary => "host-library",
            LibraryKind::Bundle => "bundle",
            LibraryKind::Family(f) => f.name(),
        }
    }
}

impl Serialize for LibraryKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for LibraryKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LibraryKind".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let family = generator.subschema_for::<Family>();
        schemars::json_schema!({
            "description": "What kind of library a verdict is about: a host library, a standalone bundle, or an artifact family's folder.",
            "anyOf": [{"type": "string", "enum": [LibraryKind::HostLibrary.name(), LibraryKind::Bundle.name()]}, family]
        })
    }
}

/// One row of the gap table: how bad a gap is and what the user will see.
#[derive(Debug, Clone, Copy)]
pub struct GapRule {
    /// MISSING when the program stops or its calls fail; WARN when it runs slower or without
    /// one optional path.
    pub status: Status,
    /// What happens, in the library's own words where it prints some.
    pub consequence: &'static str,
}

/// One library's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The library: a file, or a folder for Tensile, MIOpen and bitcode.
    pub library: String,
    pub kind: LibraryKind,
    /// For Tensile folders: the library that loads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<Component>,
    pub status: Status,
    /// One line: what was found or what is missing.
    pub detail: String,
    /// What the gap costs at run time, when something is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consequence: Option<String>,
    /// What would load: the bundle entry or index file.
    pub loads: Option<String>,
    /// Targets the library has instead, when something is missing.
    pub available: Vec<String>,
    /// The generic target whose code the device loads, where it has none of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via_generic: Option<String>,
}

impl Verdict {
    /// A verdict with the status and consequence its gap's rule gives (for the device's
    /// `arch`), or OK without a gap.
    pub fn judged(
        library: String,
        kind: LibraryKind,
        rule: Option<&GapRule>,
        detail: String,
        arch: &str,
    ) -> Verdict {
        Verdict {
            library,
            kind,
            component: None,
            status: rule.map_or(Status::Ok, |r| r.status),
            detail,
            consequence: rule.map(|r| r.consequence.replace("<arch>", arch)),
            loads: None,
            available: Vec::new(),
            via_generic: None,
        }
    }
}
