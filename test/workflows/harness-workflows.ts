// A deliberately small workflow that exercises what every real workflow here relies on:
// an activity call, a signal, a query and a durable timer, on the shared test server.
import {
  condition,
  defineQuery,
  defineSignal,
  proxyActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type { HarnessActivities } from './harness-activities.js';

const { shout } = proxyActivities<HarnessActivities>({ startToCloseTimeout: '10 seconds' });

export const addWordSignal = defineSignal<[string]>('addWord');
export const wordsQuery = defineQuery<string[]>('words');

export interface HarnessInput {
  expectedWords: number;
}

export async function harnessWorkflow(input: HarnessInput): Promise<string> {
  const words: string[] = [];
  setHandler(addWordSignal, (word) => {
    words.push(word);
  });
  setHandler(wordsQuery, () => [...words]);
  await condition(() => words.length >= input.expectedWords);
  await sleep('10 milliseconds');
  return shout(words.join(' '));
}
