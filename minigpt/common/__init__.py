"""What every layer uses: the failures around the core, text as one line, the ranges numbers may take, and where
the bundled files are."""
