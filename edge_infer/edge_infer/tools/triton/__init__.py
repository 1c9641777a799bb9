# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Triton Inference Server: its environment, model repositories and `edge_infer serve`."""
