"""The linear-logic RNN (Hu & Murfet 2016)."""
