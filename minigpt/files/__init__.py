"""Any file, guarded: read no larger than its kind (bounded), recognised by its first bytes, written
atomically; names files, JSON that stays JSON, and a run's records."""
