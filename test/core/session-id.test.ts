import { describe, expect, it } from 'vitest';
import { fnv1a64Hex, utf8Bytes } from '../../core/fnv1a64.js';
import { replyView } from '../../core/reply-view.js';
import {
  deriveSessionId,
  identifySession,
  legacySessionId,
  safeSessionId,
  stripSessionFields,
} from '../../core/session-id.js';
import {
  clientSessionId,
  formatTenantCounts,
  samplesByTenant,
  scopedSessionId,
  splitSessionId,
} from '../../core/tenant.js';

const messages = [
  { role: 'system', content: 'You are Claw.' },
  { role: 'user', content: 'Plan my week.' },
];

describe('fnv1a64Hex', () => {
  it('matches the published FNV-1a 64 test vectors', () => {
    expect(fnv1a64Hex('')).toBe('cbf29ce484222325');
    expect(fnv1a64Hex('a')).toBe('af63dc4c8601ec8c');
    expect(fnv1a64Hex('foobar')).toBe('85944171f73967e8');
  });

  it('hashes UTF-8 bytes', () => {
    expect(utf8Bytes('é€😀')).toEqual([0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80]);
    expect(utf8Bytes('\ud800')).toEqual([0xef, 0xbf, 0xbd]);
  });
});

describe('identifySession', () => {
  it('prefers the X-Session-Id header, in any case, scoped by the tenant', () => {
    const id = identifySession(
      { headers: { 'X-SESSION-ID': 'abc-123' }, body: { session_id: 'body', user: 'u', messages } },
      { tenant: 'alice' },
    );
    expect(id).toEqual({
      tenant: 'alice',
      sessionId: 'alice/abc-123',
      source: 'header',
      turnType: 'main',
      sessionDone: false,
    });
  });

  it('then the session_id body field, then the OpenAI user field; an open gateway is tenant local', () => {
    expect(identifySession({ headers: {}, body: { session_id: 's-1', user: 'u', messages } })).toMatchObject({
      sessionId: 'local/s-1',
      source: 'body',
    });
    expect(identifySession({ headers: {}, body: { user: 'alice@example.com', messages } })).toMatchObject({
      sessionId: 'local/alice@example.com',
      source: 'user',
    });
  });

  it('gives two tenants using one id two sessions', () => {
    const of = (tenant: string) =>
      identifySession({ headers: { 'x-session-id': 'chat-1' }, body: { messages } }, { tenant }).sessionId;
    expect(of('alice')).toBe('alice/chat-1');
    expect(of('bob')).toBe('bob/chat-1');
  });

  it('skips empty values', () => {
    expect(
      identifySession({ headers: { 'x-session-id': '  ' }, body: { session_id: '', user: 'u' } }),
    ).toMatchObject({ sessionId: 'local/u', source: 'user' });
  });

  it('derives the id of a first request from what it sends, and later requests of either reply find it', () => {
    // A client without ids regenerated its first reply and went on from the second: before, the id hashed the
    // reply too, so the regenerate opened a session of its own where the reply nobody kept was never settled.
    const first = identifySession({ headers: {}, body: { messages } }, { tenant: 'alice' });
    const named = `alice/open-${fnv1a64Hex(JSON.stringify(['alice', 'user:Plan my week.']))}`;
    expect(first).toEqual({
      tenant: 'alice',
      sessionId: named,
      source: 'derived',
      legacySessionId: null,
      turnType: 'main',
      sessionDone: false,
    });
    const laterOf = (reply: string) =>
      identifySession(
        {
          headers: {},
          body: {
            messages: [
              // A rewritten system prompt keeps the id.
              { role: 'system', content: 'You are Claw, with more tools.' },
              messages[1],
              { role: 'assistant', content: [{ type: 'text', text: ` ${reply} ` }] },
              { role: 'user', content: 'Thanks' },
            ],
          },
        },
        { tenant: 'alice' },
      );
    expect(laterOf('Sure.')).toMatchObject({ source: 'derived', sessionId: named });
    expect(laterOf('Of course.')).toMatchObject({ source: 'derived', sessionId: named });
    // The id the conversation had when the reply was hashed too: where a conversation begun then continues.
    expect(laterOf('Sure.')).toMatchObject({
      legacySessionId: `alice/conv-${fnv1a64Hex(JSON.stringify(['alice', 'user:Plan my week.', replyView('Sure.', null)]))}`,
    });
  });

  it('keeps the legacy id of a reply given as a tool call, and tenants apart always', () => {
    const call = [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{"dir": "."}' } }];
    const later = identifySession({
      headers: {},
      body: {
        messages: [
          { role: 'user', content: 'hi' },
          // The client dropped the id and re-serialised the arguments.
          {
            role: 'assistant',
            content: '',
            tool_calls: [{ type: 'function', function: { name: 'ls', arguments: '{"dir":"."}' } }],
          },
          { role: 'tool', content: 'a.txt' },
        ],
      },
    });
    expect(later).toMatchObject({
      sessionId: `local/${deriveSessionId('local', 'user:hi')}`,
      legacySessionId: `local/${legacySessionId('local', 'user:hi', replyView(null, call))}`,
    });
    const hi = { headers: {}, body: { messages: [{ role: 'user', content: 'hi' }] } };
    expect(identifySession(hi, { tenant: 'bob' }).sessionId).toBe(`bob/${deriveSessionId('bob', 'user:hi')}`);
    expect(deriveSessionId('bob', 'user:hi')).not.toBe(deriveSessionId('local', 'user:hi'));
  });

  it('gives no id, and a side turn, without any messages', () => {
    expect(identifySession({ headers: {}, body: {} })).toEqual({
      tenant: 'local',
      sessionId: null,
      source: 'none',
      turnType: 'side',
      sessionDone: false,
    });
    expect(identifySession({ headers: {}, body: 'not json' }).source).toBe('none');
  });

  it('reads the turn type: main by default, side when asked, side for unknown labels', () => {
    const turnType = (headers: Record<string, string>, body: Record<string, unknown> = {}) =>
      identifySession({ headers: { 'x-session-id': 's', ...headers }, body }).turnType;
    expect(turnType({})).toBe('main');
    expect(turnType({ 'X-Turn-Type': ' MAIN ' })).toBe('main');
    expect(turnType({ 'X-Turn-Type': 'side' })).toBe('side');
    expect(turnType({ 'X-Turn-Type': 'heartbeat' })).toBe('side');
    expect(turnType({}, { turn_type: 'side' })).toBe('side');
    expect(turnType({ 'x-turn-type': 'main' }, { turn_type: 'side' })).toBe('main');
  });

  it('reads X-Session-Done and session_done with the original truthy values', () => {
    const done = (headers: Record<string, string | string[]>, body: Record<string, unknown> = {}) =>
      identifySession({ headers: { 'x-session-id': 's', ...headers }, body }).sessionDone;
    expect(done({ 'X-Session-Done': 'true' })).toBe(true);
    expect(done({ 'x-session-done': ' Yes ' })).toBe(true);
    expect(done({ 'x-session-done': ['on', 'off'] })).toBe(true);
    expect(done({ 'x-session-done': 'false' })).toBe(false);
    expect(done({}, { session_done: true })).toBe(true);
    expect(done({}, { session_done: '1' })).toBe(true);
    expect(done({}, { session_done: 0 })).toBe(false);
    expect(done({})).toBe(false);
  });
});

describe('deriveSessionId', () => {
  const idOf = (list: unknown[]) => identifySession({ headers: {}, body: { messages: list } }).sessionId;
  const reply = { role: 'assistant', content: 'Sure.' };

  it('uses the first user message only, not the system prompt or the replies', () => {
    const base = idOf([...messages, reply]);
    expect(idOf(messages)).toBe(base);
    expect(idOf([{ role: 'developer', content: 'Another prompt.' }, messages[1], reply])).toBe(base);
    expect(idOf([messages[1], { ...reply, content: 'Other.' }, { role: 'user', content: 'more' }])).toBe(
      base,
    );
    expect(idOf([messages[0], { role: 'user', content: 'Other.' }, reply])).not.toBe(base);
  });

  it('flattens list content, so text parts hash like the same string', () => {
    const parts = [
      messages[0],
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Plan' },
          { type: 'text', text: 'my week.' },
        ],
      },
      reply,
    ];
    expect(idOf(parts)).toBe(idOf([...messages, reply]));
  });

  it('falls back to the first message other than a reply', () => {
    expect(idOf([{ role: 'tool', content: 'x' }, reply])).toMatch(/^local\/open-/);
    expect(deriveSessionId('a', 'x')).not.toBe(deriveSessionId('b', 'x'));
  });
});

describe('safeSessionId', () => {
  it('keeps ordinary ids and hashes unsafe ones', () => {
    expect(safeSessionId('3f0c7a52-1b2e-4c57-9d2a-6a1b2c3d4e5f')).toBe(
      '3f0c7a52-1b2e-4c57-9d2a-6a1b2c3d4e5f',
    );
    expect(safeSessionId('openai:alice')).toBe('openai:alice');
    expect(safeSessionId('../../etc/passwd')).toBe(`h-${fnv1a64Hex('../../etc/passwd')}`);
    expect(safeSessionId('x'.repeat(129))).toMatch(/^h-[0-9a-f]{16}$/);
    for (const dots of ['.', '..', '...']) expect(safeSessionId(dots)).toBe(`h-${fnv1a64Hex(dots)}`);
  });

  it('applies to ids from headers too, and a scoped id from a client is just an id', () => {
    expect(identifySession({ headers: { 'x-session-id': 'a b' }, body: {} }).sessionId).toBe(
      `local/h-${fnv1a64Hex('a b')}`,
    );
    expect(
      identifySession({ headers: { 'x-session-id': 'alice/chat-1' }, body: {} }, { tenant: 'bob' }).sessionId,
    ).toBe(`bob/h-${fnv1a64Hex('alice/chat-1')}`);
  });
});

describe('tenants in ids', () => {
  it('reads the tenant back from session and sample ids; ids from before tenants have none', () => {
    expect(splitSessionId('alice/chat-1')).toEqual({ tenant: 'alice', id: 'chat-1' });
    expect(splitSessionId('chat-1')).toEqual({ tenant: null, id: 'chat-1' });
    expect(clientSessionId('alice/conv-0123456789abcdef')).toBe('conv-0123456789abcdef');
    expect(
      samplesByTenant(['alice/c:1-0123456789abcdef', 'alice/d:2', 'bob/c:1', 'old:3', 'run-s1-g0-n0-a0:0']),
    ).toEqual({
      alice: 2,
      bob: 1,
      '-': 2,
    });
    expect(formatTenantCounts({ bob: 1, alice: 2, '-': 2 })).toBe('- 2, alice 2, bob 1');
    expect(() => scopedSessionId('a/b', 'x')).toThrow(/invalid tenant name/);
  });
});

describe('stripSessionFields', () => {
  it('removes session metadata and keeps OpenAI fields', () => {
    const body = { model: 'm', user: 'u', messages, session_id: 's', session_done: true, turn_type: 'main' };
    expect(stripSessionFields(body)).toEqual({ model: 'm', user: 'u', messages });
    expect(body.session_id).toBe('s');
  });
});
