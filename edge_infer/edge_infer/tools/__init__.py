# Copyright 2026 edge_infer contributors. Apache-2.0.
"""Set-up tools: model conversion and ``edge_infer model add``, the ARM check, the bag tools.

They run before or beside the runtime, never inside it: :mod:`.models`
fetches and converts the bundled models and registers a user's own
(``edge_infer prepare``, ``edge_infer model add | list | check``),
:mod:`.armcheck` runs the backend manager on aarch64 under qemu
(``edge_infer arm-check``), and :mod:`.bag` records, plays and fetches
footage (``edge_infer record | play``, ``bag_record``, ``bag_play``). The
runtime (the nodes, backends, executor, telemetry) never imports them; only
the entry points :mod:`edge_infer.cli` and :mod:`edge_infer.data` do
(``test/graph/test_import_graph.py`` checks it). They are installed with the
package, since the CLI verbs need them.
"""
