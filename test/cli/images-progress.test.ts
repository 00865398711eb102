// `images build` with a bar on a terminal double, on the real Docker engine (an image that is up to date is
// skipped; one that is not is built), and the build log's count without a bar.
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { imageBuildLog, imagesToBuild, registerImageCommands } from '../../cli/images-command.js';
import { progressBar } from '../../cli/progress.js';
import { listSandboxImages } from '../../environments/sandbox-images.js';
import { BAR_CHARACTERS, lastFrame, recordingStreamDouble } from './terminal-stream-double.js';

describe('images build progress', () => {
  afterEach(() => vi.restoreAllMocks());

  it('counts the images a build goes through', async () => {
    expect(await imagesToBuild(['sandbox-shell', 'sandbox-python'])).toBe(2);
    // Every sandbox image, and at least one bundled terminal task brings its own Dockerfile.
    expect(await imagesToBuild(undefined)).toBeGreaterThan((await listSandboxImages()).length);
  });

  it('prints each line when there is no bar, and counts built and skipped images on one', () => {
    const printed: string[] = [];
    const quiet = imageBuildLog(progressBar('{bar}', { enabled: false }), 2, (line) => printed.push(line));
    quiet('building openclaw/a on base');
    quiet('built openclaw/a in 1.0 s');
    expect(printed).toEqual(['building openclaw/a on base', 'built openclaw/a in 1.0 s']);

    const { stream, text } = recordingStreamDouble(true);
    const bar = progressBar('images |{bar}| {value}/{total} done | {current}', { stream });
    const drawn = imageBuildLog(bar, 2, (line) => printed.push(line));
    drawn('skipped openclaw/a (up to date)');
    drawn('building openclaw/b on base');
    drawn('built openclaw/b in 2.0 s');
    bar.stop();
    expect(printed).toHaveLength(2);
    expect(lastFrame(text())).toMatch(/^images \|[█░]+\| 2\/2 done \| built openclaw\/b in 2\.0 s$/);
  });

  it('draws the bar during a real build and prints the same report on stdout', async () => {
    const printed: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
      printed.push(String(line));
    });
    const stderr = recordingStreamDouble(true);
    const program = new Command('openclaw-rl').exitOverride();
    registerImageCommands(program, { progressStream: stderr.stream });
    await program.parseAsync(['images', 'build', '--only', 'sandbox-shell'], { from: 'user' });
    expect(printed.join('\n')).toMatch(/^base: .*\n(built|skipped): openclaw\/sandbox-shell/);
    expect(printed.join('\n')).not.toMatch(BAR_CHARACTERS);
    expect(lastFrame(stderr.text())).toMatch(
      /^images \|[█░]+\| 1\/1 done \| (built|skipped) openclaw\/sandbox-shell/,
    );
  }, 300_000);
});
