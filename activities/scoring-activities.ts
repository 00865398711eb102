import { ApplicationFailure } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import {
  type ChatMessage,
  type ImageText,
  nextStateAfter,
  nextStateMessages,
  nextStateOf,
} from '../core/chat-messages.js';
import {
  type EffectiveFeedback,
  effectiveFeedback,
  type FeedbackRecord,
  feedbackPrefix,
} from '../core/feedback.js';
import { imageNote, storedImageBytes } from '../core/image-notes.js';
import {
  dataUrlOf,
  type ImageDigest,
  type ImageRefPart,
  imageRefsOf,
  imageStoreKey,
  isImageRefPart,
  type StoredImage,
  withImageData,
} from '../core/image-parts.js';
import { buildBinaryJudgeMessages, buildHintJudgeMessages } from '../core/judge-prompts.js';
import type { JudgeScore } from '../core/judge-votes.js';
import { logprobTemperature } from '../core/logprob-temperature.js';
import { type RunRecord, servingIncarnationAt } from '../core/run-record.js';
import { assembleSample as assemble, type HintOutcome } from '../core/sample-assembly.js';
import { appendHintToMessages } from '../core/teacher-context.js';
import { TEACHER_TEMPERATURE_REFUSED, teacherTemperatureRefusal } from '../core/teacher-temperature.js';
import { runRecordKey } from '../core/training-keys.js';
import { exclusionKey, sampleKey, type TurnRecord, teacherKey, turnRecordKey } from '../core/turn-record.js';
import type {
  Amendment,
  Method,
  SampleExclusion,
  SampleExclusionReason,
  SampleRef,
  TeacherTopK,
  TrainingSample,
} from '../core/types.js';
import { type EngineAdapter, EngineFeatureError } from '../engines/engine-adapter.js';
import { EngineHttpError } from '../engines/engine-http.js';
import type { SampleStore } from '../store/sample-store.js';
import { signalWithStartTraining } from '../temporal/workflow-starts.js';
import type { SampleDelivery, TrainingInput } from '../workflows/training-signals.js';
import { withHeartbeats } from './heartbeats.js';
import type { Judge } from './judge-client.js';
import { responseTextForJudge } from './turn-text.js';

export interface ScoringDependencies {
  store: SampleStore;
  judge: Judge;
  /** The engine that computes teacher log-probs (the policy engine by default, or a frozen teacher). */
  teacher: EngineAdapter;
  /** Top-K teacher log-probs for top-K distillation; 0 turns them off. */
  teacherTopK: number;
  client: Client;
  controlTaskQueue: string;
  /** Start input for the training run when a sample arrives before the run exists. */
  trainingDefaults: (runId: string, method: Method) => TrainingInput;
  /** The judge reads images (`judge.vision`): it is sent the next state's images, not only notes of them. */
  judgeVision?: boolean;
}

export interface JudgeVoteInput {
  sampleId: string;
  /** The turn whose request carries the next state; null with `nextStateFromCorrection`. */
  nextSampleId: string | null;
  kind: 'eval' | 'hint';
  voteIndex: number;
  /** The next state is the user's correction (explicit feedback), as a user message. */
  nextStateFromCorrection?: boolean;
}

/** What the judge said of a turn when it was first scored (its sample's or exclusion's `judge` record). */
export interface PriorJudgement {
  evalVotes: (number | null)[] | null;
  hintVotes: (number | null)[] | null;
  hint: string | null;
}

export interface AssembleSampleInput {
  method: Method;
  sampleId: string;
  /** The judge's majority, or the reward feedback gives (any value in [-1, 1]); null: none. */
  evalScore: JudgeScore | number | null;
  hint: HintOutcome | null;
  teacherStored: boolean;
  judgeRecord: {
    evalVotes: (number | null)[] | null;
    hintVotes: (number | null)[] | null;
    hint: string | null;
    /** A superseded turn trained as a rejection: the sibling the conversation continued instead. */
    supersededBy?: string;
    /** The explicit feedback the scoring used. */
    feedback?: { rating: number | null; correction: string | null; feedbackIds: string[] };
    nextSampleId?: string;
  };
  /** A later scoring of the turn: its sample goes under `id` and amends the first (core/types.ts `Amendment`). */
  amendment?: { id: string; revision: number; feedbackIds: string[] };
}

/** The teacher record of a sample (`teacher/<sampleId>`); training reads its top-K rows from here. */
interface StoredTeacher {
  logProbs: number[];
  topK: TeacherTopK | null;
  /** The hinted prompt as the teacher's chat template rendered it (for audit). */
  promptIds?: number[];
  /** The temperature of the teacher log-probs: the one the response was drawn at. */
  temperature?: number;
}

export function createScoringActivities(deps: ScoringDependencies) {
  const { store } = deps;

  async function loadTurn(sampleId: string): Promise<TurnRecord> {
    const key = turnRecordKey(sampleId);
    if (key === null)
      throw ApplicationFailure.nonRetryable(`malformed sample id ${sampleId}`, 'InvalidInput');
    const record = await store.get<TurnRecord>(key);
    // The gateway writes the record before it signals, so a missing one is a lost store, not a race.
    if (!record) throw ApplicationFailure.nonRetryable(`no turn record for ${sampleId}`, 'MissingTurnRecord');
    return record;
  }

  /** The sample with the incarnation that served its turn (the version number alone does not name it). */
  async function withServingIncarnation(runId: string, sample: SampleRef): Promise<SampleRef> {
    const record = await store.get<RunRecord>(runRecordKey(runId));
    const key = turnRecordKey(sample.amends?.sampleId ?? sample.sampleId);
    if (record === undefined || key === null) return sample;
    // Not stamped without its turn's record (then only the version tells a foreign sample).
    const turn = await store.get<Pick<TurnRecord, 'recordedAt'>>(key);
    const served = turn && servingIncarnationAt(record, turn.recordedAt);
    return served === undefined ? sample : { ...sample, servedByIncarnation: served };
  }

  /** An image's bytes from the store; the gateway stores them before the record that names them. */
  async function loadImage(digest: ImageDigest): Promise<StoredImage> {
    const image = await store.get<StoredImage>(imageStoreKey(digest));
    if (!image) throw ApplicationFailure.nonRetryable(`no stored image ${digest}`, 'MissingImage');
    return image;
  }

  /**
   * The next state's images: a note in place of each (media type, size, short digest), and their data URLs
   * when the judge reads images.
   */
  async function judgeImages(messages: readonly ChatMessage[]): Promise<{ note: ImageText; urls: string[] }> {
    const refs = imageRefsOf(messages);
    const images = new Map<ImageDigest, StoredImage>();
    for (const ref of refs) if (!images.has(ref.digest)) images.set(ref.digest, await loadImage(ref.digest));
    const note: ImageText = (part) => {
      if (!isImageRefPart(part)) return '';
      const image = images.get(part.digest);
      return imageNote(part as ImageRefPart, image ? storedImageBytes(image) : null);
    };
    const urls = deps.judgeVision ? refs.map((ref) => dataUrlOf(images.get(ref.digest) as StoredImage)) : [];
    return { note, urls };
  }

  /**
   * Teacher log-probs of the exact response tokens under the hinted prompt (spec 6.3-6.4): the hinted prompt
   * is tokenised by the teacher's own chat template with the turn's own `chat_template_kwargs` (so it is
   * rendered after the same prefix as the student's), the response ids are the ones the policy sampled, the
   * prefill is asked for the temperature the response was drawn at, and the teacher's adapter aligns its
   * engine's prefill log-probs to the response tokens. A teacher that cannot score at that temperature is a
   * non-retryable failure (docs/scoring.md): scored at another one, the OPD advantage would be biased.
   */
  async function teacherLogprobs(input: { sampleId: string; hint: string; storeAs?: string }): Promise<void> {
    const turn = await loadTurn(input.sampleId);
    const temperature = logprobTemperature(turn.sampling?.temperature);
    if (!deps.teacher.features.prefillTemperature) {
      const refusal = teacherTemperatureRefusal({ kind: deps.teacher.kind, method: null, temperature });
      if (refusal !== null) throw ApplicationFailure.nonRetryable(refusal, TEACHER_TEMPERATURE_REFUSED);
    }
    // Images as the data URLs the policy was sent: the teacher scores the same multimodal prompt, its images
    // sent with the ids so that each image's pad tokens meet that image's pixels.
    const withHint = appendHintToMessages(turn.messages, input.hint);
    const imageUrls = await Promise.all(
      imageRefsOf(withHint).map(async (ref) => dataUrlOf(await loadImage(ref.digest))),
    );
    if (imageUrls.length > 0 && !deps.teacher.features.prefillImages)
      throw ApplicationFailure.nonRetryable(
        `the teacher refused: a ${deps.teacher.kind} engine scores no prompts with images; use a reference-engine or SGLang teacher that serves a vision-language model`,
        'TeacherRefused',
      );
    const hinted = await withImageData(withHint, loadImage);
    // The teacher refused this prompt (e.g. a text-only teacher sent images): it would again.
    const refused = (error: unknown): never => {
      if (error instanceof EngineHttpError && error.permanent)
        throw ApplicationFailure.nonRetryable(`the teacher refused: ${error.message}`, 'TeacherRefused');
      throw error;
    };
    const promptIds = await deps.teacher
      .renderPrompt({
        model: turn.model,
        messages: hinted,
        tools: turn.tools,
        chatTemplateKwargs: turn.chatTemplateKwargs ?? null,
      })
      .catch(refused);
    const { logprobs: logProbs, topK } = await deps.teacher
      .prefillLogprobs({
        inputIds: [...promptIds, ...turn.responseIds],
        responseLength: turn.responseIds.length,
        topK: deps.teacherTopK,
        temperature,
        ...(imageUrls.length > 0 && { images: imageUrls }),
      })
      .catch((error: unknown) => {
        // A teacher started so that it scores at temperature 1 only (the adapter asked it): no retry helps.
        if (error instanceof EngineFeatureError)
          throw ApplicationFailure.nonRetryable(error.message, TEACHER_TEMPERATURE_REFUSED);
        return refused(error);
      });
    const stored: StoredTeacher = { logProbs, topK, promptIds, temperature };
    await store.put(teacherKey(input.storeAs ?? input.sampleId), stored);
  }

  /** The turn's feedback records, taken together (core/feedback.ts). */
  async function turnFeedback(sampleId: string): Promise<EffectiveFeedback> {
    const keys = await store.list(feedbackPrefix(sampleId));
    const records = await Promise.all(keys.map((key) => store.get<FeedbackRecord>(key)));
    return effectiveFeedback(records.filter((r): r is FeedbackRecord => r !== undefined));
  }

  return {
    /** One judge call; the reply text is parsed in the workflow (deterministic, core/judge-votes.ts). */
    async judgeVote(input: JudgeVoteInput): Promise<string> {
      const turn = await loadTurn(input.sampleId);
      let nextState: ReturnType<typeof nextStateOf>;
      let imageUrls: string[] = [];
      if (input.nextStateFromCorrection) {
        const { correction } = await turnFeedback(input.sampleId);
        if (correction === null)
          throw ApplicationFailure.nonRetryable(`turn ${input.sampleId} has no correction`, 'InvalidInput');
        nextState = { text: correction, role: 'user' };
      } else {
        if (input.nextSampleId === null)
          throw ApplicationFailure.nonRetryable('a judge vote needs a next state', 'InvalidInput');
        const next = await loadTurn(input.nextSampleId);
        const last = next.messages.at(-1);
        if (!last)
          throw ApplicationFailure.nonRetryable(`turn ${input.nextSampleId} has no messages`, 'InvalidInput');
        // The messages after this turn's reply; the last message alone when the next turn does not continue it.
        const assistantsBefore = turn.messages.filter((message) => message.role === 'assistant').length;
        const after = nextStateMessages(next.messages, assistantsBefore);
        const images = await judgeImages(after.length > 0 ? after : [last]);
        imageUrls = images.urls;
        nextState =
          nextStateAfter(next.messages, assistantsBefore, images.note) ?? nextStateOf(last, images.note);
      }
      const prompt = {
        responseText: responseTextForJudge(turn.response),
        nextStateText: nextState.text,
        nextStateRole: nextState.role,
      };
      const built = input.kind === 'eval' ? buildBinaryJudgeMessages(prompt) : buildHintJudgeMessages(prompt);
      const messages = built.map((message) =>
        message.role === 'user' && imageUrls.length > 0 ? { ...message, images: imageUrls } : message,
      );
      return withHeartbeats(`judge ${input.kind} ${input.voteIndex}`, () =>
        deps.judge.complete(messages, { seed: input.voteIndex }),
      );
    },

    /** Teacher log-probs for an accepted hint, stored under the sample id (arrays stay out of workflows). */
    async computeTeacherLogprobs(input: { sampleId: string; hint: string; storeAs?: string }): Promise<void> {
      return withHeartbeats('teacher log-probs', () => teacherLogprobs(input));
    },

    /** The turn's explicit feedback: the latest rating and correction, and every feedback id. */
    async loadFeedback(input: { sampleId: string }): Promise<EffectiveFeedback> {
      return turnFeedback(input.sampleId);
    },

    /** The judge's votes and hint from the turn's first scoring (null when it had none on record). */
    async priorJudgement(input: { sampleId: string }): Promise<PriorJudgement | null> {
      type Judged = { judge?: Partial<PriorJudgement> };
      const record =
        (await store.get<Judged>(sampleKey(input.sampleId))) ??
        (await store.get<Judged>(exclusionKey(input.sampleId)));
      const judge = record?.judge;
      if (!judge) return null;
      return {
        evalVotes: Array.isArray(judge.evalVotes) ? judge.evalVotes : null,
        hintVotes: Array.isArray(judge.hintVotes) ? judge.hintVotes : null,
        hint: typeof judge.hint === 'string' ? judge.hint : null,
      };
    },

    /** Builds the turn's one sample (or its exclusion) and stores it under its deterministic id. */
    async assembleSample(input: AssembleSampleInput): Promise<SampleDelivery> {
      const turn = await loadTurn(input.sampleId);
      const temperature = logprobTemperature(turn.sampling?.temperature);
      // A later scoring (feedback) stores its sample, and its teacher, under its own id.
      const storedId = input.amendment?.id ?? input.sampleId;
      let teacher = input.teacherStored ? await store.get<StoredTeacher>(teacherKey(storedId)) : undefined;
      let hint = input.hint;
      // A teacher record at another temperature (one scored at 1 before teachers were asked for the sample's)
      // would bias the advantage like a teacher scored at the wrong one: the turn goes on without it.
      const teacherTemperature = teacher?.temperature ?? 1;
      if (teacher && teacherTemperature !== temperature) {
        hint = {
          accepted: false,
          reason: `the teacher log-probs are at temperature ${teacherTemperature}, the sample at ${temperature}`,
        };
        teacher = undefined;
      }
      const assembled = assemble(
        input.method,
        {
          sampleId: storedId,
          sessionId: turn.sessionId,
          turn: turn.turn,
          promptIds: turn.promptIds,
          responseIds: turn.responseIds,
          responseLogProbs: turn.responseLogProbs,
          policyVersion: turn.policyVersion,
          temperature,
          constraints: turn.sampling?.constraints ?? [],
          images: imageRefsOf(turn.messages),
        },
        {
          evalScore: input.evalScore,
          hint,
          teacherLogProbs: teacher?.logProbs ?? null,
          teacherTopK: teacher?.topK ?? null,
        },
      );
      const amends: Amendment | undefined = input.amendment && {
        sampleId: input.sampleId,
        revision: input.amendment.revision,
        feedbackIds: input.amendment.feedbackIds,
      };
      if (!assembled.ok) {
        const exclusion = { ...assembled.exclusion, ...(amends && { amends }) };
        await store.put(exclusionKey(storedId), { ...exclusion, judge: input.judgeRecord });
        return { ok: false, exclusion };
      }
      const { teacherTopkLogProbs, teacherTopkIndices, ...sample } = assembled.sample;
      // Top-K rows ([response][K]) stay in the teacher record; the sample refers to it.
      const stored: TrainingSample =
        teacherTopkLogProbs && teacherTopkIndices
          ? { ...sample, teacherTopKKey: teacherKey(sample.sampleId) }
          : sample;
      // First write wins: a retried activity finds its own sample and reports it again.
      await store.putIfAbsent(sampleKey(sample.sampleId), {
        ...stored,
        judge: input.judgeRecord,
        ...(amends && { amends }),
      });
      const ref: SampleRef = {
        sampleId: sample.sampleId,
        method: sample.method,
        kind: sample.kind,
        policyVersion: sample.policyVersion,
        reward: sample.reward,
        responseLength: sample.responseLength,
        ...(amends && { amends }),
      };
      return { ok: true, sample: ref };
    },

    async recordExclusion(input: {
      sampleId: string;
      reason: SampleExclusionReason;
      detail: string;
    }): Promise<SampleExclusion> {
      const exclusion: SampleExclusion = {
        sampleId: input.sampleId,
        reason: input.reason,
        detail: input.detail,
      };
      await store.put(exclusionKey(input.sampleId), exclusion);
      return exclusion;
    },

    /**
     * Hands the result to the run's training workflow, starting the run if it does not exist yet. A sample is
     * sent with the incarnation whose weights served its turn, where the run record says (docs/scoring.md).
     */
    async deliverToTraining(input: { runId: string; method: Method; result: SampleDelivery }): Promise<void> {
      const start = deps.trainingDefaults(input.runId, input.method);
      const result = input.result.ok
        ? { ok: true as const, sample: await withServingIncarnation(input.runId, input.result.sample) }
        : input.result;
      await signalWithStartTraining(deps.client, deps.controlTaskQueue, start, result);
    },
  };
}

export type ScoringActivities = ReturnType<typeof createScoringActivities>;
