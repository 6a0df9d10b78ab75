"""Recipes read from TOML, `--set` and checkpoints, and their values checked (config.py declares the keys)."""
