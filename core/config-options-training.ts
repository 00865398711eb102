// The judge engine, the judge, the teacher, training, the loss and the trainer: rows of the option table
// (core/config-options.ts), in the order docs/configuration.md lists them.

import type { ConfigOption } from './config-option.js';

export const TRAINING_OPTIONS = [
  {
    key: 'judgeEngine.url',
    env: 'OPENCLAW_JUDGE_ENGINE_URL',
    kind: 'string',
    defaultNote: '`engine.url` with the next port (`http://127.0.0.1:30001`; with vLLM the one after next)',
    description:
      "The frozen judge engine: serves the base checkpoint for judge calls and teacher log-probs and is never updated (the original's PRM engine), so the policy never judges or teaches itself. `dev` starts a reference engine there unless one answers.",
  },
  {
    key: 'judgeEngine.model',
    env: 'OPENCLAW_JUDGE_ENGINE_MODEL',
    kind: 'string',
    defaultNote: '`engine.model` (the base checkpoint)',
    description:
      'Hugging Face model folder the frozen judge engine serves (original: `PRM_MODEL_PATH`, the base checkpoint by default).',
  },
  {
    key: 'judgeEngine.kind',
    env: 'OPENCLAW_JUDGE_ENGINE_KIND',
    kind: 'enum',
    description:
      "Engine kind of the frozen judge engine: `reference` (what `dev` and compose start) or `sglang` (compose's gpu-judge profile); the teacher is of this kind unless `teacher.url` is set.",
  },
  {
    key: 'judge.baseUrl',
    env: 'OPENCLAW_JUDGE_URL',
    kind: 'string',
    defaultNote: '`judgeEngine.url` + `/v1`',
    description:
      'OpenAI-compatible base URL of the judge model (ends in `/v1`); an external API works. Pointing it at the policy engine makes the live policy judge itself (a self-reward loop).',
  },
  {
    key: 'judge.model',
    env: 'OPENCLAW_JUDGE_MODEL',
    kind: 'string',
    description:
      'Model name sent to the judge endpoint (`default` is what SGLang accepts for its one model).',
  },
  {
    key: 'judge.apiKey',
    env: 'OPENCLAW_JUDGE_API_KEY',
    kind: 'string',
    description: 'Bearer key for the judge endpoint; empty sends none.',
  },
  {
    key: 'judge.votes',
    env: 'OPENCLAW_JUDGE_VOTES',
    kind: 'integer',
    defaultNote: '3 for `rl`, 1 for `opd` and `combine`',
    description:
      'Judge calls per turn, run in parallel: binary votes are majority-voted, hint votes pick the longest hint (original: `PRM_M`).',
  },
  {
    key: 'judge.temperature',
    env: 'OPENCLAW_JUDGE_TEMPERATURE',
    kind: 'number',
    description: 'Sampling temperature of judge calls (original: `PRM_TEMPERATURE`).',
  },
  {
    key: 'judge.maxTokens',
    env: 'OPENCLAW_JUDGE_MAX_TOKENS',
    kind: 'integer',
    defaultNote: '4096 for `rl`, 8192 for `opd` and `combine`',
    description: 'Longest judge reply, in tokens (original: `PRM_MAX_NEW_TOKENS`).',
  },
  {
    key: 'judge.vision',
    env: 'OPENCLAW_JUDGE_VISION',
    kind: 'boolean',
    description:
      "The judge model reads images: the images of a turn's next state are sent to it as data URLs; otherwise each is a text note (docs/scoring.md).",
  },
  {
    key: 'teacher.url',
    env: 'OPENCLAW_TEACHER_URL',
    kind: 'string',
    defaultNote: '`judgeEngine.url`',
    description:
      'SGLang-compatible engine that computes teacher log-probs (`/generate` prefill). The default, the frozen judge engine, is the base model, as in the original; the policy engine here would make the current policy its own teacher.',
  },
  {
    key: 'teacher.kind',
    env: 'OPENCLAW_TEACHER_KIND',
    kind: 'enum',
    defaultNote: '`judgeEngine.kind` (`engine.kind` when `teacher.url` is set)',
    description: 'Engine kind of the teacher at `teacher.url`: `reference`, `sglang` or `vllm`.',
  },
  {
    key: 'teacher.topK',
    env: 'OPENCLAW_TEACHER_TOP_K',
    kind: 'integer',
    description:
      'opd only: top-K distillation (spec 6.6). The teacher prefill stores its K best log-probs per response token and the run trains the top-K reverse KL instead of the OPD advantage; 0 turns it off (original: `--distill-topk`, 50 in its top-K script).',
  },
  {
    key: 'training.batchSize',
    env: 'OPENCLAW_BATCH_SIZE',
    kind: 'integer',
    description: 'Samples per training step (original: `--rollout-batch-size`).',
  },
  {
    key: 'training.learningRate',
    env: 'OPENCLAW_LEARNING_RATE',
    kind: 'number',
    description: 'Adam learning rate, constant.',
  },
  {
    key: 'training.weightDecay',
    env: 'OPENCLAW_WEIGHT_DECAY',
    kind: 'number',
    description: 'Adam weight decay.',
  },
  {
    key: 'training.betas',
    env: 'OPENCLAW_ADAM_BETAS',
    kind: 'number-pair',
    description: 'Adam betas, two comma-separated numbers.',
  },
  {
    key: 'training.maxPolicyLag',
    env: 'OPENCLAW_MAX_POLICY_LAG',
    kind: 'integer',
    description:
      'Largest gap between the policy version that produced a sample and the version it trains on before `stalenessPolicy` applies.',
  },
  {
    key: 'training.stalenessPolicy',
    env: 'OPENCLAW_STALENESS_POLICY',
    kind: 'enum',
    description:
      'For samples staler than `maxPolicyLag`: `drop` excludes them; `rollout-logprobs` trains them with the serving log-probs as the PPO reference.',
  },
  {
    key: 'training.continueAsNewAfterSteps',
    env: 'OPENCLAW_TRAINING_CONTINUE_AS_NEW_STEPS',
    kind: 'integer',
    description:
      'Training steps after which the training workflow continues as new, keeping its history short.',
  },
  {
    key: 'training.continueAsNewAfterEvents',
    env: 'OPENCLAW_TRAINING_CONTINUE_AS_NEW_EVENTS',
    kind: 'integer',
    description:
      'History events after which the training workflow continues as new, also while it waits (a run receiving only exclusions, or a paused one); at most 40000 (Temporal refuses a history past 51200).',
  },
  {
    key: 'training.keepCheckpoints',
    env: 'OPENCLAW_KEEP_CHECKPOINTS',
    kind: 'integer',
    description:
      'Published versions whose checkpoint folders are kept, the newest (the run resumes from the last); older folders are deleted after each publish. 0 keeps all. Lineage records are always kept.',
  },
  {
    key: 'training.maxSamplesPerTenant',
    env: 'OPENCLAW_MAX_SAMPLES_PER_TENANT',
    kind: 'integer',
    description:
      "Group training: a batch takes at most this many samples of one tenant (the gateway key's tenant; `-` for Track 2) while other tenants' samples wait; the rest wait, in order, for later batches, never dropped. When nobody else has samples waiting the batch is filled with them anyway, so one person talking alone still trains. 0: no cap. docs/operations.md#group-training.",
  },
  {
    key: 'training.tenantWeights',
    env: 'OPENCLAW_TENANT_WEIGHTS',
    kind: 'number-map',
    defaultNote: '(none)',
    description:
      "Group training: loss weight of each tenant's samples, `alice=2,bob=0.5` (a tenant not listed: 1; 0 trains nothing from them). The reference trainer multiplies each sample's token losses by it; slime and Tinker cannot, so a weight other than 1 with them is a configuration error (and a step that carries one, after a reconfigure, is refused). docs/operations.md#group-training.",
  },
  {
    key: 'training.gate.evalSet',
    env: 'OPENCLAW_GATE_EVAL_SET',
    kind: 'string',
    defaultNote: '(none: no gate)',
    description:
      "The publish gate's evaluation set: a JSONL file of held-out conversations (docs/evaluation.md), read by the trainer's worker at each evaluation. Set, a trained version is served only if its score is not below the served version's score minus `training.gate.threshold`; otherwise it is held (kept, not served) and the next step trains from the served version. Reference trainer only.",
  },
  {
    key: 'training.gate.scorer',
    env: 'OPENCLAW_GATE_SCORER',
    kind: 'string',
    description:
      "How the gate scores a reply: `judge` (the run's judge against the item's `next_user`, majority of `judge.votes`) or `style:<rule>` (a deterministic rule, core/reply-scorers.ts, e.g. `style:vowels`).",
  },
  {
    key: 'training.gate.threshold',
    env: 'OPENCLAW_GATE_THRESHOLD',
    kind: 'number',
    description:
      "How far below the served version's score a new version may score and still be served (a version is held when score < served score - threshold).",
  },
  {
    key: 'training.gate.samples',
    env: 'OPENCLAW_GATE_SAMPLES',
    kind: 'integer',
    description:
      'Replies sampled per evaluation conversation (a fixed seed, so both versions meet the same draws).',
  },
  {
    key: 'training.gate.maxTokens',
    env: 'OPENCLAW_GATE_MAX_TOKENS',
    kind: 'integer',
    description: 'Longest reply the gate samples, in tokens.',
  },
  {
    key: 'loss.epsClip',
    env: 'OPENCLAW_EPS_CLIP',
    kind: 'number',
    description: 'PPO clip range below 1 (ratio clipped at 1 - epsClip).',
  },
  {
    key: 'loss.epsClipHigh',
    env: 'OPENCLAW_EPS_CLIP_HIGH',
    kind: 'number',
    description: 'PPO clip range above 1 (ratio clipped at 1 + epsClipHigh).',
  },
  {
    key: 'loss.klCoef',
    env: 'OPENCLAW_KL_COEF',
    kind: 'number',
    description: 'Weight of the KL penalty to the reference model (0 in every original Track 1 script).',
  },
  {
    key: 'loss.klType',
    env: 'OPENCLAW_KL_TYPE',
    kind: 'enum',
    description:
      'KL estimator: `low_var_kl` (k3 clamped to [-10, 10]), `k1`, `k2`, or `k3` (unclamped; below).',
  },
  {
    key: 'loss.entropyCoef',
    env: 'OPENCLAW_ENTROPY_COEF',
    kind: 'number',
    description: 'Weight of the entropy bonus.',
  },
  {
    key: 'loss.wRl',
    env: 'OPENCLAW_COMBINE_W_RL',
    kind: 'number',
    description: 'Combine: weight of the judge reward in the advantage.',
  },
  {
    key: 'loss.wOpd',
    env: 'OPENCLAW_COMBINE_W_OPD',
    kind: 'number',
    description: 'Combine: weight of the teacher term (teacher minus old log-prob) in the advantage.',
  },
  {
    key: 'trainer.backend',
    env: 'OPENCLAW_TRAINER',
    kind: 'enum',
    description:
      "Who trains: `reference` (the reference engine at `engine.url`), `slime` (one container per step on a GPU host, docs/slime.md) `tinker` (Tinker's cloud through the Tinker sidecar, docs/tinker.md) or `fireworks` (Fireworks AI through the Fireworks sidecar, docs/fireworks.md).",
  },
  {
    key: 'trainer.taskQueue',
    env: 'OPENCLAW_TRAINER_TASK_QUEUE',
    kind: 'string',
    defaultNote: 'empty: the control worker trains',
    description:
      'Task queue of training steps and weight publishing, served by `openclaw-rl worker trainer` (e.g. `trainer`, on the GPU host). Set it where training runs start (control worker, `train start`).',
  },
  {
    key: 'trainer.image',
    env: 'OPENCLAW_TRAINER_IMAGE',
    kind: 'string',
    description:
      'slime: the image each epoch container runs (a slime image with the engine package installed; `openclaw/engine:dev` with `epochCommand=reference`).',
  },
  {
    key: 'trainer.epochCommand',
    env: 'OPENCLAW_TRAINER_EPOCH_COMMAND',
    kind: 'enum',
    description:
      "slime: what the epoch container runs: `slime` (`train_async.py` through the project's plugin) or `reference` (the reference engine's `train-epoch`, CPU, same contract).",
  },
  {
    key: 'trainer.sharedDir',
    env: 'OPENCLAW_TRAINER_SHARED_DIR',
    kind: 'string',
    defaultNote: '`<dataDir>/trainer`',
    description:
      'slime: folder of batches and checkpoints shared with the epoch containers, mounted at the same path, so it must be a path on the Docker host.',
  },
  {
    key: 'trainer.baseModel',
    env: 'OPENCLAW_TRAINER_BASE_MODEL',
    kind: 'string',
    defaultNote: '`engine.model`',
    description: 'slime: base Hugging Face model folder on the Docker host (mounted read-only).',
  },
  {
    key: 'trainer.gpus',
    env: 'OPENCLAW_TRAINER_GPUS',
    kind: 'integer',
    description: 'slime: GPUs given to each epoch container (0 runs on CPU).',
  },
  {
    key: 'trainer.gpuIds',
    env: 'OPENCLAW_TRAINER_GPU_IDS',
    kind: 'string-list',
    defaultNote: 'any `gpus` of them',
    description:
      'slime: comma-separated GPU ids (or UUIDs) for the epoch containers, to keep them off the GPUs SGLang serves on; overrides `gpus`.',
  },
  {
    key: 'trainer.shmBytes',
    env: 'OPENCLAW_TRAINER_SHM_BYTES',
    kind: 'integer',
    description: 'slime: shared memory of each epoch container, in bytes (NCCL needs more than 64 MiB).',
  },
  {
    key: 'trainer.extraArgs',
    env: 'OPENCLAW_TRAINER_EXTRA_ARGS',
    kind: 'string',
    description:
      'slime: arguments appended to the epoch command, separated by spaces (e.g. `--tensor-model-parallel-size 2`).',
  },
  {
    key: 'trainer.tinkerUrl',
    env: 'OPENCLAW_TINKER_URL',
    kind: 'string',
    defaultNote: '`engine.url`',
    description:
      'tinker: base URL of the Tinker sidecar (`python -m openclaw_engine.tinker_sidecar`); by default the engine URL, since the sidecar also serves.',
  },
  {
    key: 'trainer.fireworksUrl',
    env: 'OPENCLAW_FIREWORKS_URL',
    kind: 'string',
    defaultNote: '`engine.url`',
    description:
      'fireworks: base URL of the Fireworks sidecar (`python -m openclaw_engine.fireworks_sidecar`), which trains and hot-loads published versions into the deployment; by default the engine URL, since the sidecar also serves chat from the deployment (with `--tokenizer`).',
  },
  {
    key: 'trainer.fireworksBaseModel',
    env: 'OPENCLAW_FIREWORKS_BASE_MODEL',
    kind: 'string',
    description:
      "fireworks: the model the sidecar trains, by Fireworks' name (`accounts/fireworks/models/qwen3-8b`); its LoRA rank is `engine.loraRank` (0: all weights). The API key is FIREWORKS_API_KEY; the SDK resolves the account from it.",
  },
  {
    key: 'trainer.fireworksTrainingShape',
    env: 'OPENCLAW_FIREWORKS_TRAINING_SHAPE',
    kind: 'string',
    description:
      "fireworks: the training shape (`ts-…`) the sidecar creates its trainer job on (accelerators, image, context length); the deployment takes the shape's deployment shape.",
  },
  {
    key: 'trainer.fireworksDeployment',
    env: 'OPENCLAW_FIREWORKS_DEPLOYMENT',
    kind: 'string',
    description:
      'fireworks: id of the deployment each published version is hot-loaded into (created on the training shape if missing); empty: versions are saved, never served.',
  },
  {
    key: 'trainer.fireworksTrainerJob',
    env: 'OPENCLAW_FIREWORKS_TRAINER_JOB',
    kind: 'string',
    defaultNote: 'empty: the sidecar creates one',
    description:
      'fireworks: id of a running trainer job the sidecar reconnects to (after a restart), instead of creating a new one.',
  },
  {
    key: 'trainer.url',
    env: 'OPENCLAW_TRAINER_URL',
    kind: 'string',
    defaultNote: '`engine.url` (with `engine.kind` vllm, `dev` starts it on the next port)',
    description:
      'reference: base URL of the reference engine that trains (`openclaw-rl engine --trainer-only`); by default the policy engine itself, which is the reference engine unless `engine.kind` says otherwise.',
  },
] as const satisfies readonly ConfigOption[];
