"""What detectors search with: the search run, Hamming/cosine kernels, multi-index hashing, retrieval."""

#: Retrieval backends (retrieval.py), here apart from their numpy code: a policy names one
#: (``thumbnail: {search: faiss}``), and loading a policy imports no numpy.
BACKENDS = ("exact", "faiss", "lists")
