# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Measuring candidates: profiling, the agreement judge, selection, the cache, the load probe."""
