//! Files on disk: opened without following links and without blocking (a FIFO swapped in after
//! the walk cannot hang the scan), checked to be regular, and read only where a parser asks,
//! through positioned reads.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
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
        let mut done = 0usize;
        while done < len {
            let at = offset + done as u64;
            let Ok(at) = libc::off_t::try_from(at) else {
                return Err(ParseError::Io { offset: at, detail: "offset too large".into() });
            };
            // SAFETY: `buf` owns `len` bytes of capacity; pread writes at most `len - done`
            // bytes starting `done` bytes in, all inside that allocation, and nothing reads
            // them until the loop has filled all `len` and `set_len` below publishes them.
            let n = unsafe {
                libc::pread(self.file.as_raw_fd(), buf.as_mut_ptr().add(done).cast(), len - done, at)
            };
            match n {
                n if n > 0 => done += n as usize,
                0 => {
                    return Err(ParseError::Truncated {
                        what: "file (it shrank while being read)",
                        offset: at as u64,
                    })
                }
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(ParseError::Io { offset: at as u64, detail: e.to_string() });
                    }
                }
            }
        }
        // SAFETY: the loop above initialised exactly `len` bytes.
        unsafe { buf.set_len(len) };
        Ok(Cow::Owned(buf))
    }

    fn will_need(&self, offset: u64, len: u64) {
        // A length of 0 would mean "to the end of the file".
        let (Ok(offset), Ok(len @ 1..)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
            return;
        };
        // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open. Its
        // result is ignored: advice that does not take changes nothing but speed.
        unsafe { libc::posix_fadvise(self.file.as_raw_fd(), offset, len, libc::POSIX_FADV_WILLNEED) };
    }
}

impl FileSource {
    /// Turns the kernel's readahead off for this file. A host library's facts are headers
    /// scattered through a `.hip_fatbin` of up to gigabytes, a few KiB every few dozen KiB:
    /// readahead fetched 128 KiB around each, four times the bytes on a cold cache, for no gain
    /// in time. Its sections searched whole are read in 4 MiB pieces, which need no readahead.
    /// (Code-object files keep readahead: their notes are one long run read in order, asked
    /// for ahead by [`ByteSource::will_need`]; without readahead their cold scan was slower.)
    pub fn read_scattered(&self) {
        // SAFETY: posix_fadvise only reads its integer arguments; the descriptor is open.
        // Its result is ignored: advice that does not take changes nothing but speed.
        unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
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
