// What `previous_response_id` continues: each stored response's whole conversation (the chat messages it was
// given, without its instructions, and the assistant message it answered with), in the sample store under
// `responses/<tenant>/<response id>`, so any gateway sharing the store continues it, and a tenant reaches
// only its own. Written before the response completes: a client that saw it can follow up at once.
//
// Kept for `gateway.responsesRetentionDays` (30, as OpenAI keeps stored responses; 0: for ever): an older one
// cannot be continued (the route answers as for an unknown id) and is deleted when read or swept.

import { z } from 'zod';
import type { ChatMessage } from '../../core/chat-messages.js';
import { type SampleStore, storeKey } from '../../store/sample-store.js';
import { withRetry } from '../retry.js';

const storedConversation = z.object({
  /** When it was stored (ms since the epoch). */
  createdAt: z.number(),
  messages: z.array(z.looseObject({ role: z.string() })),
});

const FOLDER = 'responses';
const DAY_MS = 86_400_000;

export interface ResponseStateOptions {
  /** How long a stored response can be continued, in days; 0 keeps it for ever. */
  retentionDays: number;
  /** The clock (tests move it). */
  now?: () => number;
}

export class ResponseStates {
  private readonly retentionMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: SampleStore,
    options: ResponseStateOptions = { retentionDays: 0 },
  ) {
    this.retentionMs = options.retentionDays * DAY_MS;
    this.now = options.now ?? Date.now;
  }

  /** The conversation a stored response ended, or null when the tenant has no response of that id (or it expired). */
  async conversation(tenant: string, responseId: string): Promise<ChatMessage[] | null> {
    const key = keyOf(tenant, responseId);
    const stored = await withRetry(() => this.store.get(key));
    if (stored === undefined) return null;
    const conversation = storedConversation.parse(stored);
    if (this.expired(conversation.createdAt)) {
      await withRetry(() => this.store.delete(key));
      return null;
    }
    return conversation.messages as ChatMessage[];
  }

  async keep(tenant: string, responseId: string, messages: readonly ChatMessage[]): Promise<void> {
    await withRetry(() => this.store.put(keyOf(tenant, responseId), { createdAt: this.now(), messages }));
  }

  /** Deletes every stored response past its retention (of every tenant); returns how many it deleted. */
  async sweep(): Promise<number> {
    if (this.retentionMs <= 0) return 0;
    let deleted = 0;
    for (const key of await withRetry(() => this.store.list(FOLDER))) {
      const stored = storedConversation.safeParse(await withRetry(() => this.store.get(key)));
      // Something else under the folder is not ours to delete.
      if (!stored.success || !this.expired(stored.data.createdAt)) continue;
      await withRetry(() => this.store.delete(key));
      deleted++;
    }
    return deleted;
  }

  private expired(createdAt: number): boolean {
    return this.retentionMs > 0 && this.now() - createdAt > this.retentionMs;
  }
}

function keyOf(tenant: string, responseId: string): string {
  return storeKey(FOLDER, tenant, responseId);
}
