//! Exit codes, in one place (documented in README "Exit codes").

use std::process::ExitCode;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: finished, every file read.
    Clean,
    /// 1: finished, but some files could not be fully read (listed as problems).
    Problems,
    /// 1 (`check`): some GPU lacks a required piece.
    Missing,
    /// 2: could not run (bad arguments, no root, bad targets file, write failure).
    Fatal,
}

impl ExitStatus {
    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Clean => 0,
            ExitStatus::Problems | ExitStatus::Missing => 1,
            ExitStatus::Fatal => 2,
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        ExitCode::from(s.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(
            [ExitStatus::Clean, ExitStatus::Problems, ExitStatus::Fatal].map(ExitStatus::code),
            [0, 1, 2]
        );
    }
}
