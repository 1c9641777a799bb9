# Copyright 2026 edge_infer contributors. Apache-2.0.
"""One backend candidate measured alone, its session closed: the tests' short form."""

from edge_infer.backends.measure.profiling import CandidateResult, screen_candidate


def profile_candidate(backend, spec, model_path, reference, **kw) -> CandidateResult:
    """Measure ``backend`` on one model alone; ``kw`` as :func:`screen_candidate` takes them."""
    res, sess = screen_candidate(backend, spec, model_path, reference, **kw)
    if sess is not None:
        sess.close()
    return res
