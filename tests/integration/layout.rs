//! The layout the design promises (docs/design.md, issue 33 item 6), held against the code:
//! each stage imports only the stages below it — no import circle, nothing reaching upward —
//! and `lib.rs` only wires commands.

use std::path::{Path, PathBuf};

/// The stages from the bottom up, as docs/design.md draws them: a module may import its own
/// stage's and lower ones'.
const STAGES: &[&[&str]] = &[
    &["vocab", "exit"],
    &["decode", "testing"],
    &["parse"],
    &["model"],
    &["source"],
    &["families"],
    &["inspect"],
    &["aggregate", "archive", "reuse"],
    &["library", "scan"],
    &["check", "diff"],
    &["explain", "merge", "records"],
    &["cli", "schema"],
    &["report"],
    &["cmd"],
];

fn stage_of(module: &str) -> Option<usize> {
    STAGES.iter().position(|s| s.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level modules a line of code names through `crate::` (`crate::a::…` and
/// `crate::{a, b::c}` alike).
fn named(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        let rest = &line[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut word, mut first) = (0, String::new(), true);
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => first = true,
                    c if c.is_alphanumeric() || c == '_' => {
                        if first && depth == 0 {
                            word.push(c)
                        }
                    }
                    _ => {
                        if !word.is_empty() {
                            out.push(std::mem::take(&mut word));
                        }
                        if c == ':' {
                            first = false;
                        }
                    }
                }
            }
            if !word.is_empty() {
                out.push(word);
            }
        } else {
            let word: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push(word);
        }
    }
    out.into_iter().filter(|w| w != "self").collect()
}

#[test]
fn every_stage_imports_only_the_stages_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut upward = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).expect("under src");
        let top = rel.components().next().and_then(|c| c.as_os_str().to_str()).unwrap_or("");
        let module = top.trim_end_matches(".rs");
        if matches!(module, "lib" | "main") {
            continue;
        }
        let own = stage_of(module).unwrap_or_else(|| panic!("{module}: no stage in STAGES (docs/design.md)"));
        // The code without its comment lines, as one line: a `use crate::{…}` group that
        // rustfmt spreads over several lines is read whole.
        let text = std::fs::read_to_string(f).expect("read");
        let code: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
        for m in named(&code.join(" ")) {
            let Some(theirs) = stage_of(&m) else { continue };
            if theirs > own {
                upward.push(format!("{}: {module} imports {m}", rel.display()));
            }
        }
    }
    assert!(upward.is_empty(), "imports that reach upward:\n{}", upward.join("\n"));
}

#[test]
fn lib_rs_only_wires_commands() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).expect("lib.rs");
    let lines = lib.lines().count();
    assert!(lines <= 200, "lib.rs has {lines} lines: each command's orchestration belongs in cmd/");
    assert!(!lib.contains("Model::build") && !lib.contains("scan::scan("), "lib.rs runs no pipeline");
}

#[test]
fn the_import_reader_reads_groups() {
    assert_eq!(named("use crate::{decode, model::Snapshot, report};"), ["decode", "model", "report"]);
    assert_eq!(named("let x = crate::vocab::units::count(1);"), ["vocab"]);
    assert_eq!(named("use crate::{a::{b, c}, d};"), ["a", "d"]);
    assert_eq!(
        named("use crate::{\n    decode,\n    model::{A, B},\n    report,\n};"),
        ["decode", "model", "report"]
    );
}
