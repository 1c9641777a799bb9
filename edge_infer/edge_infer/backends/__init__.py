# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The backend manager: inference backends, probing, profiling, measured selection, cache."""
