//! The README's examples are run and compared with the file: every ```console block starts
//! with `$ gfxscan <args>` and holds exactly what that command prints on the sample (no
//! terminal, so 100 columns and no colour). A change of output that the README does not follow
//! fails here, so the docs cannot drift from the binary.

use std::process::Command;

use crate::util::run;

/// (command line, expected output) of each console block.
fn examples(readme: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```console" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let (first, rest) = block.split_first().expect("a console block is not empty");
        let cmd = first.strip_prefix("$ ").expect("a console block starts with `$ `");
        out.push((cmd.to_string(), rest.join("\n") + "\n"));
    }
    out
}

#[test]
fn every_readme_example_prints_what_the_readme_shows() {
    let root = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let found = examples(&readme);
    assert!(found.len() >= 3, "the README shows scan, check and diff: {} examples", found.len());
    for name in ["gfxscan scan", "gfxscan check", "gfxscan diff"] {
        assert!(found.iter().any(|(c, _)| c.starts_with(name)), "no `{name}` example");
    }
    for (cmd, want) in &found {
        let args: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(args[0], "gfxscan", "{cmd}");
        let mut c = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
        // `-q` right after the subcommand: never after a `--`.
        c.arg(args[1]).arg("-q").args(&args[2..]).current_dir(root);
        c.env_remove("COLUMNS").env_remove("NO_COLOR").env_remove("TERM");
        let r = run(c);
        assert!(r.code == 0 || r.code == 1, "{cmd}: exit {}: {}", r.code, r.stderr);
        assert_eq!(&r.stdout, want, "README example `{cmd}` no longer matches the binary");
    }
}

#[test]
fn the_readme_reads_in_five_minutes() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    assert!(readme.len() < 15_000, "README.md is {} bytes: move detail to docs/", readme.len());
    // User docs speak of behaviour, not of the tracker.
    for doc in std::iter::once(readme.clone()).chain(
        std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/docs"))
            .expect("docs/")
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
            .map(|e| std::fs::read_to_string(e.path()).expect("doc")),
    ) {
        let lower = doc.to_lowercase();
        let numbered = lower.match_indices("issue").any(|(i, _)| {
            let after = lower[i + 5..].trim_start_matches([' ', '#']);
            after.starts_with(|c: char| c.is_ascii_digit())
        });
        assert!(!numbered, "an issue number in the user docs");
    }
}
