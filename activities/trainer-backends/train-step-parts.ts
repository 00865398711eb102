// A `/train_step` body larger than the engine's request body limit (top-K teacher arrays make a step's body
// grow with K × response tokens) is sent as several `/train_step_part` bodies, each under the limit, which
// the engine holds until the last arrives and trains as one optimizer step (engine/TRAINING.md).
import { trainerRefusal } from '../trainer-refusal.js';
import type { trainStepRequest } from './train-step-request.js';

export type TrainStepBody = ReturnType<typeof trainStepRequest>;
export type TrainStepPartBody = TrainStepBody & { part: { index: number; count: number } };

function bytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/**
 * The step as parts whose JSON bodies are each at most `maxBytes`, samples in order; none when the whole
 * body fits (send it to `/train_step` as it is). A single sample too large for any body is refused: no
 * split can carry it, and the engine's limit (`--max-body-mb`) must be raised.
 */
export function trainStepParts(body: TrainStepBody, maxBytes: number): TrainStepPartBody[] {
  if (bytes(body) <= maxBytes) return [];
  // Everything but the samples, with the widest part header the step can need.
  const n = body.samples.length;
  const overhead = bytes({ ...body, samples: [], part: { index: n, count: n } });
  const groups: TrainStepBody['samples'][] = [];
  let current: TrainStepBody['samples'] = [];
  let size = overhead;
  body.samples.forEach((sample, i) => {
    const own = bytes(sample);
    if (overhead + own > maxBytes)
      throw trainerRefusal(
        `sample ${i} of step ${body.step_id} takes ${own} bytes, more than the trainer's request body limit of ` +
          `${maxBytes} bytes allows even alone: raise the engine's --max-body-mb, or lower teacher.topK`,
      );
    const added = own + (current.length > 0 ? 1 : 0); // the comma between samples
    if (current.length > 0 && size + added > maxBytes) {
      groups.push(current);
      current = [];
      size = overhead;
    }
    size += current.length > 0 ? own + 1 : own;
    current.push(sample);
  });
  groups.push(current);
  return groups.map((samples, index) => ({ ...body, samples, part: { index, count: groups.length } }));
}
