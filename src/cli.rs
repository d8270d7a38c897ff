//! Command-line interface (clap derive only). `lib::run` turns it into configs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Inventory the AMD GPU code an installed ROCm stack really ships, per GPU target.
#[derive(Debug, Parser)]
#[command(name = "gfxscan", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Colour statuses and changes: auto colours a terminal unless NO_COLOR is set or TERM is
    /// dumb.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find every AMDGPU code object under the roots and count them per GPU target.
    ///
    /// With no ROOT, scans every existing one of /opt/rocm, /opt/rocm-*, /usr/lib/ollama,
    /// /usr/local/lib/ollama and /lib/firmware/amdgpu.
    Scan(ScanArgs),
    /// Say, before a run, whether every library has code for each GPU.
    ///
    /// Checks the GPUs given with --gpu, or else every GPU in the kernel's KFD topology,
    /// honouring HSA_OVERRIDE_GFX_VERSION (global and per node), HSA_XNACK, ROCR_VISIBLE_DEVICES,
    /// HIP_VISIBLE_DEVICES, ROCBLAS_TENSILE_LIBPATH and HIPBLASLT_TENSILE_LIBPATH. One verdict per
    /// install (an /opt/rocm prefix, a /usr, a Python package, an Ollama folder); with no ROOT,
    /// the install /opt/rocm leads to and Ollama's. Exit 0: every required piece present; 1:
    /// something missing; 2: could not run; 3: incomplete (files could not be read, or a GPU is
    /// not in the target table); 4: nothing to check.
    Check(CheckArgs),
    /// Compare two installs, or saved JSON snapshots (`scan --json -o FILE`), in any mix.
    ///
    /// Libraries are paired by identity (soversion, install prefix and version folders dropped),
    /// losses of devices come first (code for a generic target counts for the devices it
    /// serves). Exit 0 when the diff ran, 1 with --fail-on-loss when a device lost its code, 2
    /// on error or when a side is neither a folder, an archive nor a snapshot, 3 when a side
    /// could not be read in full.
    Diff(DiffArgs),
    /// Merge many snapshots (nodes, images, wheels) into one matrix: sources × targets × layers.
    ///
    /// Each INPUT is a snapshot (`scan --json -o FILE`, plain, zstd or xz) or a folder of them.
    /// Snapshots are read one at a time and reduced to their row, so memory follows the matrix,
    /// not the snapshots. With --gpu, a verdict per source, as `check` would give it. Exit 0,
    /// or 3 when some snapshot could not be read (its row says why), or 1 with --gpu when some
    /// source lacks a required piece.
    Merge(MergeArgs),
    /// One target's gate matrix: vendor policy beside what the install serves.
    ///
    /// Side by side, each saying "blocks", "allows" or "unknown" and where its fact comes from:
    /// AMD's support list for the install's ROCm release (read from .info/version,
    /// rocm_version.h, librocm-core's or libamdhip64's name) and the newest ones, TheRock's
    /// targets, Ollama's and llama.cpp's default builds (targets.toml), what the roots ship per
    /// layer (scan's counts), each library's verdict for a GPU of the target (check's), and what
    /// HSA_OVERRIDE_GFX_VERSION to the ISA-compatible target would give. With no ROOT, the
    /// installs `check` takes, if any. Exit codes are check's for a GPU of the target.
    Explain(ExplainArgs),
    /// Print the table of GPU targets in use (built-in, or --targets FILE).
    Targets(TargetsArgs),
    /// Print the JSON Schema (draft 2020-12) of a JSON document gfxscan writes.
    ///
    /// For example: `gfxscan schema snapshot > snapshot.schema.json`; docs/schema/ holds them all.
    Schema(SchemaArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    ///
    /// For example: `gfxscan completions bash > /etc/bash_completion.d/gfxscan`.
    Completions(CompletionsArgs),
    /// Print a manual page (roff): gfxscan(1), or with a subcommand's name its own page
    /// (gfxscan-scan(1), …), e.g. `gfxscan man scan > gfxscan-scan.1 && man ./gfxscan-scan.1`.
    Man(ManArgs),
}

/// Arguments of `gfxscan schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The document whose schema to print.
    #[arg(value_enum, value_name = "KIND")]
    pub kind: crate::schema::Document,
    /// Accepted as every command accepts it (scripts pass -q to all): this one writes nothing to
    /// standard error but its errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Arguments of `gfxscan completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
    /// Accepted as every command accepts it (scripts pass -q to all): this one writes nothing to
    /// standard error but its errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Most worker threads `-j` takes. Thousands of threads made the thread pool fail to start
/// ("failed to set up alternative stack guard page") and hang; past a few per core they only
/// add memory and contention.
pub const MAX_THREADS: usize = 256;

/// Parses `-j N`: a whole number from 1 to [`MAX_THREADS`].
fn threads(s: &str) -> Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|_| format!("{s:?} is not a whole number"))?;
    if (1..=MAX_THREADS).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is out of range: 1 to {MAX_THREADS} threads"))
    }
}

/// `--max-memory`: a size, read with binary units (`200M` is 200 MiB).
fn memory_size(s: &str) -> Result<u64, String> {
    let cfg = parse_size::Config::new().with_binary();
    let n = cfg.parse_size(s.trim()).map_err(|e| format!("{s:?} is not a size ({e}); e.g. 200M, 1G"))?;
    if n < MIN_MEMORY {
        return Err(format!("{s} is below the least a scan needs: 100M"));
    }
    Ok(n)
}

/// The least `--max-memory` takes. The decoders never get less than one 64 MiB window, so
/// with many threads the figure is an aim, not a bound (docs/usage.md).
const MIN_MEMORY: u64 = 100 << 20;

/// Output formats. Each command takes those its result has ([`OutputFormat::SCAN`], …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Aligned table for people.
    Table,
    /// The versioned JSON document (docs/schema.md).
    Json,
    /// Markdown table, to paste into an issue.
    Markdown,
    /// Comma-separated values, one row per target (per library with `--by library`).
    Csv,
    /// One self-contained HTML page with bar charts per layer, to look at or share.
    Html,
    /// Prometheus text exposition, for node-exporter's textfile collector (docs/usage.md).
    Prometheus,
    /// JSON Lines: one typed record per line (docs/schema.md).
    Jsonl,
    /// One `file://PATH#offset=N&size=M` URI per code object, as roc-obj-ls prints them.
    Uris,
    /// A CycloneDX 1.6 JSON SBOM: a component per file with device code or GPU data (`scan`
    /// only; docs/usage.md).
    Cyclonedx,
}

impl OutputFormat {
    /// True for the formats read as text (tables, Markdown, CSV, Prometheus, URIs): what goes
    /// through `report::safe::TerminalSafe`.
    pub fn is_text(self) -> bool {
        !matches!(self, Self::Json | Self::Jsonl | Self::Html | Self::Cyclonedx)
    }

    /// What `scan` writes.
    pub const SCAN: &[OutputFormat] = &[
        Self::Table,
        Self::Json,
        Self::Markdown,
        Self::Csv,
        Self::Html,
        Self::Prometheus,
        Self::Jsonl,
        Self::Uris,
        Self::Cyclonedx,
    ];
    /// What `scan --keep` (the prune report) writes.
    pub const PRUNE: &[OutputFormat] = &[Self::Table, Self::Json, Self::Markdown, Self::Csv];
    /// What `check` writes.
    pub const CHECK: &[OutputFormat] =
        &[Self::Table, Self::Json, Self::Markdown, Self::Csv, Self::Html, Self::Prometheus, Self::Jsonl];
    /// What `explain` writes.
    pub const EXPLAIN: &[OutputFormat] = &[Self::Table, Self::Json, Self::Markdown, Self::Html];
    /// What `diff` writes.
    pub const DIFF: &[OutputFormat] = &[Self::Table, Self::Json, Self::Markdown, Self::Html];
    /// What `merge` writes.
    pub const MERGE: &[OutputFormat] = &[Self::Table, Self::Json, Self::Markdown, Self::Csv, Self::Html];

    /// The name `--format` and `-o FORMAT=FILE` take.
    pub fn name(self) -> &'static str {
        match self {
            Self::Table => "table",
            Self::Json => "json",
            Self::Markdown => "markdown",
            Self::Csv => "csv",
            Self::Html => "html",
            Self::Prometheus => "prometheus",
            Self::Jsonl => "jsonl",
            Self::Uris => "uris",
            Self::Cyclonedx => "cyclonedx",
        }
    }

    /// The format a file name's ending stands for (`.cdx.json`, the name CycloneDX recommends
    /// for a BOM in JSON; `.json`, `.html`/`.htm`, `.md`/`.markdown`, `.csv`, `.prom`,
    /// `.jsonl`/`.ndjson`).
    fn of_extension(path: &std::path::Path) -> Option<OutputFormat> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with(".cdx.json") {
            return Some(Self::Cyclonedx);
        }
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(Self::Json),
            "html" | "htm" => Some(Self::Html),
            "md" | "markdown" => Some(Self::Markdown),
            "csv" => Some(Self::Csv),
            "prom" => Some(Self::Prometheus),
            "jsonl" | "ndjson" => Some(Self::Jsonl),
            _ => None,
        }
    }
}

/// `--format` for a command that writes `formats`: only those are offered and taken.
fn format_parser(
    formats: &'static [OutputFormat],
) -> impl clap::builder::TypedValueParser<Value = OutputFormat> {
    use clap::builder::TypedValueParser;
    let values = formats.iter().filter_map(|f| f.to_possible_value());
    clap::builder::PossibleValuesParser::new(values)
        .map(|name| OutputFormat::from_str(&name, true).expect("a possible value is a format"))
}

/// One `-o`: where a result goes and, given as `FORMAT=FILE`, in which format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSpec {
    pub format: Option<OutputFormat>,
    pub path: PathBuf,
}

impl OutputSpec {
    /// Standard output (`-`).
    pub fn is_stdout(&self) -> bool {
        self.path.as_os_str() == "-"
    }
}

/// Parses `-o FILE` or `-o FORMAT=FILE` (`json=snap.json`, `html=-`). A name whose part before
/// `=` is no format is a file name (`./json=x` names a file called `json=x`).
fn output_spec(s: &str) -> Result<OutputSpec, String> {
    if let Some((name, path)) = s.split_once('=') {
        if let Ok(format) = OutputFormat::from_str(name, true) {
            if path.is_empty() {
                return Err(format!("{s:?}: give a file after {name}= (- for standard output)"));
            }
            return Ok(OutputSpec { format: Some(format), path: PathBuf::from(path) });
        }
    }
    if s.is_empty() {
        return Err("give a file (- for standard output)".into());
    }
    Ok(OutputSpec { format: None, path: PathBuf::from(s) })
}

/// Where each output of a run goes and in which format: each `-o` in its own format (given
/// as `FORMAT=FILE`, else `--json`/`--format`, else what its extension says, else a table);
/// no `-o`, standard output. Refused: a format the command does not write (two outputs to one
/// place are refused by `report::output::one_place_each`, which reads the file system).
pub fn resolve_outputs(
    json: bool,
    format: Option<OutputFormat>,
    outputs: &[OutputSpec],
    takes: &[OutputFormat],
) -> Result<Vec<(OutputFormat, Option<PathBuf>)>, String> {
    let chosen = if json { Some(OutputFormat::Json) } else { format };
    if outputs.is_empty() {
        return checked(chosen.unwrap_or(OutputFormat::Table), takes).map(|f| vec![(f, None)]);
    }
    let mut planned: Vec<(OutputFormat, Option<PathBuf>)> = Vec::new();
    for spec in outputs {
        let by_name = || OutputFormat::of_extension(&spec.path);
        let f = spec.format.or(chosen).or_else(by_name).unwrap_or(OutputFormat::Table);
        let f = checked(f, takes)?;
        planned.push((f, (!spec.is_stdout()).then(|| spec.path.clone())));
    }
    Ok(planned)
}

/// `f`, if the command writes it.
fn checked(f: OutputFormat, takes: &[OutputFormat]) -> Result<OutputFormat, String> {
    if takes.contains(&f) {
        return Ok(f);
    }
    if f == OutputFormat::Cyclonedx {
        return Err(NO_SBOM.into());
    }
    let names: Vec<&str> = takes.iter().map(|t| t.name()).collect();
    Err(format!("no {} output for this command's result: use {}", f.name(), names.join(", ")))
}

/// Why a command other than `scan` refuses CycloneDX.
pub const NO_SBOM: &str =
    "no CycloneDX for this command's result: an SBOM describes a tree, `gfxscan scan ROOT --format cyclonedx`";

/// Which table `scan` shows (`--by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum View {
    /// Targets down, the install's layers across (the default).
    #[default]
    Target,
    /// Libraries down, targets across: which library lacks which target.
    Library,
    /// Layers down, targets across.
    Layer,
}

/// When to colour (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    /// Colour a terminal, unless NO_COLOR is set or TERM is dumb.
    #[default]
    Auto,
    /// Always colour, even into a pipe or a file.
    Always,
    /// Never colour.
    Never,
}

/// Options shared by every subcommand that needs the target table.
#[derive(Debug, Args)]
pub struct TableArgs {
    /// Use this targets.toml instead of the built-in table.
    #[arg(long, value_name = "FILE")]
    pub targets: Option<PathBuf>,
}

/// What a scan may use of the machine: shared by every command that scans (`scan`, `check`,
/// `diff`).
#[derive(Debug, Clone, Copy, Args)]
pub struct Resources {
    /// Worker threads, 1 to 256 (default: one per core). Past the cores there is nothing to
    /// gain, and each thread costs a stack and read buffers.
    #[arg(short = 'j', long, value_name = "N", value_parser = threads)]
    pub threads: Option<usize>,
    /// Memory the scan aims to stay under (at least 100M; default: a quarter of what this
    /// process may use — its cgroup's memory.max/memory.high, else MemAvailable — within 100M
    /// to 2G, 200M when unknown; --verbose says which): compressed bundles inflate side by side
    /// only as far as their windows (up to 128 MiB each) fit in it. An aim: decoders always get
    /// one 64 MiB window, and each thread its buffers. Units: K, M, G (powers of 1024), or bytes.
    #[arg(long, value_name = "SIZE", value_parser = memory_size)]
    pub max_memory: Option<u64>,
}

/// What to scan and how: shared by `scan` and `check`.
#[derive(Debug, Args)]
pub struct ScanOpts {
    /// Folders, files or archives to scan (default: `scan` takes the usual ROCm, Ollama and
    /// firmware places; `check` the install /opt/rocm leads to and Ollama's folders).
    #[arg(value_name = "ROOT")]
    pub roots: Vec<PathBuf>,
    /// Write the result to FILE instead of standard output ("-" = standard output); repeat for
    /// several outputs of one run, each as FORMAT=FILE (`-o json=snap.json -o html=report.html`)
    /// or in the format its extension says.
    #[arg(short, long = "output", value_name = "[FORMAT=]FILE", value_parser = output_spec)]
    pub outputs: Vec<OutputSpec>,
    #[command(flatten)]
    pub resources: Resources,
    /// Follow symbolic links (loops are detected and reported), staying on the file system of
    /// each root, as `find -xdev` does: a link to /proc or another mount is not walked.
    #[arg(long)]
    pub follow_links: bool,
    /// With --follow-links: also walk into other file systems the links lead to.
    #[arg(long, requires = "follow_links")]
    pub cross_file_systems: bool,
    /// No progress bar and no live warnings on standard error.
    #[arg(short, long)]
    pub quiet: bool,
    /// Take the facts of each file unchanged since SNAPSHOT instead of reading it again: a
    /// JSON snapshot that `scan --reuse` wrote of roots named the same, by this same build of
    /// gfxscan with the same target table. Unchanged: the same device, inode, size, and
    /// modification and change times to the nanosecond. A SNAPSHOT that does not exist yet
    /// reads everything; `scan --reuse` records each file's identity in its JSON for next
    /// time. Repeatable.
    #[arg(long, value_name = "SNAPSHOT")]
    pub reuse: Vec<PathBuf>,
    #[command(flatten)]
    pub images: ImageArgs,
    #[command(flatten)]
    pub table: TableArgs,
}

/// How `registry:` roots are fetched.
#[derive(Debug, Clone, Default, Args)]
pub struct ImageArgs {
    /// The platform an image index (a multi-platform image) is narrowed to, for `registry:`
    /// roots: OS/ARCH[/VARIANT].
    #[arg(long, value_name = "OS/ARCH[/VARIANT]", default_value = "linux/amd64")]
    pub platform: crate::source::registry::Platform,
    /// Speak plain HTTP, not HTTPS, to this registry (HOST or HOST:PORT, as the `registry:`
    /// root names it). Repeatable.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub insecure_registry: Vec<String>,
}

impl ImageArgs {
    /// As the scan's configuration takes it.
    pub fn fetching(&self) -> crate::source::registry::Fetching {
        crate::source::registry::Fetching {
            platform: self.platform.clone(),
            insecure: self.insecure_registry.clone(),
            hold: 0,
        }
    }
}

/// `gfxscan scan`.
#[derive(Debug, Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub opts: ScanOpts,
    /// Output format (default: what -o FILE's extension says — .cdx.json, .json, .html, .md,
    /// .csv, .prom, .jsonl — else a table).
    #[arg(long, value_parser = format_parser(OutputFormat::SCAN))]
    pub format: Option<OutputFormat>,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Show only these targets, in this order (comma-separated, e.g. gfx900,gfx1030,gfx1100).
    #[arg(long, value_delimiter = ',', value_name = "TARGETS")]
    pub only: Vec<String>,
    /// The table to show: targets down and layers across, libraries down and targets across
    /// (which library lacks which target), or layers down and targets across.
    #[arg(long, value_enum, default_value_t = View::Target)]
    pub by: View,
    /// Every row and column (kernels, bytes, files; targets with only the runtime's own code),
    /// whatever the width.
    #[arg(long)]
    pub wide: bool,
    /// Report what an install for only these targets could drop, per library and in total
    /// (device code, Tensile files, MIOpen databases, firmware for other targets), and what
    /// must stay. Writes nothing, deletes nothing.
    #[arg(long, value_delimiter = ',', value_name = "TARGETS", conflicts_with_all = ["by", "compare", "only"])]
    pub keep: Vec<String>,
    /// Say on standard error how much memory the scan aims under and why; with --keep, also
    /// list per library each whole file that could go (JSON always lists them).
    #[arg(short, long)]
    pub verbose: bool,
    /// Take the SHA-256 of each listed file (archive members as extracted): the CycloneDX
    /// components' hashes, `sha256` in JSON. Reads those files whole.
    #[arg(long)]
    pub digests: bool,
    /// Exit 5 when the install is broken as shipped (findings), every file having been read.
    #[arg(long)]
    pub fail_on_findings: bool,
    /// Short for `--by layer --only TARGETS` (default: every target present). Put ROOTs first
    /// or after `--`: `scan /opt/rocm --compare gfx900,gfx1100`.
    #[arg(long, value_delimiter = ',', num_args = 0..=1, value_name = "TARGETS", conflicts_with_all = ["by", "only"])]
    pub compare: Option<Vec<String>>,
}

/// `gfxscan check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub opts: ScanOpts,
    /// GPUs to check, as target IDs (`gfx1151`, `gfx90a:xnack+`, any case); comma-separated
    /// or repeated. `all`: every GPU target the roots have code for and this machine's GPUs,
    /// one row each. Without it, the GPUs of the KFD topology, as ROCR_VISIBLE_DEVICES and
    /// HIP_VISIBLE_DEVICES leave them.
    #[arg(long = "gpu", value_name = "TARGET_ID", value_delimiter = ',')]
    pub gpus: Vec<String>,
    /// Read the running system under DIR instead of / (for containers and tests): its KFD
    /// topology, and without ROOT its kernel (proc/sys/kernel/osrelease, lib/modules,
    /// lib/firmware, sys/module/amdgpu).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,
    /// Judge what PROGRAM (a program, or a shared library) loads, as the dynamic loader finds
    /// it, instead of every library under the roots: its DT_NEEDED closure, the libraries it
    /// loads at run time (ggml backends, Ollama's, the HIP runtime's comgr) and the data
    /// folders they read. Arguments after `--` are taken and change nothing.
    #[arg(long, value_name = "PROGRAM", conflicts_with = "roots")]
    pub exe: Option<String>,
    /// The program's arguments, after `--` (accepted for a pasted command line).
    #[arg(last = true, value_name = "ARGS", requires = "exe")]
    pub exe_args: Vec<String>,
    /// The root the program runs in (a mounted image, an unpacked container): its paths,
    /// links, ld.so.cache and ld.so.conf are read inside it.
    #[arg(long, value_name = "DIR", requires = "exe")]
    pub root: Option<PathBuf>,
    /// An environment variable as the program sees it, NAME=VALUE (repeatable):
    /// LD_LIBRARY_PATH, GGML_BACKEND_PATH, OLLAMA_LIBRARY_PATH, ROCBLAS_TENSILE_LIBPATH,
    /// HSA_OVERRIDE_GFX_VERSION, …; unnamed ones are this process's (with --pid, that process's).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Judge what running process PID has loaded (/proc/PID/maps), under its environment
    /// (/proc/PID/environ): its overrides, visible devices and Tensile paths.
    #[arg(long, value_name = "PID", conflicts_with_all = ["roots", "exe"])]
    pub pid: Option<u32>,
    /// Output format (default: what -o FILE's extension says — .json, .html, .md, .prom,
    /// .jsonl — else a table).
    #[arg(long, value_parser = format_parser(OutputFormat::CHECK))]
    pub format: Option<OutputFormat>,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
}

/// `gfxscan explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The target: a processor (`gfx1031`), a target ID or a product (`"RX 6700 XT"`).
    #[arg(value_name = "TARGET")]
    pub target: String,
    #[command(flatten)]
    pub opts: ScanOpts,
    /// Output format (default: what -o FILE's extension says, else a table).
    #[arg(long, value_parser = format_parser(OutputFormat::EXPLAIN))]
    pub format: Option<OutputFormat>,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Every gate, section by section, with what it says and its source, and every library's
    /// verdict as its own row (without it: the summary and the gates that block).
    #[arg(short, long)]
    pub verbose: bool,
}

/// `gfxscan diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The old side: a folder to scan, or a JSON snapshot.
    #[arg(value_name = "OLD")]
    pub old: PathBuf,
    /// The new side: a folder to scan, or a JSON snapshot.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Exit 1 when any target lost coverage in any library.
    #[arg(long)]
    pub fail_on_loss: bool,
    /// Compare only these targets (comma-separated, e.g. gfx900,gfx1030,gfx1100); a folder is
    /// then read as `check` reads it for them (other targets' entries from bundle tables).
    #[arg(long, value_delimiter = ',', value_name = "TARGETS")]
    pub only: Vec<String>,
    /// Every detail: per target, per layer, each file added, removed or changed, and every
    /// library's code objects (without it: the verdict, the losses, gains and files counted).
    #[arg(short, long)]
    pub verbose: bool,
    /// Output format (default: what -o FILE's extension says — .json, .html, .md — else a
    /// table).
    #[arg(long, value_parser = format_parser(OutputFormat::DIFF))]
    pub format: Option<OutputFormat>,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the result to FILE instead of standard output ("-" = standard output); repeat for
    /// several outputs of one run, each as FORMAT=FILE (`-o json=snap.json -o html=report.html`)
    /// or in the format its extension says.
    #[arg(short, long = "output", value_name = "[FORMAT=]FILE", value_parser = output_spec)]
    pub outputs: Vec<OutputSpec>,
    #[command(flatten)]
    pub resources: Resources,
    /// No progress bar and no live warnings on standard error.
    #[arg(short, long)]
    pub quiet: bool,
    /// Take the facts of a scanned side's files unchanged since SNAPSHOT instead of reading
    /// them again (see `scan --reuse`): a snapshot of that side's folder, named the same.
    /// Repeatable.
    #[arg(long, value_name = "SNAPSHOT")]
    pub reuse: Vec<PathBuf>,
    #[command(flatten)]
    pub images: ImageArgs,
    #[command(flatten)]
    pub table: TableArgs,
}

/// `gfxscan man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print (scan, check, diff, merge, targets, schema,
    /// completions).
    #[arg(value_name = "SUBCOMMAND")]
    pub subcommand: Option<String>,
    /// Accepted as every command accepts it (scripts pass -q to all): this one writes nothing to
    /// standard error but its errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `gfxscan merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Snapshots, or folders of snapshots; a `registry:HOST/NAME[:TAG|@DIGEST]` image is
    /// scanned and merged as its snapshot.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<PathBuf>,
    /// Judge each source for these GPUs (target IDs, comma-separated), as `check --gpu` does.
    #[arg(long = "gpu", value_name = "TARGET_ID", value_delimiter = ',')]
    pub gpus: Vec<String>,
    /// Only these targets (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "TARGETS")]
    pub only: Vec<String>,
    /// The layer the table's cells count (the per-target table's column names: `library code`,
    /// `rocblas`, `hipblaslt`, `perf-db`, `firmware`, …).
    #[arg(long, default_value = "library code")]
    pub layer: String,
    /// Output format (default: what -o FILE's extension says — .json, .html, .md, .csv — else
    /// a table).
    #[arg(long, value_parser = format_parser(OutputFormat::MERGE))]
    pub format: Option<OutputFormat>,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write the result to FILE instead of standard output ("-" = standard output); repeat for
    /// several outputs of one run, each as FORMAT=FILE (`-o json=snap.json -o html=report.html`)
    /// or in the format its extension says.
    #[arg(short, long = "output", value_name = "[FORMAT=]FILE", value_parser = output_spec)]
    pub outputs: Vec<OutputSpec>,
    /// Worker threads, 1 to 256 (default: one per core).
    #[arg(short = 'j', long, value_name = "N", value_parser = threads)]
    pub threads: Option<usize>,
    /// No progress on standard error (merge shows none: taken so that every command takes -q).
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub images: ImageArgs,
    #[command(flatten)]
    pub table: TableArgs,
}

/// `gfxscan targets`.
#[derive(Debug, Args)]
pub struct TargetsArgs {
    /// Print the table as JSON.
    #[arg(long)]
    pub json: bool,
    /// List AMD's support lists the table records instead, each with its date and age (days
    /// before today, or before SOURCE_DATE_EPOCH when set) and whether it was read whole
    /// (`--json` gives each list's date in the table's own document).
    #[arg(long, conflicts_with = "json")]
    pub policy_age: bool,
    /// Accepted as every command accepts it (scripts pass -q to all): this one writes nothing to
    /// standard error but its errors.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub table: TableArgs,
}
