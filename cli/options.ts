// What every command of `openclaw-rl` shares: option factories (commander needs a fresh `Option` per command),
// integer flags, and the wait for Ctrl-C that long-running commands end on.
import { Option } from 'commander';

/** `--temporal-address`: the Temporal frontend a command connects to. */
export function temporalAddressOption(
  description = 'Temporal frontend (TEMPORAL_ADDRESS; default 127.0.0.1:7233)',
): Option {
  return new Option('--temporal-address <host:port>', description);
}

/** `--task-queue`: where the workflows run (the control worker's queue). */
export function taskQueueOption(
  description = 'queue the workflows run on (the control worker; default control)',
): Option {
  return new Option('--task-queue <queue>', description);
}

/** A flag's integer value; undefined when it was not given, an error naming the flag when it is no integer. */
export function integer(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (!Number.isInteger(parsed)) throw new Error(`${flag} must be an integer, got "${value}"`);
  return parsed;
}

/** Resolves when the process is asked to stop (Ctrl-C or SIGTERM). */
export function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

/** `--metrics-port`: a worker process's Prometheus endpoint (docs/observability.md has each default). */
export function metricsPortOption(defaults: string): Option {
  return new Option(
    '--metrics-port <port>',
    `Prometheus /metrics port, 0 off (OPENCLAW_METRICS_PORT; default ${defaults})`,
  );
}
