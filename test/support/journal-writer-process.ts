// A process that journals turns in a filesystem store and dies by SIGKILL right after the last one is
// acknowledged, before its files can be written: what a gateway killed between its answer and the rest leaves.
// Prints `acked <key>` for each turn made durable. Usage: tsx journal-writer-process.ts <store root> <turns>
import { FileSampleStore, storeKey } from '../../store/sample-store.js';
import { testTurnEntry } from './outbox-entries.js';

const [root, count] = process.argv.slice(2);
if (!root || !count) throw new Error('usage: journal-writer-process.ts <store root> <turns>');
const store = new FileSampleStore(root, { journal: true });
const turns = Array.from({ length: Number(count) }, (_, i) => i + 1);
await Promise.all(
  turns.map(async (turn) => {
    const session = `s${turn % 3}`;
    const key = storeKey('turns', session, turn);
    const created = await store.putIfAbsent(
      key,
      { turn, tokens: Array.from({ length: 2000 }, (_, t) => t) },
      {
        outbox: testTurnEntry(session, turn),
        alongside: [{ key: storeKey('replies', session, turn), value: { turn }, ifAbsent: false }],
      },
    );
    if (created) process.stdout.write(`acked ${key}\n`);
  }),
);
process.kill(process.pid, 'SIGKILL');
