import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ObservationRecord,
  type RolloutStepRecord,
  readTranscript,
  rolloutKeys,
  toolMessage,
} from '../../activities/rollout-records.js';
import type { ResetResult } from '../../environments/environment.js';
import { FileSampleStore } from '../../store/sample-store.js';

const PNG = 'data:image/png;base64,iVBORw0KGgo=';

describe('rollout records', () => {
  let dir: string;
  let store: FileSampleStore;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rollout-records-'));
    store = new FileSampleStore(dir);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('sends text observations as a string and screenshots as image_url parts', () => {
    const base: ObservationRecord = {
      step: 0,
      call: 0,
      toolCallId: 'c1',
      name: 'computer_use',
      observation: 'clicked',
      done: false,
    };
    expect(toolMessage(base)).toEqual({
      role: 'tool',
      tool_call_id: 'c1',
      name: 'computer_use',
      content: 'clicked',
    });
    expect(toolMessage({ ...base, images: [PNG] }).content).toEqual([
      { type: 'text', text: 'clicked' },
      { type: 'image_url', image_url: { url: PNG } },
    ]);
  });

  it('rebuilds the transcript with the reset, the steps, their observations and the call limit', async () => {
    const id = 'r1';
    const reset: ResetResult = {
      messages: [{ role: 'user', content: 'task' }],
      tools: [{ type: 'function', function: { name: 'bash', description: 'run', parameters: {} } }],
      maxCallsPerTurn: 1,
    };
    await store.put(rolloutKeys.reset(id), reset);
    const call = { id: 'c1', name: 'bash', arguments: { command: 'ls' } };
    const step: RolloutStepRecord = {
      rolloutId: id,
      step: 0,
      sampleId: `${id}:0`,
      promptIds: [1],
      responseIds: [2],
      responseLogProbs: [-0.1],
      policyVersion: 0,
      finishReason: 'tool_calls',
      message: { role: 'assistant', content: '', tool_calls: [{ id: 'c1' }] },
      action: { kind: 'tools', calls: [call] },
      errorMessages: [],
      truncation: null,
      recordedAt: new Date(0).toISOString(),
    };
    await store.put(rolloutKeys.step(id, 0), step);
    const observation: ObservationRecord = {
      step: 0,
      call: 0,
      toolCallId: 'c1',
      name: 'bash',
      observation: 'a.txt',
      images: [PNG],
      done: false,
    };
    await store.put(rolloutKeys.observation(id, 0, 0), observation);

    const transcript = await readTranscript(store, id, 1);
    expect(transcript.maxCallsPerTurn).toBe(1);
    expect(transcript.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(transcript.history).toEqual([{ action: call, observation: 'a.txt' }]);
    expect(await readTranscript(store, id, 0)).toMatchObject({ messages: [{ role: 'user' }] });
  });
});
