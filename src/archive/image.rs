//! Container images: `docker save` archives (old and Docker 25+ layouts) and OCI layouts, as a
//! folder, a tar or compressed whole, read as their final file system — layers applied bottom
//! up through a [`LayerIndex`] (whiteouts, opaque folders).

use super::ArchiveError;
use std::collections::HashMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::tar::{
    extracted_kind, layer_codec, list_tar, next_entry, tar_stream, walk_tar, MemberReader, TarStream,
};
use super::{settle, Ctx, Gather, MAX_IMAGE_JSON};
use crate::decode::Budget;
use crate::inspect::Found;
use crate::model::{ArchiveRecord, ImageSource};
use crate::parse::archive::{member_path, TarType, TAR_BLOCK};
use crate::source::origin::{Metered, Origin};
use crate::source::registry::{Blob, RemoteImage};

/// A container image's layers, bottom first, as origins with their media kinds.
pub(super) struct Layers {
    pub(super) format: &'static str,
    pub(super) layers: Vec<(String, Arc<Origin>)>,
}

/// Reads an image's layer list from the files of its top level (`manifest.json` of `docker save`,
/// else `index.json` of an OCI layout); `file` opens one by its path in the image archive.
pub(super) fn image_layers(
    file: &dyn Fn(&str) -> Option<Arc<Origin>>,
) -> Result<Option<Layers>, ArchiveError> {
    let document = |name: &str, why: String| ArchiveError::ImageDocument { name: name.to_string(), why };
    let json = |name: &str| -> Result<Option<serde_json::Value>, ArchiveError> {
        let Some(origin) = file(name) else { return Ok(None) };
        let mut text = Vec::new();
        origin
            .open()
            .and_then(|r| r.take(MAX_IMAGE_JSON).read_to_end(&mut text))
            .map_err(|e| document(name, e.to_string()))?;
        serde_json::from_slice(&text).map(Some).map_err(|e| document(name, e.to_string()))
    };
    let blob = |digest: &str| -> Result<Arc<Origin>, ArchiveError> {
        let bad = || ArchiveError::BadDigest(digest.to_string());
        let (alg, hex) = digest.split_once(':').ok_or_else(bad)?;
        if !alg.bytes().all(|b| b.is_ascii_alphanumeric()) || !hex.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(bad());
        }
        file(&format!("blobs/{alg}/{hex}")).ok_or_else(|| ArchiveError::BlobMissing(digest.to_string()))
    };
    if let Some(manifest) = json("manifest.json")? {
        let images =
            manifest.as_array().ok_or(ArchiveError::ImageLayout("manifest.json: not a list of images"))?;
        if images.len() != 1 {
            return Err(ArchiveError::ImageCount(images.len()));
        }
        let names = images
            .first()
            .and_then(|i| i.get("Layers"))
            .and_then(|l| l.as_array())
            .ok_or(ArchiveError::ImageLayout("manifest.json: no Layers"))?;
        let mut layers = Vec::new();
        for n in names {
            let n =
                n.as_str().ok_or(ArchiveError::ImageLayout("manifest.json: a layer that is not a path"))?;
            let origin = file(n).ok_or_else(|| ArchiveError::LayerMissing(n.to_string()))?;
            layers.push((n.to_string(), origin));
        }
        return Ok(Some(Layers { format: "docker-image", layers }));
    }
    let Some(index) = json("index.json")? else { return Ok(None) };
    if file("oci-layout").is_none() {
        return Ok(None);
    }
    // An index may point at further indexes (multi-platform images); follow to the first
    // image manifest for linux/amd64, or the only one.
    let mut index = index;
    for _ in 0..4 {
        let manifests = index
            .get("manifests")
            .and_then(|m| m.as_array())
            .ok_or(ArchiveError::ImageLayout("index.json: no manifests"))?;
        let pick = manifests
            .iter()
            .find(|m| {
                m.pointer("/platform/architecture").and_then(|a| a.as_str()) == Some("amd64")
                    && m.pointer("/platform/os").and_then(|a| a.as_str()) == Some("linux")
            })
            .or_else(|| (manifests.len() == 1).then(|| manifests.first()).flatten())
            .ok_or(ArchiveError::ImageLayout("OCI index: several manifests and none for linux/amd64"))?;
        let digest = pick
            .get("digest")
            .and_then(|d| d.as_str())
            .ok_or(ArchiveError::ImageLayout("OCI index: manifest without digest"))?;
        let origin = blob(digest)?;
        let mut text = Vec::new();
        origin
            .open()
            .and_then(|r| r.take(MAX_IMAGE_JSON).read_to_end(&mut text))
            .map_err(|e| document(digest, e.to_string()))?;
        let doc: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| document(digest, e.to_string()))?;
        if let Some(layers) = doc.get("layers").and_then(|l| l.as_array()) {
            let mut out = Vec::new();
            for l in layers {
                let d = l
                    .get("digest")
                    .and_then(|d| d.as_str())
                    .ok_or(ArchiveError::ImageLayout("OCI manifest: layer without digest"))?;
                out.push((d.to_string(), blob(d)?));
            }
            return Ok(Some(Layers { format: "oci-image", layers: out }));
        }
        index = doc;
    }
    Err(ArchiveError::IndexTooDeep)
}

/// What each layer of an image holds, by the highest layer index that says so: enough to tell
/// whether a member of layer `i` survives into the final file system.
#[derive(Default)]
pub(super) struct LayerIndex {
    /// Paths with an entry, and the highest layer with one.
    pub(super) present: HashMap<PathBuf, usize>,
    /// Paths with a non-directory entry (which hides a lower folder's contents).
    pub(super) not_dir: HashMap<PathBuf, usize>,
    /// Paths deleted (`.wh.<name>`).
    pub(super) deleted: HashMap<PathBuf, usize>,
    /// Folders whose lower contents are hidden (`.wh..wh..opq`).
    pub(super) opaque: HashMap<PathBuf, usize>,
}

impl LayerIndex {
    /// Records one entry of layer `layer`.
    pub(super) fn note(&mut self, layer: usize, path: &Path, kind: &TarType) {
        let up = |m: &mut HashMap<PathBuf, usize>, p: PathBuf| {
            let e = m.entry(p).or_insert(layer);
            *e = (*e).max(layer);
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let parent = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if name == OPAQUE {
            up(&mut self.opaque, parent);
        } else if let Some(gone) = name.strip_prefix(WHITEOUT) {
            up(&mut self.deleted, parent.join(gone));
        } else {
            up(&mut self.present, path.to_path_buf());
            if *kind != TarType::Dir {
                up(&mut self.not_dir, path.to_path_buf());
            }
        }
    }

    /// True when a layer above `layer` replaces, deletes or hides `path`.
    pub(super) fn hides(&self, layer: usize, path: &Path) -> bool {
        let above = |m: &HashMap<PathBuf, usize>, p: &Path| m.get(p).is_some_and(|&l| l > layer);
        if above(&self.present, path) || above(&self.deleted, path) {
            return true;
        }
        path.ancestors()
            .skip(1)
            .any(|a| above(&self.opaque, a) || above(&self.deleted, a) || above(&self.not_dir, a))
    }

    /// True when a member of `layer` at `path` is part of the final file system.
    pub(super) fn visible(&self, layer: usize, path: &Path) -> bool {
        let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        !name.starts_with(WHITEOUT) && !self.hides(layer, path)
    }
}

pub(super) const WHITEOUT: &str = ".wh.";
pub(super) const OPAQUE: &str = ".wh..wh..opq";

/// Expands a container image: its layers, top first, each member read only when no layer above
/// replaced or deleted it, so the result is the image's final file system.
pub(super) fn expand_image(layers: Layers, ctx: &Ctx) -> Found {
    let gather = Gather::default();
    let mut index = LayerIndex::default();
    let count = layers.layers.len();
    // Top layer first: when layer i is read, the index holds exactly the layers above it.
    for (i, (name, layer)) in layers.layers.iter().enumerate().rev() {
        let stream = match layer_stream(layer, ctx) {
            Ok(s) => s,
            Err(e) => {
                gather.problem(ctx, Path::new(name), format!("layer: {e}"));
                continue;
            }
        };
        let mut here = Vec::new();
        let visible = |p: &Path| index.visible(i, p);
        let result = walk_tar(&stream, None, layer_seq(i), ctx, &gather, &visible, &mut |p, kind| {
            here.push((p.to_path_buf(), *kind))
        });
        if let Err(e) = result {
            gather.problem(ctx, Path::new(name), format!("layer: {e}"));
        }
        for (p, kind) in here {
            index.note(i, &p, &kind);
        }
    }
    let record = image_record(ctx, layers.format, count);
    gather.finish(ctx, record)
}

/// Expands an image from a registry: its layers top first, each fetched once and read as it
/// streams (decoded by its magic), its size and digest checked at its end. A layer that ends
/// early or whose bytes are not its digest's is a problem naming it, and nothing it holds is
/// believed; the layers below it are not read either, as what it deletes or replaces of them
/// is unknown: the image reads as less than it holds, never as a file system it does not have.
pub fn expand_registry_image(image: &RemoteImage, ctx: &Ctx) -> Found {
    let gather = Gather::default();
    let mut index = LayerIndex::default();
    for (i, blob) in image.layers.iter().enumerate().rev() {
        let mut here = Vec::new();
        let layer = Gather::default();
        let read = walk_blob(blob, i, ctx, &layer, &index, &mut here);
        let name = Path::new(&blob.digest);
        match read {
            Ok(walked) => {
                if let Err(e) = walked {
                    layer.problem(ctx, name, format!("layer: {e}"));
                }
                gather.absorb(layer);
                for (p, kind) in here {
                    index.note(i, &p, &kind);
                }
            }
            Err(e) => {
                gather.problem(ctx, name, format!("layer: {e}; nothing in it is read"));
                for below in image.layers.iter().take(i) {
                    let why = "layer not read: a layer above it could not be read, so what it deletes or \
                               replaces here is unknown";
                    gather.problem(ctx, Path::new(&below.digest), why.to_string());
                }
                break;
            }
        }
    }
    let mut record = image_record(ctx, image.format, image.layers.len());
    let r = &image.reference;
    record.image = Some(ImageSource {
        registry: r.registry.clone(),
        repository: r.repository.clone(),
        tag: r.tag.clone(),
        digest: image.digest.clone(),
        index_digest: image.index_digest.clone(),
        platform: image.platform.clone(),
    });
    gather.finish(ctx, record)
}

/// Reads layer `i` as its blob streams by, into `gather`; `here` gets every entry (for the
/// layer index). The outer `Err`: the blob could not be fetched whole, or is not what its
/// digest says; the inner one: the tar walk stopped (what it read before stays).
fn walk_blob(
    blob: &Arc<Blob>,
    i: usize,
    ctx: &Ctx,
    gather: &Gather,
    index: &LayerIndex,
    here: &mut Vec<(PathBuf, TarType)>,
) -> io::Result<Result<(), ArchiveError>> {
    let origin = Arc::new(Origin::Remote(blob.clone()));
    let mut raw = blob.open_first()?;
    let mut head = Vec::new();
    (&mut raw).take(TAR_BLOCK as u64).read_to_end(&mut head)?;
    let walked = match live_layer(origin, head, &mut raw, &ctx.budget) {
        Ok(Some((layer, reader))) => {
            let visible = |p: &Path| index.visible(i, p);
            walk_tar(&layer, Some(reader), layer_seq(i), ctx, gather, &visible, &mut |p, kind| {
                here.push((p.to_path_buf(), *kind))
            })
        }
        Ok(None) => Err(ArchiveError::NotATarball),
        Err(e) => Err(e),
    };
    // The digest speaks only at the blob's end: read what the walk left, then believe it.
    raw.finish()?;
    Ok(walked)
}

/// Sequence numbers of layer `i`'s members: above every lower layer's.
pub(super) fn layer_seq(i: usize) -> u64 {
    (i as u64) << 40
}

pub(super) fn image_record(ctx: &Ctx, format: &str, layers: usize) -> ArchiveRecord {
    ArchiveRecord {
        path: ctx.base.clone(),
        format: format.to_string(),
        members: 0,
        layers: Some(layers as u32),
        package: None,
        image: None,
    }
}

/// A layer's tar stream: the layer itself, or its gzip/zstd/xz decoding (by magic).
pub(super) fn layer_stream(layer: &Arc<Origin>, ctx: &Ctx) -> Result<Arc<Origin>, ArchiveError> {
    tar_stream(layer, &ctx.budget)?.ok_or(ArchiveError::NotATarball)
}

/// A layer tarball read as it streams by: `head` (its first bytes, already read) then `live`,
/// decoded when compressed and metered against the budget, with the origin that reopens it.
/// `None` when it is neither tar nor compressed.
#[allow(clippy::type_complexity)]
pub(super) fn live_layer<'a>(
    member: Arc<Origin>,
    head: Vec<u8>,
    live: &'a mut dyn Read,
    budget: &Arc<Budget>,
) -> Result<Option<(Arc<Origin>, Box<dyn Read + 'a>)>, ArchiveError> {
    let Some(codec) = layer_codec(&head) else { return Ok(None) };
    let chained: Box<dyn Read + 'a> = Box::new(io::Cursor::new(head).chain(live));
    Ok(Some(match codec {
        Some(c) => {
            let inner = crate::decode::reader(c, chained)?;
            let meter = Metered::new(inner, budget.clone(), None);
            (Arc::new(Origin::decoded(member, c, None, budget)), Box::new(meter))
        }
        None => (member, chained),
    }))
}

/// True when a tar stream's first entry is named as `docker save` and OCI layouts name theirs
/// (`blobs/`, `oci-layout`, `manifest.json`, `index.json`, `repositories`, or a 64-hex-digit
/// layer folder or config): only then is an image looked for in a stream, which costs a pass.
pub(super) fn starts_like_image(stream: &Arc<Origin>) -> bool {
    let Ok(reader) = stream.open() else { return false };
    let mut tar = TarStream { origin: stream, reader, pos: 0 };
    // The first entry with a name (tar run in the image folder starts with `./`).
    let name = loop {
        let Ok(Some(e)) = next_entry(&mut tar) else { return false };
        match member_path(&e.header.name) {
            Ok(Some(p)) => break p.to_string_lossy().into_owned(),
            _ if tar.skip(e.stored).is_ok() => continue,
            _ => return false,
        }
    };
    let hex64 = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    name.starts_with("blobs")
        || name.starts_with("sha256:")
        || ["oci-layout", "manifest.json", "index.json", "repositories"].contains(&name.as_str())
        || name.split(['/', '.']).next().is_some_and(hex64)
}

/// What the first pass over a streamed image keeps: its JSON documents, and each tarball
/// member's entry list (names and types only).
#[derive(Default)]
pub(super) struct StreamedImage {
    pub(super) json: HashMap<String, Arc<Vec<u8>>>,
    pub(super) listings: HashMap<String, Vec<(PathBuf, TarType)>>,
    /// Where the last member of each name starts in the stream.
    pub(super) data_at: HashMap<String, u64>,
    pub(super) members: HashMap<String, Arc<Origin>>,
}

/// Pass one over a streamed image: every member is read as it goes by, and nothing is kept but
/// JSON documents (up to [`MAX_IMAGE_JSON`]) and the entry lists of tarballs.
pub(super) fn list_streamed_image(
    stream: &Arc<Origin>,
    budget: &Arc<Budget>,
) -> Result<StreamedImage, ArchiveError> {
    let mut out = StreamedImage::default();
    let mut json_bytes = 0u64;
    let mut tar = TarStream { origin: stream, reader: stream.open()?, pos: 0 };
    while let Some(e) = next_entry(&mut tar)? {
        let h = &e.header;
        let (TarType::File, Ok(Some(path))) = (h.kind, member_path(&h.name)) else {
            tar.skip(e.stored)?;
            continue;
        };
        let name = path.to_string_lossy().into_owned();
        let member = Arc::new(stream.range(e.data, h.size));
        // The last member of a name is the one extraction keeps; pass two reads only it.
        out.members.insert(name.clone(), member.clone());
        out.data_at.insert(name.clone(), e.data);
        out.json.remove(&name);
        out.listings.remove(&name);
        let mut live = MemberReader { tar: &mut tar, left: h.size };
        let mut head = Vec::new();
        (&mut live).take(TAR_BLOCK as u64).read_to_end(&mut head)?;
        let json = h.size <= MAX_IMAGE_JSON && matches!(head.first(), Some(b'{' | b'['));
        if json && json_bytes + h.size <= MAX_IMAGE_JSON {
            json_bytes += h.size;
            let mut data = head;
            live.read_to_end(&mut data)?;
            out.json.insert(name, Arc::new(data));
        } else if json {
            return Err(ArchiveError::ImageDocumentsTooLarge(MAX_IMAGE_JSON));
        } else if let Some((layer, reader)) = live_layer(member, head, &mut live, budget)? {
            let mut lt = TarStream { origin: &layer, reader, pos: 0 };
            let mut entries = Vec::new();
            // Entries before a failure still count (their whiteouts hide lower files, as on
            // disk); the failure itself is reported once, by pass two.
            while let Ok(Some(le)) = next_entry(&mut lt) {
                if let Ok(Some(p)) = member_path(&le.header.name) {
                    let kind = match extracted_kind(le.header.kind) {
                        TarType::Other(c) if c != b'V' => TarType::File,
                        k => k,
                    };
                    entries.push((p, kind));
                }
                if lt.skip(le.stored).is_err() {
                    break;
                }
            }
            drop(lt);
            out.listings.insert(name, entries);
        }
        let consumed = h.size - live.left;
        tar.skip(e.stored - consumed)?;
    }
    Ok(out)
}

/// Between the passes over a streamed image: the layer index from the listings pass one took,
/// and which layer each member name is (the upper one, for a name that appears twice).
fn index_streamed_layers(
    listed: &StreamedImage,
    layers: &Layers,
    ctx: &Ctx,
    gather: &Gather,
) -> (LayerIndex, HashMap<String, usize>) {
    // Layer names as the stream names them (OCI descriptors name blobs by digest).
    let member_name = |name: &str, origin: &Arc<Origin>| -> Option<String> {
        if listed.members.contains_key(name) {
            return Some(name.to_string());
        }
        listed.members.iter().find(|(_, o)| Arc::ptr_eq(o, origin)).map(|(n, _)| n.clone())
    };
    let mut index = LayerIndex::default();
    let mut top_of: HashMap<String, usize> = HashMap::new();
    for (i, (name, origin)) in layers.layers.iter().enumerate() {
        let Some(member) = member_name(name, origin) else { continue };
        match listed.listings.get(&member) {
            Some(entries) => {
                for (p, kind) in entries {
                    index.note(i, p, kind);
                }
            }
            None => gather.problem(ctx, Path::new(&member), "layer: not a tarball".into()),
        }
        top_of.insert(member, i);
    }
    (index, top_of)
}

/// Pass two of a streamed image: each layer walked as it streams by, showing only what the
/// final file system keeps.
fn walk_streamed_layers(
    stream: &Arc<Origin>,
    listed: &StreamedImage,
    top_of: &HashMap<String, usize>,
    index: &LayerIndex,
    ctx: &Ctx,
    gather: &Gather,
) -> Result<(), ArchiveError> {
    let mut tar = TarStream { origin: stream, reader: stream.open()?, pos: 0 };
    while let Some(e) = next_entry(&mut tar)? {
        let h = &e.header;
        let name = member_path(&h.name).ok().flatten().map(|p| p.to_string_lossy().into_owned());
        let last = name.as_ref().is_some_and(|n| listed.data_at.get(n) == Some(&e.data));
        let (TarType::File, Some(i), true) =
            (h.kind, name.as_ref().and_then(|n| top_of.get(n)).copied(), last)
        else {
            tar.skip(e.stored)?;
            continue;
        };
        let member = Arc::new(stream.range(e.data, h.size));
        let mut live = MemberReader { tar: &mut tar, left: h.size };
        let mut head = Vec::new();
        (&mut live).take(TAR_BLOCK as u64).read_to_end(&mut head)?;
        if let Some((layer, reader)) = live_layer(member, head, &mut live, &ctx.budget)? {
            let visible = |p: &Path| index.visible(i, p);
            if let Err(err) =
                walk_tar(&layer, Some(reader), layer_seq(i), ctx, gather, &visible, &mut |_, _| {})
            {
                gather.problem(ctx, Path::new(name.as_deref().unwrap_or_default()), format!("layer: {err}"));
            }
        }
        let consumed = h.size - live.left;
        tar.skip(e.stored - consumed)?;
    }
    Ok(())
}

/// Expands an image that arrives as one stream (a compressed `docker save` archive or OCI
/// tarball) in two passes: one to list every layer and read the manifests, one to read each
/// layer as it streams by, keeping only what the layer index says survives. `None` when the
/// stream holds no image after all.
pub(super) fn expand_streamed_image(stream: &Arc<Origin>, ctx: &Ctx) -> Option<Found> {
    // A stream that fails to list is read as a plain tarball, which reports why.
    let listed = list_streamed_image(stream, &ctx.budget).ok()?;
    let file = |name: &str| -> Option<Arc<Origin>> {
        match listed.json.get(name) {
            Some(data) => {
                Some(Arc::new(Origin::Memory { data: data.clone(), offset: 0, len: data.len() as u64 }))
            }
            None => listed.members.get(name).cloned(),
        }
    };
    let layers = match image_layers(&file) {
        Ok(Some(layers)) => layers,
        Ok(None) => return None,
        Err(_) if !listed.json.contains_key("index.json") && !listed.members.contains_key("oci-layout") => {
            return None
        }
        Err(e) => {
            let mut f = Found::default();
            f.problem(ctx.base.clone(), format!("container image: {e}"));
            return Some(f);
        }
    };
    let gather = Gather::default();
    let (index, top_of) = index_streamed_layers(&listed, &layers, ctx, &gather);
    let second = walk_streamed_layers(stream, &listed, &top_of, &index, ctx, &gather);
    if let Err(e) = second {
        gather.problem(ctx, Path::new(""), e.to_string());
    }
    Some(gather.finish(ctx, image_record(ctx, layers.format, layers.layers.len())))
}

/// When a tar on disk is a `docker save` archive or an OCI layout, expands it as an image.
pub fn expand_if_image(origin: &Arc<Origin>, ctx: &Ctx) -> Option<Found> {
    origin.random()?;
    let listing = list_tar(origin).ok()?;
    if !listing.contains_key("manifest.json") && !listing.contains_key("oci-layout") {
        return None;
    }
    let file = |name: &str| listing.get(name).cloned();
    match image_layers(&file) {
        Ok(Some(layers)) => Some(expand_image(layers, ctx)),
        Ok(None) => None,
        // A `manifest.json` that is no image manifest: a plain tarball that happens to hold one.
        Err(_) if !listing.contains_key("oci-layout") => None,
        Err(e) => {
            let mut f = Found::default();
            f.problem(ctx.base.clone(), format!("container image: {e}"));
            Some(f)
        }
    }
}

/// True for a directory that is an OCI image layout (`oci-layout` and `index.json` in it).
pub fn is_layout_dir(dir: &Path) -> bool {
    dir.join("oci-layout").is_file() && dir.join("index.json").is_file()
}

/// When a directory is an OCI image layout, expands it as an image.
pub fn expand_layout_dir(dir: &Path, ctx: &Ctx) -> Option<Found> {
    if !is_layout_dir(dir) {
        return None;
    }
    let file = |name: &str| -> Option<Arc<Origin>> {
        let src = crate::source::file::open_regular(&dir.join(name)).ok()?;
        Some(Arc::new(Origin::file(Arc::new(src))))
    };
    let found = expand_layout(&file, ctx)?;
    Some(settle(&ctx.budget, found, &ctx.base))
}

/// The total size of an OCI layout's blobs: what its inflation budget is measured against.
pub fn layout_size(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir.join("blobs"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

pub(super) fn expand_layout(file: &dyn Fn(&str) -> Option<Arc<Origin>>, ctx: &Ctx) -> Option<Found> {
    Some(match image_layers(&file) {
        Ok(Some(layers)) => expand_image(layers, ctx),
        Ok(None) => return None,
        Err(e) => {
            let mut f = Found::default();
            f.problem(ctx.base.clone(), format!("OCI image layout: {e}"));
            f
        }
    })
}
