"""Showing a model and a run: attention maps (terminal, PNG, JSON), loss curves, the explorer page, the panels
and progress of training, and the notebook's displays."""
