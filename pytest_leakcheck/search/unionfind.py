"""Union-find over integer rows: which rows a set of links joins into one web.

Here, below the detectors, so that a detector (same-scene's budget) and the pipeline's clusters
share one; it keeps the lower root, which callers rely on to name a web by its smallest row."""

from __future__ import annotations


class UnionFind:
    def __init__(self) -> None:
        self.parent: dict[int, int] = {}
        self.size: dict[int, int] = {}

    def find(self, x: int) -> int:
        if x not in self.parent:
            self.parent[x], self.size[x] = x, 1
            return x
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            keep, gone = min(ra, rb), max(ra, rb)
            self.parent[gone] = keep
            self.size[keep] += self.size.pop(gone)

    def webs(self) -> dict[int, list[int]]:
        """Every row seen, by its root, in ascending order."""
        out: dict[int, list[int]] = {}
        for x in sorted(self.parent):
            out.setdefault(self.find(x), []).append(x)
        return out
