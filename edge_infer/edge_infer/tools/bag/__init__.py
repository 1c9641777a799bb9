# Copyright 2026 edge_infer contributors. Apache-2.0.
"""edge_infer."""
