// The sample store the configuration names: the filesystem store under the data directory (the embedded
// default, one machine) or PostgreSQL (`store.backend: postgres`, shared by every host).

import { join } from 'node:path';
import type { OpenClawConfig } from '../core/config.js';
import { PostgresSampleStore } from './postgres-store.js';
import { FileSampleStore, type SampleStore } from './sample-store.js';

/** Where the filesystem store lives under the data directory. */
export function fileStoreRoot(config: OpenClawConfig): string {
  return join(config.dataDir, 'store');
}

/** A new store as configured; the caller closes it. */
export function storeFromConfig(config: OpenClawConfig): SampleStore {
  if (config.store.backend === 'postgres')
    return new PostgresSampleStore({ url: config.store.url, poolSize: config.store.poolSize });
  return new FileSampleStore(fileStoreRoot(config), { journal: config.store.journal });
}
