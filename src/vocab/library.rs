//! Names of what gfxscan judges: the artifact families around the code, and the ROCm libraries
//! whose Tensile folders it reads, as ROCm spells them in paths and JSON.

use serde::{Deserialize, Serialize};

/// The library that loads a Tensile folder.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    #[default]
    Rocblas,
    Hipblaslt,
}

impl Component {
    /// Its name as ROCm spells it in paths and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Component::Rocblas => "rocblas",
            Component::Hipblaslt => "hipblaslt",
        }
    }
}

/// Artifact families that decide whether a GPU target can run, beyond host-library code.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// rocBLAS / hipBLASLt Tensile library files.
    Tensile,
    /// MIOpen databases and tuning models.
    Miopen,
    /// Linux amdgpu (and radeon) firmware blobs.
    Firmware,
    /// Device-library ISA bitcode (`oclc_isa_version_<isa>.bc`).
    Bitcode,
    /// AOTriton kernel images (`aotriton.images/amd-<pack>/`): PyTorch's flash and
    /// memory-efficient attention on ROCm.
    Aotriton,
}

impl Family {
    /// Its name as JSON spells it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Tensile => "tensile",
            Family::Miopen => "miopen",
            Family::Firmware => "firmware",
            Family::Bitcode => "bitcode",
            Family::Aotriton => "aotriton",
        }
    }
}
