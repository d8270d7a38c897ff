//! Test harness: a scratch tree ([`Tree`], after ripgrep's `Dir` and fd's `TestEnv`) that
//! holds files made from bytes, and [`gfxscan`], which runs the real binary with a time limit
//! and returns its exit code, stdout and stderr. Every run is checked not to have panicked, and
//! the JSON document it writes (to stdout or `-o FILE`) to match its committed schema.

use std::ffi::{CString, OsStr};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use tempfile::TempDir;

/// The longest a single run of the binary may take before the test fails.
pub const RUN_LIMIT: Duration = Duration::from_secs(60);

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Run {
    /// Exit code (a run killed by a signal fails the test in [`gfxscan`]).
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Run {
    /// Stdout parsed as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr)
        })
    }

    /// Fails with the whole run shown unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "unexpected exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Runs `gfxscan ARGS...` with no stdin, and fails the test if it hangs, dies by a signal or
/// panics.
pub fn gfxscan<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    cmd.args(args);
    run(cmd)
}

/// Reads a child's stdout and stderr to the end on two threads, so neither pipe can fill and
/// stall it.
pub fn drain_pipes(child: &mut std::process::Child) -> (JoinHandle<Vec<u8>>, JoinHandle<Vec<u8>>) {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                p.read_to_end(&mut buf).expect("pipe readable");
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    (out, err)
}

/// Runs a prepared gfxscan command (arguments, environment) under the same watch as
/// [`gfxscan`]: no stdin, a time limit, no panic, no death by signal.
pub fn run(mut cmd: Command) -> Run {
    let what = format!("{cmd:?}");
    let document = Document::of(&cmd);
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gfxscan starts");
    let (out, err) = drain_pipes(&mut child);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for gfxscan") {
            break s;
        }
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let stdout = String::from_utf8(out.join().expect("stdout reader")).expect("stdout is UTF-8");
    let stderr = String::from_utf8_lossy(&err.join().expect("stderr reader")).into_owned();
    assert!(!stderr.contains("panicked"), "{what} panicked:\n{stderr}");
    let code = status.code().unwrap_or_else(|| panic!("{what} killed by a signal: {status}\n{stderr}"));
    if let Some(d) = document {
        d.validate(&what, &stdout);
    }
    Run { code, stdout, stderr, elapsed }
}

/// The JSON documents a run of the binary writes, as its arguments say: their kind (the name
/// of their schema), and where each goes: standard output, or a file with its modification
/// time before the run.
struct Document {
    kind: &'static str,
    places: Vec<(Place, Option<Written>)>,
}

/// A file a run writes, and its modification time before the run.
type Written = (PathBuf, Option<SystemTime>);

/// What one place of a run holds: a JSON document, or JSON Lines of records (`--format
/// jsonl`), each line a `record`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Document,
    Lines,
}

impl Document {
    /// What `cmd` writes as JSON or JSON Lines, if it is gfxscan: its command line parsed as
    /// the binary parses it, its outputs resolved by the binary's own rule
    /// (`cli::resolve_outputs`), so the hook cannot read a format otherwise than the binary
    /// does. `scan --keep` writes the prune report.
    fn of(cmd: &Command) -> Option<Document> {
        use gfxscan::cli::{Cli, Command as Sub, OutputFormat};
        if cmd.get_program() != OsStr::new(env!("CARGO_BIN_EXE_gfxscan")) {
            return None;
        }
        let cli = <Cli as clap::Parser>::try_parse_from(
            std::iter::once(OsStr::new("gfxscan")).chain(cmd.get_args()),
        )
        .ok()?;
        let (kind, json, format, outputs, takes) = match &cli.command {
            Sub::Scan(a) if !a.keep.is_empty() => {
                ("prune", a.json, a.format, &a.opts.outputs, OutputFormat::PRUNE)
            }
            Sub::Scan(a) => ("snapshot", a.json, a.format, &a.opts.outputs, OutputFormat::SCAN),
            Sub::Check(a) => ("check", a.json, a.format, &a.opts.outputs, OutputFormat::CHECK),
            Sub::Diff(a) => ("diff", a.json, a.format, &a.outputs, OutputFormat::DIFF),
            Sub::Merge(a) => ("merge", a.json, a.format, &a.outputs, OutputFormat::MERGE),
            Sub::Explain(a) => ("explain", a.json, a.format, &a.opts.outputs, OutputFormat::EXPLAIN),
            Sub::Targets(a) if a.json => {
                return Some(Document { kind: "targets", places: vec![(Place::Document, None)] })
            }
            _ => return None,
        };
        let planned = gfxscan::cli::resolve_outputs(json, format, outputs, takes).ok()?;
        let places: Vec<(Place, Option<Written>)> = planned
            .into_iter()
            .filter_map(|(f, path)| {
                let place = match f {
                    OutputFormat::Json => Place::Document,
                    OutputFormat::Jsonl => Place::Lines,
                    _ => return None,
                };
                let file = path.map(|p| {
                    let path = cmd.get_current_dir().map_or_else(|| p.clone(), |d| d.join(&p));
                    let before = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
                    (path, before)
                });
                Some((place, file))
            })
            .collect();
        (!places.is_empty()).then_some(Document { kind, places })
    }

    /// Fails the test unless what the run wrote is a valid document of its kind. Nothing
    /// written (an error), or a file the run left as it was, is not checked.
    fn validate(&self, what: &str, stdout: &str) {
        for (place, file) in &self.places {
            let check = |text: &str, what: &str| match place {
                Place::Document => crate::documents::expect_valid_text(self.kind, text, what),
                Place::Lines => {
                    for (i, line) in text.lines().enumerate() {
                        crate::documents::expect_valid_text(
                            "record",
                            line,
                            &format!("{what}, line {}", i + 1),
                        );
                    }
                }
            };
            let Some((path, before)) = file else {
                if !stdout.is_empty() {
                    check(stdout, what);
                }
                continue;
            };
            let Ok(meta) = std::fs::metadata(path) else { continue };
            if meta.is_file() && meta.modified().ok() != *before {
                let text = std::fs::read_to_string(path).expect("a written document");
                check(&text, &format!("{what} -> {}", path.display()));
            }
        }
    }
}

/// A scratch folder to scan, deleted when dropped.
pub struct Tree {
    dir: TempDir,
}

impl Tree {
    pub fn new() -> Self {
        Tree { dir: TempDir::new().expect("temp dir") }
    }

    /// The tree's root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The root as a string, as it appears in `roots` of the JSON.
    pub fn root_str(&self) -> String {
        self.root().display().to_string()
    }

    /// `root/rel`.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root().join(rel)
    }

    /// Writes `bytes` to `rel` (a `/`-separated path, parents created).
    pub fn file(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> &Self {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("create parent folders");
        }
        std::fs::write(&p, bytes).expect("write fixture");
        self
    }

    /// Creates a symlink at `rel` pointing to `target` (taken literally, as `ln -s` does).
    pub fn symlink(&self, target: impl AsRef<Path>, rel: impl AsRef<Path>) -> &Self {
        if let Some(dir) = self.path(&rel).parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::os::unix::fs::symlink(target, self.path(rel)).expect("create symlink");
        self
    }

    /// Creates a FIFO at `rel`.
    pub fn fifo(&self, rel: impl AsRef<Path>) -> &Self {
        if let Some(dir) = self.path(&rel).parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        let p = CString::new(self.path(rel).as_os_str().as_bytes()).expect("no NUL in path");
        // SAFETY: `p` is a valid NUL-terminated path that outlives the call.
        let rc = unsafe { libc::mkfifo(p.as_ptr(), 0o644) };
        assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
        self
    }

    /// Runs `gfxscan scan ROOT EXTRA...`.
    pub fn scan(&self, extra: &[&str]) -> Run {
        let mut args: Vec<&OsStr> = vec![OsStr::new("scan"), self.root().as_os_str()];
        args.extend(extra.iter().map(OsStr::new));
        gfxscan(args)
    }

    /// Runs `gfxscan scan ROOT --json EXTRA...` and parses the snapshot.
    pub fn scan_json(&self, extra: &[&str]) -> (Run, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(extra);
        let run = self.scan(&all);
        let json = run.json();
        (run, json)
    }
}

/// One field of each code object's `location` in a file record, in order (`""` where absent).
pub fn location_field<'a>(file: &'a Value, field: &str) -> Vec<&'a str> {
    let objects = file["code_objects"].as_array().map_or(&[][..], Vec::as_slice);
    objects.iter().map(|c| c["location"][field].as_str().unwrap_or("")).collect()
}

/// The file record with relative path `path` in a snapshot, or a failure listing the paths.
#[track_caller]
pub fn file_record<'a>(snap: &'a Value, path: &str) -> &'a Value {
    let files = snap["files"].as_array().expect("files is an array");
    files.iter().find(|f| f["path"] == path).unwrap_or_else(|| {
        let paths: Vec<&Value> = files.iter().map(|f| &f["path"]).collect();
        panic!("no file record for {path:?}; have {paths:?}")
    })
}

/// The `path` of every file record, in output order.
pub fn file_paths(snap: &Value) -> Vec<String> {
    snap["files"]
        .as_array()
        .expect("files is an array")
        .iter()
        .map(|f| f["path"].as_str().expect("path is a string").to_string())
        .collect()
}

/// `(path, message)` of every problem, in output order.
pub fn problems(snap: &Value) -> Vec<(String, String)> {
    snap["problems"]
        .as_array()
        .expect("problems is an array")
        .iter()
        .map(|p| {
            (
                p["path"].as_str().expect("problem path").to_string(),
                p["message"].as_str().expect("problem message").to_string(),
            )
        })
        .collect()
}

/// Where `needle` first occurs in `hay` (to find where a fixture placed a section).
#[track_caller]
pub fn offset_of(hay: &[u8], needle: &[u8]) -> u64 {
    memchr::memmem::find(hay, needle).expect("needle present") as u64
}

/// A deterministic byte stream (64-bit LCG): incompressible filler and "garbage".
pub fn garbage(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

/// Says a test was skipped where the person running the tests sees it: written to the process's
/// standard error, past the test harness's capture (which hides a passing test's output and
/// would leave only "ok").
pub fn skipped(why: &str) {
    use std::io::Write;
    let name = std::thread::current().name().unwrap_or("a test").to_string();
    let _ = writeln!(std::io::stderr(), "test {name} ... skipped: {why}");
}

/// An outside tool a test runs (a validator `.ci/run` installs): the path the variable `var`
/// names, else `name` when it is on `PATH` and answers `probe` (`--version`, `--help`).
pub fn find_tool(var: &str, name: &str, probe: &str) -> Option<String> {
    let named = std::env::var(var).ok().filter(|s| !s.is_empty());
    named.or_else(|| {
        let ok = Command::new(name).arg(probe).output().is_ok_and(|o| o.status.success());
        ok.then(|| name.to_string())
    })
}

/// [`find_tool`], saying the test is skipped (with `hint`, where to get it) when there is none.
pub fn tool_or_skip(var: &str, name: &str, probe: &str, hint: &str) -> Option<String> {
    let found = find_tool(var, name, probe);
    if found.is_none() {
        skipped(&format!("no {name} ({hint})"));
    }
    found
}
