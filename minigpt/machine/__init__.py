"""The machine a run uses: the device, several processes under torchrun, and threads."""
