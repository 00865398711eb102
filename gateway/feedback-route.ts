// POST /v1/feedback: a rating and/or a correction on one main turn (by `turn_id`, as every main-turn response
// carries it, or by `session_id` and an optional `position`), or a rating on every turn of a session. Scoped by
// the caller's tenant: another tenant's turn is not found. Answers once the feedback is durable
// (docs/gateway.md#feedback).

import type { FastifyReply, FastifyRequest } from 'fastify';
import { type FeedbackRecord, feedbackRequestSchema } from '../core/feedback.js';
import { safeSessionId } from '../core/session-id.js';
import { clientSessionId, scopedSessionId } from '../core/tenant.js';
import type { RequestContext } from './chat-completions-route.js';
import { fieldPath } from './chat-request-schema.js';
import type { FeedbackDesk, FeedbackTurn } from './feedback-desk.js';
import { invalidRequest, notFound, OpenAIError, serviceUnavailable } from './openai-errors.js';

export const FEEDBACK_ROUTE = '/v1/feedback';

/** One piece of feedback as the client sees it. */
function feedbackView(record: FeedbackRecord, turn: FeedbackTurn, created: boolean) {
  return {
    id: record.id,
    object: 'feedback',
    turn_id: clientSessionId(record.sampleId),
    session_id: clientSessionId(record.sessionId),
    position: turn.turn,
    rating: record.rating,
    correction: record.correction,
    received_at: record.receivedAt,
    /** False when the same feedback was already recorded (nothing changed). */
    created,
  };
}

export function feedbackHandler(
  desk: FeedbackDesk | null,
  contextOf: (request: FastifyRequest) => RequestContext,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const parsed = feedbackRequestSchema.safeParse(request.body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const param = issue ? fieldPath(issue.path) : 'body';
      throw invalidRequest(`${param}: ${issue?.message ?? 'invalid feedback'}`, param);
    }
    if (desk === null)
      throw new OpenAIError(
        501,
        'this gateway keeps no feedback: it runs without its durable store',
        'invalid_request_error',
        null,
        'feedback_unavailable',
      );
    const body = parsed.data;
    const { tenant, keyName } = contextOf(request);
    const given = { rating: body.rating ?? null, correction: body.correction ?? null, keyName };
    try {
      if (body.turn_id !== undefined) {
        const turn = await desk.turn(scopedSessionId(tenant, body.turn_id));
        if (turn === null) throw notFound(`no turn ${body.turn_id} here`);
        const { record, created } = await desk.record(turn, given);
        return reply.code(200).send(feedbackView(record, turn, created));
      }
      // The id as the chat route records it: the client may send its own id or the one responses carry.
      const clientId = safeSessionId(String(body.session_id).trim());
      const sessionId = scopedSessionId(tenant, clientId);
      const every = body.scope === 'session';
      const turns = await desk.sessionTurns(sessionId, {
        ...(body.position !== undefined && { position: body.position }),
        every,
      });
      if (turns.length === 0)
        throw notFound(
          body.position === undefined
            ? `session ${clientId} has no recorded main turn here`
            : `session ${clientId} has no main turn at position ${body.position}`,
        );
      const views = [];
      for (const turn of turns) {
        const { record, created } = await desk.record(turn, given);
        views.push(feedbackView(record, turn, created));
      }
      if (!every) return reply.code(200).send(views[0]);
      return reply.code(200).send({ object: 'list', session_id: clientId, data: views });
    } catch (error) {
      if (error instanceof OpenAIError) throw error;
      request.log.error({ err: error }, 'feedback could not be stored');
      throw serviceUnavailable(`the feedback could not be stored: ${String(error)}`, 'store_unavailable');
    }
  };
}
