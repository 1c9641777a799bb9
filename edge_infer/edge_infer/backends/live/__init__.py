# Copyright 2026 edge_infer contributors. Apache-2.0.
"""The run-time choice: serve, watch for drift and load, time runners-up, switch."""
