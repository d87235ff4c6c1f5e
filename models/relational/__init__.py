"""PrediNet and its baselines (Shanahan et al., ICML 2020): conv encoder, swappable central module, output MLP."""
