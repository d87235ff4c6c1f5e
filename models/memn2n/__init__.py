"""End-To-End Memory Networks (Sukhbaatar, Szlam, Weston & Fergus, NeurIPS 2015; arXiv:1503.08895)."""
