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

/// What a gap costs a run, as the library's source shows: the one fact a verdict's status and
/// `explain`'s gate are both read from ([`Cost::status`], [`gate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Cost {
    /// The program stops, or the library's calls fail: MISSING.
    Fails,
    /// The library runs, but the programs that take one of its paths fail there (hipBLASLt's
    /// matmuls, runtime compilation without bitcode, AOTriton's attention): WARN.
    FailsItsUsers,
    /// Slower or untuned, nothing fails (MIOpen without its databases or a plugin): WARN.
    Slower,
    /// Not judged: what the library loads lies outside what was read: WARN.
    NotChecked,
}

impl Cost {
    /// The status a gap of this cost gets.
    pub fn status(self) -> Status {
        match self {
            Cost::Fails => Status::Missing,
            Cost::FailsItsUsers | Cost::Slower | Cost::NotChecked => Status::Warn,
        }
    }
}

/// One row of the gap table: how bad a gap is and what the user will see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapRule {
    /// What the gap costs: the program stops or its calls fail (MISSING), or it runs slower or
    /// without one optional path (WARN).
    pub cost: Cost,
    /// What happens, in the library's own words where it prints some.
    pub consequence: &'static str,
}

impl GapRule {
    /// The status the rule gives.
    pub fn status(&self) -> Status {
        self.cost.status()
    }
}

/// What a gate does for a target, in `explain`'s words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Gate {
    Allows,
    Blocks,
    /// No source says, or the install does not tell.
    Unknown,
}

impl Gate {
    pub fn word(self) -> &'static str {
        match self {
            Gate::Allows => "allows",
            Gate::Blocks => "blocks",
            Gate::Unknown => "unknown",
        }
    }
}

/// The gate of a verdict, the one function from check's words to explain's: OK allows; a gap
/// that only slows (absent optional data: MIOpen's databases, tuning models) allows, as nothing
/// fails; a WARN that fails the programs taking one library's path, or was not checked, is
/// unknown (it depends on the program); MISSING blocks. A WARN whose cost is not known is
/// unknown.
pub fn gate(status: Status, cost: Option<Cost>) -> Gate {
    match (status, cost) {
        (Status::Ok, _) | (Status::Warn, Some(Cost::Slower)) => Gate::Allows,
        (Status::Missing, _) => Gate::Blocks,
        (Status::Warn, _) => Gate::Unknown,
    }
}

/// Several gates as one: any that blocks blocks, else any unknown is unknown; none at all is
/// unknown.
pub fn all_of(gates: impl Iterator<Item = Gate>) -> Gate {
    gates
        .fold(None, |acc, g| match (acc, g) {
            (Some(Gate::Blocks), _) | (_, Gate::Blocks) => Some(Gate::Blocks),
            (Some(Gate::Unknown), _) | (_, Gate::Unknown) => Some(Gate::Unknown),
            _ => Some(Gate::Allows),
        })
        .unwrap_or(Gate::Unknown)
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
    /// What the gap costs, when there is one: `fails` (MISSING), `fails-its-users` (WARN: the
    /// programs taking this library's path fail there), `slower` (WARN: nothing fails),
    /// `not-checked` (WARN). The status is read from it, and so is `explain`'s gate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
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
            status: rule.map_or(Status::Ok, GapRule::status),
            detail,
            consequence: rule.map(|r| r.consequence.replace("<arch>", arch)),
            loads: None,
            available: Vec::new(),
            via_generic: None,
            cost: rule.map(|r| r.cost),
        }
    }

    /// Its gate ([`gate`]).
    pub fn gate(&self) -> Gate {
        gate(self.status, self.cost)
    }

    /// Takes `rule`'s status, cost and consequence (for the device's `arch`).
    pub fn apply(&mut self, rule: &GapRule, arch: &str) {
        self.status = rule.status();
        self.cost = Some(rule.cost);
        self.consequence = Some(rule.consequence.replace("<arch>", arch));
    }
}
