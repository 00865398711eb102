// `openclaw-rl demo`: the learning demo (cli/learning-demo.ts) with the usual config flags and environment.
import { readFile } from 'node:fs/promises';
import { type Command, Option } from 'commander';
import { z } from 'zod';
import { describeZodError } from '../core/training-settings.js';
import { parseApiKeysFile } from '../security/api-keys.js';
import { type CommonFlags, configFromFlags } from './cli-config.js';
import { runGatewayDemo } from './gateway-demo.js';
import { DEMO_DEFAULTS, DEMO_ENV_DEFAULTS, demoOptionsSchema, runLearningDemo } from './learning-demo.js';
import { integer, temporalAddressOption, untilStopped } from './options.js';

interface DemoFlags extends CommonFlags {
  versions?: string;
  scorer?: string;
  maxTokens?: string;
  samples?: string;
  exit?: boolean;
  gatewayUrl?: string;
  apiKeyFile?: string;
}

const count = (flag: string) =>
  z.coerce
    .number({ error: `${flag} must be a number` })
    .int(`${flag} must be an integer`)
    .optional();

const flagsSchema = z.object({
  versions: count('--versions'),
  scorer: z.string().optional(),
  maxTokens: count('--max-tokens'),
  samples: count('--samples'),
  exit: z.boolean().optional(),
  gatewayUrl: z.url({ protocol: /^https?$/, error: '--gateway-url must be an http(s) URL' }).optional(),
  apiKeyFile: z.string().min(1).optional(),
});

/** The key for `--gateway-url`: the first key of `--api-key-file` (a gateway keys file, or just the key), else OPENCLAW_API_KEY. */
async function gatewayApiKey(file: string | undefined): Promise<string> {
  if (file !== undefined) {
    const key = parseApiKeysFile(await readFile(file, 'utf8'))[0]?.key;
    if (!key) throw new Error(`--api-key-file ${file} holds no key`);
    return key;
  }
  const key = process.env.OPENCLAW_API_KEY?.trim();
  if (!key)
    throw new Error(
      "--gateway-url needs the gateway's API key: --api-key-file FILE or OPENCLAW_API_KEY (compose: docker compose exec gateway cat /keys/api-keys)",
    );
  return key;
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description(
      'the learning demo: the dev stack trains on replies rated by a style rule and prints the held-out score per version',
    )
    .addOption(new Option('--versions <n>', `versions to train (default ${DEMO_DEFAULTS.versions})`))
    .addOption(
      new Option('--scorer <name>', `style:<rule> that rates replies (default ${DEMO_DEFAULTS.scorer})`),
    )
    .addOption(new Option('--max-tokens <n>', `tokens per reply (default ${DEMO_DEFAULTS.maxTokens})`))
    .addOption(
      new Option('--samples <n>', `seeded replies per held-out prompt (default ${DEMO_DEFAULTS.samples})`),
    )
    .addOption(new Option('--exit', 'stop when the scores are printed, rather than keep serving'))
    .addOption(
      new Option(
        '--gateway-url <url>',
        "drive a running gateway (compose with docker-compose.demo.yml) instead of starting a stack; prints its publish gate's scores",
      ),
    )
    .addOption(
      new Option(
        '--api-key-file <file>',
        "with --gateway-url: the gateway's API key (else OPENCLAW_API_KEY)",
      ),
    )
    .addOption(
      new Option('--batch-size <n>', 'samples per training step (OPENCLAW_BATCH_SIZE; demo default 4)'),
    )
    .addOption(new Option('--port <port>', 'gateway port (OPENCLAW_GATEWAY_PORT; default 8000)'))
    .addOption(temporalAddressOption())
    .addOption(new Option('--data-dir <dir>', 'data dir (OPENCLAW_DATA_DIR; default data)'))
    .addOption(new Option('--run-id <id>', 'training run name (OPENCLAW_RUN_ID; demo default "demo")'))
    .addOption(new Option('--engine-url <url>', 'policy engine base URL (OPENCLAW_ENGINE_URL)'))
    .addOption(new Option('--model <dir>', 'model folder (OPENCLAW_MODEL; default: the tiny one)'))
    .action(async (raw: DemoFlags) => {
      const parsed = flagsSchema.safeParse(raw);
      if (!parsed.success) throw new Error(describeZodError(parsed.error));
      const { gatewayUrl, apiKeyFile, ...demoFlags } = parsed.data;
      const options = demoOptionsSchema.safeParse({
        ...DEMO_DEFAULTS,
        ...Object.fromEntries(Object.entries(demoFlags).filter(([, v]) => v !== undefined)),
      });
      if (!options.success) throw new Error(describeZodError(options.error));
      if (gatewayUrl !== undefined) {
        // The stack's own settings train and gate (docker-compose.demo.yml); this process only talks and rates.
        await runGatewayDemo({
          gatewayUrl,
          apiKey: await gatewayApiKey(apiKeyFile),
          versions: options.data.versions,
          scorer: options.data.scorer,
          maxTokens: options.data.maxTokens,
          gain: options.data.gain,
          batchSize:
            integer('--batch-size', raw.batchSize ?? process.env.OPENCLAW_BATCH_SIZE) ??
            Number(DEMO_ENV_DEFAULTS.OPENCLAW_BATCH_SIZE),
          versionTimeoutMs: options.data.versionTimeoutMs,
        });
        return;
      }
      // The demo's run settings sit under the environment and flags, which may still change them.
      const env = { ...DEMO_ENV_DEFAULTS, ...process.env };
      const config = configFromFlags(raw, env);
      await runLearningDemo({ config, options: options.data, stop: untilStopped() });
    });
}
