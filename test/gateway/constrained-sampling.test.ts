// A client sends a penalty, a logit bias, a JSON response_format or a tool_choice that forces a call, and the
// turn used to be recorded with only temperature / top_p / top_k / min_p, so it trained as on-policy although
// its tokens were drawn (or fed) from another distribution than the one the trainer recomputes. Through the real
// gateway in front of the real reference engine and Temporal: such a turn is recorded with the fields named and
// scoring makes it a `constrained-sampling` exclusion, or the engine refuses the field and nothing is recorded;
// min_p is recorded, and neutral values (penalties 0 / 1, response_format text, tool_choice auto or none, an
// empty logit_bias) mark nothing.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScoringActivities } from '../../activities/scoring-activities.js';
import { LOCAL_TENANT, scopedSessionId } from '../../core/tenant.js';
import type { TurnRecord } from '../../core/turn-record.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { parseChatRequest } from '../../gateway/chat-request-schema.js';
import { explicitSampling, NEUTRAL_SAMPLING } from '../../gateway/sampling.js';
import { recordedTurns } from '../support/turn-lookup.js';
import { type EngineStack, startEngineStack, startTestGateway, type TestGateway } from './gateway-fixture.js';

const CHAT = '/v1/chat/completions';
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Current weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];

/** The record the gateway keeps for a request with `fields` (as SGLang or vLLM would serve it). */
function recordFor(fields: Record<string, unknown>) {
  const parsed = parseChatRequest({ messages: [{ role: 'user', content: 'x' }], ...fields });
  if (!parsed.ok) throw parsed.error;
  return explicitSampling(parsed.request, NEUTRAL_SAMPLING);
}

describe('what marks a turn (engines that accept every field: SGLang, vLLM)', () => {
  it('names each constraining field, and no neutral one', () => {
    const tools = { tools: TOOLS };
    for (const [fields, expected] of [
      [{ presence_penalty: 0.5 }, ['presence_penalty']],
      [{ frequency_penalty: -0.2 }, ['frequency_penalty']],
      [{ repetition_penalty: 1.1 }, ['repetition_penalty']],
      [{ min_tokens: 4 }, ['min_tokens']],
      [{ logit_bias: { '5': 3 } }, ['logit_bias']],
      [{ response_format: { type: 'json_object' } }, ['response_format']],
      [{ ...tools, tool_choice: 'required' }, ['tool_choice']],
      [{ ...tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } }, ['tool_choice']],
      [{ regex: '[ab]+' }, ['regex']],
      [{ guided_json: { type: 'object' } }, ['guided_json']],
      [{ presence_penalty: 0.5, logit_bias: { '7': -100 } }, ['presence_penalty', 'logit_bias']],
      [
        {
          presence_penalty: 0,
          frequency_penalty: 0,
          repetition_penalty: 1,
          min_tokens: 0,
          logit_bias: { '5': 0 },
          response_format: { type: 'text' },
          ...tools,
          tool_choice: 'auto',
          min_p: 0.1,
          stop: ['\n'],
        },
        [],
      ],
      [{ ...tools, tool_choice: 'none', regex: null }, []],
    ] as const) {
      expect(recordFor(fields).record.constraints, JSON.stringify(fields)).toEqual(expected);
    }
  });

  it('sends the penalties at neutral when the client names none, so no model default applies one', () => {
    expect(recordFor({}).engineFields).toMatchObject({
      presence_penalty: 0,
      frequency_penalty: 0,
      repetition_penalty: 1,
    });
    expect(recordFor({ presence_penalty: 0.5 }).engineFields.presence_penalty).toBe(0.5);
  });

  it('refuses a logit_bias that is not token id → number at the edge', () => {
    expect(() => recordFor({ logit_bias: { hello: 1 } })).toThrow(/logit_bias/);
    expect(() => recordFor({ logit_bias: { '5': 500 } })).toThrow(/logit_bias/);
  });
});

describe('sampling constraints are recorded or refused, against a real engine and Temporal', () => {
  let stack: EngineStack;
  let gateway: TestGateway;

  beforeAll(async () => {
    stack = await startEngineStack('constraints');
    gateway = await startTestGateway({ engineUrl: stack.engine.url, client: stack.env.client });
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    await stack?.close();
  });

  /** One main turn of a fresh session with `fields` added; its status and the turns recorded for it. */
  async function turn(
    label: string,
    fields: Record<string, unknown>,
  ): Promise<{ status: number; body: string; turns: TurnRecord[] }> {
    const sessionId = stack.session(label);
    const response = await fetch(`${gateway.url}${CHAT}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Session-Id': sessionId },
      body: JSON.stringify({
        messages: [{ role: 'user', content: `weather? ${label}` }],
        max_tokens: 6,
        seed: 1,
        ...fields,
      }),
    });
    const body = await response.text();
    return { status: response.status, body, turns: await recordedTurns(gateway.store, scoped(sessionId)) };
  }

  const scoped = (sessionId: string) => scopedSessionId(LOCAL_TENANT, sessionId);

  /** What scoring makes of the turn when the judge voted +1. */
  async function assembled(record: TurnRecord) {
    const scoring = createScoringActivities({
      store: gateway.store,
      judge: { complete: async () => 'unused' },
      teacher: new ReferenceAdapter(stack.engine.url),
      teacherTopK: 0,
      client: stack.env.client,
      controlTaskQueue: 'unused',
      trainingDefaults: () => ({ runId: 'unused', method: 'rl' }),
    });
    return scoring.assembleSample({
      method: 'rl',
      sampleId: record.sampleId,
      evalScore: 1,
      hint: null,
      teacherStored: false,
      judgeRecord: { evalVotes: [1], hintVotes: null, hint: null },
    });
  }

  it('records a forced tool call (a named tool_choice) and "required" as constrained, and excludes them', async () => {
    const named = await turn('named', {
      tools: TOOLS,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      max_tokens: 200, // room for the whole fed call
    });
    expect(named.status).toBe(200);
    // The reference engine feeds the call's tokens instead of sampling them.
    expect(JSON.parse(named.body).choices[0].message.tool_calls[0].function.name).toBe('get_weather');
    const [record] = named.turns;
    expect(record?.sampling?.constraints).toEqual(['tool_choice']);
    const delivery = await assembled(record as TurnRecord);
    expect(delivery).toMatchObject({ ok: false, exclusion: { reason: 'constrained-sampling' } });
    expect(delivery.ok === false && delivery.exclusion.detail).toContain('tool_choice');

    const required = await turn('required', { tools: TOOLS, tool_choice: 'required' });
    expect(required.status).toBe(200);
    expect(required.turns[0]?.sampling?.constraints).toEqual(['tool_choice']);
  });

  it('refuses a penalty, a logit bias and a JSON response_format the engine cannot apply: nothing is recorded', async () => {
    for (const [label, fields] of [
      ['presence', { presence_penalty: 0.5 }],
      ['repetition', { repetition_penalty: 1.2 }],
      ['bias', { logit_bias: { '5': 3 } }],
      ['json', { response_format: { type: 'json_object' } }],
    ] as const) {
      const refused = await turn(label, fields);
      expect(refused.status, label).toBe(400);
      expect(JSON.parse(refused.body).error.param, label).toBe(Object.keys(fields)[0]);
      expect(refused.turns, label).toEqual([]);
    }
  });

  it('records min_p with the turn and trains it; neutral values mark nothing', async () => {
    const minP = await turn('min-p', { min_p: 0.1 });
    expect(minP.status).toBe(200);
    expect(minP.turns[0]?.sampling).toMatchObject({ minP: 0.1, constraints: [] });
    expect(await assembled(minP.turns[0] as TurnRecord)).toMatchObject({ ok: true });

    const neutral = await turn('neutral', {
      presence_penalty: 0,
      frequency_penalty: 0,
      repetition_penalty: 1,
      logit_bias: {},
      response_format: { type: 'text' },
      tools: TOOLS,
      tool_choice: 'auto',
    });
    expect(neutral.status).toBe(200);
    expect(neutral.turns[0]?.sampling?.constraints).toEqual([]);
    expect(await assembled(neutral.turns[0] as TurnRecord)).toMatchObject({ ok: true });

    const none = await turn('none', { tools: TOOLS, tool_choice: 'none', logit_bias: { '5': 0 } });
    expect(none.status).toBe(200);
    expect(none.turns[0]?.sampling?.constraints).toEqual([]);
  });
});
