//! The examples of the README and of `docs/*.md` are run and compared with the files, so the
//! docs cannot drift from the binary. Each fenced block says what it is:
//! - ```` ```console ````: `$ gfxscan <args>` lines, each followed by exactly what it prints,
//!   run in the checkout (the sample), with no terminal (100 columns, no colour, `-q` where the
//!   command takes it);
//! - ```` ```console corpus ````: the same, run in the Debian corpus folder
//!   (`GFXSCAN_DEBIAN_CORPUS`, see `../shared/corpus/README.md`) when it is here;
//! - ```` ```console registry ````: the same, run in the checkout against the registry `.ci/run`
//!   starts (`GFXSCAN_TEST_REGISTRY`) when it is there, after the images the examples name are
//!   pushed to it (`registry_real::push_examples`); the docs write it `127.0.0.1:55000`, a name
//!   as long as the one it stands for, so that lines wrap the same;
//! - ```` ```synopsis ````: a command's options, checked against the parser both ways;
//! - ```` ```shell ````: command lines run one after another by bash in a scratch folder that
//!   holds links to the checkout's `sample` and `docs`, with `gfxscan` and `check-jsonschema`
//!   (`GFXSCAN_CHECK_JSONSCHEMA`, else the one on `PATH`) on `PATH`; each must succeed. A block
//!   that names check-jsonschema is skipped without it;
//! - ```` ```text ````: diagrams and recorded measurements, not commands to run.
//!
//! A command may end in `| head -n N`: its first N lines are compared. A block of any other
//! kind fails the test: nothing in the docs escapes being checked by accident.
//!
//! After a change of output, `UPDATE_EXAMPLES=1 cargo test --test integration examples` writes
//! what the binary prints into the documents (review the change with `git diff`).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::CommandFactory;

use crate::util::{run, skipped};

/// What a fenced block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fence {
    Console,
    CorpusConsole,
    RegistryConsole,
    Synopsis,
    Shell,
    Text,
}

impl Fence {
    fn from_info(info: &str) -> Option<Fence> {
        match info.trim() {
            "console" => Some(Fence::Console),
            "console corpus" => Some(Fence::CorpusConsole),
            "console registry" => Some(Fence::RegistryConsole),
            "synopsis" => Some(Fence::Synopsis),
            "shell" => Some(Fence::Shell),
            "text" => Some(Fence::Text),
            _ => None,
        }
    }
}

/// A fenced block: its file and where it is, its kind and its lines.
struct Block {
    at: String,
    path: PathBuf,
    fence: Fence,
    lines: Vec<String>,
}

/// The checkout's README.md and docs/*.md, by path.
fn documents() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    paths.sort();
    paths.insert(0, root.join("README.md"));
    paths.into_iter().map(|p| (p.clone(), std::fs::read_to_string(&p).expect("a doc"))).collect()
}

/// Every fenced block of every document; an unknown fence kind fails here.
fn blocks() -> Vec<Block> {
    let mut out = Vec::new();
    for (path, text) in documents() {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let mut lines = text.lines().enumerate();
        while let Some((n, line)) = lines.next() {
            let Some(info) = line.trim_start().strip_prefix("```") else { continue };
            let at = format!("{name}:{}", n + 1);
            let fence = Fence::from_info(info).unwrap_or_else(|| {
                panic!("{at}: a ```{info} block: say console, console corpus, console registry, synopsis, shell or text")
            });
            let body = lines.by_ref().map(|(_, l)| l).take_while(|l| !l.trim_start().starts_with("```"));
            let lines = body.map(str::to_string).collect();
            out.push(Block { at, path: path.clone(), fence, lines });
        }
    }
    out
}

/// One `$ ` command of a console block and the output shown under it.
struct Example {
    at: String,
    path: PathBuf,
    args: Vec<String>,
    head: Option<usize>,
    want: String,
}

/// Splits a command line as a shell would for the plain words and "double quotes" it uses.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut word, mut quoted, mut any) = (Vec::new(), String::new(), false, false);
    for c in line.chars() {
        match c {
            '"' => (quoted, any) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            c => (word, any) = (word + &c.to_string(), true),
        }
    }
    if any {
        out.push(word);
    }
    out
}

fn examples(block: &Block) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    for line in &block.lines {
        match line.strip_prefix("$ ") {
            Some(cmd) => {
                let (cmd, head) = match cmd.split_once(" | head -n ") {
                    Some((c, n)) => (c, Some(n.trim().parse().expect("| head -n N"))),
                    None => (cmd, None),
                };
                let args = words(cmd);
                assert_eq!(args.first().map(String::as_str), Some("gfxscan"), "{}: {cmd}", block.at);
                out.push(Example {
                    at: block.at.clone(),
                    path: block.path.clone(),
                    args: args[1..].to_vec(),
                    head,
                    want: String::new(),
                });
            }
            None => {
                let ex = out.last_mut().unwrap_or_else(|| panic!("{}: starts with `$ `", block.at));
                ex.want += line;
                ex.want.push('\n');
            }
        }
    }
    assert!(!out.is_empty(), "{}: a console block without a command", block.at);
    out
}

/// The registry the docs' examples name, replaced by the one tests run against.
const DOCS_REGISTRY: &str = "127.0.0.1:55000";

/// Runs each example in `dir` and compares what it prints with its document; with
/// `UPDATE_EXAMPLES=1`, writes what it prints into the document instead.
fn check_examples(all: &[Example], dir: &Path) {
    if std::env::var_os("UPDATE_EXAMPLES").is_none() {
        for ex in all {
            assert_eq!(
                output(ex, dir),
                ex.want,
                "{}: `gfxscan {}` no longer matches the binary",
                ex.at,
                ex.args.join(" ")
            );
        }
        return;
    }
    // One writer at a time (the console and corpus tests update the same documents), each
    // example found again by its command line in the document as it now is: an update above it
    // may have moved it.
    static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    for ex in all {
        let got = output(ex, dir);
        let text = std::fs::read_to_string(&ex.path).expect("a doc");
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let is_command = |l: &String| l.strip_prefix("$ ").is_some_and(|c| same_command(c, ex));
        let at =
            lines.iter().position(is_command).unwrap_or_else(|| panic!("{}: the command is gone", ex.at));
        let end = (at + 1..lines.len())
            .find(|&k| lines[k].starts_with("$ ") || lines[k].starts_with("```"))
            .unwrap_or(lines.len());
        lines.splice(at + 1..end, got.lines().map(str::to_string));
        std::fs::write(&ex.path, lines.join("\n") + "\n").expect("write the doc");
    }
}

/// True when `cmd` (a command line after `$ `) is the example's.
fn same_command(cmd: &str, ex: &Example) -> bool {
    let (cmd, head) = match cmd.split_once(" | head -n ") {
        Some((c, n)) => (c, n.trim().parse().ok()),
        None => (cmd, None),
    };
    let args = words(cmd);
    head == ex.head && args.first().map(String::as_str) == Some("gfxscan") && args[1..] == ex.args[..]
}

/// What an example prints when run in `dir` (its first N lines with `| head -n N`); the docs'
/// registry swapped for the test registry in its command, and back in what it prints.
fn output(ex: &Example, dir: &Path) -> String {
    let registry = std::env::var("GFXSCAN_TEST_REGISTRY").unwrap_or_default();
    if registry.is_empty() || !ex.args.iter().any(|a| a.contains(DOCS_REGISTRY)) {
        return output_as_given(ex, dir);
    }
    let swapped: Vec<String> = ex.args.iter().map(|a| a.replace(DOCS_REGISTRY, &registry)).collect();
    let out = output_as_given(
        &Example {
            args: swapped,
            at: ex.at.clone(),
            path: ex.path.clone(),
            head: ex.head,
            want: String::new(),
        },
        dir,
    );
    out.replace(&registry, DOCS_REGISTRY)
}

fn output_as_given(ex: &Example, dir: &Path) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
    // `-q` right after the subcommand, when it takes one: never after a `--`.
    c.arg(&ex.args[0]);
    let sub = gfxscan::cli::Cli::command().find_subcommand(&ex.args[0]).cloned();
    if sub.is_some_and(|s| s.get_arguments().any(|a| a.get_long() == Some("quiet"))) {
        c.arg("-q");
    }
    c.args(&ex.args[1..]).current_dir(dir);
    c.env_remove("COLUMNS").env_remove("NO_COLOR").env_remove("TERM").env_remove("SOURCE_DATE_EPOCH");
    let r = run(c);
    let cmd = ex.args.join(" ");
    assert!(r.code == 0 || r.code == 1, "{}: gfxscan {cmd}: exit {}: {}", ex.at, r.code, r.stderr);
    match ex.head {
        Some(n) => r.stdout.lines().take(n).map(|l| format!("{l}\n")).collect(),
        None => r.stdout,
    }
}

#[test]
fn every_console_example_prints_what_its_document_shows() {
    let all = blocks();
    let readme: Vec<Example> = all
        .iter()
        .filter(|b| b.at.starts_with("README.md:") && b.fence == Fence::Console)
        .flat_map(examples)
        .collect();
    for name in ["scan", "check", "diff"] {
        assert!(readme.iter().any(|e| e.args[0] == name), "the README shows no `gfxscan {name}` example");
    }
    let every: Vec<Example> = all.iter().filter(|b| b.fence == Fence::Console).flat_map(examples).collect();
    assert!(every.len() >= 7, "{} examples run", every.len());
    // Run where a reader of a fresh clone would, without the build's `target/` (which may be
    // anywhere: CARGO_TARGET_DIR): a folder holding the checkout's `sample` and `docs` only.
    let scratch = tempfile::tempdir().expect("tempdir");
    for name in ["sample", "docs"] {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
        std::os::unix::fs::symlink(from, scratch.path().join(name)).expect("a link");
    }
    check_examples(&every, scratch.path());
}

#[test]
fn every_registry_example_prints_what_its_document_shows() {
    let Some(host) = std::env::var("GFXSCAN_TEST_REGISTRY").ok().filter(|h| !h.is_empty()) else {
        skipped("no registry (GFXSCAN_TEST_REGISTRY, started by .ci/run)");
        return;
    };
    assert_eq!(
        host.len(),
        DOCS_REGISTRY.len(),
        "the test registry {host} is named as long as the docs' {DOCS_REGISTRY}"
    );
    let all = blocks();
    let shown: Vec<Example> =
        all.iter().filter(|b| b.fence == Fence::RegistryConsole).flat_map(examples).collect();
    for name in ["check", "diff"] {
        assert!(
            shown.iter().any(|e| e.at.starts_with("README.md:") && e.args[0] == name),
            "the README shows no `gfxscan {name}` of a registry image"
        );
    }
    crate::registry_real::push_examples(&host);
    let scratch = tempfile::tempdir().expect("tempdir");
    check_examples(&shown, scratch.path());
}

#[test]
fn every_corpus_example_prints_what_its_document_shows() {
    let Some(dir) = std::env::var_os("GFXSCAN_DEBIAN_CORPUS").filter(|d| !d.is_empty()) else {
        skipped("corpus absent: set GFXSCAN_DEBIAN_CORPUS to the DIR of fetch-debian.sh");
        return;
    };
    let all = blocks();
    let corpus: Vec<Example> =
        all.iter().filter(|b| b.fence == Fence::CorpusConsole).flat_map(examples).collect();
    assert!(corpus.len() >= 3, "check, diff and formats show the Debian trees: {}", corpus.len());
    check_examples(&corpus, Path::new(&dir));
}

/// A table headed `| GPU | exit | verdict |` under a `check … --gpu T` corpus example says, per
/// row, what that command says for another GPU: each row is run (the GPU swapped in) and its
/// exit code and the verdict word of its GPU line compared.
#[test]
fn every_gpu_table_row_is_what_check_says() {
    let Some(dir) = std::env::var_os("GFXSCAN_DEBIAN_CORPUS").filter(|d| !d.is_empty()) else {
        skipped("corpus absent: set GFXSCAN_DEBIAN_CORPUS to the DIR of fetch-debian.sh");
        return;
    };
    let mut rows = 0;
    for (path, text) in documents() {
        let mut last_check: Option<Vec<String>> = None;
        let mut in_table = false;
        for line in text.lines() {
            if let Some(cmd) = line.strip_prefix("$ gfxscan check ") {
                last_check = Some(words(cmd));
            }
            if line.starts_with("| GPU | exit | verdict |") {
                in_table = true;
                continue;
            }
            in_table &= line.starts_with('|');
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let (true, [_, gpu, exit, verdict, ..]) = (in_table, cells.as_slice()) else { continue };
            if gpu.starts_with("---") {
                continue;
            }
            let args = last_check
                .clone()
                .unwrap_or_else(|| panic!("{}: a GPU table with no check above", path.display()));
            let gpu_at = args.iter().position(|a| a == "--gpu").expect("the check above names --gpu") + 1;
            let mut args = args;
            args[gpu_at] = gpu.to_string();
            let mut c = Command::new(env!("CARGO_BIN_EXE_gfxscan"));
            c.arg("check").arg("-q").args(&args).current_dir(&dir);
            let r = run(c);
            let word = verdict.split(':').next().unwrap_or_default();
            assert_eq!(r.code.to_string(), *exit, "{}: check --gpu {gpu}: {}", path.display(), r.stderr);
            let line = r.stdout.lines().find(|l| l.starts_with("GPU 0 ")).unwrap_or_default();
            assert!(
                line.ends_with(&format!(" · {word}")),
                "{}: --gpu {gpu} says {line:?}, the table {word}",
                path.display()
            );
            rows += 1;
        }
    }
    assert!(rows >= 5, "{rows} rows checked");
}

/// `check-jsonschema`: `GFXSCAN_CHECK_JSONSCHEMA`, else the one on `PATH`.
fn check_jsonschema() -> Option<PathBuf> {
    crate::util::find_tool("GFXSCAN_CHECK_JSONSCHEMA", "check-jsonschema", "--version").map(PathBuf::from)
}

/// Runs a shell block's lines with bash (`-e`, `-u`, `pipefail`) in a scratch folder holding
/// links to the checkout's `sample` and `docs`, `gfxscan` and `check-jsonschema` first on `PATH`.
fn run_shell(block: &Block, tool: Option<&Path>) {
    // A folder whose path has a space, as people's often do: paths the blocks take from
    // gfxscan's output must be handled as such (a URI's percent-encoding decoded).
    let scratch = tempfile::Builder::new().prefix("a folder with spaces ").tempdir().expect("tempdir");
    let (dir, bin) = (scratch.path(), scratch.path().join("bin"));
    std::fs::create_dir(&bin).expect("bin/");
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let link = |from: &Path, to: PathBuf| std::os::unix::fs::symlink(from, to).expect("a link");
    link(Path::new(env!("CARGO_BIN_EXE_gfxscan")), bin.join("gfxscan"));
    for name in ["sample", "docs"] {
        link(&checkout.join(name), dir.join(name));
    }
    if let Some(tool) = tool.filter(|t| t.is_absolute()) {
        link(tool, bin.join("check-jsonschema"));
    }
    let path = std::env::join_paths(
        std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH");
    let script = format!("set -euo pipefail\n{}\n", block.lines.join("\n"));
    let mut c = Command::new("bash");
    c.arg("-c").arg(&script).current_dir(dir).env("PATH", path);
    let r = run(c);
    assert_eq!(r.code, 0, "{}: the block fails:\n{script}\n{}{}", block.at, r.stdout, r.stderr);
}

#[test]
fn every_shell_block_runs() {
    let all = blocks();
    let shell: Vec<&Block> = all.iter().filter(|b| b.fence == Fence::Shell).collect();
    assert!(shell.len() >= 2, "usage.md and schema.md validate a snapshot: {}", shell.len());
    let tool = check_jsonschema();
    for block in shell {
        match &tool {
            None if block.lines.iter().any(|l| l.contains("check-jsonschema")) => {
                skipped(&format!("{}: no check-jsonschema (.ci/run installs it)", block.at));
            }
            tool => run_shell(block, tool.as_deref()),
        }
    }
}

/// The options a synopsis names, per subcommand: `--long` and `-s` words, and the values of
/// `--format` it lists.
fn synopsis_options(block: &Block) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in &block.lines {
        let line = line.split("  #").next().unwrap_or(line);
        if let Some(rest) = line.strip_prefix("gfxscan ") {
            let sub = rest.split_whitespace().next().unwrap_or_default().to_string();
            out.push((sub, Vec::new()));
        }
        let (_, opts) = out.last_mut().unwrap_or_else(|| panic!("{}: starts with `gfxscan `", block.at));
        for w in line.split(|c: char| c.is_whitespace() || "[]|=".contains(c)) {
            let flag: String = w.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            let long = flag.starts_with("--") && flag.len() > 2;
            let short = flag.len() == 2 && flag.starts_with('-') && flag != "--";
            if long || short {
                opts.push(flag);
            }
        }
    }
    out
}

/// The options of one subcommand as the parser knows them (help aside): each as its long and
/// short spellings, either of which a synopsis may use.
fn parser_options(sub: &str) -> Vec<Vec<String>> {
    let cli = gfxscan::cli::Cli::command();
    let cmd = cli.find_subcommand(sub).unwrap_or_else(|| panic!("no subcommand {sub}"));
    let spellings = |a: &clap::Arg| -> Vec<String> {
        a.get_long()
            .map(|l| format!("--{l}"))
            .into_iter()
            .chain(a.get_short().map(|s| format!("-{s}")))
            .collect()
    };
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id().as_str() != "help")
        .map(spellings)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The options every subcommand takes from the top level (`--color`).
fn global_options() -> Vec<String> {
    let cli = gfxscan::cli::Cli::command();
    let globals = cli.get_arguments().filter(|a| a.is_global_set());
    globals.filter_map(|a| a.get_long().map(|l| format!("--{l}"))).collect()
}

#[test]
fn every_synopsis_names_exactly_the_parsers_options() {
    let all = blocks();
    let synopses: Vec<&Block> = all.iter().filter(|b| b.fence == Fence::Synopsis).collect();
    let globals = global_options();
    let mut named = Vec::new();
    for block in synopses {
        for (sub, opts) in synopsis_options(block) {
            let known = parser_options(&sub);
            for o in &opts {
                let exists = known.iter().flatten().chain(&globals).any(|k| k == o);
                assert!(exists, "{}: `gfxscan {sub}` has no option {o}", block.at);
            }
            for spellings in &known {
                let shown = spellings.iter().any(|s| opts.contains(s));
                assert!(shown, "{}: the synopsis of `gfxscan {sub}` lacks {}", block.at, spellings.join("/"));
            }
            named.push(sub);
        }
    }
    let cli = gfxscan::cli::Cli::command();
    for sub in cli.get_subcommands().map(|s| s.get_name().to_string()) {
        assert!(named.contains(&sub), "no synopsis names `gfxscan {sub}`");
    }
}

#[test]
fn the_readme_reads_in_five_minutes() {
    let docs = documents();
    let (_, readme) = &docs[0];
    assert!(readme.len() < 15_000, "README.md is {} bytes: move detail to docs/", readme.len());
    // User docs speak of behaviour, not of the tracker.
    for (path, doc) in &docs {
        let lower = doc.to_lowercase();
        let numbered = lower.match_indices("issue").any(|(i, _)| {
            let after = lower[i + 5..].trim_start_matches([' ', '#']);
            after.starts_with(|c: char| c.is_ascii_digit())
        });
        assert!(!numbered, "an issue number in {}", path.display());
    }
}
