//! Exit codes, in one place (documented in README "Exit codes").

use std::process::ExitCode;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// 0: finished, every file read; `check`: every required piece present; `diff`: ran.
    Clean,
    /// 1 (`scan`): finished, but some files could not be fully read (listed as problems).
    Problems,
    /// 1 (`check`): some GPU lacks a required piece; (`diff --fail-on-loss`): a device lost its
    /// code.
    Missing,
    /// 2: could not run (bad arguments, no root, bad targets file, an output that cannot be
    /// written, a side of `diff` that is not a snapshot).
    Fatal,
    /// 3 (`check`, `diff`): some files could not be read, so the verdict cannot be trusted: no
    /// OK, and no loss, is claimed from a partial read.
    Incomplete,
    /// 4 (`check`): no library with device code under the roots: nothing was checked.
    NothingToCheck,
    /// 5 (`scan --fail-on-findings`): every file was read, and the install is broken as
    /// shipped (findings).
    Findings,
}

impl ExitStatus {
    /// Every status with what it means, for the manual pages' EXIT STATUS.
    pub const MEANINGS: [(ExitStatus, &'static str); 7] = [
        (ExitStatus::Clean, "finished, every file read; check: every required piece present; diff: no loss asked about"),
        (ExitStatus::Problems, "scan: finished, but some files could not be fully read (listed as problems)"),
        (ExitStatus::Missing, "check: some GPU lacks a required piece; diff --fail-on-loss: some GPU's verdict got worse; merge --gpu: a source lacks a piece"),
        (ExitStatus::Fatal, "could not run: bad arguments, an unreadable or missing root, a bad targets file, an output that cannot be written, a snapshot that is none"),
        (ExitStatus::Incomplete, "check, diff, merge: some files could not be read, so no OK (and no loss) is claimed"),
        (ExitStatus::NothingToCheck, "check: no library with device code under the roots"),
        (ExitStatus::Findings, "scan --fail-on-findings: every file read, and the install is broken as shipped"),
    ];

    /// The process exit code.
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Clean => 0,
            ExitStatus::Problems | ExitStatus::Missing => 1,
            ExitStatus::Fatal => 2,
            ExitStatus::Incomplete => 3,
            ExitStatus::NothingToCheck => 4,
            ExitStatus::Findings => 5,
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
            [
                ExitStatus::Clean,
                ExitStatus::Problems,
                ExitStatus::Missing,
                ExitStatus::Fatal,
                ExitStatus::Incomplete,
                ExitStatus::NothingToCheck,
                ExitStatus::Findings
            ]
            .map(ExitStatus::code),
            [0, 1, 1, 2, 3, 4, 5]
        );
    }
}
