# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``edge_infer arm-check``: the backend manager on aarch64, under user-mode emulation.

The package targets Jetson, Odroid and Raspberry Pi boards. On an x86
machine this runs the ROS-free core there anyway, for real: an aarch64
Python 3.11 (Debian bookworm's arm64 packages) under ``qemu-aarch64-static``
with PyPI's aarch64 wheels of onnxruntime, openvino, ncnn, numpy and
opencv, then the same :class:`~edge_infer.backends.manager.BackendManager`
code the nodes run: probe every candidate, profile the bundled models with a
small budget, check accuracy against ONNX Runtime fp32 on real frames, choose.

- :mod:`.prepare` (host): the sysroot, qemu and the wheels, made once and
  cached under ``$EDGE_INFER_HOME/arm`` (stamp files), without touching the
  host's dpkg;
- :mod:`.worker` (runs inside the emulated Python): one model per process,
  events and outputs written to files so that a crash is pinned on the
  candidate that was running;
- :mod:`.check` (host): runs the workers, compares fp32 outputs with x86
  ONNX Runtime on the same inputs, prints the table, writes a JSON report.

Emulated timings are meaningless for ranking (TCG costs 100-300x, fp16
arithmetic more); results, accuracy and library behaviour are real.
"""
