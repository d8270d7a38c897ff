//! The files in `deploy/`, tested as far as this machine allows: the Kubernetes manifests and
//! the CI workflow parse and hold together (every mount has its volume, host paths are mounted
//! read-only, the indexed Job has one completion per image), the shell scripts parse, and the
//! container entrypoint runs for real and leaves a snapshot `merge` reads.

use std::path::Path;
use std::process::Command;

use serde_yaml_ng::Value;

use crate::util::{gfxscan, run};

fn deploy(rel: &str) -> String {
    format!("{}/deploy/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn docs(rel: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(deploy(rel)).expect("readable");
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{rel}: {e}")))
        .collect()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// Checks a pod template: named mounts have volumes, host paths are read-only (but for
/// node-exporter's textfile folder, which must already exist: never created on the host), the
/// root file system is read-only and the container drops its capabilities.
fn check_pod(spec: &Value, what: &str) {
    let volumes: Vec<&Value> = spec["volumes"].as_sequence().expect("volumes").iter().collect();
    let volume = |name: &str| volumes.iter().find(|v| s(&v["name"]) == name).copied();
    for c in spec["containers"].as_sequence().expect("containers") {
        assert!(!s(&c["image"]).is_empty(), "{what}: an image");
        assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], Value::Bool(true), "{what}");
        assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], Value::Bool(false), "{what}");
        for m in c["volumeMounts"].as_sequence().expect("mounts") {
            let v = volume(s(&m["name"])).unwrap_or_else(|| panic!("{what}: no volume {:?}", m["name"]));
            if s(&v["hostPath"]["path"]) == "/var/lib/node_exporter/textfile_collector" {
                assert_eq!(s(&v["hostPath"]["type"]), "Directory", "{what}: the metrics folder is not made");
            } else if v.get("hostPath").is_some() {
                assert_eq!(
                    m["readOnly"],
                    Value::Bool(true),
                    "{what}: host path {:?} read-only",
                    m["mountPath"]
                );
            }
        }
    }
}

#[test]
fn the_daemonset_mounts_the_host_install_and_kfd_read_only() {
    let all = docs("kubernetes/daemonset.yaml");
    let d = all.iter().find(|d| s(&d["kind"]) == "DaemonSet").expect("a DaemonSet");
    // The shared volume it writes to is defined, for every node at once, and writable by the
    // unprivileged user it runs as.
    let pvc = all.iter().find(|d| s(&d["kind"]) == "PersistentVolumeClaim").expect("its volume claim");
    assert_eq!(s(&pvc["metadata"]["name"]), "gfxscan-snapshots");
    assert_eq!(pvc["spec"]["accessModes"][0], Value::String("ReadWriteMany".into()));
    assert_eq!(d["spec"]["template"]["spec"]["securityContext"]["fsGroup"].as_u64(), Some(65534));
    // Nothing is created on the host: no DirectoryOrCreate.
    assert!(!std::fs::read_to_string(deploy("kubernetes/daemonset.yaml"))
        .expect("read")
        .contains("OrCreate"));
    assert_eq!((s(&d["apiVersion"]), s(&d["kind"])), ("apps/v1", "DaemonSet"));
    assert_eq!(d["spec"]["selector"]["matchLabels"], d["spec"]["template"]["metadata"]["labels"]);
    let spec = &d["spec"]["template"]["spec"];
    check_pod(spec, "daemonset");
    let host: Vec<&str> = spec["volumes"]
        .as_sequence()
        .into_iter()
        .flatten()
        .filter_map(|v| v["hostPath"]["path"].as_str())
        .collect();
    for p in ["/opt/rocm", "/sys/class/kfd", "/lib/firmware/amdgpu"] {
        assert!(host.contains(&p), "{p} is mounted from the host");
    }
    let env = &spec["containers"][0]["env"];
    assert!(env
        .as_sequence()
        .into_iter()
        .flatten()
        .any(|e| s(&e["name"]) == "NODE_NAME"
            && s(&e["valueFrom"]["fieldRef"]["fieldPath"]) == "spec.nodeName"));
}

#[test]
fn the_image_job_has_one_completion_per_image() {
    let all = docs("kubernetes/job-images.yaml");
    let job = all.iter().find(|d| s(&d["kind"]) == "Job").expect("a Job");
    let map = all.iter().find(|d| s(&d["kind"]) == "ConfigMap").expect("a ConfigMap");
    assert_eq!(s(&job["spec"]["completionMode"]), "Indexed");
    let images = s(&map["data"]["images.txt"]).lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(job["spec"]["completions"].as_u64(), Some(images as u64));
    check_pod(&job["spec"]["template"]["spec"], "job");
}

#[test]
fn the_ci_workflow_merges_after_every_scan() {
    let w = &docs("ci/github-actions.yml")[0];
    assert_eq!(s(&w["jobs"]["merge"]["needs"]), "scan");
    assert!(w["jobs"]["scan"]["strategy"]["matrix"]["image"].as_sequence().is_some_and(|i| !i.is_empty()));
    // The scan runs only when the kept snapshot is not of this digest and these sources.
    let steps = w["jobs"]["scan"]["steps"].as_sequence().expect("steps");
    let key = steps.iter().find_map(|st| st["with"]["key"].as_str()).expect("a cache key");
    assert!(key.contains("steps.digest.outputs.digest") && key.contains("hashFiles('src/**'"), "{key}");
    let snapshot = steps.iter().find(|st| st["name"] == "snapshot").expect("the snapshot step");
    assert_eq!(s(&snapshot["if"]), "steps.last.outputs.cache-hit != 'true'");
}

#[test]
fn the_scripts_parse() {
    for (shell, rel) in [
        ("sh", "entrypoint.sh"),
        ("bash", "slurm/gfxscan-array.sbatch"),
        ("bash", "slurm/gfxscan-merge.sbatch"),
    ] {
        let r = run({
            let mut c = Command::new(shell);
            c.args(["-n", &deploy(rel)]);
            c
        });
        assert_eq!(r.code, 0, "{rel}: {}", r.stderr);
    }
}

/// With METRICS_DIR, the entrypoint writes the scan's metrics and the check's of this node's
/// GPUs (its KFD topology) for the textfile collector; promtool reads both. A check that cannot
/// run (no GPU) removes its stale file rather than leave an old verdict.
#[test]
fn the_entrypoint_writes_metrics_for_the_textfile_collector() {
    let out = tempfile::tempdir().expect("tempdir");
    let metrics = tempfile::tempdir().expect("tempdir");
    let sys = crate::util::Tree::new();
    let props = "simd_count 96\ngfx_target_version 110000\ncapability 0\nlocation_id 768\ndomain 0\n";
    sys.file("sys/class/kfd/kfd/topology/nodes/1/properties", props.as_bytes());
    let sample = format!("{}/sample/opt/rocm", env!("CARGO_MANIFEST_DIR"));
    let entry = |sysfs: &str| {
        let mut c = Command::new("sh");
        c.arg(deploy("entrypoint.sh"))
            .env("GFXSCAN", env!("CARGO_BIN_EXE_gfxscan"))
            .env("NODE_NAME", "node-20")
            .env("OUT_DIR", out.path())
            .env("METRICS_DIR", metrics.path())
            .env("SYSFS_ROOT", sysfs)
            .env("ROOTS", &sample);
        run(c)
    };
    let r = entry(&sys.root_str());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let scan = std::fs::read_to_string(metrics.path().join("gfxscan_scan.prom")).expect("scan metrics");
    let check = std::fs::read_to_string(metrics.path().join("gfxscan_check.prom")).expect("check metrics");
    assert!(scan.contains("gfxscan_scan_layer_items{target=\"gfx1100\",layer=\"rocblas\"}"), "{scan}");
    let gpu = "gfxscan_check_gpu_status{install=";
    assert!(
        check.lines().any(|l| l.starts_with(gpu) && l.contains("pci_address=\"0000:03:00.0\"")),
        "{check}"
    );
    let direct = gfxscan(["check", "-q", &sample, "--sysfs-root", &sys.root_str(), "--format", "prometheus"]);
    assert_eq!(check, direct.stdout, "what `check --format prometheus` says of the node");
    let left: Vec<_> =
        std::fs::read_dir(metrics.path()).expect("folder").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 2, "no staged file left beside the metrics: {left:?}");
    if let Some(tool) = crate::outputs::promtool() {
        for text in [&scan, &check] {
            crate::outputs::promtool_accepts(&tool, text);
        }
        // The collector reads both files as one exposition: no series may repeat.
        crate::outputs::promtool_accepts(&tool, &format!("{scan}{check}"));
    }
    let none = crate::util::Tree::new();
    let r = entry(&none.root_str());
    assert_eq!(r.code, 0, "the snapshot is still written: {}", r.stderr);
    assert!(!metrics.path().join("gfxscan_check.prom").exists(), "no stale verdict: {}", r.stderr);
    assert!(metrics.path().join("gfxscan_scan.prom").exists());
}

/// The entrypoint, run as a DaemonSet runs it for node `name`, scanning `roots`.
fn entrypoint(name: &str, out: &Path, roots: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg(deploy("entrypoint.sh"))
        .env("GFXSCAN", env!("CARGO_BIN_EXE_gfxscan"))
        .env("NODE_NAME", name)
        .env("OUT_DIR", out)
        .env("ROOTS", roots);
    c
}

#[test]
fn the_entrypoint_writes_a_snapshot_merge_reads() {
    let out = tempfile::tempdir().expect("tempdir");
    let sample = format!("{}/sample", env!("CARGO_MANIFEST_DIR"));
    let r = run(entrypoint("node-17", out.path(), &sample));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let snap = out.path().join("node-17.json");
    assert!(Path::new(&snap).is_file() && !out.path().join("node-17.json.part").exists());
    let text = std::fs::read_to_string(&snap).expect("the snapshot");
    crate::documents::expect_valid_text("snapshot", &text, "the entrypoint's node-17.json");
    // The next run takes the facts of the files unchanged since from it: the same snapshot.
    assert_eq!(run(entrypoint("node-17", out.path(), &sample)).code, 0);
    assert!(text.contains("\"identities\""), "the snapshot records what it read");
    assert!(std::fs::read_to_string(&snap).ok().as_deref() == Some(text.as_str()), "a rescan differs");
    let m = gfxscan(["merge", out.path().to_str().unwrap_or_default(), "--json"]);
    m.expect_code(0);
    let fleet = m.json();
    assert_eq!(fleet["sources"][0]["name"], "node-17");
    assert!(fleet["targets"].as_array().is_some_and(|t| t.iter().any(|x| x == "gfx1100")));
    // A root that does not exist: gfxscan cannot run, and no snapshot is left behind.
    assert_eq!(run(entrypoint("node-18", out.path(), "/nonexistent/rocm")).code, 2);
    assert!(!out.path().join("node-18.json").exists() && !out.path().join("node-18.json.part").exists());
    // ROOTS is colon-separated, as PATH is: a root may hold spaces.
    let spaced = out.path().join("a folder with spaces");
    std::os::unix::fs::symlink(&sample, &spaced).expect("link");
    let r = run(entrypoint("node-19", out.path(), &format!("{}:{sample}", spaced.display())));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let snap: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("node-19.json")).expect("snapshot"))
            .expect("JSON");
    assert_eq!(
        snap["roots"].as_array().map(Vec::len),
        Some(1),
        "the same tree twice is one root: {}",
        snap["roots"]
    );
}

/// The Kubernetes validator `.ci/run` installs (`kubernetes-validate`, which holds the
/// Kubernetes JSON schemas): `GFXSCAN_KUBE_VALIDATE`, else the one on `PATH`.
fn kube_validator() -> Option<String> {
    crate::util::tool_or_skip(
        "GFXSCAN_KUBE_VALIDATE",
        "kubernetes-validate",
        "--version",
        ".ci/run installs it",
    )
}

/// Runs the validator, strict (unknown fields are errors), on `files`.
fn kube_validate(tool: &str, files: &[String]) -> crate::util::Run {
    let mut cmd = Command::new(tool);
    cmd.args(["--strict", "--quiet", "--kubernetes-version", "1.37.0"]).args(files);
    run(cmd)
}

/// The manifests hold to Kubernetes 1.37's schema, strictly; a misspelt field fails, so the
/// validation is real.
#[test]
fn the_manifests_validate_against_the_kubernetes_schema() {
    let Some(tool) = kube_validator() else { return };
    let files = [deploy("kubernetes/daemonset.yaml"), deploy("kubernetes/job-images.yaml")];
    let r = kube_validate(&tool, &files);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("daemonset.yaml");
    let text = std::fs::read_to_string(&files[0]).expect("readable");
    std::fs::write(&bad, text.replacen("readOnly: true", "readOnly: \"yes\"", 1)).expect("written");
    let r = kube_validate(&tool, &[bad.to_string_lossy().into_owned()]);
    assert_ne!(r.code, 0, "a string where a boolean belongs must fail: {}", r.stdout);
}
