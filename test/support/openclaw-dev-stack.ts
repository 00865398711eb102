import { join } from 'node:path';
import { FileSampleStore } from '../../store/sample-store.js';
import { type CliProcess, freePortPair, startCli } from './cli-process.js';

/** `openclaw-rl dev` started as docs/openclaw.md tells a user, for the real OpenClaw agent to talk to. */
export interface DevStack {
  readonly dev: CliProcess;
  readonly engineUrl: string;
  /** The Temporal dev server `dev` starts (namespace `default`). */
  readonly temporalAddress: string;
  /** The gateway's OpenAI base URL (`.../v1`), known before the stack is up. */
  readonly gatewayUrl: string;
  /** The stack's sample store, read directly (turn records, samples, exclusions). */
  readonly store: FileSampleStore;
  /** Resolves once `dev` printed its gateway URL and `ready`. */
  ready(): Promise<void>;
}

export interface DevStackSettings {
  judgeUrl: string;
  apiKey: string;
  batchSize: number;
}

/** Starts `openclaw-rl dev` (rl method, the given judge) with its data in `dir/data`; see `ready()`. */
export async function startDevStack(dir: string, settings: DevStackSettings): Promise<DevStack> {
  const temporalPort = await freePortPair(1000);
  const enginePort = await freePortPair(1); // the engine, and the frozen judge engine `dev` starts beside it
  const gatewayPort = await freePortPair(0);
  const engineUrl = `http://127.0.0.1:${enginePort}`;
  const temporalAddress = `127.0.0.1:${temporalPort}`;
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}/v1`;
  const dev = startCli(
    'dev',
    ['dev'],
    {
      OPENCLAW_DATA_DIR: join(dir, 'data'),
      OPENCLAW_GATEWAY_PORT: String(gatewayPort),
      OPENCLAW_ENGINE_URL: engineUrl,
      TEMPORAL_ADDRESS: temporalAddress,
      OPENCLAW_JUDGE_URL: settings.judgeUrl,
      OPENCLAW_METHOD: 'rl',
      OPENCLAW_BATCH_SIZE: String(settings.batchSize),
      OPENCLAW_API_KEYS: settings.apiKey,
    },
    join(dir, 'dev.log'),
  );
  return {
    dev,
    engineUrl,
    temporalAddress,
    gatewayUrl,
    store: new FileSampleStore(join(dir, 'data', 'store')),
    async ready() {
      const line = await dev.waitForLine(/^gateway http/, 300_000);
      if (line !== `gateway ${gatewayUrl}`) throw new Error(`dev printed ${line}, not gateway ${gatewayUrl}`);
      await dev.waitForLine(/^ready$/, 60_000);
    },
  };
}
