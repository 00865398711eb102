// `openclaw-rl`: one command per process (gateway, control worker, engine), `dev` for all of Track 1 on one
// machine, and `train` to look at and steer a training run. Every flag has an environment variable.

import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Command, Option } from 'commander';
import { adapterRunId } from '../core/tenant-adapters.js';
import type { EngineProcess } from '../engines/reference-engine-process.js';
import { DockerSandboxProvider } from '../environments/docker-sandbox.js';
import { startGateway } from '../gateway/main.js';
import { sessionDelivery } from '../gateway/outbox-delivery.js';
import { OutboxRelay } from '../gateway/outbox-relay.js';
import { storeFromConfig } from '../store/store-from-config.js';
import {
  connectClient,
  connectWorker,
  describeTemporalConnection,
  temporalConnectionSettings,
} from '../temporal/connection.js';
import { startProcessTracing } from '../temporal/tracing.js';
import { trainingWorkflowId } from '../temporal/workflow-ids.js';
import { createControlWorker } from '../workers/control-worker.js';
import { METRICS_PORT_DEFAULTS } from '../workers/worker-metrics.js';
import { startWorkerTelemetry } from '../workers/worker-telemetry.js';
import { pauseUpdate, resumeUpdate } from '../workflows/training-signals.js';
import { type CommonFlags, configFromFlags } from './cli-config.js';
import { registerCodecServerCommand } from './codec-server-command.js';
import { registerDemoCommand } from './demo-command.js';
import { runDev } from './dev.js';
import { launchEngine, launchJudgeEngine } from './engine-launch.js';
import { registerEvalCommand } from './eval-command.js';
import { registerGpuCommands } from './gpu-commands.js';
import { registerImageCommands } from './images-command.js';
import { registerKeyCommands } from './keys-command.js';
import { registerOperatorCommands } from './operator-commands.js';
import { metricsPortOption, temporalAddressOption, untilStopped } from './options.js';
import { refusedInlineSecretOption, secretFileOption } from './secret-flags.js';
import { registerTrack2Commands } from './track2-commands.js';
import {
  followTrainingRun,
  formatOutboxStatus,
  formatTrainedByTenant,
  formatTrainingStatus,
  readOutboxStatus,
  readTrainedByTenant,
  readTrainingStatus,
} from './train-status.js';
import { runTrainerWorker } from './trainer-worker-command.js';

// Worker lifecycle and bundling chatter at INFO drowns what a person needs to read; warnings still show.
Runtime.install({
  logger: new DefaultLogger((process.env.OPENCLAW_LOG_LEVEL as 'INFO' | undefined) ?? 'WARN'),
});

/**
 * Until Ctrl-C, then stops `processes` (last started first). An engine process that exits first is an error,
 * so a supervisor (systemd, compose) restarts the command: an engine that died is a failure.
 */
async function serveUntilStopped(processes: readonly EngineProcess[]): Promise<void> {
  const exited = processes.map(
    (started) =>
      new Promise<string>((resolve) =>
        started.process.once('exit', (code, signal) =>
          resolve(`an engine process exited (code ${code}, signal ${signal})`),
        ),
      ),
  );
  const outcome = await Promise.race([untilStopped().then(() => 'stopped'), ...exited]);
  for (const started of [...processes].reverse()) await started.stop();
  if (outcome !== 'stopped') throw new Error(outcome);
}

const common = {
  runId: () => new Option('--run-id <id>', 'training run name (OPENCLAW_RUN_ID; default "default")'),
  dataDir: () =>
    new Option(
      '--data-dir <dir>',
      'sample store, checkpoints, Temporal database (OPENCLAW_DATA_DIR; default data)',
    ),
  temporal: () => temporalAddressOption(),
  engineUrl: () =>
    new Option(
      '--engine-url <url>',
      'policy engine base URL (OPENCLAW_ENGINE_URL; default http://127.0.0.1:30000)',
    ),
  engineKind: () =>
    new Option(
      '--engine-kind <kind>',
      'reference | sglang | vllm: which engine serves at the engine URL (OPENCLAW_ENGINE_KIND; default reference)',
    ),
  method: () => new Option('--method <method>', 'rl | opd | combine (OPENCLAW_METHOD; default combine)'),
  batchSize: () =>
    new Option('--batch-size <n>', 'samples per training step (OPENCLAW_BATCH_SIZE; default 16)'),
  port: () => new Option('--port <port>', 'gateway port (OPENCLAW_GATEWAY_PORT; default 8000)'),
  host: () => new Option('--host <host>', 'gateway address (OPENCLAW_GATEWAY_HOST; default 127.0.0.1)'),
  judgeUrl: () =>
    new Option(
      '--judge-url <url>',
      'OpenAI-compatible judge base URL (OPENCLAW_JUDGE_URL; default: the engine)',
    ),
  judgeModel: () => new Option('--judge-model <name>', 'judge model name (OPENCLAW_JUDGE_MODEL)'),
  judgeApiKeyFile: () => secretFileOption('judge-api-key', 'OPENCLAW_JUDGE_API_KEY', 'judge bearer key'),
  judgeApiKey: () => refusedInlineSecretOption('judge-api-key'),
  model: () =>
    new Option(
      '--model <dir>',
      'model folder for the reference engine (OPENCLAW_MODEL; default: a tiny one)',
    ),
  device: () => new Option('--device <device>', 'cpu | cuda (OPENCLAW_DEVICE; default cpu)'),
  trainer: () =>
    new Option('--trainer <backend>', 'reference | slime | tinker (OPENCLAW_TRAINER; default reference)'),
  allowNoKeys: () =>
    new Option(
      '--allow-no-keys',
      'let the gateway listen beyond loopback without an API key (OPENCLAW_GATEWAY_ALLOW_NO_KEYS)',
    ),
};

const program = new Command('openclaw-rl')
  .description('Keep training a self-hosted agent from its own conversations, on Temporal.')
  .showHelpAfterError();

program
  .command('dev')
  .description(
    'run the whole Track 1 stack on this machine: Temporal (if none answers), engine, worker, gateway',
  )
  .addOption(common.method())
  .addOption(common.batchSize())
  .addOption(common.port())
  .addOption(common.host())
  .addOption(common.temporal())
  .addOption(common.dataDir())
  .addOption(common.runId())
  .addOption(common.engineUrl())
  .addOption(
    new Option(
      '--engine <kind>',
      'reference | vllm: the engine dev starts when none answers (short for --engine-kind)',
    ),
  )
  .addOption(common.engineKind())
  .addOption(common.model())
  .addOption(common.device())
  .addOption(common.judgeUrl())
  .addOption(common.judgeModel())
  .addOption(common.judgeApiKey())
  .addOption(common.judgeApiKeyFile())
  .addOption(common.trainer())
  .addOption(common.allowNoKeys())
  .action(async (flags: CommonFlags) => {
    await runDev(configFromFlags(flags), untilStopped());
  });

program
  .command('gateway')
  .description('run the OpenAI-compatible gateway')
  .addOption(common.port())
  .addOption(common.host())
  .addOption(common.temporal())
  .addOption(common.dataDir())
  .addOption(common.runId())
  .addOption(common.method())
  .addOption(common.engineUrl())
  .addOption(common.engineKind())
  .addOption(common.allowNoKeys())
  .action(async (flags: CommonFlags) => {
    const config = configFromFlags(flags);
    console.log(describeTemporalConnection(temporalConnectionSettings(config)));
    // Before the client: clients made after it carry each request's trace into Temporal.
    const tracing = startProcessTracing(config, 'openclaw-gateway');
    const { client, close } = await connectClient(config);
    const gateway = await startGateway(config, { temporal: client, taskQueue: config.temporal.taskQueue });
    console.log(`gateway ${gateway.url}/v1`);
    await untilStopped();
    await gateway.close();
    await close();
    await tracing?.shutdown();
  });

program
  .command('worker')
  .description('run a worker')
  .argument('<queue>', 'which worker: control | trainer (also: env, gpu)')
  .addOption(common.temporal())
  .addOption(common.dataDir())
  .addOption(common.runId())
  .addOption(common.method())
  .addOption(common.engineUrl())
  .addOption(common.engineKind())
  .addOption(common.judgeUrl())
  .addOption(common.judgeModel())
  .addOption(common.judgeApiKey())
  .addOption(common.judgeApiKeyFile())
  .addOption(common.trainer())
  .addOption(
    metricsPortOption(`${METRICS_PORT_DEFAULTS.control} control, ${METRICS_PORT_DEFAULTS.trainer} trainer`),
  )
  .action(async (queue: string, flags: CommonFlags) => {
    if (queue !== 'control' && queue !== 'trainer')
      throw new Error(`unknown worker "${queue}"; this version has: control, trainer, env, gpu`);
    const config = configFromFlags(flags);
    console.log(describeTemporalConnection(temporalConnectionSettings(config)));
    const telemetry = await startWorkerTelemetry(config, queue);
    const connection = await connectWorker(config);
    if (queue === 'trainer') {
      await runTrainerWorker(config, connection, untilStopped(), telemetry);
      await connection.close();
      await telemetry.close();
      return;
    }
    const { client, close } = await connectClient(config);
    const store = storeFromConfig(config);
    const worker = await createControlWorker(config, connection, client, { store }, telemetry.workerOptions);
    telemetry.watchTaskQueues(connection.workflowService, config.temporal.namespace, [
      config.temporal.taskQueue,
    ]);
    // It also delivers what gateways left in the outbox: a gateway that died before its relay did. What is
    // younger than a gateway's longest hold and one lease is left to the gateway's own relay.
    const relay = new OutboxRelay({
      outbox: store.outbox,
      deliver: sessionDelivery(client),
      leaseMs: config.store.outboxLeaseMs,
      takeOverAfterMs: config.store.outboxYieldMs + config.store.outboxLeaseMs,
    });
    relay.start();
    console.log(`control worker on task queue ${config.temporal.taskQueue} at ${config.temporal.address}`);
    const running = worker.run();
    await Promise.race([untilStopped(), running]);
    // The signal that stopped it may have shut the worker down already (Temporal's runtime handles it too).
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => undefined);
    await relay.stop();
    await close();
    await connection.close();
    await store.close?.();
    await telemetry.close();
  });

program
  .command('engine')
  .description(
    'run the policy engine on the engine URL: the reference engine (serving + trainer), or vLLM with a reference trainer on the next port',
  )
  .addOption(common.engineUrl())
  .addOption(common.engineKind())
  .addOption(common.dataDir())
  .addOption(common.runId())
  .addOption(common.model())
  .addOption(common.device())
  .action(async (flags: CommonFlags) => {
    const config = configFromFlags(flags);
    const launched = await launchEngine(config, (line) => console.error(line));
    if (launched.trainerUrl) console.log(`trainer ${launched.trainerUrl} (reference engine)`);
    console.log(
      `engine ${launched.url} model=${launched.model} (${config.engine.kind}) policy version ${launched.version}`,
    );
    await serveUntilStopped(launched.processes);
  });

program
  .command('judge-engine')
  .description(
    'run the frozen judge engine: the base checkpoint for judge calls and teacher log-probs, never updated',
  )
  .addOption(common.engineUrl())
  .addOption(common.dataDir())
  .addOption(common.model())
  .addOption(common.device())
  .action(async (flags: CommonFlags) => {
    const config = configFromFlags(flags);
    const { engine, model } = await launchJudgeEngine(config, (line) => console.error(line));
    console.log(`judge engine ${engine.url} model=${model} (frozen: never updated)`);
    await serveUntilStopped([engine]);
  });

const train = program.command('train').description('look at and steer a training run');

train
  .command('status')
  .description(
    "print a run's state: policy version, epochs, samples waiting and trained, exclusions, metrics",
  )
  .addOption(new Option('--run <id>', 'run id (OPENCLAW_RUN_ID; default "default")'))
  .addOption(new Option('--tenant <name>', "the run of this tenant's adapter (`<run>~<tenant>`)"))
  .addOption(common.temporal())
  .addOption(common.dataDir())
  .option('--json', 'print JSON')
  .option('--watch', 'follow the run with a progress bar until Ctrl-C, then print its state')
  .action(
    async (flags: {
      run?: string;
      tenant?: string;
      temporalAddress?: string;
      dataDir?: string;
      json?: boolean;
      watch?: boolean;
    }) => {
      const config = configFromFlags({
        runId: flags.run,
        temporalAddress: flags.temporalAddress,
        dataDir: flags.dataDir,
      });
      // The outbox first: it is read from the store, so it shows even while Temporal is down.
      const runId = flags.tenant ? adapterRunId(config.runId, flags.tenant) : config.runId;
      const outbox = await readOutboxStatus(config);
      if (!flags.json && !flags.watch) console.log(formatOutboxStatus(outbox));
      const { client, close } = await connectClient(config);
      try {
        const status = flags.watch
          ? await followTrainingRun(client, runId, {
              stop: untilStopped(),
              progress: { enabled: !flags.json },
            })
          : await readTrainingStatus(client, runId);
        const trained = await readTrainedByTenant(client, runId);
        if (flags.json) console.log(JSON.stringify({ ...status, outbox, trainedByTenant: trained }, null, 2));
        else {
          if (flags.watch) console.log(formatOutboxStatus(await readOutboxStatus(config)));
          console.log(formatTrainingStatus(status));
          console.log(formatTrainedByTenant(trained));
        }
      } finally {
        await close();
      }
    },
  );

for (const [name, update] of [
  ['pause', pauseUpdate],
  ['resume', resumeUpdate],
] as const) {
  train
    .command(name)
    .description(`${name} a training run (samples keep being collected while paused)`)
    .addOption(new Option('--run <id>', 'run id (OPENCLAW_RUN_ID; default "default")'))
    .addOption(common.temporal())
    .action(async (flags: { run?: string; temporalAddress?: string }) => {
      const config = configFromFlags({ runId: flags.run, temporalAddress: flags.temporalAddress });
      const { client, close } = await connectClient(config);
      try {
        const status = await client.workflow
          .getHandle(trainingWorkflowId(config.runId))
          .executeUpdate(update);
        console.log(formatTrainingStatus(status as Parameters<typeof formatTrainingStatus>[0]));
      } finally {
        await close();
      }
    });
}

registerOperatorCommands(program, train);
registerKeyCommands(program);
registerCodecServerCommand(program);
registerEvalCommand(program);
registerDemoCommand(program);
registerImageCommands(program);
registerGpuCommands(program);
// Env hosts run containers through the local Docker engine (DOCKER_HOST or its socket).
registerTrack2Commands(program, { sandboxProvider: async (settings) => new DockerSandboxProvider(settings) });

try {
  await program.parseAsync(process.argv);
  process.exit(0);
} catch (error) {
  const message = (error as Error).message;
  console.error(`openclaw-rl: ${message}`);
  if (/binary\/encrypted/.test(message))
    console.error(
      'openclaw-rl: these payloads are encrypted: give this command the key ring the workers use (OPENCLAW_PAYLOAD_KEYS, or the key file OPENCLAW_PAYLOAD_KEYS_FILE / <dataDir>/keys/payload-keys.json)',
    );
  process.exit(1);
}
