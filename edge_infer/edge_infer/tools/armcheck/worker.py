# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The emulated side of ``edge_infer arm-check``: runs inside the aarch64 Python.

    python3.11 -m edge_infer.tools.armcheck.worker JOB.json

One job is one model (or ``probe``: every candidate on the manager's probe
model, nothing else; or a model's ``variants``: its fp16 / int8 files made
ahead, beside the model's own job) with the manager's own code:
:meth:`BackendManager.probe` for each candidate, or
:meth:`BackendManager.choose` (probe, profile, accuracy check against ONNX
Runtime fp32 on real frames, selection) for a registry model. The only
addition is tracing, around the candidates the manager makes
(:class:`TracedManager`):

- before a candidate is asked anything (available, open_session, run) an ``at``
  event names it, so when the process dies (a native crash takes the whole
  interpreter) the host knows whose it was;
- the first run of every session saves its input and outputs (``io``
  events, ``.npy`` files): the host runs x86 ONNX Runtime on the same
  input and compares.

Events are JSON lines appended (and flushed) to ``events.jsonl`` in the
job's output folder. Imports only the ROS-free core: there is no ROS on
aarch64 here (the ros-jazzy wheels are x86_64 only).
"""

import fnmatch
import json
import os
import pathlib
import platform
import re
import sys
import time
import traceback
from typing import Dict, List, Optional

import numpy as np

ELF_MACHINES = {183: 'aarch64', 62: 'x86_64', 40: 'arm', 3: 'x86'}


class Events:
    """JSON lines, flushed one by one (they must survive the process dying)."""

    def __init__(self, path: pathlib.Path):
        self.f = open(path, 'a', encoding='utf-8')

    def emit(self, event: str, **kw) -> None:
        kw = {'event': event, 't': round(time.monotonic(), 3), **kw}
        self.f.write(json.dumps(kw, default=str) + '\n')
        self.f.flush()


class Tracer:
    """Says which candidate is being touched, and records first runs."""

    def __init__(self, events: Events, io_dir: pathlib.Path):
        self.events = events
        self.io_dir = io_dir
        self.current: Optional[tuple] = None
        self.sessions = 0
        self.phase = ''

    def touch(self, name: str, what: str) -> None:
        if self.current != (name, what):
            self.current = (name, what)
            self.events.emit('at', candidate=name, what=what, phase=self.phase)

    def record(self, backend, model_path, tensor, outputs) -> None:
        self.sessions += 1
        stem = self.io_dir / f'{self.sessions:03d}'
        np.save(f'{stem}.in.npy', np.asarray(tensor))
        files = []
        for k, out in enumerate(outputs):
            np.save(f'{stem}.out{k}.npy', np.asarray(out))
            files.append(f'{stem.name}.out{k}.npy')
        self.events.emit('io', candidate=backend.name, precision=backend.precision,
                         library=backend.library, phase=self.phase, model=str(model_path),
                         input=f'{stem.name}.in.npy', outputs=files)


class TracedSession:
    """A session whose first run is recorded; everything else is the library's."""

    def __init__(self, inner, backend, model_path, tracer: Tracer):
        self._inner = inner
        self._backend = backend
        self._model_path = model_path
        self._tracer = tracer
        self._recorded = False

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def run(self, tensor):
        self._tracer.touch(self._backend.name, 'run')
        outputs = self._inner.run(tensor)
        if not self._recorded:
            self._recorded = True
            self._tracer.record(self._backend, self._model_path, tensor,
                                [np.array(o, copy=True) for o in outputs])
        return outputs

    def close(self):
        self._inner.close()


class TracedBackend:
    """A candidate as the manager made it, with :class:`Tracer` calls around it."""

    def __init__(self, inner, tracer: Tracer):
        self._inner = inner
        self._tracer = tracer

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def available(self):
        self._tracer.touch(self._inner.name, 'available')
        return self._inner.available()

    def open_session(self, model_path, strict: bool = False, input_spec=None):
        self._tracer.touch(self._inner.name, 'open_session')
        sess = self._inner.open_session(model_path, strict=strict, input_spec=input_spec)
        return TracedSession(sess, self._inner, model_path, self._tracer)


def traced_manager_class():
    """Return the BackendManager subclass that traces its candidates (imported lazily)."""
    from ...backends.manager import BackendManager

    class TracedManager(BackendManager):
        """The nodes' manager; its candidates are wrapped in :class:`TracedBackend`."""

        tracer: Optional[Tracer] = None
        excluded: List[str] = []
        last_run = None

        def candidates(self, spec=None, model_path=None):
            cands = super().candidates(spec, model_path)
            cands = [b for b in cands if b.name not in self.excluded]
            return [TracedBackend(b, self.tracer) for b in cands]

        def profile(self, *args, **kw):
            self.last_run = super().profile(*args, **kw)
            return self.last_run

    return TracedManager


# ------------------------------------------------------------------- environment
def mapped_files() -> List[str]:
    """Return the files mapped into this process (qemu shows the guest's own maps)."""
    out = []
    try:
        with open('/proc/self/maps') as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith('/'):
                    path = parts[5].strip()
                    if path not in out:
                        out.append(path)
    except OSError:
        pass
    return out


def elf_machine(path: str) -> str:
    """Return the ELF machine of a file ('aarch64', 'x86_64', ...; '' when not ELF)."""
    try:
        with open(path, 'rb') as f:
            head = f.read(20)
    except OSError:
        return ''
    if len(head) < 20 or head[:4] != b'\x7fELF':
        return ''
    m = int.from_bytes(head[18:20], 'little' if head[5] == 1 else 'big')
    return ELF_MACHINES.get(m, str(m))


def loaded_libraries(site: str) -> Dict[str, dict]:
    """Return, per top-level folder of ``site``, the native files mapped and their ELF machine."""
    out: Dict[str, dict] = {}
    prefix = os.path.realpath(site).rstrip('/') + '/'
    for path in mapped_files():
        real = os.path.realpath(path)
        if not real.startswith(prefix):
            continue
        top = real[len(prefix):].split('/', 1)[0]
        entry = out.setdefault(top, {'files': [], 'machines': []})
        entry['files'].append(os.path.basename(real))
        machine = elf_machine(real)
        if machine and machine not in entry['machines']:
            entry['machines'].append(machine)
    return out


def library_versions() -> Dict[str, str]:
    """Return the versions of the inference libraries this process imported."""
    out = {}
    for mod in ('numpy', 'cv2', 'onnx', 'onnxruntime', 'openvino', 'ncnn', 'yaml'):
        m = sys.modules.get(mod)
        if m is not None:
            out[mod] = str(getattr(m, '__version__', '?'))
    return out


def openvino_facts() -> dict:
    """Return the CPU plugin OpenVINO loaded (file, build description) and its precision."""
    plugins = sorted({os.path.basename(p) for p in mapped_files()
                      if re.search(r'libopenvino_\w*_plugin\.so', os.path.basename(p))})
    facts: Dict[str, object] = {'plugins_mapped_during_run': plugins}
    try:
        import openvino as ov
        core = ov.Core()
        ver = core.get_versions('CPU')['CPU']
        facts['cpu_plugin'] = str(getattr(ver, 'description', ver))
        facts['build'] = str(getattr(ver, 'build_number', ''))
        facts['device'] = str(core.get_property('CPU', 'FULL_DEVICE_NAME'))
        hint = core.get_property('CPU', 'INFERENCE_PRECISION_HINT')
        facts['default_precision'] = str(getattr(hint, 'type_name', None) or hint)
        facts['capabilities'] = [str(c) for c in
                                 core.get_property('CPU', 'OPTIMIZATION_CAPABILITIES')]
        facts['plugins_mapped'] = sorted({os.path.basename(p) for p in mapped_files() if
                                          re.search(r'libopenvino_\w*_plugin\.so',
                                                    os.path.basename(p))})
    except Exception as exc:  # not importable / no CPU device: said in the report
        facts['error'] = f'{type(exc).__name__}: {exc}'.splitlines()[0]
    return facts


def environment(mgr, site: str) -> dict:
    """Return what this aarch64 process is: machine, Python, board as seen, libraries."""
    libs = loaded_libraries(site)
    return {'machine': platform.machine(), 'python': platform.python_version(),
            'executable': sys.executable, 'board': getattr(mgr, 'board', {}),
            'versions': library_versions(), 'libraries': libs}


# -------------------------------------------------------------------------- job
def _config(job: dict) -> dict:
    from ...backends.config import DEFAULTS, load_config
    cfg = {**load_config(), 'make_variants': True}     # it makes them beside the job
    for k, v in (job.get('config') or {}).items():
        if k in DEFAULTS:       # a setting this manager version does not have is skipped
            cfg[k] = v
    return cfg


def make_variants(mgr, spec, model_path, tracer: Tracer, events: Events) -> int:
    """Make the model's fp16 / int8 variant files the way its candidates will (cached).

    Run beside the model's own job, so that its variant candidates find their
    files made (the int8 calibration alone takes ~45 s emulated).
    """
    tracer.phase = 'variants'
    for b in mgr.candidates(spec, model_path):
        if not hasattr(b, 'variant_path') or not b.available()[0]:
            continue        # e.g. int8-nncf where nncf is not installed: said in the profile
        tracer.touch(b.name, 'convert')
        t = time.monotonic()
        path = b.variant_path(model_path)
        events.emit('variant', candidate=b.name, file=str(path),
                    seconds=round(time.monotonic() - t, 1))
    tracer.current = None
    return 0


def run_job(job: dict, events: Events) -> int:
    """Run one job; return 0 (results emitted) or 1 (the job itself failed)."""
    from ... import paths
    from ...backends.libs import pnnx
    from ...backends.precision import quantize
    from ...core.backend import BackendError
    # this worker is itself the separate process whose crash check.py pins on its
    # candidate; under qemu-user it cannot start another aarch64 Python anyway
    pnnx.ISOLATE_FIRST_RUN = False
    quantize.ISOLATE = False
    out = pathlib.Path(job['out'])
    tracer = Tracer(events, out / 'io')
    (out / 'io').mkdir(parents=True, exist_ok=True)
    Manager = traced_manager_class()
    logs: List[str] = []

    def log(line: str) -> None:
        logs.append(line)
        print(line, flush=True)

    mgr = Manager(pathlib.Path(job['cache_dir']), config=_config(job), log=log)
    mgr.tracer = tracer
    mgr.excluded = list(job.get('exclude') or [])
    site = job.get('site', '')
    events.emit('start', machine=platform.machine(), python=platform.python_version(),
                model=job['model'], pid=os.getpid(), board=mgr.board,
                skipped_settings=sorted(set(job.get('config') or {}) - set(mgr.config)))
    if job['model'] == 'probe':
        tracer.phase = 'probe'
        for b in mgr.candidates():
            tracer.touch(b.name, 'probe')
            ok, why = mgr.probe(b, use_cache=False)
            events.emit('probe', candidate=b.name, library=b.library, device=b.device,
                        precision=b.precision, ok=bool(ok), reason=why)
        tracer.current = None
        events.emit('environment', **environment(mgr, site), openvino=openvino_facts())
        return 0
    from ...core.registry import load_registry
    spec = load_registry(paths.config_dir() / 'models.yaml')[job['model']]
    model_path = paths.models_dir() / spec.file
    only = job.get('only') or []
    if only:
        names = [b.name for b in mgr.candidates(spec, model_path)]
        left_out = [n for n in names if not any(fnmatch.fnmatchcase(n, p) for p in only)]
        mgr.excluded = mgr.excluded + left_out
        events.emit('left_out', candidates=left_out, only=only)
    if job.get('kind') == 'variants':
        return make_variants(mgr, spec, model_path, tracer, events)
    tracer.phase = 'profile'
    error = ''
    try:
        _, run = mgr.choose(spec, model_path, objective=job.get('objective', 'latency'),
                            use_cache=False)
    except BackendError as exc:     # nothing acceptable: the table still says why
        error = str(exc)
        run = mgr.last_run
    tracer.current = None
    frames = getattr(mgr, '_frames', None)
    events.emit('result', model=spec.name, task=spec.task, chosen=getattr(run, 'chosen', None),
                why=getattr(run, 'why', ''), error=error,
                floor=mgr.min_accuracy(spec),
                frames=frames[1] if isinstance(frames, tuple) and len(frames) > 1 else '',
                results=[r.to_dict() for r in (run.results if run else [])],
                notes=list(getattr(run, 'notes', []) or []))
    events.emit('environment', **environment(mgr, site), openvino=openvino_facts())
    return 0


def main(argv=None) -> int:
    """Run the job file named on the command line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    job = json.loads(pathlib.Path(argv[0]).read_text())
    out = pathlib.Path(job['out'])
    out.mkdir(parents=True, exist_ok=True)
    events = Events(out / 'events.jsonl')
    try:
        return run_job(job, events)
    except Exception as exc:  # a Python error in the job: reported, with where
        events.emit('error', error=f'{type(exc).__name__}: {exc}',
                    traceback=traceback.format_exc()[-4000:])
        traceback.print_exc()
        return 1


if __name__ == '__main__':
    sys.exit(main())
