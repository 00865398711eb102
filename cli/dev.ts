import { referenceTrainerUrl } from '../activities/trainer-backends/trainer-from-config.js';
import type { OpenClawConfig } from '../core/config.js';
import { parsePolicyVersion } from '../core/policy-version.js';
import { createEngineAdapter, policyEngineFromConfig } from '../engines/engine-adapters.js';
import { gatewayApiKeys, startGateway } from '../gateway/main.js';
import { ensurePayloadKeyFile, payloadKeysFile } from '../security/payload-keys.js';
import { storeFromConfig } from '../store/store-from-config.js';
import {
  connectClient,
  connectWorker,
  describeTemporalConnection,
  temporalConnectionSettings,
} from '../temporal/connection.js';
import { createControlWorker } from '../workers/control-worker.js';
import { startWorkerTelemetry } from '../workers/worker-telemetry.js';
import { type RunningCodecServer, startCodecServer } from './codec-server-command.js';
import {
  launchEngine,
  launchJudgeEngine,
  resolveModel,
  startTrainerBeside,
  usesJudgeEngine,
} from './engine-launch.js';
import {
  type DevServer,
  devServerUiPort,
  isReachable,
  splitAddress,
  startTemporalDevServer,
} from './temporal-dev-server.js';
import { ensureTrainingRun, trainingRunIsRunning } from './training-run.js';

/**
 * The whole Track 1 stack in one process tree: a Temporal dev server unless one answers (its database in
 * the data dir, so a restart resumes), the policy engine of `engine.kind` unless one answers (the reference
 * engine, or vLLM with a reference trainer beside it), the frozen judge engine (the base checkpoint, never
 * updated) unless the judge and teacher are elsewhere or one answers, the control worker, the gateway and the
 * training run. Payloads are encrypted with a key ring it creates in the data dir (unless
 * `payloads.encryption` is off or keys are configured), and a codec server lets the dev server's UI show them
 * decrypted. Prints the URLs, then `ready`. Stops everything when `stop` resolves.
 */
export async function runDev(config: OpenClawConfig, stop: Promise<void>): Promise<void> {
  const cleanups: (() => Promise<void>)[] = [];
  const say = (line: string) => console.log(line);
  try {
    // Refused before anything starts, rather than after Temporal and the engine are up.
    gatewayApiKeys(config);
    if (config.payloads.encryption !== 'off' && config.payloads.keys.length === 0) {
      const file = payloadKeysFile(config);
      const { created } = await ensurePayloadKeyFile(file);
      say(`payload keys ${file}${created ? ' (created)' : ''}`);
    }
    const settings = temporalConnectionSettings(config);
    say(describeTemporalConnection(settings));

    let codec: RunningCodecServer | null = null;
    if (settings.encryption.plugin) {
      const { host } = splitAddress(config.temporal.address);
      const uiPort = devServerUiPort(config.temporal.address);
      const uiOrigins = [host, '127.0.0.1', 'localhost'].map((h) => `http://${h}:${uiPort}`);
      try {
        codec = await startCodecServer(config, uiOrigins);
        const running = codec;
        cleanups.push(() => running.close());
      } catch (error) {
        say(`codec server not started (the UI shows payloads encrypted): ${(error as Error).message}`);
      }
    }

    let temporalUi: string;
    if (await isReachable(config.temporal.address)) {
      temporalUi = '(the Temporal server already running there; its UI is wherever it serves one)';
      say(`temporal ${config.temporal.address} (already running)`);
    } else if (settings.options.tls || settings.options.apiKey) {
      throw new Error(
        `no Temporal server answers at ${config.temporal.address}; dev starts a local one only without TLS or an API key`,
      );
    } else {
      say(
        `temporal: starting a dev server at ${config.temporal.address} (database ${config.dataDir}/temporal.db)`,
      );
      const server: DevServer = await startTemporalDevServer(config.temporal.address, config.dataDir, {
        ...(codec && { codecEndpoint: codec.uiEndpoint }),
      });
      cleanups.push(() => server.stop());
      temporalUi = server.uiUrl;
    }

    // Before the client connects: it also starts tracing, which the client and worker pick up.
    const telemetry = await startWorkerTelemetry(config, 'control', { log: say });
    cleanups.push(() => telemetry.close());
    const { client, close } = await connectClient(config);
    cleanups.push(close);
    // A run that is not running starts anew (a new incarnation, from the base): serve the base for it.
    const resume = await trainingRunIsRunning(client, config.runId);

    const engine = policyEngineFromConfig(config);
    let policyVersion: number;
    if (await engine.health()) {
      policyVersion = parsePolicyVersion(await engine.weightVersion()) ?? 0;
      say(
        `engine ${config.engine.url} (${config.engine.kind}, already running, policy version ${policyVersion})`,
      );
      for (const problem of await engine.servingProblems().catch(() => [])) say(`engine: ${problem}`);
      const trainerUrl = referenceTrainerUrl(config);
      if (config.trainer.backend === 'reference' && trainerUrl !== config.engine.url) {
        if (await createEngineAdapter('reference', trainerUrl).health())
          say(`trainer ${trainerUrl} (already running)`);
        else {
          say(`trainer: starting the reference trainer at ${trainerUrl}`);
          const trainer = await startTrainerBeside(config, await resolveModel(config), () => {});
          cleanups.push(() => trainer.stop());
        }
      }
    } else {
      say(
        `engine: starting ${config.engine.kind === 'vllm' ? 'vLLM' : 'the reference engine'} at ${config.engine.url}`,
      );
      const launched = await launchEngine(config, () => {}, { resume });
      for (const started of launched.processes) cleanups.push(() => started.stop());
      policyVersion = launched.version;
      if (launched.trainerUrl) say(`trainer ${launched.trainerUrl} (reference engine)`);
      say(
        `engine ${launched.url} model=${launched.model} (${config.engine.kind}) policy version ${policyVersion}`,
      );
    }

    if (usesJudgeEngine(config)) {
      if (await createEngineAdapter('reference', config.judgeEngine.url).health()) {
        say(`judge engine ${config.judgeEngine.url} (already running)`);
      } else {
        say(`judge engine: starting a frozen reference engine at ${config.judgeEngine.url}`);
        const frozen = await launchJudgeEngine(config);
        cleanups.push(() => frozen.engine.stop());
        say(`judge engine ${frozen.engine.url} model=${frozen.model} (frozen: never updated)`);
      }
    }

    // One store for the worker and the gateway; the gateway's relay delivers the outbox.
    const store = storeFromConfig(config);
    cleanups.push(async () => store.close?.());
    const connection = await connectWorker(config);
    cleanups.push(() => connection.close());
    const worker = await createControlWorker(config, connection, client, { store }, telemetry.workerOptions);
    telemetry.watchTaskQueues(connection.workflowService, config.temporal.namespace, [
      config.temporal.taskQueue,
    ]);
    const running = worker.run();
    cleanups.push(async () => {
      // SIGINT and SIGTERM reach the worker too (Temporal's runtime shuts its workers down on them): it may
      // have stopped already, and shutdown() throws then.
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running.catch(() => undefined);
    });

    const run = await ensureTrainingRun(client, config, policyVersion);
    say(
      `training run training-${config.runId} (${config.method}, batch ${config.training.batchSize}): ${run}`,
    );

    const gateway = await startGateway(config, {
      store,
      temporal: client,
      taskQueue: config.temporal.taskQueue,
      logger: { level: 'warn' },
    });
    cleanups.push(() => gateway.close());

    say(`gateway ${gateway.url}/v1`);
    say(`dashboard ${gateway.url}/dashboard`);
    say(`temporal ui ${temporalUi}`);
    if (codec)
      say(
        `codec server ${codec.url} (the Temporal UI decrypts payloads through it; its token is in ${codec.tokenSource})`,
      );
    say(`judge ${config.judge.baseUrl} (model ${config.judge.model}), teacher ${config.teacher.url}`);
    say('ready');
    await Promise.race([stop, running]);
  } finally {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch((error: Error) => console.error(`stopping: ${error.message}`));
    }
  }
}
