# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Free an ONNX file's batch dimension, and prove the result answers as the file does.

A stock Triton backend with dynamic batching hands the model the whole
batch. Most of our files were exported with the batch fixed at 1, and not
only in their input: NanoDet's six ``Reshape`` nodes name it (``[1, C, HW]``)
and its ``Resize`` nodes give their output ``sizes`` as ``[1, C, H, W]``.
:func:`~edge_infer.backends.libs.rebatch.free_batch` rewrites exactly those two forms:

- a ``Reshape`` whose constant shape starts with 1 while its data's first
  dimension is the batch of 1: that 1 becomes -1 (refused where the shape
  already has a -1);
- a ``Resize`` given constant ``sizes``: the same resize as ``scales``
  (``[1, 1, H_out / H_in, W_out / W_in]``: the same output and the same
  coordinate transformation for a fixed input size);

and names the inputs' and outputs' first dimension ``batch``. Anything else
that fixes the batch shows up in the check: :func:`batched_copy` runs the
rewritten file at batch 2 in ONNX Runtime on two different inputs and
compares each half with the original file's answer for that input alone.
Only a file that passes is given to a batching backend.
"""

import re
from typing import Optional, Tuple

from ...backends.libs.rebatch import free_batch

TOLERANCE = 1e-4     # absolute and relative, each output, batch 2 against 1 + 1


def _session(data: bytes):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    return ort.InferenceSession(data, so, providers=['CPUExecutionProvider'])


def batched_copy(path) -> Tuple[Optional[bytes], str]:
    """Return (the file with a free batch, as bytes, '') or (None, why it cannot batch).

    The rewritten file must answer a batch of two inputs as the original
    answers each alone (:data:`TOLERANCE`), in ONNX Runtime.
    """
    import numpy as np
    import onnx
    original = onnx.load(str(path))
    freed, why = free_batch(original)
    if freed is None:
        return None, why
    data = freed.SerializeToString()
    try:
        one, two = _session(original.SerializeToString()), _session(data)
        feed_name = one.get_inputs()[0].name
        shape = [d if isinstance(d, int) else 1 for d in one.get_inputs()[0].shape]
        if len(one.get_inputs()) != 1 or shape[0] != 1:
            return None, 'not one input with a batch of 1'
        x = np.random.default_rng(0).random([2] + shape[1:], np.float32)
        both = two.run(None, {feed_name: x})
        for i in range(2):
            alone = one.run(None, {feed_name: x[i:i + 1]})
            for a, b in zip(both, alone):
                if a.shape[0] != 2 or not np.allclose(a[i:i + 1], b, rtol=TOLERANCE,
                                                      atol=TOLERANCE):
                    return None, 'a batch of 2 does not answer as two batches of 1'
    except Exception as exc:  # any ORT error at batch 2: something else fixes the batch
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        node = re.search(r"running (\w+) node\. Name:'([^']*)'", text)
        return None, ('a batch of 2 fails ' + (f"in {node.group(1)} '{node.group(2)}'" if node
                                               else f'({text[:120]})'))
    return data, ''
