//! Tensile (rocBLAS, hipBLASLt) library files: which processors an index serves.
//!
//! A Tensile `.dat` is MessagePack (Tensile `LibraryIO.py`): a map with `solutions` and
//! `library`. A master library's `library` is `{"type": "Hardware", "rows": [...]}`, each row a
//! `predicate` — `{"type": "AMDGPU", "value": {"type": "Processor", "value": "gfx90a"}}`, an
//! `And` of a processor and a CU count, or `TruePred` for the fallback kernels — and a
//! sub-`library`. The predicates are evaluated as Tensile does (`ExactLogicLibrary.hpp`
//! `HardwareSelectionLibrary`: the first row whose predicate holds), for each processor named
//! and for any other. The merged `TensileLibrary.dat` puts its `library` after ~100 MB of
//! solutions: the walk streams past them, skipping strings unread.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use indexmap::IndexSet;

use super::msgpack::{Reader, Shallow, Value, MAX_DEPTH};
use super::{push_unique, ByteSource, ParseError, Result};
use crate::vocab::library::Component;

/// What only a Tensile file (rocBLAS, hipBLASLt) has.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct TensileFacts {
    /// The library that loads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<Component>,
    /// hipBLASLt solution map: the targets whose code-object libraries it names (kept apart
    /// from `content_targets`: it holds no code and no hardware rows of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lists_targets: Option<Vec<String>>,
    /// Lazy index: the sub-libraries its rows name, which the library opens beside it as
    /// `<name>.dat` with their kernels in `<name>.co` or `.hsaco`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placeholders: Vec<String>,
    /// Sub-library: the solutions it holds, when its first bytes say (none: it names no kernels
    /// and needs no code-object file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solutions: Option<u64>,
    /// Entries of a solution map (code-object libraries it names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entries: Option<u64>,
    /// Index: some hardware row holds for a processor it does not name (`TruePred`, a CU-count
    /// predicate alone, a `Not`): the index serves whichever device loads it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub any_processor: bool,
    /// Index: its hardware rows could not be read (the file is among the snapshot's problems).
    /// It serves no target: Tensile's `LoadLibraryFile` returns no library for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreadable: bool,
}

/// Most items read whole from one predicate.
const PREDICATE_BUDGET: u32 = 4096;

/// Most sub-library names kept from one lazy index, and most bytes of them (real ones name
/// tens to a few hundred, ~70 bytes each): a compressed index cannot make the walk keep more.
const MAX_PLACEHOLDERS: usize = 16_384;
const MAX_PLACEHOLDER_BYTES: usize = 4 << 20;

/// The names a lazy index's placeholders give, without repeats, within the caps.
#[derive(Default)]
struct Names {
    kept: IndexSet<String>,
    bytes: usize,
    /// More names than the caps allow: the list is incomplete.
    truncated: bool,
}

impl Names {
    fn add(&mut self, name: &[u8]) {
        if self.kept.len() >= MAX_PLACEHOLDERS || self.bytes + name.len() > MAX_PLACEHOLDER_BYTES {
            self.truncated = true;
        } else if self.kept.insert(String::from_utf8_lossy(name).into_owned()) {
            self.bytes += name.len();
        }
    }
}

/// A hardware predicate as Tensile serializes it (Tensile `Serialization/Predicates.hpp`:
/// `TruePred`, `FalsePred`, `And`, `Or`, `Not`, `AMDGPU`; inside `AMDGPU`: `Processor`,
/// `CUCount`, `IsAPU`, `TargetProcessor`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    True,
    False,
    And(Vec<Predicate>),
    Or(Vec<Predicate>),
    Not(Box<Predicate>),
    /// `{"type": "Processor", "value": "gfx90a"}`: the device's processor is this one.
    Processor(String),
    /// A fact of the device beyond its processor (`CUCount`, `IsAPU`, `TargetProcessor`), or a
    /// type this reader does not know: true for some devices, false for others.
    Depends,
}

/// Three-valued truth: whether a predicate holds for a processor whatever else the device is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    Yes,
    No,
    Maybe,
}

impl Predicate {
    /// Reads a serialized predicate; `AMDGPU` wraps its inner predicate and adds nothing.
    pub fn from_value(v: &Value) -> Predicate {
        let inner = v.get("value");
        let list = || match inner {
            Some(Value::Array(items)) => items.iter().map(Predicate::from_value).collect(),
            _ => Vec::new(),
        };
        match v.get("type").and_then(Value::as_str) {
            Some("TruePred") => Predicate::True,
            Some("FalsePred") => Predicate::False,
            Some("And") => Predicate::And(list()),
            Some("Or") => Predicate::Or(list()),
            Some("Not") => Predicate::Not(Box::new(inner.map_or(Predicate::Depends, Predicate::from_value))),
            Some("AMDGPU") => inner.map_or(Predicate::Depends, Predicate::from_value),
            Some("Processor") => match inner.and_then(Value::as_str) {
                Some(name) => Predicate::Processor(name.to_string()),
                None => Predicate::Depends,
            },
            _ => Predicate::Depends,
        }
    }

    /// How the predicate holds on a device whose processor is `processor` (`None`: one it
    /// does not name), as Tensile evaluates it (`Predicates.hpp`: `And` needs all, `Or` one).
    fn truth(&self, processor: Option<&str>) -> Truth {
        match self {
            Predicate::True => Truth::Yes,
            Predicate::False => Truth::No,
            Predicate::Depends => Truth::Maybe,
            Predicate::Processor(p) => {
                if Some(p.as_str()) == processor {
                    Truth::Yes
                } else {
                    Truth::No
                }
            }
            Predicate::Not(p) => match p.truth(processor) {
                Truth::Yes => Truth::No,
                Truth::No => Truth::Yes,
                Truth::Maybe => Truth::Maybe,
            },
            Predicate::And(ps) => ps.iter().fold(Truth::Yes, |acc, p| match (acc, p.truth(processor)) {
                (Truth::No, _) | (_, Truth::No) => Truth::No,
                (Truth::Maybe, _) | (_, Truth::Maybe) => Truth::Maybe,
                _ => Truth::Yes,
            }),
            Predicate::Or(ps) => ps.iter().fold(Truth::No, |acc, p| match (acc, p.truth(processor)) {
                (Truth::Yes, _) | (_, Truth::Yes) => Truth::Yes,
                (Truth::Maybe, _) | (_, Truth::Maybe) => Truth::Maybe,
                _ => Truth::No,
            }),
        }
    }

    /// Every processor the predicate names.
    fn named(&self, out: &mut Vec<String>) {
        match self {
            Predicate::Processor(p) => push_unique(out, p),
            Predicate::Not(p) => p.named(out),
            Predicate::And(ps) | Predicate::Or(ps) => ps.iter().for_each(|p| p.named(out)),
            _ => {}
        }
    }

    /// True when the row can hold on some device with this processor.
    pub fn may_hold(&self, processor: Option<&str>) -> bool {
        self.truth(processor) != Truth::No
    }
}

/// What a Tensile index says about hardware.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TensileIndex {
    /// The top-level library's type (`Hardware` for a master library).
    pub library_type: Option<String>,
    /// Processors its hardware rows can serve, in order, without repeats: each processor a
    /// row names for which the row can hold.
    pub processors: Vec<String>,
    /// Some row can hold for a processor it does not name (`TruePred`, a CU-count predicate
    /// alone, a `Not`): the index serves whichever device loads it. rocBLAS opens a lazy index
    /// by the device's name, so such a row serves that device.
    pub any_processor: bool,
    /// Hardware rows in all.
    pub rows: u64,
    /// Lazy index: the sub-libraries its rows name (`{"type": "Placeholder", "value": P}`), in
    /// order, without repeats. Tensile opens `P.dat` beside the index when a problem first
    /// reaches the row (`PlaceholderLibrary.hpp` `loadPlaceholderLibrary`; the directory is the
    /// index's own, `Serialization/PlaceholderLibrary.hpp`), and `P.co` / `P.hsaco` /
    /// `P_<arch>.hsaco` for its kernels (`getCodeObjectFileName`).
    pub placeholders: Vec<String>,
    /// The index names more sub-libraries than were kept (see [`MAX_PLACEHOLDERS`]).
    pub placeholders_truncated: bool,
}

/// Reads the processors a Tensile master library (lazy, per-arch or merged index) serves.
pub fn parse_tensile_index(src: &dyn ByteSource) -> Result<TensileIndex> {
    read_index(src, false)
}

/// Reads a lazy index: its processors and the sub-libraries its rows name.
pub fn parse_lazy_index(src: &dyn ByteSource) -> Result<TensileIndex> {
    read_index(src, true)
}

/// Walks one value, keeping the `value` of each map whose `type` is `Placeholder`. Maps are
/// read key by key in whatever order they come; nesting past [`MAX_DEPTH`] is skipped unread.
fn collect_placeholders(rd: &mut Reader, out: &mut Names, depth: usize) -> Result<()> {
    let opened = rd.shallow()?;
    walk_opened(rd, opened, out, depth)
}

/// [`collect_placeholders`] for a value whose header is read.
fn walk_opened(rd: &mut Reader, opened: Shallow, out: &mut Names, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return rd.skip_rest(&opened);
    }
    match opened {
        Shallow::Array(n) => (0..n).try_for_each(|_| collect_placeholders(rd, out, depth + 1)),
        Shallow::Map(n) => {
            let (mut placeholder, mut value) = (false, None);
            for _ in 0..n {
                let key = rd.shallow()?;
                rd.skip_rest(&key)?;
                match (key, rd.shallow()?) {
                    (Shallow::Str(k), Shallow::Str(v)) if k == b"type" => placeholder = v == b"Placeholder",
                    (Shallow::Str(k), Shallow::Str(v)) if k == b"value" => value = Some(v),
                    (_, item) => walk_opened(rd, item, out, depth + 1)?,
                }
            }
            if let (true, Some(v)) = (placeholder, value) {
                out.add(&v);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn read_index(src: &dyn ByteSource, placeholders: bool) -> Result<TensileIndex> {
    let mut rd = Reader::new(src);
    let mut out = TensileIndex::default();
    let mut names = Names::default();
    let pairs = rd.map_len()?;
    let mut seen_library = false;
    for _ in 0..pairs {
        if rd.str_bytes()? != b"library" {
            rd.skip()?;
            continue;
        }
        seen_library = true;
        for _ in 0..rd.map_len()? {
            match rd.str_bytes()?.as_slice() {
                b"type" => out.library_type = Some(String::from_utf8_lossy(&rd.str_bytes()?).into_owned()),
                b"rows" => {
                    out.rows = rd.array_len()?;
                    for _ in 0..out.rows {
                        for _ in 0..rd.map_len()? {
                            if rd.str_bytes()? == b"predicate" {
                                let mut budget = PREDICATE_BUDGET;
                                let pred = Predicate::from_value(&rd.value(&mut budget, 0)?);
                                let mut names = Vec::new();
                                pred.named(&mut names);
                                for n in names.iter().filter(|n| pred.may_hold(Some(n))) {
                                    push_unique(&mut out.processors, n);
                                }
                                out.any_processor |= pred.may_hold(None);
                            } else if placeholders {
                                collect_placeholders(&mut rd, &mut names, 0)?;
                            } else {
                                rd.skip()?;
                            }
                        }
                    }
                }
                _ => rd.skip()?,
            }
        }
        break;
    }
    if !seen_library {
        return Err(ParseError::Malformed { what: "Tensile library without a `library` entry", offset: 0 });
    }
    out.placeholders = names.kept.into_iter().collect();
    out.placeholders_truncated = names.truncated;
    Ok(out)
}

/// The number of solutions a Tensile sub-library holds, when its first key is `solutions` (as
/// Tensile's `LibraryIO.py` writes it) and `head` reaches that array's length; `None` when not.
/// A sub-library with none names no kernels, and needs no code-object file.
pub fn solution_count(head: &[u8]) -> Option<u64> {
    let mut rd = Reader::new(&head);
    rd.map_len().ok().filter(|n| *n > 0)?;
    (rd.str_bytes().ok()? == b"solutions").then_some(())?;
    rd.array_len().ok()
}

/// The last `_`-separated part of each name, in order, without repeats: the architecture a
/// Tensile code-object library name ends with (`…_Cijk_Dijk_gfx1100` → `gfx1100`).
fn push_arch(out: &mut Vec<String>, name: &[u8]) {
    let tail = name.rsplit(|b| *b == b'_').next().unwrap_or(name);
    push_unique(out, &String::from_utf8_lossy(tail));
}

/// What hipBLASLt's `TensileLiteLibrary_lazy_Mapping.dat` holds: a MessagePack map from the
/// first solution index of each code-object library to its name (`0` →
/// `TensileLibrary_BB_BB_…_Dijk_gfx1100`), written by TensileLite `TensileCreateLibrary` and
/// read by the host to find the `.co` file that holds a solution's kernels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SolutionMap {
    /// Code-object libraries it names.
    pub libraries: u64,
    /// The last part of their names (their architecture), in order, without repeats.
    pub archs: Vec<String>,
}

/// Reads a TensileLite solution map: first solution index (an integer, or its decimal string)
/// → code-object library name.
pub fn parse_solution_map(src: &dyn ByteSource) -> Result<SolutionMap> {
    let mut rd = Reader::new(src);
    let mut out = SolutionMap::default();
    let pairs = rd.map_len()?;
    for _ in 0..pairs {
        // hipBLASLt 7.1 writes integer keys; TensileLite's `MessagePackLoadLibraryMapping` and
        // Tensile `objectToMap` read string keys too (newer writers use `map<string, string>`).
        rd.skip()?;
        let name = rd.str_bytes()?;
        out.libraries += 1;
        push_arch(&mut out.archs, &name);
    }
    Ok(out)
}

/// Reads the architectures of hipBLASLt's `hipblasltExtOpLibrary.dat`: a MessagePack map from
/// architecture (`gfx90a`) to operation (`AMax`, `Softmax`, `LayerNorm`) to data type to
/// kernels, whose code is in `extop_<arch>.co` (hipBLASLt `amd_detail/rocblaslt/src/kernels`
/// ExtOp loader).
pub fn parse_extop_archs(src: &dyn ByteSource) -> Result<Vec<String>> {
    let mut rd = Reader::new(src);
    let mut out = Vec::new();
    for _ in 0..rd.map_len()? {
        let arch = rd.str_bytes()?;
        push_unique(&mut out, &String::from_utf8_lossy(&arch));
        rd.skip()?;
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::tensile_index;

    /// Tensile `Serialization/PlaceholderLibrary.hpp` maps `value` to `filePrefix`; a writer
    /// may put it before `type`, and keys that are not strings are stepped over.
    #[test]
    fn lazy_index_placeholders_in_any_key_order() {
        use rmp::encode::*;
        let mut b = Vec::new();
        write_map_len(&mut b, 1).unwrap();
        write_str(&mut b, "library").unwrap();
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "Hardware").unwrap();
        write_str(&mut b, "rows").unwrap();
        write_array_len(&mut b, 1).unwrap();
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "library").unwrap();
        write_array_len(&mut b, 4).unwrap();
        // value first, then type
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "value").unwrap();
        write_str(&mut b, "TensileLibrary_Type_SS_fallback").unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "Placeholder").unwrap();
        // an integer key, then a repeat of the same name
        write_map_len(&mut b, 3).unwrap();
        write_uint(&mut b, 7).unwrap();
        write_array_len(&mut b, 1).unwrap();
        write_nil(&mut b).unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "Placeholder").unwrap();
        write_str(&mut b, "value").unwrap();
        write_str(&mut b, "TensileLibrary_Type_SS_fallback").unwrap();
        // a map whose type is not Placeholder keeps no name
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "Matching").unwrap();
        write_str(&mut b, "value").unwrap();
        write_str(&mut b, "TensileLibrary_not_a_name").unwrap();
        // nested deeper than the cap: stepped over, not followed
        for _ in 0..(MAX_DEPTH + 4) {
            write_array_len(&mut b, 1).unwrap();
        }
        write_map_len(&mut b, 2).unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "Placeholder").unwrap();
        write_str(&mut b, "value").unwrap();
        write_str(&mut b, "TensileLibrary_too_deep").unwrap();
        write_str(&mut b, "predicate").unwrap();
        write_map_len(&mut b, 1).unwrap();
        write_str(&mut b, "type").unwrap();
        write_str(&mut b, "TruePred").unwrap();
        let idx = parse_lazy_index(&b).expect("parses");
        assert_eq!(idx.placeholders, ["TensileLibrary_Type_SS_fallback"]);
        assert!(idx.any_processor);
        // The index reader that does not look for names skips the same bytes.
        assert!(parse_tensile_index(&b).expect("parses").placeholders.is_empty());
        // Cut anywhere, it is an error, never a panic.
        for cut in 0..b.len() {
            assert!(parse_lazy_index(&b[..cut].to_vec()).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn solutions_of_a_sub_library_from_its_first_bytes() {
        // rocBLAS 6.x's gfx1032 `TensileLibrary_Type_SS_…_gfx1032.dat` (196 bytes) starts so.
        let empty = [0x82, 0xa9, b's', b'o', b'l', b'u', b't', b'i', b'o', b'n', b's', 0x90, 0xa7];
        assert_eq!(solution_count(&empty), Some(0));
        assert_eq!(solution_count(&tensile_index(&["gfx1100"], 559)), Some(559));
        assert_eq!(solution_count(&empty[..11]), None);
        assert_eq!(solution_count(b"\x81\xa7library\x90"), None);
    }

    /// A (compressed) index may name any number of sub-libraries: the walk keeps at most
    /// [`MAX_PLACEHOLDERS`] names and [`MAX_PLACEHOLDER_BYTES`] bytes, and says it stopped.
    #[test]
    fn placeholder_names_are_kept_within_caps() {
        let many: Vec<String> = (0..MAX_PLACEHOLDERS + 5).map(|i| format!("TensileLibrary_{i}")).collect();
        let names: Vec<&str> = many.iter().map(String::as_str).collect();
        let idx = parse_lazy_index(&crate::testing::lazy_index("gfx1100", &names)).expect("parses");
        assert_eq!(idx.placeholders.len(), MAX_PLACEHOLDERS);
        assert!(idx.placeholders_truncated);
        let long: Vec<String> = (0..5).map(|i| format!("{i}{}", "x".repeat((1 << 20) - 4096))).collect();
        let names: Vec<&str> = long.iter().map(String::as_str).collect();
        let idx = parse_lazy_index(&crate::testing::lazy_index("gfx1100", &names)).expect("parses");
        assert_eq!(idx.placeholders.len(), 4, "4 MiB of names at most");
        assert!(idx.placeholders_truncated);
        let idx = parse_lazy_index(&crate::testing::lazy_index("gfx1100", &["a", "b", "a"])).expect("parses");
        assert_eq!((idx.placeholders.len(), idx.placeholders_truncated), (2, false));
    }

    #[test]
    fn reads_processors_of_hardware_rows() {
        let bytes = tensile_index(&["gfx90a", "gfx1030"], 3);
        let idx = parse_tensile_index(&bytes).expect("parses");
        assert_eq!(idx.library_type.as_deref(), Some("Hardware"));
        assert_eq!(idx.processors, ["gfx90a", "gfx1030"]);
        assert_eq!(idx.rows, 2);
    }

    #[test]
    fn a_zlib_index_larger_than_the_stream_window_streams() {
        // Review finding: the reader never released the stream, so a `.dat.zlib` index over
        // 64 MiB inflated was refused. 70 MiB of solutions, then the hardware rows.
        use std::io::Write;
        let mut b = Vec::new();
        rmp::encode::write_map_len(&mut b, 2).unwrap();
        rmp::encode::write_str(&mut b, "solutions").unwrap();
        rmp::encode::write_bin_len(&mut b, 70 << 20).unwrap();
        b.resize(b.len() + (70 << 20), 0);
        let tail = crate::testing::tensile_index(&["gfx90a"], 0);
        // Reuse the fixture's `library` entry: everything after its (empty) solutions array.
        let lib_at = tail.windows(8).position(|w| w == b"\xa7library").expect("library key");
        b.extend_from_slice(&tail[lib_at..]);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&b).unwrap();
        let z = z.finish().unwrap();
        let stream = crate::decode::stream::zlib(&z, (0, z.len() as u64), u64::MAX);
        let idx = parse_tensile_index(&stream).expect("streams through");
        assert_eq!(idx.processors, ["gfx90a"]);
    }

    fn row(pred: &serde_json::Value) -> Predicate {
        let bytes = crate::testing::msgpack_of(pred);
        let mut budget = PREDICATE_BUDGET;
        Predicate::from_value(&Reader::new(&bytes).value(&mut budget, 0).unwrap())
    }

    /// Issue 12 point 12: Debian's ROCm 6.4 rocBLAS ships `TensileLibrary_lazy_gfx1010.dat`
    /// whose one hardware row is `TruePred` (Tensile SolutionLibrary.py writes it for the
    /// `fallback` architecture). Tensile's `Predicates::True` holds for every device.
    #[test]
    fn predicates_evaluate_as_tensile_does() {
        use serde_json::json;
        let amd = |p: serde_json::Value| json!({"type": "AMDGPU", "value": p});
        let proc_ = |n: &str| json!({"type": "Processor", "value": n});
        let cu = json!({"type": "CUCount", "value": 104});
        let t = row(&json!({"type": "TruePred"}));
        assert!(t.may_hold(Some("gfx1010")) && t.may_hold(None));
        assert!(!row(&json!({"type": "FalsePred"})).may_hold(None));
        let p = row(&amd(proc_("gfx90a")));
        assert!(p.may_hold(Some("gfx90a")) && !p.may_hold(Some("gfx942")) && !p.may_hold(None));
        let and = row(&amd(json!({"type": "And", "value": [proc_("gfx90a"), cu]})));
        assert!(and.may_hold(Some("gfx90a")) && !and.may_hold(None));
        let or = row(&json!({"type": "Or", "value": [amd(proc_("gfx1100")), amd(proc_("gfx1101"))]}));
        assert!(or.may_hold(Some("gfx1101")) && !or.may_hold(None));
        let not = row(&json!({"type": "Not", "value": amd(proc_("gfx906"))}));
        assert!(!not.may_hold(Some("gfx906")) && not.may_hold(None));
        let cu_only = row(&amd(json!({"type": "CUCount", "value": 60})));
        assert!(cu_only.may_hold(None));
        let and_false = row(&json!({"type": "And", "value": [amd(proc_("gfx90a")), {"type": "FalsePred"}]}));
        assert!(!and_false.may_hold(Some("gfx90a")));
    }

    #[test]
    fn a_true_row_serves_any_processor() {
        let b = crate::testing::tensile_index_of_rows(&[serde_json::json!({"type": "TruePred"})]);
        let idx = parse_tensile_index(&b).expect("parses");
        assert!(idx.processors.is_empty());
        assert!(idx.any_processor);
        assert_eq!(idx.rows, 1);
    }

    /// The shapes of hipBLASLt 7.1's `TensileLiteLibrary_lazy_Mapping.dat` and
    /// `hipblasltExtOpLibrary.dat`, as in Debian's libhipblaslt1 7.1.1 (issue 12 point 11:
    /// the mapping was read as a lazy index and failed at offset 0x3).
    #[test]
    fn hipblaslt_solution_map_and_extop_index() {
        let mut m = Vec::new();
        rmp::encode::write_map_len(&mut m, 3).unwrap();
        for (i, name) in [(0u64, "TensileLibrary_BB_BB_HA_Bias_Aux_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100"),
            (51, "TensileLibrary_BB_BB_HA_Bias_Aux_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1100"),
            (300, "TensileLibrary_SS_SS_HA_Bias_SAV_UA_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx90a")]
        {
            rmp::encode::write_uint(&mut m, i).unwrap();
            rmp::encode::write_str(&mut m, name).unwrap();
        }
        let map = parse_solution_map(&m).expect("a solution map");
        assert_eq!(map, SolutionMap { libraries: 3, archs: vec!["gfx1100".into(), "gfx90a".into()] });
        assert!(parse_tensile_index(&m).is_err(), "not a Hardware library");
        assert!(parse_solution_map(&m[..m.len() - 3].to_vec()).is_err(), "cut");

        let mut e = Vec::new();
        rmp::encode::write_map_len(&mut e, 2).unwrap();
        for arch in ["gfx908", "gfx1151"] {
            rmp::encode::write_str(&mut e, arch).unwrap();
            rmp::encode::write_map_len(&mut e, 1).unwrap();
            rmp::encode::write_str(&mut e, "AMax").unwrap();
            rmp::encode::write_map_len(&mut e, 1).unwrap();
            rmp::encode::write_str(&mut e, "S").unwrap();
            rmp::encode::write_array_len(&mut e, 0).unwrap();
        }
        assert_eq!(parse_extop_archs(&e).expect("an ExtOp index"), ["gfx908", "gfx1151"]);
        assert!(parse_extop_archs(&m).is_err(), "a solution map is not an ExtOp index");
    }

    /// TensileLite `MessagePackLoadLibraryMapping` (hipBLASLt tensilelite/include/Tensile/
    /// MasterSolutionLibrary.hpp) reads the mapping's keys as strings; newer writers emit them
    /// so. A string-keyed map must read like an integer-keyed one, not become a problem.
    #[test]
    fn a_solution_map_with_string_keys_reads_like_one_with_integer_keys() {
        let mut m = Vec::new();
        rmp::encode::write_map_len(&mut m, 2).unwrap();
        for (i, name) in [
            ("0", "TensileLibrary_HH_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx942"),
            ("17", "TensileLibrary_SS_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1151"),
        ] {
            rmp::encode::write_str(&mut m, i).unwrap();
            rmp::encode::write_str(&mut m, name).unwrap();
        }
        let map = parse_solution_map(&m).expect("a string-keyed solution map");
        assert_eq!(map, SolutionMap { libraries: 2, archs: vec!["gfx942".into(), "gfx1151".into()] });
    }

    #[test]
    fn not_a_library_is_an_error() {
        let mut b = Vec::new();
        rmp::encode::write_map_len(&mut b, 1).unwrap();
        rmp::encode::write_str(&mut b, "solutions").unwrap();
        rmp::encode::write_array_len(&mut b, 0).unwrap();
        assert!(parse_tensile_index(&b).is_err());
        assert!(parse_tensile_index(&b[..3].to_vec()).is_err());
    }
}
