//! zstd frame headers (RFC 8878 §3.1.1.1): what a frame declares before any of it is
//! inflated — its window, its content size, its checksum.

/// What a zstd frame header says (RFC 8878 §3.1.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZstdFrameHeader {
    /// The window the descriptor states (none for a single-segment frame).
    pub window: Option<u64>,
    /// The content size, when the header states it.
    pub content_size: Option<u64>,
    /// Bytes of the header: magic, descriptor, window, dictionary ID, content size.
    pub len: u64,
    /// A 4-byte content checksum follows the last block.
    pub checksum: bool,
}

/// The zstd frame header at the start of `head`; `None` when `head` is not one (or is cut).
pub fn zstd_frame_header(head: &[u8]) -> Option<ZstdFrameHeader> {
    let rest = head.strip_prefix(&[0x28, 0xb5, 0x2f, 0xfd][..])?;
    let (&fhd, rest) = rest.split_first()?;
    let single = fhd & 0x20 != 0;
    let (window, rest) = match single {
        true => (None, rest),
        false => {
            let (&wd, rest) = rest.split_first()?;
            let base = 1u64 << (10 + u32::from(wd >> 3));
            (Some(base + (base / 8) * u64::from(wd & 7)), rest)
        }
    };
    let dict = [0, 1, 2, 4][usize::from(fhd & 3)];
    let rest = rest.get(dict..)?;
    let (fcs_len, content_size) = match (fhd >> 6, single) {
        (0, false) => (0, None),
        (0, true) => (1, rest.first().map(|&b| u64::from(b))),
        (1, _) => (2, rest.get(..2).map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])) + 256)),
        (2, _) => {
            (4, rest.get(..4).and_then(|b| b.try_into().ok()).map(|b| u64::from(u32::from_le_bytes(b))))
        }
        _ => (8, rest.get(..8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes)),
    };
    if fcs_len > 0 && content_size.is_none() {
        return None;
    }
    let len = 5 + u64::from(!single) + dict as u64 + fcs_len;
    Some(ZstdFrameHeader { window, content_size, len, checksum: fhd & 0x04 != 0 })
}

/// The memory a zstd frame's decoder holds: its window, bounded by the frame's content size
/// when the header states it (RFC 8878 §3.1.1.1; zstd sizes its buffer as the lesser). `None`
/// when `head` is not the start of a zstd frame.
pub fn zstd_window(head: &[u8]) -> Option<u64> {
    let h = zstd_frame_header(head)?;
    match (h.window, h.content_size) {
        (Some(w), Some(c)) => Some(w.min(c)),
        (Some(w), None) => Some(w),
        (None, c) => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_windows_are_read_from_the_frame_header_as_zstd_writes_it() {
        // Single segment: the content size is the window.
        let small = zstd::bulk::compress(&vec![7u8; 100_000], 3).expect("compress");
        assert_eq!(zstd_window(&small), Some(100_000));
        // A streamed frame without a content size: the window descriptor.
        let mut enc = zstd::stream::Encoder::new(Vec::new(), 19).expect("encoder");
        enc.include_contentsize(false).expect("flag");
        std::io::Write::write_all(&mut enc, &vec![1u8; 3 << 20]).expect("write");
        let streamed = enc.finish().expect("finish");
        let w = zstd_window(&streamed).expect("a window");
        assert!(w.is_power_of_two() || w.is_multiple_of(1024), "{w}");
        assert!(w >= 1 << 20, "{w}");
        assert_eq!(zstd_window(b"not zstd"), None);
        assert_eq!(zstd_window(&[0x28, 0xb5, 0x2f, 0xfd]), None, "a header cut short says nothing");
        // Fuzz finding: an 8-byte content size of u64::MAX, single segment.
        let mut huge = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(zstd_window(&huge), Some(u64::MAX));
    }
}
