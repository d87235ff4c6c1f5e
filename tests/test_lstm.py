import torch
from omegaconf import OmegaConf

from models.lstm.model import LSTMStoryReader, flatten_story


def test_flatten_story_reads_statements_then_question_without_padding():
    story = torch.tensor([[[5, 6, 0], [7, 0, 0], [0, 0, 0]]])
    query = torch.tensor([[8, 9, 0]])
    tokens, lengths = flatten_story(story, query)
    assert lengths.tolist() == [5]
    assert tokens[0, :5].tolist() == [5, 6, 7, 8, 9]
    assert tokens[0, 5:].eq(0).all()


def test_reader_shapes_and_padding_invariance():
    torch.manual_seed(0)
    cfg = OmegaConf.create({"embedding_size": 8, "hidden_size": 16, "layers": 1, "dropout": 0.0})
    model = LSTMStoryReader(cfg, {"vocab_size": 10, "num_classes": 10})
    story = torch.randint(1, 10, (3, 4, 5))
    query = torch.randint(1, 10, (3, 5))
    logits = model(story, torch.full((3,), 4), query)
    assert logits.shape == (3, 10)
    wider = torch.cat([story, torch.zeros(3, 2, 5, dtype=torch.long)], dim=1)  # more padded slots
    torch.testing.assert_close(model(wider, torch.full((3,), 4), query), logits)
