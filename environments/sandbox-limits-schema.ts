// The container limits every container kind's config takes (`limits: {memoryBytes, cpus, pids}`), with the
// kind's own defaults and floors; validated with zod like the rest of the kind's config.
import { z } from 'zod';

export interface SandboxLimitDefaults {
  memoryBytes: number;
  cpus: number;
  pids: number;
  /** The least memory and processes a kind can start with. */
  minMemoryBytes: number;
  minPids: number;
}

export function sandboxLimitsSchema(defaults: SandboxLimitDefaults) {
  return z
    .strictObject({
      memoryBytes: z.number().int().min(defaults.minMemoryBytes).default(defaults.memoryBytes),
      cpus: z.number().positive().default(defaults.cpus),
      pids: z.number().int().min(defaults.minPids).default(defaults.pids),
    })
    .prefault({});
}
