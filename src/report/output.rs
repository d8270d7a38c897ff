//! Where a result goes: standard output, or a file written whole or not at all.
//!
//! A named output is checked before any scanning (its folder must exist and take a file), is
//! written to a temporary file beside it and renamed into place once complete, so a failed run
//! never leaves a half-written file. An existing output that is not a regular file (`/dev/full`,
//! a FIFO, `/dev/stdout`) is written in place, since renaming over it would replace the device.
//! Every error names the path. A reader that closes the pipe early is not an error: the run's
//! exit code stays the one its result deserves. SIGINT, SIGTERM and SIGHUP remove a staged file
//! before the process ends (exit 130, 143, 129: 128 + the signal), so an interrupted run leaves
//! no `.gfxscan-*.part` behind ([`end_cleanly_on_signals`]).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

use crate::exit::ExitStatus;

/// Staged outputs not yet in place: what a signal removes.
static STAGED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn staged() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    STAGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// From now on, SIGINT, SIGTERM and SIGHUP remove every staged output and end the process with
/// 128 + the signal (130, 143, 129), as a shell reports a process those signals ended.
pub fn end_cleanly_on_signals() -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            for path in staged().drain(..) {
                let _ = std::fs::remove_file(path);
            }
            std::process::exit(128 + sig);
        }
    })?;
    Ok(())
}

/// An output opened and checked before the work that fills it.
pub enum Output {
    /// Standard output (no `-o`, or `-o -`).
    Stdout,
    /// An existing non-regular file, written in place.
    InPlace { path: PathBuf, file: File },
    /// A regular file, staged in a temporary file in the same folder.
    Staged { path: PathBuf, temp: tempfile::NamedTempFile },
}

impl Output {
    /// Opens the output `path` names (stdout for none or `-`), failing now if it cannot be made.
    /// A name that is a symbolic link is written through: the file it leads to is replaced and
    /// the link stays a link, as a shell's redirection leaves it.
    pub fn open(path: Option<&Path>) -> anyhow::Result<Output> {
        let Some(asked) = path.filter(|p| p.as_os_str() != "-") else { return Ok(Output::Stdout) };
        // Standard output by another name (`/dev/stdout`, `/proc/self/fd/1`, the file it is
        // redirected to): written through the descriptor the shell opened (appending where
        // `>>` did), never staged and renamed over the file behind it.
        if place_of(Some(asked)) == Place::Stdout {
            return Ok(Output::Stdout);
        }
        // Another descriptor's file by a name of the kernel's (`/dev/stderr`, `/dev/fd/3`):
        // appended to in place, as a shell's redirection would take it.
        let kernels = asked.starts_with("/dev/") || asked.starts_with("/proc/");
        if kernels && std::fs::metadata(asked).is_ok_and(|m| m.is_file()) {
            let file = OpenOptions::new()
                .append(true)
                .open(asked)
                .with_context(|| format!("cannot write {}", asked.display()))?;
            return Ok(Output::InPlace { path: asked.to_path_buf(), file });
        }
        let path = landing(asked).with_context(|| format!("cannot write {}", asked.display()))?;
        let existing = std::fs::metadata(&path).ok();
        if existing.as_ref().is_some_and(|m| m.is_dir()) {
            anyhow::bail!("cannot write {}: it is a folder", asked.display());
        }
        if existing.as_ref().is_some_and(|m| !m.is_file()) {
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            return Ok(Output::InPlace { path, file });
        }
        let dir = folder_of(&path);
        if !dir.is_dir() {
            anyhow::bail!(
                "cannot write {}: the folder {} does not exist (make it first)",
                asked.display(),
                dir.display()
            );
        }
        // The staging file is ours: an error names the output asked for, not the `.part`.
        // Made with the mode a new file gets (0666 less the umask), not tempfile's 0600.
        let mode = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o666);
        // Made and listed under the lock the signal thread takes: a signal between the two
        // would find the file unlisted and leave it behind.
        let mut listed = staged();
        let temp = tempfile::Builder::new()
            .prefix(".gfxscan-")
            .suffix(".part")
            .permissions(mode)
            .tempfile_in(&dir)
            .map_err(|e| {
                let cause =
                    e.raw_os_error().map_or_else(|| io::Error::from(e.kind()), io::Error::from_raw_os_error);
                anyhow::anyhow!("cannot write {}: {cause}", asked.display())
            })?;
        listed.push(temp.path().to_path_buf());
        drop(listed);
        Ok(Output::Staged { path, temp })
    }

    /// Writes the result with `write` and completes the file. A closed pipe on standard output
    /// ends the writing quietly.
    pub fn deliver(
        self,
        status: ExitStatus,
        write: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
    ) -> anyhow::Result<ExitStatus> {
        self.fill(write)?.put_in_place()?;
        Ok(status)
    }

    /// Writes the result with `write`: standard output and an existing device at once, a
    /// staged file whole and synced to disk but not yet in place.
    fn fill(self, write: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>) -> anyhow::Result<Filled> {
        match self {
            Output::Stdout => {
                let mut out = BufWriter::new(io::stdout().lock());
                let done = write(&mut out).and_then(|()| out.flush().map_err(anyhow::Error::from));
                match done {
                    Err(e) if is_broken_pipe(&e) => Ok(Filled::Done),
                    Err(e) => Err(e.context("cannot write standard output")),
                    Ok(()) => Ok(Filled::Done),
                }
            }
            Output::InPlace { path, file } => {
                let mut out = BufWriter::new(file);
                write(&mut out)
                    .and_then(|()| out.flush().map_err(anyhow::Error::from))
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Ok(Filled::Done)
            }
            Output::Staged { path, temp } => {
                let mut out = BufWriter::new(temp);
                // A failure drops the temporary file, which removes it.
                write(&mut out)
                    .and_then(|()| out.flush().map_err(anyhow::Error::from))
                    .with_context(|| format!("cannot write {}", path.display()))?;
                let temp = out.into_inner().map_err(|e| e.into_error())?;
                temp.as_file().sync_all().with_context(|| format!("cannot write {}", path.display()))?;
                Ok(Filled::Staged { path, temp })
            }
        }
    }
}

/// How many symbolic links a name may pass through before it is refused (Linux's own limit,
/// `MAXSYMLINKS` in fs/namei.c).
const MAX_LINKS: usize = 40;

/// The file a name lands in: the name itself, or, for a symbolic link to a regular file or to
/// nothing yet, the file its chain of links leads to (whether or not that file exists yet; a relative link is read from its own
/// folder).
fn landing(path: &Path) -> io::Result<PathBuf> {
    // A device, a FIFO or a pipe (`/dev/stdout` through /proc's magic links) is written in
    // place through the name as given.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Ok(path.to_path_buf());
    }
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at)?;
                at = if to.is_absolute() { to } else { folder_of(&at).join(to) };
            }
            _ => return Ok(at),
        }
    }
    Err(io::Error::other(format!("more than {MAX_LINKS} symbolic links in a row")))
}

/// The folder a file name is in (`.` for a bare name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// What makes two outputs one place: standard output, an existing file's device and inode
/// (hard links, links and every spelling of a name alike), or a file not there yet by its
/// folder's real path and its name.
#[derive(Debug, PartialEq, Eq)]
enum Place {
    Stdout,
    /// `/dev/null`, which takes any number of outputs.
    Null,
    Inode(u64, u64),
    New(PathBuf),
}

/// The place an output goes to (`None`: standard output).
fn place_of(path: Option<&Path>) -> Place {
    use std::os::unix::fs::MetadataExt;
    let Some(path) = path.filter(|p| p.as_os_str() != "-") else { return Place::Stdout };
    let land = landing(path).unwrap_or_else(|_| path.to_path_buf());
    match std::fs::metadata(&land) {
        Ok(m) if is_null(&m) => Place::Null,
        Ok(m) if stdout_inode().is_some_and(|(d, i)| (d, i) == (m.dev(), m.ino())) => Place::Stdout,
        Ok(m) => Place::Inode(m.dev(), m.ino()),
        Err(_) => {
            let dir = std::fs::canonicalize(folder_of(&land)).unwrap_or_else(|_| folder_of(&land));
            Place::New(dir.join(land.file_name().unwrap_or_default()))
        }
    }
}

/// Standard output's device and inode, when it has them.
fn stdout_inode() -> Option<(u64, u64)> {
    let st = rustix::fs::fstat(io::stdout()).ok()?;
    Some((st.st_dev, st.st_ino as u64))
}

/// True for `/dev/null`, which takes any number of outputs.
fn is_null(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/dev/null").is_ok_and(|n| (n.dev(), n.ino()) == (m.dev(), m.ino()))
}

/// Refuses, before any work, two outputs that land in one place by any spelling: `./a`, an
/// absolute path, `sub/../a`, a symbolic or a hard link to the same file, and standard output
/// by `-`, `/dev/stdout` or the file it is redirected to. Each output would replace the other's
/// document, or two documents would run into one stream.
pub fn one_place_each(paths: &[Option<&Path>]) -> anyhow::Result<()> {
    let places: Vec<Place> = paths.iter().map(|p| place_of(*p)).collect();
    for (i, place) in places.iter().enumerate() {
        if *place == Place::Null {
            continue;
        }
        if let Some(j) = places[..i].iter().position(|p| p == place) {
            let name = |p: Option<&Path>| p.map_or("-".to_string(), |p| p.display().to_string());
            let (a, b) = (name(paths[j]), name(paths[i]));
            let what = match place {
                Place::Stdout => "standard output".to_string(),
                _ => "one file".to_string(),
            };
            anyhow::bail!("-o: two outputs go to {what} ({a} and {b}): give each its own place");
        }
    }
    Ok(())
}

/// An output written in full: done, or a staged file to rename into place.
enum Filled {
    Done,
    Staged { path: PathBuf, temp: tempfile::NamedTempFile },
}

impl Filled {
    /// Renames a staged file into place (nothing for a signal to remove afterwards).
    fn put_in_place(self) -> anyhow::Result<()> {
        let Filled::Staged { path, temp } = self else { return Ok(()) };
        let part = temp.path().to_path_buf();
        let kept = temp.persist(&path).with_context(|| format!("cannot write {}", path.display()));
        staged().retain(|p| p != &part);
        kept?;
        Ok(())
    }
}

/// True when an error chain holds a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

/// One output of a run, opened before the work that fills it: its format, where it goes, and
/// how it meets its reader (colour and width for a terminal, plain for a file).
pub struct Planned {
    pub format: crate::cli::OutputFormat,
    pub output: Output,
    pub style: crate::report::Style,
}

/// Writes the run's result to every planned output, each in its own format, as one: every
/// file is written whole and synced first, then standard output, and only then are the files
/// renamed into place. An output that cannot be written fails the run before any file has
/// been replaced (the staged ones are removed).
pub fn deliver_all(
    planned: Vec<Planned>,
    status: ExitStatus,
    write: impl Fn(crate::cli::OutputFormat, crate::report::Style, &mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<ExitStatus> {
    let (to_stdout, to_files): (Vec<Planned>, Vec<Planned>) =
        planned.into_iter().partition(|p| matches!(p.output, Output::Stdout));
    let mut filled = Vec::new();
    for p in to_files.into_iter().chain(to_stdout) {
        filled.push(p.output.fill(|w| match p.format.is_text() {
            // Text goes to terminals, spreadsheets and logs: control characters escaped
            // (`report::safe`). JSON escapes its own, HTML's are inert.
            true => {
                let mut safe = crate::report::safe::TerminalSafe::new(w, p.style.color);
                write(p.format, p.style, &mut safe)?;
                safe.flush().map_err(anyhow::Error::from)
            }
            false => write(p.format, p.style, w),
        })?);
    }
    for f in filled {
        f.put_in_place()?;
    }
    Ok(status)
}
