// The default task queue names, here so that the config's schemas (core) can default to them; everything above
// core takes them, with the per-host queues, from temporal/task-queues.ts.

/** The control worker: sessions, scoring, the training loop, judge calls. */
export const CONTROL_TASK_QUEUE = 'control';

/** The queue `worker trainer` polls when the config names none. */
export const DEFAULT_TRAINER_TASK_QUEUE = 'trainer';

/** The queue env hosts share: rollouts are placed here, then run on the chosen host's own queue. */
export const ENV_TASK_QUEUE = 'env';
