//! Zip archives and wheels: the central directory read by the zip crate, members read in place
//! (stored) or through gfxscan's metered deflate decoder.

use super::ArchiveError;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{visit, Bytes, Ctx, Gather, IN_MEMORY};
use crate::inspect::Found;
use crate::model::{ArchiveRecord, Package};
use crate::parse::archive::{link_escapes, member_path};
use crate::parse::package::{parse_wheel_metadata, MAX_METADATA};
use crate::source::origin::{Origin, SourceReader};
use crate::vocab::codec::Codec;

pub(super) fn expand_zip(
    origin: &Arc<Origin>,
    ctx: &Ctx,
    record: ArchiveRecord,
) -> Result<Found, ArchiveError> {
    let len = origin.known_len().unwrap_or(0);
    let src = origin.random().ok_or(ArchiveError::ZipNotRandom)?;
    // A zip's directory is at its end: without it the file was cut short.
    let mut zip = ::zip::ZipArchive::new(SourceReader::new(src, len)).map_err(|e| {
        let why = e.to_string();
        ArchiveError::ZipDirectory { truncated: why.contains("EOCD"), why }
    })?;
    let gather = Gather::default();
    let mut members = Vec::new();
    for i in 0..zip.len() {
        let entry = match zip.by_index_raw(i) {
            Ok(e) => e,
            Err(e) => {
                gather.problem(ctx, Path::new(""), format!("zip entry {i}: {e}"));
                continue;
            }
        };
        let path = match member_path(entry.name_raw()) {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(why) => {
                gather.problem(ctx, &PathBuf::from(OsStr::from_bytes(entry.name_raw())), why.to_string());
                continue;
            }
        };
        if entry.is_dir() {
            continue;
        }
        let Some(start) = entry.data_start() else {
            gather.problem(ctx, &path, "zip entry without a local header".into());
            continue;
        };
        let (compressed, size, method) = (entry.compressed_size(), entry.size(), entry.compression());
        if start.checked_add(compressed).is_none_or(|end| end > len) {
            gather.problem(ctx, &path, "zip archive truncated: the member's data runs past its end".into());
            continue;
        }
        gather.claim(i as u64, &path);
        let raw = Arc::new(origin.range(start, compressed));
        let member = match method {
            m if m == ::zip::CompressionMethod::STORE && compressed == size => raw.range(0, size),
            m if m == ::zip::CompressionMethod::DEFLATE => {
                Origin::decoded(raw, Codec::Deflate, Some(size), &ctx.budget)
            }
            other => {
                gather.problem(ctx, &path, format!("zip compression {other}: not supported, not read"));
                continue;
            }
        };
        if entry.is_symlink() {
            drop(entry);
            let mut target = Vec::new();
            match member.open().and_then(|r| r.take(4096).read_to_end(&mut target)) {
                Ok(_) => {
                    if link_escapes(&path, &target) {
                        gather.problem(
                            ctx,
                            &path,
                            format!(
                                "symbolic link to {}: it leaves the archive's tree",
                                String::from_utf8_lossy(&target)
                            ),
                        );
                    }
                    gather.link(i as u64, &path, &target)
                }
                Err(e) => gather.problem(ctx, &path, format!("symbolic link: {e}")),
            }
            continue;
        }
        members.push((i as u64, path, Arc::new(member)));
    }
    drop(zip);
    let mut record = record;
    match wheel_package(&members) {
        Some(Ok(p)) => record.package = Some(p),
        Some(Err((at, why))) => gather.problem(ctx, at, format!("no package identity: {why}")),
        None => {}
    }
    use rayon::prelude::*;
    members.par_iter().for_each(|(seq, path, member)| {
        let bytes = if member.random().is_some() { Ok(Bytes::InPlace) } else { read_member(member) };
        match bytes {
            Ok(bytes) => gather.add(*seq, path.clone(), visit(member, bytes, path, ctx)),
            Err(e) => gather.problem(ctx, path, e.to_string()),
        }
    });
    Ok(gather.finish(ctx, record))
}

/// A wheel's identity from its one `<name>-<version>.dist-info/METADATA` (Python's binary
/// distribution format), read up to [`MAX_METADATA`] bytes; `None` for a zip without one (not
/// a wheel); or where it went wrong and why.
fn wheel_package(members: &[(u64, PathBuf, Arc<Origin>)]) -> Option<Result<Package, (&Path, String)>> {
    let is_metadata = |p: &Path| {
        let parts: Vec<_> = p.components().collect();
        matches!(parts.as_slice(), [dir, file]
            if dir.as_os_str().as_bytes().ends_with(b".dist-info") && file.as_os_str() == "METADATA")
    };
    let found: Vec<&(u64, PathBuf, Arc<Origin>)> =
        members.iter().filter(|(_, p, _)| is_metadata(p)).collect();
    let (_, path, origin) = found.first()?;
    if found.len() > 1 {
        return Some(Err((
            path,
            format!("{} .dist-info/METADATA files: which is the wheel's is unclear", found.len()),
        )));
    }
    let mut data = Vec::new();
    let read = origin.open().and_then(|r| r.take(MAX_METADATA).read_to_end(&mut data));
    Some(match read {
        Ok(_) => parse_wheel_metadata(&data).map_err(|why| (path.as_path(), why)),
        Err(e) => Err((path.as_path(), e.to_string())),
    })
}

/// A small compressed member read into memory (checked to inflate to exactly its declared
/// size); a large one is left to stream.
pub(super) fn read_member(member: &Origin) -> Result<Bytes<'_>, ArchiveError> {
    match member.known_len() {
        Some(n) if n <= IN_MEMORY => {
            let mut data = Vec::with_capacity(n as usize);
            // One byte more than declared, so that a member inflating past its size is caught.
            member.open().and_then(|r| r.take(n + 1).read_to_end(&mut data))?;
            if (data.len() as u64) < n {
                return Err(ArchiveError::ShortInflate { got: data.len() as u64, declared: n });
            }
            Ok(Bytes::Memory(Arc::new(data)))
        }
        _ => Ok(Bytes::InPlace),
    }
}
