"""A trainer sidecar that trains on Fireworks AI through its training SDK (`fireworks.training.sdk`).

It exposes the reference engine's training routes (`/train_step`, `/save_checkpoint`, `/load_checkpoint`,
`/reset_to_base`, `/trainer_info`) plus `/export_for_serving`, so the TypeScript `FireworksTrainerBackend`
drives it like any other trainer, and `/update_weights_from_disk`, which hot-loads an export's snapshot into
the Fireworks deployment that serves the policy. Datums are the recorded prompt + response token ids as
sampled (never re-tokenised); the loss is the project's own (`openclaw_engine.losses.compute_loss`), computed
here on the log-probs Fireworks returns, through `forward_backward_custom` (docs/fireworks.md).
"""
