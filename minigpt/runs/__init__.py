"""A training run: its directory, its records, the weights it keeps (best, snapshots), setting it up and running
it (`minigpt.train`), and names drawn from what it made; runs compared and swept."""
