// What identifies a turn, and how a later request finds the turn it continues, from the conversation alone.
//
// A turn's identity is its prefix: a chain hash over the request's tools and its messages, each in canonical
// JSON after the gateway's own normalisation (developer -> system, text parts flattened), so neither key order
// nor those spellings change it. Requests with the same prefix are siblings (a retry, a regenerate).
//
// A next request keeps one reply: its last assistant message before the new user message or tool results. It
// is looked up by two keys, both written when the turn was recorded:
// - the continuation key: the reply together with the exact prefix it answered. In a conversation that only
//   grows it matches the one turn whose reply was kept, so a branch pairs with the turn it continues;
// - the reply key: the reply alone, for a conversation whose earlier prefix changed (compacted, or its tools
//   changed); it names the latest turn of the session that gave that reply.
// The reply is compared as its text (whitespace and inline reasoning aside) and its tool calls (name and parsed
// arguments): clients drop reasoning, tool-call ids and null fields, split text into parts and re-serialise
// arguments when they send a reply back, and none of that may lose the pairing.

import type { ChatMessage } from '../core/chat-messages.js';
import { replyView } from '../core/reply-view.js';
import { TURN_DIGEST_LENGTH } from '../core/sample-id.js';
import type { RecordedResponse } from '../core/turn-record.js';
import { canonicalJson, sha256Hex } from './request-hash.js';

const SCHEME = 'openclaw-turn/v1';

/** The store keys a turn is found by when a later request keeps its reply. */
export interface ReplyKeys {
  /** The reply with the exact prefix it answered. */
  continuationKey: string;
  /** The reply alone. */
  replyKey: string;
}

export interface ConversationIdentity {
  /** Chain hash of the tools and every message: the turn's identity. */
  prefixHash: string;
  /** 1 + the assistant messages of the request: the turn's position, for people. */
  position: number;
  /** Keys of the reply this request keeps (its last assistant message before the next state); null: none. */
  kept: ReplyKeys | null;
}

/** The identity of a request from its normalised messages and tools; O(messages), no store access. */
export function conversationIdentity(messages: readonly ChatMessage[], tools: unknown): ConversationIdentity {
  const keptIndex = keptReplyIndex(messages);
  let hash = sha256Hex(SCHEME, 'tools', canonicalJson(tools ?? null));
  let kept: ReplyKeys | null = null;
  let assistants = 0;
  messages.forEach((message, index) => {
    if (index === keptIndex) kept = replyKeys(hash, replyView(message.content, message.tool_calls));
    if (message.role === 'assistant') assistants++;
    hash = sha256Hex(hash, canonicalJson(message));
  });
  return { prefixHash: hash, position: assistants + 1, kept };
}

/** The keys a recorded turn is indexed under, so the request that keeps its reply finds it. */
export function replyKeysOfTurn(prefixHash: string, response: RecordedResponse): ReplyKeys {
  return replyKeys(prefixHash, replyView(response.content, response.toolCalls));
}

/** Hex digest of a turn's prefix and exact response: the same request answered the same is the same turn. */
export function turnDigest(
  prefixHash: string,
  response: RecordedResponse,
  responseIds: readonly number[],
): string {
  return sha256Hex(SCHEME, 'turn', prefixHash, canonicalJson(responseIds), canonicalJson(response)).slice(
    0,
    TURN_DIGEST_LENGTH,
  );
}

/**
 * Index of the reply a request keeps: its last assistant message, when only user or tool messages follow it.
 * A request that ends with an assistant message (a prefill to continue) or has none keeps no reply.
 */
export function keptReplyIndex(messages: readonly ChatMessage[]): number | null {
  let index = messages.length - 1;
  while (index >= 0 && messages[index]?.role !== 'assistant') index--;
  return index >= 0 && index < messages.length - 1 ? index : null;
}

function replyKeys(prefixHash: string, view: string): ReplyKeys {
  return {
    continuationKey: sha256Hex(SCHEME, 'continuation', prefixHash, view),
    replyKey: sha256Hex(SCHEME, 'reply', view),
  };
}
