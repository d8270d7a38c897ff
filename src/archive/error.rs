//! What stops the reading of an archive, a layer or a member: one typed error for the tar walk,
//! zip's directory, images and Debian packages. Its text is the problem a scan records for the
//! archive (or the member it names); the members read before it stay gathered.

use std::io;
use std::path::PathBuf;

use crate::parse::ParseError;

/// Why an archive (or what is inside it) could not be read further.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// The archive's bytes could not be opened or read from their start.
    #[error("cannot read: {0}")]
    Open(#[source] io::Error),
    /// Reading the bytes failed part way.
    #[error("{0}")]
    Read(#[from] io::Error),
    /// A tar header (or the GNU long name or PAX record behind it) could not be read.
    #[error("tar header at {at:#x}: {source}")]
    HeaderRead { at: u64, source: io::Error },
    /// The archive ends inside a tar header.
    #[error("archive truncated in a tar header at {at:#x}")]
    HeaderTruncated { at: u64 },
    /// A tar header, an ar header or a PAX record that is not well formed.
    #[error("{0}")]
    Header(#[from] ParseError),
    /// A PAX extended header that is not well formed.
    #[error("tar PAX header at {at:#x}: {source}")]
    Pax { at: u64, source: ParseError },
    /// An old GNU sparse header's extension blocks run past the archive or past the cap.
    #[error("GNU sparse header at {at:#x}: extension blocks truncated or too many")]
    SparseExtensions { at: u64 },
    /// A member size that does not fit the stream's offsets.
    #[error("tar header at {at:#x}: member size {size} out of range")]
    SizeOutOfRange { at: u64, size: u64 },
    /// A member claims more bytes than the archive has left.
    #[error("archive truncated: the member at {at:#x} claims {size} bytes, {left} remain")]
    MemberPastEnd { at: u64, size: u64, left: u64 },
    /// The archive ends inside a member's data.
    #[error("archive truncated inside {}", .0.display())]
    TruncatedInside(PathBuf),
    /// A member's data could not be read.
    #[error("{}: {source}", path.display())]
    Member { path: PathBuf, source: io::Error },
    /// A member read for its metadata is shorter than its header says.
    #[error("{}: truncated", .0.display())]
    ShortMember(PathBuf),
    /// A member inflates to fewer bytes than its directory entry declares.
    #[error("member inflates to {got} bytes, less than its declared {declared}")]
    ShortInflate { got: u64, declared: u64 },
    /// The member looked for is not in the archive.
    #[error("no {} in it", .0.display())]
    NotInArchive(PathBuf),
    /// A zip archive on a stream that cannot be read at any offset.
    #[error("zip archive without random access")]
    ZipNotRandom,
    /// zip's central directory could not be read (`truncated`: none at the end of the file).
    #[error("zip: {why}{}", if *truncated { ": no central directory at its end: truncated, the download looks incomplete" } else { "" })]
    ZipDirectory { why: String, truncated: bool },
    /// An image's JSON document (`manifest.json`, `index.json`, a manifest blob) could not be
    /// read or parsed.
    #[error("{name}: {why}")]
    ImageDocument { name: String, why: String },
    /// An image's JSON documents are larger than gfxscan reads.
    #[error("image JSON documents over {0} bytes in all")]
    ImageDocumentsTooLarge(u64),
    /// An image layout that does not say what gfxscan needs (fixed words: which document and
    /// what it lacks).
    #[error("{0}")]
    ImageLayout(&'static str),
    /// `manifest.json` lists several images.
    #[error("manifest.json lists {0} images; gfxscan reads archives of one")]
    ImageCount(usize),
    /// A layer `manifest.json` names that the archive does not hold.
    #[error("manifest.json names {0}, which is missing")]
    LayerMissing(String),
    /// A digest that is not `algorithm:hex`.
    #[error("image digest {0:?}")]
    BadDigest(String),
    /// A blob an OCI index or manifest names that the layout does not hold.
    #[error("image blob {0} is missing")]
    BlobMissing(String),
    /// An image layer that is neither a tarball nor a compressed one.
    #[error("not a tarball")]
    NotATarball,
    /// An OCI index that points at indexes more deeply than gfxscan follows.
    #[error("OCI index nested too deep")]
    IndexTooDeep,
    /// A Debian package whose `ar` container is not well formed.
    #[error("Debian package: {0}")]
    DebContainer(ParseError),
    /// A Debian package without its data.
    #[error("Debian package without a data.tar member")]
    DebWithoutData,
    /// A Debian package whose data member is not a tar stream gfxscan reads.
    #[error("Debian package: {0} is neither tar nor gzip, zstd or xz")]
    DebDataFormat(String),
}
