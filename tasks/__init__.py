"""Tasks: one folder each, with its data loader or generator, ``task.yaml`` and README."""
