// Records main turns: first durably in the sample store (turn-persistence.ts), then delivered to the session
// workflow (session-delivery.ts). The two steps stay separate calls in this order, so a relay can take over
// the delivery without changing what "recorded" means.

import type { Client } from '@temporalio/client';
import type { SampleStore } from '../activities/sample-store.js';
import type { RetryOptions } from './retry.js';
import { SessionDelivery, type SessionSettings } from './session-delivery.js';
import { TurnPersistence } from './turn-persistence.js';
import type { RecordedTurn, TurnDraft, TurnRecorder } from './turn-recorder.js';

export interface DurableTurnRecorderOptions {
  store: SampleStore;
  client: Client;
  session: SessionSettings;
  /** Task queue of the control worker that runs session workflows. */
  taskQueue?: string;
  retry?: RetryOptions;
}

export class DurableTurnRecorder implements TurnRecorder {
  readonly persistence: TurnPersistence;
  readonly delivery: SessionDelivery;

  constructor(options: DurableTurnRecorderOptions) {
    this.persistence = new TurnPersistence(options.store, options.retry);
    this.delivery = new SessionDelivery(options);
  }

  async record(draft: TurnDraft): Promise<RecordedTurn> {
    const recorded = await this.persistence.persist(draft);
    await this.delivery.deliver(recorded.ref);
    return recorded;
  }

  endSession(sessionId: string): Promise<void> {
    return this.delivery.endSession(sessionId);
  }
}
