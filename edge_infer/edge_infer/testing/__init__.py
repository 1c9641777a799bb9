# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Test and benchmark support, not used by the nodes.

Not installed (``setup.py``): the tests and ``bench/`` import it from the source
tree, and no installed module may import it (``test/graph/test_import_graph.py``).

:mod:`.simulated`: backend candidates on a simulated clock, to drive
:class:`edge_infer.backends.live.LiveChoice` without inference;
:mod:`.observer`: a LiveChoice observer that records what it is told;
:mod:`.load`: foreign load on a shared-executor device; :mod:`.schedule`:
the executor's policies simulated; :mod:`.reliability`: an overload soak;
:mod:`.config`: a backend manager configuration with few, fast candidates.
"""
