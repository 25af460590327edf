"""Freed memory kept for reuse in the processes of a check (glibc's ``mallopt``).

The searches make short-lived arrays of a few MB by the thousand: a Hamming matrix per
same-scene pair (four 1.2 MB passes), the fine verdict's running sums per chunk of pairs.
glibc's allocator gives such blocks back to the kernel as soon as they are freed (``mmap``
above its threshold, the heap's top trimmed above twice that), so each new one is faulted in
again page by page: on ``webcam`` of ``benchmarks/field.py`` (355 photos, a cold ``check -j
2``) 740,000 page faults and 2.8 s of system time beside 18 s of user time, against 130,000
and 0.7-1.2 s with these settings (peak RSS 205 MB to 245 MB).  The arithmetic is unchanged:
only where the allocator finds memory.

Only in processes of our own: the ``leakcheck`` command and the check's workers; a check
run inside someone's pytest process leaves that process's allocator as it was.
"""

from __future__ import annotations

import ctypes
import sys

#: ``mallopt`` parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: Blocks below this come from the heap, not their own ``mmap``: glibc's own ceiling for its
#: adaptive threshold (32 MB on 64-bit), fixed there from the start.
MMAP_THRESHOLD = 32 << 20
#: Free memory at the heap's top kept up to this: a few rounds of the searches' largest temporaries.
#: 256 MB faulted no less on ``webcam``; the peak RSS rises by about this much at most.
TRIM_THRESHOLD = 64 << 20


def keep_freed_memory() -> bool:
    """Set the thresholds for this process (and those it forks later); whether they were set.

    False where the C library is not glibc (macOS, Windows, musl has no such tuning): nothing changes.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: musl's mallopt accepts and ignores these
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
