// How busy the machine was while a benchmark ran: the load average at its start and at its end, and whether
// its figures count as quiet-machine figures (goals are judged on those: under load, orders can flip). Every
// benchmark prints both lines; bench/engine_bench.py does the same in Python.

import { cpus, loadavg } from 'node:os';

/** Above this one-minute load average, at the start or the end, a run's figures are loaded ones. */
export const QUIET_LOAD = 2;

function reading(): string {
  return loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
}

/**
 * Prints `load average at start …` now and returns what prints the end line with the verdict: `quiet` only when
 * the one-minute load was below QUIET_LOAD at both ends.
 */
export function reportLoad(bench: string): () => void {
  const [startLoad = 0] = loadavg();
  console.log(`${bench}: ${cpus().length} cores, load average at start ${reading()}`);
  return () => {
    const [endLoad = 0] = loadavg();
    const quiet = startLoad < QUIET_LOAD && endLoad < QUIET_LOAD;
    console.log(
      `load average at end ${reading()}: ${
        quiet
          ? 'a quiet machine (below 2 at start and end): figures goals are judged on'
          : 'LOADED (2 or more at start or end): not quiet-machine figures; orders can flip'
      }`,
    );
  };
}
