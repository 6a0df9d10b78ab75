"""Past one small run: the device, several processes, large corpora, and a faster dropout on CPUs."""
