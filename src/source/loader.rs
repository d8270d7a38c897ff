//! The dynamic loader's search, as glibc's `ld.so` makes it: which file each `DT_NEEDED` name
//! of a program resolves to, breadth first through its whole closure, inside a root (`/`, or a
//! mounted image or unpacked container, where absolute paths and links lead inside it).
//!
//! Read from glibc 2.41 `elf/dl-load.c` `_dl_map_object` (the search order), `open_path` and
//! `open_verify` (the class and machine a candidate must have), `fillin_rpath` and
//! `_dl_dst_substitute` (path lists and `$ORIGIN`, `$LIB`, `$PLATFORM`), `elf/dl-deps.c`
//! `_dl_map_object_deps` (breadth first), `elf/dl-misc.c` `_dl_name_match_p` (a name already
//! loaded), `elf/dl-cache.c` `_dl_load_cache_lookup` (`/etc/ld.so.cache`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::parse::dynamic::{parse_dynamic, Dynamic};
use crate::parse::ldcache::{parse_ld_cache, pick_cached, CacheEntry};
use crate::source::file::open_file;
use crate::source::rooted::{in_root, list_in_root, read_in_root};

/// Most objects one closure loads.
const MAX_OBJECTS: usize = 4096;

/// Where and how a program's libraries are looked for.
#[derive(Debug, Clone)]
pub struct LoaderEnv {
    /// The root the program runs in: `/`, or a mounted image.
    pub root: PathBuf,
    /// `LD_LIBRARY_PATH` as the program would see it.
    pub ld_library_path: Option<String>,
    /// `PATH`, to find a program named without a slash.
    pub path: Option<String>,
}

/// How a name was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Through {
    /// The program itself, as given.
    Program,
    /// A name with a slash, opened as a path.
    Path,
    /// An entry of a `DT_RPATH` (of the object that needed it, or one that loaded that one).
    Rpath { entry: String },
    /// An entry of `LD_LIBRARY_PATH`.
    LdLibraryPath { entry: String },
    /// An entry of the needing object's `DT_RUNPATH`.
    Runpath { entry: String },
    /// `/etc/ld.so.cache`.
    Cache,
    /// The folders `/etc/ld.so.conf` names (the tree has no `ld.so.cache`: what `ldconfig`
    /// would put in it).
    Conf { dir: String },
    /// One of the loader's own default folders.
    Default { dir: String },
    /// The dynamic loader the program names (`PT_INTERP`).
    Interpreter,
    /// Mapped by a running process (`/proc/<pid>/maps`), needed by the object before it.
    Mapped,
    /// Loaded at run time by another library (`dlopen`), as its loader code looks for it.
    Dlopen { by: String },
}

impl Through {
    /// How it reads in a chain: "RUNPATH `$ORIGIN/../lib`".
    pub fn describe(&self) -> String {
        match self {
            Through::Program => "the program".to_string(),
            Through::Path => "its path".to_string(),
            Through::Rpath { entry } => format!("RPATH {entry}"),
            Through::LdLibraryPath { entry } => format!("LD_LIBRARY_PATH {entry}"),
            Through::Runpath { entry } => format!("RUNPATH {entry}"),
            Through::Cache => "ld.so.cache".to_string(),
            Through::Conf { dir } => format!("ld.so.conf {dir}"),
            Through::Default { dir } => format!("the default folder {dir}"),
            Through::Interpreter => "the program's interpreter".to_string(),
            Through::Mapped => "mapped by the process".to_string(),
            Through::Dlopen { by } => format!("dlopen by {by}"),
        }
    }
}

/// One object of the closure.
#[derive(Debug, Clone)]
pub struct Object {
    /// Its path as the program sees it (inside the root).
    pub path: PathBuf,
    /// Its file on this machine (the root's real file, links resolved).
    pub file: PathBuf,
    /// The name it was asked for by (a `DT_NEEDED` entry, or the program's path).
    pub name: String,
    /// The object that needed it first; `None` for the program.
    pub needed_by: Option<usize>,
    pub through: Through,
    pub dynamic: Dynamic,
}

/// A name found nowhere: a `DT_NEEDED` one stops the program from starting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub name: String,
    pub needed_by: usize,
    /// Files of that name skipped for their class or machine ("wrong ELF class").
    pub other_class: Vec<PathBuf>,
}

/// What a program loads.
#[derive(Debug, Clone, Default)]
pub struct Closure {
    /// The program first, then every object in load order.
    pub objects: Vec<Object>,
    pub missing: Vec<Missing>,
    /// Files that could not be read on the way (named, with why).
    pub problems: Vec<String>,
}

/// What the root's glibc was built with: its default folders (`SYSTEM_DIRS`, from `slibdir`
/// and `libdir`) and `$LIB` (`DL_DST_LIB`). Debian's multiarch build (`debian/rules`, patches
/// `local-ld-multiarch.diff` and the `DL_DST_LIB` one) has `/lib/x86_64-linux-gnu`,
/// `/usr/lib/x86_64-linux-gnu`, `/lib`, `/usr/lib` and `lib/x86_64-linux-gnu`; upstream's
/// x86-64 build `/lib64`, `/usr/lib64` and `lib64`. A root with a multiarch library folder is
/// taken to be Debian's.
struct Build {
    system: Vec<&'static str>,
    lib: &'static str,
}

fn build_of(root: &Path) -> Build {
    let multiarch = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"]
        .iter()
        .any(|d| in_root(root, Path::new(d)).is_some_and(|p| p.is_dir()));
    match multiarch {
        true => Build {
            system: vec!["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib", "/usr/lib"],
            lib: "lib/x86_64-linux-gnu",
        },
        false => Build { system: vec!["/lib64", "/usr/lib64"], lib: "lib64" },
    }
}

/// `$PLATFORM` on this machine: AT_PLATFORM (`x86_64`), which glibc replaces with `haswell` on an
/// Intel CPU with AVX2, FMA, BMI1, BMI2, LZCNT, MOVBE and POPCNT (`sysdeps/x86/cpu-features.c`
/// `init_cpu_features`).
fn platform() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        // CPUID leaf 0: the vendor string, on every x86-64 CPU.
        let id = std::arch::x86_64::__cpuid(0);
        let intel = (id.ebx, id.edx, id.ecx) == (0x756e_6547, 0x4965_6e69, 0x6c65_746e);
        let haswell = has!("avx2")
            && has!("fma")
            && has!("bmi1")
            && has!("bmi2")
            && has!("lzcnt")
            && has!("movbe")
            && has!("popcnt");
        if intel && haswell {
            return "haswell";
        }
    }
    "x86_64"
}

/// A path list split as `fillin_rpath` splits it: at `:` (and `;` too in `LD_LIBRARY_PATH`),
/// tokens substituted, trailing slashes dropped, an entry met again dropped; an empty entry
/// is the current folder; an entry whose token has no value is dropped. Each entry comes with
/// its text as written.
fn path_list(list: &str, separators: &[char], tokens: &Tokens) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in list.split(separators).take(MAX_LIST) {
        let Some(dir) = substitute(entry, tokens) else { continue };
        let dir = match dir.trim_end_matches('/') {
            "" if dir.starts_with('/') => "/".to_string(),
            "" => ".".to_string(),
            d => d.to_string(),
        };
        if seen.insert(dir.clone()) {
            out.push((entry.to_string(), dir));
        }
    }
    out
}

/// Most entries of one path list looked at (a real RUNPATH has a handful): a list of a million
/// would cost a million lookups a name.
const MAX_LIST: usize = 1024;

/// What the dynamic string tokens stand for.
struct Tokens {
    /// `$ORIGIN`: the folder of the object whose list it is.
    origin: String,
    /// `$LIB`: glibc's `DL_DST_LIB`.
    lib: &'static str,
    /// `$PLATFORM`: `dl_platform`.
    platform: &'static str,
}

/// `$ORIGIN`, `$LIB` and `$PLATFORM` (bare, not followed by a letter, digit or `_`, or braced)
/// replaced, as glibc `_dl_dst_substitute` does; any other `$` is kept as written.
fn substitute(entry: &str, t: &Tokens) -> Option<String> {
    let mut out = String::new();
    let mut rest = entry;
    while let Some(at) = rest.find('$') {
        out.push_str(rest.get(..at)?);
        let after = rest.get(at + 1..)?;
        let token = ["ORIGIN", "PLATFORM", "LIB"].into_iter().find_map(|name| {
            let braced = format!("{{{name}}}");
            if let Some(tail) = after.strip_prefix(braced.as_str()) {
                return Some((name, tail));
            }
            let tail = after.strip_prefix(name)?;
            (!tail.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')).then_some((name, tail))
        });
        match token {
            Some((name, tail)) => {
                out.push_str(match name {
                    "ORIGIN" => &t.origin,
                    "LIB" => t.lib,
                    _ => t.platform,
                });
                rest = tail;
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// The file a program runs as: a name with a slash as a path (a relative one from the current
/// folder, or the root's top in an image), else the first of `PATH`'s folders holding it, as a
/// shell finds it.
fn program_path(name: &str, env: &LoaderEnv) -> PathBuf {
    let on_live_root = env.root == Path::new("/");
    if name.contains('/') {
        return match (name.starts_with('/'), on_live_root) {
            (true, _) | (false, false) => Path::new("/").join(name),
            (false, true) => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")).join(name),
        };
    }
    let path = env.path.as_deref().unwrap_or("/usr/local/bin:/usr/bin:/bin");
    path.split(':')
        .map(|d| Path::new(if d.is_empty() { "." } else { d }).join(name))
        .find(|p| in_root(&env.root, p).is_some_and(|f| f.is_file()))
        .unwrap_or_else(|| Path::new("/").join(name))
}

/// The folder part of a path, as `$ORIGIN` takes it.
fn dir_of(path: &Path) -> String {
    path.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| "/".to_string())
}

/// The loader's view of one root: its cache or configured folders, its build, the program's
/// class and machine (a candidate of another is passed over).
struct Search<'e> {
    env: &'e LoaderEnv,
    cache: Option<Vec<CacheEntry>>,
    conf: Vec<String>,
    build: Build,
    platform: &'static str,
    class64: bool,
    machine: u16,
    /// The subfolders tried in each folder, best first (see [`hwcaps_for`]).
    hwcaps: Vec<&'static str>,
    /// Each search folder's names, listed once: a name a folder does not hold is not there
    /// without a probe of its own; a folder that is not there holds none (`None`: it cannot be
    /// listed, and is probed name by name as the loader does).
    listings: std::cell::RefCell<HashMap<PathBuf, Option<HashSet<std::ffi::OsString>>>>,
}

/// The subfolders tried in each folder, best first: `glibc-hwcaps/x86-64-v4`, `-v3`, `-v2`
/// as far as this CPU has every level below (glibc 2.37+ `_dl_important_hwcaps`,
/// `sysdeps/x86/get-isa-level.h`), then the folder itself.
fn hwcaps_for(class64: bool, machine: u16) -> Vec<&'static str> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    if class64 && machine == 62 {
        use std::arch::is_x86_feature_detected as has;
        let v2 = has!("cmpxchg16b")
            && has!("popcnt")
            && has!("sse3")
            && has!("ssse3")
            && has!("sse4.1")
            && has!("sse4.2");
        let v3 = v2
            && has!("avx")
            && has!("avx2")
            && has!("bmi1")
            && has!("bmi2")
            && has!("f16c")
            && has!("fma")
            && has!("lzcnt")
            && has!("movbe");
        let v4 = v3
            && has!("avx512f")
            && has!("avx512bw")
            && has!("avx512cd")
            && has!("avx512dq")
            && has!("avx512vl");
        for (sub, on) in
            [("glibc-hwcaps/x86-64-v4", v4), ("glibc-hwcaps/x86-64-v3", v3), ("glibc-hwcaps/x86-64-v2", v2)]
        {
            if on {
                out.push(sub);
            }
        }
    }
    out.push("");
    out
}

/// A candidate file, as `open_verify` and `open_path` judge it.
enum Candidate {
    Found(Hit),
    /// Another class or machine: passed over, and named if nothing else is found.
    OtherClass(PathBuf),
    /// Not there (`ENOENT`, `EACCES`, `ENOTDIR`): the search goes on.
    Absent,
    /// Could not be opened for another reason: the rest of this list is skipped.
    EndList,
    /// There, but nothing the loader maps ("invalid ELF header", "file too short"): loading
    /// stops.
    Fatal(String),
}

/// A file found: where the program sees it, its file here, its facts, and through what.
struct Hit {
    path: PathBuf,
    file: PathBuf,
    dynamic: Dynamic,
    through: Through,
}

/// How a search for one name ended.
enum Found {
    Hit(Hit),
    Fatal(String),
    Nowhere,
}

impl Candidate {
    /// What this candidate ends, `open_path`'s way: a hit, a fatal error, the end of its list
    /// (`Nowhere`), or nothing (`None`: look at the next one; a file of another class is named).
    fn ends(self, missing: &mut Missing) -> Option<Found> {
        match self {
            Candidate::Found(hit) => Some(Found::Hit(hit)),
            Candidate::Fatal(why) => Some(Found::Fatal(why)),
            Candidate::EndList => Some(Found::Nowhere),
            Candidate::OtherClass(p) => {
                missing.other_class.push(p);
                None
            }
            Candidate::Absent => None,
        }
    }
}

impl Search<'_> {
    fn tokens(&self, origin: String) -> Tokens {
        Tokens { origin, lib: self.build.lib, platform: self.platform }
    }

    /// `path` (inside the root) as a candidate found `through`.
    fn look(&self, path: &Path, through: Through) -> Candidate {
        let Some(file) = in_root(&self.env.root, path) else { return Candidate::Absent };
        // Only a regular file is opened (a device's open runs its driver); a folder or FIFO of
        // that name is nothing the loader can read ("cannot read file data").
        if !std::fs::metadata(&file).is_ok_and(|m| m.is_file()) {
            return Candidate::Fatal(format!("{}: cannot read file data", path.display()));
        }
        let src = match open_file(&file, false) {
            Ok(s) => s,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ) =>
            {
                return Candidate::Absent
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Candidate::Absent,
            Err(_) => return Candidate::EndList,
        };
        let fatal = |why: &str| Candidate::Fatal(format!("{}: {why}", path.display()));
        match parse_dynamic(&src) {
            Ok(d) if d.class64 != self.class64 || d.machine != self.machine => {
                Candidate::OtherClass(path.to_path_buf())
            }
            Ok(d) if !d.little_endian => fatal("ELF file data encoding not little-endian"),
            Ok(d) if d.e_type != 2 && d.e_type != 3 => fatal("only ET_DYN and ET_EXEC can be loaded"),
            Ok(d) => Candidate::Found(Hit { path: path.to_path_buf(), file, dynamic: d, through }),
            Err(crate::parse::ParseError::Truncated { .. }) if src.len < 64 => fatal("file too short"),
            Err(crate::parse::ParseError::Malformed { what: "ELF magic", .. }) => fatal("invalid ELF header"),
            Err(e) => fatal(&e.to_string()),
        }
    }

    /// The first of `dirs` (each with its text as written) holding `name` of the program's
    /// class, each folder's `glibc-hwcaps` subfolders first (`open_path`).
    fn in_dirs(
        &self,
        name: &str,
        dirs: &[(String, String)],
        through: impl Fn(&str) -> Through,
        m: &mut Missing,
    ) -> Found {
        for (label, dir) in dirs {
            let dir = match dir.starts_with('/') {
                true => PathBuf::from(dir),
                false => self.cwd().join(dir),
            };
            for sub in &self.hwcaps {
                let folder = dir.join(sub);
                if !self.may_hold(&folder, name) {
                    continue;
                }
                if let Some(end) = self.look(&folder.join(name), through(label)).ends(m) {
                    return end;
                }
            }
        }
        Found::Nowhere
    }

    /// False when `folder` (inside the root) surely holds no entry `name`: its listing, read
    /// once, lacks it. A folder that cannot be listed may hold anything.
    fn may_hold(&self, folder: &Path, name: &str) -> bool {
        let mut listings = self.listings.borrow_mut();
        let listing = listings.entry(folder.to_path_buf()).or_insert_with(|| {
            let Some(real) = in_root(&self.env.root, folder) else { return Some(HashSet::new()) };
            match std::fs::read_dir(real) {
                Ok(entries) => Some(entries.filter_map(|e| e.ok().map(|e| e.file_name())).collect()),
                Err(e)
                    if e.kind() == std::io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    Some(HashSet::new())
                }
                Err(_) => None,
            }
        });
        listing.as_ref().is_none_or(|names| names.contains(std::ffi::OsStr::new(name)))
    }

    /// The folder a relative entry is taken from: the current one on this machine's own root,
    /// the root's top in an image.
    fn cwd(&self) -> PathBuf {
        match self.env.root == Path::new("/") {
            true => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            false => PathBuf::from("/"),
        }
    }

    /// Where `name`, needed by `objects[by]`, is found: glibc `_dl_map_object`'s order.
    fn find(&self, name: &str, by: usize, objects: &[Object], m: &mut Missing) -> Found {
        let Some(loader) = objects.get(by) else { return Found::Nowhere };
        if name.contains('/') {
            let Some(path) = substitute(name, &self.tokens(dir_of(&loader.path))) else {
                return Found::Nowhere;
            };
            let path = match path.starts_with('/') {
                true => PathBuf::from(path),
                false => self.cwd().join(path),
            };
            return self.look(&path, Through::Path).ends(m).unwrap_or(Found::Nowhere);
        }
        let found = self.rpaths(name, by, objects, m);
        if !matches!(found, Found::Nowhere) {
            return found;
        }
        if let Some(list) = self.env.ld_library_path.as_deref().filter(|l| !l.is_empty()) {
            let program = objects.first().map(|o| dir_of(&o.path)).unwrap_or_default();
            let dirs = path_list(list, &[':', ';'], &self.tokens(program));
            let found = self.in_dirs(name, &dirs, |e| Through::LdLibraryPath { entry: e.to_string() }, m);
            if !matches!(found, Found::Nowhere) {
                return found;
            }
        }
        if let Some(runpath) = loader.dynamic.runpath.as_deref().filter(|r| !r.is_empty()) {
            let dirs = path_list(runpath, &[':'], &self.tokens(dir_of(&loader.path)));
            let found = self.in_dirs(name, &dirs, |e| Through::Runpath { entry: e.to_string() }, m);
            if !matches!(found, Found::Nowhere) {
                return found;
            }
        }
        let nodeflib = loader.dynamic.nodeflib;
        let found = self.cached(name, nodeflib, m);
        if !matches!(found, Found::Nowhere) || nodeflib {
            return found;
        }
        let dirs: Vec<(String, String)> =
            self.build.system.iter().map(|d| (d.to_string(), d.to_string())).collect();
        self.in_dirs(name, &dirs, |d| Through::Default { dir: d.to_string() }, m)
    }

    /// `DT_RPATH` of the needing object and of each that loaded it, up to the program, then the
    /// program's: only when the needing object has no `DT_RUNPATH` (an object with both has
    /// only its RUNPATH, `get-dynamic-info.h`).
    fn rpaths(&self, name: &str, by: usize, objects: &[Object], m: &mut Missing) -> Found {
        if objects.get(by).is_none_or(|o| o.dynamic.runpath.is_some()) {
            return Found::Nowhere;
        }
        let mut chain = Vec::new();
        let mut at = Some(by);
        while let Some(i) = at.filter(|i| !chain.contains(i)) {
            chain.push(i);
            at = objects.get(i).and_then(|o| o.needed_by);
        }
        if !chain.contains(&0) {
            chain.push(0);
        }
        for i in chain {
            let Some(o) = objects.get(i) else { continue };
            let (Some(rpath), None) =
                (o.dynamic.rpath.as_deref().filter(|r| !r.is_empty()), &o.dynamic.runpath)
            else {
                continue;
            };
            let dirs = path_list(rpath, &[':'], &self.tokens(dir_of(&o.path)));
            let found = self.in_dirs(name, &dirs, |e| Through::Rpath { entry: e.to_string() }, m);
            if !matches!(found, Found::Nowhere) {
                return found;
            }
        }
        Found::Nowhere
    }

    /// `name` in the root's `ld.so.cache`: the first plain entry of that name for the program's
    /// class (`_dl_load_cache_lookup`); without a cache, the folders `ld.so.conf` names, as
    /// `ldconfig` would index them. For a loader with `DF_1_NODEFLIB`, a file under a default
    /// folder is not taken.
    fn cached(&self, name: &str, nodeflib: bool, m: &mut Missing) -> Found {
        let under_default = |p: &Path| {
            let p = p.to_string_lossy();
            self.build.system.iter().any(|d| p.starts_with(&format!("{d}/")))
        };
        let dirs: Vec<(String, String)> = match &self.cache {
            Some(entries) => {
                // The loader takes the first entry for the name, then drops it when the needing
                // object has DF_1_NODEFLIB and it lies under a default folder (`_dl_map_object`).
                let active: Vec<&str> =
                    self.hwcaps.iter().filter_map(|h| h.strip_prefix("glibc-hwcaps/")).collect();
                let hit = pick_cached(entries, name, self.class64, self.machine, &active)
                    .map(PathBuf::from)
                    .filter(|p| !(nodeflib && under_default(p)));
                return hit.and_then(|p| self.look(&p, Through::Cache).ends(m)).unwrap_or(Found::Nowhere);
            }
            None => self
                .conf
                .iter()
                .filter(|d| !(nodeflib && under_default(Path::new(&format!("{d}/x")))))
                .map(|d| (d.clone(), d.clone()))
                .collect(),
        };
        self.in_dirs(name, &dirs, |d| Through::Conf { dir: d.to_string() }, m)
    }
}

/// A program's closure as it grows: loaded at start (`DT_NEEDED`), then by `dlopen` calls.
pub struct Loader<'e> {
    search: Search<'e>,
    pub closure: Closure,
    /// Each name a loaded object answers to (its name, soname or path), with the first such: a
    /// name is looked up once, however many objects need it (glibc `_dl_map_object` checks
    /// the loaded objects' names before it searches).
    names: HashMap<String, usize>,
}

impl<'e> Loader<'e> {
    /// `program` (a path inside the root, or a name `PATH` finds) loaded as `ld.so` loads it:
    /// itself, the loader it names (`PT_INTERP`, which answers to its soname), then every object
    /// its `DT_NEEDED` entries load, breadth first (`_dl_map_object_deps`).
    pub fn program(program: &str, env: &'e LoaderEnv) -> Result<Loader<'e>, String> {
        let path = program_path(program, env);
        let file = in_root(&env.root, &path).ok_or_else(|| format!("{program}: no such file"))?;
        let src = open_file(&file, false).map_err(|e| format!("{program}: {e}"))?;
        let dynamic =
            parse_dynamic(&src).map_err(|e| format!("{program}: not an ELF program or library ({e})"))?;
        // The program's $ORIGIN is where it really is (`_dl_get_origin`: /proc/self/exe).
        let real = real_in_root(&env.root, &file).unwrap_or_else(|| path.clone());
        let search = Search {
            env,
            cache: read_cache(&env.root),
            conf: read_conf(&env.root),
            build: build_of(&env.root),
            platform: platform(),
            class64: dynamic.class64,
            machine: dynamic.machine,
            hwcaps: hwcaps_for(dynamic.class64, dynamic.machine),
            listings: Default::default(),
        };
        let interp = dynamic.interp.clone();
        let mut loader = Loader { search, closure: Closure::default(), names: HashMap::new() };
        let objects = &mut loader.closure.objects;
        objects.push(Object {
            path: real,
            file,
            name: program.to_string(),
            needed_by: None,
            through: Through::Program,
            dynamic,
        });
        if let Some(interp) = interp {
            // A program whose interpreter is not there does not run at all (execve fails).
            match loader.search.look(Path::new(&interp), Through::Interpreter) {
                Candidate::Found(hit) => objects.push(Object {
                    path: hit.path,
                    file: hit.file,
                    name: interp,
                    needed_by: Some(0),
                    through: hit.through,
                    dynamic: hit.dynamic,
                }),
                Candidate::Fatal(why) => loader.closure.problems.push(why),
                _ => loader.closure.missing.push(Missing {
                    name: interp,
                    needed_by: 0,
                    other_class: Vec::new(),
                }),
            }
        }
        loader.reindex();
        loader.load_needed(0);
        Ok(loader)
    }

    /// Makes the name index again from the closure's objects.
    fn reindex(&mut self) {
        self.names.clear();
        for i in 0..self.closure.objects.len() {
            self.index_object(i);
        }
    }

    /// Adds the names `objects[i]` answers to, unless an earlier object answers to them: its
    /// `DT_SONAME`, and the names it was loaded as (glibc `_dl_name_match_p`: `l_name` and the
    /// `l_libname` list).
    fn index_object(&mut self, i: usize) {
        let Some(o) = self.closure.objects.get(i) else { return };
        let names = [Some(o.name.clone()), o.dynamic.soname.clone(), o.path.to_str().map(str::to_string)];
        for n in names.into_iter().flatten() {
            self.names.entry(n).or_insert(i);
        }
    }

    /// `dlopen(name)` called by `objects[by]`: the object `name` is (a path, or a name searched
    /// for as `DT_NEEDED` names are, from the caller) and its own dependencies; its index. When
    /// it or a dependency is nowhere or cannot be mapped, `dlopen` fails and loads none of them
    /// (glibc `_dl_open` unwinds): why, and the closure is as before.
    pub fn dlopen(&mut self, name: &str, by: usize, why: &str) -> Result<usize, String> {
        if let Some(&i) = self.names.get(name) {
            return Ok(i);
        }
        let (objects, missing, problems) =
            (self.closure.objects.len(), self.closure.missing.len(), self.closure.problems.len());
        let at = self.add(name, by, Some(Through::Dlopen { by: why.to_string() }));
        if at.is_some() {
            self.load_needed(objects);
        }
        let failed: Vec<String> = self
            .closure
            .missing
            .get(missing..)
            .unwrap_or_default()
            .iter()
            .map(|m| {
                let needer = self.closure.objects.get(m.needed_by).and_then(|o| o.path.file_name());
                let needer = needer.map_or(String::new(), |n| n.to_string_lossy().into_owned());
                format!("{} (needed by {needer}) is nowhere", m.name)
            })
            .chain(self.closure.problems.get(problems..).unwrap_or_default().iter().cloned())
            .collect();
        match (at, failed.is_empty()) {
            (Some(i), true) => Ok(i),
            _ => {
                self.closure.objects.truncate(objects);
                self.closure.missing.truncate(missing);
                self.closure.problems.truncate(problems);
                self.reindex();
                Err(if failed.is_empty() { format!("{name} is nowhere") } else { failed.join("; ") })
            }
        }
    }

    /// Looks `name` up for `objects[by]` and adds what it finds; its index.
    fn add(&mut self, name: &str, by: usize, through: Option<Through>) -> Option<usize> {
        if let Some(&i) = self.names.get(name) {
            return Some(i);
        }
        let objects = &self.closure.objects;
        let mut missing = Missing { name: name.to_string(), needed_by: by, other_class: Vec::new() };
        match self.search.find(name, by, objects, &mut missing) {
            // The same file under another name (a soname link and its target) is one object.
            Found::Hit(hit) if objects.iter().any(|o| o.file == hit.file) => {
                objects.iter().position(|o| o.file == hit.file)
            }
            Found::Hit(hit) => {
                self.closure.objects.push(Object {
                    path: hit.path,
                    file: hit.file,
                    name: name.to_string(),
                    needed_by: Some(by),
                    through: through.unwrap_or(hit.through),
                    dynamic: hit.dynamic,
                });
                let i = self.closure.objects.len() - 1;
                self.index_object(i);
                Some(i)
            }
            Found::Fatal(why) => {
                self.closure.problems.push(why);
                None
            }
            Found::Nowhere => {
                self.closure.missing.push(missing);
                None
            }
        }
    }

    /// The `DT_NEEDED` entries of every object from `start` on, breadth first.
    fn load_needed(&mut self, start: usize) {
        let mut next = start;
        while next < self.closure.objects.len() {
            if self.closure.objects.len() >= MAX_OBJECTS {
                self.closure
                    .problems
                    .push(format!("more than {MAX_OBJECTS} objects: the rest are not looked up"));
                return;
            }
            // Each name of the object once: a repeat would be answered by what the first found
            // (or not found). The list is lent out while its names are looked up, not copied.
            let Some(needed) =
                self.closure.objects.get_mut(next).map(|o| std::mem::take(&mut o.dynamic.needed))
            else {
                break;
            };
            let mut asked: HashSet<&str> = HashSet::with_capacity(needed.len());
            for name in &needed {
                if asked.insert(name) {
                    self.add(name, next, None);
                }
            }
            drop(asked);
            if let Some(o) = self.closure.objects.get_mut(next) {
                o.dynamic.needed = needed;
            }
            next += 1;
        }
    }

    /// The folder a relative name is taken from (see `Search::cwd`).
    pub fn cwd(&self) -> PathBuf {
        self.search.cwd()
    }

    /// True when `path` (inside the root) is a regular file.
    pub fn is_file(&self, path: &Path) -> bool {
        in_root(&self.search.env.root, path).is_some_and(|f| f.is_file())
    }

    /// The names in folder `dir` (inside the root), sorted.
    pub fn list(&self, dir: &Path) -> Vec<String> {
        list_in_root(&self.search.env.root, dir)
    }

    /// The root it loads in.
    pub fn root(&self) -> &Path {
        &self.search.env.root
    }
}

/// The closure of `program` under `env` ([`Loader::program`]).
pub fn closure(program: &str, env: &LoaderEnv) -> Result<Closure, String> {
    Ok(Loader::program(program, env)?.closure)
}

/// `file` (a real path under `root`) as the program sees it: the root stripped.
fn real_in_root(root: &Path, file: &Path) -> Option<PathBuf> {
    let rel = file.strip_prefix(root).ok()?;
    Some(Path::new("/").join(rel))
}

/// The root's `/etc/ld.so.cache`, when it has one that reads.
fn read_cache(root: &Path) -> Option<Vec<CacheEntry>> {
    let bytes = read_in_root(root, Path::new("/etc/ld.so.cache"), MAX_CACHE)?;
    parse_ld_cache(&bytes).ok()
}

/// The largest `ld.so.cache` and configuration file read (real caches are a few hundred KiB).
const MAX_CACHE: u64 = 64 << 20;
const MAX_CONF: u64 = 1 << 20;
/// Most configuration files read through `include` lines.
const MAX_CONF_FILES: usize = 256;

/// The folders the root's `/etc/ld.so.conf` names, its `include` globs followed, relative ones
/// from the including file's folder (ldconfig `parse_conf`, `parse_conf_include`); each file
/// read once, whatever includes it again.
fn read_conf(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    conf_file(root, Path::new("/etc/ld.so.conf"), &mut out, &mut seen);
    out
}

fn conf_file(root: &Path, path: &Path, out: &mut Vec<String>, seen: &mut std::collections::HashSet<PathBuf>) {
    let Some(real) = in_root(root, path) else { return };
    if seen.len() >= MAX_CONF_FILES || !seen.insert(real) {
        return;
    }
    let Some(bytes) = read_in_root(root, path, MAX_CONF) else { return };
    for line in String::from_utf8_lossy(&bytes).lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if let Some(pattern) = line.strip_prefix("include").filter(|r| r.starts_with([' ', '\t'])) {
            for pat in pattern.split_whitespace() {
                let pat = match pat.starts_with('/') {
                    true => PathBuf::from(pat),
                    false => path.parent().unwrap_or(Path::new("/")).join(pat),
                };
                for f in glob_in_root(root, &pat) {
                    conf_file(root, &f, out, seen);
                }
            }
        } else if !line.is_empty() && !line.starts_with("hwcap") {
            // Each other line is one folder (ldconfig `parse_conf`, `add_dir_1`).
            let dir = line.trim_end_matches('/').to_string();
            if !out.contains(&dir) {
                out.push(dir);
            }
        }
    }
}

/// The files a pattern with `*` in its last part names inside the root, sorted (glob(3)).
fn glob_in_root(root: &Path, pat: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (pat.parent(), pat.file_name().map(|n| n.to_string_lossy().into_owned()))
    else {
        return Vec::new();
    };
    let Some((before, after)) = name.split_once('*') else { return vec![pat.to_path_buf()] };
    // Listed sorted, as glob sorts.
    list_in_root(root, dir)
        .into_iter()
        .filter(|n| n.starts_with(before) && n.ends_with(after) && n.len() >= before.len() + after.len())
        .map(|n| dir.join(n))
        .collect()
}
