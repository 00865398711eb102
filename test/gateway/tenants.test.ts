// Tenants on the real gateway, a real reference engine and the run's Temporal server: alice and bob hold keys of
// their own (alice two), and bob, knowing alice's session id (in a header, the body's session_id, the OpenAI
// `user` field, or a derived id's conversation), can neither extend her session, nor end it, nor read her
// responses back through an Idempotency-Key. What reached alice's session workflow is read from its history.

import type { ChatCompletion, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopedSessionId } from '../../core/tenant.js';
import type { TurnRef } from '../../core/types.js';
import { recordedTurns } from '../support/turn-lookup.js';
import {
  type EngineStack,
  sessionSignals,
  startEngineStack,
  startTestGateway,
  type TestGateway,
} from './gateway-fixture.js';

const ALICE = 'key-of-alice';
const ALICE_LAPTOP = 'key-of-alices-laptop';
const BOB = 'key-of-bob';

type Completion = ChatCompletion & { session_id?: string };
type Source = 'header' | 'body' | 'user';

describe('tenants', () => {
  let stack: EngineStack;
  let gateway: TestGateway;

  beforeAll(async () => {
    stack = await startEngineStack('tenants');
    gateway = await startTestGateway({
      engineUrl: stack.engine.url,
      client: stack.env.client,
      apiKeys: [
        { key: ALICE, tenant: 'alice' },
        { key: ALICE_LAPTOP, tenant: 'alice' },
        { key: BOB, tenant: 'bob' },
      ],
    });
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
  });

  /** One chat request; `id` goes where `source` says. */
  async function chat(
    key: string,
    messages: ChatCompletionMessageParam[],
    options: { source?: Source; id?: string; done?: boolean; idempotencyKey?: string } = {},
  ): Promise<{ status: number; body: Completion; replayed: boolean }> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      authorization: `Bearer ${key}`,
    };
    const body: Record<string, unknown> = { model: 'tiny', messages, max_tokens: 6, ignore_eos: true };
    if (options.id !== undefined) {
      if (options.source === 'header') headers['x-session-id'] = options.id;
      if (options.source === 'body') body.session_id = options.id;
      if (options.source === 'user') body.user = options.id;
    }
    if (options.done) headers['x-session-done'] = 'true';
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as Completion,
      replayed: response.headers.get('idempotent-replayed') === 'true',
    };
  }

  const reply = (completion: Completion): ChatCompletionMessageParam => ({
    role: 'assistant',
    content: completion.choices[0]?.message.content ?? '',
  });

  /** What alice's session workflow received: its turns and whether it was told to end. */
  async function received(sessionId: string): Promise<{ turns: TurnRef[]; ended: boolean }> {
    await gateway.delivered();
    const signals = await sessionSignals(stack.env.client, sessionId);
    return {
      turns: signals.filter((s) => s.name === 'turnRecorded').map((s) => s.args[0] as TurnRef),
      ended: signals.some((s) => s.name === 'sessionDone'),
    };
  }

  for (const source of ['header', 'body', 'user'] as const) {
    it(`keeps bob out of alice's session named by ${source}`, async () => {
      const id = stack.session(`tenants-${source}`, 'alice');
      stack.sessions.add(scopedSessionId('bob', id));
      const alices = scopedSessionId('alice', id);
      const opening: ChatCompletionMessageParam[] = [{ role: 'user', content: `plan my ${source} week` }];
      const first = await chat(ALICE, opening, { source, id, idempotencyKey: `idem-${id}` });
      expect(first.status).toBe(200);
      expect(first.body.session_id).toBe(id);

      // Bob continues her conversation under her id, and says it is done: his own session, which pairs with
      // nothing of hers.
      const continued = [...opening, reply(first.body), { role: 'user' as const, content: 'thanks!' }];
      const intruder = await chat(BOB, continued, { source, id, done: true });
      expect(intruder.status).toBe(200);
      expect(intruder.body.session_id).toBe(id);
      const bobs = await recordedTurns(gateway.store, scopedSessionId('bob', id));
      expect(bobs).toHaveLength(1);
      expect(bobs[0]?.continues).toBeNull();
      expect(await received(scopedSessionId('bob', id))).toMatchObject({ ended: true });

      // Her Idempotency-Key gives bob a fresh answer of his own, never hers.
      const replay = await chat(BOB, opening, { source, id, idempotencyKey: `idem-${id}` });
      expect(replay.status).toBe(200);
      expect(replay.replayed).toBe(false);
      expect(replay.body.id).not.toBe(first.body.id);

      // Her session saw only her turn and was not ended.
      expect(await recordedTurns(gateway.store, alices)).toHaveLength(1);
      const hers = await received(alices);
      expect(hers.ended).toBe(false);
      expect(hers.turns.map((turn) => turn.sessionId)).toEqual([alices]);

      // Her other key is the same tenant: it continues her session, and her key replays her response.
      const again = await chat(ALICE, opening, { source, id, idempotencyKey: `idem-${id}` });
      expect(again.replayed).toBe(true);
      expect(again.body.id).toBe(first.body.id);
      await chat(ALICE_LAPTOP, continued, { source, id, done: true });
      const after = await received(alices);
      expect(after.turns).toHaveLength(2);
      expect(after.turns[1]?.continues?.sampleId).toBe(after.turns[0]?.sampleId);
      expect(after.ended).toBe(true);
    });
  }

  it("keeps bob out of alice's derived session, where her regenerated first reply is a sibling", async () => {
    const opening: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: `hi ${stack.session('tenants-derived')}` },
    ];
    const one = await chat(ALICE, opening);
    const two = await chat(ALICE, opening);
    const [a, b] = [one.body.session_id ?? '', two.body.session_id ?? ''];
    expect(a).toMatch(/^open-[0-9a-f]{16}$/);
    // Unseeded, the tiny model answers differently: a regenerate, in the same session.
    expect(reply(one.body)).not.toEqual(reply(two.body));
    expect(b).toBe(a);
    for (const tenant of ['alice', 'bob']) stack.sessions.add(scopedSessionId(tenant, a));

    // Bob replays her conversation so far and ends it: his session has another id, and hers saw nothing.
    const continued = [...opening, reply(one.body), { role: 'user' as const, content: 'and then?' }];
    const intruder = await chat(BOB, continued, { done: true });
    expect(intruder.status).toBe(200);
    expect(intruder.body.session_id).not.toBe(a);
    const hers = scopedSessionId('alice', a);
    expect(await received(hers)).toMatchObject({
      ended: false,
      turns: [{ sessionId: hers }, { sessionId: hers }],
    });

    // Her own next request (another system prompt, as OpenClaw's grows) continues her first chat.
    const mine = await chat(ALICE, [
      { role: 'system', content: 'You are terse. Tools: ls.' },
      ...continued.slice(1),
    ]);
    expect(mine.body.session_id).toBe(a);
    const after = await received(hers);
    expect(after.turns).toHaveLength(3);
    expect(after.turns[2]?.continues?.sampleId).toBe(after.turns[0]?.sampleId);
  });
});
