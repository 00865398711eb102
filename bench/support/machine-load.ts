// How busy the machine was while a benchmark ran: the one-minute load average before and after it, and whether
// its figures count as quiet-machine figures (goals are judged on those: under load, orders can flip). A label,
// never a gate: no benchmark passes or fails on it. bench/machine_load.py says the same for the Python benches.

import { cpus, loadavg } from 'node:os';

/** At or above this one-minute load average, before or after, a run's figures are loaded ones. */
export const QUIET_LOAD = 2;

/** What a benchmark records beside its figures (and in any JSON it writes). */
export interface MachineLoad {
  before: number;
  after: number;
  quiet: boolean;
  label: string;
}

/** `load average before 1.23 / after 1.80: quiet`, or `…: LOADED (above 2): …` when either is 2 or more. */
export function machineLoad(before: number, after: number): MachineLoad {
  const quiet = before < QUIET_LOAD && after < QUIET_LOAD;
  const verdict = quiet
    ? 'quiet'
    : `LOADED (above ${QUIET_LOAD}): these figures are not the ones goals are judged on`;
  return {
    before,
    after,
    quiet,
    label: `load average before ${before.toFixed(2)} / after ${after.toFixed(2)}: ${verdict}`,
  };
}

function oneMinute(): number {
  return loadavg()[0] ?? 0;
}

/**
 * Prints the load average now (all three figures, so a run that dies still shows it) and returns what prints the
 * label at the end and returns it as a record.
 */
export function reportLoad(bench: string): () => MachineLoad {
  const before = oneMinute();
  const reading = loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
  console.log(`${bench}: ${cpus().length} cores, load average before ${reading}`);
  return () => {
    const load = machineLoad(before, oneMinute());
    console.log(load.label);
    return load;
  };
}
