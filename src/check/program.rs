//! What one program loads (`check --exe`): its closure as the dynamic loader resolves it, the
//! libraries it loads at run time, the data folders they read — the files whose verdicts are
//! the program's — and whether it starts at all.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::parse::dynamic::parse_dynamic;
use crate::source::dlopen::{data_dirs, follow, ollama_runner_path, DataDir, DataKind, RunTimeLoad};
use crate::source::file::open_file;
use crate::source::loader::{Closure, Loader, LoaderEnv, Object, Through};
use crate::source::process::Process;
use crate::source::rooted::in_root;
use crate::vocab::verdict::Status;

/// A program's loads, as found.
pub struct ProgramLoads {
    pub closure: Closure,
    pub runtime: Vec<RunTimeLoad>,
    /// The data folders its libraries read, found or not.
    pub data: Vec<DataDir>,
    /// Files a running process has mapped that could not be read from here.
    pub unread: Vec<String>,
}

/// Resolves `program` inside `env`'s root, then follows its run-time loads and the data folders
/// its libraries read; `var` is the program's environment.
pub fn load(
    program: &str,
    env: &LoaderEnv,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<ProgramLoads, String> {
    let loader = Loader::program(program, env)?;
    // Ollama loads GPU code in a runner: the same program, started with its library folders
    // first in LD_LIBRARY_PATH.
    let runner_env =
        ollama_runner_path(&loader, var).map(|llp| LoaderEnv { ld_library_path: Some(llp), ..env.clone() });
    let mut loader = match &runner_env {
        Some(runner) => Loader::program(program, runner)?,
        None => loader,
    };
    let runtime = follow(&mut loader, var);
    let data = data_dirs(&loader.closure.objects, loader.root(), var);
    // The search is glibc's on x86-64: another loader's (musl's) or machine's is not
    // emulated, and no OK is given for it.
    let mut unread = Vec::new();
    if let Some(p) = loader.closure.objects.first() {
        let interp = p.dynamic.interp.as_deref().unwrap_or_default();
        if interp.contains("ld-musl") || (p.dynamic.machine != 62 && p.dynamic.dynamic) {
            unread.push(format!(
                "{}: its loader ({interp}, machine {}) is not glibc's on x86-64, whose search gfxscan follows",
                p.path.display(),
                p.dynamic.machine
            ));
        }
    }
    Ok(ProgramLoads { closure: loader.closure, runtime, data, unread })
}

/// What a running process has loaded (`/proc/<pid>/maps`): its program, then each ELF object
/// it has mapped, each tied to the first object before it that needs it by name (else mapped
/// at run time); and the data folders they read under its environment.
pub fn from_process(p: &Process) -> ProgramLoads {
    let mut closure = Closure::default();
    let mut unread = Vec::new();
    let var = |k: &str| p.env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let program = p.mapped.iter().find(|m| m.path == p.exe).cloned();
    let files = program.into_iter().chain(p.mapped.iter().filter(|m| m.path != p.exe).cloned());
    for m in files {
        if m.deleted {
            unread.push(format!("{}: deleted since it was mapped; its code cannot be read", m.path));
            continue;
        }
        // Only regular files are opened: a device the process maps (/dev/kfd, a render node)
        // would run its driver's open.
        let Some(file) = in_root(&p.root, Path::new(&m.path))
            .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|x| x.is_file()))
        else {
            if !m.path.starts_with("/dev/") {
                unread.push(format!("{}: mapped, but not found as a file from here", m.path));
            }
            continue;
        };
        let dynamic = match open_file(&file, false)
            .map_err(|e| e.to_string())
            .and_then(|src| parse_dynamic(&src).map_err(|e| e.to_string()))
        {
            Ok(d) => d,
            // Data files it maps (fonts, locale archives) are not ELF: not libraries.
            Err(_) => continue,
        };
        let name =
            Path::new(&m.path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let first = closure.objects.is_empty();
        closure.objects.push(Object {
            path: PathBuf::from(&m.path),
            file,
            name: dynamic.soname.clone().unwrap_or(name),
            needed_by: (!first).then_some(0),
            through: if first { Through::Program } else { Through::Mapped },
            dynamic,
        });
    }
    // Then each is tied to the first object (in load order, the program first) that needs it
    // by name: `maps` lists files by address, not in the order they were loaded.
    let needs: Vec<Vec<String>> = closure.objects.iter().map(|o| o.dynamic.needed.clone()).collect();
    for (i, o) in closure.objects.iter_mut().enumerate().skip(1) {
        let file = o.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let needer =
            needs.iter().enumerate().find(|(k, n)| *k != i && n.iter().any(|x| *x == o.name || *x == file));
        match needer {
            Some((k, _)) => o.needed_by = Some(k),
            None => o.through = Through::Dlopen { by: "the process (mapped at run time)".into() },
        }
    }
    let data = data_dirs(&closure.objects, &p.root, &var);
    ProgramLoads { closure, runtime: Vec::new(), data, unread }
}

impl ProgramLoads {
    /// The files and folders the scan reads: every loaded object's file, then each data folder
    /// (on this machine: inside the root, links resolved).
    pub fn files(&self, root: &Path) -> Vec<PathBuf> {
        let objects = self.closure.objects.iter().map(|o| o.file.clone());
        let data = self.data.iter().filter_map(|d| d.folder.as_ref()).filter_map(|d| in_root(root, d));
        let mut out: Vec<PathBuf> = objects.chain(data).collect();
        out.sort();
        out.dedup();
        // A file inside a folder also walked is walked once.
        let folders: Vec<PathBuf> = out.iter().filter(|p| p.is_dir()).cloned().collect();
        out.retain(|p| !folders.iter().any(|f| p != f && p.starts_with(f)));
        out
    }

    /// The chain that loads `objects[i]`, the object first: `librocblas.so.4 ← libggml-hip.so
    /// (dlopen) ← libggml.so.0 ← llama-cli`.
    fn chain(&self, i: usize) -> Vec<String> {
        let objects = &self.closure.objects;
        let mut out = Vec::new();
        let mut at = Some(i);
        while let Some(o) = at.and_then(|k| objects.get(k)) {
            let name = o.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let shown = if o.name.contains('/') || o.needed_by.is_none() { name } else { o.name.clone() };
            out.push(match o.through {
                Through::Dlopen { .. } => format!("{shown} (dlopen)"),
                _ => shown,
            });
            at = o.needed_by.filter(|n| Some(*n) != at && out.len() < 64);
        }
        out
    }

    /// The report of what it loads, and whether it starts; `shown` is the root as given, `root`
    /// the real folder its files are in.
    pub fn report(&self, program: &str, shown: &Path, root: &Path) -> ProgramReport {
        let objects = &self.closure.objects;
        let loads = objects
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, o)| LoadedLibrary {
                name: o.name.clone(),
                path: o.path.display().to_string(),
                file: o
                    .file
                    .strip_prefix(root)
                    .map_or_else(|_| o.file.clone(), |r| Path::new("/").join(r))
                    .display()
                    .to_string(),
                chain: self.chain(i),
                through: o.through.describe(),
            })
            .collect();
        let missing: Vec<MissingLibrary> = self
            .closure
            .missing
            .iter()
            .map(|m| MissingLibrary {
                name: m.name.clone(),
                needed_by: self.chain(m.needed_by),
                other_class: m.other_class.iter().map(|p| p.display().to_string()).collect(),
            })
            .collect();
        let runtime = self
            .runtime
            .iter()
            .map(|r| RunTimeLibrary {
                what: r.what.clone(),
                name: r.name.clone(),
                by: self.chain(r.by),
                loaded: r
                    .loaded
                    .as_ref()
                    .ok()
                    .and_then(|&i| objects.get(i))
                    .map(|o| o.path.display().to_string()),
                failed: r.loaded.as_ref().err().cloned(),
                gpu: r.gpu,
            })
            .collect();
        let data = self
            .data
            .iter()
            .filter_map(|d| {
                Some(DataFolder {
                    folder: d.folder.as_ref()?.display().to_string(),
                    read_by: self.chain(d.by),
                })
            })
            .collect();
        let lacking: Vec<MissingData> = self
            .data
            .iter()
            .filter(|d| d.folder.is_none())
            .map(|d| MissingData {
                library: self.chain(d.by),
                looked: d.looked.iter().map(|p| p.display().to_string()).collect(),
                status: match d.kind {
                    DataKind::Rocblas => Status::Missing,
                    DataKind::Hipblaslt | DataKind::Miopen => Status::Warn,
                },
                effect: match d.kind {
                    DataKind::Rocblas => {
                        "rocBLAS aborts at its first GEMM (\"Cannot read …TensileLibrary.dat\")"
                    }
                    DataKind::Hipblaslt => "hipBLASLt's matmuls fail; callers fall back to rocBLAS",
                    DataKind::Miopen => "MIOpen runs with default tuning",
                }
                .to_string(),
            })
            .collect();
        // A name found nowhere at start stops the program; one a `dlopen` needs unwinds that
        // `dlopen` instead and is no `Missing` here (see `Loader::dlopen`).
        let starts = missing.is_empty() && self.closure.problems.is_empty();
        let loads_all = self.runtime.iter().filter(|r| r.gpu).all(|r| r.loaded.is_ok());
        let status = match (starts && loads_all, lacking.iter().map(|l| l.status).max()) {
            (false, _) => Status::Missing,
            (true, worst) => worst.unwrap_or(Status::Ok),
        };
        ProgramReport {
            program: program.to_string(),
            root: shown.display().to_string(),
            status,
            starts,
            loads,
            missing,
            runtime,
            data,
            lacking,
            problems: self.closure.problems.clone(),
            unread: self.unread.clone(),
        }
    }
}

/// What a program loads, for `check --exe` (text and JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ProgramReport {
    /// The program as given.
    pub program: String,
    /// The root it runs in (`/`, or `--root`).
    pub root: String,
    /// MISSING when it does not start or a library it loads at run time cannot be loaded.
    pub status: Status,
    /// False when a library it needs at start is nowhere or cannot be mapped: "error while
    /// loading shared libraries".
    pub starts: bool,
    /// Every library it loads, in load order, with the chain that loads it and how it was found.
    pub loads: Vec<LoadedLibrary>,
    /// Names found nowhere.
    pub missing: Vec<MissingLibrary>,
    /// Libraries loaded at run time (`dlopen`), followed as their callers look for them.
    pub runtime: Vec<RunTimeLibrary>,
    /// Data folders the loaded libraries read (Tensile libraries, MIOpen databases).
    pub data: Vec<DataFolder>,
    /// Data folders a loaded library reads that are not there.
    pub lacking: Vec<MissingData>,
    /// Files met that the loader cannot map (it stops there).
    pub problems: Vec<String>,
    /// Files a running process has mapped that could not be read from here: no OK is given
    /// for what was not read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LoadedLibrary {
    /// The name it was asked for by.
    pub name: String,
    /// Its path, as the program sees it.
    pub path: String,
    /// The file that is, links resolved (inside the root).
    pub file: String,
    /// It, then what loaded it, up to the program.
    pub chain: Vec<String>,
    /// How it was found ("RUNPATH $ORIGIN/../lib", "ld.so.cache").
    pub through: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MissingLibrary {
    pub name: String,
    /// The object that needs it, then what loaded that, up to the program.
    pub needed_by: Vec<String>,
    /// Files of that name passed over for their class or machine.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_class: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RunTimeLibrary {
    /// The call (`ggml's backend registry: ggml backend "hip"`).
    pub what: String,
    /// What it opens.
    pub name: String,
    /// The library that calls it, up to the program.
    pub by: Vec<String>,
    /// The file it loaded; `None` when it could not.
    pub loaded: Option<String>,
    /// Why it could not be loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// It is how AMD GPU code is reached: when it fails, the GPU is never used (MISSING).
    pub gpu: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MissingData {
    /// The library that reads it, up to the program.
    pub library: Vec<String>,
    /// Where it looks, in order.
    pub looked: Vec<String>,
    pub status: Status,
    /// What the library does without it.
    pub effect: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DataFolder {
    pub folder: String,
    /// The library that reads it, up to the program.
    pub read_by: Vec<String>,
}
