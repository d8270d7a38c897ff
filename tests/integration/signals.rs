//! Interrupted runs (issue 23): SIGINT, SIGTERM and SIGHUP remove the staged output and end with
//! 128 + the signal; a closed pipe or a full device never makes gfxscan panic.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_gfxscan");

/// The staged outputs (`.gfxscan-*.part`) in a folder.
fn parts(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.ends_with(".part"))
        .collect()
}

#[test]
fn a_signal_mid_scan_leaves_no_staged_output_and_exits_128_plus_it() {
    let tree = tempfile::tempdir().expect("tempdir");
    // Enough files that one thread takes a while to walk and read them.
    for i in 0..100_000 {
        std::fs::write(tree.path().join(format!("f{i}")), b"").expect("write");
    }
    let out = tempfile::tempdir().expect("tempdir");
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let target = out.path().join("snapshot.json");
        let mut child = Command::new(BIN)
            .args(["scan", "-q", "-j", "1", "--json", "-o"])
            .arg(&target)
            .arg(tree.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawns");
        let start = Instant::now();
        while parts(out.path()).is_empty() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(parts(out.path()).len(), 1, "the output is staged while the scan runs");
        // SAFETY: kill sends a signal to the child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        let status = child.wait().expect("waits");
        assert_eq!(status.code(), Some(code), "signal {sig}");
        assert_eq!(parts(out.path()), Vec::<String>::new(), "signal {sig} left a staged output");
        assert!(!target.exists(), "an interrupted run writes no result");
    }
}

/// `completions` into a closed pipe or a full device: an error or a quiet end, never a panic.
#[test]
fn completions_into_a_closed_pipe_or_a_full_device_do_not_panic() {
    for shell in ["bash", "zsh", "fish"] {
        let mut child = Command::new(BIN)
            .args(["completions", shell])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        // Close the reading end at once: every write meets a closed pipe.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("waits");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{shell}: {err}");
        assert_eq!(out.status.code(), Some(0), "{shell}: {err}");
    }
    if std::path::Path::new("/dev/full").exists() {
        for args in [vec!["completions", "zsh"], vec!["man"]] {
            let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
            let out = Command::new(BIN).args(&args).stdout(full).output().expect("runs");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{args:?}: {err}");
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("No space left"), "{args:?}: {err}");
        }
    }
}
