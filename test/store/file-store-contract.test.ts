// The sample store contract (test/contracts/sample-store-contract.ts) for the filesystem store, without and with
// its turn journal (turns made durable by the journal, their files written afterwards: turn-journal.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { FileSampleStore } from '../../store/sample-store.js';
import { describeSampleStoreContract } from '../contracts/sample-store-contract.js';

let dir: string;
const stores: FileSampleStore[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'file-store-contract-'));
});

afterAll(async () => {
  for (const store of stores) await store.close();
  await rm(dir, { recursive: true, force: true });
});

describeSampleStoreContract(
  'FileSampleStore',
  'whole-outbox',
  async () => new FileSampleStore(await mkdtemp(join(dir, 'fs-'))),
);

describeSampleStoreContract('FileSampleStore with its turn journal', 'whole-outbox', async () => {
  const store = new FileSampleStore(await mkdtemp(join(dir, 'fs-')), { journal: true });
  stores.push(store);
  return store;
});
