//! Progress on stderr: a spinner counting the files read (they are read as the walk finds
//! them, so no total is known), a bar per image fetched from a registry (bytes received of
//! its layers' size), live warnings above them.
//! Drawn only when stderr is a terminal and not `--quiet`; otherwise everything here is silent,
//! but for what `--verbose` asks to be told (the memory the scan aims under).

use std::io::IsTerminal;

use std::sync::Arc;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::Problem;
use crate::scan::Progress;

/// The scan's progress display.
pub struct Bar {
    multi: MultiProgress,
    bar: ProgressBar,
    warn: bool,
}

impl Bar {
    /// A bar on stderr, or a hidden one when stderr is not a terminal, the terminal is `dumb`
    /// (it cannot move the cursor), or `quiet` is set.
    pub fn new(quiet: bool) -> Self {
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        let shown = !quiet && !dumb && std::io::stderr().is_terminal();
        let multi = MultiProgress::with_draw_target(if shown {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        let bar = multi.add(ProgressBar::no_length());
        if shown {
            bar.set_style(
                ProgressStyle::with_template("{spinner} {pos} files read  {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
        }
        Bar { multi, bar, warn: shown }
    }

    /// Removes the bars.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        let _ = self.multi.clear();
    }
}

impl Progress for Bar {
    fn file_done(&self) {
        self.bar.inc(1);
    }

    fn problem(&self, roots: &[String], p: &Problem) {
        if self.warn {
            let line = format!("{}: {}", p.path.display(roots), p.message);
            let _ = self.multi.println(format!("warning: {}", super::safe::shown(&line)));
        }
    }

    fn image(&self, name: &str, bytes: u64) -> Arc<dyn Fn(u64) + Send + Sync> {
        if !self.warn {
            return Arc::new(|_| {});
        }
        let bar = self.multi.add(ProgressBar::new(bytes));
        bar.set_style(
            ProgressStyle::with_template("{prefix} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_prefix(super::safe::shown(name).into_owned());
        Arc::new(move |n| bar.inc(n))
    }
}

/// `--verbose`: the memory the scan aims under, and where that figure came from, on stderr.
pub fn say_memory(aim: u64, given: bool, room: Option<crate::source::memory::Room>) {
    use crate::vocab::units::human_bytes;
    let why = match (given, room) {
        (true, _) => "as --max-memory says".to_string(),
        (false, Some(r)) => format!(
            "a quarter of the {} {} leaves this process, within 100 MiB to 2 GiB; --max-memory sets it",
            human_bytes(r.bytes),
            r.from.name()
        ),
        (false, None) => "the machine's memory could not be read; --max-memory sets it".to_string(),
    };
    eprintln!("memory: the scan aims under {} ({why})", human_bytes(aim));
}

/// `--reuse`: what one snapshot gave the scan, on stderr (unless `quiet`).
pub fn say_reuse(quiet: bool, path: &std::path::Path, taken: &crate::reuse::Taken) {
    use crate::reuse::Taken;
    if quiet {
        return;
    }
    let why = match taken {
        Taken::Absent => "does not exist yet: every file is read".to_string(),
        Taken::Unreadable(e) => format!("cannot be reused ({e}): every file is read"),
        Taken::NoIdentities => {
            "records no file identities (not written by `scan --reuse`): nothing reused".to_string()
        }
        Taken::OtherReader(r) => format!("was read by another build of gfxscan ({r}): nothing reused"),
        Taken::OtherTargets => "was read with another target table: nothing reused".to_string(),
        Taken::OtherCredentials(c) if c.is_empty() => {
            "does not say who read it (an older gfxscan): nothing reused".to_string()
        }
        Taken::OtherCredentials(c) => {
            format!("was read as another user or with other groups or capabilities ({c}): nothing reused")
        }
        Taken::NoDigests => "has no digests and this scan takes them: nothing reused".to_string(),
        Taken::OtherRoots => "is of other roots: nothing reused".to_string(),
        Taken::Files(n) => format!("knows {n} files of these roots: each one unchanged is not read again"),
        Taken::Unchanged => {
            "nothing it was made from has changed (each file's stat, each link): it is this scan's JSON"
                .to_string()
        }
    };
    let line = format!("reuse: {}: {why}", path.display());
    eprintln!("{}", super::safe::shown(&line));
}
