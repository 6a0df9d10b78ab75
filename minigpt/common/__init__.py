"""What every layer uses: the exceptions and their exit codes, text as one line, the ranges numbers may take, and where the bundled files are."""
