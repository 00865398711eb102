// Progress bars for the commands that wait (eval, train start --wait, images build, rollout). A bar is drawn
// on stderr only when stderr is a terminal, and never with `--json` or `--no-progress`, so what a command
// prints on stdout (tables, JSON) is the same with or without one.
import cliProgress from 'cli-progress';

/** Where bars go: stderr, or any stream that says whether it is a terminal and how wide it is. */
export type ProgressStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

/** The flags every waiting command takes: `--json` and `--no-progress` (commander sets `progress: false`). */
export interface ProgressFlags {
  json?: boolean;
  progress?: boolean;
}

/** Whether a bar is drawn on `stream` for these flags. */
export function drawsProgress(flags: ProgressFlags, stream: ProgressStream = process.stderr): boolean {
  return stream.isTTY === true && flags.json !== true && flags.progress !== false;
}

/** Values shown next to the bar, by the `{name}` placeholders of its format. */
export type ProgressPayload = Record<string, string | number>;

export interface ProgressBar {
  /** False when nothing is drawn (not a terminal, or turned off): updates then cost nothing. */
  readonly drawing: boolean;
  /** Shows `value` of `total`; the first call draws the bar. */
  update(value: number, total: number, payload?: ProgressPayload): void;
  /** Draws the last frame and ends the line; safe to call more than once, or without an update. */
  stop(): void;
}

const quietBar: ProgressBar = { drawing: false, update: () => undefined, stop: () => undefined };

/**
 * A bar in cli-progress's `format` ({bar}, {value}, {total}, {percentage}, {eta_formatted} and the payload's
 * names), or a quiet one when `enabled` is false or the stream is not a terminal.
 */
export function progressBar(
  format: string,
  options: { stream?: ProgressStream; enabled?: boolean } = {},
): ProgressBar {
  const stream = options.stream ?? process.stderr;
  if (options.enabled === false || stream.isTTY !== true) return quietBar;
  const bar = new cliProgress.SingleBar(
    // The cursor stays visible: a command stopped with Ctrl-C must not leave the terminal without one.
    { stream, format, hideCursor: false, barsize: 30 },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  let stopped = false;
  let shownTotal = -1;
  return {
    drawing: true,
    update(value, total, payload = {}) {
      if (stopped) return;
      if (!started) {
        bar.start(total, value, payload);
        started = true;
      } else {
        if (total !== shownTotal) bar.setTotal(total);
        bar.update(value, payload);
      }
      shownTotal = total;
    },
    stop() {
      if (started && !stopped) bar.stop();
      stopped = true;
    },
  };
}

/** The mean as the bars show it: three decimals, or `-` when there is none yet. */
export function formatMean(values: readonly (number | null)[]): string {
  const scored = values.filter((v): v is number => v !== null);
  return scored.length === 0 ? '-' : (scored.reduce((a, b) => a + b, 0) / scored.length).toFixed(3);
}
