// From a thumbs-down plus a correction on a turn to a served version trained on it, on the default model.
//
//   npx tsx bench/feedback-latency.ts [--rounds 5] [--maxTokens 16]
//   npm run bench:feedback
//
// Starts the benchmark stack (a Temporal dev server, the reference engine with --trainer on the tiny random
// model, the control worker and the gateway on the filesystem store) once per batch size (1 and 4), with the
// embedded default's method (combine) and no judge model: the correction is the teacher's hint as given, the
// thumbs-down the reward. Each round sends `batch` turns through the gateway, then a thumbs-down with a
// correction on each (`POST /v1/feedback`), and measures from the last feedback sent to the engine serving the
// next weight version (its /model_info), and the feedback request itself. Prints medians, p99 and the load
// average before and after; never passes or fails on time (figures are quiet only under a load of 2).

import { reportLoad } from './support/machine-load.js';
import { type Stack, startStack, stopOnSignal } from './support/stack.js';
import { intOptions, median, ms, p99, printTable } from './support/stats.js';

const options = intOptions({ rounds: 5, maxTokens: 16 }, 'npx tsx bench/feedback-latency.ts [options]');

let stack = null as Stack | null;
stopOnSignal(() => stack);

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as unknown;
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

async function servedVersion(engineUrl: string): Promise<number> {
  const info = (await (await fetch(`${engineUrl}/model_info`)).json()) as { weight_version?: unknown };
  return Number(info.weight_version);
}

interface Figures {
  batch: number;
  toServed: number[];
  feedbackMs: number[];
}

async function measure(batch: number): Promise<Figures> {
  stack = await startStack({
    config: { runId: `feedback-b${batch}`, method: 'combine', training: { batchSize: batch } },
    gateway: true,
  });
  const gatewayUrl = stack.gateway?.url;
  if (!gatewayUrl) throw new Error('the stack has no gateway');
  const figures: Figures = { batch, toServed: [], feedbackMs: [] };
  try {
    for (let round = 0; round < options.rounds; round++) {
      const before = await servedVersion(stack.engine.url);
      const turnIds: string[] = [];
      for (let i = 0; i < batch; i++) {
        const answer = (await post(
          `${gatewayUrl}/v1/chat/completions`,
          {
            model: 'default',
            messages: [
              { role: 'user', content: `Round ${round}, question ${i}: what is the capital of France?` },
            ],
            max_tokens: options.maxTokens,
            seed: round * 100 + i,
          },
          { 'X-Session-Id': `bench-${batch}-${round}-${i}` },
        )) as { turn_id: string };
        turnIds.push(answer.turn_id);
      }
      let sentAt = 0;
      for (const turnId of turnIds) {
        sentAt = performance.now();
        await post(`${gatewayUrl}/v1/feedback`, {
          turn_id: turnId,
          rating: -1,
          correction: 'The capital of France is Paris; say it in one sentence.',
        });
        figures.feedbackMs.push(performance.now() - sentAt);
      }
      while ((await servedVersion(stack.engine.url)) <= before)
        await new Promise((resolve) => setTimeout(resolve, 20));
      figures.toServed.push(performance.now() - sentAt);
    }
  } finally {
    await stack.close();
    stack = null;
  }
  return figures;
}

const loadAtEnd = reportLoad('feedback bench');
console.log(`${options.rounds} rounds per batch size`);
const results: Figures[] = [];
for (const batch of [1, 4]) results.push(await measure(batch));
printTable(
  ['batch size', 'feedback → served version, median', 'p99', 'POST /v1/feedback, median', 'p99'],
  results.map((r) => [
    String(r.batch),
    ms(median(r.toServed)),
    ms(p99(r.toServed)),
    ms(median(r.feedbackMs)),
    ms(p99(r.feedbackMs)),
  ]),
);
loadAtEnd();
process.exit(0);
