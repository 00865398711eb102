// The engine server command lines the project builds, parsed by the engines' own argument parsers: SGLang
// 0.5.23's ServerArgs (in .venv-sglang) and vLLM's serve parser (in .venv-vllm). They come from where a user
// gets them: the gpu worker's container settings, `dev --engine vllm`'s arguments, and docker-compose.yml as
// compose itself resolves it (defaults filled in).

import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { engineCommand, parseEngineContainerSettings } from '../../activities/engine-container-settings.js';
import { vllmServerArgs } from '../../engines/vllm-server-args.js';
import { composeCommand } from '../compose/compose-command.js';
import { sglangArgvOf } from '../support/sglang-launch-double.js';
import { checkWithEngineCode, failures } from './python-check.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');

interface ComposeService {
  command?: string[];
  entrypoint?: string[];
}

/** The services as compose resolves them with `envFile` (every profile). */
async function composeServices(envFile: string | null): Promise<Record<string, ComposeService>> {
  const [command, ...prefix] = await composeCommand();
  const args = [...prefix, '-f', 'docker-compose.yml', ...(envFile ? ['--env-file', envFile] : []), 'config'];
  const env = { ...process.env, COMPOSE_PROFILES: 'gpu,gpu-judge,vllm,tinker,gpu-worker' };
  const { stdout } = await run(command ?? 'docker-compose', args, { cwd: ROOT, env });
  return (parse(stdout) as { services: Record<string, ComposeService> }).services;
}

/** The services' commands as compose resolves them with `envFile` (every profile). */
async function composeCommands(envFile: string | null): Promise<Record<string, string[]>> {
  const services = await composeServices(envFile);
  return Object.fromEntries(Object.entries(services).map(([name, s]) => [name, s.command ?? []]));
}

/** The arguments after `python3 -m <module>`. */
function argsAfter(module: string, command: string[]): string[] {
  const at = command.indexOf(module);
  if (at < 0) throw new Error(`${module} is not in ${command.join(' ')}`);
  return command.slice(at + 1);
}

describe('engine server command lines, parsed by the engines themselves', () => {
  it("SGLang's: the gpu worker's container and compose's sglang and judge services, with the engine token", async () => {
    const services = await composeServices('docs/examples/gpu.env');
    const container = engineCommand(
      parseEngineContainerSettings({
        kind: 'sglang',
        modelPath: '/srv/m',
        tensorParallel: 2,
        token: 't0ken',
      }),
    );
    // Each starts through the launcher, which reads the token (the container's variable, the file data-init
    // made) and hands it to SGLang inside the process; the double reports what SGLang's parser gets.
    const dir = await mkdtemp(join(tmpdir(), 'sglang-token-'));
    const tokenEnv = { OPENCLAW_ENGINE_TOKEN_FILE: join(dir, 'engine-token') };
    await writeFile(tokenEnv.OPENCLAW_ENGINE_TOKEN_FILE, 'ocrl-engine-t0ken\n');
    const composed = (service: ComposeService | undefined) =>
      sglangArgvOf([...(service?.entrypoint ?? []), ...(service?.command ?? [])], tokenEnv);
    const commands = [
      sglangArgvOf(container, { OPENCLAW_ENGINE_TOKEN: 't0ken' }),
      composed(services.sglang),
      composed(services.judge),
    ];
    await rm(dir, { recursive: true, force: true });
    for (const argv of commands)
      expect(argv.slice(-2)).toEqual(['--api-key', argv === commands[0] ? 't0ken' : 'ocrl-engine-t0ken']);
    for (const command of [container, services.sglang?.command ?? [], services.judge?.command ?? []])
      expect(command.join(' ')).not.toContain('t0ken');
    const result = await checkWithEngineCode('sglang', {
      commands: [...commands, ['--model-path', '/m', '--no-such-flag']],
    });
    expect(result.commands.at(-1)?.ok).toBe(false);
    expect(failures({ ...result, commands: result.commands.slice(0, -1) })).toEqual([]);
  }, 120_000);

  it("vLLM's: dev's, the gpu worker's container and compose's vllm service", async () => {
    const compose = await composeCommands('docs/examples/vllm.env');
    const dev = vllmServerArgs({
      model: '/data/tiny-model-h64',
      servedModelName: 'default',
      host: '127.0.0.1',
      port: 30000,
      device: 'cpu',
    });
    const container = engineCommand(
      parseEngineContainerSettings({ kind: 'vllm', modelPath: '/srv/m', tensorParallel: 2 }),
    );
    // compose's entrypoint adds `--model <folder>` in front of the service's command.
    const service = ['--model', '/models/policy', ...(compose.vllm ?? [])];
    const result = await checkWithEngineCode('vllm', {
      commands: [dev, argsAfter('vllm.entrypoints.openai.api_server', container), service],
    });
    expect(failures(result)).toEqual([]);
    // compose's service runs what dev runs (on CPU), flag for flag, listening on every address.
    const sameAsDev = vllmServerArgs({
      model: '/models/policy',
      servedModelName: 'default',
      host: '0.0.0.0',
      port: 30000,
      device: 'cpu',
    });
    expect(service).toEqual(sameAsDev);
  }, 120_000);
});
