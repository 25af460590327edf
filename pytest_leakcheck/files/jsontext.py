"""JSON read from a pull request, with its nesting bounded.

A COCO file or a line of ``metadata.jsonl`` nested 200,000 levels deep makes
``json.loads`` raise ``RecursionError``, which no reader expected (exit 3).
The C parser checks its depth against the interpreter's recursion limit
(1,000 by default) at every level, so the bound costs nothing on an ordinary
file, where a separate scan for depth would read a large COCO file twice;
:func:`loads` turns that error into a ``json.JSONDecodeError`` naming the
problem, which every reader already reports as "not valid JSON" (exit 2).
Real COCO files nest four or five levels.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def loads(text: str) -> Any:
    """``json.loads(text)``; a ``json.JSONDecodeError`` when it nests too deep to parse."""
    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError(f"nested too deep (over {sys.getrecursionlimit()} levels)", text, 0) from None
