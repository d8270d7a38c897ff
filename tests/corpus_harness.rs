//! The corpus tests' own harness: libtest's, less what it cannot say. A test whose corpus is
//! absent is reported "skipped: corpus absent: WHY" and counted as skipped, and the last line
//! says "N passed; M skipped; F failed", so a run without the corpus never reads as a run that
//! checked it.
//!
//! It takes what `cargo test` passes: names to filter by (a substring, or the whole name with
//! `--exact`), `--test-threads N`, `--list`; other flags (`--nocapture`, `-q`) change nothing.
//! Tests run on that many threads, each caught if it panics; output is not captured.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// How one test ended.
enum Outcome {
    Passed,
    Skipped(String),
    Failed,
}

/// What the command line asks for.
struct Options {
    filters: Vec<String>,
    exact: bool,
    threads: usize,
    list: bool,
}

impl Options {
    fn parse() -> Options {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut o = Options { filters: Vec::new(), exact: false, threads, list: false };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--exact" => o.exact = true,
                "--list" => o.list = true,
                "--test-threads" => o.threads = args.next().and_then(|n| n.parse().ok()).unwrap_or(o.threads),
                _ if a.starts_with("--test-threads=") => {
                    o.threads = a["--test-threads=".len()..].parse().unwrap_or(o.threads)
                }
                // Flags of libtest's that change nothing here, and their values.
                "--format" | "--color" | "--skip" | "-Z" => {
                    args.next();
                }
                _ if a.starts_with('-') => {}
                _ => o.filters.push(a),
            }
        }
        o.threads = o.threads.max(1);
        o
    }

    fn wants(&self, name: &str) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| if self.exact { name == f } else { name.contains(f.as_str()) })
    }
}

/// Runs `tests` as the command line asks; `skip_reason` takes the reason the test just run on
/// this thread skipped, if it did. Exits 101 when a test failed, as libtest does.
pub fn run(tests: &[(&str, fn())], skip_reason: fn() -> Option<String>) {
    let o = Options::parse();
    let chosen: Vec<&(&str, fn())> = tests.iter().filter(|(n, _)| o.wants(n)).collect();
    if o.list {
        for (name, _) in &chosen {
            println!("{name}: test");
        }
        return;
    }
    println!("\nrunning {} tests", chosen.len());
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(&str, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..o.threads.min(chosen.len().max(1)) {
            s.spawn(|| {
                while let Some((name, test)) = chosen.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let outcome = run_one(test, skip_reason);
                    report(name, &outcome);
                    results.lock().unwrap_or_else(|e| e.into_inner()).push((name, outcome));
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let failed: Vec<&str> =
        results.iter().filter(|(_, o)| matches!(o, Outcome::Failed)).map(|(n, _)| *n).collect();
    let passed = results.iter().filter(|(_, o)| matches!(o, Outcome::Passed)).count();
    let skipped = results.len() - passed - failed.len();
    if !failed.is_empty() {
        println!("\nfailures:");
        for f in &failed {
            println!("    {f}");
        }
    }
    let word = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {word}. {passed} passed; {skipped} skipped; {} failed; {} filtered out; finished in {:.2}s\n",
        failed.len(),
        tests.len() - chosen.len(),
        start.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        std::process::exit(101);
    }
}

/// Runs one test on this thread, its panic caught.
fn run_one(test: &fn(), skip_reason: fn() -> Option<String>) -> Outcome {
    skip_reason();
    match std::panic::catch_unwind(*test) {
        Err(_) => Outcome::Failed,
        Ok(()) => match skip_reason() {
            Some(why) => Outcome::Skipped(why),
            None => Outcome::Passed,
        },
    }
}

/// The test's line, as libtest writes it, with a skip's reason.
fn report(name: &str, outcome: &Outcome) {
    let said = match outcome {
        Outcome::Passed => "ok".to_string(),
        Outcome::Skipped(why) => format!("skipped: corpus absent: {why}"),
        Outcome::Failed => "FAILED".to_string(),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "test {name} ... {said}");
}
