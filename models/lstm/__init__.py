"""A word-level LSTM reader: the recurrent baseline."""
