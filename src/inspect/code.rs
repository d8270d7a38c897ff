//! The code objects of one item, wherever they sit: a standalone code object, offload bundles
//! (plain and CCOB, alone or in `.hip_fatbin`), raw objects embedded in host data, LLVM
//! OffloadBinaries (standalone or in `.llvm.offloading`), the kernels of a TheRock `.kpack`
//! archive, and the same containers inside a Windows PE image (`.hip_fat`). Each object is
//! resolved to its target through `targets.toml`; what cannot be read is a problem.

use crate::decode::{budget_for, Decoding};
use crate::model::{CodeObjectRecord, KpackRef, Location};
use crate::parse::bundle::{parse_bundles_to, Bundle, Bundles, Entry};
use crate::parse::elf::{parse_code_object, parse_code_object_header, CodeObject};
use crate::parse::host::{hunt_data, kpack_marks, parse_host_elf_to, HostFacts};
use crate::parse::kpack::{parse_kpack, KpackCompression, KpackKernel};
use crate::parse::offload::{
    parse_offload_binaries_with, ImageKind, OffloadBinaries, OffloadBinary, OffloadEntry,
};
use crate::parse::pe::parse_pe;
use crate::parse::{ByteSource, Depth, ParseError, Slice};
use crate::vocab::codec::Codec;
use crate::vocab::targets::Targets;

use super::resolve::resolve_code_object;

/// Largest kpack kernel inflated to read its code object.
const MAX_KPACK_KERNEL: u64 = 256 << 20;

/// Collects code objects and problems from parsed structures.
pub struct Collector<'t> {
    pub targets: &'t Targets,
    pub code_objects: Vec<CodeObjectRecord>,
    pub problems: Vec<String>,
    pub bundles: u64,
    pub kpack_ref: Option<KpackRef>,
    /// Bytes this item may still walk or inflate in OffloadBinaries and kpack frames: sections
    /// may overlap and compressed data may claim any size, so the work per file is bounded.
    work: u64,
    /// OffloadBinary regions already read (file offset, length).
    regions: Vec<(u64, u64)>,
    /// How far into bundles' code objects to read.
    depth: Depth<'t>,
    /// What compressed code is inflated with.
    decoding: &'t Decoding,
}

/// Where a code object sits, beyond its container: its bundle (with the bundle's file offset
/// and the entry ID), or the group and ID of an OffloadBinary image or a kpack kernel.
/// Where an entry of bundle `b` at file offset `at` sits.
fn entry_location(b: &Bundle, at: u64, entry_id: &str) -> Location {
    Location::BundleEntry {
        entry_id: entry_id.to_string(),
        bundle_offset: at,
        format: b.format,
        compression: b.compression,
        bundle_sizes: (b.compression.is_some() && b.stored_size > 0)
            .then_some((b.stored_size, b.uncompressed_size)),
    }
}

impl<'t> Collector<'t> {
    pub fn new(reading: super::Reading<'t>, size: u64) -> Self {
        Collector {
            targets: reading.targets,
            code_objects: Vec::new(),
            problems: Vec::new(),
            bundles: 0,
            kpack_ref: None,
            // As much as an archive of its size may inflate.
            work: budget_for(size),
            regions: Vec::new(),
            depth: reading.depth,
            decoding: reading.decoding,
        }
    }

    /// True the first time a region is met: section headers may name the same bytes again.
    fn first_visit(&mut self, offset: u64, len: u64) -> bool {
        let new = !self.regions.contains(&(offset, len));
        if new {
            self.regions.push((offset, len));
        }
        new
    }

    /// Takes `n` bytes of work from the file's budget; false (with a problem) when it is spent.
    fn spend(&mut self, n: u64, what: &str) -> bool {
        match self.work.checked_sub(n) {
            Some(left) => {
                self.work = left;
                true
            }
            None => {
                self.work = 0;
                self.problems.push(format!("{what}: over the file's budget of OffloadBinary work, not read"));
                false
            }
        }
    }

    fn record(&mut self, co: &CodeObject, offset: u64, location: Location) {
        if let Some(defect) = &co.defect {
            let what = match &location {
                Location::BundleEntry { entry_id, bundle_offset, .. } => {
                    format!("bundle at {bundle_offset:#x}, entry {entry_id}")
                }
                Location::OffloadImage { image: id, .. } | Location::KpackKernel { key: id } => {
                    format!("{id} at {offset:#x}")
                }
                Location::File => "code object".to_string(),
                Location::Embedded { .. } => format!("code object at {offset:#x}"),
            };
            self.problems.push(format!("{what}: {defect}"));
        }
        let r = resolve_code_object(co, self.targets);
        self.code_objects.push(CodeObjectRecord {
            processor: r.processor,
            target_id: r.target_id,
            code_object_version: co.header.code_object_version(),
            size: co.size,
            kernels: co.kernels(),
            location,
            offset,
            e_flags: co.header.e_flags,
            generic_version: r.generic_version,
            isa_version: (co.header.code_object_version() == Some(2))
                .then(|| co.notes.isa_version.map(|(a, b, c)| format!("{a}.{b}.{c}")))
                .flatten(),
        });
    }

    /// An entry read to [`Depth::Tables`]: its target as the entry ID names it (what comgr
    /// matches), its size from the table; nothing its code object alone says (version,
    /// kernels, flags) is known.
    fn record_from_table(&mut self, e: &Entry, offset: u64, location: Location) {
        // Only entries whose ID names a processor of the target table are taken from it.
        let Some(target_id) = crate::vocab::runtime::comgr_target(&e.table.id) else { return };
        let processor = target_id.split(':').next().unwrap_or(target_id);
        // An entry named for a generic target holds code of the generic version LLVM emits for
        // it (targets.toml): what HIP 6.4 reads from the ELF to choose its unbundler
        // (`containGenericTarget`), so a check that leaves it unread chooses as a scan does.
        let generic_version = self
            .targets
            .by_name(processor)
            .filter(|t| t.is_generic())
            .and_then(|t| t.generic_version)
            .and_then(|v| u8::try_from(v).ok());
        self.code_objects.push(CodeObjectRecord {
            processor: processor.to_string(),
            target_id: target_id.to_string(),
            code_object_version: None,
            size: e.table.size,
            kernels: None,
            location,
            offset,
            e_flags: 0,
            generic_version,
            isa_version: None,
        });
    }

    /// A file that is one code object.
    pub fn standalone(&mut self, src: &dyn ByteSource) {
        let parsed = match self.depth {
            Depth::Tables { .. } => parse_code_object_header(src, src.len()),
            Depth::Facts => parse_code_object(src, Some(src.len())),
        };
        match parsed {
            Ok(co) => self.record(&co, 0, Location::File),
            Err(e) => self.problems.push(e.to_string()),
        }
    }

    /// Records every entry of the bundles of a region that starts at file offset `base`.
    pub fn bundles(&mut self, base: u64, found: &Bundles, region: &str) {
        for b in &found.bundles {
            self.bundles += 1;
            let at = base + b.offset;
            for e in &b.entries {
                let offset = if b.compression.is_some() { e.table.offset } else { at + e.table.offset };
                if e.from_table {
                    self.record_from_table(e, offset, entry_location(b, at, &e.table.id));
                    continue;
                }
                let Some(result) = &e.code_object else { continue };
                match result {
                    Ok(co) => self.record(co, offset, entry_location(b, at, &e.table.id)),
                    Err(err) => {
                        self.problems.push(format!("{region}bundle at {at:#x}, entry {}: {err}", e.table.id))
                    }
                }
            }
            if let Some(err) = &b.error {
                self.problems.push(format!("{region}bundle at {at:#x}: {}", err.clone().rebased(base)));
            }
        }
        if let Some(err) = &found.stopped {
            self.problems.push(format!("{region}{}", err.clone().rebased(base)));
        }
    }

    /// A host ELF: its `.hip_fatbin`, bundle sections, embedded objects, `.llvm.offloading`
    /// sections, and the kpack reference of a split library.
    pub fn host_elf(&mut self, src: &dyn ByteSource) {
        match parse_host_elf_to(src, self.depth, &self.decoding.inflater()) {
            Ok(facts) => self.host_facts(src, facts),
            Err(e) => self.problems.push(e.to_string()),
        }
    }

    fn host_facts(&mut self, src: &dyn ByteSource, facts: HostFacts) {
        if let Some((base, found)) = &facts.fatbin {
            self.bundles(*base, found, ".hip_fatbin: ");
        }
        self.data_code(&facts);
        for (base, found) in &facts.offloading {
            if self.first_visit(*base, 0) {
                self.offloading(src, *base, found, ".llvm.offloading: ");
            }
        }
        self.kpack_marks(facts.kpack);
    }

    /// What a host binary keeps as data: offload bundles (each read as a bundle, as the runtime
    /// reads the image a program hands `hipModuleLoadData`), raw code objects, and the data
    /// sections that could not be searched.
    fn data_code(&mut self, facts: &HostFacts) {
        for d in &facts.data_bundles {
            self.bundles(d.offset, &d.bundles, &format!("{}: ", d.section));
        }
        for (section, err) in &facts.unsearched {
            self.problems.push(format!("{section} not searched for embedded code objects: {err}"));
        }
        for e in &facts.embedded {
            match &e.code_object {
                Ok(co) => {
                    let location = Location::Embedded { section_entry_id: e.bundle_entry_id.clone() };
                    self.record(co, e.offset, location)
                }
                Err(err) => self.problems.push(format!("code object at {:#x}: {err}", e.offset)),
            }
        }
    }

    fn kpack_marks(
        &mut self,
        marks: Option<crate::parse::Result<(crate::parse::kpack::KpackRef, Vec<u64>)>>,
    ) {
        match marks {
            Some(Ok((r, indexes))) => {
                self.kpack_ref = Some(KpackRef {
                    kernel_name: r.kernel_name,
                    search_paths: r.search_paths,
                    code_objects: indexes,
                })
            }
            Some(Err(e)) => self.problems.push(format!("kpack reference: {e}")),
            None => {}
        }
    }

    /// The AMDGPU images of the OffloadBinaries of a region starting at file offset `base`
    /// (a standalone file, base 0, or a `.llvm.offloading` section). The region's images form
    /// one group, as a `.hip_fatbin` does: a device needs one of them.
    pub fn offloading(&mut self, src: &dyn ByteSource, base: u64, found: &OffloadBinaries, region: &str) {
        for b in &found.binaries {
            let cost = b.compression.map_or(b.header.size, |c| c.inflated_size);
            if !self.spend(cost, &format!("{region}OffloadBinary at {:#x}", base + b.offset)) {
                break;
            }
            let read = match b.compression {
                None => {
                    self.offload_images(&Slice::new(src, base, src.len() - base.min(src.len())), 0, base, b)
                }
                Some(c) => {
                    let view = Slice::new(src, base + b.offset, b.header.size);
                    let inf = self.decoding.inflater();
                    let body = c.inflated_size - b.header.entries_offset;
                    inf.stream(&view, (b.header.entries_offset, b.header.size), c.method, body)
                        .and_then(|stream| self.offload_images(&stream, b.header.entries_offset, base, b))
                }
            };
            if let Err(e) = read {
                self.problems.push(format!("{region}OffloadBinary at {:#x}: {e}", base + b.offset));
            }
        }
        if let Some(err) = &found.stopped {
            self.problems.push(format!("{region}{}", err.clone().rebased(base)));
        }
    }

    /// Parses the AMDGPU object images of one OffloadBinary from `images`, where an image's
    /// offset less `shift` is its place (`shift` is where an inflated body starts).
    fn offload_images(
        &mut self,
        images: &dyn ByteSource,
        shift: u64,
        base: u64,
        b: &OffloadBinary,
    ) -> Result<(), ParseError> {
        let mut entries: Vec<&OffloadEntry> = b.entries.iter().filter(|e| is_amdgpu_image(e)).collect();
        entries.sort_by_key(|e| e.image_offset);
        for e in entries {
            let at = e.image_offset.checked_sub(shift).ok_or(ParseError::Malformed {
                what: "OffloadBinary image inside its header",
                offset: e.image_offset,
            })?;
            images.release_before(at);
            let id = format!("{}-{}", e.triple.as_deref().unwrap_or("?"), e.arch.as_deref().unwrap_or("?"));
            let offset = if b.compression.is_some() { e.image_offset } else { base + e.image_offset };
            match parse_code_object(&Slice::new(images, at, e.image_size), Some(e.image_size)) {
                Ok(co) => {
                    // Offsets of a compressed binary's images count in the inflated binary.
                    let compression = b.compression.map(|c| c.method);
                    self.record(
                        &co,
                        offset,
                        Location::OffloadImage { image: id, region_offset: base, compression },
                    )
                }
                Err(err) => self.problems.push(format!("OffloadBinary image {id} at {offset:#x}: {err}")),
            }
        }
        Ok(())
    }

    /// The kernels of a `.kpack` archive, each a code object keyed `<binary>#<index>`.
    pub fn kpack(&mut self, src: &dyn ByteSource) {
        let archive = match parse_kpack(src) {
            Ok(a) => a,
            Err(e) => return self.problems.push(format!("kpack archive: {e}")),
        };
        for k in &archive.kernels {
            if archive.compression == KpackCompression::ZstdPerKernel
                && !self.spend(frame_limit(k), &format!("kpack kernel {}", k.binary))
            {
                break;
            }
            let read = match archive.compression {
                KpackCompression::None => parse_code_object(&Slice::new(src, k.offset, k.size), Some(k.size))
                    .map(|co| (co, k.offset)),
                KpackCompression::ZstdPerKernel => self.kpack_frame(src, k),
            };
            match read {
                Ok((co, offset)) => self.record(&co, offset, Location::KpackKernel { key: k.binary.clone() }),
                Err(e) => self.problems.push(format!("kpack kernel {} ({}): {e}", k.binary, k.arch)),
            }
        }
    }

    /// A zstd-framed kpack kernel, inflated (up to its recorded size) and parsed.
    fn kpack_frame(&self, src: &dyn ByteSource, k: &KpackKernel) -> Result<(CodeObject, u64), ParseError> {
        let declared = frame_limit(k);
        let frame = Slice::new(src, k.offset, k.size);
        let inf = self.decoding.inflater();
        let stream = inf.stream(&frame, (0, k.size), Codec::Zstd, declared)?;
        let co = parse_code_object(&stream, k.original_size)?;
        Ok((co, k.offset))
    }

    /// A Windows PE image (a `.dll` or `.pyd`): `.hip_fat`/`.hip_fatbin` bundles,
    /// `.llvm.offloading` sections, and a kpack reference in `.kpackrf`.
    pub fn pe(&mut self, src: &dyn ByteSource) {
        let pe = match parse_pe(src) {
            Ok(pe) => pe,
            Err(e) => return self.problems.push(e.to_string()),
        };
        let inside = |off: u64, size: u64| off.checked_add(size).is_some_and(|e| e <= src.len());
        if let Some(r) = pe.section_any(&[".kpackrf", ".rocm_kpack_ref"]).filter(|s| inside(s.offset, s.size))
        {
            let wrappers = pe.section_any(&[".hipFatB", ".hipFatBinSegment"]).map(|s| (s.offset, s.size));
            let wrappers = wrappers.filter(|(o, n)| inside(*o, *n));
            self.kpack_marks(Some(kpack_marks(src, (r.offset, r.size), wrappers)));
        }
        // A kpack-split DLL keeps what rocm-kpack `coff/zero_page.py` could not drop of `.hip_fat`
        // (the last partial page): leftovers, not bundles.
        let split = self.kpack_ref.is_some();
        if let Some(s) = pe.hip_fatbin().filter(|s| s.size > 0 && !split) {
            match inside(s.offset, s.size) {
                true => self.bundles(
                    s.offset,
                    &parse_bundles_to(
                        &Slice::new(src, s.offset, s.size),
                        self.depth,
                        &self.decoding.inflater(),
                    ),
                    ".hip_fat: ",
                ),
                false => self.problems.push(format!("{} runs past the end of the file", s.name)),
            }
        }
        let data: Vec<(&str, u64, u64)> = pe
            .data_sections()
            .filter(|s| inside(s.offset, s.size))
            .map(|s| (s.name.as_str(), s.offset, s.size))
            .collect();
        let mut facts = HostFacts::default();
        hunt_data(src, &data, (self.depth, &self.decoding.inflater()), &mut facts);
        self.data_code(&facts);
        for s in pe.offloading().filter(|s| s.size > 0 && inside(s.offset, s.size)) {
            if !self.first_visit(s.offset, s.size) {
                continue;
            }
            let found =
                parse_offload_binaries_with(&Slice::new(src, s.offset, s.size), &self.decoding.inflater());
            self.offloading(src, s.offset, &found, ".llvm.offloading: ");
        }
    }
}

/// The most a kpack kernel's zstd frame is inflated to: its recorded size, capped.
fn frame_limit(k: &KpackKernel) -> u64 {
    k.original_size.unwrap_or(MAX_KPACK_KERNEL).min(MAX_KPACK_KERNEL)
}

/// An AMDGPU code-object image: an object image for an `amdgcn` triple or a `gfx` arch.
fn is_amdgpu_image(e: &OffloadEntry) -> bool {
    e.image_kind == ImageKind::Object
        && (e.triple.as_deref().is_some_and(|t| t.starts_with("amdgcn"))
            || e.arch.as_deref().is_some_and(|a| a.starts_with("gfx")))
}
