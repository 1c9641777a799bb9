# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The shared executor: partitioned models, segments placed on devices, zero-copy hand-offs."""
