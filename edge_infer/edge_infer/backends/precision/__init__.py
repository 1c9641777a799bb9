# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Precision variants of a model: fp16, int8 (ONNX Runtime, NNCF) and their calibration frames."""
