// `openclaw-rl keys`: the gateway's API key file and the payload key ring, made once per data folder (compose
// runs `keys init` on every start; it changes nothing once they exist) and rotated in place.

import { type Command, Option } from 'commander';
import { addApiKey, apiKeysFile, ensureApiKeysFile } from '../security/api-keys.js';
import { codecTokenFile, ensureCodecToken } from '../security/codec-token.js';
import { ensureEngineTokenFile } from '../security/engine-token.js';
import { ensurePayloadKeyFile, payloadKeysFile, rotatePayloadKeyFile } from '../security/payload-keys.js';
import { configFromFlags } from './cli-config.js';

const dataDirOption = () =>
  new Option('--data-dir <dir>', 'data folder whose keys/ to use (OPENCLAW_DATA_DIR; default data)');

export function registerKeyCommands(program: Command): void {
  const keys = program.command('keys').description('the gateway API keys and the payload encryption keys');

  keys
    .command('init')
    .description(
      'create the API keys file (one new key), the payload key ring, the codec token and, when engine.tokenFile names one, the engine token file, unless they exist; prints where they are',
    )
    .addOption(dataDirOption())
    .action(async (flags: { dataDir?: string }) => {
      const config = configFromFlags({ dataDir: flags.dataDir });
      const apiFile = apiKeysFile(config);
      const api = await ensureApiKeysFile(apiFile);
      console.log(
        `api keys ${apiFile} (${api.created ? 'created with one new key' : 'exists, unchanged'}): clients send one as "Authorization: Bearer <key>"`,
      );
      if (config.engine.tokenFile && !config.engine.token) {
        const engine = await ensureEngineTokenFile(config.engine.tokenFile);
        console.log(
          `engine token ${config.engine.tokenFile} (${engine.created ? 'created' : 'exists, unchanged'}): engines and trainers require it`,
        );
      }
      if (!config.codecServer.token) {
        const codec = await ensureCodecToken(config);
        console.log(
          `codec token ${codecTokenFile(config)} (${codec.created ? 'created' : 'exists, unchanged'}): the codec server requires it`,
        );
      }
      if (config.payloads.keys.length > 0) {
        console.log('payload keys from OPENCLAW_PAYLOAD_KEYS: no key file needed');
        return;
      }
      const payloadFile = payloadKeysFile(config);
      const payload = await ensurePayloadKeyFile(payloadFile);
      console.log(`payload keys ${payloadFile} (${payload.created ? 'created' : 'exists, unchanged'})`);
    });

  keys
    .command('add')
    .description(
      "add a new API key for a tenant to the keys file and print it (a tenant's sessions are reachable only with its keys; restart the gateway to use it)",
    )
    .requiredOption('--tenant <name>', 'the tenant the key belongs to (letters, digits, ".", "_", "@", "-")')
    .addOption(dataDirOption())
    .action(async (flags: { tenant: string; dataDir?: string }) => {
      const config = configFromFlags({ dataDir: flags.dataDir });
      const file = apiKeysFile(config);
      const key = await addApiKey(file, flags.tenant);
      console.error(`api keys ${file}: added a key for tenant ${flags.tenant}`);
      console.log(key);
    });

  keys
    .command('rotate')
    .description(
      'add a new payload key and make it the one that encrypts; older keys stay to decrypt what they wrote (restart every process to use it)',
    )
    .addOption(dataDirOption())
    .action(async (flags: { dataDir?: string }) => {
      const config = configFromFlags({ dataDir: flags.dataDir });
      if (config.payloads.keys.length > 0)
        throw new Error(
          'the payload keys come from OPENCLAW_PAYLOAD_KEYS: add a key there and point OPENCLAW_PAYLOAD_KEY_ID at it',
        );
      const file = payloadKeysFile(config);
      const { currentId, keyIds } = await rotatePayloadKeyFile(file);
      console.log(`payload keys ${file}: ${currentId} now encrypts; ${keyIds.length} keys decrypt`);
    });
}
