import { describe, expect, it } from 'vitest';
import { fnv1a64Hex, utf8Bytes } from '../../core/fnv1a64.js';
import {
  deriveSessionId,
  identifySession,
  safeSessionId,
  stripSessionFields,
} from '../../core/session-id.js';

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
  it('prefers the X-Session-Id header, in any case', () => {
    const id = identifySession({
      headers: { 'X-SESSION-ID': 'abc-123' },
      body: { session_id: 'body', user: 'u', messages },
    });
    expect(id).toEqual({ sessionId: 'abc-123', source: 'header', turnType: 'main', sessionDone: false });
  });

  it('then the session_id body field, then the OpenAI user field', () => {
    expect(identifySession({ headers: {}, body: { session_id: 's-1', user: 'u', messages } })).toMatchObject({
      sessionId: 's-1',
      source: 'body',
    });
    expect(identifySession({ headers: {}, body: { user: 'alice@example.com', messages } })).toMatchObject({
      sessionId: 'alice@example.com',
      source: 'user',
    });
  });

  it('skips empty values', () => {
    expect(
      identifySession({ headers: { 'x-session-id': '  ' }, body: { session_id: '', user: 'u' } }),
    ).toMatchObject({ sessionId: 'u', source: 'user' });
  });

  it('derives a stable id from the opening messages when nothing names the session', () => {
    const first = identifySession({ headers: {}, body: { messages } });
    const later = identifySession({
      headers: {},
      body: {
        messages: [...messages, { role: 'assistant', content: 'Sure.' }, { role: 'user', content: 'Thanks' }],
      },
    });
    expect(first).toMatchObject({ source: 'derived', turnType: 'main' });
    expect(first.sessionId).toMatch(/^conv-[0-9a-f]{16}$/);
    expect(later.sessionId).toBe(first.sessionId);
    expect(first.sessionId).toBe(
      `conv-${fnv1a64Hex(JSON.stringify(['', 'You are Claw.', 'Plan my week.']))}`,
    );
  });

  it('gives no id, and a side turn, without any messages', () => {
    expect(identifySession({ headers: {}, body: {} })).toEqual({
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
  it('uses the first system (or developer) and first user message only', () => {
    const base = deriveSessionId(messages);
    expect(deriveSessionId([{ role: 'developer', content: 'You are Claw.' }, messages[1]])).toBe(base);
    expect(
      deriveSessionId([
        { role: 'system', content: 'You are Claw.' },
        { role: 'user', content: 'Other.' },
      ]),
    ).not.toBe(base);
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
    ];
    expect(deriveSessionId(parts)).toBe(deriveSessionId(messages));
  });

  it('falls back to the first message, and separates scopes', () => {
    expect(deriveSessionId([{ role: 'tool', content: 'x' }])).toMatch(/^conv-/);
    expect(deriveSessionId(messages, 'tenant-a')).not.toBe(deriveSessionId(messages, 'tenant-b'));
    expect(deriveSessionId([])).toBeNull();
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
  });

  it('applies to ids from headers too', () => {
    expect(identifySession({ headers: { 'x-session-id': 'a b' }, body: {} }).sessionId).toBe(
      `h-${fnv1a64Hex('a b')}`,
    );
  });
});

describe('stripSessionFields', () => {
  it('removes session metadata and keeps OpenAI fields', () => {
    const body = { model: 'm', user: 'u', messages, session_id: 's', session_done: true, turn_type: 'main' };
    expect(stripSessionFields(body)).toEqual({ model: 'm', user: 'u', messages });
    expect(body.session_id).toBe('s');
  });
});
