"""Names by the million: a seeded shuffle, names as one tensor of ids, "is this a training name?", a run's names on its device."""
