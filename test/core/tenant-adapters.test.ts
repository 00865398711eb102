import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config.js';
import {
  adapterName,
  adapterRunId,
  hasOwnAdapter,
  parseAdapterRunId,
  runIdOfSession,
} from '../../core/tenant-adapters.js';
import { adapterVersionOf, engineModelsOf } from '../../gateway/tenant-routing.js';

describe("tenants' adapters", () => {
  it('a tenant named, or every tenant with *, has an adapter; its sessions train the run <runId>~<tenant>', () => {
    const settings = { tenants: ['alice', 'bob@home'] };
    expect(hasOwnAdapter(settings, 'alice')).toBe(true);
    expect(hasOwnAdapter(settings, 'carol')).toBe(false);
    expect(hasOwnAdapter(settings, null)).toBe(false);
    expect(hasOwnAdapter({ tenants: ['*'] }, 'carol')).toBe(true);
    expect(runIdOfSession(settings, 'default', 'alice/chat-1')).toBe('default~alice');
    expect(runIdOfSession(settings, 'default', 'bob@home/x')).toBe('default~bob@home');
    expect(runIdOfSession(settings, 'default', 'carol/x')).toBe('default');
    // Sessions from before tenants have none: the shared run.
    expect(runIdOfSession({ tenants: ['*'] }, 'default', 'plain-id')).toBe('default');
  });

  it("an adapter's run id is read back to its shared run and tenant; no configured run id is one", () => {
    expect(parseAdapterRunId(adapterRunId('my.run', 'alice'))).toEqual({
      sharedRunId: 'my.run',
      tenant: 'alice',
    });
    expect(adapterName('default~bob')).toBe('bob');
    expect(adapterName('default')).toBeNull();
    expect(() => adapterRunId('default', 'a/b')).toThrow(/invalid tenant/);
    // `~` is refused in a configured run id, so none can be mistaken for an adapter's.
    expect(loadConfig({}, { runId: 'x~alice' }).ok).toBe(false);
  });

  it('the config names tenants (or *), and refuses adapters with a trainer that cannot train them', () => {
    const ok = loadConfig({ OPENCLAW_ADAPTER_TENANTS: 'alice,bob', OPENCLAW_ADAPTER_RANK: '4' }, {});
    expect(ok.ok && ok.config.adapters).toEqual({
      tenants: ['alice', 'bob'],
      rank: 4,
      maxLoaded: 16,
      onBaseChange: 'keep',
    });
    expect(loadConfig({ OPENCLAW_ADAPTER_TENANTS: '*' }, {}).ok).toBe(true);
    const bad = loadConfig({ OPENCLAW_ADAPTER_TENANTS: 'a/b' }, {});
    expect(bad.ok).toBe(false);
    const tinker = loadConfig(
      {},
      { adapters: { tenants: ['alice'] }, trainer: { backend: 'tinker' }, loss: { klCoef: 0 } },
    );
    expect(!tinker.ok && tinker.error).toMatch(/reference trainer only/);
  });

  it("the engine's model list gives its base and its adapters; an adapter's folder gives its version", () => {
    // vLLM's GET /v1/models with a LoRA adapter loaded (the shape of vLLM 0.32's ModelCard list).
    const models = engineModelsOf({
      object: 'list',
      data: [
        { id: 'default', object: 'model', root: '/m', parent: null },
        {
          id: 'alice',
          object: 'model',
          root: '/d/checkpoints/default~alice/i1/v3/adapter',
          parent: 'default',
        },
      ],
    });
    expect(models.base).toBe('default');
    expect([...models.adapters.keys()]).toEqual(['alice']);
    expect(adapterVersionOf(models.adapters.get('alice') ?? '')).toBe(3);
    expect(adapterVersionOf('/elsewhere/adapter')).toBeNull();
    expect(engineModelsOf('not a list')).toEqual({ base: null, adapters: new Map() });
  });
});
