//! Generates a fleet of snapshots for `merge` benchmarks: N variants of one real snapshot, each
//! with its own root and a pseudo-random fifth of its files left out (so no two rows are
//! alike), written zstd-compressed as `node-00000.json.zst` …
//!
//! `cargo run --release --example fleet -- BASE.json OUT_DIR N`

use std::io::Write;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, base, out, n] = args.as_slice() else {
        anyhow::bail!("usage: fleet BASE.json OUT_DIR N");
    };
    let n: u64 = n.parse()?;
    let snap = gfxscan::read_snapshot(std::path::Path::new(base))?;
    std::fs::create_dir_all(out)?;
    for i in 0..n {
        let mut s = snap.clone();
        s.roots = vec![format!("/nodes/node-{i:05}/opt/rocm")];
        // A splitmix64 step per file: deterministic, different per node.
        let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        s.files.retain(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % 5 != 0
        });
        let json = serde_json::to_vec(&s)?;
        let path = format!("{out}/node-{i:05}.json.zst");
        let mut f = std::fs::File::create(path)?;
        f.write_all(&zstd::bulk::compress(&json, 3)?)?;
    }
    Ok(())
}
