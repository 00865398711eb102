// Judge votes on one recorded rollout step, through the env host's judge: the Track 2 step prompt (the task,
// the earlier steps, the step with its tool results; mean of the ±1 votes) by default, or Track 1's binary
// prompt and majority. Recorded once under `rollouts/<id>/judge/<k>`, so a retried episode does not ask again.

import { ApplicationFailure } from '@temporalio/activity';
import { flattenContent } from '../core/chat-messages.js';
import { buildBinaryJudgeMessages } from '../core/judge-prompts.js';
import { majorityVote, meanStepVote, parseJudgeVote } from '../core/judge-votes.js';
import type { StepJudgeSettings } from '../core/rollout-settings.js';
import { buildStepJudgeMessages, type JudgedStep } from '../core/step-judge-prompt.js';
import type { ResetResult } from '../environments/environment.js';
import type { SampleStore } from '../store/sample-store.js';
import type { Judge } from './judge-client.js';
import {
  type JudgeRecord,
  type ObservationRecord,
  type RolloutStepRecord,
  readObservations,
  readSteps,
  rolloutKeys,
} from './rollout-records.js';

export interface JudgeStepInput {
  rolloutId: string;
  step: number;
  votes: number;
  /** Unset (a rollout started before these settings existed): Track 1's prompt and the majority. */
  prompt?: StepJudgeSettings['prompt'];
  aggregate?: StepJudgeSettings['aggregate'];
  historySteps?: number;
}

function judgedStep(record: RolloutStepRecord, observations: ObservationRecord[]): JudgedStep {
  const parseError = record.action.kind === 'invalid';
  return {
    step: record.step,
    assistantText: flattenContent(record.message.content),
    toolCalls: (Array.isArray(record.message.tool_calls) ? record.message.tool_calls : []).map((call) =>
      JSON.stringify(call),
    ),
    results: parseError
      ? record.errorMessages.map((m) => flattenContent(m.content))
      : observations.map((o) => `[${o.name}] ${o.observation}`),
    parseError,
  };
}

/** The task as the policy saw it: the reset's last user message (after any system prompt). */
function taskText(reset: ResetResult | undefined): string {
  const users = (reset?.messages ?? []).filter((m) => m.role === 'user');
  return flattenContent(users.at(-1)?.content ?? '');
}

/** Votes on step `input.step` of a rollout and records them; a recorded step returns its score. */
export async function judgeRolloutStep(
  store: SampleStore,
  judge: Judge | undefined,
  input: JudgeStepInput,
  hostId: string,
): Promise<JudgeRecord> {
  const key = rolloutKeys.judge(input.rolloutId, input.step);
  const recorded = await store.get<JudgeRecord>(key);
  if (recorded) return recorded;
  if (!judge) throw ApplicationFailure.nonRetryable(`env host ${hostId} has no judge configured`, 'NoJudge');
  const record = await store.get<RolloutStepRecord>(rolloutKeys.step(input.rolloutId, input.step));
  if (!record) throw ApplicationFailure.nonRetryable(`step ${input.step} is not recorded`, 'MissingStep');
  const current = judgedStep(record, await readObservations(store, input.rolloutId, record));

  let messages: ReturnType<typeof buildStepJudgeMessages>;
  if (input.prompt === 'step') {
    const earlier = (await readSteps(store, input.rolloutId, input.step)).slice(
      Math.max(0, input.step - (input.historySteps ?? 8)),
    );
    const history: JudgedStep[] = [];
    for (const step of earlier)
      history.push(judgedStep(step, await readObservations(store, input.rolloutId, step)));
    const reset = await store.get<ResetResult>(rolloutKeys.reset(input.rolloutId));
    messages = buildStepJudgeMessages({ task: taskText(reset), history, current });
  } else {
    const calls = current.toolCalls.length > 0 ? `\n${current.toolCalls.join('\n')}` : '';
    messages = buildBinaryJudgeMessages({
      responseText: `${current.assistantText}${calls}`,
      nextStateText: current.results.join('\n'),
      nextStateRole: 'tool',
    });
  }
  const replies = await Promise.all(
    Array.from({ length: input.votes }, (_, i) =>
      judge.complete(messages, { seed: i }).catch(() => null as string | null),
    ),
  );
  const votes = replies.map(parseJudgeVote);
  const score = input.aggregate === 'mean' ? meanStepVote(votes) : majorityVote(votes).score;
  const result: JudgeRecord = { score, votes: votes.map((v) => v.score) };
  if (!(await store.putIfAbsent(key, result))) return (await store.get<JudgeRecord>(key)) ?? result;
  return result;
}
