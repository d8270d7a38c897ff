//! Files on disk: opened without following links and without blocking (a FIFO swapped in after
//! the walk cannot hang the scan), checked to be regular, and read only where a parser asks,
//! through positioned reads.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use crate::parse::{check_range, ByteSource, ParseError};

/// A file read through positioned reads: the scanner's [`ByteSource`].
pub struct FileSource {
    file: File,
    pub len: u64,
    /// Which file this is, whatever name opened it, and as it was when opened.
    pub id: FileId,
}

/// A file's identity and state: device, inode, size, and modification and change times (s, ns).
/// The times tell a file from a later one given a freed inode number: a new file, or a link
/// count that changed, sets a new change time.
pub type FileId = (u64, u64, u64, i64, i64, i64, i64);

/// Who this process reads as: its effective user and group, its supplementary groups, its
/// effective capabilities (root without `CAP_DAC_OVERRIDE` opens less) and its user namespace's
/// maps (user 0 inside one may be anyone outside). What a scan may open depends on them, so a
/// rescan key and a snapshot's identities hold them (`reuse`).
pub fn credentials() -> String {
    let mut groups: Vec<u32> =
        rustix::process::getgroups().unwrap_or_default().iter().map(|g| g.as_raw()).collect();
    groups.sort_unstable();
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap_or("").trim();
    let map = |name: &str| {
        let text = std::fs::read_to_string(format!("/proc/self/{name}")).unwrap_or_default();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    format!(
        "euid={} egid={} groups={groups:?} caps={caps} uid_map=[{}] gid_map=[{}]",
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
        map("uid_map"),
        map("gid_map"),
    )
}

pub fn file_id(m: &std::fs::Metadata) -> FileId {
    (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec())
}

impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    /// `pread` takes its own offset: any number of threads may read at once.
    fn shared(&self) -> Option<crate::parse::Shared<'_>> {
        Some(crate::parse::Shared::whole(self))
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>, ParseError> {
        check_range(self.len, offset, len, "file data")?;
        // Every read lands in fresh spare capacity, never zero-filled first: zeroing was a
        // quarter of a whole scan's instructions (callgrind), for bytes pread overwrites anyway.
        let mut buf: Vec<u8> = Vec::with_capacity(len);
        while buf.len() < len {
            let at = offset + buf.len() as u64;
            match rustix::io::pread(&self.file, rustix::buffer::spare_capacity(&mut buf), at) {
                Ok(0) => {
                    return Err(ParseError::Truncated {
                        what: "file (it shrank while being read)",
                        offset: at,
                    })
                }
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(ParseError::Io { offset: at, detail: std::io::Error::from(e).to_string() })
                }
            }
        }
        // pread fills all the spare capacity, which may be more than was asked for.
        buf.truncate(len);
        Ok(Cow::Owned(buf))
    }

    fn will_need(&self, offset: u64, len: u64) {
        // No length would mean "to the end of the file". The result is ignored: advice that
        // does not take changes nothing but speed.
        let Some(len) = std::num::NonZeroU64::new(len) else { return };
        let _ = rustix::fs::fadvise(&self.file, offset, Some(len), rustix::fs::Advice::WillNeed);
    }
}

impl FileSource {
    /// Its bytes from the start, up to `cap + 1` of them (more than `cap` says the file is
    /// larger), read to their end whatever size the file claims (`/proc` files claim 0).
    pub fn read_to_cap(&self, cap: u64) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut out = Vec::new();
        (&self.file).take(cap.saturating_add(1)).read_to_end(&mut out)?;
        Ok(out)
    }

    /// Turns the kernel's readahead off for this file. A host library's facts are headers
    /// scattered through a `.hip_fatbin` of up to gigabytes, a few KiB every few dozen KiB:
    /// readahead fetched 128 KiB around each, four times the bytes on a cold cache, for no gain
    /// in time. Its sections searched whole are read in 4 MiB pieces, which need no readahead.
    /// (Code-object files keep readahead: their notes are one long run read in order, asked
    /// for ahead by [`ByteSource::will_need`]; without readahead their cold scan was slower.)
    pub fn read_scattered(&self) {
        // The result is ignored: advice that does not take changes nothing but speed.
        let _ = rustix::fs::fadvise(&self.file, 0, None, rustix::fs::Advice::Random);
    }
}

/// Opens a candidate for reading: no link following, no blocking, regular files only.
pub fn open_regular(path: &std::path::Path) -> std::io::Result<FileSource> {
    open_file(path, false)
}

/// [`open_regular`], following a last symbolic link when `follow` (a link the walk followed at
/// the user's request).
pub fn open_file(path: &std::path::Path, follow: bool) -> std::io::Result<FileSource> {
    let flags = if follow { 0 } else { libc::O_NOFOLLOW };
    let file =
        OpenOptions::new().read(true).custom_flags(flags | libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("no longer a regular file"));
    }
    Ok(FileSource { file, len: meta.len(), id: file_id(&meta) })
}

/// A small file read whole (a configuration file): at most `max` bytes, else an error. A last
/// link is followed; a FIFO or device is refused, never blocked on.
pub fn read_small(path: &std::path::Path, max: u64) -> std::io::Result<Vec<u8>> {
    let out = open_file(path, true)?.read_to_cap(max)?;
    if out.len() as u64 > max {
        return Err(std::io::Error::other(format!("larger than {max} bytes")));
    }
    Ok(out)
}
