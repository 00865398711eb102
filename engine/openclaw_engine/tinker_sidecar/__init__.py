"""A trainer sidecar that trains on Tinker's cloud through the `tinker` SDK.

It exposes the same training routes as the reference engine (`/train_step`, `/save_checkpoint`,
`/load_checkpoint`, `/trainer_info`) plus `/export_for_serving`, so the TypeScript `TinkerTrainerBackend`
drives it like any other trainer. Advantages follow `openclaw_engine.losses` exactly (see `datums.py`).
It also serves what it trained: the reference engine's policy routes over Tinker sampling clients
(`openclaw_engine.tinker_runner`), with `/update_weights_from_disk` switching to an export's sampler weights.
"""
