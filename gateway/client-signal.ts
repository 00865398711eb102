// Tells the engine request that its client went away, so generation stops instead of running for nobody.

import type { FastifyReply } from 'fastify';
import { ClientGoneError } from './engine-upstream.js';

/** Aborted when the connection closes before the response was completely written. */
export function clientSignalOf(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new ClientGoneError());
  });
  return controller.signal;
}
