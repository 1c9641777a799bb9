"""edge_infer."""
