//! Library components: the ROCm libraries whose Tensile folders gfxscan judges, by the names
//! ROCm gives them in paths and JSON.

use serde::{Deserialize, Serialize};

/// The library that loads a Tensile folder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
