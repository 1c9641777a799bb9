# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The backend manager's settings: defaults, and config/backends.yaml over them."""

import pathlib
from typing import Any, Dict, Optional

import yaml

from ..core.registry import YAML_LOADER

DEFAULTS: Dict[str, Any] = {
    'ort_threads': [1, 2],
    'ort_providers_always_listed': ['CUDAExecutionProvider', 'TensorrtExecutionProvider',
                                    'OpenVINOExecutionProvider'],
    'opencv_targets': ['cpu', 'opencl', 'opencl-fp16', 'cuda', 'cuda-fp16'],
    'blas': True,
    'variants': ['fp16', 'int8', 'int8-nncf'],
    'int8_calibration_frames': 30,
    'int8_validation_frames': 24,
    'make_variants': True,
    'variant_memory_mb': 1000.0,
    'variant_threads': 2,
    'openvino_threads': [1, 2],
    'openvino_native_precision': True,
    'openvino_graph_preprocessing': True,
    'ncnn_threads': [1, 2],
    'ncnn_fp16': True,
    'ncnn_vulkan': True,
    'torch_precisions': ['fp32', 'fp16'],
    'remote_servers': [],
    'remote_timeout_ms': 1000.0,
    'remote_tls_ca': '',
    'remote_tls_cert': '',
    'remote_tls_key': '',
    'remote_token': '',
    'budget_s': 1.0,
    'screen_s': 0.3,
    'screen_factor': 3.0,
    'cut_factor': 3.0,
    'cut_runs': 3,
    'lead_factor': 1.6,
    'max_leaders': 4,
    'round_runs': 5,
    'min_rounds': 4,
    'confidence': 0.8,
    'quiet_foreign_cores': 0.5,
    'latency_percentile': 50,
    'tail_guard': 4.0,
    'warmup': 2,
    'min_runs': 5,
    'calibration_frames': 24,
    'judge_min_frames': 6,
    'judge_s': 1.0,
    'min_accuracy': {'classification': 0.99, 'detection': 0.9, 'pose': 0.9,
                     'segmentation': 0.9},
    'exclude': [],
    'start_order': ['openvino/cpu/t1', 'onnxruntime/cpu/t2', 'onnxruntime/cpu/t1'],
    'measure_apart': True,
    'measure_apart_idle_s': 5.0,
    'measure_apart_max_mb': 400.0,
}


def load_config(path: Optional[pathlib.Path] = None) -> dict:
    """Return the manager's settings: DEFAULTS updated by ``path`` (config/backends.yaml)."""
    from .. import paths
    path = pathlib.Path(path) if path else paths.config_dir() / 'backends.yaml'
    cfg = dict(DEFAULTS)
    if path.is_file():
        loaded = yaml.load(path.read_text(), Loader=YAML_LOADER) or {}
        unknown = sorted(set(loaded) - set(DEFAULTS))
        if unknown:
            raise ValueError(f'{path}: unknown keys {unknown} (known: {sorted(DEFAULTS)})')
        cfg.update(loaded)
    return cfg
