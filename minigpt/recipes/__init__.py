"""Recipes read from TOML, `--set` and checkpoints, their values checked, and how two recipes differ
(config.py declares the keys)."""
