"""A trainer sidecar that trains on Tinker's cloud through the `tinker` SDK.

It exposes the same training routes as the reference engine (`/train_step`, `/save_checkpoint`,
`/load_checkpoint`, `/trainer_info`) plus `/export_for_serving`, so the TypeScript `TinkerTrainerBackend`
drives it like any other trainer. Advantages follow `openclaw_engine.losses` exactly (see `datums.py`).
"""
