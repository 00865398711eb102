// `openclaw-rl codec-server`: decrypts payloads for the Temporal UI (its codec endpoint) and the `temporal` CLI
// (`--codec-endpoint`), with the key ring this configuration resolves. `dev` starts one too.

import type { AddressInfo } from 'node:net';
import { type Command, Option } from 'commander';
import type { OpenClawConfig } from '../core/config.js';
import { clientHost } from '../gateway/main.js';
import { codecCorsOrigins, createCodecServer } from '../security/codec-server.js';
import { codecTokenFile, ensureCodecToken } from '../security/codec-token.js';
import { AesGcmPayloadCodec } from '../security/payload-codec.js';
import { resolvePayloadKeys } from '../security/payload-keys.js';
import { configFromFlags } from './cli-config.js';
import { integer, untilStopped } from './options.js';

export interface RunningCodecServer {
  url: string;
  /** The UI's codec endpoint: the URL with the token as its first path segment (a secret, like the token). */
  uiEndpoint: string;
  /** Where the token is read from (the file, or the variable that set it). */
  tokenSource: string;
  origins: string[];
  close(): Promise<void>;
}

/**
 * Listens on codecServer.host:port with the codec token (made on the first start); `extraOrigins` are UI origins
 * to allow beside the defaults.
 */
export async function startCodecServer(
  config: OpenClawConfig,
  extraOrigins: readonly string[] = [],
): Promise<RunningCodecServer> {
  const { ring, source } = resolvePayloadKeys(config);
  if (!ring) throw new Error(`the codec server needs the payload keys: ${source}`);
  const origins = codecCorsOrigins(config, extraOrigins);
  const { token } = await ensureCodecToken(config);
  const app = createCodecServer({
    codec: new AesGcmPayloadCodec(ring),
    corsOrigins: origins,
    token,
    hosts: config.codecServer.hosts,
  });
  await app.listen({ host: config.codecServer.host, port: config.codecServer.port });
  const address = app.server.address() as AddressInfo;
  const url = `http://${clientHost(address)}:${address.port}`;
  return {
    url,
    uiEndpoint: `${url}/${encodeURIComponent(token)}`,
    tokenSource: config.codecServer.token ? 'OPENCLAW_CODEC_TOKEN' : codecTokenFile(config),
    origins,
    close: () => app.close(),
  };
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
          ...base.codecServer,
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
      console.log(
        `its token is in ${server.tokenSource}: UI codec endpoint ${server.url}/<token>; CLI TEMPORAL_CODEC_ENDPOINT=${server.url} TEMPORAL_CODEC_AUTH="Bearer <token>"`,
      );
      await untilStopped();
      await server.close();
    });
}
