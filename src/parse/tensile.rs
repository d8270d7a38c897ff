//! Tensile (rocBLAS, hipBLASLt) library files: which processors an index serves.
//!
//! A Tensile `.dat` is MessagePack (Tensile `LibraryIO.py`): a map with `solutions` and
//! `library`. A master library's `library` is `{"type": "Hardware", "rows": [...]}`, each row a
//! `predicate` — `{"type": "AMDGPU", "value": {"type": "Processor", "value": "gfx90a"}}`, or an
//! `And` of a processor and a CU count — and a sub-`library`. The processors in those predicates
//! are what the index serves. The merged `TensileLibrary.dat` puts its `library` after ~100 MB of
//! solutions: the walk streams past them, skipping strings unread.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]

use super::msgpack::{Reader, Value};
use super::{push_unique, ByteSource, ParseError, Result};

/// Most items read whole from one predicate.
const PREDICATE_BUDGET: u32 = 4096;

/// Collects every `{"type": "Processor", "value": NAME}` in a predicate tree.
fn processors_in(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Map(pairs) => {
            if v.get("type").and_then(Value::as_str) == Some("Processor") {
                if let Some(name) = v.get("value").and_then(Value::as_str) {
                    out.push(name.to_string());
                }
            }
            for (_, x) in pairs {
                processors_in(x, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| processors_in(x, out)),
        _ => {}
    }
}

/// What a Tensile index says about hardware.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TensileIndex {
    /// The top-level library's type (`Hardware` for a master library).
    pub library_type: Option<String>,
    /// Processors named by its hardware rows, in order, without repeats.
    pub processors: Vec<String>,
    /// Hardware rows in all (a `TruePred` row serves any processor).
    pub rows: u64,
}

/// Reads the processors a Tensile master library (lazy, per-arch or merged index) serves.
pub fn parse_tensile_index(src: &dyn ByteSource) -> Result<TensileIndex> {
    let mut rd = Reader::new(src);
    let mut out = TensileIndex::default();
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
                                let pred = rd.value(&mut budget, 0)?;
                                let mut names = Vec::new();
                                processors_in(&pred, &mut names);
                                for n in &names {
                                    push_unique(&mut out.processors, n);
                                }
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
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::testing::tensile_index;

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
        let stream =
            crate::parse::bundle::inflate_stream(&z, crate::parse::bundle::Compression::Zlib).unwrap();
        let idx = parse_tensile_index(&stream).expect("streams through");
        assert_eq!(idx.processors, ["gfx90a"]);
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
