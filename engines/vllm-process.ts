// Starts vLLM's OpenAI server from the environment scripts/vllm-setup.sh makes (.venv-vllm; installed on
// first use), with the project's arguments (engines/vllm-server-args.ts), and waits until /health answers.
// vLLM forks its engine core and workers, so it runs as a process group of its own and stops as one.

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { ReadyProcess } from './ready-line-process.js';
import { spawnServer } from './ready-line-process.js';
import {
  VLLM_SERVER_ENV,
  VLLM_SERVER_MODULE,
  type VllmServerSettings,
  vllmApiKeyEnv,
  vllmServerArgs,
} from './vllm-server-args.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The Python that has vLLM: OPENCLAW_VLLM_PYTHON, else the project's .venv-vllm. */
export function vllmPython(env: NodeJS.ProcessEnv = process.env): string {
  return env.OPENCLAW_VLLM_PYTHON || `${ROOT}.venv-vllm/bin/python`;
}

/** Runs scripts/vllm-setup.sh when vLLM's environment is missing (minutes, once). */
export function ensureVllmInstalled(log: (line: string) => void = () => {}): void {
  const python = vllmPython();
  if (existsSync(python)) return;
  log('vllm: installing vLLM into .venv-vllm (scripts/vllm-setup.sh), once');
  const setup = spawnSync('bash', [`${ROOT}scripts/vllm-setup.sh`], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (setup.status !== 0) throw new Error('scripts/vllm-setup.sh failed; see the output above');
}

export interface VllmProcessOptions extends Omit<VllmServerSettings, 'port' | 'host'> {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  readyTimeoutMs?: number;
  onLine?: (line: string) => void;
  /** The engine token: vLLM then requires it on its /v1 routes (VLLM_API_KEY). */
  apiKey?: string | null;
}

export interface VllmProcess extends ReadyProcess {
  /** SIGKILL to the whole group at once: a crash, for recovery tests. */
  kill(): void;
}

export async function startVllm(options: VllmProcessOptions): Promise<VllmProcess> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ? options.port : await freePort(host);
  const args = ['-m', VLLM_SERVER_MODULE, ...vllmServerArgs({ ...options, host, port })];
  const server = spawnServer(vllmPython(), args, {
    name: 'vllm',
    env: { ...VLLM_SERVER_ENV, ...vllmApiKeyEnv(options.apiKey), PYTHONUNBUFFERED: '1' },
    readyTimeoutMs: options.readyTimeoutMs ?? 600_000,
    onLine: options.onLine,
    group: true,
  });
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const exited = new Promise<string>((resolve) =>
    server.child.once('exit', (code, signal) => resolve(`vllm exited (code ${code}, signal ${signal})`)),
  );
  const deadline = Date.now() + (options.readyTimeoutMs ?? 600_000);
  for (;;) {
    const outcome = await Promise.race([exited, healthy(url).then((ok) => (ok ? 'ready' : null))]);
    if (outcome === 'ready') break;
    if (outcome !== null) throw new Error(`${outcome} before it was ready:\n${server.recent.join('\n')}`);
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(
        `vllm not ready within ${options.readyTimeoutMs ?? 600_000} ms:\n${server.recent.join('\n')}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return {
    url,
    process: server.child,
    stop: server.stop,
    kill: () => {
      if (server.child.pid !== undefined) {
        try {
          process.kill(-server.child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };
}

async function healthy(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
