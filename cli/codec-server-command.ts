// `openclaw-rl codec-server`: decrypts payloads for the Temporal UI (its codec endpoint) and the `temporal` CLI
// (`--codec-endpoint`), with the key ring this configuration resolves. `dev` starts one too.

import type { AddressInfo } from 'node:net';
import { type Command, Option } from 'commander';
import type { OpenClawConfig } from '../core/config.js';
import { clientHost } from '../gateway/main.js';
import { codecCorsOrigins, createCodecServer } from '../security/codec-server.js';
import { AesGcmPayloadCodec } from '../security/payload-codec.js';
import { resolvePayloadKeys } from '../security/payload-keys.js';
import { configFromFlags } from './cli-config.js';
import { integer, untilStopped } from './options.js';

export interface RunningCodecServer {
  url: string;
  origins: string[];
  close(): Promise<void>;
}

/** Listens on codecServer.host:port; `extraOrigins` are UI origins to allow beside the defaults. */
export async function startCodecServer(
  config: OpenClawConfig,
  extraOrigins: readonly string[] = [],
): Promise<RunningCodecServer> {
  const { ring, source } = resolvePayloadKeys(config);
  if (!ring) throw new Error(`the codec server needs the payload keys: ${source}`);
  const origins = codecCorsOrigins(config, extraOrigins);
  const app = createCodecServer({ codec: new AesGcmPayloadCodec(ring), corsOrigins: origins });
  await app.listen({ host: config.codecServer.host, port: config.codecServer.port });
  const address = app.server.address() as AddressInfo;
  return { url: `http://${clientHost(address)}:${address.port}`, origins, close: () => app.close() };
}

export function registerCodecServerCommand(program: Command): void {
  program
    .command('codec-server')
    .description("decrypt payloads for the Temporal UI: set the UI's codec endpoint to the URL it prints")
    .addOption(new Option('--host <host>', 'address (OPENCLAW_CODEC_HOST; default 127.0.0.1)'))
    .addOption(new Option('--port <port>', 'port (OPENCLAW_CODEC_PORT; default 8234)'))
    .addOption(
      new Option(
        '--cors-origin <origins>',
        'comma-separated UI origins allowed to call it (OPENCLAW_CODEC_CORS_ORIGINS; default the dev and compose UIs)',
      ),
    )
    .addOption(new Option('--data-dir <dir>', 'data folder of the payload key file (OPENCLAW_DATA_DIR)'))
    .action(async (flags: { host?: string; port?: string; corsOrigin?: string; dataDir?: string }) => {
      const base = configFromFlags({ dataDir: flags.dataDir });
      const port = integer('--port', flags.port) ?? base.codecServer.port;
      const config: OpenClawConfig = {
        ...base,
        codecServer: {
          host: flags.host ?? base.codecServer.host,
          port,
          corsOrigins: flags.corsOrigin
            ? flags.corsOrigin
                .split(',')
                .map((o) => o.trim())
                .filter(Boolean)
            : base.codecServer.corsOrigins,
        },
      };
      const server = await startCodecServer(config);
      console.log(`codec server ${server.url} (UI origins: ${server.origins.join(', ')})`);
      await untilStopped();
      await server.close();
    });
}
