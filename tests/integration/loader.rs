//! The loader's search held to glibc's own: programs and libraries built with the C compiler,
//! each search rule (RUNPATH and `$ORIGIN`, RPATH and its inheritance, RPATH cut off by a
//! RUNPATH, `LD_LIBRARY_PATH` before RUNPATH and after RPATH, `$LIB` and `$PLATFORM`, a file of
//! the wrong class passed over, a path in `DT_NEEDED`, a name found nowhere), resolved by
//! gfxscan and by this machine's loader (as `ldd` runs it), name by name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use gfxscan::source::loader::{closure, LoaderEnv};
use gfxscan::testing::{dynamic_elf, DynamicSpec};

/// The dynamic loader of this machine.
const LD_SO: &str = "/lib64/ld-linux-x86-64.so.2";

struct Build {
    dir: PathBuf,
    /// Without the C library (a root that holds none): `-nostdlib`, the program with its own
    /// `_start`.
    bare: bool,
}

impl Build {
    /// A shared library `rel` (under the build folder) with `soname`, needing `libs` (names
    /// `-l` finds in `link_dirs`, or paths), with `-Wl,extra` flags.
    fn lib(&self, rel: &str, soname: Option<&str>, needs: &[&str], flags: &[&str]) {
        let out = self.dir.join(rel);
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let src = self.dir.join(format!("{}.c", rel.replace('/', "_")));
        std::fs::write(
            &src,
            format!("int f_{}(void) {{ return 1; }}\n", rel.replace(['/', '.', '-', '$'], "_")),
        )
        .unwrap();
        let mut cmd = Command::new("cc");
        cmd.args(["-shared", "-fPIC", "-o"]).arg(&out).arg(&src);
        if let Some(s) = soname {
            cmd.arg(format!("-Wl,-soname,{s}"));
        }
        self.link(cmd, needs, flags);
    }

    fn program(&self, rel: &str, needs: &[&str], flags: &[&str]) {
        let out = self.dir.join(rel);
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let src = self.dir.join("main.c");
        let body =
            if self.bare { "void _start(void) { for (;;) {} }\n" } else { "int main(void) { return 0; }\n" };
        std::fs::write(&src, body).unwrap();
        let mut cmd = Command::new("cc");
        cmd.arg("-o").arg(&out).arg(&src);
        self.link(cmd, needs, flags);
    }

    fn link(&self, mut cmd: Command, needs: &[&str], flags: &[&str]) {
        if self.bare {
            cmd.arg("-nostdlib");
        }
        cmd.arg("-Wl,--no-as-needed");
        for n in needs {
            cmd.arg(self.dir.join(n));
        }
        for f in flags {
            cmd.arg(format!("-Wl,{f}"));
        }
        let out = cmd.output().expect("cc runs");
        assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

/// What `ldd PROGRAM` shows under `ld_library_path` (the loader run with
/// `LD_TRACE_LOADED_OBJECTS`, which goes on past a name found nowhere): each name and the file
/// it resolved to, or `None` for "not found".
fn ld_so(program: &Path, ld_library_path: Option<&str>) -> BTreeMap<String, Option<String>> {
    let mut cmd = Command::new(LD_SO);
    cmd.arg(program)
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD");
    if let Some(l) = ld_library_path {
        cmd.env("LD_LIBRARY_PATH", l);
    }
    let out = cmd.output().expect("ld.so runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            // A name the loader looked up: `name => path (address)` or `name => not found`; one
            // needed by its path (and the loader itself): `path (address)`.
            let (name, rest) = match l.split_once(" => ") {
                Some(pair) => pair,
                None if l.starts_with('/') => (l.rsplit_once(" (")?.0, l),
                None => return None,
            };
            let path = rest.rsplit_once(" (").map_or(rest, |(p, _)| p).trim();
            Some((name.to_string(), (path != "not found").then(|| path.to_string())))
        })
        .collect()
}

/// gfxscan's resolution of the same program, in the same shape.
fn ours(program: &Path, ld_library_path: Option<&str>) -> BTreeMap<String, Option<String>> {
    let env = LoaderEnv { root: "/".into(), ld_library_path: ld_library_path.map(String::from), path: None };
    let c = closure(program.to_str().unwrap(), &env).expect("closure");
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    let mut out: BTreeMap<String, Option<String>> =
        c.objects.iter().skip(1).map(|o| (o.name.clone(), Some(o.path.display().to_string()))).collect();
    out.extend(c.missing.iter().map(|m| (m.name.clone(), None)));
    out
}

#[test]
fn every_search_rule_resolves_as_glibcs_loader_does() {
    if Command::new("cc").arg("--version").output().is_err() || !Path::new(LD_SO).exists() {
        crate::util::skipped("no C compiler or no x86-64 glibc loader here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = Build { dir: tmp.path().to_path_buf(), bare: false };
    // RUNPATH with $ORIGIN, for the program's own needs only: liba's need of libonly.so is not
    // looked for in the program's RUNPATH.
    b.lib("lib2/libb.so.1", Some("libb.so.1"), &[], &[]);
    b.lib("lib/libonly.so", Some("libonly.so"), &[], &[]);
    b.lib(
        "lib/liba.so.1",
        Some("liba.so.1"),
        &["lib2/libb.so.1", "lib/libonly.so"],
        &["--enable-new-dtags", "-rpath,$ORIGIN/../lib2"],
    );
    b.program("bin/runpath", &["lib/liba.so.1"], &["--enable-new-dtags", "-rpath,$ORIGIN/../lib"]);
    // RPATH is inherited: libd's need of libe.so is found in the program's RPATH.
    b.lib("rp/libe.so", Some("libe.so"), &[], &[]);
    b.lib("rp/libd.so", Some("libd.so"), &["rp/libe.so"], &[]);
    b.program("bin/rpath", &["rp/libd.so"], &["--disable-new-dtags", "-rpath,$ORIGIN/../rp"]);
    // An object with a RUNPATH cuts the RPATH chain: libg.so comes from libf's RUNPATH, not
    // from the program's RPATH, which holds one too.
    b.lib("g1/libg.so", Some("libg.so"), &[], &[]);
    b.lib("g2/libg.so", Some("libg.so"), &[], &[]);
    b.lib("g1/libf.so", Some("libf.so"), &["g2/libg.so"], &["--enable-new-dtags", "-rpath,$ORIGIN/../g2"]);
    b.program("bin/cut", &["g1/libf.so"], &["--disable-new-dtags", "-rpath,$ORIGIN/../g1"]);
    // LD_LIBRARY_PATH before RUNPATH, after RPATH.
    b.lib("h1/libh.so", Some("libh.so"), &[], &[]);
    b.lib("h2/libh.so", Some("libh.so"), &[], &[]);
    b.program("bin/llp_runpath", &["h1/libh.so"], &["--enable-new-dtags", "-rpath,$ORIGIN/../h1"]);
    b.program("bin/llp_rpath", &["h1/libh.so"], &["--disable-new-dtags", "-rpath,$ORIGIN/../h1"]);
    // A file of another class is passed over; the search goes on to the next folder.
    b.lib("w2/libw.so", Some("libw.so"), &[], &[]);
    std::fs::create_dir_all(tmp.path().join("w1")).unwrap();
    std::fs::write(
        tmp.path().join("w1/libw.so"),
        dynamic_elf(&DynamicSpec { class64: false, machine: 3, ..DynamicSpec::default() }),
    )
    .unwrap();
    b.program("bin/class", &["w2/libw.so"], &["--enable-new-dtags", "-rpath,$ORIGIN/../w1:$ORIGIN/../w2"]);
    // $LIB and $PLATFORM, bare and braced.
    for dir in ["lib/x86_64-linux-gnu", "lib64", "p/x86_64", "p/haswell"] {
        b.lib(&format!("{dir}/libtok.so"), Some("libtok.so"), &[], &[]);
        b.lib(&format!("{dir}/libplat.so"), Some("libplat.so"), &[], &[]);
    }
    b.program(
        "bin/tokens",
        &["lib64/libtok.so", "p/x86_64/libplat.so"],
        &["--enable-new-dtags", "-rpath,$ORIGIN/../$LIB:$ORIGIN/../p/${PLATFORM}"],
    );
    // A library linked by path, without a soname, is needed by that path.
    b.lib("slash/libslash.so", None, &[], &[]);
    b.program("bin/slash", &["slash/libslash.so"], &[]);
    // A name found nowhere.
    b.lib("gone/libgone.so", Some("libgone.so"), &[], &[]);
    b.program("bin/missing", &["gone/libgone.so"], &[]);
    std::fs::remove_file(tmp.path().join("gone/libgone.so")).unwrap();

    let h2 = tmp.path().join("h2").display().to_string();
    let cases: &[(&str, Option<&str>)] = &[
        ("bin/runpath", None),
        ("bin/rpath", None),
        ("bin/cut", None),
        ("bin/llp_runpath", Some(&h2)),
        ("bin/llp_rpath", Some(&h2)),
        ("bin/class", None),
        ("bin/tokens", None),
        ("bin/slash", None),
        ("bin/missing", None),
    ];
    for (program, llp) in cases {
        let p = tmp.path().join(program);
        let theirs = ld_so(&p, *llp);
        assert!(theirs.contains_key("libc.so.6"), "{program}: ld.so --list gave {theirs:?}");
        assert_eq!(ours(&p, *llp), theirs, "{program} with LD_LIBRARY_PATH {llp:?}");
    }
    // Not a comparison that cannot fail: the rules above decide between real alternatives.
    let llp = ours(&tmp.path().join("bin/llp_runpath"), Some(&h2));
    assert!(llp["libh.so"].as_deref().is_some_and(|p| p.contains("/h2/")), "{llp:?}");
    let cut = ours(&tmp.path().join("bin/cut"), None);
    assert!(cut["libg.so"].as_deref().is_some_and(|p| p.contains("/g2/")), "{cut:?}");
    let runpath = ours(&tmp.path().join("bin/runpath"), None);
    assert_eq!(runpath["libonly.so"], None, "RUNPATH is not inherited: {runpath:?}");
}

/// A shared library built with the C compiler whose `.hip_fatbin` holds `bundle`, as hipcc
/// lays it out (one aligned read-only section).
fn gpu_lib(b: &Build, rel: &str, soname: &str, bundle: &[u8]) {
    let bytes: Vec<String> = bundle.iter().map(|x| x.to_string()).collect();
    let src = b.dir.join(format!("{}.c", rel.replace('/', "_")));
    std::fs::write(
        &src,
        format!(
            "__attribute__((section(\".hip_fatbin\"), aligned(4096), used)) const unsigned char fatbin[] = {{{}}};\n",
            bytes.join(",")
        ),
    )
    .unwrap();
    let out = b.dir.join(rel);
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let mut cmd = Command::new("cc");
    cmd.args(["-shared", "-fPIC", "-nostdlib", "-o"])
        .arg(&out)
        .arg(&src)
        .arg(format!("-Wl,-soname,{soname}"));
    let done = cmd.output().expect("cc runs");
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
}

fn gfxscan(args: &[&str]) -> (i32, String, String) {
    let r = crate::util::gfxscan(args);
    (r.code, r.stdout, r.stderr)
}

/// `check --exe` judges exactly the libraries the program loads, found as the loader finds
/// them inside `--root` (a RUNPATH with `$ORIGIN`, then the folders of the root's
/// `ld.so.conf`), each with the verdict `check` gives it on the whole tree; a library of the
/// chain removed is named with what needs it, and the program does not start (exit 1).
#[test]
fn check_exe_judges_what_the_program_loads() {
    use crate::fixtures::{co, hip_bundle, GFX1100, GFX90A};
    let Some((_tmp, b, root)) = bare_build() else { return };
    let (c1100, c90a) = (co(GFX1100, 0, 2), co(GFX90A, 0, 1));
    gpu_lib(
        &b,
        "../root/usr/lib/gpu/libgpu.so.1",
        "libgpu.so.1",
        &hip_bundle(&[("gfx1100", &c1100), ("gfx90a", &c90a)]),
    );
    gpu_lib(&b, "../root/usr/lib/gpu/libother.so.1", "libother.so.1", &hip_bundle(&[("gfx90a", &c90a)]));
    b.lib("../root/usr/lib/app/libapp.so", Some("libapp.so"), &["../root/usr/lib/gpu/libgpu.so.1"], &[]);
    b.program(
        "../root/usr/bin/prog",
        &["../root/usr/lib/app/libapp.so"],
        &["--enable-new-dtags", "-rpath,$ORIGIN/../lib/app"],
    );
    // The program's interpreter, as its root must hold it.
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    std::fs::copy(LD_SO, root.join("lib64/ld-linux-x86-64.so.2")).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/ld.so.conf"), "# as ldconfig reads it\n/usr/lib/gpu/\n").unwrap();
    let r = root.to_str().unwrap();

    let (code, out, err) =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", r, "--json", "-q"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = &v["program"];
    assert_eq!(p["starts"], true, "{p}");
    let gpu =
        p["loads"].as_array().unwrap().iter().find(|l| l["name"] == "libgpu.so.1").expect("libgpu loaded");
    assert_eq!(gpu["chain"], serde_json::json!(["libgpu.so.1", "libapp.so", "prog"]), "{gpu}");
    assert_eq!(gpu["through"], "ld.so.conf /usr/lib/gpu", "{gpu}");
    let verdicts = |v: &serde_json::Value| -> Vec<(String, serde_json::Value)> {
        v["installs"][0]["gpus"][0]["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x["library"].as_str().unwrap().rsplit('/').next().unwrap().to_string(), x.clone()))
            .collect()
    };
    let judged = verdicts(&v);
    assert_eq!(
        judged.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["libgpu.so.1"],
        "only what loads"
    );
    // The same library, judged by `check` on the whole tree, has the same verdict; the library
    // the program does not load is judged there (and fails), not for the program.
    let (whole_code, whole, _) = gfxscan(&["check", "--gpu", "gfx1100", r, "--json", "-q"]);
    assert_eq!(whole_code, 1, "libother lacks gfx1100: {whole}");
    let whole = verdicts(&serde_json::from_str(&whole).unwrap());
    assert_eq!(whole.iter().find(|(n, _)| n == "libgpu.so.1").map(|(_, x)| x), Some(&judged[0].1));

    // Its interpreter gone, the program does not run at all.
    std::fs::rename(root.join("lib64/ld-linux-x86-64.so.2"), root.join("lib64/gone")).unwrap();
    let (code, out, _) = gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", r]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("missing: /lib64/ld-linux-x86-64.so.2, needed by prog"), "{out}");
    std::fs::rename(root.join("lib64/gone"), root.join("lib64/ld-linux-x86-64.so.2")).unwrap();
    // A program named without a slash is found in PATH, as a shell finds it.
    let (code, by_name, _) = gfxscan(&[
        "check",
        "--gpu",
        "gfx1100",
        "--exe",
        "prog",
        "--root",
        r,
        "--env",
        "PATH=/nowhere:/usr/bin",
        "--json",
        "-q",
    ]);
    assert_eq!(code, 0, "{by_name}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&by_name).unwrap()["installs"], v["installs"]);
    std::fs::remove_file(root.join("usr/lib/gpu/libgpu.so.1")).unwrap();
    let (code, out, _) = gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", r]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("missing: libgpu.so.1, needed by libapp.so ← prog: the program does not start"),
        "{out}"
    );
    assert!(out.contains("MISSING: the program does not start"), "{out}");
}

/// The HIP runtime the program loads decides the rules its libraries are judged by, wherever
/// each lies: a bundle entry of pre-ROCm-4.1 form (`hip-amdgcn-amd-amdhsa-gfx1100`, four parts)
/// loads under HIP 5.7's legacy unbundler, which reads the entry's ELF, and never under comgr.
#[test]
fn check_exe_judges_by_the_runtime_the_program_loads() {
    use crate::fixtures::{co, GFX1100, HOST};
    let Some((_tmp, b, root)) = bare_build() else { return };
    let c1100 = co(GFX1100, 0, 1);
    let old = gfxscan::testing::bundle(&[(HOST, &[][..]), ("hip-amdgcn-amd-amdhsa-gfx1100", &c1100)], 4096);
    gpu_lib(&b, "../root/usr/lib/gpu/libgpu.so.1", "libgpu.so.1", &old);
    b.lib("../root/opt/rocm-5.7.0/lib/libamdhip64.so.5.7.31921", Some("libamdhip64.so.5"), &[], &[]);
    std::os::unix::fs::symlink("libamdhip64.so.5.7.31921", root.join("opt/rocm-5.7.0/lib/libamdhip64.so.5"))
        .unwrap();
    b.lib(
        "../root/usr/lib/app/libapp.so",
        Some("libapp.so"),
        &["../root/usr/lib/gpu/libgpu.so.1", "../root/opt/rocm-5.7.0/lib/libamdhip64.so.5"],
        &["--enable-new-dtags", "-rpath,/usr/lib/gpu:/opt/rocm-5.7.0/lib"],
    );
    b.program(
        "../root/usr/bin/prog",
        &["../root/usr/lib/app/libapp.so"],
        &["--enable-new-dtags", "-rpath,$ORIGIN/../lib/app"],
    );
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    std::fs::copy(LD_SO, root.join("lib64/ld-linux-x86-64.so.2")).unwrap();
    let r = root.to_str().unwrap();
    let (code, out, err) =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", r, "--json", "-q"]);
    assert_eq!(code, 0, "HIP 5.7 loads it by its ELF: {out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["installs"][0]["runtime"]["version"], "5.7.31921", "{v}");
    // The same library on its own, with no runtime beside it, is judged by ROCm 7.x's comgr.
    let (code, out, _) = gfxscan(&["check", "--gpu", "gfx1100", &format!("{r}/usr/lib/gpu"), "--json", "-q"]);
    assert_eq!(code, 1, "comgr never matches a four-part ID: {out}");
}

/// `check --pid` judges what a live process has mapped, under its environment, and agrees with
/// `check --exe` on its program.
#[test]
fn check_pid_agrees_with_check_exe_on_a_live_process() {
    use crate::fixtures::{co, hip_bundle, GFX1100, GFX90A};
    if Command::new("cc").arg("--version").output().is_err() {
        crate::util::skipped("no C compiler here");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = Build { dir: tmp.path().to_path_buf(), bare: false };
    let (c1100, c90a) = (co(GFX1100, 0, 2), co(GFX90A, 0, 1));
    gpu_lib(&b, "lib/libgpu.so.1", "libgpu.so.1", &hip_bundle(&[("gfx1100", &c1100), ("gfx90a", &c90a)]));
    let src = tmp.path().join("pause.c");
    std::fs::write(&src, "#include <unistd.h>\nint main(void) { pause(); return 0; }\n").unwrap();
    let prog = tmp.path().join("bin/prog");
    std::fs::create_dir_all(prog.parent().unwrap()).unwrap();
    let built = Command::new("cc")
        .arg("-o")
        .arg(&prog)
        .arg(&src)
        .arg("-Wl,--no-as-needed")
        .arg(tmp.path().join("lib/libgpu.so.1"))
        .arg("-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib")
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    /// Killed however the test ends.
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = Running(Command::new(&prog).env("HSA_OVERRIDE_GFX_VERSION", "11.0.0").spawn().unwrap());
    let pid = child.0.id().to_string();
    // The loader maps the libraries before main runs; wait until /proc shows libgpu.
    let maps = format!("/proc/{pid}/maps");
    for _ in 0..500 {
        if std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("libgpu.so.1")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The process's own override (HSA_OVERRIDE_GFX_VERSION=11.0.0) makes a gfx1030 load its
    // gfx1100 code: read from /proc/PID/environ, as --env gives it to --exe.
    // The system's kernel is read under --sysfs-root (here a fixture: the host's is not judged),
    // the same for the process and the program.
    let system = tempfile::tempdir().unwrap();
    let sys = system.path();
    std::fs::create_dir_all(sys.join("proc/sys/kernel")).unwrap();
    std::fs::write(sys.join("proc/sys/kernel/osrelease"), "6.12.0-test\n").unwrap();
    let kdir = sys.join("lib/modules/6.12.0-test/kernel/drivers/gpu/drm/amd/amdgpu");
    std::fs::create_dir_all(&kdir).unwrap();
    let info = b"firmware=amdgpu/sienna_cichlid_pfp.bin\0vermagic=6.12.0-test SMP\0";
    let module = gfxscan::testing::host_elf(&[gfxscan::testing::HostSection::rodata(".modinfo", info)]);
    std::fs::write(kdir.join("amdgpu.ko"), module).unwrap();
    std::fs::create_dir_all(sys.join("lib/firmware/amdgpu")).unwrap();
    std::fs::write(sys.join("lib/firmware/amdgpu/sienna_cichlid_pfp.bin"), b"x").unwrap();
    let sys = sys.to_str().unwrap();
    let (code, live, err) =
        gfxscan(&["check", "--gpu", "gfx1030", "--pid", &pid, "--sysfs-root", sys, "--json", "-q"]);
    assert_eq!(code, 0, "{live}{err}");
    let prog = prog.to_str().unwrap();
    let (_, exe, _) = gfxscan(&[
        "check",
        "--gpu",
        "gfx1030",
        "--exe",
        prog,
        "--env",
        "HSA_OVERRIDE_GFX_VERSION=11.0.0",
        "--sysfs-root",
        sys,
        "--json",
        "-q",
    ]);
    let (bare_code, _, _) =
        gfxscan(&["check", "--gpu", "gfx1030", "--exe", prog, "--sysfs-root", sys, "--json", "-q"]);
    assert_eq!(bare_code, 1, "without the override a gfx1030 finds no code");
    let parse = |json: &str| {
        serde_json::from_str::<serde_json::Value>(json).unwrap_or_else(|e| panic!("{e}: {json}"))
    };
    let (live, exe) = (parse(&live), parse(&exe));
    let libgpu =
        live["program"]["loads"].as_array().unwrap().iter().find(|l| l["name"] == "libgpu.so.1").cloned();
    assert_eq!(libgpu.expect("mapped")["chain"], serde_json::json!(["libgpu.so.1", "prog"]));
    assert_eq!(live["installs"], exe["installs"], "the same verdicts");
    assert_eq!(live["drivers"], exe["drivers"], "the same kernel");
    assert_eq!(live["drivers"][0]["outcome"], "ok", "{live:#}");
    assert_eq!(live["drivers"][0]["release"], "6.12.0-test");
    // A process that is not there is a clear error.
    let (code, _, err) = gfxscan(&["check", "--gpu", "gfx1030", "--pid", "4294967295"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no such process"), "{err}");
}

/// Ollama loads its GPU backend in a runner started with its library folders first in
/// `LD_LIBRARY_PATH` (`lib/ollama`, then `lib/ollama/rocm`): the backend and the ROCm libraries
/// beside it are found there (Ollama `StartRunner`, ggml `ggml_backend_load_all_from_path`).
#[test]
fn check_exe_follows_ollamas_runner() {
    use crate::fixtures::{co, hip_bundle, GFX1100};
    let Some((_tmp, b, root)) = bare_build() else { return };
    let c1100 = co(GFX1100, 0, 1);
    gpu_lib(
        &b,
        "../root/usr/lib/ollama/rocm/librocblas.so.4",
        "librocblas.so.4",
        &hip_bundle(&[("gfx1100", &c1100)]),
    );
    b.lib("../root/usr/lib/ollama/libggml-base.so", Some("libggml-base.so"), &[], &[]);
    b.lib(
        "../root/usr/lib/ollama/rocm/libggml-hip.so",
        Some("libggml-hip.so"),
        &["../root/usr/lib/ollama/libggml-base.so", "../root/usr/lib/ollama/rocm/librocblas.so.4"],
        &[],
    );
    b.program(
        "../root/usr/bin/ollama",
        &["../root/usr/lib/ollama/libggml-base.so"],
        &["--enable-new-dtags", "-rpath,$ORIGIN/../lib/ollama"],
    );
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    std::fs::copy(LD_SO, root.join("lib64/ld-linux-x86-64.so.2")).unwrap();
    // Ollama installs rocBLAS's Tensile folder beside it (its CMake `install(DIRECTORY …/rocblas`).
    std::fs::create_dir_all(root.join("usr/lib/ollama/rocm/rocblas/library")).unwrap();
    let r = root.to_str().unwrap();
    let (code, out, err) =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/ollama", "--root", r, "--json", "-q"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let loads = v["program"]["loads"].as_array().unwrap();
    let find = |n: &str| {
        loads
            .iter()
            .find(|l| l["name"].as_str().is_some_and(|x| x.ends_with(n)))
            .cloned()
            .unwrap_or_else(|| panic!("{n}: {v}"))
    };
    assert_eq!(find("libggml-hip.so")["through"], "dlopen by Ollama's runner");
    assert_eq!(find("librocblas.so.4")["through"], "LD_LIBRARY_PATH /usr/lib/ollama/rocm");
    let judged = v["installs"][0]["gpus"][0]["verdicts"].as_array().unwrap();
    assert!(
        judged.iter().any(|x| x["library"].as_str().is_some_and(|l| l.ends_with("rocm/librocblas.so.4"))),
        "{v}"
    );
}

/// Without an `ld.so.cache`, a root's `ld.so.conf` folders are searched as `ldconfig` would
/// index them (comments, `include` globs relative to the including file, trailing slashes, the
/// first folder first); with the cache `ldconfig` itself writes from that configuration, the
/// same files are found through it, and they are the first entries `ldconfig -p` lists.
#[test]
fn ld_so_conf_resolves_as_ldconfig_indexes_it() {
    let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig"].into_iter().find(|p| Path::new(p).exists());
    let (Some(ldconfig), true) = (ldconfig, Command::new("cc").arg("--version").output().is_ok()) else {
        crate::util::skipped("no ldconfig or no C compiler here");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let b = Build { dir: tmp.path().join("build"), bare: true };
    std::fs::create_dir_all(&b.dir).unwrap();
    let root = tmp.path().join("root");
    b.lib("../root/opt/a/libx.so.1", Some("libx.so.1"), &[], &[]);
    b.lib("../root/opt/b/libx.so.1", Some("libx.so.1"), &[], &[]);
    b.lib("../root/opt/b/liby.so.2", Some("liby.so.2"), &[], &[]);
    b.program("../root/usr/bin/prog", &["../root/opt/b/libx.so.1", "../root/opt/b/liby.so.2"], &[]);
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    std::fs::copy(LD_SO, root.join("lib64/ld-linux-x86-64.so.2")).unwrap();
    std::fs::create_dir_all(root.join("etc/ld.so.conf.d")).unwrap();
    std::fs::write(root.join("etc/ld.so.conf"), "# the folders\ninclude ld.so.conf.d/*.conf\n/opt/b/\n")
        .unwrap();
    std::fs::write(root.join("etc/ld.so.conf.d/10-a.conf"), "/opt/a # first\n").unwrap();
    std::fs::write(root.join("etc/ld.so.conf.d/readme.txt"), "/opt/b\n").unwrap();
    let env = LoaderEnv { root: root.clone(), ld_library_path: None, path: None };
    let resolved = || -> BTreeMap<String, (String, String)> {
        let c = closure("/usr/bin/prog", &env).expect("closure");
        assert!(c.missing.is_empty(), "{:?}", c.missing);
        let libraries = c.objects.iter().skip(1).filter(|o| !o.name.starts_with('/'));
        libraries.map(|o| (o.name.clone(), (o.path.display().to_string(), o.through.describe()))).collect()
    };
    let from_conf = resolved();
    assert_eq!(from_conf["libx.so.1"], ("/opt/a/libx.so.1".to_string(), "ld.so.conf /opt/a".to_string()));
    let made = Command::new(ldconfig).arg("-X").arg("-r").arg(&root).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let from_cache = resolved();
    for (name, (path, through)) in &from_cache {
        assert_eq!(through, "ld.so.cache", "{name}");
        assert_eq!(&from_conf[name].0, path, "{name}");
    }
    let listed = Command::new(ldconfig).arg("-r").arg(&root).arg("-p").output().unwrap();
    let mut first: BTreeMap<String, String> = BTreeMap::new();
    for line in String::from_utf8_lossy(&listed.stdout).lines().skip(1) {
        if let Some((name, path)) = line.trim().split_once(" => ") {
            let name = name.split(" (").next().unwrap_or(name).to_string();
            first.entry(name).or_insert_with(|| path.to_string());
        }
    }
    for (name, (path, _)) in &from_cache {
        assert_eq!(first.get(name), Some(path), "{name}: ldconfig -p lists {first:?}");
    }
}

/// Hostile roots stay cheap: an `ld.so.conf` whose files include each other, a FIFO where the
/// cache would be. A backend for other hardware that cannot load (ggml's CUDA backend without
/// libcuda) is skipped, as ggml skips it; rocBLAS loaded without its Tensile folder fails the
/// program, as rocBLAS aborts at its first GEMM.
#[test]
fn check_exe_on_hostile_roots_and_partial_installs() {
    use crate::fixtures::{co, hip_bundle, GFX1100};
    let Some((_tmp, b, root)) = bare_build() else { return };
    let c1100 = co(GFX1100, 0, 1);
    gpu_lib(
        &b,
        "../root/usr/lib/ollama/rocm/libggml-hip.so",
        "libggml-hip.so",
        &hip_bundle(&[("gfx1100", &c1100)]),
    );
    b.lib("../root/usr/lib/ollama/libggml-base.so", Some("libggml-base.so"), &[], &[]);
    b.lib("../root/usr/lib/ollama/cuda_v12/libcuda.so.1", Some("libcuda.so.1"), &[], &[]);
    b.lib(
        "../root/usr/lib/ollama/cuda_v12/libggml-cuda.so",
        Some("libggml-cuda.so"),
        &["../root/usr/lib/ollama/cuda_v12/libcuda.so.1"],
        &[],
    );
    std::fs::remove_file(root.join("usr/lib/ollama/cuda_v12/libcuda.so.1")).unwrap();
    b.program(
        "../root/usr/bin/ollama",
        &["../root/usr/lib/ollama/libggml-base.so"],
        &["--enable-new-dtags", "-rpath,$ORIGIN/../lib/ollama"],
    );
    std::fs::create_dir_all(root.join("lib64")).unwrap();
    std::fs::copy(LD_SO, root.join("lib64/ld-linux-x86-64.so.2")).unwrap();
    std::fs::create_dir_all(root.join("etc/ld.so.conf.d")).unwrap();
    std::fs::write(root.join("etc/ld.so.conf"), "include ld.so.conf.d/*.conf\n").unwrap();
    for n in 0..8 {
        std::fs::write(root.join(format!("etc/ld.so.conf.d/{n}.conf")), "include *.conf\n/opt/x\n").unwrap();
    }
    let fifo = std::ffi::CString::new(root.join("etc/ld.so.cache").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo takes a NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let r = root.to_str().unwrap();
    let started = std::time::Instant::now();
    let (code, out, err) =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/ollama", "--root", r, "--json", "-q"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(code, 0, "the CUDA backend is skipped: {out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cuda = v["program"]["runtime"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["what"].as_str().is_some_and(|w| w.contains("cuda")))
        .cloned();
    assert_eq!(cuda.expect("looked at")["gpu"], false);
    // rocBLAS without its Tensile folder.
    gpu_lib(
        &b,
        "../root/opt/rocm/lib/librocblas.so.4",
        "librocblas.so.4",
        &hip_bundle(&[("gfx1100", &c1100)]),
    );
    b.program(
        "../root/usr/bin/blas",
        &["../root/opt/rocm/lib/librocblas.so.4"],
        &["--enable-new-dtags", "-rpath,/opt/rocm/lib"],
    );
    let (code, out, _) =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/blas", "--root", r, "--json", "-q"]);
    assert_eq!(code, 1, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["program"]["lacking"][0]["looked"][0], "/opt/rocm/lib/../../Tensile/library", "{v}");
    std::fs::create_dir_all(root.join("opt/rocm/lib/rocblas/library")).unwrap();
    let (_, out, _) =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/blas", "--root", r, "--json", "-q"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["program"]["lacking"], serde_json::json!([]), "{v}");
    assert_eq!(v["program"]["data"][0]["folder"], "/opt/rocm/lib/rocblas/library");
}

/// A folder to build in without the C library and the root beside it, or `None` (said) when
/// this machine has no C compiler.
fn bare_build() -> Option<(tempfile::TempDir, Build, PathBuf)> {
    if Command::new("cc").arg("--version").output().is_err() {
        crate::util::skipped("no C compiler here");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = Build { dir: tmp.path().join("build"), bare: true };
    std::fs::create_dir_all(&b.dir).unwrap();
    let root = tmp.path().join("root");
    Some((tmp, b, root))
}

/// A program of another loader than glibc's (musl's) is not judged as if glibc loaded it: what
/// it loads is read, and no OK is given (INCOMPLETE).
#[test]
fn a_musl_program_is_not_taken_for_a_glibc_one() {
    use crate::fixtures::{co, hip_bundle, GFX1100};
    let Some((_tmp, b, root)) = bare_build() else { return };
    gpu_lib(
        &b,
        "../root/usr/lib/gpu/libgpu.so.1",
        "libgpu.so.1",
        &hip_bundle(&[("gfx1100", &co(GFX1100, 0, 1))]),
    );
    let spec = DynamicSpec {
        e_type: 3,
        needed: vec!["libgpu.so.1".into()],
        runpath: Some("/usr/lib/gpu".into()),
        interp: Some("/lib/ld-musl-x86_64.so.1".into()),
        ..DynamicSpec::default()
    };
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::write(root.join("usr/bin/prog"), dynamic_elf(&spec)).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::copy(LD_SO, root.join("lib/ld-musl-x86_64.so.1")).unwrap();
    let (code, out, err) =
        gfxscan(&["check", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", root.to_str().unwrap()]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(out.contains("not read: /usr/bin/prog: its loader (/lib/ld-musl-x86_64.so.1"), "{out}");
}

/// Issue 34: a program with 100,000 `DT_NEEDED` names (a string table past 16 MiB) is read as
/// glibc reads it, every name looked up once (a name already searched for by the same object,
/// or answered by a loaded one, is not searched again): the lookup is linear in the names, and
/// a program none of whose libraries is there does not start, each name named.
#[test]
fn a_program_with_a_hundred_thousand_needed_names_is_resolved_in_linear_time() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let pad = "p".repeat(160);
    let mut needed: Vec<String> = (0..100_000).map(|i| format!("libgone{i}{pad}.so")).collect();
    // Repeats are looked up once.
    needed.extend((0..20_000).map(|i| format!("libgone{i}{pad}.so")));
    let spec = DynamicSpec { e_type: 3, needed, ..DynamicSpec::default() };
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::write(root.join("usr/bin/prog"), dynamic_elf(&spec)).unwrap();
    let start = std::time::Instant::now();
    let args =
        ["check", "--gpu", "gfx1100", "--exe", "/usr/bin/prog", "--root", root.to_str().unwrap(), "--json"];
    let r = crate::util::gfxscan(args);
    let took = start.elapsed();
    assert_eq!(r.code, 1, "{}", r.stderr);
    let doc = r.json();
    let missing = doc["program"]["missing"].as_array().map_or(0, Vec::len);
    assert_eq!(missing, 100_000, "each name missing once: {}", &r.stdout[..r.stdout.len().min(2000)]);
    // A debug build on a shared 2-core machine: the release build takes a fraction of this.
    assert!(took < std::time::Duration::from_secs(60), "took {took:?}");
}

/// A zombie (exited, not yet reaped by its parent) has no program or libraries left: `--pid`
/// says so (exit 2), not "no such process", which `/proc/<pid>` would contradict.
#[test]
fn check_pid_of_a_zombie_says_it_is_one() {
    let mut child = std::process::Command::new("true").spawn().expect("spawns true");
    let pid = child.id();
    // Not reaped until the check has run: a zombie of this test meanwhile.
    let stat = format!("/proc/{pid}/stat");
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&stat)
        .is_ok_and(|s| s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')))
    {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "true never exited");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let run = crate::util::gfxscan(["check", "-q", "--pid", &pid.to_string(), "--gpu", "gfx1100"]);
    child.wait().expect("reaped");
    run.expect_code(2);
    assert!(run.stderr.contains(&format!("process {pid} is a zombie")), "{}", run.stderr);
}
