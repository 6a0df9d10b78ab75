"""A model measured in eval mode (no dropout), then put back in the mode it was in, so that
measuring a model in the middle of training leaves it training."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def eval_mode(model):
    """Within: the model in eval mode (no dropout); after: back in the mode it was in."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)
