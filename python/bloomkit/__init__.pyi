# Type stubs of the bloomkit package.
from typing import Iterable, Literal, Optional, Union

from ._bloomkit import (
    LIBRARY_VERSION as LIBRARY_VERSION,
    AlreadyExistsError as AlreadyExistsError,
    Bitmap as Bitmap,
    CorruptError as CorruptError,
    Error as Error,
    FileError as FileError,
    Filter as Filter,
    FullError as FullError,
    IncompatibleError as IncompatibleError,
    InvalidArgumentError as InvalidArgumentError,
    KindError as KindError,
    NoSpaceError as NoSpaceError,
    NotAFileError as NotAFileError,
    NotFoundError as NotFoundError,
    OutOfMemoryError as OutOfMemoryError,
    ReadOnlyError as ReadOnlyError,
    StaticError as StaticError,
    StrPath,
    VersionError as VersionError,
    normalize as normalize,
    peek_kind as peek_kind,
    plan as plan,
    shard_of as shard_of,
)

__version__: str
KINDS: tuple[str, ...]

def file_kind(path: StrPath) -> str: ...
def build(
    keys: Iterable[Union[bytes, str]],
    fpr: float = 0.0,
    kind: Optional[Literal["fuse8", "fuse16", "fuse32"]] = None,
    normalize: Optional[Literal["url", "email", "none"]] = None,
    memory: Optional[int] = None,
    tmpdir: Optional[StrPath] = None,
    hash: Optional[str] = None,
    seed: Optional[int] = None,
) -> Filter: ...
def load(
    path: StrPath, normalize: Optional[Literal["url", "email", "none"]] = None
) -> Union[Filter, Bitmap]: ...
def open(
    path: StrPath,
    mmap: bool = True,
    writable: bool = False,
    normalize: Optional[Literal["url", "email", "none"]] = None,
) -> Union[Filter, Bitmap]: ...
