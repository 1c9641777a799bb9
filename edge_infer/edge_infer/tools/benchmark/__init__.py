# Copyright 2026 edge_infer contributors. Apache-2.0.
"""``edge_infer benchmark``: the user's graph measured as a whole (issue 51).

:mod:`.peak` (ROS-free): a probe's verdict and the peak search;
:mod:`.feeder`: a bag's frames played from memory at a rate, restamped;
:mod:`.monitor`: the results as seen from outside the graph;
:mod:`.probe`: one rate played and measured (the feeder's process too);
:mod:`.graph_run`: one configuration brought up and probed;
:mod:`.report`: the markdown table, JSON and plot; :mod:`.main`: the verb.
"""
