// A Codex-style agent comes back to a Responses conversation: within the retention it continues by
// `previous_response_id`; after it (30 days by default, as OpenAI keeps stored responses) the gateway answers as for
// an unknown id and no longer keeps the conversation, so the store does not grow for ever. What goes wrong
// otherwise: every conversation any tenant ever had stays on disk (or in PostgreSQL) for good.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ResponseStates } from '../../gateway/responses/response-state.js';
import { FileSampleStore } from '../../store/sample-store.js';

const DAY = 86_400_000;
const MESSAGES = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello' },
];

describe('stored responses past their retention', () => {
  let dir: string;
  let store: FileSampleStore;
  let now: number;
  const clock = () => now;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'response-retention-'));
    store = new FileSampleStore(dir);
    now = Date.UTC(2026, 0, 1);
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('are continued within the retention, refused and deleted after it', async () => {
    const states = new ResponseStates(store, { retentionDays: 30, now: clock });
    await states.keep('alice', 'resp_old', MESSAGES);
    now += 20 * DAY;
    await states.keep('bob', 'resp_new', MESSAGES);
    expect(await states.conversation('alice', 'resp_old')).toEqual(MESSAGES);

    now += 11 * DAY; // resp_old is 31 days old, resp_new 11
    expect(await states.conversation('alice', 'resp_old')).toBeNull();
    expect(await store.list('responses')).toEqual(['responses/bob/resp_new']);
    expect(await states.conversation('bob', 'resp_new')).toEqual(MESSAGES);

    // The sweep deletes what nobody reads again, of every tenant, and leaves the rest.
    await states.keep('carol', 'resp_later', MESSAGES);
    now += 25 * DAY; // resp_new 36 days old, resp_later 25
    expect(await states.sweep()).toBe(1);
    expect(await store.list('responses')).toEqual(['responses/carol/resp_later']);
  });

  it('are kept for ever with a retention of 0', async () => {
    const states = new ResponseStates(store, { retentionDays: 0, now: clock });
    await states.keep('alice', 'resp_1', MESSAGES);
    now += 3650 * DAY;
    expect(await states.sweep()).toBe(0);
    expect(await states.conversation('alice', 'resp_1')).toEqual(MESSAGES);
  });
});
