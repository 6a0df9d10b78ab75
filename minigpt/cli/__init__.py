"""The command line and what a run keeps: commands, what they print, errors, the run directory, bundled files."""
