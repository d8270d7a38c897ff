//! Archives: `ar` tables, tar header blocks, PAX records, member paths and the xz index as pure
//! parsers, then the whole archive walk (tar, zip, `.deb`, images, nesting) over the same bytes
//! held in memory, with a small inflation budget so bombs end quickly.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use gfxscan::archive::{detect, expand, expand_if_image, Ctx};
use gfxscan::decode::{Budget, Decoding};
use gfxscan::inspect::Reading;
use gfxscan::source::origin::Origin;
use gfxscan::parse::magic::classify;
use gfxscan::model::RelPath;
use gfxscan::parse::archive::{
    link_escapes, member_path, parse_ar, parse_pax, parse_tar_header, xz_blocks,
};
use gfxscan::vocab::targets::Targets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let bytes = data.to_vec();
    std::hint::black_box(parse_ar(&bytes).ok());
    std::hint::black_box(xz_blocks(&bytes));
    for (i, block) in data.chunks(512).enumerate() {
        std::hint::black_box(parse_tar_header(block, i as u64 * 512).ok());
    }
    std::hint::black_box(parse_pax(data).ok());
    if let Ok(Some(p)) = member_path(data) {
        std::hint::black_box(link_escapes(&p, data));
        std::hint::black_box(link_escapes(Path::new("a/b"), data));
    }

    let targets = Targets::builtin();
    let len = bytes.len() as u64;
    let origin = Arc::new(Origin::Memory { data: Arc::new(bytes), offset: 0, len });
    let budget = Budget::new(64 << 20);
    let head: Vec<u8> = data.iter().take(512).copied().collect();
    if let Some(format) = detect(classify(&head), &head, &origin, &budget) {
        let decoding = Decoding::default();
        // Digests on: members are hashed too, live ones through the stream's tee.
        let reading = Reading { targets: &targets, depth: Default::default(), decoding: &decoding, digests: true };
        let ctx = Ctx { reading, budget, depth: 0, base: RelPath::new(0, "".as_ref()) };
        if expand_if_image(&origin, &ctx).is_none() {
            std::hint::black_box(expand(origin, format, &ctx));
        }
    }
});
