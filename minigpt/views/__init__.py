"""Looking inside a model: attention maps (terminal, PNG, JSON), loss curves, and the explorer page."""
