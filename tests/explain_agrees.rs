//! The agreement `gfxscan explain` owes `scan` and `check` (issue 27): shared by the
//! integration tests (the sample, fixtures) and the corpus tests (Debian's ROCm 6.4 tree).

use std::path::Path;

use serde_json::Value;

/// Runs gfxscan with these arguments, every `HSA_*` variable of the test process removed and
/// these set: (exit code, standard output).
pub type Runner<'a> = &'a dyn Fn(&[&str], &[(&str, &str)]) -> (i32, String);

fn json(out: &(i32, String), what: &str) -> Value {
    serde_json::from_str(&out.1).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}", out.1))
}

/// Holds `explain TARGET ROOT --json` equal to `scan ROOT --json` (every family count of the
/// target) and to `check --gpu TARGET ROOT --json` (each install's whole GPU report, and the
/// exit code), and with the override to check under HSA_OVERRIDE_GFX_VERSION; returns the
/// explanation.
pub fn assert_explain_agrees(root: &Path, target: &str, gfxscan: Runner) -> Value {
    let root = root.to_str().expect("a UTF-8 path");
    let e = gfxscan(&["explain", "-q", target, root, "--json"], &[]);
    let doc = json(&e, "explain");
    let scan = json(&gfxscan(&["scan", "-q", root, "--json"], &[]), "scan");
    assert_layers_are_scans(&doc, root, target, gfxscan);
    let check = gfxscan(&["check", "-q", "--gpu", target, root, "--json"], &[]);
    assert_eq!(e.0, check.0, "{root} {target}: explain's exit code is check's");
    for layer in doc["layers"].as_array().expect("layers") {
        for (key, n) in layer["families"].as_object().expect("families") {
            let scanned = scan["families"][key][target].as_u64().unwrap_or(0);
            assert_eq!(
                n.as_u64(),
                Some(scanned),
                "{root} {target}: {key} as explain counts it and as scan does"
            );
        }
    }
    let check = json(&check, "check");
    let gpu_of = |c: &Value, path: &str| -> Value {
        let installs = c["installs"].as_array().expect("installs");
        installs.iter().find(|i| i["path"] == path).expect("the install")["gpus"][0].clone()
    };
    let installs = doc["installs"].as_array().expect("installs");
    assert_eq!(installs.len(), check["installs"].as_array().map_or(0, Vec::len), "{root} {target}: installs");
    let table = json(&gfxscan(&["targets", "--json"], &[]), "targets");
    let version = doc["target"]["isa_compatible"].as_str().map(|alt| {
        let all = table["targets"].as_array().expect("targets");
        let v = all.iter().find(|t| t["name"] == alt).expect("the ISA-compatible target")
            ["gfx_target_version"]
            .as_u64()
            .expect("its KFD version");
        format!("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    });
    let over = version.map(|v| {
        let args = ["check", "-q", "--gpu", target, root, "--json"];
        json(&gfxscan(&args, &[("HSA_OVERRIDE_GFX_VERSION", &v)]), "check with the override")
    });
    for i in installs {
        let path = i["path"].as_str().expect("a path");
        assert_eq!(
            i["check"],
            gpu_of(&check, path),
            "{root} {target}: {path}: explain's verdicts are check's"
        );
        let rows = i["rows"].as_array().expect("rows");
        match &over {
            Some(o) => {
                let under = gpu_of(o, path);
                assert_eq!(i["with_override"], under, "{path}: the override's verdicts are check's");
                // Issue 33: the override row is check's own verdict under the override, through
                // the one gate function.
                let row = rows.iter().find(|r| r["section"] == "override").expect("an override row");
                let gates: Vec<&str> =
                    under["verdicts"].as_array().expect("verdicts").iter().map(gate_of).collect();
                assert_eq!(row["verdict"], all_of(&gates), "{root} {target}: {row} for {under:#}");
            }
            None => assert!(i.get("with_override").is_none()),
        }
        // Issue 33: no layer row blocks where check calls that layer's library WARN.
        for layer in doc["ships"].as_array().expect("ships").iter().filter(|r| r["verdict"] == "blocks") {
            let name = layer["gate"].as_str().unwrap_or("");
            for v in i["check"]["verdicts"].as_array().expect("verdicts").iter().filter(|v| of_layer(v, name))
            {
                assert_ne!(v["status"], "warn", "{root} {target}: {name} blocks, check says {v}");
            }
        }
        let verdicts = i["check"]["verdicts"].as_array().expect("verdicts");
        let runtime: Vec<&Value> = rows.iter().filter(|r| r["section"] == "runtime").collect();
        assert_eq!(runtime.len(), verdicts.len(), "a row per verdict");
        // Check's status, and its gate: OK allows, a WARN that only slows allows, any other
        // WARN (a gap whose cost depends on the program) is unknown, MISSING blocks.
        for (r, v) in runtime.iter().zip(verdicts) {
            assert_eq!(r["status"], v["status"], "{r} for {v}");
            assert_eq!(r["verdict"], gate_of(v), "{r} for {v}");
        }
    }
    doc
}

/// The gate of one of check's verdicts, from its JSON: its status and its cost.
fn gate_of(v: &Value) -> &'static str {
    match (v["status"].as_str(), v["cost"].as_str()) {
        (Some("ok"), _) | (Some("warn"), Some("slower")) => "allows",
        (Some("warn"), _) => "unknown",
        _ => "blocks",
    }
}

/// Several gates as one, as `explain` folds them: any blocks blocks, else any unknown is
/// unknown; none is unknown.
fn all_of(gates: &[&str]) -> &'static str {
    if gates.contains(&"blocks") {
        "blocks"
    } else if gates.is_empty() || gates.contains(&"unknown") {
        "unknown"
    } else {
        "allows"
    }
}

/// True when check's verdict `v` judges a library of the layer `explain` calls `layer`.
fn of_layer(v: &Value, layer: &str) -> bool {
    let (kind, component) = (v["kind"].as_str().unwrap_or(""), v["component"].as_str());
    match layer {
        "library code" => kind == "host-library" || kind == "bundle",
        "rocblas" | "hipblaslt" => kind == "tensile" && component == Some(layer),
        "perf-db" | "find-db" | "kernel-db" | "tn models" => kind == "miopen",
        other => kind == other,
    }
}

/// Each layer's count is the number `scan`'s per-target table shows for the target (its
/// Markdown table: one header line, `—` for none, thousands separated), and each layer row the
/// explanation shows carries that count.
fn assert_layers_are_scans(doc: &Value, root: &str, target: &str, gfxscan: Runner) {
    let md = gfxscan(&["scan", "-q", root, "--only", target, "--wide", "--format", "markdown"], &[]).1;
    let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    let cells =
        |l: &str| -> Vec<String> { l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect() };
    let header = cells(lines.first().expect("a table"));
    let row = lines.iter().map(|l| cells(l)).find(|c| c.first().map(String::as_str) == Some(target));
    let row = row.unwrap_or_else(|| panic!("{root}: no {target} row in\n{md}"));
    for layer in doc["layers"].as_array().expect("layers") {
        let name = layer["layer"].as_str().expect("a layer");
        let count = layer["count"].as_u64().expect("a count");
        let shown = header.iter().position(|h| h == name).map(|i| row[i].replace(',', ""));
        match shown.as_deref() {
            Some("—") | None => assert_eq!(count, 0, "{root} {target}: {name} is not in scan's table"),
            Some(n) => assert_eq!(n.parse::<u64>().ok(), Some(count), "{root} {target}: {name}"),
        }
        let ships = doc["ships"].as_array().expect("ships").iter().find(|r| r["gate"] == name);
        if let Some(r) = ships {
            assert_eq!(r["count"], count, "{root} {target}: the {name} row");
        }
    }
}
