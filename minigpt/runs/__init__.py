"""A training run: its directory, its records, setting it up and running it (`minigpt.train`)."""
