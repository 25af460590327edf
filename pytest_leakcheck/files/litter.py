"""What archivers leave beside a dataset that is never data: macOS's resource forks.

A zip made on a Mac and unpacked elsewhere holds, beside ``dataset/``, a
``__MACOSX/`` tree with one AppleDouble file per image, named like it with a
``._`` prefix (``__MACOSX/dataset/train/._0001.png``), and copying to a FAT or
network drive leaves the same ``._0001.png`` beside the image itself.  They are
a few hundred bytes of Finder metadata, never pictures: listed as images, each
was an unreadable-image error (FUNSD as a repository ships it: 199 of them, see
docs/field.md).  A file is taken as such only when its first bytes say so, so
an image that merely has a ``._`` name is still checked.
"""

from __future__ import annotations

#: The folder a macOS zip keeps its resource forks in; ``init`` never proposes it as a split.
ARCHIVE_FOLDERS = frozenset({"__MACOSX"})
#: An AppleDouble file's name starts so (the name of the file it describes follows).
FORK_PREFIX = "._"
#: AppleDouble's magic number (RFC 1740), the first four bytes of every such file.
APPLEDOUBLE_MAGIC = b"\x00\x05\x16\x07"


def resource_fork(name: str, path: str) -> bool:
    """Whether the file ``name`` at ``path`` is an AppleDouble resource fork, not an image.

    Only ``._`` names are opened (four bytes): the walk of a dataset stays one
    ``stat`` per file.  A file that cannot be read is not a fork: the check
    names it as it names any other file it cannot read.
    """
    if not name.startswith(FORK_PREFIX):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(APPLEDOUBLE_MAGIC)) == APPLEDOUBLE_MAGIC
    except OSError:
        return False
