// A turn's identity and the keys that find it, as pure functions of what was said.
import { describe, expect, it } from 'vitest';
import { type ChatMessage, normaliseMessagesForTemplate } from '../../core/chat-messages.js';
import type { RecordedResponse } from '../../core/turn-record.js';
import {
  conversationIdentity,
  keptReplyIndex,
  replyKeysOfTurn,
  turnDigest,
} from '../../gateway/conversation-identity.js';

const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }];
const opening: ChatMessage[] = [
  { role: 'system', content: 'Use tools.' },
  { role: 'user', content: 'Weather in Paris?' },
];
const response: RecordedResponse = {
  content: 'Let me check. ',
  reasoningContent: 'the user wants weather',
  toolCalls: [
    { id: 'call_abc', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
  ],
};

describe('conversationIdentity', () => {
  it("does not depend on key order or on the gateway's own normalisation", () => {
    const plain = conversationIdentity(normaliseMessagesForTemplate(opening), tools);
    const spelled = conversationIdentity(
      normaliseMessagesForTemplate([
        { content: [{ type: 'text', text: 'Use tools.' }], role: 'developer' },
        { content: 'Weather in Paris?', role: 'user' },
      ]),
      [{ function: { parameters: { type: 'object' }, name: 'get_weather' }, type: 'function' }],
    );
    expect(spelled.prefixHash).toBe(plain.prefixHash);
    expect(plain).toMatchObject({ position: 1, kept: null });
    expect(conversationIdentity(opening, null).prefixHash).not.toBe(plain.prefixHash);
    expect(conversationIdentity([...opening, { role: 'user', content: '!' }], tools).prefixHash).not.toBe(
      plain.prefixHash,
    );
  });

  it('finds the turn from the reply as a client sends it back (an OpenClaw-style round trip)', () => {
    const turn = conversationIdentity(opening, tools);
    const keys = replyKeysOfTurn(turn.prefixHash, response);
    // pi-ai (OpenClaw's provider layer) sends text as parts, reasoning apart, its own tool-call id and
    // re-serialised arguments.
    const next = conversationIdentity(
      normaliseMessagesForTemplate([
        ...opening,
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'Let me check.' }],
          reasoning_content: 'the user wants weather',
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '21 C' },
      ]),
      tools,
    );
    expect(next.kept).toEqual(keys);
    expect(next.position).toBe(2);

    // Inline reasoning dropped by the client still matches; other arguments do not.
    const inline = replyKeysOfTurn(turn.prefixHash, {
      ...response,
      content: '<think>hmm</think>Let me check.',
    });
    expect(inline.replyKey).toBe(keys.replyKey);
    const otherCity = replyKeysOfTurn(turn.prefixHash, {
      ...response,
      toolCalls: [{ function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }],
    });
    expect(otherCity.replyKey).not.toBe(keys.replyKey);
  });

  it('tells a reply to another prefix apart by its continuation key only', () => {
    const a = replyKeysOfTurn(conversationIdentity(opening, tools).prefixHash, response);
    const b = replyKeysOfTurn(conversationIdentity([opening[1] as ChatMessage], tools).prefixHash, response);
    expect(a.replyKey).toBe(b.replyKey);
    expect(a.continuationKey).not.toBe(b.continuationKey);
  });

  it('keeps the last assistant message only when user or tool messages follow it', () => {
    const a: ChatMessage = { role: 'assistant', content: 'x' };
    const u: ChatMessage = { role: 'user', content: 'y' };
    expect(keptReplyIndex([u])).toBeNull();
    expect(keptReplyIndex([u, a])).toBeNull(); // a prefill to continue
    expect(keptReplyIndex([u, a, u])).toBe(1);
    expect(keptReplyIndex([u, a, u, a, { role: 'tool', content: 'r' }, { role: 'tool', content: 's' }])).toBe(
      3,
    );
  });

  it('digests the prefix and the exact response', () => {
    const prefix = conversationIdentity(opening, tools).prefixHash;
    const digest = turnDigest(prefix, response, [1, 2, 3]);
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect(turnDigest(prefix, response, [1, 2, 3])).toBe(digest);
    expect(turnDigest(prefix, response, [1, 2, 4])).not.toBe(digest);
  });
});
