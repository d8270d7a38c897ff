//! Names this build: a digest of every file under `src/`, `build.rs`, `targets.toml`,
//! `Cargo.toml`, `Cargo.lock` and the compiler's version, compiled in as `GFXSCAN_SOURCES`. A
//! snapshot records it beside the facts it lets a later scan reuse (`scan --reuse`): facts read
//! by other code are read again, whatever the version number says.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// FNV-1a, 64 bits: enough to tell two builds apart (no one is trying to collide them).
fn fnv(hash: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *hash ^= u64::from(b);
        *hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
}

fn main() {
    let mut all = Vec::new();
    files(Path::new("src"), &mut all);
    all.sort();
    let top = ["build.rs", "targets.toml", "Cargo.toml", "Cargo.lock"];
    all.extend(top.map(PathBuf::from));
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    for p in &all {
        fnv(&mut hash, p.to_string_lossy().as_bytes());
        fnv(&mut hash, &std::fs::read(p).unwrap_or_default());
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc).arg("-vV").output().map(|o| o.stdout).unwrap_or_default();
    fnv(&mut hash, &version);
    println!("cargo:rustc-env=GFXSCAN_SOURCES={hash:016x}");
    println!("cargo:rerun-if-changed=src");
    for f in top {
        println!("cargo:rerun-if-changed={f}");
    }
}
