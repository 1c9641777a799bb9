# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Test models with real weights in YOLO layouts: the trained NanoDet with ONNX nodes appended.

No YOLO weights can be fetched here. NanoDet's heads are decoded to boxes
inside the graph (softmax over each side's distribution bins, expectation x
stride, from the cell centre), and the result is laid out as the YOLO
families export it:

- :func:`yolov8`: ``[1, 84, N]`` (Ultralytics v8 / v11), or transposed
  ``[1, N, 84]``;
- :func:`yolov5`: ``[1, N, 85]`` with an objectness channel: objectness =
  sqrt(best class score), the class scores divided by it, so only
  objectness x class gives NanoDet's score back;
- :func:`end2end`: NMS inside (ONNX ``NonMaxSuppression``, per class, on
  each cell's best class only, as NanoDet's decoder does): ``[1, M, 6]``
  rows of x1 y1 x2 y2 score class;
- ``ultralytics_input=True``: the input becomes ``images``, RGB in 0..1 as
  Ultralytics models take it, NanoDet's BGR mean/std moved into the graph,
  and Ultralytics' metadata_props (task, names, imgsz, stride); end2end
  with ``labels`` gets that metadata and ``end2end: True``.

Every decoder must then give NanoDet's own detections back.
"""

import pathlib

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

STRIDES = (8, 16, 32)
BINS = 11
SIZE = 416
MEAN = (103.53, 116.28, 123.675)      # NanoDet's, BGR
STD = (57.375, 57.12, 58.395)


def _grid():
    centres, strides = [], []
    for s in STRIDES:
        g = -(-SIZE // s)
        ys, xs = np.meshgrid(np.arange(g), np.arange(g), indexing='ij')
        centres.append(np.stack([(xs.ravel() + 0.5) * s, (ys.ravel() + 0.5) * s], 1))
        strides.append(np.full(g * g, s, np.float32))
    return (np.concatenate(centres).astype(np.float32)[None],
            np.concatenate(strides)[None, :, None])


class _Builder:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.graph = model.graph
        self.n = 0

    def const(self, name: str, value) -> str:
        self.graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs, **attrs) -> str:
        self.n += 1
        out = f'yl_{op.lower()}_{self.n}'
        self.graph.node.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def boxes(self):
        """Return (cls [1,N,80], centre + distances as cxcywh [1,N,4], xyxy [1,N,4])."""
        b = self
        cls = b.node('Concat', [f'cls_{s}' for s in STRIDES], axis=1)
        reg = b.node('Concat', [f'reg_{s}' for s in STRIDES], axis=1)
        reg = b.node('Reshape', [reg, b.const('yl_shape4', np.array([1, -1, 4, BINS]))])
        prob = b.node('Softmax', [reg], axis=-1)
        proj = b.const('yl_project', np.arange(BINS, dtype=np.float32).reshape(BINS, 1))
        dist = b.node('MatMul', [prob, proj])
        dist = b.node('Reshape', [dist, b.const('yl_shape3', np.array([1, -1, 4]))])
        centres, strides = _grid()
        ltrb = b.node('Mul', [dist, b.const('yl_strides', strides)])
        zero, two = b.const('yl_s0', np.array([0])), b.const('yl_s2', np.array([2]))
        lt = b.node('Slice', [ltrb, zero, two, b.const('yl_ax', np.array([2]))])
        rb = b.node('Slice', [ltrb, 'yl_s2', b.const('yl_s4', np.array([4])), 'yl_ax'])
        c = b.const('yl_centres', centres)
        half = b.node('Mul', [b.node('Sub', [rb, lt]), b.const('yl_half', np.float32(0.5))])
        cxcy = b.node('Add', [c, half])
        wh = b.node('Add', [lt, rb])
        cxcywh = b.node('Concat', [cxcy, wh], axis=2)
        xyxy = b.node('Concat', [b.node('Sub', [c, lt]), b.node('Add', [c, rb])], axis=2)
        return cls, cxcywh, xyxy

    def finish(self, out: str, name: str, path: pathlib.Path) -> pathlib.Path:
        self.graph.node.append(helper.make_node('Identity', [out], [name]))
        del self.graph.output[:]
        self.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT,
                                                               [None, None, None]))
        # the output's shape as an exporter writes it ([1, 84, 3549]; NMS: [1, None, 6])
        inferred = onnx.shape_inference.infer_shapes(self.model)
        shape = next((v.type.tensor_type.shape for v in inferred.graph.value_info
                      if v.name == out), None)
        if shape is not None:
            self.graph.output[0].type.tensor_type.shape.CopyFrom(shape)
        onnx.checker.check_model(self.model)
        onnx.save(self.model, str(path))
        return path


def _load(src: pathlib.Path, ultralytics_input: bool, labels) -> _Builder:
    b = _Builder(onnx.load(str(src)))
    if ultralytics_input:
        g = b.graph
        old = g.input[0].name
        del g.input[:]
        g.input.append(helper.make_tensor_value_info('images', TensorProto.FLOAT,
                                                     [1, 3, SIZE, SIZE]))
        x = b.node('Mul', ['images', b.const('yl_255', np.float32(255.0))])
        bgr = b.node('Gather', [x, b.const('yl_bgr', np.array([2, 1, 0]))], axis=1)
        mean = np.array(MEAN, np.float32).reshape(1, 3, 1, 1)
        std = np.array(STD, np.float32).reshape(1, 3, 1, 1)
        norm = b.node('Div', [b.node('Sub', [bgr, b.const('yl_mean', mean)]),
                              b.const('yl_std', std)])
        # the appended nodes come first: the graph must stay topologically sorted
        nodes = list(g.node)
        prep = nodes[-4:]
        del g.node[:]
        g.node.extend(prep + [helper.make_node('Identity', [norm], [old])] + nodes[:-4])
        _metadata(b.model, labels)
    return b


def _metadata(model, labels, **extra) -> None:
    """Add Ultralytics' metadata_props (as its ONNX export writes them)."""
    names = dict(enumerate(labels))
    for k, v in (('author', 'Ultralytics'), ('task', 'detect'), ('names', repr(names)),
                 ('imgsz', f'[{SIZE}, {SIZE}]'), ('stride', '32'), ('batch', '1'),
                 ('description', 'edge_infer test model: NanoDet in a YOLO layout'),
                 *extra.items()):
        model.metadata_props.append(onnx.StringStringEntryProto(key=k, value=str(v)))


def yolov8(src, dst, transposed=False, ultralytics_input=False, labels=()) -> pathlib.Path:
    """Write NanoDet as ``[1, 84, N]`` (or ``[1, N, 84]``); return ``dst``."""
    b = _load(src, ultralytics_input, labels)
    cls, cxcywh, _ = b.boxes()
    rows = b.node('Concat', [cxcywh, cls], axis=2)
    out = rows if transposed else b.node('Transpose', [rows], perm=[0, 2, 1])
    return b.finish(out, 'output0', pathlib.Path(dst))


def yolov5(src, dst) -> pathlib.Path:
    """Write NanoDet as ``[1, N, 85]`` (objectness = sqrt(best class score)); return ``dst``."""
    b = _load(src, False, ())
    cls, cxcywh, _ = b.boxes()
    best = b.node('ReduceMax', [cls], axes=[2], keepdims=1)
    obj = b.node('Sqrt', [b.node('Add', [best, b.const('yl_eps', np.float32(1e-12))])])
    rows = b.node('Concat', [cxcywh, obj, b.node('Div', [cls, obj])], axis=2)
    return b.finish(rows, 'output0', pathlib.Path(dst))


def end2end(src, dst, score_threshold=0.35, iou=0.5, per_class=100, labels=()
            ) -> pathlib.Path:
    """Write NanoDet with NMS inside: ``[1, M, 6]`` x1 y1 x2 y2 score class; return ``dst``.

    ``labels``: Ultralytics' metadata with them and ``end2end: True``, as a
    YOLOv10 / YOLO26 export carries (the class count is not in the shape).
    """
    b = _load(src, False, ())
    if labels:
        _metadata(b.model, labels, end2end=True)
    cls, _, xyxy = b.boxes()
    best = b.node('ReduceMax', [cls], axes=[2], keepdims=1)
    only_best = b.node('Mul', [cls, b.node('Cast', [b.node('Equal', [cls, best])],
                                           to=TensorProto.FLOAT)])
    scores = b.node('Transpose', [only_best], perm=[0, 2, 1])
    sel = b.node('NonMaxSuppression', [xyxy, scores,
                                       b.const('yl_max', np.array([per_class], np.int64)),
                                       b.const('yl_iou', np.array([iou], np.float32)),
                                       b.const('yl_thr', np.array([score_threshold],
                                                                  np.float32))])
    klass = b.node('Gather', [sel, b.const('yl_i1', np.array(1))], axis=1)
    box_i = b.node('Gather', [sel, b.const('yl_i2', np.array(2))], axis=1)
    boxes = b.node('Gather', [b.node('Reshape', [xyxy, b.const('yl_n4', np.array([-1, 4]))]),
                              box_i], axis=0)
    score = b.node('GatherND', [scores, sel])
    col = b.const('yl_axis1', np.array([1]))
    rows = b.node('Concat', [boxes, b.node('Unsqueeze', [score, col]),
                             b.node('Unsqueeze', [b.node('Cast', [klass], to=TensorProto.FLOAT),
                                                  col])], axis=1)
    out = b.node('Unsqueeze', [rows, b.const('yl_axis0', np.array([0]))])
    return b.finish(out, 'output0', pathlib.Path(dst))
