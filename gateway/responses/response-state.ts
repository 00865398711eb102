// What `previous_response_id` continues: each stored response's whole conversation (the chat messages it was
// given, without its instructions, and the assistant message it answered with), in the sample store under
// `responses/<tenant>/<response id>`, so any gateway sharing the store continues it, and a tenant reaches
// only its own. Written before the response completes: a client that saw it can follow up at once.

import { z } from 'zod';
import type { ChatMessage } from '../../core/chat-messages.js';
import { type SampleStore, storeKey } from '../../store/sample-store.js';
import { withRetry } from '../retry.js';

const storedConversation = z.object({
  /** When it was stored (ms since the epoch). */
  createdAt: z.number(),
  messages: z.array(z.looseObject({ role: z.string() })),
});

export class ResponseStates {
  constructor(private readonly store: SampleStore) {}

  /** The conversation a stored response ended, or null when the tenant has no response of that id. */
  async conversation(tenant: string, responseId: string): Promise<ChatMessage[] | null> {
    const stored = await withRetry(() => this.store.get(keyOf(tenant, responseId)));
    if (stored === undefined) return null;
    return storedConversation.parse(stored).messages as ChatMessage[];
  }

  async keep(tenant: string, responseId: string, messages: readonly ChatMessage[]): Promise<void> {
    await withRetry(() => this.store.put(keyOf(tenant, responseId), { createdAt: Date.now(), messages }));
  }
}

function keyOf(tenant: string, responseId: string): string {
  return storeKey('responses', tenant, responseId);
}
