// The sample store contract (test/contracts/sample-store-contract.ts) for the PostgreSQL store, against a real
// server started from Debian's package in a temporary folder; each test gets a database of its own.
import { afterAll, beforeAll } from 'vitest';
import { PostgresSampleStore } from '../../store/postgres-store.js';
import { describeSampleStoreContract } from '../contracts/sample-store-contract.js';
import { type PostgresServer, startPostgres } from '../support/postgres-server.js';

let postgres: PostgresServer;
let databases = 0;
const stores: PostgresSampleStore[] = [];

beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);

afterAll(async () => {
  for (const store of stores) await store.close();
  await postgres?.destroy();
});

describeSampleStoreContract('PostgresSampleStore', 'per-session', async () => {
  // A database that does not exist yet: the store creates it, then its tables.
  const store = new PostgresSampleStore({ url: postgres.databaseUrl(`contract_${++databases}`) });
  stores.push(store);
  return store;
});
