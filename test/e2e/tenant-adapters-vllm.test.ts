// Tenants' own LoRA adapters on the vllm engine: the scenario is test/support/tenant-adapters-scenario.ts.
import { describeTenantAdapters } from '../support/tenant-adapters-scenario.js';

describeTenantAdapters('vllm');
