"""bloomkit: Bloom filters and bitmaps for "have I seen this before?".

A binding of the bloomkit C library. Files are the very files the
`bloomkit` command-line tool reads and writes.

    >>> import bloomkit
    >>> seen = bloomkit.Filter(1_000_000, 0.001)
    >>> seen.add("https://example.org/")
    True
    >>> "https://example.org/" in seen
    True
    >>> seen.add_many(["a", "b", "a"])
    2

Filter kinds: by default the library picks one by the error rate ('split'
from 0.4% to 2%, 'blocked' at other rates down to 0.1%, 'blocked2' below);
or 'classic', 'precise', 'counting' (remove), 'cuckoo' (remove and count
at a fifth of counting's memory; grows), 'scalable' (grows) and 'window'
(forgets old keys); static sets given whole: 'fuse8', 'fuse16' and
'fuse32' (bloomkit.build, a fifth to a quarter less memory, never added
to). Bitmap is
an exact set of integers. Every library
error is a subclass of bloomkit.Error (and of the matching built-in
exception: ValueError, OSError, ...).

Submodules: bloomkit.scrapy (a Scrapy dupefilter) and bloomkit.redis (one
filter sharded over a Redis Cluster); each imports its framework only when
imported itself.
"""
import builtins

from ._bloomkit import (
    KINDS,
    AlreadyExistsError,
    Bitmap,
    CorruptError,
    Error,
    FileError,
    Filter,
    FullError,
    IncompatibleError,
    InvalidArgumentError,
    KindError,
    LIBRARY_VERSION,
    NoSpaceError,
    NotAFileError,
    NotFoundError,
    OutOfMemoryError,
    ReadOnlyError,
    StaticError,
    VersionError,
    normalize,
    peek_kind,
    plan,
    shard_of,
)

__version__ = "0.1.0"

# KINDS: every kind a program makes filters of, in the library's kind
# order, from its registry (a new kind shows there by itself).

# A file's kind is in its first 128 bytes plus one 96-byte table entry per
# part; this many bytes cover every file the library writes in practice,
# and peek_kind only checks what it was given.
_HEADER_PEEK = 4096


def file_kind(path):
    """The kind stored in a bloomkit file ('blocked', ..., 'bitmap') without
    loading it. CorruptError if it is not a bloomkit file."""
    with builtins.open(path, "rb") as f:
        return peek_kind(f.read(_HEADER_PEEK))


def load(path, normalize=None):
    """Reads a filter or bitmap file into memory and validates it (checksums
    included). Returns a Filter or a Bitmap, whichever the file holds. A
    filter's keys are spelled in the form the file records, as the bloomkit
    tool does ('url', 'email': see Filter); normalize= must agree with it."""
    if file_kind(path) == "bitmap":
        if normalize is not None:
            raise InvalidArgumentError("normalize= is for filters, not bitmaps")
        return Bitmap.load(path)
    return Filter.load(path, normalize=normalize)


def build(keys, fpr=0.0, kind=None, normalize=None, memory=None, tmpdir=None, hash=None,
          seed=None):  # noqa: A002 - the library's option names
    """A static filter of an iterable of keys (bytes or str) given whole,
    such as a list of 100 million known spam addresses: 'fuse8' (about 9
    bits a key, false-positive rate 2^-8 = 0.39%), 'fuse16' (18 bits,
    2^-16) or 'fuse32' (36 bits, 2^-32), a fifth to a quarter less memory
    than a Bloom filter at the same rate.
    kind=None picks by fpr. It answers `in`, contains_many, info, and saves
    and maps like every filter; add/remove/clear raise StaticError (build
    it again when the set changes). memory= caps the build in bytes; see
    Filter.build."""
    return Filter.build(keys, fpr, kind=kind, hash=hash, seed=seed, normalize=normalize,
                        memory=memory, tmpdir=tmpdir)


def open(path, mmap=True, writable=False, normalize=None):  # noqa: A001 - the package's verb
    """Opens a filter file. mmap=True maps it (instant for any size; the
    payload checksum is checked only by verify()); writable=True updates the
    file in place (sync() or close() writes the checksums). mmap=False reads
    it like load(). Keys are spelled in the form the file records, as the
    bloomkit tool does; normalize= must agree with it. Use the result as a
    context manager to unmap promptly.

    A bitmap file opens as Bitmap.load() reads it: a large one page by
    page as values touch it (a 2 GB bitmap opens in milliseconds); its
    save() to the same file writes back the pages that changed. It is
    never mapped: writable=True is refused for it."""
    try:
        kind = file_kind(path)
    except (OSError, Error):
        kind = None  # Filter.open says what is wrong with it, as before
    if kind == "bitmap":
        if writable:
            raise KindError("a bitmap file is not mapped for writing: Bitmap.load() it, "
                            "then save() writes back the pages that changed (%s)" % (path,))
        if normalize is not None:
            raise InvalidArgumentError("normalize= is for filters, not bitmaps")
        return Bitmap.load(path)
    if not mmap:
        if writable:
            raise ValueError("writable=True needs mmap=True (or load() and save())")
        return load(path, normalize=normalize)
    return Filter.open(path, writable=writable, normalize=normalize)


__all__ = [
    "AlreadyExistsError", "Bitmap", "CorruptError", "Error", "FileError", "Filter", "FullError",
    "IncompatibleError", "InvalidArgumentError", "KindError", "KINDS",
    "LIBRARY_VERSION", "NoSpaceError", "NotAFileError", "NotFoundError", "OutOfMemoryError",
    "ReadOnlyError", "StaticError", "VersionError", "build", "file_kind", "load", "normalize",
    "open", "peek_kind",
    "plan", "shard_of",
]
