"""Experiments: runs compared (compare.py), recipes swept with Optuna (sweep.py)."""
