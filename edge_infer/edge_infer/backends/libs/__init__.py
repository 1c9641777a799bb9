# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One module per inference library: load a model, run it, say why it is unavailable."""
