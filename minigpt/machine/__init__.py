"""The machine a run uses: the device, several processes under torchrun, threads, and what makes a step faster on a CPU or in fewer, longer rows without changing a number."""
