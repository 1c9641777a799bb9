# Copyright 2026 edge_infer contributors. Apache-2.0.
"""A backend manager configuration with few, fast candidates, for tests."""

from typing import Any, Dict

# ONNX Runtime (1 thread) and OpenCV DNN on the CPU, short budgets, 2 calibration
# frames; every figure taken counts as quiet (tests share the machine)
FAST_CPU: Dict[str, Any] = {
    'ort_threads': [1], 'ort_providers_always_listed': [], 'opencv_targets': ['cpu'],
    'blas': False, 'variants': [], 'budget_s': 0.1, 'warmup': 1, 'min_runs': 3,
    'calibration_frames': 2, 'openvino_threads': [], 'ncnn_threads': [],
    'ncnn_vulkan': False, 'torch_precisions': [], 'quiet_foreign_cores': 99.0}


def fast_cpu(**over: Any) -> Dict[str, Any]:
    """Return :data:`FAST_CPU` with ``over`` on top."""
    return {**FAST_CPU, **over}
