"""Files minigpt reads and writes: checkpoints, snapshots, microgpt's JSON, safetensors, a run's records, and how any file is written (atomically), read (bounded) and recognised."""
