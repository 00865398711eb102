// The example .env files for vLLM, GPU hosts and Tinker, read by compose itself (`config`): which services their
// profiles start and what the gateway and the workers are told. Nothing is started; no GPU or Tinker is needed.
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SGLANG_KEYED_LAUNCH } from '../../engines/sglang-keyed-launch.js';
import { composeCommand } from './compose-command.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');

interface ComposeService {
  environment?: Record<string, string | null>;
  depends_on?: Record<string, unknown> | string[];
  volumes?: (string | { source?: string; target?: string; read_only?: boolean })[];
  profiles?: string[];
  command?: string[];
  entrypoint?: string[];
  ports?: ({ host_ip?: string; published?: string | number; target?: number } | string)[];
  shm_size?: string | number;
}

describe('compose with the example .env files', () => {
  let compose: string[];
  beforeAll(async () => {
    compose = await composeCommand();
  });

  /** The resolved compose file and the services the profiles start, as compose sees them with `envFile`. */
  async function resolved(envFile: string, profiles: string[]) {
    const [command, ...prefix] = compose;
    const args = [...prefix, '-f', 'docker-compose.yml', '--env-file', envFile];
    // The env file's COMPOSE_PROFILES is what a user relies on; pass it as compose would read it from .env.
    const env = { ...process.env, COMPOSE_PROFILES: profiles.join(',') };
    const { stdout } = await run(command ?? 'docker-compose', [...args, 'config'], { cwd: ROOT, env });
    const services = (parse(stdout) as { services: Record<string, ComposeService> }).services;
    const started = Object.entries(services)
      .filter(([, s]) => !s.profiles || s.profiles.some((p) => profiles.includes(p)))
      .map(([name]) => name);
    return { services, started };
  }

  const mounts = (service: ComposeService | undefined) =>
    (service?.volumes ?? []).map((v) => (typeof v === 'string' ? v : `${v.source}:${v.target}`));

  it('vllm.env: vLLM serves the policy with room in /dev/shm, the reference engine trains', async () => {
    const { services, started } = await resolved('docs/examples/vllm.env', ['vllm']);
    expect(started).toEqual(expect.arrayContaining(['vllm', 'engine', 'gateway', 'control-worker']));
    for (const name of ['gateway', 'control-worker'])
      expect(services[name]?.environment?.OPENCLAW_ENGINE_URL, name).toBe('http://vllm:30000');
    // vLLM's engine core would not start in Docker's 64 MiB /dev/shm ("160 MiB required, 64 MiB free").
    expect(String(services.vllm?.shm_size)).toMatch(/^(1gb|1073741824)$/);
  });

  it('gpu.env: SGLang serves, the trainer-worker runs slime epochs on host paths', async () => {
    const { services, started } = await resolved('docs/examples/gpu.env', ['gpu', 'gpu-judge']);
    // SGLang's key from the token file through the launcher, never on the command line `ps` shows.
    for (const name of ['sglang', 'judge']) {
      expect(services[name]?.entrypoint, name).toEqual(['python3', '-c', SGLANG_KEYED_LAUNCH]);
      expect(services[name]?.command?.join(' '), name).not.toContain('--api-key');
      expect(services[name]?.environment?.OPENCLAW_ENGINE_TOKEN_FILE, name).toBe('/engine-keys/engine-token');
    }
    expect(started).toEqual(
      expect.arrayContaining(['sglang', 'trainer-worker', 'gateway', 'control-worker']),
    );
    expect(started).not.toContain('tinker');
    for (const name of ['gateway', 'control-worker', 'trainer-worker'])
      expect(services[name]?.environment?.OPENCLAW_ENGINE_URL, name).toBe('http://sglang:30000');
    expect(services['control-worker']?.environment?.OPENCLAW_TRAINER_TASK_QUEUE).toBe('trainer');
    const trainer = services['trainer-worker']?.environment ?? {};
    expect(trainer).toMatchObject({
      OPENCLAW_TRAINER: 'slime',
      OPENCLAW_TRAINER_TASK_QUEUE: 'trainer',
      OPENCLAW_TRAINER_IMAGE: 'my/slime-openclaw:latest',
      OPENCLAW_TRAINER_BASE_MODEL: '/srv/models/Qwen3-4B',
      OPENCLAW_TRAINER_SHARED_DIR: '/srv/openclaw/trainer',
      OPENCLAW_TRAINER_GPU_IDS: '1,2,3',
      OPENCLAW_LORA_RANK: '16',
    });
    // Epoch containers are the host engine's: the shared folder and the model at the same paths, the socket.
    expect(mounts(services['trainer-worker'])).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\/srv\/openclaw\/trainer:\/srv\/openclaw\/trainer/),
        expect.stringMatching(/^\/srv\/models\/Qwen3-4B:\/srv\/models\/Qwen3-4B/),
        expect.stringMatching(/^\/var\/run\/docker\.sock:\/var\/run\/docker\.sock/),
      ]),
    );
    expect(services.sglang?.environment?.CUDA_VISIBLE_DEVICES).toBe('0');
    // The frozen judge and teacher: SGLang on the base checkpoint (gpu-judge), beside the policy.
    expect(started).toContain('judge');
    expect(services['control-worker']?.environment?.OPENCLAW_JUDGE_ENGINE_URL).toBe('http://judge:30000');
    expect(mounts(services.judge)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^\/srv\/models\/Qwen3-4B:\/models\/judge/)]),
    );
    expect(mounts(services.sglang)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^\/srv\/models\/Qwen3-4B:\/models\/policy/)]),
    );
    // Both SGLang servers read the engine token data-init makes (their entrypoint passes it as --api-key:
    // test/conformance/server-commands.test.ts), and everything that calls them reads the same file.
    for (const name of ['sglang', 'judge', 'gateway', 'control-worker', 'trainer-worker'])
      expect(services[name]?.environment?.OPENCLAW_ENGINE_TOKEN_FILE, name).toBe('/engine-keys/engine-token');
    for (const name of ['sglang', 'judge']) {
      expect(mounts(services[name]), name).toContain('engine-keys:/engine-keys:ro');
      expect(Object.keys(services[name]?.depends_on ?? {}), name).toContain('data-init');
    }
  });

  it('tinker.env: the sidecar serves and the trainer-worker trains through it', async () => {
    const { services, started } = await resolved('docs/examples/tinker.env', ['tinker']);
    expect(started).toEqual(expect.arrayContaining(['tinker', 'trainer-worker']));
    expect(started).not.toContain('sglang');
    for (const name of ['gateway', 'control-worker', 'trainer-worker'])
      expect(services[name]?.environment?.OPENCLAW_ENGINE_URL, name).toBe('http://tinker:30000');
    expect(services['trainer-worker']?.environment?.OPENCLAW_TRAINER).toBe('tinker');
    expect(services.tinker?.command).toEqual(
      expect.arrayContaining(['openclaw_engine.tinker_sidecar', 'Qwen/Qwen3-8B']),
    );
  });

  it('fireworks.env: the trainer-worker trains through the Fireworks sidecar, which publishes', async () => {
    const { services, started } = await resolved('docs/examples/fireworks.env', ['fireworks']);
    expect(started).toEqual(expect.arrayContaining(['fireworks', 'trainer-worker']));
    expect(started).not.toContain('sglang');
    expect(services['trainer-worker']?.environment?.OPENCLAW_TRAINER).toBe('fireworks');
    expect(services['trainer-worker']?.environment?.OPENCLAW_FIREWORKS_URL).toBe('http://fireworks:30000');
    expect(services.fireworks?.command).toEqual(
      expect.arrayContaining(['openclaw_engine.fireworks_sidecar']),
    );
    expect(services.fireworks?.environment?.OPENCLAW_FIREWORKS_TRAINING_SHAPE).toBe('ts-qwen3-8b-policy');
  });

  it('the default: no profile, the reference engine serves and the control worker trains', async () => {
    const empty = join(await mkdtemp(join(tmpdir(), 'compose-env-')), 'empty.env');
    await writeFile(empty, '');
    const { services, started } = await resolved(empty, []);
    expect(started).not.toContain('sglang');
    expect(started).not.toContain('trainer-worker');
    expect(services.gateway?.environment?.OPENCLAW_ENGINE_URL).toBe('http://engine:30000');
    expect(services['control-worker']?.environment?.OPENCLAW_TRAINER_TASK_QUEUE ?? '').toBe('');
    // The judge and the teacher are a frozen engine on the same checkpoint: served, never trained.
    expect(started).toContain('judge-engine');
    expect(services['control-worker']?.environment?.OPENCLAW_JUDGE_ENGINE_URL).toBe(
      'http://judge-engine:30000',
    );
    const frozen = (services['judge-engine']?.command ?? []).join(' ');
    expect(frozen).toContain('openclaw_engine serve');
    expect(frozen).not.toContain('--trainer');
    expect(mounts(services['judge-engine'])).toEqual(mounts(services.engine));
    // One PostgreSQL store for every process; the gateway starts without waiting for Temporal.
    for (const name of ['gateway', 'control-worker', 'env-worker']) {
      expect(services[name]?.environment?.OPENCLAW_STORE, name).toBe('postgres');
      expect(services[name]?.environment?.OPENCLAW_STORE_URL, name).toBe(
        'postgres://temporal:temporal@postgresql:5432/openclaw',
      );
    }
    const gatewayNeeds = services.gateway?.depends_on ?? {};
    const needs = Array.isArray(gatewayNeeds) ? gatewayNeeds : Object.keys(gatewayNeeds);
    expect(needs).toContain('postgresql');
    expect(needs).not.toContain('temporal');
  });

  // Anyone who reached the codec server used to get payloads decrypted; now the UI must carry its token.
  it('the codec server is published on loopback only, and the UI reads its token from the codec-keys volume', async () => {
    const empty = join(await mkdtemp(join(tmpdir(), 'compose-env-')), 'empty.env');
    await writeFile(empty, '');
    const { services } = await resolved(empty, []);
    const codec = services['codec-server'];
    expect(codec?.environment?.OPENCLAW_CODEC_TOKEN_FILE).toBe('/codec-keys/codec-token');
    for (const port of codec?.ports ?? [])
      expect(typeof port === 'string' ? port : port.host_ip).toMatch(/^127\.0\.0\.1/);
    const ui = services['temporal-ui'];
    expect(mounts(ui)).toContain('codec-keys:/codec-keys:ro');
    expect((ui?.entrypoint ?? []).join(' ')).toMatch(
      /TEMPORAL_CODEC_ENDPOINT="http:\/\/localhost:8081\/\$?\$\(head -n 1 \/codec-keys\/codec-token\)"/,
    );
    // The UI sees the codec token, never the payload keys.
    expect(mounts(ui).filter((m) => m.startsWith('keys:'))).toEqual([]);
  });
});

describe('Prometheus in compose', () => {
  it('scrapes the gateway and every worker on the ports they serve /metrics on', async () => {
    const { readFile } = await import('node:fs/promises');
    const { METRICS_PORT_DEFAULTS } = await import('../../workers/worker-metrics.js');
    const composeFile = parse(await readFile(join(ROOT, 'docker-compose.yml'), 'utf8')) as {
      services: Record<string, ComposeService & { build?: { dockerfile?: string } }>;
    };
    const prometheus = composeFile.services.prometheus;
    expect(prometheus?.build?.dockerfile).toBe('docker/prometheus.Dockerfile');
    const dockerfile = await readFile(join(ROOT, 'docker/prometheus.Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/apt-get install .*\bprometheus\b/);
    expect(dockerfile).toMatch(/^FROM \$\{BASE_IMAGE\}$/m);
    const config = parse(await readFile(join(ROOT, 'docker/compose/prometheus.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
    };
    const targets = Object.fromEntries(
      config.scrape_configs.map((job) => [job.job_name, job.static_configs.flatMap((s) => s.targets)]),
    );
    expect(targets).toEqual({
      gateway: ['gateway:8000'],
      'control-worker': [`control-worker:${METRICS_PORT_DEFAULTS.control}`],
      'trainer-worker': [`trainer-worker:${METRICS_PORT_DEFAULTS.trainer}`],
      'env-worker': [`env-worker:${METRICS_PORT_DEFAULTS.env}`],
      // On the host's network: reached through the host's Docker bridge.
      'gpu-worker': [`host.docker.internal:${METRICS_PORT_DEFAULTS.gpu}`],
    });
    for (const [job, [target]] of Object.entries(targets)) {
      if (job === 'gpu-worker') continue;
      expect(composeFile.services[String(target).split(':')[0] ?? ''], job).toBeDefined();
    }
    const gpuWorker = composeFile.services['gpu-worker'] as ComposeService & {
      network_mode?: string;
      environment?: Record<string, string>;
    };
    expect(gpuWorker.network_mode).toBe('host');
    expect(gpuWorker.environment?.OPENCLAW_METRICS_HOST).toMatch(/OPENCLAW_GPU_METRICS_HOST/);
    expect((prometheus as { extra_hosts?: string[] }).extra_hosts).toContain(
      'host.docker.internal:host-gateway',
    );
    const dashboard = JSON.parse(
      await readFile(join(ROOT, 'docker/compose/grafana/openclaw-rl.json'), 'utf8'),
    ) as {
      panels: { targets: { expr: string }[] }[];
    };
    const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)).join('\n');
    for (const name of [
      'openclaw_gateway_requests_total',
      'openclaw_worker_activity_duration_seconds',
      'openclaw_worker_task_queue_backlog',
      'openclaw_training_step_seconds',
      'openclaw_training_publish_seconds',
      'openclaw_worker_running_containers',
    ])
      expect(exprs, name).toContain(name);
  });
});
