// The progress module on a stream that is not a terminal (nothing drawn) and on a terminal double (bar frames).
import { describe, expect, it } from 'vitest';
import { drawsProgress, formatMean, progressBar } from '../../cli/progress.js';
import { BAR_CHARACTERS, lastFrame, recordingStreamDouble } from './terminal-stream-double.js';

describe('progress bars', () => {
  it('draws nothing on a stream that is not a terminal', async () => {
    const { stream, text } = recordingStreamDouble(false);
    const bar = progressBar('items |{bar}| {value}/{total}', { stream });
    expect(bar.drawing).toBe(false);
    bar.update(1, 3);
    bar.update(3, 3);
    bar.stop();
    await new Promise((resolve) => setImmediate(resolve));
    expect(text()).toBe('');
  });

  it('draws bar frames with the payload on a terminal, and ends the line when stopped', async () => {
    const { stream, text } = recordingStreamDouble(true);
    const bar = progressBar('items |{bar}| {value}/{total} judged | mean score {mean}', { stream });
    expect(bar.drawing).toBe(true);
    bar.update(0, 4, { mean: formatMean([]) });
    bar.update(2, 4, { mean: formatMean([1, null, 0]) });
    bar.update(4, 5, { mean: formatMean([1, 0, -1, 1]) });
    bar.stop();
    bar.stop();
    await new Promise((resolve) => setImmediate(resolve));
    expect(text()).toMatch(BAR_CHARACTERS);
    expect(text()).toContain('0/4 judged | mean score -');
    expect(lastFrame(text())).toMatch(/^items \|[█░]{30}\| 4\/5 judged \| mean score 0\.250$/);
    expect(text().endsWith('\n')).toBe(true);
  });

  it('is off with --json or --no-progress, and on a stream that is not a terminal', () => {
    const tty = recordingStreamDouble(true).stream;
    expect(drawsProgress({}, tty)).toBe(true);
    expect(drawsProgress({ json: true }, tty)).toBe(false);
    expect(drawsProgress({ progress: false }, tty)).toBe(false);
    expect(drawsProgress({}, recordingStreamDouble(false).stream)).toBe(false);
    const { stream, text } = recordingStreamDouble(true);
    const bar = progressBar('{bar}', { stream, enabled: drawsProgress({ json: true }, stream) });
    bar.update(1, 2);
    bar.stop();
    expect(text()).toBe('');
  });
});
