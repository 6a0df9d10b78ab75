"""The command line, on top of everything else: the commands, how each ends (one line, an exit code), the
standard streams."""
