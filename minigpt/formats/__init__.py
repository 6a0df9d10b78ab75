"""Files that hold a model: checkpoints (and a trainer saved in one), snapshots, microgpt's JSON, safetensors."""
