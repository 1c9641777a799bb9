# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Make a model's variant files when it is prepared: ``edge_infer variants [MODEL ...]``.

    edge_infer variants                 every registry model whose file is here
    edge_infer variants nanodet selfie  those models

``edge_infer prepare`` runs it for the models of the default graph
(config/perception.yaml) after they are fetched, and ``edge_infer model add``
after your model is registered. Each file is made
the way its candidate will look for it (same cache folder, calibration key
and thread-independent name), so that a robot's start only *measures* them:
the serving process never quantizes (``make_variants: false``). A file that
exists is kept (its checksum is in its name); an int8 quantizer runs in a
child process stopped above ``variant_memory_mb`` (config/backends.yaml,
1000 MB). An int8 file is board-independent, so it may also be made on
another machine and copied into the cache's ``variants/`` folder.
"""

import argparse
import pathlib
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence

Log = Callable[[str], None]


def make_for_model(manager, spec, model_path: pathlib.Path, log: Log = print) -> List[dict]:
    """Make every variant file of one model that its candidates use; return one dict per file.

    Each dict: ``file``, ``candidates`` (the names that run it), ``made``
    (False: the file was there), ``seconds``, ``peak_mb`` (the quantizer's, from its
    note), or ``error`` for a file that could not be made (the candidate is then
    judged failed where it is measured, as before).
    """
    from .precision.quantize import read_note
    from .precision.variants import VariantBackend
    made: Dict[str, dict] = {}
    candidates = manager.candidates(spec, model_path)
    for backend in candidates:
        if not isinstance(backend, VariantBackend) or manager.over_budget(backend):
            continue
        ok, why = backend.available()
        if not ok:
            log(f'{spec.name}: {backend.name} skipped: {why}')
            continue
        t0 = time.monotonic()
        there = not backend.missing(model_path)
        try:
            path = backend.variant_path(model_path)
        except Exception as exc:  # VariantError, a quantizer's refusal: one line each
            key = f'{backend.kind}: {exc}'
            if key not in made:
                log(f'{spec.name}: {backend.name}: {exc}')
            made.setdefault(key, {'file': '', 'candidates': [], 'error': str(exc)})
            made[key]['candidates'].append(backend.name)
            continue
        entry = made.setdefault(str(path), {
            'file': str(path), 'candidates': [], 'made': not there,
            'seconds': round(time.monotonic() - t0, 1), 'peak_mb': read_note(path).get('peak_mb')})
        entry['candidates'].append(backend.name)
    converted = _ncnn_files(manager, candidates, spec, model_path, log)
    return list(made.values()) + ([converted] if converted else [])


def _ncnn_files(manager, candidates, spec, model_path: pathlib.Path,
                log: Log) -> Optional[dict]:
    """Convert the model for ncnn once (pnnx): a first start then only loads the pair.

    The conversion is board-independent and cached under the cache's ``ncnn/``
    folder (pnnx took 1-2 s and a process of its own per model at a start).
    """
    ncnn = next((b for b in candidates
                 if getattr(b, 'library', '') == 'ncnn' and getattr(b, 'device', '') == 'cpu'
                 and b.available()[0]), None)
    if ncnn is None:
        return None
    t0 = time.monotonic()
    folder = pathlib.Path(manager.cache_dir) / 'ncnn'
    before = set(folder.glob('*.param')) if folder.is_dir() else set()
    try:
        ncnn.open_session(model_path).close()
    except Exception as exc:  # BackendError: an op ncnn lacks; measured (and said) at a start
        log(f'{spec.name}: ncnn conversion: {exc}')
        return None
    return {'file': f'ncnn files of {model_path.name}', 'candidates': [ncnn.name],
            'made': set(folder.glob('*.param')) != before,
            'seconds': round(time.monotonic() - t0, 1),
            'peak_mb': None}


def make_all(names: Sequence[str], models_dir: pathlib.Path, cache_dir: pathlib.Path,
             log: Log = print) -> int:
    """Make the variant files of the registry models ``names``; return how many failed."""
    from .manager import BackendManager
    from ..core.registry import load_models
    reg = load_models()
    manager = BackendManager(cache_dir, config=tool_config(), log=log)
    failed = 0
    for name in names:
        path = pathlib.Path(models_dir) / reg[name].file
        if not path.is_file():
            log(f'{name}: model file {path} missing (run prepare)')
            failed += 1
            continue
        for entry in make_for_model(manager, reg[name], path, log):
            if entry.get('error'):
                failed += 1
                continue
            peak = f", quantizer peak {entry['peak_mb']} MB" if entry.get('peak_mb') else ''
            state = f"made in {entry['seconds']:.1f} s" if entry['made'] else 'kept'
            log(f"{name}: {pathlib.Path(entry['file']).name} {state}{peak} "
                f"({len(entry['candidates'])} candidate(s))")
    return failed


def graph_models(params_file: Optional[pathlib.Path] = None) -> List[str]:
    """Return the models a params file's nodes run (default: config/perception.yaml)."""
    import yaml
    from .. import paths
    doc = yaml.safe_load((params_file or paths.config_dir() / 'perception.yaml').read_text())
    found: List[str] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            params = node.get('ros__parameters')
            if isinstance(params, dict) and isinstance(params.get('model'), str):
                found.append(params['model'])
            for value in node.values():
                walk(value)
    walk(doc)
    return sorted(set(found))


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``edge_infer variants [MODEL ...]``: make the variant files; 0 when all were made."""
    from .manager import default_cache_dir
    from .. import paths
    from ..core.registry import load_models
    ap = argparse.ArgumentParser(prog='edge_infer variants',
                                 description="Make the models' fp16 / int8 files once.")
    ap.add_argument('models', nargs='*', help='registry names (default: every model here)')
    args = ap.parse_args(argv)
    reg = load_models()
    unknown = [m for m in args.models if m not in reg]
    if unknown:
        print(f"edge_infer variants: unknown model(s) {', '.join(unknown)} "
              f"(known: {', '.join(sorted(reg))})", file=sys.stderr)
        return 2
    names = args.models or [n for n in reg if (paths.models_dir() / reg[n].file).is_file()]
    return 1 if make_all(names, paths.models_dir(), default_cache_dir()) else 0


def tool_config() -> dict:
    """Return config/backends.yaml's settings for a tool that makes variant files."""
    from .config import load_config
    return {**load_config(), 'make_variants': True}
