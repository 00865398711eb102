// The publish gate's evaluation (docs/evaluation.md#publish-gate): the version a step just trained answers the
// run's evaluation set from the trainer's weights, before anything is served, and is compared with the served
// version's score on the same set. The decision is written to the store under the step id as soon as it is
// computed, so a retried activity, or one after a crash mid-gate, returns the same decision.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ApplicationFailure } from '@temporalio/activity';
import { z } from 'zod';
import { type EvalSetItem, parseEvalSet } from '../core/eval-set.js';
import { buildBinaryJudgeMessages } from '../core/judge-prompts.js';
import { majorityVote, parseJudgeVote } from '../core/judge-votes.js';
import { replyScorer } from '../core/reply-scorers.js';
import { gateDecisionKey, gateScoreKey } from '../core/training-keys.js';
import { describeZodError, gateSettingsSchema } from '../core/training-settings.js';
import type { SampleStore } from '../store/sample-store.js';
import type { VersionEvaluation } from '../workflows/training-signals.js';
import { withHeartbeats } from './heartbeats.js';
import type { Judge } from './judge-client.js';
import type { SampleRepliesRequest, TrainerBackend } from './trainer-backend.js';
import { TRAINER_LOST_STEP } from './training-errors.js';

export interface GateDependencies {
  store: SampleStore;
  trainerOf: (runId: string) => TrainerBackend;
  /** The run's judge, for the `judge` scorer; absent, only `style:<rule>` scorers can gate. */
  judge?: Judge;
  /** Judge calls per reply (majority vote), as in training. */
  judgeVotes?: number;
}

export const evaluateCandidateInputSchema = z.strictObject({
  runId: z.string().min(1),
  incarnation: z.string().min(1).optional(),
  stepId: z.string().min(1),
  version: z.number().int().min(1),
  /** The version the engine serves now, and its checkpoint (null: the base model). */
  servedVersion: z.number().int().min(0),
  servedCheckpoint: z.string().min(1).nullable(),
  gate: gateSettingsSchema,
});
export type EvaluateCandidateInput = z.input<typeof evaluateCandidateInputSchema>;

/** The replies' sampling: the same seed for the candidate and the baseline, so both meet the same draws. */
const SEED = 0;
const TEMPERATURE = 1;

interface RecordedScore {
  score: number;
  items: number;
}

const recordedScoreSchema = z.object({ score: z.number(), items: z.number().int() });

export function createGateActivities(deps: GateDependencies) {
  const { store } = deps;

  /** The mean score of the replies over every item, each item the mean of its replies. */
  async function scoreReplies(
    items: readonly EvalSetItem[],
    replies: string[][],
    scorer: string,
  ): Promise<number> {
    let total = 0;
    for (const [index, item] of items.entries()) {
      const texts = replies[index] ?? [];
      let sum = 0;
      for (const text of texts) sum += await scoreReply(item, text, scorer);
      total += texts.length === 0 ? 0 : sum / texts.length;
    }
    return total / items.length;
  }

  async function scoreReply(item: EvalSetItem, reply: string, scorer: string): Promise<number> {
    if (scorer !== 'judge') {
      const rule = replyScorer(scorer);
      if (rule === null) throw ApplicationFailure.nonRetryable(`no reply scorer ${scorer}`, 'InvalidInput');
      return rule.score(reply);
    }
    const { judge } = deps;
    if (judge === undefined)
      throw ApplicationFailure.nonRetryable(
        'the judge scorer needs the worker that evaluates to have the run judge: give the training activities a judge, or set training.gate.scorer to style:<rule>',
        'InvalidInput',
      );
    if (item.next_user === undefined)
      throw ApplicationFailure.nonRetryable(
        `evaluation item ${item.id} has no next_user: the judge scores a reply against what came next`,
        'InvalidInput',
      );
    const prompt = buildBinaryJudgeMessages({
      responseText: reply,
      nextStateText: item.next_user,
      nextStateRole: item.next_role,
    });
    const votes = await Promise.all(
      Array.from({ length: deps.judgeVotes ?? 1 }, (_, seed) =>
        judge.complete(prompt, { seed }).catch(() => null),
      ),
    );
    return majorityVote(votes.map(parseJudgeVote)).score;
  }

  async function evaluate(
    trainer: TrainerBackend,
    items: EvalSetItem[],
    gate: z.output<typeof gateSettingsSchema>,
    source: SampleRepliesRequest['source'],
  ): Promise<number> {
    if (trainer.sampleReplies === undefined)
      throw ApplicationFailure.nonRetryable(
        `the ${trainer.name} trainer cannot sample replies: the publish gate needs the reference trainer`,
        'InvalidInput',
      );
    const replies = await trainer.sampleReplies({
      conversations: items.map((item) => item.messages),
      maxTokens: gate.maxTokens,
      temperature: TEMPERATURE,
      seed: SEED,
      samplesPerConversation: gate.samples,
      source,
    });
    return scoreReplies(items, replies, gate.scorer);
  }

  return {
    /**
     * Scores the version the step trained (the trainer's current weights) and the served version (its recorded
     * score, else its weights), and decides whether the new version is served or held. Idempotent by step id.
     */
    async evaluateCandidate(raw: EvaluateCandidateInput): Promise<VersionEvaluation> {
      const parsed = evaluateCandidateInputSchema.safeParse(raw);
      if (!parsed.success)
        throw ApplicationFailure.nonRetryable(
          `invalid evaluation input: ${describeZodError(parsed.error)}`,
          'InvalidInput',
        );
      const input = parsed.data;
      const decided = await store.get<VersionEvaluation>(gateDecisionKey(input.stepId));
      if (decided !== undefined) return decided;
      const { gate } = input;
      return withHeartbeats(`evaluate v${input.version}`, async () => {
        let text: string;
        try {
          text = await readFile(gate.evalSet, 'utf8');
        } catch (error) {
          throw ApplicationFailure.nonRetryable(
            `cannot read the evaluation set ${gate.evalSet} (training.gate.evalSet): ${(error as Error).message}`,
            'InvalidInput',
          );
        }
        let items: EvalSetItem[];
        try {
          items = parseEvalSet(text, gate.evalSet);
        } catch (error) {
          throw ApplicationFailure.nonRetryable((error as Error).message, 'InvalidInput');
        }
        const evaluation = createHash('sha256')
          .update(JSON.stringify([text, gate.scorer, gate.samples, gate.maxTokens, SEED, TEMPERATURE]))
          .digest('hex')
          .slice(0, 16);
        const trainer = deps.trainerOf(input.runId);
        // The trainer must still hold the step's weights: after a restart it holds others (the workflow trains
        // the step again, as when publishing finds it lost).
        if (!(await trainer.hasApplied(input.stepId)))
          throw ApplicationFailure.nonRetryable(
            `the trainer no longer holds step ${input.stepId}: it cannot be evaluated`,
            TRAINER_LOST_STEP,
          );
        const score = await evaluate(trainer, items, gate, 'current');

        const baselineKey = gateScoreKey(input.runId, input.incarnation, input.servedVersion, evaluation);
        let baseline = recordedScoreSchema.safeParse(await store.get<RecordedScore>(baselineKey)).data?.score;
        if (baseline === undefined) {
          // The base, or a version served before the gate: its weights answer the same set once.
          const source = input.servedCheckpoint === null ? 'base' : { checkpoint: input.servedCheckpoint };
          baseline = await evaluate(trainer, items, gate, source);
          await store.put(baselineKey, { score: baseline, items: items.length } satisfies RecordedScore);
        }
        const held = score < baseline - gate.threshold;
        const decision: VersionEvaluation = {
          score,
          baseline,
          baselineVersion: input.servedVersion,
          decision: held ? 'held' : 'served',
          ...(held && {
            reason: `score ${score.toFixed(4)} < v${input.servedVersion}'s ${baseline.toFixed(4)} - threshold ${gate.threshold} (${gate.scorer}, ${items.length} items)`,
          }),
          items: items.length,
          scorer: gate.scorer,
        };
        // First thing after computing it: a retry, or the workflow after a crash, reads this one back.
        await store.put(gateDecisionKey(input.stepId), decision);
        await store.put(gateScoreKey(input.runId, input.incarnation, input.version, evaluation), {
          score,
          items: items.length,
        } satisfies RecordedScore);
        return decision;
      });
    },
  };
}

export type GateActivities = ReturnType<typeof createGateActivities>;
