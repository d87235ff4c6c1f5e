"""TPR-RNN (Schlag & Schmidhuber 2018)."""
