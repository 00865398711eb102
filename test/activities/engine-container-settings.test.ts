// The engine container's command line and create body, from its settings (no Docker needed).
import { describe, expect, it } from 'vitest';
import {
  engineCommand,
  engineContainerSpec,
  gpuDeviceRequests,
  parseEngineContainerSettings,
} from '../../activities/engine-container-settings.js';
import { engineSettingsFromFlags } from '../../cli/gpu-commands.js';
import { SGLANG_KEYED_LAUNCH } from '../../engines/sglang-keyed-launch.js';

describe('engine container settings', () => {
  it("builds SGLang's launch_server command line", () => {
    const settings = parseEngineContainerSettings({
      modelPath: '/srv/models/qwen',
      tensorParallel: 4,
      hostPort: 31000,
      containerPort: 30000,
      extraArgs: ['--mem-fraction-static', '0.8'],
    });
    expect(settings.kind).toBe('sglang');
    expect(engineCommand(settings)).toEqual([
      'python3',
      '-c',
      SGLANG_KEYED_LAUNCH,
      '--model-path',
      '/models/policy',
      '--tp',
      '4',
      '--host',
      '0.0.0.0',
      '--port',
      '30000',
      '--enable-metrics',
      '--tool-call-parser',
      'qwen25',
      '--reasoning-parser',
      'qwen3',
      '--mem-fraction-static',
      '0.8',
    ]);
  });

  it('builds the reference engine command when the kind says so', () => {
    const settings = parseEngineContainerSettings({
      kind: 'reference',
      modelPath: '/m',
      containerPort: 30001,
    });
    expect(engineCommand(settings)).toEqual([
      'python',
      '-m',
      'openclaw_engine',
      'serve',
      '--model',
      '/models/policy',
      '--host',
      '0.0.0.0',
      '--port',
      '30001',
    ]);
  });

  it('requests GPUs from the NVIDIA runtime only when asked', () => {
    const base = { modelPath: '/m' };
    expect(gpuDeviceRequests(parseEngineContainerSettings(base))).toEqual([
      { Driver: 'nvidia', Count: -1, Capabilities: [['gpu']] },
    ]);
    expect(gpuDeviceRequests(parseEngineContainerSettings({ ...base, gpus: 2 }))).toEqual([
      { Driver: 'nvidia', Count: 2, Capabilities: [['gpu']] },
    ]);
    expect(gpuDeviceRequests(parseEngineContainerSettings({ ...base, gpuDeviceIds: ['1', '3'] }))).toEqual([
      { Driver: 'nvidia', DeviceIDs: ['1', '3'], Capabilities: [['gpu']] },
    ]);
    expect(gpuDeviceRequests(parseEngineContainerSettings({ ...base, gpus: 0 }))).toEqual([]);
  });

  it('mounts the model and the checkpoints read-only and publishes the port', () => {
    const spec = engineContainerSpec(
      parseEngineContainerSettings({
        modelPath: '/srv/model',
        checkpointDir: '/data/checkpoints',
        hostPort: 31000,
        bindAddress: '0.0.0.0',
        token: 't0ken',
        env: { HF_TOKEN: 'x' },
        volumes: ['openclaw_data:/data:ro'],
      }),
      'gpu-1',
    );
    expect(spec.Image).toBe('lmsysorg/sglang:latest');
    expect(spec.HostConfig.Binds).toEqual([
      '/srv/model:/models/policy:ro',
      '/data/checkpoints:/data/checkpoints:ro',
      'openclaw_data:/data:ro',
    ]);
    expect(spec.HostConfig.PortBindings).toEqual({ '30000/tcp': [{ HostIp: '0.0.0.0', HostPort: '31000' }] });
    expect(spec.HostConfig.ShmSize).toBe(16 * 1024 ** 3);
    expect(spec.HostConfig.RestartPolicy).toEqual({ Name: 'no' });
    expect(spec.Env).toEqual(['OPENCLAW_ENGINE_TOKEN=t0ken', 'HF_TOKEN=x']);
    expect(spec.Labels['openclaw.gpu-host']).toBe('gpu-1');
  });

  it('rejects bad settings with a clear message', () => {
    expect(() => parseEngineContainerSettings({ modelPath: '/m', tensorParallel: 0 })).toThrow(
      /tensorParallel/,
    );
    expect(() => parseEngineContainerSettings({ modelPath: '/m', kind: 'tgi' })).toThrow(
      /invalid engine settings/,
    );
    expect(() => parseEngineContainerSettings({})).toThrow(/modelPath/);
  });

  it('reads the flags, falling back to environment variables', () => {
    const settings = parseEngineContainerSettings(
      engineSettingsFromFlags(
        { tp: '2', engineArgs: '--dtype bfloat16', engineVolumes: 'v1:/a:ro,/b:/b' },
        { OPENCLAW_MODEL_PATH: '/srv/m', OPENCLAW_ENGINE_GPUS: '2', OPENCLAW_ENGINE_PORT: '31001' },
      ),
    );
    expect(settings).toMatchObject({
      modelPath: '/srv/m',
      tensorParallel: 2,
      gpus: 2,
      hostPort: 31001,
      extraArgs: ['--dtype', 'bfloat16'],
      volumes: ['v1:/a:ro', '/b:/b'],
    });
    expect(() =>
      parseEngineContainerSettings(
        engineSettingsFromFlags({ engineVolumes: 'nopath' }, { OPENCLAW_MODEL_PATH: '/m' }),
      ),
    ).toThrow(/volumes/);
    expect(() => engineSettingsFromFlags({}, {})).toThrow(/--model-path/);
    expect(() => engineSettingsFromFlags({ tp: 'two' }, { OPENCLAW_MODEL_PATH: '/m' })).toThrow(/--tp/);
  });
  it('gives the reference engine its token and checkpoint root, and refuses it open beyond loopback', () => {
    const base = { kind: 'reference', modelPath: '/m', checkpointDir: '/data/checkpoints', gpus: 0 };
    const open = engineContainerSpec(parseEngineContainerSettings(base), 'h');
    expect(open.Env).toEqual(
      expect.arrayContaining([
        'OPENCLAW_ENGINE_ALLOW_NO_TOKEN=1',
        'OPENCLAW_ENGINE_CHECKPOINT_ROOTS=/data/checkpoints',
      ]),
    );
    const guarded = engineContainerSpec(
      parseEngineContainerSettings({ ...base, bindAddress: '0.0.0.0', token: 't0ken' }),
      'h',
    );
    expect(guarded.Env).toContain('OPENCLAW_ENGINE_TOKEN=t0ken');
    expect(guarded.Env.some((e) => e.startsWith('OPENCLAW_ENGINE_ALLOW_NO_TOKEN'))).toBe(false);
    expect(() => parseEngineContainerSettings({ ...base, bindAddress: '0.0.0.0' })).toThrow(
      /token: publishing the reference engine on 0\.0\.0\.0 needs a token/,
    );
  });

  // `ps` on the GPU host used to show SGLang's token in its command line (`--api-key <token>`).
  it('gives SGLang and vLLM the token in the environment, never the command line, and refuses either open beyond loopback', () => {
    const sglang = { kind: 'sglang', modelPath: '/m' };
    const vllm = { kind: 'vllm', modelPath: '/m' };
    const guardedSglang = engineContainerSpec(
      parseEngineContainerSettings({ ...sglang, bindAddress: '0.0.0.0', token: 't0ken' }),
      'h',
    );
    expect(guardedSglang.Env).toContain('OPENCLAW_ENGINE_TOKEN=t0ken');
    expect(guardedSglang.Cmd.join(' ')).not.toContain('t0ken');
    expect(guardedSglang.Cmd).not.toContain('--api-key');
    expect(engineContainerSpec(parseEngineContainerSettings(sglang), 'h').Env.join(' ')).not.toContain(
      'OPENCLAW_ENGINE_TOKEN',
    );

    const guardedVllm = engineContainerSpec(
      parseEngineContainerSettings({ ...vllm, bindAddress: '0.0.0.0', token: 't0ken' }),
      'h',
    );
    expect(guardedVllm.Env).toContain('VLLM_API_KEY=t0ken');
    // The variable, not the command line: `docker top` and the host's process list do not show it.
    expect(guardedVllm.Cmd.join(' ')).not.toContain('t0ken');
    expect(engineContainerSpec(parseEngineContainerSettings(vllm), 'h').Env.join(' ')).not.toContain(
      'VLLM_API_KEY',
    );
    for (const open of [sglang, vllm])
      expect(() => parseEngineContainerSettings({ ...open, bindAddress: '192.168.1.5' })).toThrow(
        new RegExp(`token: publishing the ${open.kind} engine on 192\\.168\\.1\\.5 needs a token`),
      );
  });
});
