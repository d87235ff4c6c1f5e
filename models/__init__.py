"""Models: plain ``torch.nn.Module`` classes (no Lightning, no Ray), one folder per family, each model
described by a YAML file (its spec, config defaults and profiles) beside its code."""
