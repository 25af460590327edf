"""What detectors search with: the search run, Hamming/cosine kernels, multi-index hashing, retrieval."""
