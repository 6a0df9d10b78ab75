"""Files that hold a model: minigpt's checkpoints, microgpt's JSON, and safetensors."""
