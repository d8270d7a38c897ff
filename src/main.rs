//! The `gfxscan` binary: parse the command line, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;
use gfxscan::exit::ExitStatus;

/// glibc's malloc arenas: by default up to eight per core, each keeping the buffers its
/// threads freed. Few arenas share freed inflate windows between threads instead (measured on
/// hipBLASLt's library at -j 8: 336 MB peak with the default, 168 MB with two, for ~5% time).
const ARENAS: libc::c_int = 2;

fn main() -> ExitCode {
    // SAFETY: mallopt only sets allocator parameters, before any other thread exists.
    #[cfg(target_env = "gnu")]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
    // An interrupted run removes its staged output and ends with 128 + the signal.
    if let Err(e) = gfxscan::report::output::end_cleanly_on_signals() {
        eprintln!("warning: signals not handled ({e}): an interrupted run may leave a .part file");
    }
    let cli = gfxscan::cli::Cli::parse();
    match gfxscan::run(cli) {
        Ok(status) => status.into(),
        Err(err) => {
            // A closed pipe (`gfxscan scan | head`) is not an error.
            let broken_pipe = err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {}", gfxscan::report::safe::shown_lines(&format!("{err:#}")));
            ExitStatus::Fatal.into()
        }
    }
}
