"""openclaw-rl-temporal's plugin for slime (docs/slime.md).

- `loss`: the custom loss functions (`--loss-type custom_loss --custom-loss-function-path ...`), written on
  the shared `openclaw_engine.losses`, so slime and the reference trainer compute the same objective.
- `batch_loader`: the rollout function (`--rollout-function-path ...`) that hands slime the batch the workflow
  wrote to a file, instead of generating one.
- `epoch`: the launcher of one epoch (`python -m openclaw_engine.slime_plugin.epoch`): runs slime, then
  publishes its checkpoint atomically with the applied step ids, the epoch container contract.
- `export_hf`: makes what slime saved (Megatron torch_dist, FSDP, a LoRA adapter) the Hugging Face model
  folder the published checkpoint is, keeping slime's own checkpoint under `slime/` for the next epoch.

Nothing here imports slime at module load, so the plugin is tested on CPU without slime installed.
"""
