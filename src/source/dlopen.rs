//! What a program loads at run time, past its `DT_NEEDED` closure: the `dlopen` calls of the
//! libraries that load GPU code or what GPU code needs, each followed as its own code looks
//! (ggml's backend registry, Ollama's runner, the HIP runtime's code-object manager), and the
//! data folders the loaded libraries read beside themselves (rocBLAS's and hipBLASLt's Tensile
//! libraries, MIOpen's databases).

use std::path::{Path, PathBuf};

use crate::parse::host::parse_sections;
use crate::source::file::open_file;
use crate::source::loader::{Loader, Object};
use crate::source::rooted::{in_root, list_in_root};

/// A library loaded at run time, or looked for and not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunTimeLoad {
    /// The object whose code calls `dlopen` (an index into the closure).
    pub by: usize,
    /// What it asks for: a path, or a name the loader searches for.
    pub name: String,
    /// What the call is (`ggml backend "hip"`, `HIP runtime's code-object manager`).
    pub what: String,
    /// The object it loaded, or why it could not be loaded (then nothing of it is).
    pub loaded: Result<usize, String>,
    /// It is how AMD GPU code is reached (ggml's HIP backend, the HIP runtime's comgr): when it
    /// fails, the program never uses the GPU. Another backend failing (CUDA's, on a machine
    /// without it) is skipped by ggml and changes nothing here.
    pub gpu: bool,
}

/// The names ggml's registry loads, in its order (`ggml-backend-reg.cpp`
/// `ggml_backend_load_all_from_path`); `cpu` is chosen among its variants by a score this
/// machine's CPU decides, and holds no GPU code.
const GGML_BACKENDS: &[&str] = &[
    "blas", "zendnn", "cann", "cuda", "hip", "metal", "rpc", "sycl", "vulkan", "virtgpu", "opencl",
    "hexagon", "musa", "openvino",
];

/// Follows the run-time loads of every loaded library that makes them; `var` reads the
/// program's environment.
pub fn follow(loader: &mut Loader<'_>, var: &dyn Fn(&str) -> Option<String>) -> Vec<RunTimeLoad> {
    let mut out = Vec::new();
    if let Some(dirs) = ollama_dirs(loader, var) {
        // One folder at a time (`ggml_backend_load_all_from_path`): a backend in each.
        for dir in dirs {
            ggml_backends(loader, 0, &[dir], "Ollama's runner", &mut out);
        }
    } else if let Some(registry) = loader.closure.objects.iter().position(|o| soname_is(o, "libggml.so")) {
        let dirs = ggml_dirs(loader, registry);
        ggml_backends(loader, registry, &dirs, "ggml's backend registry", &mut out);
        if let Some(path) = var("GGML_BACKEND_PATH").filter(|p| !p.is_empty()) {
            let loaded = loader.dlopen(&path, registry, "GGML_BACKEND_PATH");
            let gpu =
                Path::new(&path).file_name().is_some_and(|n| n.to_string_lossy().starts_with("libggml-hip"));
            out.push(RunTimeLoad { by: registry, name: path, what: "GGML_BACKEND_PATH".into(), loaded, gpu });
        }
    }
    let mut at = 0;
    while at < loader.closure.objects.len() {
        if let Some(comgr) = loader
            .closure
            .objects
            .get(at)
            .filter(|o| soname_is(o, "libamdhip64.so"))
            .and_then(|o| comgr_name(&o.file))
        {
            let loaded = loader.dlopen(&comgr, at, "the HIP runtime");
            out.push(RunTimeLoad {
                by: at,
                name: comgr,
                what: "the HIP runtime's code-object manager".into(),
                loaded,
                gpu: true,
            });
        }
        at += 1;
    }
    out
}

/// True when an object's soname (or, without one, its file name) is `stem` or `stem.N…`.
fn soname_is(o: &Object, stem: &str) -> bool {
    let name =
        o.dynamic.soname.clone().unwrap_or_else(|| {
            o.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        });
    name == stem || name.strip_prefix(stem).is_some_and(|r| r.starts_with('.'))
}

/// Where ggml's registry in `objects[registry]` looks for backends when the program gives it
/// no folder (`ggml_backend_load_best`): `GGML_BACKEND_DIR`, then the program's folder
/// (`/proc/self/exe`), then the current folder. `GGML_BACKEND_DIR` is a build setting; Debian's
/// packages set it to `ggml/backends<N>` beside `libggml.so.<N>` (its `libggml0` holds
/// `/usr/lib/x86_64-linux-gnu/ggml/backends0`, where `libggml0-backend-hip` puts
/// `libggml-hip.so`), so that folder is taken when it is there.
fn ggml_dirs(loader: &Loader<'_>, registry: usize) -> Vec<PathBuf> {
    let objects = &loader.closure.objects;
    let mut dirs = Vec::new();
    if let Some(o) = objects.get(registry) {
        let soname = o.dynamic.soname.clone().unwrap_or_default();
        if let (Some(n), Some(dir)) = (soname.strip_prefix("libggml.so."), o.path.parent()) {
            let d = dir.join(format!("ggml/backends{n}"));
            if !loader.list(&d).is_empty() {
                dirs.push(d);
            }
        }
    }
    if let Some(exe) = objects.first().and_then(|o| o.path.parent()) {
        dirs.push(exe.to_path_buf());
    }
    dirs.push(loader.cwd());
    dirs
}

/// The backends ggml loads from `dirs`: for each name, the first folder holding
/// `libggml-<name>.so` (variants `libggml-<name>-*.so` win only by a score, which only the CPU
/// backend's have, `ggml_backend_load_best`), opened by its path.
fn ggml_backends(
    loader: &mut Loader<'_>,
    by: usize,
    dirs: &[PathBuf],
    who: &str,
    out: &mut Vec<RunTimeLoad>,
) {
    for name in GGML_BACKENDS {
        let file = format!("libggml-{name}.so");
        let Some(dir) = dirs.iter().find(|d| loader.is_file(&d.join(&file))) else { continue };
        let path = dir.join(&file).display().to_string();
        let loaded = loader.dlopen(&path, by, who);
        let gpu = *name == "hip";
        out.push(RunTimeLoad {
            by,
            name: path,
            what: format!("{who}: ggml backend \"{name}\""),
            loaded,
            gpu,
        });
    }
}

/// Ollama's library folders, for a program named `ollama` (`ml/path.go` `LibOllamaPath`,
/// `ml/backend/ggml/ggml/src/ggml.go` `OnceLoad`, `llm/server.go` `StartRunner`, v0.13):
/// `OLLAMA_LIBRARY_PATH`, else `lib/ollama` beside the program's folder; its runner loads
/// ggml's backends from that folder and from each subfolder holding ggml libraries (`rocm`,
/// `cuda_v12`, …), one folder at a time, with those folders first in `LD_LIBRARY_PATH`.
pub fn ollama_dirs(loader: &Loader<'_>, var: &dyn Fn(&str) -> Option<String>) -> Option<Vec<PathBuf>> {
    let program = loader.closure.objects.first()?;
    if program.path.file_name()? != "ollama" {
        return None;
    }
    let base: Vec<PathBuf> = match var("OLLAMA_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        Some(list) => list.split(':').map(PathBuf::from).collect(),
        // Go's filepath.Join cleans the path: `/usr/bin/../lib/ollama` is `/usr/lib/ollama`.
        None => vec![clean(&program.path.parent()?.join("../lib/ollama"))],
    };
    let mut dirs = Vec::new();
    for b in base {
        for sub in std::iter::once(String::new()).chain(loader.list(&b)) {
            let d = if sub.is_empty() { b.clone() } else { b.join(&sub) };
            if loader.list(&d).iter().any(|n| n.contains("ggml-")) && !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    Some(dirs)
}

/// `path` with `.` and `..` resolved by its text (Go's `filepath.Clean`).
fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(n) => out.push(n),
            _ => {}
        }
    }
    out
}

/// The `LD_LIBRARY_PATH` Ollama starts its runner with (`StartRunner`: its library folders
/// first, then the one it was given), when `loader` runs Ollama.
pub fn ollama_runner_path(loader: &Loader<'_>, var: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let dirs = ollama_dirs(loader, var)?;
    let mut parts: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    parts.extend(var("LD_LIBRARY_PATH").filter(|v| !v.is_empty()));
    Some(parts.join(":"))
}

/// The code-object manager a HIP runtime library loads (`rocclr/device/comgrctx.cpp`
/// `Comgr::LoadLib`: `libamd_comgr.so.2` up to ROCm 6.3, `.so.3` from 6.4), read from the name
/// its `.rodata` holds; `None` when it names none (a runtime linking comgr by `DT_NEEDED`).
fn comgr_name(file: &Path) -> Option<String> {
    let src = open_file(file, false).ok()?;
    let sections = parse_sections(&src).ok()?;
    let rodata = sections.iter().find(|s| s.name == ".rodata")?;
    let bytes =
        crate::parse::ByteSource::read_at(&src, rodata.offset, rodata.size.min(64 << 20) as usize).ok()?;
    let at = memchr::memmem::find(&bytes, b"libamd_comgr.so.")?;
    let tail = bytes.get(at..)?;
    let end = tail.iter().position(|&b| b == 0)?;
    let name = String::from_utf8_lossy(tail.get(..end)?).into_owned();
    name.strip_prefix("libamd_comgr.so.")?.chars().all(|c| c.is_ascii_digit()).then_some(name)
}

/// Whose data a folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataKind {
    /// rocBLAS's Tensile library: without it rocBLAS aborts at its first GEMM.
    Rocblas,
    /// hipBLASLt's Tensile library: without it its matmuls fail and callers fall back.
    Hipblaslt,
    /// MIOpen's databases: without them it runs untuned.
    Miopen,
}

/// A data folder a loaded library reads: the one found, or where it was looked for.
#[derive(Debug, Clone)]
pub struct DataDir {
    /// The library that reads it (an index into the closure).
    pub by: usize,
    pub kind: DataKind,
    /// The folder it reads (inside the root); `None` when none of `looked` is there.
    pub folder: Option<PathBuf>,
    /// Where it looks, in order.
    pub looked: Vec<PathBuf>,
}

/// The data folders the loaded libraries read beside themselves: rocBLAS's Tensile library
/// (`ROCBLAS_TENSILE_LIBPATH`, else from its folder as loaded: `../../Tensile/library`,
/// `library`, `../rocblas/library`, else `rocblas/library`, `tensile_host.cpp`
/// `determine_tensile_base_path`; Debian's build looks in `rocblas/<version>/library`),
/// hipBLASLt's (`HIPBLASLT_TENSILE_LIBPATH`, else `../Tensile/library`, `library`,
/// `hipblaslt/library`), MIOpen's databases (`MIOPEN_SYSTEM_DB_PATH`, else `share/miopen/db`
/// above its folder, `db_path.cpp` `GetSystemDbPath`). A folder a variable names is the one
/// read, there or not; the others count when they exist.
pub fn data_dirs(objects: &[Object], root: &Path, var: &dyn Fn(&str) -> Option<String>) -> Vec<DataDir> {
    let exists = |d: &Path| in_root(root, d).is_some_and(|p| p.is_dir());
    let mut out: Vec<DataDir> = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let Some(dir) = o.path.parent() else { continue };
        let (kind, env, mut rel): (DataKind, &str, Vec<String>) = if soname_is(o, "librocblas.so") {
            let rel = ["../../Tensile/library", "library", "../rocblas/library", "rocblas/library"];
            let mut rel: Vec<String> = rel.map(String::from).to_vec();
            rel.extend(
                list_in_root(root, &dir.join("rocblas")).into_iter().map(|v| format!("rocblas/{v}/library")),
            );
            (DataKind::Rocblas, "ROCBLAS_TENSILE_LIBPATH", rel)
        } else if soname_is(o, "libhipblaslt.so") {
            let rel = ["../Tensile/library", "library", "hipblaslt/library"];
            (DataKind::Hipblaslt, "HIPBLASLT_TENSILE_LIBPATH", rel.map(String::from).to_vec())
        } else if soname_is(o, "libMIOpen.so") {
            // Debian's multiarch layout puts it two folders up (`/usr/share/miopen/db`).
            (
                DataKind::Miopen,
                "MIOPEN_SYSTEM_DB_PATH",
                vec!["../share/miopen/db".into(), "../../share/miopen/db".into()],
            )
        } else {
            continue;
        };
        let (folder, looked) = match var(env).filter(|v| !v.is_empty()) {
            Some(v) => {
                let named = PathBuf::from(v);
                (exists(&named).then(|| named.clone()), vec![named])
            }
            None => {
                let looked: Vec<PathBuf> = rel.drain(..).map(|r| dir.join(r)).collect();
                (looked.iter().find(|d| exists(d)).cloned(), looked)
            }
        };
        if !out.iter().any(|d| d.kind == kind && d.folder.is_some() && d.folder == folder) {
            out.push(DataDir { by: i, kind, folder, looked });
        }
    }
    out
}
