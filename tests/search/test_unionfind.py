"""The one union-find the pipeline's clusters and same-scene's budget share."""

from pytest_leakcheck.search.unionfind import UnionFind


def test_a_web_is_named_by_its_smallest_row_and_counts_its_rows():
    uf = UnionFind()
    for a, b in [(5, 3), (3, 9), (7, 8)]:
        uf.union(a, b)
    assert uf.find(9) == 3 and uf.find(8) == 7
    assert uf.size[3] == 3 and uf.size[7] == 2
    assert uf.webs() == {3: [3, 5, 9], 7: [7, 8]}


def test_a_row_only_asked_is_a_web_of_one():
    uf = UnionFind()
    assert uf.find(4) == 4
    assert uf.webs() == {4: [4]}
